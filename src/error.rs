//! One error type for the core; the Python layer maps each kind onto the
//! matching Python exception class.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

#[derive(Clone)]
pub enum Error {
    /// Raised as `RuntimeError`.
    Runtime(String),
    /// Raised as `TypeError`.
    Type(String),
    /// Raised as `ValueError`.
    Value(String),
    /// Raised as `IndexError`.
    Index(String),
    /// Raised as `NotImplementedError` (a derivative PyTorch does not define).
    NotImplemented(String),
    /// An error that came from the embedding layer (a Python exception raised
    /// by a hook or a custom Function); carried through the engine untouched so
    /// that the caller sees the original exception and traceback.
    External(Arc<dyn Any + Send + Sync>),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn runtime(msg: impl Into<String>) -> Self {
        Error::Runtime(msg.into())
    }
    pub fn type_error(msg: impl Into<String>) -> Self {
        Error::Type(msg.into())
    }
    pub fn value(msg: impl Into<String>) -> Self {
        Error::Value(msg.into())
    }
    pub fn index(msg: impl Into<String>) -> Self {
        Error::Index(msg.into())
    }
    pub fn not_implemented(msg: impl Into<String>) -> Self {
        Error::NotImplemented(msg.into())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Runtime(m) => write!(f, "RuntimeError: {m}"),
            Error::Type(m) => write!(f, "TypeError: {m}"),
            Error::Value(m) => write!(f, "ValueError: {m}"),
            Error::Index(m) => write!(f, "IndexError: {m}"),
            Error::NotImplemented(m) => write!(f, "NotImplementedError: {m}"),
            Error::External(_) => write!(f, "error raised by a Python callback"),
        }
    }
}

impl std::error::Error for Error {}

/// An allocation the system refused. Kernels allocate their outputs deep
/// inside code that returns plain `Vec`s, so a refusal unwinds (as PyTorch's
/// allocator throws) with this payload instead of aborting the process, the
/// default for a failed Rust allocation; the binding's `guard` turns it into
/// PyTorch's `RuntimeError`.
#[derive(Debug, Clone, Copy)]
pub struct AllocFailure {
    /// The elements asked for, and their size in bytes.
    pub elems: usize,
    pub elem_size: usize,
}

impl fmt::Display for AllocFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self
            .elems
            .checked_mul(self.elem_size)
            .filter(|&b| b <= i64::MAX as usize)
        {
            Some(bytes) => write!(
                f,
                "DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12 (Cannot allocate memory)"
            ),
            // A byte count past int64 (a broadcast view of 2**62 elements
            // made contiguous): PyTorch's check of the size, which names
            // the sizes; here the element count is what is known.
            None => write!(
                f,
                "Storage size calculation overflowed with sizes=[{}]",
                self.elems
            ),
        }
    }
}

/// An empty `Vec` with room for exactly `n` elements; a refused allocation
/// unwinds with [`AllocFailure`] rather than aborting.
///
/// This is the one way tensor memory is allocated: every buffer whose size
/// comes from user input (a tensor's storage, a kernel's output, an
/// intermediate the size of an operand) goes through it or through
/// [`filled_vec`], [`zeroed_vec`] and [`copied_vec`], which call it.
pub fn alloc_vec<T>(n: usize) -> Vec<T> {
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        alloc_failed::<T>(n);
    }
    v
}

/// Unwinds with the [`AllocFailure`] for `n` elements of `T`.
#[cold]
#[inline(never)]
fn alloc_failed<T>(n: usize) -> ! {
    // `resume_unwind` skips the panic hook: nothing is printed to stderr
    // for what is an ordinary, reported error.
    std::panic::resume_unwind(Box::new(AllocFailure {
        elems: n,
        elem_size: std::mem::size_of::<T>(),
    }))
}

/// `n` copies of `value` in a fallibly allocated `Vec` (see [`alloc_vec`]).
pub fn filled_vec<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = alloc_vec(n);
    v.resize(n, value);
    v
}

/// Element types whose all-zero bit pattern is the value zero (`false` for
/// bool), so a zeroed allocation is a buffer of zeros.
///
/// # Safety
/// Only for types where every byte being 0 is a valid value.
pub unsafe trait ZeroBits: Copy {}
unsafe impl ZeroBits for f32 {}
unsafe impl ZeroBits for f64 {}
unsafe impl ZeroBits for i64 {}
unsafe impl ZeroBits for i32 {}
unsafe impl ZeroBits for u32 {}
unsafe impl ZeroBits for u8 {}
unsafe impl ZeroBits for usize {}
unsafe impl ZeroBits for bool {}

/// `n` zeros, fallibly allocated (see [`alloc_vec`]) as `vec![0; n]` is: by
/// `calloc`, whose fresh pages of a large block are zero without being
/// written.
pub fn zeroed_vec<T: ZeroBits>(n: usize) -> Vec<T> {
    if n == 0 || std::mem::size_of::<T>() == 0 {
        return Vec::new();
    }
    let Ok(layout) = std::alloc::Layout::array::<T>(n) else {
        alloc_failed::<T>(n)
    };
    // SAFETY: the layout has a non-zero size; a non-null block of it holds
    // `n` zeroed `T`s, valid values by `ZeroBits`, and is released by `Vec`
    // with the same layout through the same global allocator.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout) as *mut T;
        if p.is_null() {
            alloc_failed::<T>(n);
        }
        Vec::from_raw_parts(p, n, n)
    }
}

/// Fails (as [`alloc_vec`] would) unless `n` elements of `T` can be
/// allocated, for an op that must know before it builds large bookkeeping
/// for its output (PyTorch allocates the output first, so an impossible size
/// is refused before any other work). The probe's memory is never touched.
pub fn probe_alloc<T>(n: usize) {
    drop(alloc_vec::<T>(n));
}

/// [`probe_alloc`] for `n` elements of `elem_size` bytes (a tensor's dtype,
/// whatever type its kernel computes in).
pub fn probe_alloc_sized(n: usize, elem_size: usize) {
    let fits = n
        .checked_mul(elem_size)
        .is_some_and(|b| Vec::<u8>::new().try_reserve_exact(b).is_ok());
    if !fits {
        std::panic::resume_unwind(Box::new(AllocFailure {
            elems: n,
            elem_size,
        }));
    }
}

/// Room for `extra` more elements in `v`, grown as `Vec::reserve` would
/// (amortised doubling) but fallibly: a refusal unwinds with [`AllocFailure`].
#[inline]
pub fn reserve_more<T>(v: &mut Vec<T>, extra: usize) {
    if v.capacity() - v.len() < extra && v.try_reserve(extra).is_err() {
        alloc_failed::<T>(v.len().saturating_add(extra));
    }
}

/// A fallibly allocated copy of `src` (`src.to_vec()`, see [`alloc_vec`]).
pub fn copied_vec<T: Copy>(src: &[T]) -> Vec<T> {
    let mut v = alloc_vec(src.len());
    v.extend_from_slice(src);
    v
}

/// Early-return with a runtime error built from a format string.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::Runtime(format!($($arg)*)))
    };
}

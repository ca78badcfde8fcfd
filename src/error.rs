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
    pub bytes: usize,
}

impl fmt::Display for AllocFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes. Error code 12 (Cannot allocate memory)",
            self.bytes
        )
    }
}

/// An empty `Vec` with room for exactly `n` elements; a refused allocation
/// unwinds with [`AllocFailure`] rather than aborting.
pub fn alloc_vec<T>(n: usize) -> Vec<T> {
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        let bytes = n.saturating_mul(std::mem::size_of::<T>());
        // `resume_unwind` skips the panic hook: nothing is printed to stderr
        // for what is an ordinary, reported error.
        std::panic::resume_unwind(Box::new(AllocFailure { bytes }));
    }
    v
}

/// `n` copies of `value` in a fallibly allocated `Vec` (see [`alloc_vec`]).
pub fn filled_vec<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = alloc_vec(n);
    v.resize(n, value);
    v
}

/// Early-return with a runtime error built from a format string.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::Runtime(format!($($arg)*)))
    };
}

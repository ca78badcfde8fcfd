//! A flat, fixed-size buffer shared by a tensor and all of its views.

use std::any::Any;
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::anomaly::Trace;

use super::dtype::{DType, Element, TypedVec};

/// Who owns the memory a [`Storage`] points at.
enum Owner {
    Bool(#[allow(dead_code)] Vec<bool>),
    I64(#[allow(dead_code)] Vec<i64>),
    F32(#[allow(dead_code)] Vec<f32>),
    F64(#[allow(dead_code)] Vec<f64>),
    U8(#[allow(dead_code)] Vec<u8>),
    I8(#[allow(dead_code)] Vec<i8>),
    I16(#[allow(dead_code)] Vec<i16>),
    I32(#[allow(dead_code)] Vec<i32>),
    F16(#[allow(dead_code)] Vec<super::dtype::f16>),
    BF16(#[allow(dead_code)] Vec<super::dtype::bf16>),
    /// Memory owned by someone else (a NumPy array, or another storage that
    /// `.data` aliases); kept alive for as long as this storage lives.
    External(#[allow(dead_code)] Box<dyn Any + Send + Sync>),
}

/// Elements of one dtype in one allocation that never grows or moves.
///
/// The version counter lives here because PyTorch shares it between a tensor,
/// its views and `detach()`ed aliases: an in-place write through any of them
/// must invalidate what the graph saved. `.data` gets a fresh counter by
/// aliasing the memory through a second `Storage`.
pub struct Storage {
    ptr: NonNull<u8>,
    len: usize,
    dtype: DType,
    version: AtomicU64,
    /// What wrote this memory in place last (and, in anomaly mode, where).
    writes: Mutex<WriteLog>,
    _owner: Owner,
}

/// The in-place writes a storage remembers for the "modified by an inplace
/// operation" error: the last op's name always (a static string, so a write
/// costs no allocation), and in anomaly mode the stacks of the last few.
#[derive(Default)]
pub struct WriteLog {
    /// The op that made the last write (`mul_`), or "" when unnamed.
    pub last: &'static str,
    /// Anomaly mode only: recent writes, oldest first, at most `TRACED_WRITES`.
    pub traced: Option<Box<Vec<TracedWrite>>>,
}

/// One in-place write seen in anomaly mode.
pub struct TracedWrite {
    /// The version the write produced.
    pub version: u64,
    pub op: &'static str,
    pub trace: Arc<dyn Trace>,
}

const TRACED_WRITES: usize = 8;

thread_local! {
    static WRITE_OP: Cell<&'static str> = const { Cell::new("") };
}

/// Names the in-place op a binding is about to run, so the writes it makes
/// are attributed to it; the previous name comes back on drop.
pub struct WriteOpGuard(&'static str);

pub fn write_op(name: &'static str) -> WriteOpGuard {
    WriteOpGuard(WRITE_OP.with(|w| w.replace(name)))
}

impl Drop for WriteOpGuard {
    fn drop(&mut self) {
        WRITE_OP.with(|w| w.set(self.0));
    }
}

// The buffer is plain data; concurrent unsynchronised writes from two Python
// threads race on element values exactly as they do in PyTorch, but can never
// invalidate the allocation, which is fixed for the storage's lifetime.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    pub fn from_vec<T: Element>(mut v: Vec<T>) -> Arc<Storage> {
        let len = v.len();
        let ptr = NonNull::new(v.as_mut_ptr() as *mut u8).unwrap_or(NonNull::dangling());
        let owner = match T::into_typed(v) {
            TypedVec::Bool(v) => Owner::Bool(v),
            TypedVec::I64(v) => Owner::I64(v),
            TypedVec::F32(v) => Owner::F32(v),
            TypedVec::F64(v) => Owner::F64(v),
            TypedVec::U8(v) => Owner::U8(v),
            TypedVec::I8(v) => Owner::I8(v),
            TypedVec::I16(v) => Owner::I16(v),
            TypedVec::I32(v) => Owner::I32(v),
            TypedVec::F16(v) => Owner::F16(v),
            TypedVec::BF16(v) => Owner::BF16(v),
        };
        Arc::new(Storage {
            ptr,
            len,
            dtype: T::DTYPE,
            version: AtomicU64::new(0),
            writes: Mutex::default(),
            _owner: owner,
        })
    }

    /// Wraps memory owned by `owner`.
    ///
    /// # Safety
    /// `ptr` must be valid for `len` elements of `dtype`, suitably aligned, for
    /// as long as `owner` is alive, and not be freed by anyone else meanwhile.
    pub unsafe fn from_external(
        ptr: *mut u8,
        len: usize,
        dtype: DType,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Arc<Storage> {
        Arc::new(Storage {
            ptr: NonNull::new(ptr).unwrap_or(NonNull::dangling()),
            len,
            dtype,
            version: AtomicU64::new(0),
            writes: Mutex::default(),
            _owner: Owner::External(owner),
        })
    }

    /// The same memory under a fresh version counter (what `.data` returns).
    pub fn alias(this: &Arc<Storage>) -> Arc<Storage> {
        Self::alias_at_version(this, 0)
    }

    /// The same memory under a new version counter that starts at `version`.
    ///
    /// The alias keeps alive the storage that owns the memory, never another
    /// alias: `p.data -= lr * p.grad` in a training loop aliases an alias on
    /// every step, and a chain of them would be dropped recursively (a stack
    /// overflow after a few hundred thousand steps).
    pub fn alias_at_version(this: &Arc<Storage>, version: u64) -> Arc<Storage> {
        let keep = match &this._owner {
            Owner::External(owner) => match (**owner).downcast_ref::<Arc<Storage>>() {
                Some(root) => Arc::clone(root),
                None => Arc::clone(this),
            },
            _ => Arc::clone(this),
        };
        Arc::new(Storage {
            ptr: this.ptr,
            len: this.len,
            dtype: this.dtype,
            version: AtomicU64::new(version),
            writes: Mutex::default(),
            _owner: Owner::External(Box::new(keep)),
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Counts an in-place write, attributed to the op the binding named
    /// (`write_op`).
    pub fn bump_version(&self) {
        self.bump_version_by(WRITE_OP.with(|w| w.get()));
    }

    /// Counts an in-place write made by `op`.
    pub fn bump_version_by(&self, op: &'static str) {
        let version = self.version.fetch_add(1, Ordering::AcqRel) + 1;
        let trace = if crate::anomaly::is_enabled() {
            crate::anomaly::capture()
        } else {
            None
        };
        let mut w = self.writes.lock();
        w.last = op;
        if let Some(trace) = trace {
            let list = w.traced.get_or_insert_with(Default::default);
            if list.len() == TRACED_WRITES {
                list.remove(0);
            }
            list.push(TracedWrite { version, op, trace });
        }
    }

    /// The write log (see [`WriteLog`]).
    pub fn writes(&self) -> parking_lot::MutexGuard<'_, WriteLog> {
        self.writes.lock()
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Typed pointer to element 0. Callers dispatch on `dtype()` first.
    #[inline(always)]
    pub fn typed_ptr<T: Element>(&self) -> *mut T {
        debug_assert_eq!(T::DTYPE, self.dtype);
        self.ptr.as_ptr() as *mut T
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_of_aliases_keep_the_owner_not_a_chain() {
        let root = Storage::from_vec(vec![1.0f32, 2.0]);
        let mut s = Storage::alias(&root);
        // A chain this long would overflow the test thread's stack when dropped.
        for _ in 0..1_000_000 {
            s = Storage::alias(&s);
        }
        assert_eq!(Arc::strong_count(&root), 2); // only the last alias holds it
        assert_eq!(s.as_ptr(), root.as_ptr());
        assert_eq!(s.version(), 0);
        drop(s);
        assert_eq!(Arc::strong_count(&root), 1);
    }

    #[test]
    fn alias_at_version_starts_its_own_counter() {
        let root = Storage::from_vec(vec![0i64; 3]);
        root.bump_version();
        let a = Storage::alias_at_version(&root, 7);
        assert_eq!(a.version(), 7);
        a.bump_version();
        assert_eq!((a.version(), root.version()), (8, 1));
    }

    #[test]
    fn writes_are_attributed_to_the_op_the_binding_named() {
        let s = Storage::from_vec(vec![0.0f32; 2]);
        s.bump_version();
        assert_eq!(s.writes().last, "");
        {
            let _op = write_op("mul_");
            {
                let _inner = write_op("copy_");
                s.bump_version();
                assert_eq!(s.writes().last, "copy_");
            }
            s.bump_version();
        }
        assert_eq!((s.version(), s.writes().last), (3, "mul_"));
        s.bump_version_by("an optimizer step");
        assert_eq!(s.writes().last, "an optimizer step");
        // Outside anomaly mode no stack is kept.
        assert!(s.writes().traced.is_none());
    }
}

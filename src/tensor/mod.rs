//! The tensor: a strided view onto shared storage plus its autograd metadata.

mod dtype;
mod mapped_zeros;
mod shape;
mod storage;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

pub use dtype::{bf16, f16, Arith, DType, Element, Float, TypedVec, ALL_DTYPES};
pub use shape::{
    broadcast_shapes, broadcast_strides, checked_contiguous_strides, checked_numel,
    checked_storage_numel, contiguous_strides, fmt_shape, infer_shape, is_contiguous, numel,
    view_strides, wrap_dim, Shape, Strides,
};
pub use storage::{write_op, Storage, TracedWrite, WriteLog, WriteOpGuard};

use crate::autograd::{GradHook, NodeRef};
use crate::error::{Error, Result};
use crate::kernels;

/// Where a tensor's elements are: storage, shape, strides and offset.
#[derive(Clone)]
pub struct View {
    pub storage: Arc<Storage>,
    pub shape: Shape,
    pub strides: Strides,
    pub offset: usize,
}

impl View {
    pub fn contiguous(storage: Arc<Storage>, shape: Shape) -> View {
        let strides = contiguous_strides(&shape);
        View {
            storage,
            shape,
            strides,
            offset: 0,
        }
    }

    pub fn dtype(&self) -> DType {
        self.storage.dtype()
    }

    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    pub fn is_contiguous(&self) -> bool {
        is_contiguous(&self.shape, &self.strides)
    }

    /// Pointer to the first element of the view, typed.
    #[inline(always)]
    pub fn ptr<T: Element>(&self) -> *mut T {
        // The offset is in bounds for every view the crate constructs.
        self.storage.typed_ptr::<T>().wrapping_add(self.offset)
    }

    /// The elements as a slice when the view is contiguous.
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        if self.is_contiguous() && self.storage.dtype() == T::DTYPE {
            // SAFETY: a contiguous view covers `numel` elements from `offset`,
            // all inside the storage, which outlives the borrow of `self`.
            Some(unsafe { std::slice::from_raw_parts(self.ptr::<T>(), self.numel()) })
        } else {
            None
        }
    }
}

/// Per-tensor autograd state, guarded by one lock.
#[derive(Default)]
pub struct AutogradMeta {
    pub grad: Option<Tensor>,
    /// The node that produced this tensor and which of its outputs it is.
    pub grad_fn: Option<(NodeRef, u32)>,
    pub retains_grad: bool,
    /// Hooks on a leaf (a non-leaf's hooks live on its `grad_fn`).
    pub hooks: Vec<(u64, Arc<dyn GradHook>)>,
    /// The forward-mode tangent (`autograd::forward`), if any.
    pub fw_grad: Option<FwGrad>,
}

/// A forward-mode tangent: valid only while the dual level `level` (a
/// generation number, never reused) is the live one. For a view it is a
/// view of its base's tangent, cached with the id of that tangent
/// (`of_base`), so a base given a new tangent invalidates it; 0 otherwise.
pub struct FwGrad {
    pub level: u64,
    pub tangent: Tensor,
    pub of_base: usize,
}

pub struct TensorImpl {
    view: RwLock<View>,
    /// The view's dtype, element count and rank (`Summary`), copied out of
    /// the lock whenever the view is set. Ops ask for these several times per
    /// call; a read lock costs two atomic read-modify-writes, a load none.
    summary: AtomicU64,
    /// Read on every op call; kept outside the lock so that check is one load.
    requires_grad: AtomicBool,
    meta: Mutex<AutogradMeta>,
    /// The tensor whose storage this one views (always the root, never a view).
    base: Option<Tensor>,
    /// An opaque word the language binding may use to remember the object
    /// that currently wraps this tensor (the Python layer keeps a *borrowed*
    /// `PyObject` pointer here so `x.grad is x.grad`). The core never reads
    /// or interprets it; 0 means unset.
    binding_slot: AtomicUsize,
    /// For a view: the storage version when its `grad_fn` was last set. A
    /// write into the shared memory since then (through the base or another
    /// view) makes the view stale, and its `grad_fn` is regenerated as a view
    /// of the base's current history, as PyTorch does.
    view_version: AtomicU64,
    /// How a view came to be, for PyTorch's refusal of in-place writes into
    /// views made under `no_grad()` (`CreationMeta::NoGrad`).
    creation: CreationMeta,
}

/// PyTorch's `CreationMeta` for views: whether the view was taken in grad
/// mode. A view made under `no_grad()` is outside its base's graph, so
/// writing into it (or its base) with grad mode on is ambiguous and refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreationMeta {
    Default,
    /// Taken under `no_grad()`.
    NoGrad,
    /// Taken in grad mode from a `NoGrad` view of a tensor that requires
    /// grad, by the view op whose node is named here (`"SliceBackward0"`).
    OfNoGradView(&'static str),
    /// One of several views returned together by one op (`split`, `chunk`,
    /// `unbind`) in grad mode, or a view taken from one. Their node has one
    /// output per piece, so a piece cannot be rebased onto new history: it may
    /// not be written in place while its base requires grad, nor used once
    /// its memory was written.
    MultiOutput,
}

/// How a stale view is brought up to date (see `Tensor::refresh_stale_view`):
/// the error for a view that may not follow its base, and the regeneration
/// of a view's history from its base's. Both build graph nodes, which is the
/// job of `ops` (this layer does not call into it), so `ops` installs them
/// before it makes any view of a base; no view can be stale before that.
pub struct ViewRefresh {
    pub rebase_error: fn(&Tensor, bool) -> Error,
    pub regenerate: fn(&Tensor),
}

static VIEW_REFRESH: OnceLock<ViewRefresh> = OnceLock::new();

/// Installs the view refresh once (later calls cost one atomic load).
#[inline]
pub fn install_view_refresh(make: impl FnOnce() -> ViewRefresh) {
    VIEW_REFRESH.get_or_init(make);
}

/// `TensorImpl::summary`'s bit set when the element count or the rank does
/// not fit its field (never for memory that exists; an expanded view could):
/// then both are read from the view.
const SUMMARY_BIG: u64 = 1 << 63;

/// Packs a view's dtype (bits 0-3), rank (bits 4-11) and element count (bits
/// 12-62), or sets `SUMMARY_BIG`.
fn summary_of(v: &View) -> u64 {
    let (n, rank) = (v.numel() as u64, v.shape.len() as u64);
    let dt = v.dtype().index() as u64;
    const _: () = assert!(
        dtype::DTYPE_BITS == 4,
        "the summary packs a dtype in 4 bits"
    );
    if n < 1 << 51 && rank <= 0xff {
        n << 12 | rank << 4 | dt
    } else {
        SUMMARY_BIG | dt
    }
}

/// A reference-counted handle; clones share one tensor, as Python names do.
#[derive(Clone)]
pub struct Tensor(Arc<TensorImpl>);

impl Tensor {
    pub fn from_view(view: View, base: Option<Tensor>) -> Tensor {
        Tensor::with_creation(view, base, CreationMeta::Default)
    }

    fn with_creation(view: View, base: Option<Tensor>, creation: CreationMeta) -> Tensor {
        let view_version = AtomicU64::new(view.storage.version());
        let summary = AtomicU64::new(summary_of(&view));
        Tensor(Arc::new(TensorImpl {
            view: RwLock::new(view),
            summary,
            requires_grad: AtomicBool::new(false),
            meta: Mutex::new(AutogradMeta::default()),
            base,
            binding_slot: AtomicUsize::new(0),
            view_version,
            creation,
        }))
    }

    /// A view of `src`'s memory made by the view op whose node is `op`
    /// (`"SliceBackward0"`); its base is `src`'s root.
    pub fn new_view(view: View, src: &Tensor, op: &'static str) -> Tensor {
        let creation = if !crate::autograd::is_grad_enabled() {
            CreationMeta::NoGrad
        } else {
            match src.creation_meta() {
                c @ (CreationMeta::Default | CreationMeta::MultiOutput) => c,
                _ if src.root().requires_grad() => CreationMeta::OfNoGradView(op),
                c => c,
            }
        };
        Tensor::with_creation(view, Some(src.root().clone()), creation)
    }

    /// One of the views an op returns together (`split`, `unbind`): in grad
    /// mode it is `CreationMeta::MultiOutput`, whatever `src` was, as PyTorch
    /// propagates it; under `no_grad()` an ordinary no-grad view.
    pub fn new_multi_output_view(view: View, src: &Tensor) -> Tensor {
        let creation = if crate::autograd::is_grad_enabled() {
            CreationMeta::MultiOutput
        } else {
            CreationMeta::NoGrad
        };
        Tensor::with_creation(view, Some(src.root().clone()), creation)
    }

    pub fn creation_meta(&self) -> CreationMeta {
        self.0.creation
    }

    pub fn from_vec<T: Element>(data: Vec<T>, shape: Shape) -> Tensor {
        debug_assert_eq!(data.len(), numel(&shape));
        Tensor::from_view(View::contiguous(Storage::from_vec(data), shape), None)
    }

    pub fn from_typed(data: TypedVec, shape: Shape) -> Tensor {
        match data {
            TypedVec::Bool(v) => Tensor::from_vec(v, shape),
            TypedVec::I64(v) => Tensor::from_vec(v, shape),
            TypedVec::F32(v) => Tensor::from_vec(v, shape),
            TypedVec::F64(v) => Tensor::from_vec(v, shape),
            TypedVec::U8(v) => Tensor::from_vec(v, shape),
            TypedVec::I8(v) => Tensor::from_vec(v, shape),
            TypedVec::I16(v) => Tensor::from_vec(v, shape),
            TypedVec::I32(v) => Tensor::from_vec(v, shape),
            TypedVec::F16(v) => Tensor::from_vec(v, shape),
            TypedVec::BF16(v) => Tensor::from_vec(v, shape),
        }
    }

    pub fn scalar<T: Element>(v: T) -> Tensor {
        Tensor::from_vec(vec![v], Shape::new())
    }

    /// A 0-d tensor of `dtype` holding `v` converted the way `tensor.to(dtype)` would.
    pub fn scalar_of(v: f64, dtype: DType) -> Tensor {
        crate::dispatch!(dtype, T => Tensor::scalar(T::from_f64(v)))
    }

    pub fn full(shape: Shape, v: f64, dtype: DType) -> Tensor {
        let n = numel(&shape);
        crate::dispatch!(dtype, T => Tensor::from_vec(crate::error::filled_vec(n, T::from_f64(v)), shape))
    }

    pub fn zeros(shape: Shape, dtype: DType) -> Tensor {
        // Written, not a zeroed allocation: untouched pages of a large block
        // fault on first use, and a gradient read through a transposed view
        // then faulted page by page (floor's backward at 0.4x PyTorch).
        Tensor::full(shape, 0.0, dtype)
    }

    /// Zeros that are a result, not a buffer about to be filled (the
    /// gradient of a rounding or sign function): a large block is mapped
    /// fresh from the kernel, which zeroes a page only when it is first
    /// written (see `mapped_zeros`); others are written as [`Tensor::zeros`].
    pub fn zeros_untouched(shape: Shape, dtype: DType) -> Tensor {
        let n = numel(&shape);
        let Some(bytes) = n.checked_mul(dtype.size()) else {
            return Tensor::zeros(shape, dtype);
        };
        match mapped_zeros::zeroed_block(bytes) {
            // SAFETY: the block holds `bytes` zero bytes, 2 MiB aligned (so
            // aligned for any element), which is `n` zeros of every dtype,
            // and the owner keeps it mapped for the storage's lifetime.
            Some((ptr, owner)) => {
                let storage = unsafe { Storage::from_external(ptr, n, dtype, owner) };
                Tensor::from_view(View::contiguous(storage, shape), None)
            }
            None => Tensor::zeros(shape, dtype),
        }
    }

    // ----- data access -------------------------------------------------

    pub fn view(&self) -> RwLockReadGuard<'_, View> {
        self.0.view.read_recursive()
    }

    /// Replaces what this tensor views (`t.data = other`). As PyTorch's
    /// `set_data` does, the tensor keeps its own version counter: the new
    /// memory is aliased under a counter continuing from the current value, so
    /// `x.data *= 2` does not make the tensors the graph saved look modified.
    pub fn set_view(&self, mut v: View) {
        let version = self.version();
        v.storage = Storage::alias_at_version(&v.storage, version);
        let mut w = self.0.view.write();
        self.0.summary.store(summary_of(&v), Ordering::Release);
        *w = v;
    }

    pub fn shape(&self) -> Shape {
        self.view().shape.clone()
    }

    #[inline]
    pub fn dtype(&self) -> DType {
        DType::from_index((self.0.summary.load(Ordering::Acquire) & 15) as u8)
    }

    #[inline]
    pub fn numel(&self) -> usize {
        let s = self.0.summary.load(Ordering::Acquire);
        if s & SUMMARY_BIG != 0 {
            return self.view().numel();
        }
        (s >> 12) as usize
    }

    #[inline]
    pub fn ndim(&self) -> usize {
        let s = self.0.summary.load(Ordering::Acquire);
        if s & SUMMARY_BIG != 0 {
            return self.view().shape.len();
        }
        ((s >> 4) & 0xff) as usize
    }

    pub fn is_contiguous(&self) -> bool {
        self.view().is_contiguous()
    }

    pub fn storage(&self) -> Arc<Storage> {
        Arc::clone(&self.view().storage)
    }

    pub fn version(&self) -> u64 {
        self.view().storage.version()
    }

    pub fn base(&self) -> Option<&Tensor> {
        self.0.base.as_ref()
    }

    pub fn is_view(&self) -> bool {
        self.0.base.is_some()
    }

    /// The tensor a view was taken from, or the tensor itself.
    pub fn root(&self) -> &Tensor {
        self.0.base.as_ref().unwrap_or(self)
    }

    pub fn same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// A stable identity for hashing (the address of the shared impl).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// Whether nothing else can observe this tensor's memory: no other handle,
    /// no view, no other user of the storage, and contiguous.
    pub fn is_exclusive(&self) -> bool {
        Arc::strong_count(&self.0) == 1 && self.0.base.is_none() && !self.requires_grad() && {
            let v = self.view();
            Arc::strong_count(&v.storage) == 1 && v.is_contiguous() && v.offset == 0
        }
    }

    /// Whether this handle is the only way to reach its storage and reads it
    /// from its start, in any order: [`is_exclusive`](Self::is_exclusive)
    /// without row-major order (a fresh result laid out as a transpose).
    pub fn is_sole_handle(&self) -> bool {
        Arc::strong_count(&self.0) == 1 && self.0.base.is_none() && !self.requires_grad() && {
            let v = self.view();
            Arc::strong_count(&v.storage) == 1 && v.offset == 0
        }
    }

    /// Whether this handle is the only way to reach its storage: either it
    /// is exclusive itself, or it is a view nobody else holds of a base that
    /// nothing else holds. Its elements may then be written in place
    /// (through [`View::ptr`]) without any other tensor seeing the change.
    pub fn owns_storage(&self) -> bool {
        if self.is_exclusive() {
            return true;
        }
        let Some(base) = self.base() else {
            return false;
        };
        Arc::strong_count(&self.0) == 1
            && !self.requires_grad()
            && Arc::strong_count(&base.0) == 1
            && base.0.base.is_none()
            && !base.requires_grad()
            && Arc::strong_count(&self.view().storage) == 2
            && Arc::ptr_eq(&self.view().storage, &base.view().storage)
    }

    pub fn downgrade(&self) -> WeakTensor {
        WeakTensor(Arc::downgrade(&self.0))
    }

    /// The elements in row-major order, converted to `T`.
    pub fn to_vec<T: Element>(&self) -> Vec<T> {
        let v = self.view();
        if v.dtype() == T::DTYPE {
            return kernels::copy::gather::<T>(&v);
        }
        crate::dispatch!(v.dtype(), S => {
            let src = kernels::copy::gather::<S>(&v);
            let mut out = crate::error::alloc_vec(src.len());
            out.extend(src.into_iter().map(kernels::convert::cast::<S, T>));
            out
        })
    }

    /// The value of a one-element tensor.
    pub fn item(&self) -> Result<f64> {
        let v = self.view();
        if v.numel() != 1 {
            return Err(Error::runtime(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                v.numel()
            )));
        }
        Ok(crate::dispatch!(v.dtype(), T => unsafe { *v.ptr::<T>() }.to_f64()))
    }

    /// A contiguous tensor with the same values: `self` if already contiguous.
    /// Not recorded; the differentiable version is `ops::contiguous`.
    pub fn contiguous_data(&self) -> Tensor {
        if self.is_contiguous() {
            return self.clone();
        }
        let v = self.view();
        let shape = v.shape.clone();
        crate::dispatch!(v.dtype(), T => Tensor::from_vec(kernels::copy::gather::<T>(&v), shape))
    }

    // ----- autograd metadata ---------------------------------------------

    /// As PyTorch's: set for a leaf or a tensor in the graph, and for any
    /// view of a tensor that requires grad, even one taken under `no_grad()`
    /// (which stays a leaf with no edge into its base's graph).
    #[inline]
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad.load(Ordering::Relaxed)
            || self.0.base.as_ref().is_some_and(|b| b.requires_grad())
    }

    /// Whether gradients reaching this tensor as a leaf accumulate into its
    /// `.grad` (`requires_grad` without what it inherits from a base).
    pub fn requires_grad_flag(&self) -> bool {
        self.0.requires_grad.load(Ordering::Relaxed)
    }

    /// A view whose base requires grad and whose memory was written since its
    /// `grad_fn` was set: it now depends on the base's current history.
    fn is_stale_view(&self) -> bool {
        match &self.0.base {
            Some(b) => {
                b.requires_grad() && self.0.view_version.load(Ordering::Acquire) != self.version()
            }
            None => false,
        }
    }

    /// Brings a stale view's `grad_fn` up to date (see `view_version`): a view
    /// taken in grad mode is regenerated from the base's current history. One
    /// taken under `no_grad()` has no history to follow, and one piece of a
    /// multi-output view op cannot leave its node; both stay in error
    /// (PyTorch refuses any later use of them in the graph).
    fn refresh_stale_view(&self) -> Result<()> {
        if self.0.base.is_some() && self.is_stale_view() {
            let refresh = VIEW_REFRESH
                .get()
                .expect("views of a base are made by ops, which installs the view refresh");
            if self.0.creation != CreationMeta::Default {
                return Err((refresh.rebase_error)(self, true));
            }
            self.0.view_version.store(self.version(), Ordering::Release);
            (refresh.regenerate)(self);
        }
        Ok(())
    }

    pub(crate) fn set_requires_grad_flag(&self, on: bool) {
        self.0.requires_grad.store(on, Ordering::Relaxed);
    }

    pub fn meta(&self) -> MutexGuard<'_, AutogradMeta> {
        self.0.meta.lock()
    }

    /// The metadata if nobody holds its lock (for the garbage collector, which
    /// must never block).
    pub fn try_meta(&self) -> Option<MutexGuard<'_, AutogradMeta>> {
        self.0.meta.try_lock()
    }

    /// The binding's opaque word (see `TensorImpl::binding_slot`).
    #[inline]
    pub fn binding_slot(&self) -> usize {
        self.0.binding_slot.load(Ordering::Acquire)
    }

    /// Sets the binding's opaque word.
    #[inline]
    pub fn set_binding_slot(&self, v: usize) {
        self.0.binding_slot.store(v, Ordering::Release);
    }

    /// Resets the binding's word to 0 if it still holds `expected`.
    #[inline]
    pub fn clear_binding_slot(&self, expected: usize) {
        let _ =
            self.0
                .binding_slot
                .compare_exchange(expected, 0, Ordering::AcqRel, Ordering::Acquire);
    }

    /// How many handles share this tensor.
    pub fn handle_count(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    /// The node that produced this tensor. An error for a view taken under
    /// `no_grad()` whose memory was written since (PyTorch's refusal).
    pub fn try_grad_fn(&self) -> Result<Option<(NodeRef, u32)>> {
        self.refresh_stale_view()?;
        Ok(self.meta().grad_fn.clone())
    }

    /// `try_grad_fn` for internal bookkeeping: a view in that error state
    /// reports the node it had.
    pub fn grad_fn(&self) -> Option<(NodeRef, u32)> {
        let _ = self.refresh_stale_view();
        self.meta().grad_fn.clone()
    }

    pub fn try_is_leaf(&self) -> Result<bool> {
        Ok(self.try_grad_fn()?.is_none())
    }

    pub fn is_leaf(&self) -> bool {
        let _ = self.refresh_stale_view();
        self.meta().grad_fn.is_none()
    }

    pub fn grad(&self) -> Option<Tensor> {
        self.meta().grad.clone()
    }

    pub fn set_grad(&self, g: Option<Tensor>) {
        // Taken out before the lock is dropped so a freed gradient's graph is
        // released without holding this tensor's lock.
        let old = std::mem::replace(&mut self.meta().grad, g);
        drop(old);
    }

    /// Turns `requires_grad` on or off for a leaf, with PyTorch's errors.
    pub fn set_requires_grad(&self, on: bool) -> Result<()> {
        if !self.is_leaf() {
            if on {
                return Ok(());
            }
            return Err(Error::runtime(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().",
            ));
        }
        if on && !self.dtype().is_float() {
            return Err(Error::runtime(
                "only Tensors of floating point dtype can require gradients",
            ));
        }
        self.set_requires_grad_flag(on);
        Ok(())
    }

    /// Attaches this (fresh) tensor to the graph as output `nr` of `node`.
    pub(crate) fn set_grad_fn(&self, node: NodeRef, nr: u32) {
        if self.0.base.is_some() {
            self.0.view_version.store(self.version(), Ordering::Release);
        }
        let old = self.meta().grad_fn.replace((node, nr));
        self.set_requires_grad_flag(true);
        drop(old);
    }

    /// Cuts this tensor out of the graph in place (`detach_()`).
    pub fn detach_in_place(&self) {
        let old = self.meta().grad_fn.take();
        self.set_requires_grad_flag(false);
        drop(old);
    }

    /// A new tensor sharing storage (and version counter), outside the graph.
    /// Not a view for autograd purposes: in-place writes through it are allowed
    /// even when `self` is a leaf that requires grad (they bump the shared counter).
    pub fn detach(&self) -> Tensor {
        let v = self.view().clone();
        Tensor::from_view(v, None)
    }

    /// `.data`: the same memory under a fresh version counter, untracked, so
    /// writes through it are invisible to the graph (as in PyTorch).
    pub fn data_alias(&self) -> Tensor {
        let mut v = self.view().clone();
        v.storage = Storage::alias(&v.storage);
        Tensor::from_view(v, None)
    }
}

/// A non-owning tensor handle (used by `retain_grad`, which must not keep
/// its tensor alive through the graph).
#[derive(Clone)]
pub struct WeakTensor(std::sync::Weak<TensorImpl>);

impl WeakTensor {
    pub fn upgrade(&self) -> Option<Tensor> {
        self.0.upgrade().map(Tensor)
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (shape, dtype) = {
            let v = self.view();
            (v.shape.clone(), v.dtype())
        };
        write!(
            f,
            "Tensor(shape={}, dtype={dtype}, data={:?})",
            fmt_shape(&shape),
            self.to_vec::<f64>()
        )
    }
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    #[test]
    fn summary_follows_the_view_and_falls_back_when_too_big() {
        let t = Tensor::from_vec(vec![1.0f32; 6], smallvec::smallvec![2, 3]);
        assert_eq!((t.dtype(), t.numel(), t.ndim()), (DType::F32, 6, 2));
        t.set_view(View::contiguous(
            Storage::from_vec(vec![0i64; 4]),
            smallvec::smallvec![4],
        ));
        assert_eq!((t.dtype(), t.numel(), t.ndim()), (DType::I64, 4, 1));
        // An expanded view larger than the count field: read from the view.
        let big = View {
            storage: Storage::from_vec(vec![0.0f64; 1]),
            shape: smallvec::smallvec![1 << 30, 1 << 30],
            strides: smallvec::smallvec![0, 0],
            offset: 0,
        };
        let b = Tensor::from_view(big, None);
        assert_eq!((b.dtype(), b.numel(), b.ndim()), (DType::F64, 1 << 60, 2));
        for d in ALL_DTYPES {
            assert_eq!(DType::from_index(d.index()), d);
        }
    }
}

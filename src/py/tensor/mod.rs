//! The `Tensor` class Python sees. Every operator and method is a direct call
//! into Rust: no Python-level wrapper sits on the per-op path. The methods of
//! the op table (`ops_table.rs`) are generated; the rest are written here by
//! topic: construction, identity and metadata (this file), `autograd`,
//! `convert`, `operators` (and in-place writes), `math` (elementwise with
//! options, reductions), `shape` and `indexing`.

mod attrs;
mod autograd;
mod convert;
mod indexing;
mod math;
mod operators;
mod sampling;
mod shape;

pub use autograd::default_grad;
pub use convert::tensor_to_py;
pub(crate) use operators::{add_impl, sub_impl};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{ffi, PyTraverseError, PyVisit};

use super::convert::{tensor_from_data, to_numpy_shared};
use super::dtype::{dtype_object, PyDType};
use super::errors::read;
use super::function::PyFunctionBackward;
use super::node::PyHook;
use crate::ops;
use crate::tensor::{DType, Tensor};

/// A multi-dimensional array of one dtype (bool, int64, float32, float64)
/// that records the operations on it for automatic differentiation when it
/// requires grad, as PyTorch's `torch.Tensor`. `Tensor(data)` builds a
/// tensor of the default dtype; `ferrograd.tensor(data)` infers the dtype.
/// Like PyTorch's tensors it takes arbitrary attributes (`t.name = "w"`).
//
// No `__dict__` slot (`tp_dictoffset`) on the base class: CPython 3.11's
// `object_new`, which pyo3 allocates through, creates that dict eagerly,
// before pyo3 writes the Rust value. That costs a dict per tensor, and the
// allocation can run the collector on the half-built object. Attributes
// live in `attrs` instead (see "Attributes" below). Python subclasses
// (`nn.Parameter`) still get their own `__dict__` as usual.
#[pyclass(name = "Tensor", module = "ferrograd", subclass, weakref, frozen)]
pub struct PyTensor {
    pub t: Tensor,
    /// This object's own address once it is registered as the Python object
    /// of `t` (see "Object identity" below), 0 otherwise. Lets `Drop` tell
    /// whether `t`'s binding slot still names this object.
    registered: AtomicUsize,
    /// The attribute dict, created on the first attribute write (or
    /// `__dict__` read); empty for almost every tensor.
    attrs: OnceLock<Py<PyDict>>,
}

impl PyTensor {
    pub fn new(t: Tensor) -> PyTensor {
        PyTensor {
            t,
            registered: AtomicUsize::new(0),
            attrs: OnceLock::new(),
        }
    }
}

// ----- Object identity -------------------------------------------------------------
//
// PyTorch keeps one Python object per tensor: `x.grad is x.grad`, and
// `grad_fn.next_functions[0][0].variable is x`. Each `TensorImpl` has an
// opaque word (`binding_slot`) in which this layer keeps a *borrowed* pointer
// to the `PyTensor` currently wrapping it, so `wrap` can hand that object back
// instead of making a second one.
//
// Invariants (every read and write happens with the GIL held, so none races):
// - the slot is set only to the address of a `PyTensor` whose `t` is that
//   impl, right after the object is created (`wrap`) or initialised
//   (`__init__`, for objects made by `Tensor.__new__`, e.g. `nn.Parameter`);
// - that object's `Drop` (run by its `tp_dealloc`, before the memory is
//   freed) resets the slot if it still names the object. So whenever the slot
//   is non-zero it points at allocated memory;
// - an object whose reference count is already 0 is being deallocated (for a
//   Python subclass, `subtype_dealloc` clears its `__dict__`, which can run
//   arbitrary code, before our `Drop`). It must never be handed out again, so
//   `registered_object` ignores it and `wrap` registers a fresh object.

/// The live Python object registered for `t`, as a new reference.
pub(crate) fn registered_object(py: Python<'_>, t: &Tensor) -> Option<Py<PyAny>> {
    let p = t.binding_slot();
    if p == 0 {
        return None;
    }
    let ptr = p as *mut ffi::PyObject;
    // SAFETY: per the invariants above the slot names a PyTensor whose memory
    // is still allocated, and the GIL is held so it cannot be freed meanwhile.
    // A count of 0 means it is being deallocated: never resurrect it.
    unsafe {
        if ffi::Py_REFCNT(ptr) <= 0 {
            return None;
        }
        Some(Bound::from_borrowed_ptr(py, ptr).unbind())
    }
}

/// Makes `obj` the Python object of its tensor.
fn register(obj: &Bound<'_, PyTensor>) {
    let p = obj.as_ptr() as usize;
    let pt = obj.get();
    pt.registered.store(p, Ordering::Relaxed);
    pt.t.set_binding_slot(p);
}

impl Drop for PyTensor {
    fn drop(&mut self) {
        // Runs inside tp_dealloc (GIL held) for objects Python owned; an
        // object never registered (a Rust temporary) leaves the slot alone.
        let me = *self.registered.get_mut();
        if me != 0 {
            self.t.clear_binding_slot(me);
        }
    }
}

/// The Python object for `t`: the one already wrapping it if there is one
/// (an `nn.Parameter` stays itself), else a new `Tensor`.
pub fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    if let Some(o) = registered_object(py, &t) {
        return Ok(o);
    }
    let obj = Bound::new(py, PyTensor::new(t))?;
    register(&obj);
    Ok(obj.into_any().unbind())
}

/// A Python tuple of `ts`, `None` where a tensor is absent (gradients that
/// were not asked for).
pub fn wrap_optional_tuple(
    py: Python<'_>,
    ts: impl IntoIterator<Item = Option<Tensor>>,
) -> PyResult<Py<PyAny>> {
    let objs = ts
        .into_iter()
        .map(|t| match t {
            Some(t) => wrap(py, t),
            None => Ok(py.None()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(pyo3::types::PyTuple::new(py, objs)?.into_any().unbind())
}

/// `slf` itself when `t` is its tensor (`x.to(x.dtype) is x`), else `wrap(t)`.
pub(crate) fn wrap_or_self(slf: &Bound<'_, PyTensor>, t: Tensor) -> PyResult<Py<PyAny>> {
    if t.same(&slf.get().t) {
        return Ok(slf.clone().into_any().unbind());
    }
    wrap(slf.py(), t)
}

/// Several tensors as a Python tuple.
pub fn tensor_tuple(py: Python<'_>, parts: Vec<Tensor>) -> PyResult<Py<PyAny>> {
    let items: Vec<Py<PyAny>> = parts
        .into_iter()
        .map(|t| wrap(py, t))
        .collect::<PyResult<_>>()?;
    Ok(PyTuple::new(py, items)?.into_any().unbind())
}

static RETURN_TYPES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A `(values, indices)` named tuple like `torch.return_types.max`.
pub fn return_pair(py: Python<'_>, name: &str, a: Tensor, b: Tensor) -> PyResult<Py<PyAny>> {
    let m = RETURN_TYPES.get_or_try_init(py, || -> PyResult<_> {
        Ok(py.import("ferrograd.return_types")?.into_any().unbind())
    })?;
    let cls = m.bind(py).getattr(name)?;
    Ok(cls.call1((wrap(py, a)?, wrap(py, b)?))?.unbind())
}

static REPR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static SIZE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn size_object<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let cls = SIZE.get_or_try_init(py, || -> PyResult<_> {
        Ok(py.import("ferrograd._size")?.getattr("Size")?.unbind())
    })?;
    cls.bind(py).call1((PyTuple::new(py, shape)?,))
}

/// What `__reduce__` returns: `ferrograd._rebuild_tensor`, its arguments and
/// the attributes (`__dict__`, or None when there are none).
type Reduced = (Py<PyAny>, (Py<PyAny>, bool), Py<PyAny>);

#[pymethods]
impl PyTensor {
    // NumPy defers to the tensor's reflected operators (`ndarray * tensor`).
    #[classattr]
    #[allow(non_upper_case_globals)]
    const __array_priority__: f64 = 1000.0;

    /// The legacy constructor, as PyTorch's: `Tensor(data)` builds a tensor of
    /// the default float dtype whatever `data`'s own dtype (a float64 array
    /// included), `Tensor(2, 3)` a zero-filled 2x3 tensor (PyTorch leaves it
    /// uninitialised), `Tensor()` an empty one, and `Tensor(other_tensor)`
    /// aliases it (what `nn.Parameter(t)` relies on).
    #[new]
    #[pyo3(signature = (*args, requires_grad=false))]
    fn py_new(args: &Bound<'_, PyTuple>, requires_grad: bool) -> PyResult<Self> {
        if crate::compile::active() {
            // The new object is Python's to make; a replay cannot make it again.
            crate::compile::no_rule("Tensor");
        }
        let float = DType::default_float();
        let py = args.py();
        let first = args.get_item(0).ok();
        // `Tensor(fg.Size([2, 3]))` is a shape; a plain tuple is data.
        let size_arg = match &first {
            Some(f) if args.len() == 1 => {
                let size_cls = py.import("ferrograd._size")?.getattr("Size")?;
                f.is_instance(&size_cls)?
            }
            _ => false,
        };
        let dims_of = |items: Vec<Bound<'_, PyAny>>| -> PyResult<Option<Vec<usize>>> {
            let mut dims = Vec::with_capacity(items.len());
            for (i, a) in items.iter().enumerate() {
                if !a.is_exact_instance_of::<pyo3::types::PyInt>() {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "new(): argument 'size' failed to unpack the object at pos {} with error \
                         \"type must be tuple of ints,but got {}\"",
                        i + 1,
                        a.get_type().name()?
                    )));
                }
                dims.push(a.extract::<i64>()?);
            }
            if let Some(&d) = dims.iter().find(|&&d| d < 0) {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "Trying to create tensor with negative dimension {d}: {dims:?}"
                )));
            }
            Ok(Some(dims.into_iter().map(|d| d as usize).collect()))
        };
        let sizes: Option<Vec<usize>> = match &first {
            None => Some(vec![0]),
            Some(f) if size_arg => dims_of(f.try_iter()?.collect::<PyResult<_>>()?)?,
            Some(f) if args.len() > 1 || f.is_exact_instance_of::<pyo3::types::PyInt>() => {
                dims_of(args.iter().collect())?
            }
            Some(f)
                if f.is_none()
                    || f.is_instance_of::<pyo3::types::PyFloat>()
                    || f.is_instance_of::<pyo3::types::PyBool>()
                    || f.is_instance_of::<pyo3::types::PyComplex>() =>
            {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "new(): data must be a sequence (got {})",
                    f.get_type().name()?
                )));
            }
            Some(_) => None,
        };
        let t = match sizes {
            Some(dims) => Tensor::zeros(dims.into_iter().collect(), float),
            None => {
                let d = args.get_item(0)?;
                match d.cast::<PyTensor>() {
                    Ok(t) => t.get().t.detach(),
                    Err(_) => {
                        let t = tensor_from_data(&d, None)?;
                        if t.dtype() == float {
                            t
                        } else {
                            ops::to_dtype(&t, float)?
                        }
                    }
                }
            }
        };
        if requires_grad {
            t.set_requires_grad(true)?;
        }
        Ok(PyTensor::new(t))
    }

    /// Registers an object made by `Tensor.__new__` (`Tensor(data)`,
    /// `nn.Parameter(t)`) as its tensor's Python object, so later wraps of
    /// that tensor (`AccumulateGrad.variable`) return it.
    #[pyo3(signature = (*_args, **_kwargs))]
    fn __init__(
        slf: &Bound<'_, Self>,
        _args: &Bound<'_, PyTuple>,
        _kwargs: Option<&Bound<'_, PyDict>>,
    ) {
        if registered_object(slf.py(), &slf.get().t).is_none() {
            register(slf);
        }
    }

    /// The tensor's size as a `ferrograd.Size` (a tuple of ints).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        size_object(py, &self.t.shape())
    }

    /// The tensor's size as a `ferrograd.Size`, or with `dim` the length of that dimension
    /// (negative counts from the end).
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        let shape = self.t.shape();
        match dim {
            None => size_object(py, &shape),
            Some(d) => {
                let d = crate::tensor::wrap_dim(d, shape.len())?;
                if shape.is_empty() {
                    return Err(PyIndexError::new_err(
                        "dimension specified as 0 but tensor has no dimensions",
                    ));
                }
                Ok(shape[d].into_pyobject(py)?.into_any())
            }
        }
    }

    /// The number of dimensions (0 for a scalar tensor).
    fn dim(&self) -> usize {
        self.t.ndim()
    }

    /// The number of dimensions (0 for a scalar tensor); the same as `dim()`.
    #[getter]
    fn ndim(&self) -> usize {
        self.t.ndim()
    }

    /// The number of elements (the product of the sizes).
    fn numel(&self) -> usize {
        self.t.numel()
    }

    /// The number of elements; the same as `numel()`.
    fn nelement(&self) -> usize {
        self.t.numel()
    }

    /// The element type: `ferrograd.bool`, `int64`, `float32` or `float64`.
    #[getter]
    fn dtype(&self, py: Python<'_>) -> Py<PyDType> {
        dtype_object(py, self.t.dtype())
    }

    /// Always `ferrograd.device("cpu")` (equal to the string `"cpu"`): ferrograd runs on the
    /// CPU only.
    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        crate::py::device::cpu_device(py)
    }

    /// Always False: ferrograd runs on the CPU only.
    #[getter]
    fn is_cuda(&self) -> bool {
        false
    }

    /// True when the dtype is float32 or float64.
    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_float()
    }

    /// True when the elements are laid out in row-major order with no gaps (an empty tensor
    /// always is); with `memory_format=channels_last` (or `channels_last_3d`), whether they
    /// are laid out channels-last, read from the strides.
    #[pyo3(signature = (memory_format=None))]
    fn is_contiguous(&self, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        match crate::py::device::check_memory_format(memory_format, None)?.as_deref() {
            Some("channels_last") => Ok(channels_last_contiguous(&self.t, 4)),
            Some("channels_last_3d") => Ok(channels_last_contiguous(&self.t, 5)),
            _ => Ok(self.t.is_contiguous()),
        }
    }

    /// The step in elements between neighbours along each dimension, as a tuple.
    fn stride<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let v = self.t.view();
        PyTuple::new(py, v.strides.iter().zip(&v.shape).map(|(&s, _)| s))
    }

    /// The index of the tensor's first element in its memory (nonzero for some views).
    fn storage_offset(&self) -> usize {
        self.t.view().offset
    }

    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }

    /// The address of the tensor's first element.
    fn data_ptr(&self) -> usize {
        let v = self.t.view();
        v.storage.as_ptr() as usize + v.offset * v.dtype().size()
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let f = REPR.get_or_try_init(py, || -> PyResult<_> {
            Ok(py
                .import("ferrograd._tensor_str")?
                .getattr("_repr")?
                .unbind())
        })?;
        f.bind(py).call1((slf,))?.extract()
    }

    /// Reports the Python objects this tensor keeps alive through Rust (a
    /// custom Function's ctx via `grad_fn`, hooks on the `grad_fn` node of a
    /// non-leaf, leaf hooks), so cycles through them are collected. Only when
    /// this object is the sole owner of that chain (of the tensor, and the
    /// tensor of the node), so no reference is ever reported twice.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // The attribute dict belongs to this object alone: always reported.
        if let Some(d) = self.attrs.get() {
            visit.call(d)?;
        }
        // A Python subclass (`nn.Parameter`) gets its `__dict__` in
        // `object_new` before pyo3 writes the Rust value, and that allocation
        // may run the collector on this object while its memory is still
        // zeroed: the tensor is read only once the object is registered
        // (`wrap` and `__init__` do that right after writing it).
        if self.registered.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        if self.t.handle_count() != 1 {
            return Ok(());
        }
        let Some(meta) = self.t.try_meta() else {
            return Ok(());
        };
        if let Some((node, _)) = &meta.grad_fn {
            if node.strong_count() == 1 {
                if let Some(f) = node.backward.as_any().downcast_ref::<PyFunctionBackward>() {
                    visit.call(&f.ctx)?;
                    visit.call(&f.backward)?;
                }
                crate::py::checkpoint::traverse(&*node.backward, &visit)?;
                node.try_visit_pre_hooks(|h| match h.as_any().downcast_ref::<PyHook>() {
                    Some(h) => visit.call(&h.0),
                    None => Ok(()),
                })?;
                crate::py::node_hooks::traverse_node_hooks(node, &visit)?;
            }
        }
        for (_, h) in &meta.hooks {
            if let Some(h) = h.as_any().downcast_ref::<PyHook>() {
                visit.call(&h.0)?;
            } else if let Some(h) = h
                .as_any()
                .downcast_ref::<crate::py::node_hooks::PyPostAccumulateHook>()
            {
                visit.call(&h.0)?;
            } else if let Some(h) = h
                .as_any()
                .downcast_ref::<crate::py::node_hooks::PyAccumulatePreHook>()
            {
                visit.call(&(h.0).0)?;
            } else if let Some(h) = h
                .as_any()
                .downcast_ref::<crate::py::node_hooks::PyAccumulatePostHook>()
            {
                visit.call(&(h.0).0)?;
            }
        }
        Ok(())
    }

    /// Breaks a cycle found by the collector: this tensor is unreachable, so
    /// dropping its graph link and hooks changes nothing anyone can observe.
    /// Everything taken is dropped after the locks are released.
    fn __clear__(&self) {
        if let Some(d) = self.attrs.get() {
            Python::attach(|py| d.bind(py).clear());
        }
        if self.registered.load(Ordering::Relaxed) == 0 || self.t.handle_count() != 1 {
            return;
        }
        let (hooks, node_hooks, own_hooks) = match self.t.try_meta() {
            Some(mut m) => {
                let (node_hooks, own_hooks) = match &m.grad_fn {
                    Some((node, _)) if node.strong_count() == 1 => {
                        (node.try_take_pre_hooks(), Some(node.try_take_node_hooks()))
                    }
                    _ => (Vec::new(), None),
                };
                (std::mem::take(&mut m.hooks), node_hooks, own_hooks)
            }
            None => (Vec::new(), Vec::new(), None),
        };
        drop(hooks);
        drop(node_hooks);
        drop(own_hooks);
        self.t.detach_in_place();
    }

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<Reduced> {
        let py = slf.py();
        // A NumPy copy keeps the dtype and exact values; the rebuilt tensor
        // is a leaf with the same requires_grad, as PyTorch's pickles are.
        let f = py.import("ferrograd")?.getattr("_rebuild_tensor")?.unbind();
        let t = &slf.get().t;
        let copy = read(py, "pickle", t.numel(), || Ok(ops::clone_data(t)))?;
        let arr = to_numpy_shared(py, &copy)?;
        // PyTorch pickles (and deep-copies) a tensor's Python attributes too.
        let d = slf.as_any().getattr(pyo3::intern!(py, "__dict__"))?;
        let state = if d.len()? == 0 { py.None() } else { d.unbind() };
        Ok((f, (arr.unbind(), t.requires_grad()), state))
    }
}

/// Whether `t` (of `rank` dimensions, 4 or 5) has channels-last strides: dimension 1 innermost,
/// then the spatial dimensions from the last, then the batch; sizes of 1 may
/// have any stride (PyTorch's rule).
fn channels_last_contiguous(t: &crate::tensor::Tensor, rank: usize) -> bool {
    let v = t.view();
    let nd = v.shape.len();
    if nd != rank {
        return false;
    }
    if v.shape.contains(&0) {
        return true;
    }
    let mut order = vec![1];
    order.extend((2..nd).rev());
    order.push(0);
    let mut expected = 1usize;
    for d in order {
        if v.shape[d] != 1 && v.strides[d] != expected {
            return false;
        }
        expected *= v.shape[d];
    }
    true
}

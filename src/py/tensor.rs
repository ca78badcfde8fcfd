//! The `Tensor` class Python sees. Every operator and method is a direct call
//! into Rust: no Python-level wrapper sits on the per-op path.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyEllipsis, PyFloat, PyList, PySlice, PyTuple};
use pyo3::{ffi, PyTraverseError, PyVisit};

use super::convert::{
    as_scalar, operand, parse_size, seq_of_ints, tensor_from_data, to_numpy_shared, to_tensor_like,
    Operand,
};
use super::dtype::{dtype_object, opt_dtype, parse_dtype, PyDType};
use super::errors::{guard, guard_nogil};
use super::function::PyFunctionBackward;
use super::node::{grad_fn_object, PyHook, RemovableHandle};
use crate::autograd::{self, BackwardRequest};
use crate::ops::{self, Scalar};
use crate::tensor::{DType, Tensor};

/// No `__dict__` on the base class: the collector may traverse an object the
/// moment it is allocated, and a dict allocated before the Rust value is
/// written would let it see an uninitialised tensor. Python subclasses
/// (`nn.Parameter`) get their own `__dict__` as usual.
#[pyclass(name = "Tensor", module = "ferrograd", subclass, weakref, frozen)]
pub struct PyTensor {
    pub t: Tensor,
    /// This object's own address once it is registered as the Python object
    /// of `t` (see "Object identity" below), 0 otherwise. Lets `Drop` tell
    /// whether `t`'s binding slot still names this object.
    registered: AtomicUsize,
}

impl PyTensor {
    pub fn new(t: Tensor) -> PyTensor {
        PyTensor {
            t,
            registered: AtomicUsize::new(0),
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
fn registered_object(py: Python<'_>, t: &Tensor) -> Option<Py<PyAny>> {
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

/// `slf` itself when `t` is its tensor (`x.to(x.dtype) is x`), else `wrap(t)`.
fn wrap_or_self(slf: &Bound<'_, PyTensor>, t: Tensor) -> PyResult<Py<PyAny>> {
    if t.same(&slf.get().t) {
        return Ok(slf.clone().into_any().unbind());
    }
    wrap(slf.py(), t)
}

type TT = fn(&Tensor, &Tensor) -> crate::Result<Tensor>;
type TS = fn(&Tensor, Scalar) -> crate::Result<Tensor>;

fn work2(a: &Tensor, b: &Tensor) -> usize {
    a.numel().max(b.numel())
}

/// `a <op> other` where `other` is a tensor or a Python number.
fn binop(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    tt: TT,
    ts: TS,
) -> PyResult<Py<PyAny>> {
    match operand(other) {
        Some(Operand::Tensor(b)) => wrap(py, guard_nogil(py, work2(a, &b), || tt(a, &b))?),
        Some(Operand::Scalar(s)) => wrap(py, guard_nogil(py, a.numel(), || ts(a, s))?),
        None => Ok(py.NotImplemented()),
    }
}

/// `other <op> a` for a Python number `other`.
fn rbinop(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    tt: TT,
    ts: TS,
) -> PyResult<Py<PyAny>> {
    match operand(other) {
        Some(Operand::Tensor(b)) => wrap(py, guard_nogil(py, work2(a, &b), || tt(&b, a))?),
        Some(Operand::Scalar(s)) => wrap(py, guard_nogil(py, a.numel(), || ts(a, s))?),
        None => Ok(py.NotImplemented()),
    }
}

/// `a <op>= other`: computes out of place, then commits into `a`.
fn ibinop(slf: &Bound<'_, PyTensor>, other: &Bound<'_, PyAny>, tt: TT) -> PyResult<Py<PyAny>> {
    ibinop_with(slf, other, tt, None)
}

/// `ibinop`, trying first the one-pass untracked update for `fast`.
fn ibinop_with(
    slf: &Bound<'_, PyTensor>,
    other: &Bound<'_, PyAny>,
    tt: TT,
    fast: Option<ops::InplaceOp>,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let a = &slf.get().t;
    let b = to_tensor_like(other, Some(a))?;
    guard_nogil(py, work2(a, &b), || {
        ops::check_inplace(a)?;
        if let Some(op) = fast {
            if ops::try_update_in_place(a, &b, op)? {
                return Ok(());
            }
        }
        ops::apply_inplace(a, || tt(a, &b))
    })?;
    Ok(slf.clone().into_any().unbind())
}

fn scalar_from_any(v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    as_scalar(v).ok_or_else(|| PyTypeError::new_err(format!("expected a number, got {v}")))
}

/// Nested Python lists of `vals` (row-major, of shape `shape`).
fn nest<'py, T: Copy>(
    py: Python<'py>,
    shape: &[usize],
    vals: &[T],
    leaf: &dyn Fn(T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if shape.is_empty() {
        return leaf(vals[0]);
    }
    let step: usize = shape[1..].iter().product();
    let mut items = Vec::with_capacity(shape[0]);
    for i in 0..shape[0] {
        items.push(nest(
            py,
            &shape[1..],
            &vals[i * step..(i + 1) * step],
            leaf,
        )?);
    }
    Ok(PyList::new(py, items)?.into_any())
}

/// The tensor's values as (nested lists of) Python `bool`, `int` or
/// `float`, read in the tensor's own dtype so int64 values stay exact
/// (`tolist`, and `item` of a one-element tensor).
pub fn tensor_to_py<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let shape = t.shape();
    match t.dtype() {
        DType::Bool => nest(py, &shape, &t.to_vec::<bool>(), &|v| {
            Ok(PyBool::new(py, v).to_owned().into_any())
        }),
        DType::I64 => nest(py, &shape, &t.to_vec::<i64>(), &|v| {
            Ok(v.into_pyobject(py)?.into_any())
        }),
        DType::F32 | DType::F64 => nest(py, &shape, &t.to_vec::<f64>(), &|v| {
            Ok(PyFloat::new(py, v).into_any())
        }),
    }
}

/// The value of a one-element tensor (of any shape) as a Python number.
fn scalar_to_py<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    Ok(match t.dtype() {
        DType::Bool => PyBool::new(py, t.to_vec::<bool>()[0]).to_owned().into_any(),
        DType::I64 => t.to_vec::<i64>()[0].into_pyobject(py)?.into_any(),
        DType::F32 | DType::F64 => PyFloat::new(py, t.item()?).into_any(),
    })
}

static REPR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static SIZE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn size_object<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let cls = SIZE.get_or_try_init(py, || -> PyResult<_> {
        Ok(py.import("ferrograd._size")?.getattr("Size")?.unbind())
    })?;
    cls.bind(py).call1((PyTuple::new(py, shape)?,))
}

fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match dim {
        None => Ok(None),
        Some(d) if d.is_none() => Ok(None),
        Some(d) => seq_of_ints(d).map(Some),
    }
}

/// Implicit `ones` for scalar outputs, PyTorch's error otherwise.
pub fn default_grad(t: &Tensor) -> PyResult<Tensor> {
    if t.numel() != 1 {
        return Err(PyRuntimeError::new_err(
            "grad can be implicitly created only for scalar outputs",
        ));
    }
    Ok(Tensor::full(t.shape(), 1.0, t.dtype()))
}

#[pymethods]
impl PyTensor {
    // NumPy defers to the tensor's reflected operators (`ndarray * tensor`).
    #[classattr]
    #[allow(non_upper_case_globals)]
    const __array_priority__: f64 = 1000.0;

    /// `Tensor(data)` builds a float32 tensor; `Tensor(other_tensor)` aliases
    /// it (what `nn.Parameter(t)` relies on).
    #[new]
    #[pyo3(signature = (data=None, requires_grad=false))]
    fn py_new(data: Option<&Bound<'_, PyAny>>, requires_grad: bool) -> PyResult<Self> {
        let t = match data {
            None => Tensor::zeros(smallvec::smallvec![0], DType::F32),
            Some(d) => match d.cast::<PyTensor>() {
                Ok(t) => t.get().t.detach(),
                Err(_) => {
                    let t = tensor_from_data(d, None)?;
                    if t.dtype().is_float() {
                        t
                    } else {
                        ops::to_dtype(&t, DType::F32)?
                    }
                }
            },
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

    // ----- metadata ------------------------------------------------------------

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        size_object(py, &self.t.shape())
    }

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

    fn dim(&self) -> usize {
        self.t.ndim()
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.t.ndim()
    }

    fn numel(&self) -> usize {
        self.t.numel()
    }

    fn nelement(&self) -> usize {
        self.t.numel()
    }

    #[getter]
    fn dtype(&self, py: Python<'_>) -> Py<PyDType> {
        dtype_object(py, self.t.dtype())
    }

    #[getter]
    fn device(&self) -> &'static str {
        "cpu"
    }

    #[getter]
    fn is_cuda(&self) -> bool {
        false
    }

    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_float()
    }

    fn is_contiguous(&self) -> bool {
        self.t.is_contiguous()
    }

    fn stride<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let v = self.t.view();
        PyTuple::new(py, v.strides.iter().zip(&v.shape).map(|(&s, _)| s))
    }

    fn storage_offset(&self) -> usize {
        self.t.view().offset
    }

    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }

    fn data_ptr(&self) -> usize {
        let v = self.t.view();
        v.storage.as_ptr() as usize + v.offset * v.dtype().size()
    }

    // ----- autograd attributes -------------------------------------------------

    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.t.requires_grad()
    }

    /// The setter refuses any value on a non-leaf (PyTorch's
    /// `THPVariable_set_requires_grad`); `requires_grad_(True)` on a
    /// non-leaf is allowed.
    #[setter]
    fn set_requires_grad(&self, on: bool) -> PyResult<()> {
        if !self.t.is_leaf() {
            let mut msg =
                String::from("you can only change requires_grad flags of leaf variables.");
            if !on {
                msg.push_str(" If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
            }
            return Err(PyRuntimeError::new_err(msg));
        }
        Ok(self.t.set_requires_grad(on)?)
    }

    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_<'py>(
        slf: &Bound<'py, Self>,
        requires_grad: bool,
    ) -> PyResult<Bound<'py, Self>> {
        slf.get().t.set_requires_grad(requires_grad)?;
        Ok(slf.clone())
    }

    #[getter]
    fn get_grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.t.grad().map(|g| wrap(py, g)).transpose()
    }

    #[setter]
    fn set_grad(&self, g: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let g = match g {
            None => None,
            Some(o) if o.is_none() => None,
            Some(o) => {
                let g = o
                    .cast::<PyTensor>()
                    .map_err(|_| {
                        PyTypeError::new_err("assigned grad expected to be a Tensor or None")
                    })?
                    .get()
                    .t
                    .clone();
                if g.shape() != self.t.shape() {
                    return Err(PyRuntimeError::new_err(
                        "assigned grad has data of a different size",
                    ));
                }
                if g.dtype() != self.t.dtype() {
                    return Err(PyRuntimeError::new_err(
                        "assigned grad has data of a different type",
                    ));
                }
                Some(g)
            }
        };
        self.t.set_grad(g);
        Ok(())
    }

    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        grad_fn_object(py, &self.t)
    }

    /// The tensor whose memory this view shares (the root, never a view), or None.
    #[getter]
    fn _base(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.t.base().map(|b| wrap(py, b.clone())).transpose()
    }

    fn _is_view(&self) -> bool {
        self.t.is_view()
    }

    #[getter]
    fn is_leaf(&self) -> PyResult<bool> {
        Ok(self.t.try_is_leaf()?)
    }

    #[getter]
    fn retains_grad(&self) -> bool {
        !self.t.is_leaf() && self.t.meta().retains_grad
    }

    fn retain_grad(&self) -> PyResult<()> {
        if !self.t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "can't retain_grad on Tensor that has requires_grad=False",
            ));
        }
        if let Some((node, nr)) = self.t.grad_fn() {
            let mut m = self.t.meta();
            if !m.retains_grad {
                m.retains_grad = true;
                drop(m);
                node.add_retain(nr, self.t.downgrade());
            }
        }
        Ok(())
    }

    #[getter]
    fn get_data(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, self.t.data_alias())
    }

    #[setter]
    fn set_data(&self, other: &Bound<'_, PyTensor>) {
        self.t.set_view(other.get().t.view().clone());
    }

    fn detach(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, self.t.detach())
    }

    fn detach_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        if slf.get().t.is_view() && slf.get().t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "Can't detach views in-place. Use detach() instead.",
            ));
        }
        slf.get().t.detach_in_place();
        Ok(slf.clone())
    }

    fn register_hook(slf: &Bound<'_, Self>, hook: Py<PyAny>) -> PyResult<RemovableHandle> {
        let t = &slf.get().t;
        if !t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let id = super::node::next_hook_id();
        let h: Arc<dyn autograd::GradHook> = Arc::new(PyHook(hook));
        match t.grad_fn() {
            Some((node, nr)) => {
                node.add_pre_hook(id, nr, h);
                Ok(RemovableHandle::on_node(id, t.downgrade()))
            }
            None => {
                t.meta().hooks.push((id, h));
                Ok(RemovableHandle::on_leaf(id, t.downgrade()))
            }
        }
    }

    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let grad = match gradient {
            Some(g) if !g.is_none() => to_tensor_like(g, Some(&self.t))?,
            _ => default_grad(&self.t)?,
        };
        let inputs = match inputs {
            None => None,
            Some(i) if i.is_none() => None,
            Some(i) => Some(super::functions::tensor_list(i)?),
        };
        if let Some(i) = &inputs {
            if i.is_empty() {
                return Err(PyRuntimeError::new_err(
                    "`inputs` argument to `backward()` cannot be empty.",
                ));
            }
        }
        let req = BackwardRequest {
            roots: vec![self.t.clone()],
            grads: vec![grad],
            inputs,
            retain_graph: retain_graph.unwrap_or(create_graph),
            create_graph,
            accumulate: true,
        };
        py.detach(|| guard(|| autograd::run_backward(req)))?;
        Ok(())
    }

    // ----- conversion ------------------------------------------------------------

    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.t.numel()
            )));
        }
        Ok(scalar_to_py(py, &self.t)?.unbind())
    }

    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(tensor_to_py(py, &self.t)?.unbind())
    }

    #[pyo3(signature = (force=false))]
    fn numpy<'py>(&self, py: Python<'py>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        // As PyTorch's: under `no_grad()` a tensor that requires grad converts.
        if self.t.requires_grad() && autograd::is_grad_enabled() && !force {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        if force {
            return to_numpy_shared(py, &ops::clone_data(&self.t));
        }
        to_numpy_shared(py, &self.t)
    }

    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        // PyTorch's `__array__` is `self.numpy()`, with its refusal.
        if self.t.requires_grad() && autograd::is_grad_enabled() {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        let t = if copy == Some(true) {
            ops::clone_data(&self.t)
        } else {
            self.t.clone()
        };
        let arr = to_numpy_shared(py, &t)?;
        match dtype {
            Some(d) if !d.is_none() => arr.call_method1("astype", (d,)),
            _ => Ok(arr),
        }
    }

    fn __float__(&self) -> PyResult<f64> {
        self.one_value()
    }

    /// Exact for int64 and bool; a float is truncated the way `int(float)`
    /// does (so NaN and infinities raise as they do there).
    fn __int__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.t.dtype().is_float() {
            return self.one_value_py(py)?.call_method0("__int__");
        }
        self.check_one_element()?;
        Ok(self.t.to_vec::<i64>()[0].into_pyobject(py)?.into_any())
    }

    fn __index__(&self) -> PyResult<i64> {
        if self.t.dtype().is_float() || self.t.numel() != 1 {
            return Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        Ok(self.t.to_vec::<i64>()[0])
    }

    fn __bool__(&self) -> PyResult<bool> {
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} is ambiguous",
                if self.t.numel() == 0 {
                    "no values"
                } else {
                    "more than one value"
                }
            )));
        }
        Ok(self.t.item()? != 0.0)
    }

    fn __len__(&self) -> PyResult<usize> {
        let s = self.t.shape();
        s.first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }

    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let t = &slf.get().t;
        if t.ndim() == 0 {
            return Err(PyTypeError::new_err("iteration over a 0-d tensor"));
        }
        let py = slf.py();
        // As PyTorch's `iter(t.unbind(0))`: the rows are the outputs of one
        // `UnbindBackward0` node.
        let rows = guard(|| ops::unbind(t, 0))?;
        let items = rows
            .into_iter()
            .map(|r| wrap(py, r))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.try_iter()?.into_any().unbind())
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
                node.try_visit_pre_hooks(|h| match h.as_any().downcast_ref::<PyHook>() {
                    Some(h) => visit.call(&h.0),
                    None => Ok(()),
                })?;
            }
        }
        for (_, h) in &meta.hooks {
            if let Some(h) = h.as_any().downcast_ref::<PyHook>() {
                visit.call(&h.0)?;
            }
        }
        Ok(())
    }

    /// Breaks a cycle found by the collector: this tensor is unreachable, so
    /// dropping its graph link and hooks changes nothing anyone can observe.
    /// Everything taken is dropped after the locks are released.
    fn __clear__(&self) {
        if self.t.handle_count() != 1 {
            return;
        }
        let (hooks, node_hooks) = match self.t.try_meta() {
            Some(mut m) => {
                let node_hooks = match &m.grad_fn {
                    Some((node, _)) if node.strong_count() == 1 => node.try_take_pre_hooks(),
                    _ => Vec::new(),
                };
                (std::mem::take(&mut m.hooks), node_hooks)
            }
            None => (Vec::new(), Vec::new()),
        };
        drop(hooks);
        drop(node_hooks);
        self.t.detach_in_place();
    }

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let items = index_items(key)?;
        wrap(py, guard(|| ops::index(&self.t, &items))?)
    }

    // ----- dtype conversion -------------------------------------------------------

    #[pyo3(signature = (*args, **kwargs))]
    fn to(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let this = &slf.get().t;
        // Accepts `to(dtype)`, `to("cpu")`, `to(other_tensor)` and `dtype=`.
        let mut target: Option<DType> = None;
        for a in args.iter() {
            if let Ok(t) = a.cast::<PyTensor>() {
                target = Some(t.get().t.dtype());
            } else if let Ok(s) = a.extract::<String>() {
                if s != "cpu" {
                    target = Some(parse_dtype(&a).map_err(|_| {
                        PyRuntimeError::new_err(format!(
                            "ferrograd runs on the CPU only; got device {s}"
                        ))
                    })?);
                }
            } else {
                target = Some(parse_dtype(&a)?);
            }
        }
        if let Some(kw) = kwargs {
            if let Some(d) = kw.get_item("dtype")? {
                target = opt_dtype(Some(&d))?;
            }
        }
        match target {
            None => Ok(slf.clone().into_any().unbind()),
            Some(dt) => wrap_or_self(slf, guard(|| ops::to_dtype(this, dt))?),
        }
    }

    fn float(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        wrap_or_self(slf, guard(|| ops::to_dtype(&slf.get().t, DType::F32))?)
    }

    fn double(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        wrap_or_self(slf, guard(|| ops::to_dtype(&slf.get().t, DType::F64))?)
    }

    fn long(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        wrap_or_self(slf, guard(|| ops::to_dtype(&slf.get().t, DType::I64))?)
    }

    fn bool(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        wrap_or_self(slf, guard(|| ops::to_dtype(&slf.get().t, DType::Bool))?)
    }

    fn type_as(slf: &Bound<'_, Self>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let dt = other.get().t.dtype();
        wrap_or_self(slf, guard(|| ops::to_dtype(&slf.get().t, dt))?)
    }

    fn cpu<'py>(slf: &Bound<'py, Self>) -> Bound<'py, Self> {
        slf.clone()
    }

    fn clone(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::clone(&self.t))?)
    }

    fn contiguous(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let (py, t) = (slf.py(), &slf.get().t);
        wrap_or_self(slf, guard_nogil(py, t.numel(), || ops::contiguous(t))?)
    }

    // ----- operators -----------------------------------------------------------------

    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::add, ops::add_scalar)
    }
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::add, ops::add_scalar)
    }
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::sub, ops::sub_scalar)
    }
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::sub, ops::rsub_scalar)
    }
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::mul, ops::mul_scalar)
    }
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::mul, ops::mul_scalar)
    }
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::div, ops::div_scalar)
    }
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::div, ops::rdiv_scalar)
    }
    fn __pow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _m: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::pow, ops::pow_scalar)
    }
    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _m: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::pow, ops::rpow_scalar)
    }
    fn __matmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match operand(o) {
            Some(Operand::Tensor(b)) => {
                let work = self
                    .t
                    .numel()
                    .saturating_mul(b.shape().last().copied().unwrap_or(1));
                wrap(py, guard_nogil(py, work, || ops::matmul(&self.t, &b))?)
            }
            _ => Ok(py.NotImplemented()),
        }
    }
    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match operand(o) {
            Some(Operand::Tensor(b)) => wrap(py, guard(|| ops::matmul(&b, &self.t))?),
            _ => Ok(py.NotImplemented()),
        }
    }
    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::neg(&self.t))?)
    }
    fn __pos__<'py>(slf: &Bound<'py, Self>) -> Bound<'py, Self> {
        slf.clone()
    }
    fn __abs__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::abs(&self.t))?)
    }
    fn __invert__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.t.dtype() != DType::Bool {
            return Err(PyTypeError::new_err(
                "~ (bitwise_not) is only supported for bool tensors in ferrograd",
            ));
        }
        wrap(py, guard(|| ops::logical_not(&self.t))?)
    }
    fn __and__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(o, Some(&self.t))?;
        wrap(py, guard(|| ops::logical_and(&self.t, &b))?)
    }
    fn __or__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(o, Some(&self.t))?;
        wrap(py, guard(|| ops::logical_or(&self.t, &b))?)
    }

    fn __iadd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        ibinop_with(slf, o, ops::add, Some(ops::InplaceOp::Add)).map(drop)
    }
    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        ibinop_with(slf, o, ops::sub, Some(ops::InplaceOp::Sub)).map(drop)
    }
    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        ibinop_with(slf, o, ops::mul, Some(ops::InplaceOp::Mul)).map(drop)
    }
    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        ibinop_with(slf, o, ops::div, Some(ops::InplaceOp::Div)).map(drop)
    }

    fn __richcmp__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let Some(other) = operand(o) else {
            return Ok(py.NotImplemented());
        };
        let b = match other {
            Operand::Tensor(b) => b,
            Operand::Scalar(s) => s.wrap(&self.t),
        };
        let f: TT = match op {
            CompareOp::Eq => ops::eq,
            CompareOp::Ne => ops::ne,
            CompareOp::Lt => ops::lt,
            CompareOp::Le => ops::le,
            CompareOp::Gt => ops::gt,
            CompareOp::Ge => ops::ge,
        };
        wrap(py, guard_nogil(py, work2(&self.t, &b), || f(&self.t, &b))?)
    }

    // ----- in-place ----------------------------------------------------------------------

    #[pyo3(signature = (other, *, alpha=None))]
    fn add_<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        match alpha {
            None => ibinop_with(slf, other, ops::add, Some(ops::InplaceOp::Add)),
            Some(al) => {
                let a = &slf.get().t;
                let s = scalar_from_any(al)?;
                let b = to_tensor_like(other, Some(a))?;
                guard(|| ops::apply_inplace(a, || ops::add_alpha(a, &b, s)))?;
                Ok(slf.clone().into_any().unbind())
            }
        }
    }
    fn sub_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        ibinop_with(slf, other, ops::sub, Some(ops::InplaceOp::Sub))
    }
    fn mul_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        ibinop_with(slf, other, ops::mul, Some(ops::InplaceOp::Mul))
    }
    fn div_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        ibinop_with(slf, other, ops::div, Some(ops::InplaceOp::Div))
    }
    fn pow_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Some(Operand::Scalar(e)) = operand(other) {
            // A number exponent is PyTorch's `pow_.Scalar` (`PowBackward0`).
            let a = &slf.get().t;
            guard(|| ops::apply_inplace(a, || ops::pow_scalar(a, e)))?;
            return Ok(slf.clone().into_any().unbind());
        }
        ibinop(slf, other, ops::pow)
    }
    fn copy_(slf: &Bound<'_, Self>, src: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        ibinop(slf, src, ops::copy_value)
    }
    fn exp_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        guard(|| ops::apply_inplace(a, || ops::exp(a)))?;
        Ok(slf.clone().into_any().unbind())
    }
    fn neg_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        guard(|| ops::apply_inplace(a, || ops::neg(a)))?;
        Ok(slf.clone().into_any().unbind())
    }
    fn sigmoid_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        guard(|| ops::apply_inplace(a, || ops::sigmoid(a)))?;
        Ok(slf.clone().into_any().unbind())
    }
    fn tanh_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        guard(|| ops::apply_inplace(a, || ops::tanh(a)))?;
        Ok(slf.clone().into_any().unbind())
    }
    fn relu_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        guard(|| ops::apply_inplace(a, || ops::relu(a)))?;
        Ok(slf.clone().into_any().unbind())
    }
    fn zero_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        guard(|| ops::zero_(&slf.get().t))?;
        Ok(slf.clone().into_any().unbind())
    }
    /// OneFlow's spelling of `zero_`, used by its tutorials.
    fn zeros_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Self::zero_(slf)
    }
    fn fill_(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let v = scalar_from_any(value)?.to_f64();
        guard(|| ops::fill_(&slf.get().t, v))?;
        Ok(slf.clone().into_any().unbind())
    }
    #[pyo3(signature = (mean=0.0, std=1.0, *, generator=None))]
    fn normal_(
        slf: &Bound<'_, Self>,
        mean: f64,
        std: f64,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = generator;
        guard(|| ops::normal_(&slf.get().t, mean, std))?;
        Ok(slf.clone().into_any().unbind())
    }
    #[pyo3(signature = (a=0.0, b=1.0, *, generator=None))]
    fn uniform_(
        slf: &Bound<'_, Self>,
        a: f64,
        b: f64,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = generator;
        guard(|| ops::uniform_(&slf.get().t, a, b))?;
        Ok(slf.clone().into_any().unbind())
    }

    // ----- methods mirroring functions -----------------------------------------------------

    #[pyo3(signature = (other, *, alpha=None))]
    fn add(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        super::functions::add_impl(py, &self.t, other, alpha)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        super::functions::sub_impl(py, &self.t, other, alpha)
    }
    fn mul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, other, ops::mul, ops::mul_scalar)
    }
    fn div(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, other, ops::div, ops::div_scalar)
    }
    fn pow(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, exponent, ops::pow, ops::pow_scalar)
    }
    fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let b = &other.get().t;
        wrap(
            py,
            guard_nogil(py, work2(&self.t, b), || ops::matmul(&self.t, b))?,
        )
    }
    fn mm(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let b = &other.get().t;
        wrap(
            py,
            guard_nogil(py, work2(&self.t, b), || ops::mm(&self.t, b))?,
        )
    }
    fn mv(&self, py: Python<'_>, vec: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let v = &vec.get().t;
        wrap(
            py,
            guard_nogil(py, work2(&self.t, v), || ops::mv(&self.t, v))?,
        )
    }
    fn dot(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::dot(&self.t, &other.get().t))?)
    }

    fn neg(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.__neg__(py)
    }
    fn exp(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::exp(&self.t))?)
    }
    fn log(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::log(&self.t))?)
    }
    fn sin(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::sin(&self.t))?)
    }
    fn cos(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::cos(&self.t))?)
    }
    fn tanh(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::tanh(&self.t))?)
    }
    fn sigmoid(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || ops::sigmoid(&self.t))?,
        )
    }
    fn relu(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::relu(&self.t))?)
    }
    fn sqrt(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::sqrt(&self.t))?)
    }
    fn abs(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.__abs__(py)
    }
    fn sign(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::sign(&self.t))?)
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        let dt = opt_dtype(dtype)?;
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || {
                let x = match dt {
                    Some(d) => ops::to_dtype(&self.t, d)?,
                    None => self.t.clone(),
                };
                ops::sum(&x, dims.as_deref(), keepdim)
            })?,
        )
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        let dt = opt_dtype(dtype)?;
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || {
                let x = match dt {
                    Some(d) => ops::to_dtype(&self.t, d)?,
                    None => self.t.clone(),
                };
                ops::mean(&x, dims.as_deref(), keepdim)
            })?,
        )
    }

    fn eq(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Eq)
    }
    fn ne(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Ne)
    }
    fn lt(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Lt)
    }
    fn le(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Le)
    }
    fn gt(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Gt)
    }
    fn ge(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Ge)
    }
    fn equal(&self, other: &Bound<'_, PyTensor>) -> PyResult<bool> {
        let b = &other.get().t;
        if self.t.shape() != b.shape() {
            return Ok(false);
        }
        Ok(guard(|| ops::eq(&self.t, b).and_then(|e| ops::all(&e)))?.item()? != 0.0)
    }

    // ----- shape ---------------------------------------------------------------------------

    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        // `view(dtype)`: only the same dtype is supported (a no-op view).
        if shape.len() == 1 {
            let arg = shape.get_item(0)?;
            if !arg.is_instance_of::<pyo3::types::PyInt>()
                && !arg.is_instance_of::<PyTuple>()
                && !arg.is_instance_of::<PyList>()
            {
                if let Ok(Some(d)) = opt_dtype(Some(&arg)) {
                    if d != self.t.dtype() {
                        return Err(PyRuntimeError::new_err(
                            "view(dtype) with a different element size is not supported",
                        ));
                    }
                    return wrap(py, self.t.clone());
                }
            }
        }
        let dims = parse_size(shape, None)?;
        wrap(py, guard(|| ops::view(&self.t, &dims))?)
    }
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let dims = parse_size(shape, None)?;
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || ops::reshape_i(&self.t, &dims))?,
        )
    }
    fn view_as(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let dims: Vec<i64> = other.get().t.shape().iter().map(|&d| d as i64).collect();
        wrap(py, guard(|| ops::view(&self.t, &dims))?)
    }
    fn reshape_as(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let s: Vec<i64> = other.get().t.shape().iter().map(|&d| d as i64).collect();
        wrap(py, guard(|| ops::reshape_i(&self.t, &s))?)
    }
    #[pyo3(signature = (*sizes))]
    fn expand(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let dims = parse_size(sizes, None)?;
        wrap(py, guard(|| ops::broadcast_to(&self.t, &dims))?)
    }
    fn expand_as(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let s = other.get().t.shape();
        wrap(py, guard(|| ops::expand_view(&self.t, &s))?)
    }
    #[pyo3(signature = (dim0, dim1))]
    fn transpose(&self, py: Python<'_>, dim0: i64, dim1: i64) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::transpose(&self.t, dim0, dim1))?)
    }
    fn t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::t(&self.t))?)
    }
    #[getter(T)]
    fn big_t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let n = self.t.ndim() as i64;
        let dims: Vec<i64> = (0..n).rev().collect();
        wrap(py, guard(|| ops::permute(&self.t, &dims))?)
    }
    #[getter(mT)]
    fn m_t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.t.ndim() < 2 {
            return Err(PyRuntimeError::new_err(
                "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.",
            ));
        }
        wrap(py, guard(|| ops::transpose(&self.t, -2, -1))?)
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let d = parse_size(dims, None)?;
        wrap(py, guard(|| ops::permute(&self.t, &d))?)
    }
    fn unsqueeze(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::unsqueeze(&self.t, dim))?)
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, py: Python<'_>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::squeeze(&self.t, dim))?)
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: i64, end_dim: i64) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| flatten(&self.t, start_dim, end_dim))?)
    }
    fn select(&self, py: Python<'_>, dim: i64, index: i64) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::select(&self.t, dim, index))?)
    }

    // ----- elementwise (more) --------------------------------------------------------------

    fn expm1(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::expm1)
    }
    fn log1p(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::log1p)
    }
    fn log2(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::log2)
    }
    fn rsqrt(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::rsqrt)
    }
    fn tan(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::tan)
    }
    fn reciprocal(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::reciprocal)
    }
    fn square(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::square)
    }
    fn erf(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::erf)
    }
    fn floor(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::floor)
    }
    fn ceil(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::ceil)
    }
    fn trunc(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::trunc)
    }
    #[pyo3(signature = (decimals=0))]
    fn round(&self, py: Python<'_>, decimals: i64) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::round(&self.t, decimals))?)
    }
    fn isnan(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::isnan)
    }
    fn isinf(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::isinf)
    }
    fn isfinite(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::isfinite)
    }
    fn logical_not(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unary(py, &self.t, ops::logical_not)
    }
    fn logical_and(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(other, Some(&self.t))?;
        wrap(py, guard(|| ops::logical_and(&self.t, &b))?)
    }
    fn logical_or(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(other, Some(&self.t))?;
        wrap(py, guard(|| ops::logical_or(&self.t, &b))?)
    }
    fn logical_xor(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(other, Some(&self.t))?;
        wrap(py, guard(|| ops::logical_xor(&self.t, &b))?)
    }
    fn __xor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if self.t.dtype() != DType::Bool {
            return Err(PyTypeError::new_err(
                "^ (bitwise_xor) is only supported for bool tensors in ferrograd",
            ));
        }
        self.logical_xor(py, o)
    }
    fn maximum(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let b = &other.get().t;
        wrap(
            py,
            guard_nogil(py, work2(&self.t, b), || ops::maximum(&self.t, b))?,
        )
    }
    fn minimum(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let b = &other.get().t;
        wrap(
            py,
            guard_nogil(py, work2(&self.t, b), || ops::minimum(&self.t, b))?,
        )
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (lo, hi) = (bound_arg(min, &self.t)?, bound_arg(max, &self.t)?);
        let tb = tensor_bounds(min, max);
        wrap(
            py,
            guard(|| ops::clamp(&self.t, lo.as_ref(), hi.as_ref(), tb))?,
        )
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.clamp(py, min, max)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: &Bound<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        let (lo, hi) = (bound_arg(min, a)?, bound_arg(max, a)?);
        let tb = tensor_bounds(min, max);
        guard(|| ops::apply_inplace(a, || ops::clamp(a, lo.as_ref(), hi.as_ref(), tb)))?;
        Ok(slf.clone().into_any().unbind())
    }
    #[pyo3(signature = (other, rtol=1e-5, atol=1e-8, equal_nan=false))]
    fn isclose(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(other, Some(&self.t))?;
        wrap(
            py,
            guard(|| ops::isclose(&self.t, &b, rtol, atol, equal_nan))?,
        )
    }
    #[pyo3(signature = (other, rtol=1e-5, atol=1e-8, equal_nan=false))]
    fn allclose(
        &self,
        other: &Bound<'_, PyAny>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<bool> {
        let b = to_tensor_like(other, Some(&self.t))?;
        guard(|| ops::allclose(&self.t, &b, rtol, atol, equal_nan))
    }
    #[pyo3(name = "where")]
    fn where_method(
        &self,
        py: Python<'_>,
        condition: &Bound<'_, PyTensor>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let y = to_tensor_like(other, Some(&self.t))?;
        wrap(py, guard(|| ops::where_(&condition.get().t, &self.t, &y))?)
    }

    // ----- reductions (more) -----------------------------------------------------------------

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn prod(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        let dt = opt_dtype(dtype)?;
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || {
                let x = match dt {
                    Some(d) => ops::to_dtype(&self.t, d)?,
                    None => self.t.clone(),
                };
                ops::prod(&x, dims.as_deref(), keepdim)
            })?,
        )
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn var(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let (dims, corr) = var_args(dim, unbiased, correction)?;
        wrap(
            py,
            guard(|| ops::var(&self.t, dims.as_deref(), corr, keepdim))?,
        )
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn std(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let (dims, corr) = var_args(dim, unbiased, correction)?;
        wrap(
            py,
            guard(|| ops::std(&self.t, dims.as_deref(), corr, keepdim))?,
        )
    }
    /// `max()`, `max(dim, keepdim)` -> (values, indices), or `max(other)`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn max(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        extreme(py, &self.t, dim, keepdim, true)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn min(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        extreme(py, &self.t, dim, keepdim, false)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?.unwrap_or_default();
        wrap(py, guard(|| ops::amax(&self.t, &dims, keepdim))?)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?.unwrap_or_default();
        wrap(py, guard(|| ops::amin(&self.t, &dims, keepdim))?)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::argmax(&self.t, dim, keepdim))?)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::argmin(&self.t, dim, keepdim))?)
    }
    #[pyo3(signature = (p=None, dim=None, keepdim=false, dtype=None))]
    fn norm(
        &self,
        py: Python<'_>,
        p: Option<&Bound<'_, PyAny>>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let ord = norm_ord(p)?;
        let dims = dims_arg(dim)?;
        let dt = opt_dtype(dtype)?;
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || {
                let x = match dt {
                    Some(d) => ops::to_dtype(&self.t, d)?,
                    None => self.t.clone(),
                };
                ops::vector_norm(&x, ord, dims.as_deref(), keepdim)
            })?,
        )
    }
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let dims = seq_of_ints(dim)?;
        wrap(py, guard(|| ops::logsumexp(&self.t, &dims, keepdim))?)
    }
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dt = opt_dtype(dtype)?;
        wrap(
            py,
            guard(|| {
                let x = match dt {
                    Some(d) => ops::to_dtype(&self.t, d)?,
                    None => self.t.clone(),
                };
                ops::cumsum(&x, dim)
            })?,
        )
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        match dims_arg(dim)? {
            None => wrap(py, guard(|| ops::all(&self.t))?),
            Some(d) => wrap(py, guard(|| ops::all_dims(&self.t, Some(&d), keepdim))?),
        }
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        match dims_arg(dim)? {
            None => wrap(py, guard(|| ops::any(&self.t))?),
            Some(d) => wrap(py, guard(|| ops::any_dims(&self.t, Some(&d), keepdim))?),
        }
    }
    #[pyo3(signature = (dim, *, dtype=None))]
    fn softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dt = opt_dtype(dtype)?;
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || ops::softmax(&self.t, dim, dt))?,
        )
    }
    #[pyo3(signature = (dim, *, dtype=None))]
    fn log_softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dt = opt_dtype(dtype)?;
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || ops::log_softmax(&self.t, dim, dt))?,
        )
    }

    // ----- joining, splitting, rearranging ----------------------------------------------------

    fn unflatten(&self, py: Python<'_>, dim: i64, sizes: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let s = seq_of_ints(sizes)?;
        wrap(py, guard(|| ops::unflatten(&self.t, dim, &s))?)
    }
    fn broadcast_to(&self, py: Python<'_>, size: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let s = seq_of_ints(size)?;
        wrap(py, guard(|| ops::broadcast_to(&self.t, &s))?)
    }
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let s = parse_size(sizes, None)?;
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || ops::repeat(&self.t, &s))?,
        )
    }
    #[pyo3(signature = (split_size_or_sections, dim=0))]
    fn split(
        &self,
        py: Python<'_>,
        split_size_or_sections: &Bound<'_, PyAny>,
        dim: i64,
    ) -> PyResult<Py<PyAny>> {
        let parts = if split_size_or_sections.is_instance_of::<pyo3::types::PyInt>() {
            let n = super::convert::int_arg(split_size_or_sections)?;
            guard(|| ops::split(&self.t, n, dim))?
        } else {
            let s = seq_of_ints(split_size_or_sections)?;
            guard(|| ops::split_with_sizes(&self.t, &s, dim))?
        };
        tensor_tuple(py, parts)
    }
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk(&self, py: Python<'_>, chunks: i64, dim: i64) -> PyResult<Py<PyAny>> {
        tensor_tuple(py, guard(|| ops::chunk(&self.t, chunks, dim))?)
    }
    #[pyo3(signature = (dim=0))]
    fn unbind(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyAny>> {
        tensor_tuple(py, guard(|| ops::unbind(&self.t, dim))?)
    }
    #[pyo3(signature = (*dims))]
    fn flip(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let d = parse_size(dims, None)?;
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || ops::flip(&self.t, &d))?,
        )
    }
    fn narrow(&self, py: Python<'_>, dim: i64, start: i64, length: i64) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::narrow(&self.t, dim, start, length))?)
    }
    fn movedim(&self, py: Python<'_>, source: i64, destination: i64) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::movedim(&self.t, source, destination))?)
    }
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(&self, py: Python<'_>, offset: i64, dim1: i64, dim2: i64) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::diagonal(&self.t, offset, dim1, dim2))?)
    }
    fn trace(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::trace(&self.t))?)
    }
    fn swapaxes(&self, py: Python<'_>, axis0: i64, axis1: i64) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::transpose(&self.t, axis0, axis1))?)
    }

    // ----- indexing ops -----------------------------------------------------------------------

    fn gather(&self, py: Python<'_>, dim: i64, index: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::gather(&self.t, dim, &index.get().t))?)
    }
    fn scatter_add(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyTensor>,
        src: &Bound<'_, PyTensor>,
    ) -> PyResult<Py<PyAny>> {
        wrap(
            py,
            guard(|| ops::scatter_add(&self.t, dim, &index.get().t, &src.get().t))?,
        )
    }
    #[pyo3(signature = (dim, index, src=None, *, value=None))]
    fn scatter(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyTensor>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let idx = &index.get().t;
        let given = src.or(value).ok_or_else(|| {
            PyTypeError::new_err("scatter() missing required argument 'src' or 'value'")
        })?;
        match operand(given) {
            Some(Operand::Tensor(s)) => wrap(py, guard(|| ops::scatter(&self.t, dim, idx, &s))?),
            Some(Operand::Scalar(v)) => {
                wrap(py, guard(|| ops::scatter_value(&self.t, dim, idx, v))?)
            }
            None => Err(PyTypeError::new_err(
                "scatter(): src must be a Tensor or a number",
            )),
        }
    }
    fn index_select(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyTensor>,
    ) -> PyResult<Py<PyAny>> {
        wrap(
            py,
            guard(|| ops::index_select(&self.t, dim, &index.get().t))?,
        )
    }
    fn masked_fill(
        &self,
        py: Python<'_>,
        mask: &Bound<'_, PyTensor>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let m = &mask.get().t;
        match operand(value) {
            Some(Operand::Tensor(v)) => wrap(py, guard(|| ops::masked_fill(&self.t, m, &v))?),
            Some(Operand::Scalar(s)) => wrap(py, guard(|| ops::masked_fill_scalar(&self.t, m, s))?),
            None => Err(PyTypeError::new_err(
                "masked_fill(): value must be a number or a 0-d Tensor",
            )),
        }
    }
    fn masked_fill_<'py>(
        slf: &Bound<'py, Self>,
        mask: &Bound<'py, PyTensor>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        let m = &mask.get().t;
        let v = match operand(value) {
            Some(Operand::Tensor(v)) => v,
            Some(Operand::Scalar(s)) => Tensor::scalar_of(s.to_f64(), a.dtype()),
            None => {
                return Err(PyTypeError::new_err(
                    "masked_fill_(): value must be a number or a 0-d Tensor",
                ))
            }
        };
        guard(|| ops::apply_inplace(a, || ops::masked_fill(a, m, &v)))?;
        Ok(slf.clone().into_any().unbind())
    }
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        let nz = ops::nonzero(&self.t);
        if !as_tuple {
            return wrap(py, nz);
        }
        let cols = guard(|| ops::unbind(&nz, 1))?;
        let cols: Vec<Tensor> = cols.iter().map(ops::clone_data).collect();
        tensor_tuple(py, cols)
    }
    fn masked_select(&self, py: Python<'_>, mask: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let m = &mask.get().t;
        wrap(py, guard(|| ops::masked_select(&self.t, m))?)
    }
    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let items = index_items(key)?;
        let t = &self.t;
        let v = match operand(value) {
            Some(Operand::Tensor(v)) => v,
            Some(Operand::Scalar(s)) => Tensor::scalar_of(s.to_f64(), t.dtype()),
            None => to_tensor_like(value, Some(t))?,
        };
        guard(|| {
            let basic = items
                .iter()
                .all(|i| !matches!(i, ops::IndexItem::Tensor(_)));
            if basic {
                // As in PyTorch, the write goes into a view (so the refusals
                // are those for views: "a view of a leaf Variable ...").
                let target = ops::index(t, &items)?;
                ops::check_inplace(&target)?;
                if !autograd::needs_record(&[t, &v]) {
                    // Nothing to record: write straight through the view.
                    return ops::assign(&target, &v);
                }
                if t.dtype().is_float() {
                    // Recorded as `CopySlices` on the base.
                    return ops::assign_tracked(t, &target, &v);
                }
            }
            ops::apply_inplace(t, || ops::index_put(t, &items, &v))
        })
    }

    // ----- linear algebra (more) -------------------------------------------------------------

    fn bmm(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let b = &other.get().t;
        wrap(
            py,
            guard_nogil(py, work2(&self.t, b), || ops::bmm(&self.t, b))?,
        )
    }
    fn outer(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::outer(&self.t, &other.get().t))?)
    }

    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<Reduced> {
        let py = slf.py();
        // A NumPy copy keeps the dtype and exact values; the rebuilt tensor
        // is a leaf with the same requires_grad, as PyTorch's pickles are.
        let f = py.import("ferrograd")?.getattr("_rebuild_tensor")?.unbind();
        let t = &slf.get().t;
        let arr = to_numpy_shared(py, &ops::clone_data(t))?;
        Ok((f, (arr.unbind(), t.requires_grad())))
    }
}

/// What `__reduce__` returns: `ferrograd._rebuild_tensor` and its arguments.
type Reduced = (Py<PyAny>, (Py<PyAny>, bool));

impl PyTensor {
    /// PyTorch's `dispatch_to<T>` check for `float()` / `int()`.
    fn check_one_element(&self) -> PyResult<()> {
        if self.t.numel() != 1 {
            return Err(PyValueError::new_err(
                "only one element tensors can be converted to Python scalars",
            ));
        }
        Ok(())
    }

    fn one_value(&self) -> PyResult<f64> {
        self.check_one_element()?;
        Ok(self.t.item()?)
    }

    fn one_value_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.check_one_element()?;
        scalar_to_py(py, &self.t)
    }
}

pub fn flatten(t: &Tensor, start: i64, end: i64) -> crate::Result<Tensor> {
    let shape = t.shape();
    if shape.is_empty() {
        return ops::reshape(t, &[1]);
    }
    let (s, e) = (
        crate::tensor::wrap_dim(start, shape.len())?,
        crate::tensor::wrap_dim(end, shape.len())?,
    );
    if s > e {
        return Err(crate::Error::runtime(
            "flatten() has invalid args: start_dim cannot come after end_dim",
        ));
    }
    let mut new: Vec<usize> = shape[..s].to_vec();
    new.push(shape[s..=e].iter().product());
    new.extend_from_slice(&shape[e + 1..]);
    ops::reshape(t, &new)
}

fn unary(
    py: Python<'_>,
    t: &Tensor,
    f: fn(&Tensor) -> crate::Result<Tensor>,
) -> PyResult<Py<PyAny>> {
    wrap(py, guard_nogil(py, t.numel(), || f(t))?)
}

/// A `clamp` bound: absent, a number (in `like`'s dtype rules) or a tensor.
/// Whether `clamp` got a bound as a tensor (PyTorch's tensor overload).
fn tensor_bounds(min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> bool {
    [min, max]
        .iter()
        .any(|b| b.is_some_and(|o| o.cast::<PyTensor>().is_ok()))
}

pub fn bound_arg(b: Option<&Bound<'_, PyAny>>, like: &Tensor) -> PyResult<Option<Tensor>> {
    match b {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match operand(o) {
            Some(Operand::Tensor(t)) => Ok(Some(t)),
            Some(Operand::Scalar(s)) => Ok(Some(s.wrap(like))),
            None => Err(PyTypeError::new_err(format!(
                "clamp(): expected a number or a Tensor as a bound, got {o}"
            ))),
        },
    }
}

/// `(dims, correction)` from `var`/`std`'s overloads: `var(unbiased)` (a bool
/// first argument), `var(dim, unbiased, keepdim)` and `correction=`.
pub fn var_args(
    dim: Option<&Bound<'_, PyAny>>,
    unbiased: Option<bool>,
    correction: Option<f64>,
) -> PyResult<(Option<Vec<i64>>, f64)> {
    let (dim, unbiased) = match dim {
        Some(d) if d.is_instance_of::<PyBool>() => (None, Some(d.extract::<bool>()?)),
        other => (other, unbiased),
    };
    if correction.is_some() && unbiased.is_some() {
        return Err(PyRuntimeError::new_err(
            "Cannot specify both unbiased and correction",
        ));
    }
    let corr = correction.unwrap_or(if unbiased == Some(false) { 0.0 } else { 1.0 });
    Ok((dims_arg(dim)?, corr))
}

/// `max`/`min` overloads: whole tensor, along a dimension, or elementwise.
pub fn extreme(
    py: Python<'_>,
    t: &Tensor,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    is_max: bool,
) -> PyResult<Py<PyAny>> {
    let dim = dim.filter(|d| !d.is_none());
    let Some(d) = dim else {
        return wrap(
            py,
            guard(|| {
                if is_max {
                    ops::max_all(t)
                } else {
                    ops::min_all(t)
                }
            })?,
        );
    };
    if let Ok(other) = d.cast::<PyTensor>() {
        let o = &other.get().t;
        return wrap(
            py,
            guard(|| {
                if is_max {
                    ops::maximum(t, o)
                } else {
                    ops::minimum(t, o)
                }
            })?,
        );
    }
    let d = super::convert::int_arg(d)?;
    let (v, i) = guard(|| {
        if is_max {
            ops::max_dim(t, d, keepdim)
        } else {
            ops::min_dim(t, d, keepdim)
        }
    })?;
    return_pair(py, if is_max { "max" } else { "min" }, v, i)
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

/// The `p` of `norm`: a number, `inf`, or `"fro"` (which is 2).
pub fn norm_ord(p: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    match p {
        None => Ok(2.0),
        Some(p) if p.is_none() => Ok(2.0),
        Some(p) => {
            if let Ok(s) = p.extract::<String>() {
                return match s.as_str() {
                    "fro" => Ok(2.0),
                    other => Err(PyRuntimeError::new_err(format!(
                        "norm(): the matrix norm '{other}' is not supported; use a vector norm order"
                    ))),
                };
            }
            p.extract::<f64>()
                .map_err(|_| PyTypeError::new_err(format!("norm(): invalid p {p}")))
        }
    }
}

pub fn tensor_tuple(py: Python<'_>, parts: Vec<Tensor>) -> PyResult<Py<PyAny>> {
    let items: Vec<Py<PyAny>> = parts
        .into_iter()
        .map(|t| wrap(py, t))
        .collect::<PyResult<_>>()?;
    Ok(PyTuple::new(py, items)?.into_any().unbind())
}

/// A Python index key as index items: ints, slices, `None`, `...`, bools,
/// tensors, and sequences or arrays (which become index tensors).
pub fn index_items(key: &Bound<'_, PyAny>) -> PyResult<Vec<ops::IndexItem>> {
    let parts: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(tup) => tup.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let mut out = Vec::with_capacity(parts.len());
    for it in &parts {
        out.push(if it.is_none() {
            ops::IndexItem::NewAxis
        } else if it.is_instance_of::<PyEllipsis>() {
            ops::IndexItem::Ellipsis
        } else if let Ok(sl) = it.cast::<PySlice>() {
            let get = |name: &str| -> PyResult<Option<i64>> {
                let v = sl.getattr(name)?;
                if v.is_none() {
                    Ok(None)
                } else {
                    super::convert::int_arg(&v).map(Some)
                }
            };
            ops::IndexItem::Slice(get("start")?, get("stop")?, get("step")?.unwrap_or(1))
        } else if it.is_instance_of::<PyBool>() {
            ops::IndexItem::Tensor(Tensor::scalar(it.extract::<bool>()?))
        } else if let Some(Scalar::Int(i)) = as_scalar(it) {
            ops::IndexItem::Int(i)
        } else if let Ok(ti) = it.cast::<PyTensor>() {
            let ti = &ti.get().t;
            if ti.dtype() == DType::I64 && ti.ndim() == 0 {
                ops::IndexItem::Int(ti.to_vec::<i64>()[0])
            } else if ti.dtype().is_float() {
                return Err(PyIndexError::new_err(
                    "tensors used as indices must be long, int, byte or bool tensors",
                ));
            } else {
                ops::IndexItem::Tensor(ti.clone())
            }
        } else if it.is_instance_of::<PyList>() || it.hasattr("__array__")? {
            let t = tensor_from_data(it, None)?;
            let t = if t.numel() == 0 {
                Tensor::zeros(t.shape(), DType::I64)
            } else {
                t
            };
            if t.dtype().is_float() {
                return Err(PyIndexError::new_err(
                    "tensors used as indices must be long, int, byte or bool tensors",
                ));
            }
            ops::IndexItem::Tensor(t)
        } else {
            return Err(PyIndexError::new_err(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got ".to_string()
                    + &it.get_type().name()?.to_string()
                    + ")",
            ));
        });
    }
    Ok(out)
}

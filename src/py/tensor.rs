//! The `Tensor` class Python sees. Every operator and method is a direct call
//! into Rust: no Python-level wrapper sits on the per-op path.

use std::sync::Arc;

use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyEllipsis, PyFloat, PyList, PyNone, PySlice, PyTuple};

use super::convert::{
    as_scalar, operand, parse_size, seq_of_ints, tensor_from_data, to_numpy_shared, to_tensor_like,
    Operand,
};
use super::dtype::{dtype_object, opt_dtype, parse_dtype, PyDType};
use super::errors::{guard, guard_nogil};
use super::node::{grad_fn_object, PyHook, RemovableHandle};
use crate::autograd::{self, BackwardRequest};
use crate::ops::{self, Scalar};
use crate::tensor::{DType, Tensor};

#[pyclass(name = "Tensor", module = "ferrograd", subclass, weakref, dict, frozen)]
pub struct PyTensor {
    pub t: Tensor,
}

pub fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyTensor { t })?.into_any())
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
    let py = slf.py();
    let a = &slf.get().t;
    let b = to_tensor_like(other, Some(a))?;
    guard_nogil(py, work2(a, &b), || {
        ops::check_inplace(a)?;
        let r = tt(a, &b)?;
        ops::commit_inplace(a, &r)
    })?;
    Ok(slf.clone().into_any().unbind())
}

fn scalar_from_any(v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    as_scalar(v).ok_or_else(|| PyTypeError::new_err(format!("expected a number, got {v}")))
}

/// Nested Python lists with the tensor's values (`tolist`).
pub fn nest<'py>(
    py: Python<'py>,
    shape: &[usize],
    vals: &[f64],
    dt: DType,
) -> PyResult<Bound<'py, PyAny>> {
    let leaf = |v: f64| -> PyResult<Bound<'py, PyAny>> {
        Ok(match dt {
            DType::Bool => PyBool::new(py, v != 0.0).to_owned().into_any(),
            DType::I64 => (v as i64).into_pyobject(py)?.into_any(),
            _ => PyFloat::new(py, v).into_any(),
        })
    };
    if shape.is_empty() {
        return leaf(vals[0]);
    }
    let step: usize = shape[1..].iter().product();
    let mut items = Vec::with_capacity(shape[0]);
    for i in 0..shape[0] {
        items.push(nest(py, &shape[1..], &vals[i * step..(i + 1) * step], dt)?);
    }
    Ok(PyList::new(py, items)?.into_any())
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
        Ok(PyTensor { t })
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

    #[setter]
    fn set_requires_grad(&self, on: bool) -> PyResult<()> {
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

    #[getter]
    fn is_leaf(&self) -> bool {
        self.t.is_leaf()
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
        let v = self.t.item()?;
        Ok(nest(py, &[], &[v], self.t.dtype())?.unbind())
    }

    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let shape = self.t.shape();
        if self.t.dtype() == DType::I64 {
            let vals = self.t.to_vec::<i64>();
            if shape.is_empty() {
                return Ok(vals[0].into_pyobject(py)?.into_any().unbind());
            }
        }
        let vals = self.t.to_vec::<f64>();
        Ok(nest(py, &shape, &vals, self.t.dtype())?.unbind())
    }

    #[pyo3(signature = (force=false))]
    fn numpy<'py>(&self, py: Python<'py>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        if self.t.requires_grad() && !force {
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

    fn __int__(&self) -> PyResult<i64> {
        if self.t.dtype() == DType::I64 && self.t.numel() == 1 {
            return Ok(self.t.to_vec::<i64>()[0]);
        }
        Ok(self.one_value()? as i64)
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
                "Boolean value of Tensor with {} values is ambiguous",
                if self.t.numel() == 0 {
                    "no"
                } else {
                    "more than one"
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
        let n = t.shape()[0];
        let mut items = Vec::with_capacity(n);
        for i in 0..n {
            items.push(wrap(py, guard(|| ops::select(t, 0, i as i64))?)?);
        }
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

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap(py, basic_index(&self.t, key)?)
    }

    // ----- dtype conversion -------------------------------------------------------

    #[pyo3(signature = (*args, **kwargs))]
    fn to(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Py<PyAny>> {
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
            None => wrap(py, self.t.clone()),
            Some(dt) => wrap(py, guard(|| ops::to_dtype(&self.t, dt))?),
        }
    }

    fn float(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::to_dtype(&self.t, DType::F32))?)
    }

    fn double(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::to_dtype(&self.t, DType::F64))?)
    }

    fn long(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::to_dtype(&self.t, DType::I64))?)
    }

    fn bool(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::to_dtype(&self.t, DType::Bool))?)
    }

    fn type_as(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let dt = other.get().t.dtype();
        wrap(py, guard(|| ops::to_dtype(&self.t, dt))?)
    }

    fn cpu<'py>(slf: &Bound<'py, Self>) -> Bound<'py, Self> {
        slf.clone()
    }

    fn clone(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard_nogil(py, self.t.numel(), || ops::clone(&self.t))?)
    }

    fn contiguous(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(
            py,
            guard_nogil(py, self.t.numel(), || ops::contiguous(&self.t))?,
        )
    }

    // ----- operators -----------------------------------------------------------------

    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::add, ops::add_scalar)
    }
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::add, ops::add_scalar)
    }
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::sub, |a, s| ops::sub(a, &s.wrap(a)))
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
        ibinop(slf, o, ops::add).map(drop)
    }
    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        ibinop(slf, o, ops::sub).map(drop)
    }
    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        ibinop(slf, o, ops::mul).map(drop)
    }
    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        ibinop(slf, o, ops::div).map(drop)
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
            None => ibinop(slf, other, ops::add),
            Some(al) => {
                let a = &slf.get().t;
                let s = scalar_from_any(al)?;
                let b = to_tensor_like(other, Some(a))?;
                guard(|| {
                    ops::check_inplace(a)?;
                    let r = ops::add_alpha(a, &b, s)?;
                    ops::commit_inplace(a, &r)
                })?;
                Ok(slf.clone().into_any().unbind())
            }
        }
    }
    fn sub_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        ibinop(slf, other, ops::sub)
    }
    fn mul_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        ibinop(slf, other, ops::mul)
    }
    fn div_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        ibinop(slf, other, ops::div)
    }
    fn pow_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        ibinop(slf, other, ops::pow)
    }
    fn copy_(slf: &Bound<'_, Self>, src: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        ibinop(slf, src, |a, b| {
            let e = ops::expand(b, &a.shape())?;
            ops::to_dtype(&ops::contiguous(&e)?, a.dtype())
        })
    }
    fn exp_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        guard(|| {
            ops::check_inplace(a)?;
            let r = ops::exp(a)?;
            ops::commit_inplace(a, &r)
        })?;
        Ok(slf.clone().into_any().unbind())
    }
    fn neg_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        guard(|| {
            ops::check_inplace(a)?;
            let r = ops::neg(a)?;
            ops::commit_inplace(a, &r)
        })?;
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

    #[pyo3(signature = (p=None))]
    fn norm(&self, py: Python<'_>, p: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        if let Some(p) = p {
            if !p.is_none()
                && p.extract::<f64>().ok() != Some(2.0)
                && p.extract::<String>().ok().as_deref() != Some("fro")
            {
                return Err(PyValueError::new_err("only the 2-norm is available so far"));
            }
        }
        wrap(py, guard_nogil(py, self.t.numel(), || ops::norm(&self.t))?)
    }

    fn all(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::all(&self.t))?)
    }
    fn any(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, guard(|| ops::any(&self.t))?)
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
        if shape.len() == 1 {
            if let Ok(d) = opt_dtype(Some(&shape.get_item(0)?)) {
                if let Some(d) = d {
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
        let s = other.get().t.shape();
        wrap(py, guard(|| ops::reshape(&self.t, &s))?)
    }
    #[pyo3(signature = (*sizes))]
    fn expand(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let dims = parse_size(sizes, None)?;
        let cur = self.t.shape();
        let lead = dims.len().saturating_sub(cur.len());
        let shape: Vec<usize> = dims
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                if d == -1 && i >= lead {
                    cur[i - lead]
                } else {
                    d.max(0) as usize
                }
            })
            .collect();
        wrap(py, guard(|| ops::expand(&self.t, &shape))?)
    }
    fn expand_as(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let s = other.get().t.shape();
        wrap(py, guard(|| ops::expand(&self.t, &s))?)
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

    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<(Py<PyAny>, (Py<PyAny>, bool))> {
        let py = slf.py();
        let f = py.import("ferrograd")?.getattr("tensor")?.unbind();
        let t = &slf.get().t;
        Ok((
            f,
            (
                PyTensor {
                    t: ops::clone_data(t),
                }
                .tolist(py)?,
                t.requires_grad(),
            ),
        ))
    }
}

impl PyTensor {
    fn one_value(&self) -> PyResult<f64> {
        if self.t.numel() != 1 {
            return Err(PyTypeError::new_err(
                "only one element tensors can be converted to Python scalars",
            ));
        }
        Ok(self.t.item()?)
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

/// `t[key]` for ints, slices, `None` and `...` (views, as in PyTorch).
fn basic_index(t: &Tensor, key: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(tup) => tup.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let consumes =
        |o: &Bound<'_, PyAny>| -> bool { !(o.is_none() || o.is_instance_of::<PyEllipsis>()) };
    let used = items.iter().filter(|o| consumes(o)).count();
    let ndim = t.ndim();
    if used > ndim {
        return Err(PyIndexError::new_err(format!(
            "too many indices for tensor of dimension {ndim}"
        )));
    }
    let mut out = t.clone();
    let mut dim: i64 = 0;
    let mut seen_ellipsis = false;
    for it in &items {
        if it.is_instance_of::<PyNone>() {
            out = guard(|| ops::unsqueeze(&out, dim))?;
            dim += 1;
        } else if it.is_instance_of::<PyEllipsis>() {
            if seen_ellipsis {
                return Err(PyIndexError::new_err(
                    "an index can only have a single ellipsis ('...')",
                ));
            }
            seen_ellipsis = true;
            dim += (ndim - used) as i64;
        } else if let Ok(sl) = it.cast::<PySlice>() {
            let get = |name: &str| -> PyResult<Option<i64>> {
                let v = sl.getattr(name)?;
                if v.is_none() {
                    Ok(None)
                } else {
                    super::convert::int_arg(&v).map(Some)
                }
            };
            let (start, stop, step) = (get("start")?, get("stop")?, get("step")?.unwrap_or(1));
            out = guard(|| ops::slice(&out, dim, start, stop, step))?;
            dim += 1;
        } else if let Some(Scalar::Int(i)) =
            as_scalar(it).filter(|_| !it.is_instance_of::<PyBool>())
        {
            out = guard(|| ops::select(&out, dim, i))?;
        } else if let Ok(ti) = it.cast::<PyTensor>() {
            let ti = &ti.get().t;
            if ti.dtype() == DType::I64 && ti.numel() == 1 && ti.ndim() == 0 {
                let i = ti.to_vec::<i64>()[0];
                out = guard(|| ops::select(&out, dim, i))?;
            } else {
                return Err(PyIndexError::new_err(
                    "indexing with tensors (advanced indexing) is not available yet; use basic slicing",
                ));
            }
        } else {
            return Err(PyIndexError::new_err(
                "only integers, slices (`:`), ellipsis (`...`) and None are valid indices",
            ));
        }
    }
    Ok(out)
}

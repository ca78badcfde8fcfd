//! `Tensor` to Python values (`item`, `tolist`, `numpy`, `__float__`, ...)
//! and to other dtypes (`to`, `float`, `double`, ...).

use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyTuple};

use super::{wrap, wrap_or_self, PyTensor};
use crate::autograd;
use crate::ops;
use crate::py::capture::{run, run_multi, run_op};
use crate::py::convert::to_numpy_shared;
use crate::py::dtype::{opt_dtype, parse_dtype};
use crate::py::errors::read;
use crate::tensor::{DType, Tensor};

/// Nested Python lists of `vals` (row-major, of shape `shape`).
///
/// Each list is made at its final length by CPython, so one too long for
/// memory raises `MemoryError` there (as PyTorch's `tolist` does) rather
/// than failing an allocation on our side.
fn nest<'py, T: Copy>(
    py: Python<'py>,
    shape: &[usize],
    vals: &[T],
    leaf: &dyn Fn(T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if shape.is_empty() {
        return leaf(vals[0]);
    }
    // Only an empty tensor's sizes can overflow, and then nothing is sliced.
    let step = shape[1..]
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .unwrap_or(0);
    let len = isize::try_from(shape[0]).map_err(|_| PyMemoryError::new_err(()))?;
    // SAFETY: `PyList_New` returns a new reference or null with an exception set.
    let list = unsafe { Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyList_New(len))? };
    for i in 0..shape[0] {
        let rows = if step == 0 {
            &vals[..0]
        } else {
            &vals[i * step..(i + 1) * step]
        };
        let item = nest(py, &shape[1..], rows, leaf)?;
        // SAFETY: `i` is within the list's length; `PyList_SetItem` takes the
        // reference `into_ptr` gives up. A list left partly filled by an
        // error above is freed as such (CPython skips its null slots).
        unsafe { pyo3::ffi::PyList_SetItem(list.as_ptr(), i as isize, item.into_ptr()) };
    }
    Ok(list)
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
        d if d.is_int() => nest(py, &shape, &t.to_vec::<i64>(), &|v| {
            Ok(v.into_pyobject(py)?.into_any())
        }),
        _ => nest(py, &shape, &t.to_vec::<f64>(), &|v| {
            Ok(PyFloat::new(py, v).into_any())
        }),
    }
}

/// The value of a one-element tensor (of any shape) as a Python number.
fn scalar_to_py<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    Ok(match t.dtype() {
        DType::Bool => PyBool::new(py, t.to_vec::<bool>()[0]).to_owned().into_any(),
        d if d.is_int() => t.to_vec::<i64>()[0].into_pyobject(py)?.into_any(),
        _ => PyFloat::new(py, t.item()?).into_any(),
    })
}

#[pymethods]
impl PyTensor {
    /// The value of a one-element tensor as a Python number (bool, int or float).
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        crate::compile::refuse_read("item");
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.t.numel()
            )));
        }
        Ok(scalar_to_py(py, &self.t)?.unbind())
    }

    /// The values as nested Python lists of numbers (a number for a 0-d tensor).
    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        crate::compile::refuse_read("tolist");
        crate::py::errors::guard_py(|| Ok(tensor_to_py(py, &self.t)?.unbind()))
    }

    /// A NumPy array sharing this tensor's memory (a copy with `force=True`). Refused for a
    /// tensor that requires grad, unless `force` or under `no_grad()`.
    #[pyo3(signature = (force=false))]
    fn numpy<'py>(&self, py: Python<'py>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        crate::compile::refuse_read("numpy");
        // As PyTorch's: under `no_grad()` a tensor that requires grad converts.
        if self.t.requires_grad() && autograd::is_grad_enabled() && !force {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        if force {
            let copy = read(py, "numpy", self.t.numel(), || Ok(ops::clone_data(&self.t)))?;
            return to_numpy_shared(py, &copy);
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
        crate::compile::refuse_read("__array__");
        // PyTorch's `__array__` is `self.numpy()`, with its refusal.
        if self.t.requires_grad() && autograd::is_grad_enabled() {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        let t = if copy == Some(true) {
            read(py, "__array__", self.t.numel(), || {
                Ok(ops::clone_data(&self.t))
            })?
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
        crate::compile::refuse_read("float(tensor)");
        self.one_value()
    }

    /// Exact for int64 and bool; a float is truncated the way `int(float)`
    /// does (so NaN and infinities raise as they do there).
    fn __int__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::compile::refuse_read("int(tensor)");
        if self.t.dtype().is_float() {
            return self.one_value_py(py)?.call_method0("__int__");
        }
        self.check_one_element()?;
        Ok(self.t.to_vec::<i64>()[0].into_pyobject(py)?.into_any())
    }

    fn __index__(&self) -> PyResult<i64> {
        crate::compile::refuse_read("tensor.__index__");
        if self.t.dtype().is_float() || self.t.numel() != 1 {
            return Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        Ok(self.t.to_vec::<i64>()[0])
    }

    fn __bool__(&self) -> PyResult<bool> {
        crate::compile::refuse_read("bool(tensor)");
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
        let rows = run_multi(py, t.numel(), "unbind", &[t], &[], |t, _| {
            ops::unbind(t[0], 0)
        })?;
        let items = rows
            .into_iter()
            .map(|r| wrap(py, r))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.try_iter()?.into_any().unbind())
    }

    /// Returns the tensor converted to a dtype (`to(dtype)`, `to(other)`, `to(dtype=...)`);
    /// `"cpu"` is accepted. The tensor itself when nothing changes.
    #[pyo3(signature = (*args, **kwargs))]
    fn to(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let this = &slf.get().t;
        // Accepts `to(dtype)`, `to("cpu")`, `to(other_tensor)`, `dtype=` and `device=`;
        // `"meta"` gives a meta tensor of this shape (and dtype).
        let mut target: Option<DType> = None;
        let mut meta = false;
        let mut device_str = |s: &str| -> PyResult<()> {
            if s == "meta" {
                meta = true;
                Ok(())
            } else if s == "cpu" || s.starts_with("cpu:") {
                Ok(())
            } else {
                Err(PyRuntimeError::new_err(format!(
                    "ferrograd runs on the CPU only; got device {s}"
                )))
            }
        };
        for a in args.iter() {
            if let Ok(t) = a.cast::<PyTensor>() {
                target = Some(t.get().t.dtype());
            } else if let Ok(s) = a.extract::<String>() {
                if parse_dtype(&a).is_ok() && s != "cpu" && s != "meta" {
                    target = Some(parse_dtype(&a)?);
                } else {
                    device_str(&s)?;
                }
            } else if a.is_none() {
                // `to(None)`: no device change, as PyTorch.
            } else {
                target = Some(parse_dtype(&a)?);
            }
        }
        if let Some(kw) = kwargs {
            if let Some(d) = kw.get_item("dtype")? {
                target = opt_dtype(Some(&d))?;
            }
            if let Some(d) = kw.get_item("device")? {
                if !d.is_none() {
                    device_str(&d.str()?.to_cow()?)?;
                }
            }
            if let Some(f) = kw.get_item("memory_format")? {
                crate::py::device::check_memory_format(Some(&f), Some(this.ndim()))?;
            }
        }
        if meta {
            let dt = target.unwrap_or(this.dtype());
            let rg = this.requires_grad();
            return crate::py::device::meta_tensor(slf.py(), &this.shape(), dt, rg);
        }
        match target {
            None => Ok(slf.clone().into_any().unbind()),
            Some(dt) => cast(slf, this, dt),
        }
    }

    /// Returns the tensor as float32 (the tensor itself if it already is).
    fn float(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::F32)
    }

    /// Returns the tensor as float64 (the tensor itself if it already is).
    fn double(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::F64)
    }

    /// Returns the tensor as int64 (the tensor itself if it already is).
    fn long(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::I64)
    }

    /// Returns the tensor as float16 (the tensor itself if it already is).
    fn half(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::F16)
    }

    /// Returns the tensor as bfloat16 (the tensor itself if it already is).
    fn bfloat16(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::BF16)
    }

    /// Returns the tensor as int32 (the tensor itself if it already is).
    fn int(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::I32)
    }

    /// Returns the tensor as int16 (the tensor itself if it already is).
    fn short(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::I16)
    }

    /// Returns the tensor as int8 (the tensor itself if it already is).
    fn char(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::I8)
    }

    /// Returns the tensor as uint8 (the tensor itself if it already is).
    fn byte(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::U8)
    }

    /// Returns the tensor as bool (the tensor itself if it already is).
    fn bool(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        cast(slf, &slf.get().t, DType::Bool)
    }

    /// Returns the tensor converted to the dtype of `other`.
    fn type_as(slf: &Bound<'_, Self>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let dt = other.get().t.dtype();
        cast(slf, &slf.get().t, dt)
    }

    /// Returns the tensor itself: ferrograd tensors always live on the CPU.
    fn cpu<'py>(slf: &Bound<'py, Self>) -> Bound<'py, Self> {
        slf.clone()
    }

    /// Returns the tensor in row-major memory order: the tensor itself if it already is, else a
    /// copy. `memory_format` is accepted (ferrograd keeps every tensor row-major, so
    /// `channels_last` changes no value) and checked as PyTorch checks it.
    #[pyo3(signature = (memory_format=None))]
    fn contiguous(
        slf: &Bound<'_, Self>,
        memory_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (py, t) = (slf.py(), &slf.get().t);
        crate::py::device::check_memory_format(memory_format, Some(t.ndim()))?;
        let out = run(py, t.numel(), "contiguous", &[t], &[], |t, _| {
            ops::contiguous(t[0])
        })?;
        wrap_or_self(slf, out)
    }
}

/// `t` (the tensor of `slf`) as `dt`: `slf` itself when it already is. A
/// real conversion is an op a compiled step replays (`.double()` inside
/// `ferrograd.compile`).
fn cast(slf: &Bound<'_, PyTensor>, t: &Tensor, dt: DType) -> PyResult<Py<PyAny>> {
    if t.dtype() == dt {
        return Ok(slf.clone().into_any().unbind());
    }
    run_op(slf.py(), t.numel(), "to", &[t], &[], move |t, _| {
        ops::to_dtype(t[0], dt)
    })
}

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

fn legacy_name(dt: DType) -> String {
    format!("torch.{}Tensor", dt.scalar_name())
}

// Legacy type names: `Tensor.type()`.
#[pymethods]
impl PyTensor {
    /// `t.type()`: PyTorch's legacy type name (`'torch.FloatTensor'`, with
    /// the `torch.` prefix code compares against); `t.type(dtype)` with a
    /// dtype, such a name or a legacy type (`FloatTensor`) converts like `to`.
    #[pyo3(name = "type", signature = (dtype=None, non_blocking=false))]
    fn type_(
        slf: &Bound<'_, Self>,
        dtype: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = non_blocking;
        let py = slf.py();
        let cur = slf.get().t.dtype();
        let Some(target) = dtype.filter(|d| !d.is_none()) else {
            return Ok(pyo3::types::PyString::new(py, &legacy_name(cur))
                .into_any()
                .unbind());
        };
        let dt = if let Ok(name) = target.extract::<String>() {
            let want = crate::tensor::ALL_DTYPES
                .into_iter()
                .find(|d| legacy_name(*d) == name);
            match want {
                Some(d) => d,
                None if name.starts_with("torch.cuda.") => {
                    return Err(PyRuntimeError::new_err(format!(
                        "ferrograd has no CUDA support: cannot convert to {name}"
                    )))
                }
                None => {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "invalid type: '{name}'"
                    )))
                }
            }
        } else if let Ok(inner) = target.getattr("dtype") {
            parse_dtype(&inner)?
        } else {
            parse_dtype(target)?
        };
        if dt == cur {
            return Ok(slf.clone().into_any().unbind());
        }
        let obj = crate::py::dtype::dtype_object(py, dt);
        Ok(slf.call_method1("to", (obj,))?.unbind())
    }
}

//! PyTorch names that code copied from the web expects: the default dtype
//! (`set_default_dtype` / `get_default_dtype`) and `mode`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::capture::run;
use super::dispatch::tensor_arg;
use super::dtype::{dtype_object, PyDType};
use super::tensor::{return_pair, PyTensor};
use crate::ops;
use crate::tensor::{DType, Tensor};

/// Sets the dtype that Python floats, float creation functions (`zeros`,
/// `rand`, `arange` with float arguments, ...), layer parameters and integer
/// to float promotion produce: `ferrograd.float32` (the initial default),
/// `float64`, `float16` or `bfloat16`. Other dtypes raise PyTorch's `TypeError`.
#[pyfunction]
fn set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
    let dt = match d.cast::<PyDType>() {
        Ok(d) => d.get().dt,
        Err(_) => {
            return Err(PyTypeError::new_err(format!(
                "set_default_dtype(): argument 'd' (position 1) must be torch.dtype, not {}",
                d.get_type().name()?
            )))
        }
    };
    if !dt.is_float() {
        return Err(PyTypeError::new_err(
            "only floating-point types are supported as the default type",
        ));
    }
    if crate::compile::active() {
        // Factories read the default while the tape is captured; a replay would not set it.
        crate::compile::no_rule("set_default_dtype");
    }
    DType::set_default_float(dt);
    Ok(())
}

/// The current default floating dtype (`ferrograd.float32` unless
/// `set_default_dtype` changed it).
#[pyfunction]
fn get_default_dtype(py: Python<'_>) -> Py<PyDType> {
    dtype_object(py, DType::default_float())
}

fn mode_pair(py: Python<'_>, t: &Tensor, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
    let (v, i) = run(py, t.numel(), "mode", &[t], &[], move |t, _| {
        ops::mode(t[0], dim, keepdim)
    })?;
    return_pair(py, "mode", v, i)
}

#[pymethods]
impl PyTensor {
    /// `(values, indices)`: the most frequent value of each row along `dim`
    /// (the smallest of equally frequent ones) and the index of its last
    /// occurrence; see `ferrograd.mode`.
    #[pyo3(signature = (dim=-1, keepdim=false))]
    fn mode(&self, py: Python<'_>, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
        mode_pair(py, &self.t, dim, keepdim)
    }
}

/// The mode of `input` along `dim` as a `(values, indices)` named tuple: the
/// most frequent value of each row, the smallest one when several are equally
/// frequent, and the index of its last occurrence in the row (what PyTorch's
/// CPU kernel returns for rows of up to 16 elements; beyond that PyTorch's
/// choice among equal values is unspecified). The gradient flows to that
/// index.
#[pyfunction]
#[pyo3(signature = (input, dim=-1, keepdim=false))]
fn mode(py: Python<'_>, input: &Bound<'_, PyAny>, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
    dispatching!(py, "mode", (input, dim, keepdim), {
        let input = tensor_arg(input, "mode", "input", 1)?;
        mode_pair(py, &input.get().t, dim, keepdim)
    })
}

/// Adds the compatibility functions to `ferrograd._C`.
/// A `result_type` operand: a tensor or a Python number.
fn operand_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Result<Tensor, ops::Scalar>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Ok(t.get().t.clone()));
    }
    match super::convert::as_scalar(obj) {
        Some(s) => Ok(Err(s)),
        None => Err(PyTypeError::new_err(format!(
            "result_type(): argument '{what}' must be Tensor or Number, not {}",
            obj.get_type().name()?
        ))),
    }
}

/// The dtype of an arithmetic op on `tensor1` and `tensor2` (tensors or
/// Python numbers), by PyTorch's promotion rules: dimensioned tensors
/// promote by the table; a zero-dimensional tensor or a number only counts
/// when it is of a higher category (bool < integer < float), a float number
/// then giving the default dtype and an integer one int64.
#[pyfunction]
fn result_type(
    py: Python<'_>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
) -> PyResult<Py<PyDType>> {
    let scalar_dtype = |s: ops::Scalar| match s {
        ops::Scalar::Bool(_) => DType::Bool,
        ops::Scalar::Int(_) => DType::I64,
        ops::Scalar::Float(_) => DType::default_float(),
    };
    let dt = match (
        operand_of(tensor1, "tensor1")?,
        operand_of(tensor2, "tensor2")?,
    ) {
        (Ok(a), Ok(b)) => ops::result_type(&a, &b),
        (Ok(t), Err(s)) | (Err(s), Ok(t)) => s.result_type(t.dtype()),
        (Err(a), Err(b)) => scalar_dtype(a).promote(scalar_dtype(b)),
    };
    Ok(dtype_object(py, dt))
}

fn dtype_arg(d: &Bound<'_, PyAny>, f: &str, what: &str) -> PyResult<DType> {
    match d.cast::<PyDType>() {
        Ok(d) => Ok(d.get().dt),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{f}(): argument '{what}' must be torch.dtype, not {}",
            d.get_type().name()?
        ))),
    }
}

/// The smallest dtype of the higher category that holds both (PyTorch's
/// promotion table: uint8 with int8 is int16, float16 with bfloat16 float32).
#[pyfunction]
fn promote_types(
    py: Python<'_>,
    type1: &Bound<'_, PyAny>,
    type2: &Bound<'_, PyAny>,
) -> PyResult<Py<PyDType>> {
    let a = dtype_arg(type1, "promote_types", "type1")?;
    let b = dtype_arg(type2, "promote_types", "type2")?;
    Ok(dtype_object(py, a.promote(b)))
}

/// Whether PyTorch's casting rules allow an op to write a `from_` result
/// into a `to` tensor: never down a category (float to integer, integer to
/// bool).
#[pyfunction]
fn can_cast(from_: &Bound<'_, PyAny>, to: &Bound<'_, PyAny>) -> PyResult<bool> {
    let a = dtype_arg(from_, "can_cast", "from_")?;
    let b = dtype_arg(to, "can_cast", "to")?;
    Ok(a.can_cast(b))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(result_type, m)?)?;
    m.add_function(wrap_pyfunction!(promote_types, m)?)?;
    m.add_function(wrap_pyfunction!(can_cast, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(mode, m)?)?;
    Ok(())
}

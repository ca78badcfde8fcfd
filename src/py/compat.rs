//! PyTorch names that code copied from the web expects: the default dtype
//! (`set_default_dtype` / `get_default_dtype`) and `mode`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::dtype::{dtype_object, PyDType};
use super::capture::run;
use super::tensor::{return_pair, PyTensor};
use crate::ops;
use crate::tensor::{DType, Tensor};

/// Sets the dtype that Python floats, float creation functions (`zeros`,
/// `rand`, `arange` with float arguments, ...), layer parameters and integer
/// to float promotion produce: `ferrograd.float32` (the initial default) or
/// `ferrograd.float64`. Other dtypes raise PyTorch's `TypeError`.
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
    if super::capture::active() {
        // Factories read the default while the tape is captured; a replay would not set it.
        super::capture::no_rule("set_default_dtype");
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
fn mode(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: i64,
    keepdim: bool,
) -> PyResult<Py<PyAny>> {
    mode_pair(py, &input.t, dim, keepdim)
}

/// Adds the compatibility functions to `ferrograd._C`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(mode, m)?)?;
    Ok(())
}

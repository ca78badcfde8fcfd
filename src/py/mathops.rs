//! Elementwise math bindings with options, which the op table cannot
//! express: `nan_to_num` (replacement values) and `polygamma` (an order).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::dispatch::{dispatchable, tensor_arg};
use super::tensor::PyTensor;
use crate::ops;

#[pymethods]
impl PyTensor {
    /// Returns a copy with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf`
    /// (by default the dtype's largest and lowest finite values).
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num(
        &self,
        py: Python<'_>,
        nan: f64,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "nan_to_num",
            &[&self.t],
            &[],
            move |t, _| ops::nan_to_num(t[0], nan, posinf, neginf),
        )
    }

    /// In-place version of `nan_to_num()`.
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num_(
        slf: &Bound<'_, Self>,
        nan: f64,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let a = &slf.get().t;
        let _op = crate::tensor::write_op("nan_to_num_");
        crate::py::capture::run_inplace(
            slf.py(),
            a.numel(),
            "nan_to_num_",
            &[a],
            &[],
            move |t, _| ops::apply_inplace(t[0], || ops::nan_to_num(t[0], nan, posinf, neginf)),
        )?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Returns the `n`-th derivative of the digamma function at each element (`n = 0` is
    /// digamma itself).
    fn polygamma(&self, py: Python<'_>, n: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "polygamma",
            &[&self.t],
            &[],
            move |t, _| ops::polygamma(n, t[0]),
        )
    }
}

/// `nan_to_num(input, nan=0.0, posinf=None, neginf=None)`: a copy of `input` with NaN and
/// the infinities replaced by finite values (by default 0 and the dtype's extremes).
#[pyfunction]
#[pyo3(name = "nan_to_num", signature = (input, *args, **kwargs))]
fn nan_to_num_fn<'py>(
    input: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    if input.cast::<PyTensor>().is_err() && !dispatchable(input) {
        tensor_arg(input, "nan_to_num", "input", 1)?;
    }
    input.call_method("nan_to_num", args, kwargs)
}

/// `polygamma(n, input)`: the `n`-th derivative of the digamma function at each element
/// of `input`.
#[pyfunction]
#[pyo3(name = "polygamma")]
fn polygamma_fn<'py>(n: i64, input: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if input.cast::<PyTensor>().is_err() && !dispatchable(input) {
        tensor_arg(input, "polygamma", "input", 2)?;
    }
    input.call_method1("polygamma", (n,))
}

/// Adds the module functions to `ferrograd._C`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(nan_to_num_fn, m)?)?;
    m.add_function(wrap_pyfunction!(polygamma_fn, m)?)?;
    Ok(())
}

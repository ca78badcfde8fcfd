//! Elementwise math bindings with options, which the op table cannot
//! express: `nan_to_num` (replacement values), `polygamma` (an order) and
//! `clamp_min`/`clamp_max` (whose gradient rule depends on whether the bound
//! is a number or a tensor).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::convert::to_tensor_like;
use super::dispatch::{dispatchable, tensor_arg};
use super::errors::work;
use super::tensor::PyTensor;
use crate::ops;
use crate::tensor::Tensor;

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
            move |t, _| {
                ops::apply_inplace_map(t[0], &[], || ops::nan_to_num(t[0], nan, posinf, neginf))
            },
        )?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Elementwise `max(input, min)` with the gradient rule of `clamp(input, min=min)`.
    fn clamp_min(&self, py: Python<'_>, min: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        clamp_bound(py, &self.t, min, "clamp_min", ops::clamp_min)
    }

    /// Elementwise `min(input, max)` with the gradient rule of `clamp(input, max=max)`.
    fn clamp_max(&self, py: Python<'_>, max: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        clamp_bound(py, &self.t, max, "clamp_max", ops::clamp_max)
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

type BoundOp = fn(&Tensor, &Tensor, bool) -> crate::Result<Tensor>;

/// `clamp_min`/`clamp_max` of `a` by `bound`, told whether the bound is a
/// Python number (PyTorch's Scalar overload) rather than a tensor.
fn clamp_bound(
    py: Python<'_>,
    a: &Tensor,
    bound: &Bound<'_, PyAny>,
    name: &'static str,
    op: BoundOp,
) -> PyResult<Py<PyAny>> {
    let number = bound.cast::<PyTensor>().is_err();
    let b = to_tensor_like(bound, Some(a))?;
    crate::py::capture::run_op(py, work(&[a, &b]), name, &[a, &b], &[], move |t, _| {
        op(t[0], t[1], number)
    })
}

/// `clamp_min(input, min)`: elementwise `max(input, min)` with the gradient rule of
/// `clamp(input, min=min)`.
#[pyfunction]
#[pyo3(name = "clamp_min")]
fn clamp_min_fn<'py>(
    input: &Bound<'py, PyAny>,
    min: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if input.cast::<PyTensor>().is_err() && !dispatchable(input) {
        tensor_arg(input, "clamp_min", "input", 1)?;
    }
    input.call_method1("clamp_min", (min,))
}

/// `clamp_max(input, max)`: elementwise `min(input, max)` with the gradient rule of
/// `clamp(input, max=max)`.
#[pyfunction]
#[pyo3(name = "clamp_max")]
fn clamp_max_fn<'py>(
    input: &Bound<'py, PyAny>,
    max: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if input.cast::<PyTensor>().is_err() && !dispatchable(input) {
        tensor_arg(input, "clamp_max", "input", 1)?;
    }
    input.call_method1("clamp_max", (max,))
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
    m.add_function(wrap_pyfunction!(clamp_min_fn, m)?)?;
    m.add_function(wrap_pyfunction!(clamp_max_fn, m)?)?;
    Ok(())
}

//! Bindings of the unmasked attention kernel (`ops::attention`). They record
//! nothing; `ferrograd.nn._functional.attention` makes them one autograd node.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::errors::guard_nogil;
use super::tensor::{wrap, wrap_optional_tuple, PyTensor};
use crate::ops::attention;

fn work(q: &PyTensor, v: &PyTensor) -> usize {
    q.t.numel()
        .saturating_mul(v.t.shape().iter().rev().nth(1).copied().unwrap_or(1))
}

/// `(out, weights)` of `softmax(q @ k^T * scale) @ v`.
#[pyfunction]
fn _sdpa_forward(
    py: Python<'_>,
    q: &Bound<'_, PyTensor>,
    k: &Bound<'_, PyTensor>,
    v: &Bound<'_, PyTensor>,
    scale: f64,
) -> PyResult<Py<PyAny>> {
    let (q, k, v) = (q.get(), k.get(), v.get());
    let (out, p) = guard_nogil(py, work(q, v), || {
        attention::sdpa_forward(&q.t, &k.t, &v.t, scale)
    })?;
    Ok(PyTuple::new(py, [wrap(py, out)?, wrap(py, p)?])?
        .into_any()
        .unbind())
}

/// `(dq, dk, dv)`, each None unless `needs` asks for it.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _sdpa_backward(
    py: Python<'_>,
    g: &Bound<'_, PyTensor>,
    q: &Bound<'_, PyTensor>,
    k: &Bound<'_, PyTensor>,
    v: &Bound<'_, PyTensor>,
    p: &Bound<'_, PyTensor>,
    scale: f64,
    needs: (bool, bool, bool),
) -> PyResult<Py<PyAny>> {
    let (g, q, k, v, p) = (g.get(), q.get(), k.get(), v.get(), p.get());
    let grads = guard_nogil(py, work(q, v), || {
        attention::sdpa_backward(
            &g.t,
            &q.t,
            &k.t,
            &v.t,
            &p.t,
            scale,
            [needs.0, needs.1, needs.2],
        )
    })?;
    wrap_optional_tuple(py, grads)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_sdpa_forward, m)?)?;
    m.add_function(wrap_pyfunction!(_sdpa_backward, m)?)?;
    Ok(())
}

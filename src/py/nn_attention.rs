//! Bindings of the attention kernel (`ops::attention`), unmasked or causal. They make no
//! autograd node; `ferrograd.nn._functional.attention` makes them one.

use pyo3::prelude::*;

use super::capture::run;
use super::tensor::{tensor_tuple, wrap_optional_tuple, PyTensor};
use crate::ops::attention;

fn work(q: &PyTensor, v: &PyTensor) -> usize {
    q.t.numel()
        .saturating_mul(v.t.shape().iter().rev().nth(1).copied().unwrap_or(1))
}

/// `(out, weights)` of `softmax(q @ k^T * scale) @ v`, causally masked
/// when `is_causal`.
#[pyfunction]
#[pyo3(signature = (q, k, v, scale, is_causal=false))]
fn _sdpa_forward(
    py: Python<'_>,
    q: &Bound<'_, PyTensor>,
    k: &Bound<'_, PyTensor>,
    v: &Bound<'_, PyTensor>,
    scale: f64,
    is_causal: bool,
) -> PyResult<Py<PyAny>> {
    let (q, k, v) = (q.get(), k.get(), v.get());
    let (out, p) = run(
        py,
        work(q, v),
        "sdpa",
        &[&q.t, &k.t, &v.t],
        &[],
        move |t, _| attention::sdpa_forward(t[0], t[1], t[2], scale, is_causal),
    )?;
    tensor_tuple(py, vec![out, p])
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
    let ins = [&g.t, &q.t, &k.t, &v.t, &p.t];
    let grads = run(py, work(q, v), "sdpa_backward", &ins, &[], move |t, _| {
        attention::sdpa_backward(
            t[0],
            t[1],
            t[2],
            t[3],
            t[4],
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

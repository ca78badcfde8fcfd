//! Bindings of `ctc_loss`'s native forward and first-order backward
//! (`ops::ctc`). They make no autograd node; `ferrograd.nn._functional.ctc`
//! makes one.

use pyo3::prelude::*;

use super::capture::{run, run_tuple};
use super::functions::t_of;
use super::tensor::PyTensor;
use crate::ops;

/// `(nll, alpha, logp)` of a `(T, N, C)` batch of log-probabilities:
/// `labels[n]` is sample `n`'s label sequence, `frames[n]` its input length.
#[pyfunction]
fn _ctc_loss_forward(
    py: Python<'_>,
    log_probs: &Bound<'_, PyTensor>,
    labels: Vec<Vec<i64>>,
    frames: Vec<usize>,
    blank: usize,
    zero_infinity: bool,
) -> PyResult<Py<PyAny>> {
    let lp = t_of(log_probs);
    let work = lp.numel().saturating_mul(2);
    run_tuple(py, work, "ctc_loss_forward", &[lp], &[], move |t, _| {
        ops::ctc_forward(t[0], &labels, &frames, blank, zero_infinity)
    })
}

/// The gradient with respect to `log_probs` of `sum(grad * nll)`, from what
/// `_ctc_loss_forward` returned.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _ctc_loss_backward(
    py: Python<'_>,
    log_probs: &Bound<'_, PyTensor>,
    grad: &Bound<'_, PyTensor>,
    alpha: &Bound<'_, PyTensor>,
    logp: &Bound<'_, PyTensor>,
    labels: Vec<Vec<i64>>,
    frames: Vec<usize>,
    blank: usize,
) -> PyResult<Py<PyAny>> {
    let ins = [log_probs, grad, alpha, logp].map(t_of);
    let work = ins[0].numel().saturating_mul(4);
    let out = run(py, work, "ctc_loss_backward", &ins, &[], move |t, _| {
        ops::ctc_backward(t[0], t[1], t[2], t[3], &labels, &frames, blank)
    })?;
    super::tensor::wrap(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_ctc_loss_forward, m)?)?;
    m.add_function(wrap_pyfunction!(_ctc_loss_backward, m)?)?;
    Ok(())
}

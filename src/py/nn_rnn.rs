//! Bindings of the fused recurrent-layer loops (`ops::rnn`). They record
//! nothing; `ferrograd.nn._functional.rnn` makes them one autograd node.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::errors::guard_nogil;
use super::tensor::{wrap, PyTensor};
use crate::ops::rnn;
use crate::tensor::Tensor;

fn t_of<'a>(obj: &'a Bound<'_, PyTensor>) -> &'a Tensor {
    &obj.get().t
}

fn tuple_of(py: Python<'_>, ts: Vec<Tensor>) -> PyResult<Py<PyAny>> {
    let objs = ts
        .into_iter()
        .map(|t| wrap(py, t))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, objs)?.into_any().unbind())
}

/// `(out, h_n, c_n, gates, c, c_prev, h_prev)` of one LSTM layer direction.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _lstm_layer_forward(
    py: Python<'_>,
    gi: &Bound<'_, PyTensor>,
    h0: &Bound<'_, PyTensor>,
    c0: &Bound<'_, PyTensor>,
    w_hh: &Bound<'_, PyTensor>,
    b_hh: Option<&Bound<'_, PyTensor>>,
    batch_sizes: Vec<usize>,
    reverse: bool,
) -> PyResult<Py<PyAny>> {
    let (gi, h0, c0, w) = (t_of(gi), t_of(h0), t_of(c0), t_of(w_hh));
    let b = b_hh.map(t_of);
    let work = gi
        .numel()
        .saturating_mul(h0.shape().last().copied().unwrap_or(1));
    let out = guard_nogil(py, work, || {
        rnn::lstm_layer_forward(gi, h0, c0, w, b, &batch_sizes, reverse)
    })?;
    tuple_of(py, out)
}

/// `(d_gates, d_h0, d_c0)` of one LSTM layer direction.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _lstm_layer_backward(
    py: Python<'_>,
    g_out: &Bound<'_, PyTensor>,
    g_hn: &Bound<'_, PyTensor>,
    g_cn: &Bound<'_, PyTensor>,
    gates: &Bound<'_, PyTensor>,
    c: &Bound<'_, PyTensor>,
    c_prev: &Bound<'_, PyTensor>,
    w_hh: &Bound<'_, PyTensor>,
    batch_sizes: Vec<usize>,
    reverse: bool,
) -> PyResult<Py<PyAny>> {
    let ts = [g_out, g_hn, g_cn, gates, c, c_prev, w_hh].map(t_of);
    let work = ts[3]
        .numel()
        .saturating_mul(ts[1].shape().last().copied().unwrap_or(1));
    let out = guard_nogil(py, work, || {
        rnn::lstm_layer_backward(
            ts[0],
            ts[1],
            ts[2],
            ts[3],
            ts[4],
            ts[5],
            ts[6],
            &batch_sizes,
            reverse,
        )
    })?;
    tuple_of(py, out)
}

/// `(out, h_n, gates, h_prev)` of one GRU layer direction.
#[pyfunction]
fn _gru_layer_forward(
    py: Python<'_>,
    gi: &Bound<'_, PyTensor>,
    h0: &Bound<'_, PyTensor>,
    w_hh: &Bound<'_, PyTensor>,
    b_hh: Option<&Bound<'_, PyTensor>>,
    batch_sizes: Vec<usize>,
    reverse: bool,
) -> PyResult<Py<PyAny>> {
    let (gi, h0, w) = (t_of(gi), t_of(h0), t_of(w_hh));
    let b = b_hh.map(t_of);
    let work = gi
        .numel()
        .saturating_mul(h0.shape().last().copied().unwrap_or(1));
    let out = guard_nogil(py, work, || {
        rnn::gru_layer_forward(gi, h0, w, b, &batch_sizes, reverse)
    })?;
    tuple_of(py, out)
}

/// `(d_gi, d_gh, d_h0)` of one GRU layer direction.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _gru_layer_backward(
    py: Python<'_>,
    g_out: &Bound<'_, PyTensor>,
    g_hn: &Bound<'_, PyTensor>,
    gates: &Bound<'_, PyTensor>,
    h_prev: &Bound<'_, PyTensor>,
    w_hh: &Bound<'_, PyTensor>,
    batch_sizes: Vec<usize>,
    reverse: bool,
) -> PyResult<Py<PyAny>> {
    let ts = [g_out, g_hn, gates, h_prev, w_hh].map(t_of);
    let work = ts[2]
        .numel()
        .saturating_mul(ts[1].shape().last().copied().unwrap_or(1));
    let out = guard_nogil(py, work, || {
        rnn::gru_layer_backward(ts[0], ts[1], ts[2], ts[3], ts[4], &batch_sizes, reverse)
    })?;
    tuple_of(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_lstm_layer_forward, m)?)?;
    m.add_function(wrap_pyfunction!(_lstm_layer_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_gru_layer_forward, m)?)?;
    m.add_function(wrap_pyfunction!(_gru_layer_backward, m)?)?;
    Ok(())
}

//! Bindings of the fused recurrent-layer loops (`ops::rnn`). They make no
//! autograd node; `ferrograd.nn._functional.rnn` makes them one.

use pyo3::prelude::*;

use super::capture::{run, run_tuple, Opt};
use super::tensor::{wrap_optional_tuple, PyTensor};
use crate::ops::rnn;
use crate::tensor::Tensor;

fn t_of<'a>(obj: &'a Bound<'_, PyTensor>) -> &'a Tensor {
    &obj.get().t
}

/// `(out, h_n, c_n, gates, c, c_prev, h_prev)` of one LSTM layer direction
/// over the packed input `x`.
#[pyfunction]
#[pyo3(signature = (x, h0, c0, w_ih, w_hh, b_ih, b_hh, batch_sizes, reverse))]
#[allow(clippy::too_many_arguments)]
fn _lstm_layer_forward(
    py: Python<'_>,
    x: &Bound<'_, PyTensor>,
    h0: &Bound<'_, PyTensor>,
    c0: &Bound<'_, PyTensor>,
    w_ih: &Bound<'_, PyTensor>,
    w_hh: &Bound<'_, PyTensor>,
    b_ih: Option<&Bound<'_, PyTensor>>,
    b_hh: Option<&Bound<'_, PyTensor>>,
    batch_sizes: Vec<usize>,
    reverse: bool,
) -> PyResult<Py<PyAny>> {
    let [x, h0, c0, w_ih, w_hh] = [x, h0, c0, w_ih, w_hh].map(t_of);
    let (b_ih, b_hh) = (b_ih.map(t_of), b_hh.map(t_of));
    let work = x
        .numel()
        .saturating_add(h0.numel())
        .saturating_mul(w_hh.numel().max(1));
    let (ins, opt) = Opt::inputs(&[x, h0, c0, w_ih, w_hh], &[b_ih, b_hh]);
    run_tuple(py, work, "lstm_layer", &ins, &[], move |t, _| {
        let (b_ih, b_hh) = (opt.get(t, 0), opt.get(t, 1));
        rnn::lstm_layer_forward(
            t[0],
            t[1],
            t[2],
            t[3],
            t[4],
            b_ih,
            b_hh,
            &batch_sizes,
            reverse,
        )
    })
}

/// `(dx, d_h0, d_c0, d_w_ih, d_w_hh, d_bias)` of one LSTM layer direction,
/// each `None` unless `needs` (`x`, `w_ih`, `w_hh`, biases) asked for it.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _lstm_layer_backward(
    py: Python<'_>,
    x: &Bound<'_, PyTensor>,
    g_out: &Bound<'_, PyTensor>,
    g_hn: &Bound<'_, PyTensor>,
    g_cn: &Bound<'_, PyTensor>,
    saved: [Bound<'_, PyTensor>; 4],
    w_ih: &Bound<'_, PyTensor>,
    w_hh: &Bound<'_, PyTensor>,
    batch_sizes: Vec<usize>,
    reverse: bool,
    needs: (bool, bool, bool, bool),
) -> PyResult<Py<PyAny>> {
    let [x, g_out, g_hn, g_cn, w_ih, w_hh] = [x, g_out, g_hn, g_cn, w_ih, w_hh].map(t_of);
    let saved = [&saved[0], &saved[1], &saved[2], &saved[3]].map(t_of);
    let work = saved[0]
        .numel()
        .saturating_mul(g_hn.shape().last().copied().unwrap_or(1));
    let ins = [
        x, g_out, g_hn, g_cn, saved[0], saved[1], saved[2], saved[3], w_ih, w_hh,
    ];
    let out = run(py, work, "lstm_layer_backward", &ins, &[], move |t, _| {
        let saved = [t[4], t[5], t[6], t[7]];
        rnn::lstm_layer_backward(
            t[0],
            t[1],
            t[2],
            t[3],
            saved,
            t[8],
            t[9],
            &batch_sizes,
            reverse,
            needs,
        )
    })?;
    wrap_optional_tuple(py, out)
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
    let (ins, opt) = Opt::inputs(&[gi, h0, w], &[b]);
    run_tuple(py, work, "gru_layer", &ins, &[], move |t, _| {
        rnn::gru_layer_forward(t[0], t[1], t[2], opt.get(t, 0), &batch_sizes, reverse)
    })
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
    run_tuple(py, work, "gru_layer_backward", &ts, &[], move |t, _| {
        rnn::gru_layer_backward(t[0], t[1], t[2], t[3], t[4], &batch_sizes, reverse)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_lstm_layer_forward, m)?)?;
    m.add_function(wrap_pyfunction!(_lstm_layer_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_gru_layer_forward, m)?)?;
    m.add_function(wrap_pyfunction!(_gru_layer_backward, m)?)?;
    Ok(())
}

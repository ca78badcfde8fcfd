//! Whole-sequence LSTM/GRU loops on plain tensors (no graph is recorded here:
//! the Python layer wraps them in one autograd node per layer and direction,
//! whose backward calls the `*_backward` functions, or differentiates the
//! composite form when a graph of the backward is wanted).

use crate::error::{Error, Result};
use crate::kernels::rnn::{self, Steps};
use crate::tensor::{DType, Shape, Tensor};

fn float_dtype(ts: &[&Tensor]) -> Result<DType> {
    let dt = ts[0].dtype();
    if !dt.is_float() || ts.iter().any(|t| t.dtype() != dt) {
        return Err(Error::runtime(
            "rnn layer: expected tensors of one floating-point dtype",
        ));
    }
    Ok(dt)
}

fn expect_shape(t: &Tensor, shape: &[usize], what: &str) -> Result<()> {
    if t.shape().as_slice() != shape {
        return Err(Error::runtime(format!(
            "rnn layer: expected {what} of shape {shape:?}, got {:?}",
            t.shape().as_slice()
        )));
    }
    Ok(())
}

/// Checks the packed layout and the shapes shared by both cells; returns the
/// step description. `gates` is the gate count (4 for LSTM, 3 for GRU).
fn steps(
    gi: &Tensor,
    h0: &Tensor,
    w_hh: &Tensor,
    b_hh: Option<&Tensor>,
    sizes: &[usize],
    reverse: bool,
    gates: usize,
) -> Result<Steps> {
    let hidden = h0.shape().last().copied().unwrap_or(0);
    if sizes.is_empty() || sizes.contains(&0) || sizes.windows(2).any(|w| w[1] > w[0]) {
        return Err(Error::runtime(
            "rnn layer: batch sizes must be positive and non-increasing",
        ));
    }
    let s = Steps::new(hidden, sizes.to_vec(), reverse);
    expect_shape(gi, &[s.rows(), gates * hidden], "input projections")?;
    expect_shape(h0, &[s.batch, hidden], "initial state")?;
    expect_shape(w_hh, &[gates * hidden, hidden], "weight_hh")?;
    if let Some(b) = b_hh {
        expect_shape(b, &[gates * hidden], "bias_hh")?;
    }
    Ok(s)
}

/// The elements of a contiguous view (made so by `contiguous_data`).
fn slice<T: crate::tensor::Element>(v: &crate::tensor::View) -> &[T] {
    v.as_slice::<T>().unwrap_or(&[])
}

fn shape2(a: usize, b: usize) -> Shape {
    Shape::from_slice(&[a, b])
}

/// LSTM over a packed sequence: returns `[out, h_n, c_n, gates, c, c_prev,
/// h_prev]` (the last four are what backward needs).
pub fn lstm_layer_forward(
    gi: &Tensor,
    h0: &Tensor,
    c0: &Tensor,
    w_hh: &Tensor,
    b_hh: Option<&Tensor>,
    sizes: &[usize],
    reverse: bool,
) -> Result<Vec<Tensor>> {
    let mut all = vec![gi, h0, c0, w_hh];
    all.extend(b_hh);
    let dt = float_dtype(&all)?;
    let s = steps(gi, h0, w_hh, b_hh, sizes, reverse, 4)?;
    expect_shape(c0, &[s.batch, s.hidden], "initial cell state")?;
    let (n, h) = (s.rows(), s.hidden);
    let (gi, h0, c0, w) = (
        gi.contiguous_data(),
        h0.contiguous_data(),
        c0.contiguous_data(),
        w_hh.contiguous_data(),
    );
    let b = b_hh.map(|b| b.contiguous_data());
    Ok(crate::dispatch_float!(dt, T => {
        let (vg, vh, vc, vw) = (gi.view(), h0.view(), c0.view(), w.view());
        let vb = b.as_ref().map(|b| b.view());
        let f = rnn::lstm_forward::<T>(
            &s,
            slice::<T>(&vg),
            slice::<T>(&vh),
            slice::<T>(&vc),
            slice::<T>(&vw),
            vb.as_deref().map(slice::<T>),
        );
        vec![
            Tensor::from_vec(f.out, shape2(n, h)),
            Tensor::from_vec(f.h_n, shape2(s.batch, h)),
            Tensor::from_vec(f.c_n, shape2(s.batch, h)),
            Tensor::from_vec(f.gates, shape2(n, 4 * h)),
            Tensor::from_vec(f.c, shape2(n, h)),
            Tensor::from_vec(f.c_prev, shape2(n, h)),
            Tensor::from_vec(f.h_prev, shape2(n, h)),
        ]
    }))
}

/// Backward of [`lstm_layer_forward`]: `[d_gates, d_h0, d_c0]`, `d_gates` being
/// the gradient of both `gi` and the recurrent product.
#[allow(clippy::too_many_arguments)]
pub fn lstm_layer_backward(
    g_out: &Tensor,
    g_hn: &Tensor,
    g_cn: &Tensor,
    gates: &Tensor,
    c: &Tensor,
    c_prev: &Tensor,
    w_hh: &Tensor,
    sizes: &[usize],
    reverse: bool,
) -> Result<Vec<Tensor>> {
    let dt = float_dtype(&[g_out, g_hn, g_cn, gates, c, c_prev, w_hh])?;
    let s = steps(gates, g_hn, w_hh, None, sizes, reverse, 4)?;
    let (n, h) = (s.rows(), s.hidden);
    let shapes: [(&Tensor, [usize; 2], &str); 4] = [
        (g_out, [n, h], "output gradient"),
        (g_cn, [s.batch, h], "cell state gradient"),
        (c, [n, h], "cell states"),
        (c_prev, [n, h], "previous cell states"),
    ];
    for (t, shape, what) in shapes {
        expect_shape(t, &shape, what)?;
    }
    let ts: Vec<Tensor> = [g_out, g_hn, g_cn, gates, c, c_prev, w_hh]
        .iter()
        .map(|t| t.contiguous_data())
        .collect();
    Ok(crate::dispatch_float!(dt, T => {
        let views: Vec<_> = ts.iter().map(|t| t.view()).collect();
        let sl: Vec<&[T]> = views.iter().map(|v| v.as_slice::<T>().unwrap_or(&[])).collect();
        let (d, dh, dc) = rnn::lstm_backward::<T>(
            &s,
            &rnn::LstmForwardRef { gates: sl[3], c: sl[4], c_prev: sl[5] },
            sl[0],
            sl[1],
            sl[2],
            sl[6],
        );
        vec![
            Tensor::from_vec(d, shape2(n, 4 * h)),
            Tensor::from_vec(dh, shape2(s.batch, h)),
            Tensor::from_vec(dc, shape2(s.batch, h)),
        ]
    }))
}

/// GRU over a packed sequence: returns `[out, h_n, gates, h_prev]`.
pub fn gru_layer_forward(
    gi: &Tensor,
    h0: &Tensor,
    w_hh: &Tensor,
    b_hh: Option<&Tensor>,
    sizes: &[usize],
    reverse: bool,
) -> Result<Vec<Tensor>> {
    let mut all = vec![gi, h0, w_hh];
    all.extend(b_hh);
    let dt = float_dtype(&all)?;
    let s = steps(gi, h0, w_hh, b_hh, sizes, reverse, 3)?;
    let (n, h) = (s.rows(), s.hidden);
    let (gi, h0, w) = (
        gi.contiguous_data(),
        h0.contiguous_data(),
        w_hh.contiguous_data(),
    );
    let b = b_hh.map(|b| b.contiguous_data());
    Ok(crate::dispatch_float!(dt, T => {
        let (vg, vh, vw) = (gi.view(), h0.view(), w.view());
        let vb = b.as_ref().map(|b| b.view());
        let f = rnn::gru_forward::<T>(&s, slice::<T>(&vg), slice::<T>(&vh), slice::<T>(&vw), vb.as_deref().map(slice::<T>));
        vec![
            Tensor::from_vec(f.out, shape2(n, h)),
            Tensor::from_vec(f.h_n, shape2(s.batch, h)),
            Tensor::from_vec(f.gates, shape2(n, 4 * h)),
            Tensor::from_vec(f.h_prev, shape2(n, h)),
        ]
    }))
}

/// Backward of [`gru_layer_forward`]: `[d_gi, d_gh, d_h0]`, `d_gh` being the
/// gradient of the recurrent product `h W_hh^T + b_hh`.
pub fn gru_layer_backward(
    g_out: &Tensor,
    g_hn: &Tensor,
    gates: &Tensor,
    h_prev: &Tensor,
    w_hh: &Tensor,
    sizes: &[usize],
    reverse: bool,
) -> Result<Vec<Tensor>> {
    let dt = float_dtype(&[g_out, g_hn, gates, h_prev, w_hh])?;
    let hidden = g_hn.shape().last().copied().unwrap_or(0);
    let n: usize = sizes.iter().sum();
    // `gates` is [N, 4H]; check it and the rest against a [N, 3H] stand-in.
    expect_shape(gates, &[n, 4 * hidden], "saved gates")?;
    let s = steps(
        &Tensor::zeros(shape2(n, 3 * hidden), dt),
        g_hn,
        w_hh,
        None,
        sizes,
        reverse,
        3,
    )?;
    expect_shape(g_out, &[n, hidden], "output gradient")?;
    expect_shape(h_prev, &[n, hidden], "previous states")?;
    let ts: Vec<Tensor> = [g_out, g_hn, gates, h_prev, w_hh]
        .iter()
        .map(|t| t.contiguous_data())
        .collect();
    Ok(crate::dispatch_float!(dt, T => {
        let views: Vec<_> = ts.iter().map(|t| t.view()).collect();
        let sl: Vec<&[T]> = views.iter().map(|v| v.as_slice::<T>().unwrap_or(&[])).collect();
        let (d_gi, d_gh, dh) = rnn::gru_backward::<T>(&s, sl[2], sl[3], sl[0], sl[1], sl[4]);
        vec![
            Tensor::from_vec(d_gi, shape2(n, 3 * hidden)),
            Tensor::from_vec(d_gh, shape2(n, 3 * hidden)),
            Tensor::from_vec(dh, shape2(s.batch, hidden)),
        ]
    }))
}

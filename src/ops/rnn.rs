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

/// float16/bfloat16 layers run in float32, each result rounded once.
fn f32_of(t: &Tensor) -> Tensor {
    super::cast_data(t, DType::F32)
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

/// Checks the packed layout, the initial state and the recurrent weight;
/// returns the step description. `gates` is the gate count (4 for LSTM, 3
/// for GRU).
fn layout(
    h0: &Tensor,
    w_hh: &Tensor,
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
    expect_shape(h0, &[s.batch, hidden], "initial state")?;
    expect_shape(w_hh, &[gates * hidden, hidden], "weight_hh")?;
    Ok(s)
}

/// [`layout`], and the input projections `gi` and `b_hh` of a GRU layer.
fn steps(
    gi: &Tensor,
    h0: &Tensor,
    w_hh: &Tensor,
    b_hh: Option<&Tensor>,
    sizes: &[usize],
    reverse: bool,
    gates: usize,
) -> Result<Steps> {
    let s = layout(h0, w_hh, sizes, reverse, gates)?;
    expect_shape(gi, &[s.rows(), gates * s.hidden], "input projections")?;
    if let Some(b) = b_hh {
        expect_shape(b, &[gates * s.hidden], "bias_hh")?;
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

/// The input width of an LSTM layer, after checking
/// `x` `[N, input]`, `w_ih` `[4H, input]` and the biases `[4H]`.
fn lstm_input(
    s: &Steps,
    x: &Tensor,
    w_ih: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
) -> Result<usize> {
    let g4 = 4 * s.hidden;
    let input = match w_ih.shape().as_slice() {
        [rows, cols] if *rows == g4 => *cols,
        other => {
            return Err(Error::runtime(format!(
                "rnn layer: expected weight_ih of shape [{g4}, input_size], got {other:?}"
            )))
        }
    };
    expect_shape(x, &[s.rows(), input], "input")?;
    for (b, what) in [(b_ih, "bias_ih"), (b_hh, "bias_hh")] {
        if let Some(b) = b {
            expect_shape(b, &[g4], what)?;
        }
    }
    Ok(input)
}

/// LSTM layer over a packed sequence `x` `[N, input]`: returns `[out, h_n,
/// c_n, gates, c, c_prev, h_prev]` (the last four are what backward needs).
#[allow(clippy::too_many_arguments)]
pub fn lstm_layer_forward(
    x: &Tensor,
    h0: &Tensor,
    c0: &Tensor,
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
    sizes: &[usize],
    reverse: bool,
) -> Result<Vec<Tensor>> {
    let mut all = vec![x, h0, c0, w_ih, w_hh];
    all.extend(b_ih);
    all.extend(b_hh);
    let dt = float_dtype(&all)?;
    if dt.is_low_precision() {
        let (b_ih, b_hh) = (b_ih.map(f32_of), b_hh.map(f32_of));
        let out = lstm_layer_forward(
            &f32_of(x),
            &f32_of(h0),
            &f32_of(c0),
            &f32_of(w_ih),
            &f32_of(w_hh),
            b_ih.as_ref(),
            b_hh.as_ref(),
            sizes,
            reverse,
        )?;
        return Ok(out.into_iter().map(|t| super::back_to(t, dt)).collect());
    }
    let s = layout(h0, w_hh, sizes, reverse, 4)?;
    expect_shape(c0, &[s.batch, s.hidden], "initial cell state")?;
    let input = lstm_input(&s, x, w_ih, b_ih, b_hh)?;
    let (n, h) = (s.rows(), s.hidden);
    let mut ts: Vec<Tensor> = [x, h0, c0, w_ih, w_hh]
        .iter()
        .map(|t| t.contiguous_data())
        .collect();
    let biases = [b_ih, b_hh].iter().flatten().count();
    ts.extend(
        [b_ih, b_hh]
            .into_iter()
            .flatten()
            .map(|b| b.contiguous_data()),
    );
    Ok(crate::dispatch_float!(dt, T => {
        let views: Vec<_> = ts.iter().map(|t| t.view()).collect();
        let sl: Vec<&[T]> = views.iter().map(|v| slice::<T>(v)).collect();
        // Both biases only ever enter added: the loop starts from their sum.
        let bias: Option<Vec<T>> = match biases {
            2 => Some(sl[5].iter().zip(sl[6]).map(|(&a, &b)| a + b).collect()),
            1 => Some(sl[5].to_vec()),
            _ => None,
        };
        let w = rnn::LstmWeights { input, w_ih: sl[3], w_hh: sl[4], bias: bias.as_deref() };
        let f = rnn::lstm_forward::<T>(&s, sl[0], sl[1], sl[2], &w);
        vec![
            Tensor::from_vec(f.out, shape2(n, h)),
            Tensor::from_vec(f.h_n, shape2(s.batch, h)),
            Tensor::from_vec(f.c_n, shape2(s.batch, h)),
            Tensor::from_vec(f.gates, shape2(n, 4 * h)),
            Tensor::from_vec(f.c_tanh, shape2(n, h)),
            Tensor::from_vec(f.c_prev, shape2(n, h)),
            Tensor::from_vec(f.h_prev, shape2(n, h)),
        ]
    }))
}

/// Which gradients [`lstm_layer_backward`] makes: of `x`, `w_ih`, `w_hh`,
/// and of the biases.
pub type LstmNeeds = (bool, bool, bool, bool);

/// Backward of [`lstm_layer_forward`]: `[dx, dh0, dc0, dw_ih, dw_hh, db]`,
/// `None` where `needs` did not ask; `db` is the gradient of each bias.
#[allow(clippy::too_many_arguments)]
pub fn lstm_layer_backward(
    x: &Tensor,
    g_out: &Tensor,
    g_hn: &Tensor,
    g_cn: &Tensor,
    saved: [&Tensor; 4],
    w_ih: &Tensor,
    w_hh: &Tensor,
    sizes: &[usize],
    reverse: bool,
    needs: LstmNeeds,
) -> Result<Vec<Option<Tensor>>> {
    let [gates, c, c_prev, h_prev] = saved;
    let dt = float_dtype(&[x, g_out, g_hn, g_cn, gates, c, c_prev, h_prev, w_ih, w_hh])?;
    if dt.is_low_precision() {
        let f: Vec<Tensor> = [x, g_out, g_hn, g_cn, gates, c, c_prev, h_prev, w_ih, w_hh]
            .iter()
            .map(|t| f32_of(t))
            .collect();
        let out = lstm_layer_backward(
            &f[0],
            &f[1],
            &f[2],
            &f[3],
            [&f[4], &f[5], &f[6], &f[7]],
            &f[8],
            &f[9],
            sizes,
            reverse,
            needs,
        )?;
        return Ok(out
            .into_iter()
            .map(|t| t.map(|t| super::back_to(t, dt)))
            .collect());
    }
    let s = layout(g_hn, w_hh, sizes, reverse, 4)?;
    let input = lstm_input(&s, x, w_ih, None, None)?;
    let (n, h) = (s.rows(), s.hidden);
    let shapes: [(&Tensor, [usize; 2], &str); 6] = [
        (g_out, [n, h], "output gradient"),
        (g_cn, [s.batch, h], "cell state gradient"),
        (gates, [n, 4 * h], "saved gates"),
        (c, [n, h], "tanh of the cell states"),
        (c_prev, [n, h], "previous cell states"),
        (h_prev, [n, h], "previous hidden states"),
    ];
    for (t, shape, what) in shapes {
        expect_shape(t, &shape, what)?;
    }
    let ts: Vec<Tensor> = [x, g_out, g_hn, g_cn, gates, c, c_prev, h_prev, w_ih, w_hh]
        .iter()
        .map(|t| t.contiguous_data())
        .collect();
    let (nx, nih, nhh, nb) = needs;
    let needs = rnn::LstmNeeds {
        x: nx,
        w_ih: nih,
        w_hh: nhh,
        bias: nb,
    };
    Ok(crate::dispatch_float!(dt, T => {
        let views: Vec<_> = ts.iter().map(|t| t.view()).collect();
        let sl: Vec<&[T]> = views.iter().map(|v| slice::<T>(v)).collect();
        let saved = rnn::LstmForwardRef { gates: sl[4], c_tanh: sl[5], c_prev: sl[6], h_prev: sl[7] };
        let w = rnn::LstmWeights { input, w_ih: sl[8], w_hh: sl[9], bias: None };
        let g = rnn::lstm_backward::<T>(&s, &saved, sl[0], sl[1], sl[2], sl[3], &w, needs);
        let g4 = 4 * h;
        vec![
            g.dx.map(|v| Tensor::from_vec(v, shape2(n, input))),
            Some(Tensor::from_vec(g.dh0, shape2(s.batch, h))),
            Some(Tensor::from_vec(g.dc0, shape2(s.batch, h))),
            g.dw_ih.map(|v| Tensor::from_vec(v, shape2(g4, input))),
            g.dw_hh.map(|v| Tensor::from_vec(v, shape2(g4, h))),
            g.db.map(|v| Tensor::from_vec(v, Shape::from_slice(&[g4]))),
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
    if dt.is_low_precision() {
        let b = b_hh.map(f32_of);
        let out = gru_layer_forward(
            &f32_of(gi),
            &f32_of(h0),
            &f32_of(w_hh),
            b.as_ref(),
            sizes,
            reverse,
        )?;
        return Ok(out.into_iter().map(|t| super::back_to(t, dt)).collect());
    }
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
    if dt.is_low_precision() {
        let f = f32_of;
        let out = gru_layer_backward(
            &f(g_out),
            &f(g_hn),
            &f(gates),
            &f(h_prev),
            &f(w_hh),
            sizes,
            reverse,
        )?;
        return Ok(out.into_iter().map(|t| super::back_to(t, dt)).collect());
    }
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

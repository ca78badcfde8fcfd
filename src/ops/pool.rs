//! Pooling, resampling and constant padding.
//!
//! Average pooling and interpolation are linear maps applied plane by plane
//! (`kernels::pool::separable`); the backward is the adjoint map, recorded as
//! its own node whose backward is the forward map again, so every order of
//! gradient is exact. Max pooling saves where each maximum was; its backward
//! scatters the gradient there, through a fused kernel when nothing records
//! it and otherwise through `scatter_add`, whose backward (`gather`) makes
//! the second order exact.

use std::sync::Arc;

use smallvec::{smallvec, SmallVec};

use super::{reshape, scatter_add};
use crate::autograd::{is_grad_enabled, needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::max_pool::{self as kmp, Window};
use crate::kernels::pool::{self as kp, Taps};
use crate::saved;
use crate::tensor::{fmt_shape, DType, Shape, Tensor};

fn two(name: &str, op: &str, v: &[i64]) -> Result<[i64; 2]> {
    match v {
        [a] => Ok([*a, *a]),
        [a, b] => Ok([*a, *b]),
        _ => Err(Error::runtime(format!(
            "{op}: {name} must either be a single int, or a tuple of two ints"
        ))),
    }
}

fn float_only(x: &Tensor, op: &str) -> Result<()> {
    float_dtype(x.dtype(), op)
}

fn float_dtype(dt: DType, op: &str) -> Result<()> {
    if !dt.is_float() {
        return Err(Error::runtime(format!(
            "\"{op}\" not implemented for '{}'",
            dt.scalar_name()
        )));
    }
    Ok(())
}

/// A 3-d or 4-d input whose non-batch dimensions are non-empty.
pub(super) fn check_planes(s: &Shape, op: &str) -> Result<()> {
    let ok = match s.len() {
        3 => !s.contains(&0),
        4 => !s[1..].contains(&0),
        _ => false,
    };
    if !ok {
        return Err(Error::runtime(format!(
            "{op}: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: {}",
            fmt_shape(s)
        )));
    }
    Ok(())
}

/// PyTorch's `pooling_output_shape`.
pub(super) fn pooled_len(
    len: i64,
    k: i64,
    pad: i64,
    stride: i64,
    dilation: i64,
    ceil: bool,
) -> i64 {
    // In i128: the user's sizes are i64s, so no term overflows.
    let (len, k, pad, stride, dilation) = (
        len as i128,
        k as i128,
        pad as i128,
        stride as i128,
        dilation as i128,
    );
    let num = len + 2 * pad - dilation * (k - 1) - 1 + if ceil { stride - 1 } else { 0 };
    let mut out = num.div_euclid(stride) + 1;
    if ceil && (out - 1) * stride >= len + pad {
        out -= 1;
    }
    out.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// The result of a pooling or resampling of `x` to `out` (its last two
/// sizes) when it has no elements: made directly, since the per-axis tables
/// the kernels would build are as long as an output side, which may be huge
/// (`adaptive_avg_pool2d` of an empty batch to `2**30`). Its gradient is an
/// empty (or zero) tensor of `x`'s shape.
pub(super) fn empty_output(x: &Tensor, oshape: Shape, name: &'static str) -> Option<Tensor> {
    let shape = x.shape();
    if crate::tensor::numel(&oshape) != 0 {
        return None;
    }
    let y = Tensor::zeros(oshape, x.dtype());
    if needs_record(&[x]) {
        record(name, &[x], &y, saved![], move |c| {
            Ok(smallvec![Some(Tensor::zeros(
                shape.clone(),
                c.grad()?.dtype()
            ))])
        });
    }
    Some(y)
}

/// Fails unless the output of a pooling or resampling of `x` to `out`
/// (its last two sizes) can be allocated: checked before the per-axis tables,
/// which are as long as an output side, are built.
fn probe_output(shape: &Shape, dtype: DType, out: [usize; 2]) -> Result<()> {
    let planes: usize = shape[..shape.len().saturating_sub(2)].iter().product();
    let n = [planes, out[0], out[1]]
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= i64::MAX as usize)
        .ok_or_else(|| Error::runtime("numel: integer multiplication overflow"))?;
    crate::error::probe_alloc_sized(n, dtype.size());
    Ok(())
}

/// Pooling hyper-parameters, checked, with the output size.
pub(super) struct Pool {
    pub(super) k: [i64; 2],
    pub(super) s: [i64; 2],
    pub(super) p: [i64; 2],
    pub(super) d: [i64; 2],
    pub(super) out: [i64; 2],
    pub(super) size: [usize; 2],
}

#[allow(clippy::too_many_arguments)]
pub(super) fn pool_params(
    sh: &Shape,
    dtype: DType,
    op: &str,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil: bool,
    max: bool,
) -> Result<Pool> {
    let k = two("kernel_size", op, kernel)?;
    let s = if stride.is_empty() {
        k
    } else {
        two("stride", op, stride)?
    };
    let p = two("padding", op, padding)?;
    let d = two("dilation", op, dilation)?;
    if k.iter().any(|&v| v <= 0) {
        return Err(Error::runtime(format!(
            "kernel size should be greater than zero, but got kH: {} kW: {}",
            k[0], k[1]
        )));
    }
    if s.iter().any(|&v| v <= 0) {
        return Err(Error::runtime(format!(
            "stride should be greater than zero, but got dH: {} dW: {}",
            s[0], s[1]
        )));
    }
    if d.iter().any(|&v| v <= 0) {
        return Err(Error::runtime(format!(
            "dilation should be greater than zero, but got dilationH: {} dilationW: {}",
            d[0], d[1]
        )));
    }
    check_planes(sh, op)?;
    float_dtype(dtype, op)?;
    if p.iter().any(|&v| v < 0) || p[0] > k[0] / 2 || p[1] > k[1] / 2 {
        let msg = if max {
            format!(
                "pad should be smaller than or equal to half of kernel size, but got padW = {}, padH = {}, kW = {}, kH = {}",
                p[1], p[0], k[1], k[0]
            )
        } else {
            "pad should be at most half of effective kernel size".to_string()
        };
        return Err(Error::runtime(msg));
    }
    let nd = sh.len();
    let size = [sh[nd - 2], sh[nd - 1]];
    let out: [i64; 2] =
        std::array::from_fn(|i| pooled_len(size[i] as i64, k[i], p[i], s[i], d[i], ceil));
    if out.iter().any(|&o| o < 1) {
        return Err(Error::runtime(format!(
            "Given input size: ({}x{}x{}). Calculated output size: ({}x{}x{}). Output size is too small",
            sh[nd - 3], size[0], size[1], sh[nd - 3], out[0], out[1]
        )));
    }
    probe_output(sh, dtype, [out[0] as usize, out[1] as usize])?;
    Ok(Pool {
        k,
        s,
        p,
        d,
        out,
        size,
    })
}

fn out_shape(x: &Shape, out: [usize; 2]) -> Shape {
    let mut s = x.clone();
    let nd = s.len();
    s[nd - 2] = out[0];
    s[nd - 1] = out[1];
    s
}

// ----- max pooling ---------------------------------------------------------------------------

/// `max_pool2d_with_indices` (`MaxPool2DWithIndicesBackward0`).
pub fn max_pool2d_with_indices(
    x: &Tensor,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    let (out, idx) = max_pool2d_impl(x, [kernel, stride, padding, dilation], ceil_mode, true)?;
    let idx = idx.unwrap_or_else(|| Tensor::zeros(out.shape(), crate::tensor::DType::I64));
    Ok((out, idx))
}

/// `max_pool2d` without its indices: they are found only when the
/// backward needs them (PyTorch's no-grad forward skips them too; writing
/// them was half of a 1-d pooling's memory traffic).
pub fn max_pool2d(
    x: &Tensor,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(max_pool2d_impl(x, [kernel, stride, padding, dilation], ceil_mode, false)?.0)
}

fn max_pool2d_impl(
    x: &Tensor,
    [kernel, stride, padding, dilation]: [&[i64]; 4],
    ceil_mode: bool,
    indices: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let pp = pool_params(
        &x.shape(),
        x.dtype(),
        "max_pool2d",
        kernel,
        stride,
        padding,
        dilation,
        ceil_mode,
        true,
    )?;
    let oshape = out_shape(&x.shape(), [pp.out[0] as usize, pp.out[1] as usize]);
    if let Some(empty) = empty_output(x, oshape, "MaxPool2DWithIndicesBackward0") {
        let idx = Tensor::zeros(empty.shape(), crate::tensor::DType::I64);
        return Ok((empty, Some(idx)));
    }
    let win: [Window; 2] = std::array::from_fn(|a| {
        max_window(
            pp.size[a] as i64,
            [pp.k[a], pp.s[a], pp.p[a], pp.d[a]],
            pp.out[a],
        )
    });
    max_op(x, win, "MaxPool2DWithIndicesBackward0", indices)
}

/// The windows of `out` max-pooling outputs along an axis of `len` inputs,
/// `kspd` its kernel size, stride, padding and dilation: the taps inside the input.
pub(super) fn max_window(len: i64, kspd: [i64; 4], out: i64) -> Window {
    let [k, s, p, d] = kspd;
    let mut w = Window {
        len_in: len as usize,
        step: d as usize,
        ..Default::default()
    };
    for o in 0..out {
        let start = o * s - p;
        // The first and last tap inside [0, len).
        let first = if start < 0 { (-start + d - 1) / d } else { 0 };
        let last = (k - 1).min((len - 1 - start).div_euclid(d));
        crate::error::reserve_more(&mut w.start, 1);
        crate::error::reserve_more(&mut w.count, 1);
        w.start.push((start + first * d).max(0) as usize);
        w.count.push((last - first + 1).max(0) as usize);
    }
    w
}

/// The adaptive windows of `out` outputs along an axis of `len` inputs.
pub(super) fn adaptive_window(len: usize, out: usize) -> Window {
    let mut w = Window {
        len_in: len,
        step: 1,
        ..Default::default()
    };
    for o in 0..out {
        let (lo, hi) = adaptive_range(o, len, out);
        crate::error::reserve_more(&mut w.start, 1);
        crate::error::reserve_more(&mut w.count, 1);
        w.start.push(lo);
        w.count.push(hi - lo);
    }
    w
}

/// `adaptive_max_pool2d` with indices (`AdaptiveMaxPool2DBackward0`).
pub fn adaptive_max_pool2d(x: &Tensor, output_size: &[i64]) -> Result<(Tensor, Tensor)> {
    let (size, out) = adaptive_sizes(&x.shape(), x.dtype(), "adaptive_max_pool2d", output_size)?;
    if let Some(empty) = empty_output(x, out_shape(&x.shape(), out), "AdaptiveMaxPool2DBackward0") {
        let idx = Tensor::zeros(empty.shape(), crate::tensor::DType::I64);
        return Ok((empty, idx));
    }
    let win: [Window; 2] = std::array::from_fn(|a| adaptive_window(size[a], out[a]));
    let (o, idx) = max_op(x, win, "AdaptiveMaxPool2DBackward0", true)?;
    let idx = idx.unwrap_or_else(|| Tensor::zeros(o.shape(), crate::tensor::DType::I64));
    Ok((o, idx))
}

/// Max pooling over the windows `win` of the last two dimensions: the
/// values, and the indices when `indices` asks or the backward needs them.
fn max_op(
    x: &Tensor,
    win: [Window; 2],
    name: &'static str,
    indices: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let shape = x.shape();
    let (h, w) = (win[0].len_in, win[1].len_in);
    let planes = x.numel() / (h * w).max(1);
    let oshape = out_shape(&shape, [win[0].len_out(), win[1].len_out()]);
    let recording = needs_record(&[x]);
    let keep = indices || recording;
    let (out, idx) = {
        // float16/bfloat16 in float32: a maximum is exact in either.
        let xc = super::compute_contig(x);
        let v = xc.view();
        let (o, i) = crate::dispatch_float!(xc.dtype(), T => {
            let xs = v.as_slice::<T>().unwrap_or(&[]);
            let (o, i) = kmp::max_pool::<T>(xs, planes, &win[0], &win[1], keep);
            (Tensor::from_vec(o, oshape.clone()), keep.then(|| Tensor::from_vec(i, oshape.clone())))
        });
        (super::back_to(o, x.dtype()), i)
    };
    if let (true, Some(idx)) = (recording, &idx) {
        record(name, &[x], &out, saved![idx], move |c| {
            let (g, idx) = (c.grad()?, c.saved(0)?);
            Ok(smallvec![Some(max_backward(g, idx, &shape, 2)?)])
        });
    }
    Ok((out, idx))
}

/// Sends each output's gradient to where its maximum was, `idx` indexing
/// the input's last `pooled` dimensions flattened.
pub(super) fn max_backward(
    g: &Tensor,
    idx: &Tensor,
    in_shape: &Shape,
    pooled: usize,
) -> Result<Tensor> {
    let nd = in_shape.len();
    let plane: usize = in_shape[nd - pooled..].iter().product();
    let planes: usize = in_shape[..nd - pooled].iter().product();
    let per = idx.numel() / planes.max(1);
    if !is_grad_enabled() || !g.requires_grad() {
        let gc = super::compute_contig(g);
        let ic = idx.contiguous_data();
        let (vg, vi) = (gc.view(), ic.view());
        return Ok(
            crate::dispatch_float_compute!(g.dtype(), T => Tensor::from_vec(
                kmp::scatter_planes::<T>(
                    vg.as_slice::<T>().unwrap_or(&[]),
                    vi.as_slice::<i64>().unwrap_or(&[]),
                    planes,
                    plane,
                ),
                in_shape.clone(),
            )),
        );
    }
    let zeros = Tensor::zeros(Shape::from_slice(&[planes, plane]), g.dtype());
    let gx = scatter_add(
        &zeros,
        1,
        &reshape(idx, &[planes, per])?,
        &reshape(g, &[planes, per])?,
    )?;
    reshape(&gx, in_shape)
}

// ----- adaptive ranges -----------------------------------------------------------------------

/// PyTorch's adaptive window of output `o`: `[floor(o*in/out), ceil((o+1)*in/out))`.
pub(super) fn adaptive_range(o: usize, len_in: usize, len_out: usize) -> (usize, usize) {
    let lo = o * len_in / len_out;
    let hi = ((o + 1) * len_in).div_ceil(len_out);
    (lo, hi)
}

pub(super) fn adaptive_sizes(
    s: &Shape,
    dtype: DType,
    op: &str,
    output_size: &[i64],
) -> Result<([usize; 2], [usize; 2])> {
    let o = match output_size {
        [a, b] => [*a, *b],
        _ => {
            return Err(Error::runtime(format!(
                "{op}: output_size must be 2, but got {}",
                output_size.len()
            )))
        }
    };
    check_planes(s, op)?;
    float_dtype(dtype, op)?;
    if o.iter().any(|&v| v < 0) {
        return Err(Error::runtime(format!(
            "{op}: elements of output_size must be greater than or equal to 0 but received {{{}, {}}}",
            o[0], o[1]
        )));
    }
    let nd = s.len();
    let out = [o[0] as usize, o[1] as usize];
    probe_output(s, dtype, out)?;
    Ok(([s[nd - 2], s[nd - 1]], out))
}

// ----- separable linear maps: average pooling, interpolation -----------------------------------

/// Node names of a linear map and of its adjoint.
#[derive(Clone, Copy)]
struct Names(&'static str, &'static str);

/// Applies the map `(th, tw)` to the last two dimensions of `x`.
fn separable_op(x: &Tensor, th: Arc<Taps>, tw: Arc<Taps>, names: Names) -> Result<Tensor> {
    let shape = x.shape();
    let nd = shape.len();
    let planes = x.numel() / (th.len_in * tw.len_in).max(1);
    let oshape = if nd >= 2 && th.len_in == shape[nd - 2] {
        out_shape(&shape, [th.len_out(), tw.len_out()])
    } else {
        // A one-dimensional map: the height is the unit axis.
        let mut s = shape.clone();
        s[nd - 1] = tw.len_out();
        s
    };
    let out = {
        let xc = super::compute_contig(x);
        let v = xc.view();
        crate::dispatch_float_compute!(x.dtype(), T => Tensor::from_vec(
            kp::separable::<T>(v.as_slice::<T>().unwrap_or(&[]), planes, &th, &tw),
            oshape,
        ))
    };
    if needs_record(&[x]) {
        record(names.0, &[x], &out, saved![], move |c| {
            Ok(smallvec![Some(adjoint_op(
                c.grad()?,
                th.clone(),
                tw.clone(),
                shape.clone(),
                names
            )?)])
        });
    }
    Ok(out)
}

fn adjoint_op(
    g: &Tensor,
    th: Arc<Taps>,
    tw: Arc<Taps>,
    in_shape: Shape,
    names: Names,
) -> Result<Tensor> {
    let planes = in_shape.iter().product::<usize>() / (th.len_in * tw.len_in).max(1);
    let out = {
        let gc = super::compute_contig(g);
        let v = gc.view();
        crate::dispatch_float_compute!(g.dtype(), T => Tensor::from_vec(
            kp::separable_adjoint::<T>(v.as_slice::<T>().unwrap_or(&[]), planes, &th, &tw),
            in_shape.clone(),
        ))
    };
    if needs_record(&[g]) {
        record(names.1, &[g], &out, saved![], move |c| {
            Ok(smallvec![Some(separable_op(
                c.grad()?,
                th.clone(),
                tw.clone(),
                names
            )?)])
        });
    }
    Ok(out)
}

/// `avg_pool2d` (`AvgPool2DBackward0`).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d(
    x: &Tensor,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    if divisor_override == Some(0) {
        return Err(Error::runtime("divisor must be not zero"));
    }
    let pp = pool_params(
        &x.shape(),
        x.dtype(),
        "avg_pool2d",
        kernel,
        stride,
        padding,
        &[1],
        ceil_mode,
        false,
    )?;
    let oshape = out_shape(&x.shape(), [pp.out[0] as usize, pp.out[1] as usize]);
    if let Some(empty) = empty_output(x, oshape, "AvgPool2DBackward0") {
        return Ok(empty);
    }
    // Per axis: the clipped window, and its share of the divisor.
    let taps: [Taps; 2] = std::array::from_fn(|a| {
        let (len, k, s, p) = (pp.size[a] as i64, pp.k[a], pp.s[a], pp.p[a]);
        let mut t = Taps::new(len as usize);
        for o in 0..pp.out[a] {
            let start = o * s - p;
            let end = (start + k).min(len + p);
            let full = end - start;
            let (lo, hi) = (start.max(0), end.min(len));
            let div = match divisor_override {
                // The whole divisor goes on the width axis.
                Some(d) => {
                    if a == 1 {
                        d as f64
                    } else {
                        1.0
                    }
                }
                None if count_include_pad => full as f64,
                None => (hi - lo) as f64,
            };
            t.push((lo..hi).map(|i| (i as usize, 1.0 / div)));
        }
        t
    });
    let [th, tw] = taps;
    separable_op(
        x,
        Arc::new(th),
        Arc::new(tw),
        Names("AvgPool2DBackward0", "AvgPool2DBackwardBackward0"),
    )
}

/// `adaptive_avg_pool2d` (`AdaptiveAvgPool2DBackward0`).
pub fn adaptive_avg_pool2d(x: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    let (size, out) = adaptive_sizes(&x.shape(), x.dtype(), "adaptive_avg_pool2d", output_size)?;
    if let Some(empty) = empty_output(x, out_shape(&x.shape(), out), "AdaptiveAvgPool2DBackward0") {
        return Ok(empty);
    }
    let taps: [Taps; 2] = std::array::from_fn(|a| {
        let mut t = Taps::new(size[a]);
        for o in 0..out[a] {
            let (lo, hi) = adaptive_range(o, size[a], out[a]);
            let w = 1.0 / (hi - lo) as f64;
            t.push((lo..hi).map(|i| (i, w)));
        }
        t
    });
    let [th, tw] = taps;
    separable_op(
        x,
        Arc::new(th),
        Arc::new(tw),
        Names(
            "AdaptiveAvgPool2DBackward0",
            "AdaptiveAvgPool2DBackwardBackward0",
        ),
    )
}

/// One axis of nearest or (bi)linear resampling from `len_in` to `len_out`,
/// with PyTorch's source-index rules; `scale` is the user's scale factor.
fn resample_axis(
    len_in: usize,
    len_out: usize,
    scale: Option<f64>,
    linear: bool,
    align_corners: bool,
) -> Taps {
    let mut t = Taps::with_capacity(len_in, len_out, if linear { 2 } else { 1 });
    // PyTorch's `compute_scales_value` / `area_pixel_compute_scale`.
    let ratio = |ac: bool| -> f64 {
        if ac {
            if len_out > 1 {
                (len_in as f64 - 1.0) / (len_out as f64 - 1.0)
            } else {
                0.0
            }
        } else {
            match scale {
                Some(s) if s > 0.0 => 1.0 / s,
                _ => len_in as f64 / len_out as f64,
            }
        }
    };
    if !linear {
        let r = ratio(false) as f32;
        for o in 0..len_out {
            let src = if len_out == len_in {
                o
            } else if len_out == 2 * len_in {
                o >> 1
            } else {
                ((o as f32 * r).floor() as usize).min(len_in - 1)
            };
            t.push([(src, 1.0)]);
        }
        t.copies = true;
        return t;
    }
    let r = ratio(align_corners);
    for o in 0..len_out {
        let src = if align_corners {
            r * o as f64
        } else {
            (r * (o as f64 + 0.5) - 0.5).max(0.0)
        };
        let i0 = (src.floor() as usize).min(len_in - 1);
        let i1 = if i0 < len_in - 1 { i0 + 1 } else { i0 };
        let l1 = (src - i0 as f64).clamp(0.0, 1.0);
        let l1 = if i1 == i0 { 0.0 } else { l1 };
        t.push([(i0, 1.0 - l1), (i1, l1)]);
    }
    t
}

/// `upsample_{nearest,linear,bilinear}{1,2}d`: resamples the last one or two
/// dimensions of `x` to `size` (`UpsampleNearest2DBackward0`, ...).
pub fn upsample(
    x: &Tensor,
    size: &[usize],
    scales: &[Option<f64>],
    mode: &str,
    align_corners: bool,
) -> Result<Tensor> {
    let shape = x.shape();
    let sd = size.len();
    if !(sd == 1 || sd == 2) || shape.len() != sd + 2 || scales.len() != sd {
        return Err(Error::runtime(format!(
            "upsample: expected a {}-D input for {sd} output sizes, but got input of size {}",
            sd + 2,
            fmt_shape(&shape)
        )));
    }
    float_only(x, "upsample")?;
    let ins = &shape[2..];
    if ins.contains(&0) || size.contains(&0) {
        let dims = ["H", "W"];
        let fmt = |v: &[usize]| {
            v.iter()
                .enumerate()
                .map(|(i, d)| format!("{}: {d}", dims[2 - sd + i]))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(Error::runtime(format!(
            "Input and output sizes should be greater than 0, but got input ({}) output ({})",
            fmt(ins),
            fmt(size)
        )));
    }
    let linear = match mode {
        "nearest" => false,
        "linear" | "bilinear" => true,
        other => {
            return Err(Error::runtime(format!(
                "upsample: unsupported mode {other}"
            )))
        }
    };
    let names = match (linear, sd) {
        (false, 1) => Names(
            "UpsampleNearest1DBackward0",
            "UpsampleNearest1DBackwardBackward0",
        ),
        (false, _) => Names(
            "UpsampleNearest2DBackward0",
            "UpsampleNearest2DBackwardBackward0",
        ),
        (true, 1) => Names(
            "UpsampleLinear1DBackward0",
            "UpsampleLinear1DBackwardBackward0",
        ),
        (true, _) => Names(
            "UpsampleBilinear2DBackward0",
            "UpsampleBilinear2DBackwardBackward0",
        ),
    };
    // The output first: an impossible size fails here, before the per-axis
    // tables (as long as an output side) are built.
    let planes = shape[..2].iter().product::<usize>();
    let out_n = size
        .iter()
        .try_fold(planes, |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            Error::runtime(format!(
                "Storage size calculation overflowed with sizes={}",
                fmt_shape(&[&shape[..2], size].concat())
            ))
        })?;
    crate::error::probe_alloc_sized(out_n, x.dtype().size());
    let oshape: Shape = shape[..2].iter().chain(size).copied().collect();
    if let Some(empty) = empty_output(x, oshape, names.0) {
        return Ok(empty);
    }
    let tw = resample_axis(
        ins[sd - 1],
        size[sd - 1],
        scales[sd - 1],
        linear,
        align_corners,
    );
    let th = if sd == 2 {
        resample_axis(ins[0], size[0], scales[0], linear, align_corners)
    } else {
        Taps::unit()
    };
    separable_op(x, Arc::new(th), Arc::new(tw), names)
}

// ----- constant padding ----------------------------------------------------------------------

/// Writes `v` to every element of the contiguous block `shape` at `p` that
/// lies outside the box `[lo[d], lo[d] + len[d])` (all of it when the box is
/// empty): whole slabs where the leading index is outside, the edges of each
/// row inside.
///
/// # Safety
/// `p` must be valid for writes of the block.
unsafe fn fill_outside<T: Copy>(p: *mut T, shape: &[usize], lo: &[usize], len: &[usize], v: T) {
    let Some((&n, rest)) = shape.split_first() else {
        return;
    };
    let (a, b) = (lo[0].min(n), (lo[0] + len[0]).min(n));
    let (a, b) = if len[0] == 0 { (n, n) } else { (a, b) };
    let slab: usize = rest.iter().product();
    std::slice::from_raw_parts_mut(p, a * slab).fill(v);
    std::slice::from_raw_parts_mut(p.add(b * slab), (n - b) * slab).fill(v);
    if !rest.is_empty() && slab > 0 {
        for i in a..b {
            fill_outside(p.add(i * slab), rest, &lo[1..], &len[1..], v);
        }
    }
}

/// `constant_pad_nd(x, pad, value)` (`ConstantPadNdBackward0`): `pad` holds
/// (before, after) pairs starting from the last dimension; negative values
/// crop. The backward is the opposite padding.
pub fn constant_pad_nd(x: &Tensor, pad: &[i64], value: f64) -> Result<Tensor> {
    let shape = x.shape();
    let nd = shape.len();
    if !pad.len().is_multiple_of(2) {
        return Err(Error::runtime(
            "Length of pad must be even but instead it equals ".to_string()
                + &pad.len().to_string(),
        ));
    }
    if pad.len() / 2 > nd {
        return Err(Error::runtime(format!(
            "Length of pad should be no more than twice the number of dimensions of the input. Pad length is {} while the input has {nd} dimensions.",
            pad.len()
        )));
    }
    let mut before: SmallVec<[i64; 4]> = smallvec![0; nd];
    let mut after: SmallVec<[i64; 4]> = smallvec![0; nd];
    for (i, pr) in pad.chunks(2).enumerate() {
        before[nd - 1 - i] = pr[0];
        after[nd - 1 - i] = pr[1];
    }
    let mut oshape = Shape::new();
    for d in 0..nd {
        let Some(n) = (shape[d] as i64)
            .checked_add(before[d])
            .and_then(|n| n.checked_add(after[d]))
        else {
            return Err(Error::runtime(format!(
                "Storage size calculation overflowed: the input size {} plus padding {} and {} does not fit in int64 (dimension {d})",
                shape[d], before[d], after[d]
            )));
        };
        if n < 0 {
            return Err(Error::runtime(format!(
                "The input size {}, plus negative padding {} and {} resulted in a negative output size, which is invalid. Check dimension {d} of your input.",
                shape[d], before[d], after[d]
            )));
        }
        oshape.push(n as usize);
    }
    let dtype = x.dtype();
    // Refused before anything is made: an element count past int64 (PyTorch's
    // check); the output is then allocated fallibly.
    crate::tensor::checked_storage_numel(&oshape, dtype.size())?;
    // The region both share: input [src_lo, src_lo + len), output [dst_lo, ..).
    let mut len: SmallVec<[usize; 4]> = SmallVec::new();
    let mut dst_lo: SmallVec<[usize; 4]> = SmallVec::new();
    let (mut src_off, mut dst_off) = (0usize, 0usize);
    let xv = x.view().clone();
    let ostrides = crate::tensor::contiguous_strides(&oshape);
    for d in 0..nd {
        let src_lo = (-before[d]).max(0) as usize;
        let lo = before[d].max(0) as usize;
        let l = (shape[d].saturating_sub(src_lo)).min(oshape[d].saturating_sub(lo));
        len.push(l);
        dst_lo.push(lo);
        src_off += src_lo * xv.strides[d];
        dst_off += lo * ostrides[d];
    }
    let sst: SmallVec<[isize; 6]> = xv.strides.iter().map(|&x| x as isize).collect();
    let total = crate::tensor::numel(&oshape);
    // The copied box straight into fresh memory and `value` written only
    // around it: filling the whole output first wrote every element twice
    // (and a crop, the backward of padding, fills nothing).
    let out = crate::dispatch!(dtype, T => {
        let v = <T as crate::tensor::Element>::from_f64(value);
        let data = crate::kernels::build_vec::<T>(total, |o| {
            let o = o.as_mut_ptr() as *mut T;
            // SAFETY: the box lies inside both tensors (its extent is clipped
            // to each), the output is fresh, and `fill_outside` writes every
            // element the box leaves out.
            unsafe {
                if !len.contains(&0) {
                    let src = xv.ptr::<T>().add(src_off);
                    crate::kernels::copy::copy_box::<T>(o.add(dst_off), &ostrides, src, &sst, &len);
                }
                fill_outside(o, &oshape, &dst_lo, &len, v);
            }
        });
        Tensor::from_vec(data, oshape.clone())
    });
    if needs_record(&[x]) {
        let neg: SmallVec<[i64; 8]> = pad.iter().map(|&p| -p).collect();
        record("ConstantPadNdBackward0", &[x], &out, saved![], move |c| {
            Ok(smallvec![Some(constant_pad_nd(c.grad()?, &neg, 0.0)?)])
        });
    }
    Ok(out)
}

//! Convolution (`ConvolutionBackward0`, plain and transposed, 1-d and 2-d)
//! and `unfold`/`fold` (`Im2ColBackward0`/`Col2ImBackward0`).
//!
//! Convolution is bilinear, and so are both halves of its backward, so three
//! recorded primitives close under differentiation: the convolution, the
//! transposed convolution (the input's gradient of a convolution, and the
//! reverse), and the weight's gradient `wgrad(x, gy)` (recorded as
//! `ConvolutionBackwardBackward0`), whose own gradients are a transposed
//! convolution of `gy` and a convolution of `x`. Gradients of any order are
//! exact and reuse the same im2col + GEMM kernels.

use smallvec::{smallvec, SmallVec};

use super::{reshape, sum};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::conv::{self as kc, Geom};
use crate::saved;
use crate::tensor::{fmt_shape, DType, Element, Shape, Tensor};

/// A convolution's hyper-parameters, stored two-dimensionally: a 1-d
/// convolution is the `H = 1` case (index 0 holds the unit values).
#[derive(Clone, Copy, Debug)]
pub struct ConvParams {
    /// Spatial dimensions of the user's tensors (1 or 2).
    pub sd: usize,
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub output_padding: [usize; 2],
    pub groups: usize,
    pub transposed: bool,
}

fn joined<T: std::fmt::Display>(v: &[T], sep: &str) -> String {
    v.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

/// A per-dimension argument as two values, checked against `sd`.
fn pair(name: &str, v: &[i64], sd: usize, unit: usize) -> Result<[usize; 2]> {
    let v: SmallVec<[i64; 2]> = match v.len() {
        1 => smallvec![v[0]; sd],
        n if n == sd => SmallVec::from_slice(v),
        _ => {
            return Err(Error::runtime(format!(
                "expected {name} to be a single integer value or a list of {sd} values to match the convolution dimensions, but got {name}={v:?}"
            )))
        }
    };
    let mut out = [unit; 2];
    for (i, &x) in v.iter().enumerate() {
        out[2 - sd + i] = usize::try_from(x).unwrap_or(usize::MAX);
    }
    Ok(out)
}

/// The spatial sizes of a `[N, C, ...]` tensor as `[H, W]`.
fn spatial(shape: &[usize]) -> [usize; 2] {
    match shape.len() {
        3 => [1, shape[2]],
        _ => [shape[2], shape[3]],
    }
}

/// Contiguous, in the compute dtype (float16/bfloat16 are convolved in
/// float32 and the result rounded once).
fn contiguous_of(t: &Tensor) -> Tensor {
    super::compute_contig(t)
}

fn check_float(t: &Tensor, op: &str) -> Result<()> {
    if !t.dtype().is_float() {
        return Err(Error::runtime(format!(
            "\"{op}\" not implemented for '{}'",
            t.dtype().scalar_name()
        )));
    }
    Ok(())
}

fn torch_type(d: DType) -> String {
    format!("torch.{}Tensor", d.scalar_name())
}

/// `convolution(input, weight, bias, stride, padding, dilation, transposed,
/// output_padding, groups)` with PyTorch's checks and messages; the entry
/// point of `conv1d`, `conv2d` and `conv_transpose1d/2d`.
#[allow(clippy::too_many_arguments)]
pub fn convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let (xs, ws) = (input.shape(), weight.shape());
    if ws.len() != 3 && ws.len() != 4 {
        return Err(Error::runtime(format!(
            "convolution supports 1-d and 2-d weights here, but got weight of size {}",
            fmt_shape(&ws)
        )));
    }
    let sd = ws.len() - 2;
    if xs.len() != ws.len() {
        return Err(Error::runtime(format!(
            "Expected {k}D (unbatched) or {k1}D (batched) input to conv{sd}d, but got input of size: {}",
            fmt_shape(&xs),
            k = sd + 1,
            k1 = sd + 2,
        )));
    }
    if stride.iter().any(|&s| s <= 0) {
        return Err(Error::runtime("non-positive stride is not supported"));
    }
    if padding.iter().any(|&s| s < 0) {
        return Err(Error::runtime("negative padding is not supported"));
    }
    if output_padding.iter().any(|&s| s < 0) {
        return Err(Error::runtime("negative output_padding is not supported"));
    }
    if dilation.iter().any(|&s| s <= 0) {
        return Err(Error::runtime("dilation should be greater than zero"));
    }
    if groups <= 0 {
        return Err(Error::runtime("non-positive groups is not supported"));
    }
    let p = ConvParams {
        sd,
        stride: pair("stride", stride, sd, 1)?,
        padding: pair("padding", padding, sd, 0)?,
        dilation: pair("dilation", dilation, sd, 1)?,
        output_padding: pair("output_padding", output_padding, sd, 0)?,
        groups: groups as usize,
        transposed,
    };
    let g = p.groups;
    if input.dtype() != weight.dtype() {
        return Err(Error::runtime(format!(
            "Input type ({}) and weight type ({}) should be the same",
            torch_type(input.dtype()),
            torch_type(weight.dtype())
        )));
    }
    if let Some(b) = bias {
        if b.dtype() != weight.dtype() {
            return Err(Error::runtime(format!(
                "Input type ({}) and bias type ({}) should be the same",
                torch_type(input.dtype()),
                torch_type(b.dtype())
            )));
        }
    }
    check_float(
        input,
        if transposed {
            "slow_conv_transpose2d"
        } else {
            "slow_conv2d_cpu"
        },
    )?;
    if ws[0] % g != 0 {
        return Err(Error::runtime(format!(
            "Given groups={g}, expected weight to be divisible by {g} at dimension 0, but got weight of size {} instead",
            fmt_shape(&ws)
        )));
    }
    let (want_c, bias_n) = if transposed {
        (ws[0], ws[1] * g)
    } else {
        (ws[1] * g, ws[0])
    };
    if xs[1] != want_c {
        let head = if transposed {
            "transposed=1".to_string()
        } else {
            format!("groups={g}")
        };
        return Err(Error::runtime(format!(
            "Given {head}, weight of size {}, expected input{} to have {want_c} channels, but got {} channels instead",
            fmt_shape(&ws),
            fmt_shape(&xs),
            xs[1]
        )));
    }
    if let Some(b) = bias {
        if b.ndim() != 1 || b.numel() != bias_n {
            return Err(Error::runtime(format!(
                "Given weight of size {}, expected bias to be 1-dimensional with {bias_n} elements, but got bias of size {} instead",
                fmt_shape(&ws),
                fmt_shape(&b.shape())
            )));
        }
    }
    let (isz, ksz) = (spatial(&xs), spatial(&ws));
    let r = 2 - sd;
    if transposed {
        for i in r..2 {
            if p.output_padding[i] >= p.stride[i] && p.output_padding[i] >= p.dilation[i] {
                return Err(Error::runtime(format!(
                    "output padding must be smaller than either stride or dilation, but got output_padding={:?}, stride={:?}, dilation={:?}",
                    &p.output_padding[r..],
                    &p.stride[r..],
                    &p.dilation[r..]
                )));
            }
        }
        // In i128: every term is an i64 the user gave, so nothing overflows.
        let out: Vec<i128> = (r..2)
            .map(|i| {
                (isz[i] as i128 - 1) * p.stride[i] as i128 - 2 * p.padding[i] as i128
                    + p.dilation[i] as i128 * (ksz[i] as i128 - 1)
                    + p.output_padding[i] as i128
                    + 1
            })
            .collect();
        if out.iter().any(|&o| o <= 0) {
            return Err(Error::runtime(format!(
                "Given input size per channel: ({}). Calculated output size per channel: ({}). Output size is too small",
                joined(&isz[r..], " x "),
                out.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" x ")
            )));
        }
    } else {
        let padded: Vec<i128> = (r..2)
            .map(|i| isz[i] as i128 + 2 * p.padding[i] as i128)
            .collect();
        let kd: Vec<i128> = (r..2)
            .map(|i| p.dilation[i] as i128 * (ksz[i] as i128 - 1) + 1)
            .collect();
        if padded.iter().zip(&kd).any(|(a, b)| a < b) {
            return Err(Error::runtime(format!(
                "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                joined(&padded, " x "),
                joined(&kd, " x ")
            )));
        }
    }
    if xs.contains(&0) && xs[0] != 0 {
        return Err(Error::runtime(format!(
            "Expected non-zero size for the non-batch dimensions of the input, but got input of size {}",
            fmt_shape(&xs)
        )));
    }
    check_output_size(input, &xs, &ws, &p)?;
    conv_op(input, weight, bias, p, None)
}

fn too_big(xs: &[usize], ws: &[usize]) -> Error {
    Error::runtime(format!(
        "Storage size calculation overflowed for the output of a convolution of input {} and weight {}",
        fmt_shape(xs),
        fmt_shape(ws)
    ))
}

/// The output's size, checked before any work: each spatial size must fit in
/// an `i64`, and the output must be allocatable (an impossible size fails
/// here, as PyTorch's output allocation does, before the column buffers and
/// padded copies the kernels would make first).
fn check_output_size(input: &Tensor, xs: &[usize], ws: &[usize], p: &ConvParams) -> Result<()> {
    let (isz, ksz) = (spatial(xs), spatial(ws));
    let r = 2 - p.sd;
    let mut n: i128 = xs[0] as i128
        * if p.transposed {
            ws[1] * p.groups
        } else {
            ws[0]
        } as i128;
    for i in r..2 {
        let (s, pad, d, k) = (
            p.stride[i] as i128,
            p.padding[i] as i128,
            p.dilation[i] as i128,
            ksz[i] as i128,
        );
        let o = if p.transposed {
            (isz[i] as i128 - 1) * s - 2 * pad + d * (k - 1) + p.output_padding[i] as i128 + 1
        } else {
            (isz[i] as i128 + 2 * pad - d * (k - 1) - 1) / s + 1
        };
        if o > i64::MAX as i128 {
            return Err(too_big(xs, ws));
        }
        n = n.saturating_mul(o.max(0));
    }
    if n > i64::MAX as i128 {
        return Err(too_big(xs, ws));
    }
    crate::error::probe_alloc_sized(n as usize, input.dtype().size());
    Ok(())
}

/// The geometry of the convolution whose input is `x` (`[N, C, ...]`) and
/// output has spatial size `out`, with weight `w`.
fn geom(xs: &[usize], ws: &[usize], out: [usize; 2], p: &ConvParams) -> Geom {
    let [h, w] = spatial(xs);
    let [kh, kw] = spatial(ws);
    Geom {
        n: xs[0],
        c: xs[1],
        h,
        w,
        o: ws[0],
        kh,
        kw,
        oh: out[0],
        ow: out[1],
        stride: p.stride,
        padding: p.padding,
        dilation: p.dilation,
        groups: p.groups,
    }
}

fn conv_out(isz: [usize; 2], ksz: [usize; 2], p: &ConvParams) -> [usize; 2] {
    std::array::from_fn(|i| {
        (isz[i] + 2 * p.padding[i] - p.dilation[i] * (ksz[i] - 1) - 1) / p.stride[i] + 1
    })
}

fn conv_t_out(isz: [usize; 2], ksz: [usize; 2], p: &ConvParams) -> [usize; 2] {
    std::array::from_fn(|i| {
        (isz[i] - 1) * p.stride[i] + p.dilation[i] * (ksz[i] - 1) + p.output_padding[i] + 1
            - 2 * p.padding[i]
    })
}

fn with_spatial(n: usize, c: usize, sz: [usize; 2], sd: usize) -> Shape {
    if sd == 1 {
        Shape::from_slice(&[n, c, sz[1]])
    } else {
        Shape::from_slice(&[n, c, sz[0], sz[1]])
    }
}

/// The output padding that makes a transposed convolution of `small` come
/// out with spatial size `big` (the input of the convolution being undone).
fn fit_output_padding(
    big: [usize; 2],
    small: [usize; 2],
    ksz: [usize; 2],
    p: &ConvParams,
) -> [usize; 2] {
    std::array::from_fn(|i| {
        big[i] + 2 * p.padding[i]
            - ((small[i] - 1) * p.stride[i] + p.dilation[i] * (ksz[i] - 1) + 1)
    })
}

/// The checked convolution: computes and records `ConvolutionBackward0`.
///
/// `out` fixes a plain convolution's output size: the gradient of a
/// transposed convolution whose output padding reaches past the stride (as
/// a dilation allows) must come out the size of that convolution's input,
/// one less than the formula gives.
fn conv_op(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    p: ConvParams,
    out: Option<[usize; 2]>,
) -> Result<Tensor> {
    let (xs, ws) = (x.shape(), w.shape());
    let (isz, ksz) = (spatial(&xs), spatial(&ws));
    let fixed = out;
    let out = {
        let (xc, wc) = (contiguous_of(x), contiguous_of(w));
        let bc = b.map(contiguous_of);
        let (vx, vw) = (xc.view(), wc.view());
        let vb = bc.as_ref().map(|t| t.view());
        crate::dispatch_float_compute!(x.dtype(), T => {
            let xd = vx.as_slice::<T>().unwrap_or(&[]);
            let wd = vw.as_slice::<T>().unwrap_or(&[]);
            let bd = vb.as_ref().and_then(|v| v.as_slice::<T>());
            if p.transposed {
                let osz = conv_t_out(isz, ksz, &p);
                let co = ws[1] * p.groups;
                // The convolution this one transposes maps [N, co, osz] to x.
                let g = geom(&with_spatial(xs[0], co, osz, p.sd), &ws, isz, &p);
                Tensor::from_vec(kc::conv_backward_input::<T>(&g, xd, wd, bd), with_spatial(xs[0], co, osz, p.sd))
            } else {
                let osz = fixed.unwrap_or_else(|| conv_out(isz, ksz, &p));
                let g = geom(&xs, &ws, osz, &p);
                Tensor::from_vec(kc::conv_forward::<T>(&g, xd, wd, bd), with_spatial(xs[0], ws[0], osz, p.sd))
            }
        })
    };
    let mut inputs: SmallVec<[&Tensor; 3]> = smallvec![x, w];
    if let Some(b) = b {
        inputs.push(b);
    }
    if needs_record(&inputs) {
        let nd = xs.len();
        record(
            "ConvolutionBackward0",
            &inputs,
            &out,
            saved![x, w],
            move |c| {
                let (x, w) = (c.saved(0)?, c.saved(1)?);
                // Laid out once for both products (a `sum()`'s gradient is a
                // broadcast scalar); recorded, so a double backward sees it.
                let g = &super::contiguous(c.grad()?)?;
                let plain = ConvParams {
                    transposed: false,
                    output_padding: [0, 0],
                    ..p
                };
                let (gx, gw) = if p.transposed {
                    let gx = c
                        .needs(0)
                        .then(|| conv_op(g, w, None, plain, Some(isz)))
                        .transpose()?;
                    let gw = c.needs(1).then(|| wgrad_op(g, x, ksz, plain)).transpose()?;
                    (gx, gw)
                } else {
                    let gx = c
                        .needs(0)
                        .then(|| {
                            let op = fit_output_padding(isz, spatial(&g.shape()), ksz, &p);
                            let tp = ConvParams {
                                transposed: true,
                                output_padding: op,
                                ..p
                            };
                            conv_op(g, w, None, tp, None)
                        })
                        .transpose()?;
                    let gw = c.needs(1).then(|| wgrad_op(x, g, ksz, p)).transpose()?;
                    (gx, gw)
                };
                let mut grads: crate::autograd::Grads = smallvec![gx, gw];
                if c.needs.len() > 2 {
                    let dims: SmallVec<[i64; 4]> = std::iter::once(0).chain(2..nd as i64).collect();
                    grads.push(c.needs(2).then(|| sum(g, Some(&dims), false)).transpose()?);
                }
                Ok(grads)
            },
        );
    }
    Ok(out)
}

/// The weight's gradient of the convolution (params `p`, not transposed)
/// of input `x` given its output's gradient `gy`; recorded as
/// `ConvolutionBackwardBackward0` so it can be differentiated again.
fn wgrad_op(x: &Tensor, gy: &Tensor, ksz: [usize; 2], p: ConvParams) -> Result<Tensor> {
    let (xs, gs) = (x.shape(), gy.shape());
    let wshape = if p.sd == 1 {
        Shape::from_slice(&[gs[1], xs[1] / p.groups, ksz[1]])
    } else {
        Shape::from_slice(&[gs[1], xs[1] / p.groups, ksz[0], ksz[1]])
    };
    let (isz, osz) = (spatial(&xs), spatial(&gs));
    let out = {
        let (xc, gc) = (contiguous_of(x), contiguous_of(gy));
        let (vx, vg) = (xc.view(), gc.view());
        let g = geom(&xs, &wshape, osz, &p);
        crate::dispatch_float_compute!(x.dtype(), T => Tensor::from_vec(
            kc::conv_backward_weight::<T>(&g, vx.as_slice::<T>().unwrap_or(&[]), vg.as_slice::<T>().unwrap_or(&[])),
            wshape.clone(),
        ))
    };
    if needs_record(&[x, gy]) {
        record(
            "ConvolutionBackwardBackward0",
            &[x, gy],
            &out,
            saved![x, gy],
            move |c| {
                let (x, gy, gg) = (c.saved(0)?, c.saved(1)?, c.grad()?);
                let gx = c
                    .needs(0)
                    .then(|| {
                        let tp = ConvParams {
                            transposed: true,
                            output_padding: fit_output_padding(isz, osz, ksz, &p),
                            ..p
                        };
                        conv_op(gy, gg, None, tp, None)
                    })
                    .transpose()?;
                let ggy = c
                    .needs(1)
                    .then(|| conv_op(x, gg, None, p, Some(osz)))
                    .transpose()?;
                Ok(smallvec![gx, ggy])
            },
        );
    }
    Ok(out)
}

// ----- unfold / fold -------------------------------------------------------------------------

/// Sliding-block hyper-parameters of `unfold`/`fold` (always 2-d).
#[derive(Clone, Copy, Debug)]
pub struct Blocks {
    pub kernel: [usize; 2],
    pub dilation: [usize; 2],
    pub padding: [usize; 2],
    pub stride: [usize; 2],
}

fn blocks_of(kernel: &[i64], dilation: &[i64], padding: &[i64], stride: &[i64]) -> Result<Blocks> {
    let two = |name: &str, v: &[i64], positive: bool| -> Result<[usize; 2]> {
        let v: [i64; 2] = match v.len() {
            1 => [v[0], v[0]],
            2 => [v[0], v[1]],
            _ => {
                return Err(Error::runtime(format!(
                    "{name} must be an int or a tuple of two ints, but got {v:?}"
                )))
            }
        };
        if v.iter().any(|&x| if positive { x <= 0 } else { x < 0 }) {
            let what = if positive {
                "should be greater than zero"
            } else {
                "should be non-negative"
            };
            return Err(Error::runtime(format!(
                "{name} {what}, but got {name}_height: {} {name}_width: {}",
                v[0], v[1]
            )));
        }
        Ok([v[0] as usize, v[1] as usize])
    };
    Ok(Blocks {
        kernel: two("kernel", kernel, true)?,
        dilation: two("dilation", dilation, true)?,
        padding: two("padding", padding, false)?,
        stride: two("stride", stride, true)?,
    })
}

fn block_geom(n: usize, c: usize, isz: [usize; 2], out: [usize; 2], b: &Blocks) -> Geom {
    Geom {
        n,
        c,
        h: isz[0],
        w: isz[1],
        o: c * b.kernel[0] * b.kernel[1],
        kh: b.kernel[0],
        kw: b.kernel[1],
        oh: out[0],
        ow: out[1],
        stride: b.stride,
        padding: b.padding,
        dilation: b.dilation,
        groups: 1,
    }
}

/// The number of sliding blocks along each dimension (may be non-positive),
/// in `i128` so that no size the user gives overflows, then saturated.
fn block_counts(isz: [usize; 2], b: &Blocks) -> [i64; 2] {
    std::array::from_fn(|i| {
        let n = (isz[i] as i128 + 2 * b.padding[i] as i128
            - b.dilation[i] as i128 * (b.kernel[i] as i128 - 1)
            - 1)
        .div_euclid(b.stride[i] as i128)
            + 1;
        n.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    })
}

/// `a * b * ...` for sizes from the user, or PyTorch's overflow error.
fn checked_size(factors: &[usize]) -> Result<usize> {
    factors
        .iter()
        .try_fold(1usize, |n, &f| n.checked_mul(f))
        .filter(|&n| n <= i64::MAX as usize)
        .ok_or_else(|| Error::runtime("numel: integer multiplication overflow"))
}

/// `F.unfold`: `[N, C, H, W] -> [N, C*kh*kw, L]` (`Im2ColBackward0`).
pub fn unfold(
    x: &Tensor,
    kernel: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<Tensor> {
    let b = blocks_of(kernel, dilation, padding, stride)?;
    let xs = x.shape();
    let batched = xs.len() == 4;
    if !(xs.len() == 3 || batched) || xs[xs.len() - 3..].contains(&0) {
        return Err(Error::runtime(format!(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: {}",
            fmt_shape(&xs)
        )));
    }
    check_float(x, "im2col")?;
    let x4 = if batched {
        x.clone()
    } else {
        reshape(x, &[1, xs[0], xs[1], xs[2]])?
    };
    let s4 = x4.shape();
    let isz = [s4[2], s4[3]];
    let cnt = block_counts(isz, &b);
    if cnt.iter().any(|&c| c < 1) {
        return Err(Error::runtime(format!(
            "Given input with spatial size ({}, {}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), calculated shape of the array of sliding blocks as ({}, {}), but its components must be at least one.",
            isz[0], isz[1], b.kernel[0], b.kernel[1], b.dilation[0], b.dilation[1], b.padding[0], b.padding[1], cnt[0], cnt[1]
        )));
    }
    let cols = checked_size(&[
        s4[0],
        s4[1],
        b.kernel[0],
        b.kernel[1],
        cnt[0] as usize,
        cnt[1] as usize,
    ])?;
    crate::error::probe_alloc_sized(cols, x.dtype().size());
    let out = im2col_op(&x4, b, [cnt[0] as usize, cnt[1] as usize])?;
    if batched {
        Ok(out)
    } else {
        let os = out.shape();
        reshape(&out, &[os[1], os[2]])
    }
}

fn im2col_op(x: &Tensor, b: Blocks, cnt: [usize; 2]) -> Result<Tensor> {
    let xs = x.shape();
    let isz = [xs[2], xs[3]];
    let g = block_geom(xs[0], xs[1], isz, cnt, &b);
    let k = xs[1] * b.kernel[0] * b.kernel[1];
    let l = cnt[0] * cnt[1];
    let out = {
        let xc = contiguous_of(x);
        let v = xc.view();
        crate::dispatch_float_compute!(x.dtype(), T => {
            let xd = v.as_slice::<T>().unwrap_or(&[]);
            let per = g.c * g.h * g.w;
            let mut out: Vec<T> = crate::error::filled_vec(g.n * k * l, <T as Element>::zero());
            let op = crate::kernels::SendPtr(out.as_mut_ptr());
            crate::kernels::par_ranges(g.n * k * l, |lo, hi| {
                let (lo, hi) = (lo.div_ceil((k * l).max(1)), hi.div_ceil((k * l).max(1)).min(g.n));
                for s in lo..hi {
                    // SAFETY: sample `s` is in exactly one range: the one
                    // holding its first element.
                    let d = unsafe { std::slice::from_raw_parts_mut(op.get().add(s * k * l), k * l) };
                    kc::im2col::<T>(&g, &xd[s * per..(s + 1) * per], d);
                }
            });
            Tensor::from_vec(out, Shape::from_slice(&[g.n, k, l]))
        })
    };
    if needs_record(&[x]) {
        record("Im2ColBackward0", &[x], &out, saved![], move |c| {
            Ok(smallvec![Some(col2im_op(c.grad()?, b, isz, cnt)?)])
        });
    }
    Ok(out)
}

/// `F.fold`: `[N, C*kh*kw, L] -> [N, C, H, W]`, overlapping values summed
/// (`Col2ImBackward0`).
pub fn fold(
    x: &Tensor,
    output_size: &[i64],
    kernel: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<Tensor> {
    let b = blocks_of(kernel, dilation, padding, stride)?;
    let osz = match output_size {
        [a] => [*a, *a],
        [a, c] => [*a, *c],
        _ => {
            return Err(Error::runtime(
                "output_size must be an int or a tuple of two ints",
            ))
        }
    };
    if osz.iter().any(|&o| o <= 0) {
        return Err(Error::runtime(format!(
            "output_size should be greater than zero, but got output_height: {} output_width: {}",
            osz[0], osz[1]
        )));
    }
    let xs = x.shape();
    let batched = xs.len() == 3;
    if !(xs.len() == 2 || batched) || xs[xs.len() - 2..].contains(&0) {
        return Err(Error::runtime(format!(
            "Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got: {}",
            fmt_shape(&xs)
        )));
    }
    check_float(x, "col2im")?;
    let x3 = if batched {
        x.clone()
    } else {
        reshape(x, &[1, xs[0], xs[1]])?
    };
    let s3 = x3.shape();
    let kk = checked_size(&b.kernel)?;
    if s3[1] % kk != 0 {
        return Err(Error::runtime(format!(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={} and kernel_size=({}, {})",
            s3[1], b.kernel[0], b.kernel[1]
        )));
    }
    let isz = [osz[0] as usize, osz[1] as usize];
    let cnt = block_counts(isz, &b);
    let blocks = (cnt[0] as i128) * (cnt[1] as i128);
    if cnt.iter().any(|&c| c < 1) || blocks != s3[2] as i128 {
        return Err(Error::runtime(format!(
            "Given output_size=({}, {}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), stride=({}, {}), expected size of input's dimension 2 to match the calculated number of sliding blocks {} * {} = {}, but got input.size(2)={}.",
            isz[0], isz[1], b.kernel[0], b.kernel[1], b.dilation[0], b.dilation[1], b.padding[0], b.padding[1], b.stride[0], b.stride[1], cnt[0], cnt[1], blocks, s3[2]
        )));
    }
    let image = checked_size(&[s3[0], s3[1] / kk, isz[0], isz[1]])?;
    crate::error::probe_alloc_sized(image, x.dtype().size());
    let out = col2im_op(&x3, b, isz, [cnt[0] as usize, cnt[1] as usize])?;
    if batched {
        Ok(out)
    } else {
        let os = out.shape();
        reshape(&out, &[os[1], os[2], os[3]])
    }
}

fn col2im_op(x: &Tensor, b: Blocks, isz: [usize; 2], cnt: [usize; 2]) -> Result<Tensor> {
    let xs = x.shape();
    let kk = b.kernel[0] * b.kernel[1];
    let c = xs[1] / kk;
    let g = block_geom(xs[0], c, isz, cnt, &b);
    let out = {
        let xc = contiguous_of(x);
        let v = xc.view();
        crate::dispatch_float_compute!(x.dtype(), T => {
            let xd = v.as_slice::<T>().unwrap_or(&[]);
            let per = g.c * g.h * g.w;
            let cols = xs[1] * xs[2];
            let mut out: Vec<T> = crate::error::filled_vec(g.n * per, <T as Element>::zero());
            let op = crate::kernels::SendPtr(out.as_mut_ptr());
            crate::kernels::par_ranges(g.n * cols, |lo, hi| {
                let (lo, hi) = (lo.div_ceil(cols.max(1)), hi.div_ceil(cols.max(1)).min(g.n));
                for s in lo..hi {
                    // SAFETY: as in `im2col_op`.
                    let d = unsafe { std::slice::from_raw_parts_mut(op.get().add(s * per), per) };
                    kc::col2im::<T>(&g, &xd[s * cols..(s + 1) * cols], d);
                }
            });
            Tensor::from_vec(out, Shape::from_slice(&[g.n, c, isz[0], isz[1]]))
        })
    };
    if needs_record(&[x]) {
        record("Col2ImBackward0", &[x], &out, saved![], move |c| {
            Ok(smallvec![Some(im2col_op(c.grad()?, b, cnt)?)])
        });
    }
    Ok(out)
}

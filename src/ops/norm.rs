//! Batch, group and layer normalisation, each one node under PyTorch's name
//! (`NativeBatchNormBackward0`, `NativeGroupNormBackward0`,
//! `NativeLayerNormBackward0`).
//!
//! The forward runs the fused kernels of `kernels::norm` (one pass for the
//! statistics, one for normalise-and-affine). The backward runs the fused
//! closed form when nothing records it; under `create_graph` it is written in
//! differentiable ops instead, recomputing the statistics from the saved
//! input so that second-order gradients see their dependence on `x`.

use smallvec::{smallvec, SmallVec};

use super::{
    add_scalar, assign, cast_data, contiguous, expand, mean, mul, reshape, rsqrt, sub, sum, Scalar,
};
use crate::autograd::{is_grad_enabled, needs_record, record, BackwardCtx, GradModeGuard, Grads};
use crate::error::{Error, Result};
use crate::kernels::norm as kn;
use crate::saved;
use crate::tensor::{fmt_shape, DType, Element, Float, Shape, Tensor};

fn check_float(x: &Tensor, op: &str) -> Result<()> {
    if !x.dtype().is_float() {
        return Err(Error::runtime(format!(
            "\"{op}\" not implemented for '{}'",
            x.dtype().scalar_name()
        )));
    }
    Ok(())
}

fn check_same_dtype(x: &Tensor, others: &[Option<&Tensor>]) -> Result<()> {
    for t in others.iter().flatten() {
        if t.dtype() != x.dtype() {
            return Err(Error::runtime(format!(
                "expected scalar type {} but found {}",
                x.dtype().scalar_name(),
                t.dtype().scalar_name()
            )));
        }
    }
    Ok(())
}

/// The contiguous data of `t` as a `Vec<f64>` (small parameter vectors).
fn f64s(t: &Tensor) -> Vec<f64> {
    cast_data(&t.contiguous_data(), DType::F64).to_vec::<f64>()
}

/// Batch/group/instance norm's layout: `n` samples of `c` channels of `s`
/// elements. Statistics are per channel over all samples (`per_sample`
/// false: batch norm), or per sample and group of `c / groups` channels.
#[derive(Clone, Copy)]
struct Blocks {
    n: usize,
    c: usize,
    s: usize,
    groups: usize,
    per_sample: bool,
}

impl Blocks {
    fn stat_groups(&self) -> usize {
        if self.per_sample {
            self.n * self.groups
        } else {
            self.c
        }
    }

    fn cpg(&self) -> usize {
        self.c / self.groups
    }

    /// The statistics group of block `b` (sample `b / c`, channel `b % c`).
    fn group_of(&self, b: usize) -> usize {
        let (ni, ci) = (b / self.c, b % self.c);
        if self.per_sample {
            ni * self.groups + ci / self.cpg()
        } else {
            ci
        }
    }

    fn blocks_of(&self, q: usize) -> Box<dyn Iterator<Item = usize>> {
        let (c, n) = (self.c, self.n);
        if self.per_sample {
            let (ni, gi, k) = (q / self.groups, q % self.groups, self.cpg());
            Box::new((0..k).map(move |j| ni * c + gi * k + j))
        } else {
            Box::new((0..n).map(move |ni| ni * c + q))
        }
    }

    fn group_len(&self) -> usize {
        if self.per_sample {
            self.cpg() * self.s
        } else {
            self.n * self.s
        }
    }

    /// `[n, c, s]` and the shape and dimensions that reduce a group in
    /// differentiable form.
    fn stat_view(&self) -> (Shape, SmallVec<[i64; 2]>) {
        if self.per_sample {
            (
                smallvec![self.n, self.groups, self.cpg() * self.s],
                smallvec![2],
            )
        } else {
            (smallvec![self.n, self.c, self.s], smallvec![0, 2])
        }
    }
}

/// Batch norm with a spatial size below this walks rows of `[N, C * S]`
/// (vectorising across channels) rather than `N * C` tiny blocks.
const COLUMN_S: usize = 32;

impl Blocks {
    fn by_columns(&self) -> bool {
        !self.per_sample && self.s < COLUMN_S && self.n > 0
    }

    /// How many units the kernels walk: blocks (sample, channel), or
    /// columns (channel, position) when walking rows.
    fn units(&self) -> usize {
        if self.by_columns() {
            self.c * self.s
        } else {
            self.n * self.c
        }
    }

    /// The statistics group and channel of unit `u`.
    fn unit_chan(&self, u: usize) -> (usize, usize) {
        if self.by_columns() {
            (u / self.s, u / self.s)
        } else {
            (self.group_of(u), u % self.c)
        }
    }
}

/// Per-group mean and biased variance of `x` (contiguous, `T`).
fn group_moments<T: Float>(x: &[T], l: Blocks) -> (Vec<f64>, Vec<f64>) {
    if x.is_empty() {
        // No elements at all: every statistic is undefined (and the groups,
        // however many are declared, are not visited one by one).
        let ng = l.stat_groups();
        return (
            crate::error::filled_vec(ng, f64::NAN),
            crate::error::filled_vec(ng, f64::NAN),
        );
    }
    if l.by_columns() {
        let (cm, cq) = kn::col_moments(x, l.c * l.s);
        return (0..l.c)
            .map(|q| kn::merge_moments(q * l.s..(q + 1) * l.s, &cm, &cq, l.n))
            .unzip();
    }
    let (bm, bq) = kn::block_moments(x, l.s);
    if bm.len() != l.n * l.c {
        // No elements at all: every statistic is undefined.
        let ng = l.stat_groups();
        return (
            crate::error::filled_vec(ng, f64::NAN),
            crate::error::filled_vec(ng, f64::NAN),
        );
    }
    (0..l.stat_groups())
        .map(|q| kn::merge_moments(l.blocks_of(q), &bm, &bq, l.s))
        .unzip()
}

/// Normalises `x` (contiguous) with per-group `mean`, `rstd` and per-channel
/// affine parameters.
fn block_forward<T: Float>(
    x: &[T],
    l: Blocks,
    mean: &[f64],
    rstd: &[f64],
    w: Option<&[f64]>,
    b: Option<&[f64]>,
) -> Vec<T> {
    if x.is_empty() {
        // No elements, however many channels are declared.
        return Vec::new();
    }
    let nb = l.units();
    let chan_of = |u| l.unit_chan(u);
    let mut center = crate::error::alloc_vec(nb);
    let mut scale = crate::error::alloc_vec(nb);
    let mut shift = crate::error::alloc_vec(nb);
    for blk in 0..nb {
        let (q, ci) = chan_of(blk);
        // The mean rounded to T is subtracted exactly; what rounding lost
        // is folded into the shift.
        let c = T::from_f64(mean[q]);
        let lo = mean[q] - Element::to_f64(c);
        let a = rstd[q] * w.map_or(1.0, |w| w[ci]);
        center.push(c);
        scale.push(T::from_f64(a));
        shift.push(T::from_f64(b.map_or(0.0, |b| b[ci]) - lo * a));
    }
    if l.by_columns() {
        return kn::col_apply(None, x, nb, [&scale, &scale, &center, &shift]);
    }
    kn::block_apply(x, l.s, &center, &scale, &shift)
}

/// The fused closed-form backward: `(dx, dw, db)`. With `input_stats` the
/// statistics are functions of `x` (training); otherwise constants.
fn block_backward<T: Float>(
    g: &[T],
    x: &[T],
    l: Blocks,
    mean: &[f64],
    rstd: &[f64],
    w: Option<&[f64]>,
    input_stats: bool,
) -> (Vec<T>, Vec<f64>, Vec<f64>) {
    if x.is_empty() {
        // Nothing reaches the parameters from no elements.
        return (
            Vec::new(),
            crate::error::zeroed_vec(l.c),
            crate::error::zeroed_vec(l.c),
        );
    }
    let cols = l.by_columns();
    let nb = l.units();
    let chan_of = |u| l.unit_chan(u);
    let mut center: Vec<f64> = crate::error::alloc_vec(nb);
    center.extend((0..nb).map(|b| mean[chan_of(b).0]));
    let (sg, sgx) = if cols {
        kn::col_grad_sums(g, x, nb, &center)
    } else {
        kn::block_grad_sums(g, x, l.s, &center)
    };
    let mut dw = crate::error::zeroed_vec::<f64>(l.c);
    let mut db = crate::error::zeroed_vec::<f64>(l.c);
    let ng = l.stat_groups();
    let mut ga = crate::error::zeroed_vec::<f64>(ng);
    let mut gb = crate::error::zeroed_vec::<f64>(ng);
    for blk in 0..nb {
        let (q, ci) = chan_of(blk);
        db[ci] += sg[blk];
        dw[ci] += sgx[blk] * rstd[q];
        let wc = w.map_or(1.0, |w| w[ci]);
        ga[q] += wc * sg[blk];
        gb[q] += wc * sgx[blk];
    }
    let m = l.group_len() as f64;
    // dx = w r g - r A / m - (x - mean) r^3 B / m, with A = sum(w g) and
    // B = sum(w g (x - mean)) over the group; only the first term without
    // input statistics.
    let k: Vec<[T; 4]> = (0..nb)
        .map(|blk| {
            let (q, ci) = chan_of(blk);
            let r = rstd[q];
            let k1 = w.map_or(1.0, |w| w[ci]) * r;
            let (k2, k3) = if input_stats {
                (-r * r * r * gb[q] / m, -r * ga[q] / m)
            } else {
                (0.0, 0.0)
            };
            let c = T::from_f64(mean[q]);
            let lo = mean[q] - Element::to_f64(c);
            [
                T::from_f64(k1),
                T::from_f64(k2),
                c,
                T::from_f64(k3 - k2 * lo),
            ]
        })
        .collect();
    if cols {
        let pick = |i: usize| k.iter().map(|v| v[i]).collect::<Vec<T>>();
        let (k1, k2, c, k3) = (pick(0), pick(1), pick(2), pick(3));
        let dx = kn::col_apply(Some(g), x, nb, [&k1, &k2, &c, &k3]);
        return (dx, dw, db);
    }
    (kn::block_linear(g, x, l.s, &k), dw, db)
}

/// The differentiable form of the same backward, for `create_graph`.
fn block_backward_graph(
    g: &Tensor,
    x: &Tensor,
    l: Blocks,
    w: Option<&Tensor>,
    fixed: Option<(&Tensor, &Tensor)>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let xshape = x.shape();
    let ncs: Shape = smallvec![l.n, l.c, l.s];
    let xv = reshape(x, &ncs)?;
    let gv = reshape(g, &ncs)?;
    let gw = match w {
        Some(w) => mul(&gv, &reshape(w, &[1, l.c, 1])?)?,
        None => gv.clone(),
    };
    let (stat_shape, dims) = l.stat_view();
    let chan_dims: [i64; 2] = [0, 2];
    let (dx, xhat) = match fixed {
        None => {
            let xs = reshape(&xv, &stat_shape)?;
            let mu = mean(&xs, Some(&dims), true)?;
            let xc = sub(&xs, &mu)?;
            let var = mean(&mul(&xc, &xc)?, Some(&dims), true)?;
            let rs = rsqrt(&add_scalar(&var, Scalar::Float(eps))?)?;
            let xhat = mul(&xc, &rs)?;
            let gws = reshape(&gw, &stat_shape)?;
            let a = mean(&gws, Some(&dims), true)?;
            let b = mean(&mul(&gws, &xhat)?, Some(&dims), true)?;
            let dx = mul(&rs, &sub(&sub(&gws, &a)?, &mul(&xhat, &b)?)?)?;
            (dx, reshape(&xhat, &ncs)?)
        }
        Some((mu, rs)) => {
            let mu = reshape(mu, &[1, l.c, 1])?;
            let rs = reshape(rs, &[1, l.c, 1])?;
            (mul(&gw, &rs)?, mul(&sub(&xv, &mu)?, &rs)?)
        }
    };
    let dw = sum(&mul(&gv, &xhat)?, Some(&chan_dims), false)?;
    let db = sum(&gv, Some(&chan_dims), false)?;
    Ok((reshape(&dx, &xshape)?, dw, db))
}

/// The gradient arriving at a fused backward, contiguous and of `x`'s dtype.
fn dense_grad(g: &Tensor, like: &Tensor) -> Result<Tensor> {
    let g = cast_data(g, like.dtype());
    contiguous(&expand(&g, &like.shape())?)
}

/// Which of `[x, weight, bias]` are present, as node inputs.
fn node_inputs<'a>(x: &'a Tensor, w: Option<&'a Tensor>, b: Option<&'a Tensor>) -> Vec<&'a Tensor> {
    let mut v = vec![x];
    v.extend(w);
    v.extend(b);
    v
}

/// Gradients for `[x, weight?, bias?]` in node-input order.
fn grads_of(
    c: &BackwardCtx<'_>,
    has_w: bool,
    has_b: bool,
    dx: Tensor,
    dw: Tensor,
    db: Tensor,
) -> Grads {
    let mut out: Grads = smallvec![c.needs(0).then_some(dx)];
    let mut i = 1;
    if has_w {
        out.push(c.needs(i).then_some(dw));
        i += 1;
    }
    if has_b {
        out.push(c.needs(i).then_some(db));
    }
    out
}

/// Shared forward of batch and group norm: normalises `x` with its own
/// statistics (or the `fixed` mean and variance), records the node, and
/// returns the output with the per-group mean and biased variance.
#[allow(clippy::too_many_arguments)]
fn block_norm(
    name: &'static str,
    x: &Tensor,
    l: Blocks,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    fixed: Option<(Vec<f64>, Vec<f64>)>,
    eps: f64,
) -> Result<(Tensor, Vec<f64>, Vec<f64>)> {
    let xd = super::compute_contig(x);
    let (wv, bv) = (w.map(f64s), b.map(f64s));
    let shape = x.shape();
    let input_stats = fixed.is_none();
    let (out, mu, var) = crate::dispatch_float!(xd.dtype(), T => {
        let v = xd.view();
        let data = v.as_slice::<T>().unwrap_or(&[]);
        let (mu, var) = match fixed {
            Some(mv) => mv,
            None => group_moments(data, l),
        };
        let rs: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let y = block_forward(data, l, &mu, &rs, wv.as_deref(), bv.as_deref());
        (Tensor::from_vec(y, shape.clone()), mu, var)
    });
    // float16/bfloat16 were normalised in float32: rounded once here.
    let out = super::back_to(out, x.dtype());
    if needs_record(&[x])
        || w.is_some_and(|w| needs_record(&[w]))
        || b.is_some_and(|b| needs_record(&[b]))
    {
        let ng = l.stat_groups();
        let rs: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let mean_t = cast_data(&Tensor::from_vec(mu.clone(), smallvec![ng]), x.dtype());
        let rstd_t = cast_data(&Tensor::from_vec(rs, smallvec![ng]), x.dtype());
        let (has_w, has_b) = (w.is_some(), b.is_some());
        record(
            name,
            &node_inputs(x, w, b),
            &out,
            saved![x, w, &mean_t, &rstd_t],
            move |c| {
                let g = c.grad()?;
                let x = c.saved(0)?;
                let w = if has_w { Some(c.saved(1)?) } else { None };
                let (mean_t, rstd_t) = (c.saved(2)?, c.saved(3)?);
                if is_grad_enabled() {
                    let fixed = (!input_stats).then_some((mean_t, rstd_t));
                    let (dx, dw, db) = block_backward_graph(g, x, l, w, fixed, eps)?;
                    return Ok(grads_of(c, has_w, has_b, dx, dw, db));
                }
                let (mu, rs) = (f64s(mean_t), f64s(rstd_t));
                let wv = w.map(f64s);
                let g = super::compute_contig(&dense_grad(g, x)?);
                let xd = super::compute_contig(x);
                let shape = x.shape();
                let dt = x.dtype();
                let (dx, dw, db) = crate::dispatch_float!(dt.compute(), T => {
                    let (gv, xv) = (g.view(), xd.view());
                    let gs = gv.as_slice::<T>().unwrap_or(&[]);
                    let xs = xv.as_slice::<T>().unwrap_or(&[]);
                    let (dx, dw, db) = block_backward(gs, xs, l, &mu, &rs, wv.as_deref(), input_stats);
                    (Tensor::from_vec(dx, shape.clone()), dw, db)
                });
                let dx = super::back_to(dx, dt);
                let dw = cast_data(&Tensor::from_vec(dw, smallvec![l.c]), dt);
                let db = cast_data(&Tensor::from_vec(db, smallvec![l.c]), dt);
                Ok(grads_of(c, has_w, has_b, dx, dw, db))
            },
        );
    }
    Ok((out, mu, var))
}

fn check_param(p: Option<&Tensor>, what: &str, c: usize) -> Result<()> {
    if let Some(p) = p {
        if p.numel() != c {
            return Err(Error::runtime(format!(
                "{what} should contain {c} elements not {}",
                p.numel()
            )));
        }
    }
    Ok(())
}

/// `F.batch_norm`: normalises each channel (dimension 1) of `x`. In
/// training (or without running statistics) the batch's statistics are
/// used and, if given, the running ones are updated in place with
/// `momentum` (unbiased variance); otherwise the running ones are used.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    check_float(x, "batch_norm")?;
    let shape = x.shape();
    if shape.len() < 2 {
        return Err(Error::value(format!(
            "Expected 2D or higher input for batch_norm (got {}D input)",
            shape.len()
        )));
    }
    check_same_dtype(x, &[w, b, running_mean, running_var])?;
    let (n, c) = (shape[0], shape[1]);
    let s: usize = shape[2..].iter().product();
    check_param(running_mean, "running_mean", c)?;
    check_param(running_var, "running_var", c)?;
    check_param(w, "weight", c)?;
    check_param(b, "bias", c)?;
    let l = Blocks {
        n,
        c,
        s,
        groups: c,
        per_sample: false,
    };
    let use_input = training || running_mean.is_none() || running_var.is_none();
    let fixed = if use_input {
        None
    } else {
        Some((
            f64s(running_mean.unwrap_or(x)),
            f64s(running_var.unwrap_or(x)),
        ))
    };
    let (out, mu, var) = block_norm("NativeBatchNormBackward0", x, l, w, b, fixed, eps)?;
    if training {
        let m = (n * s) as f64;
        let _g = GradModeGuard::new(false);
        if let Some(rm) = running_mean {
            let old = f64s(rm);
            let new: Vec<f64> = old
                .iter()
                .zip(&mu)
                .map(|(o, v)| (1.0 - momentum) * o + momentum * v)
                .collect();
            assign(
                rm,
                &cast_data(&Tensor::from_vec(new, rm.shape()), rm.dtype()),
            )?;
        }
        if let Some(rv) = running_var {
            let old = f64s(rv);
            let unbias = if m > 1.0 {
                m / (m - 1.0)
            } else {
                f64::INFINITY
            };
            let new: Vec<f64> = old
                .iter()
                .zip(&var)
                .map(|(o, v)| (1.0 - momentum) * o + momentum * v * unbias)
                .collect();
            assign(
                rv,
                &cast_data(&Tensor::from_vec(new, rv.shape()), rv.dtype()),
            )?;
        }
    }
    Ok(out)
}

/// `F.group_norm`: statistics per sample over groups of `c / groups` channels.
pub fn group_norm(
    x: &Tensor,
    groups: i64,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    check_float(x, "group_norm")?;
    let shape = x.shape();
    if shape.len() < 2 {
        return Err(Error::runtime(format!(
            "Expected at least 2 dimensions for input tensor but received {}",
            shape.len()
        )));
    }
    let (n, c) = (shape[0], shape[1]);
    if groups <= 0 || c % groups as usize != 0 {
        return Err(Error::runtime(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={groups}",
            fmt_shape(&shape)
        )));
    }
    check_same_dtype(x, &[w, b])?;
    for (p, what) in [(w, "weight"), (b, "bias")] {
        if let Some(p) = p {
            if p.ndim() != 1 || p.numel() != c {
                return Err(Error::runtime(format!(
                    "Expected {what} to be a vector of size equal to the number of channels in input, but got {what} of shape {} and input of shape {}",
                    fmt_shape(&p.shape()),
                    fmt_shape(&shape)
                )));
            }
        }
    }
    let s: usize = shape[2..].iter().product();
    let l = Blocks {
        n,
        c,
        s,
        groups: groups as usize,
        per_sample: true,
    };
    Ok(block_norm("NativeGroupNormBackward0", x, l, w, b, None, eps)?.0)
}

/// `F.layer_norm`: statistics over the trailing `normalized_shape`
/// dimensions, affine parameters of that shape.
pub fn layer_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    check_float(x, "LayerNormKernelImpl")?;
    let shape = x.shape();
    let k = normalized_shape.len();
    if k == 0 {
        return Err(Error::runtime(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []",
        ));
    }
    for (p, what) in [(w, "weight"), (b, "bias")] {
        if let Some(p) = p {
            if p.shape().as_slice() != normalized_shape {
                return Err(Error::runtime(format!(
                    "Expected {what} to be of same shape as normalized_shape, but got {what} of shape {} and normalized_shape = {}",
                    fmt_shape(&p.shape()),
                    fmt_shape(normalized_shape)
                )));
            }
        }
    }
    if shape.len() < k || &shape[shape.len() - k..] != normalized_shape {
        let mut expected = String::from("[*");
        for d in normalized_shape {
            expected.push_str(&format!(", {d}"));
        }
        expected.push(']');
        return Err(Error::runtime(format!(
            "Given normalized_shape={}, expected input with shape {expected}, but got input of size{}",
            fmt_shape(normalized_shape),
            fmt_shape(&shape)
        )));
    }
    check_same_dtype(x, &[w, b])?;
    let m: usize = normalized_shape.iter().product();
    let rows = x.numel().checked_div(m).unwrap_or(0);
    let xd = super::compute_contig(x);
    let (wd, bd) = (w.map(super::compute_contig), b.map(super::compute_contig));
    // float16/bfloat16 in float32: the statistics stay float32 (as PyTorch
    // keeps them), the output is rounded once.
    let (out, mean_t, rstd_t) = crate::dispatch_float!(xd.dtype(), T => {
        let (xv, wv, bv) = (xd.view(), wd.as_ref().map(|t| t.view()), bd.as_ref().map(|t| t.view()));
        let data = xv.as_slice::<T>().unwrap_or(&[]);
        let ws = wv.as_ref().and_then(|v| v.as_slice::<T>());
        let bs = bv.as_ref().and_then(|v| v.as_slice::<T>());
        let (y, mu, rs) = kn::layer_norm(data, m, ws, bs, eps);
        (
            Tensor::from_vec(y, shape.clone()),
            Tensor::from_vec(mu, smallvec![rows]),
            Tensor::from_vec(rs, smallvec![rows]),
        )
    });
    let out = super::back_to(out, x.dtype());
    if needs_record(&[x])
        || w.is_some_and(|w| needs_record(&[w]))
        || b.is_some_and(|b| needs_record(&[b]))
    {
        let (has_w, has_b) = (w.is_some(), b.is_some());
        let ns: Shape = normalized_shape.into();
        record(
            "NativeLayerNormBackward0",
            &node_inputs(x, w, b),
            &out,
            saved![x, w, &mean_t, &rstd_t],
            move |c| {
                let g = c.grad()?;
                let x = c.saved(0)?;
                let w = if has_w { Some(c.saved(1)?) } else { None };
                let shape = x.shape();
                let dt = x.dtype();
                if is_grad_enabled() {
                    let xs = reshape(x, &[rows, m])?;
                    let gs = reshape(&expand(g, &shape)?, &[rows, m])?;
                    let gw = match w {
                        Some(w) => mul(&gs, &reshape(w, &[m])?)?,
                        None => gs.clone(),
                    };
                    let d: [i64; 1] = [1];
                    let mu = mean(&xs, Some(&d), true)?;
                    let xc = sub(&xs, &mu)?;
                    let var = mean(&mul(&xc, &xc)?, Some(&d), true)?;
                    let rs = rsqrt(&add_scalar(&var, Scalar::Float(eps))?)?;
                    let xhat = mul(&xc, &rs)?;
                    let a = mean(&gw, Some(&d), true)?;
                    let bb = mean(&mul(&gw, &xhat)?, Some(&d), true)?;
                    let dx = mul(&rs, &sub(&sub(&gw, &a)?, &mul(&xhat, &bb)?)?)?;
                    let d0: [i64; 1] = [0];
                    let dw = reshape(&sum(&mul(&gs, &xhat)?, Some(&d0), false)?, &ns)?;
                    let db = reshape(&sum(&gs, Some(&d0), false)?, &ns)?;
                    return Ok(grads_of(c, has_w, has_b, reshape(&dx, &shape)?, dw, db));
                }
                let (mean_t, rstd_t) = (c.saved(2)?, c.saved(3)?);
                let g = super::compute_contig(&dense_grad(g, x)?);
                let xd = super::compute_contig(x);
                let wd = w.map(super::compute_contig);
                let (dx, dw, db) = crate::dispatch_float!(dt.compute(), T => {
                    let (gv, xv, mv, rv) = (g.view(), xd.view(), mean_t.view(), rstd_t.view());
                    let wv = wd.as_ref().map(|t| t.view());
                    let ws = wv.as_ref().and_then(|v| v.as_slice::<T>());
                    let (dx, dw, db) = kn::layer_norm_backward(
                        gv.as_slice::<T>().unwrap_or(&[]),
                        xv.as_slice::<T>().unwrap_or(&[]),
                        m,
                        mv.as_slice::<T>().unwrap_or(&[]),
                        rv.as_slice::<T>().unwrap_or(&[]),
                        ws,
                    );
                    (Tensor::from_vec(dx, shape.clone()), dw, db)
                });
                let dx = super::back_to(dx, dt);
                let dw = cast_data(&Tensor::from_vec(dw, ns.clone()), dt);
                let db = cast_data(&Tensor::from_vec(db, ns.clone()), dt);
                Ok(grads_of(c, has_w, has_b, dx, dw, db))
            },
        );
    }
    Ok(out)
}

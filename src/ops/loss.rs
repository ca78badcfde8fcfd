//! Loss functions. Each loss PyTorch implements as one op is one recorded
//! node here too, under PyTorch's name: the forward is computed outside the
//! graph and the backward rule, written in differentiable ops, sits next to
//! it. `l1_loss` stays a composite, as in PyTorch.

use smallvec::smallvec;

use super::{
    abs, add, add_scalar, clamp, div, div_scalar1, log, lt, mean, mul, mul_f64, mul_scalar1, neg,
    reshape, rsub_scalar, sigmoid, sign, softplus, sub, sum, to_dtype, where_, Scalar,
};
use crate::autograd::{is_grad_enabled, needs_record, record, BackwardCtx, GradModeGuard, Grads};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{fmt_shape, DType, Element, Float, Shape, Tensor};

/// How a loss combines per-element values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reduction {
    None,
    Mean,
    Sum,
}

impl Reduction {
    pub(crate) fn parse(s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(Error::value(format!(
                "{other} is not a valid value for reduction"
            ))),
        }
    }
}

fn reduce(x: &Tensor, reduction: Reduction) -> Result<Tensor> {
    match reduction {
        Reduction::None => Ok(x.clone()),
        Reduction::Mean => mean(x, None, false),
        Reduction::Sum => sum(x, None, false),
    }
}

/// The gradient of the per-element losses given the output's gradient `g`:
/// `g` itself, or `g / n` after a mean over `n` elements.
fn unreduce(g: &Tensor, reduction: Reduction, n: usize) -> Result<Tensor> {
    match reduction {
        Reduction::Mean => mul_f64(g, 1.0 / n.max(1) as f64),
        _ => Ok(g.clone()),
    }
}

/// Gradients for `(input, target)` of a loss of `input - target`, from the
/// input's: the target's is its negation.
fn difference_grads(c: &BackwardCtx<'_>, gi: Tensor) -> Result<Grads> {
    let gt = if c.needs(1) { Some(neg(&gi)?) } else { None };
    Ok(smallvec![c.needs(0).then_some(gi), gt])
}

/// An optional saved tensor (`weight`, `pos_weight`).
fn saved_opt<'a>(c: &'a BackwardCtx<'_>, i: usize) -> Option<&'a Tensor> {
    c.saved.get(i).and_then(Option::as_ref)
}

/// Mean squared error (`MseLossBackward0`).
pub(crate) fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    let (si, st) = (input.shape(), target.shape());
    if si != st {
        // PyTorch warns and broadcasts; broadcasting still has to succeed.
        crate::tensor::broadcast_shapes(&si, &st).map_err(|_| {
            Error::runtime(format!(
                "mse_loss: input shape {} and target shape {} do not broadcast",
                fmt_shape(&si),
                fmt_shape(&st)
            ))
        })?;
    }
    let out = {
        let _g = GradModeGuard::new(false);
        let d = sub(input, target)?;
        reduce(&mul(&d, &d)?, reduction)?
    };
    if needs_record(&[input, target]) {
        record(
            "MseLossBackward0",
            &[input, target],
            &out,
            saved![input, target],
            move |c| {
                let (x, y) = (c.saved(0)?, c.saved(1)?);
                let d = sub(x, y)?;
                let scale = match reduction {
                    Reduction::Mean => 2.0 / d.numel().max(1) as f64,
                    _ => 2.0,
                };
                difference_grads(c, mul(&mul_f64(&d, scale)?, c.grad()?)?)
            },
        );
    }
    Ok(out)
}

fn check_same_shape(input: &Tensor, target: &Tensor, op: &str) -> Result<()> {
    let (si, st) = (input.shape(), target.shape());
    if si != st {
        return Err(Error::value(format!(
            "{op}: Using a target size ({}) that is different to the input size ({}) is not supported. Please ensure they have the same size.",
            fmt_shape(&st),
            fmt_shape(&si)
        )));
    }
    Ok(())
}

/// Mean absolute error: a composite (`AbsBackward0` under the reduction), as
/// in PyTorch.
pub(crate) fn l1_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    crate::tensor::broadcast_shapes(&input.shape(), &target.shape())?;
    reduce(&abs(&sub(input, target)?)?, reduction)
}

/// Per-element `0.5 d^2 / beta` where `|d| < beta`, `|d| - 0.5 beta` elsewhere.
fn smooth_l1_values(input: &Tensor, target: &Tensor, beta: f64) -> Result<Tensor> {
    let d = abs(&sub(input, target)?)?;
    let quad = mul_f64(&mul(&d, &d)?, 0.5 / beta)?;
    let lin = add_scalar(&d, Scalar::Float(-0.5 * beta))?;
    let small = lt(&d, &Tensor::scalar_of(beta, d.dtype()))?;
    where_(&small, &quad, &lin)
}

/// `d = input - target` and whether `|d| < bound`, for the rules below.
fn difference_inside(c: &BackwardCtx<'_>, bound: f64) -> Result<(Tensor, Tensor)> {
    let d = sub(c.saved(0)?, c.saved(1)?)?;
    let inside = lt(&abs(&d)?, &Tensor::scalar_of(bound, d.dtype()))?;
    Ok((d, inside))
}

/// Huber loss scaled by `1 / beta` (`SmoothL1LossBackward0`); `beta == 0` is
/// `l1_loss`, as in PyTorch.
pub(crate) fn smooth_l1_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    beta: f64,
) -> Result<Tensor> {
    if beta < 0.0 {
        return Err(Error::runtime(
            "smooth_l1_loss does not support negative values for beta.",
        ));
    }
    if beta == 0.0 {
        return l1_loss(input, target, reduction);
    }
    let (out, n) = {
        let _g = GradModeGuard::new(false);
        let l = smooth_l1_values(input, target, beta)?;
        (reduce(&l, reduction)?, l.numel())
    };
    if needs_record(&[input, target]) {
        record(
            "SmoothL1LossBackward0",
            &[input, target],
            &out,
            saved![input, target],
            move |c| {
                // d / beta inside (-beta, beta), sign(d) outside.
                let (d, inside) = difference_inside(c, beta)?;
                let slope = where_(
                    &inside,
                    &super::div_scalar(&d, Scalar::Float(beta))?,
                    &sign(&d)?,
                )?;
                difference_grads(c, mul(&slope, &unreduce(c.grad()?, reduction, n)?)?)
            },
        );
    }
    Ok(out)
}

/// `huber_loss(delta)`: `smooth_l1_loss(beta=delta) * delta` (`HuberLossBackward0`).
pub(crate) fn huber_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    delta: f64,
) -> Result<Tensor> {
    if delta <= 0.0 {
        return Err(Error::runtime(
            "huber_loss does not support non-positive values for delta.",
        ));
    }
    let (out, n) = {
        let _g = GradModeGuard::new(false);
        let l = smooth_l1_values(input, target, delta)?;
        (mul_f64(&reduce(&l, reduction)?, delta)?, l.numel())
    };
    if needs_record(&[input, target]) {
        record(
            "HuberLossBackward0",
            &[input, target],
            &out,
            saved![input, target],
            move |c| {
                // d inside (-delta, delta), delta * sign(d) outside.
                let (d, inside) = difference_inside(c, delta)?;
                let slope = where_(&inside, &d, &mul_f64(&sign(&d)?, delta)?)?;
                difference_grads(c, mul(&slope, &unreduce(c.grad()?, reduction, n)?)?)
            },
        );
    }
    Ok(out)
}

/// `log(x)` clamped below at -100, as PyTorch's binary cross entropy takes it.
fn clamped_log(x: &Tensor) -> Result<Tensor> {
    let lo = Tensor::scalar_of(-100.0, x.dtype().to_float());
    clamp(&log(x)?, Some(&lo), None, false)
}

/// Per-element `-w (y log(x) + (1 - y) log(1 - x))`.
fn bce_values(input: &Tensor, target: &Tensor, weight: Option<&Tensor>) -> Result<Tensor> {
    let log_x = clamped_log(input)?;
    let log_1mx = clamped_log(&rsub_scalar(input, Scalar::Int(1))?)?;
    let one_m_y = rsub_scalar(target, Scalar::Int(1))?;
    let l = neg(&add(&mul(target, &log_x)?, &mul(&one_m_y, &log_1mx)?)?)?;
    match weight {
        Some(w) => mul(&l, w),
        None => Ok(l),
    }
}

/// Whether a weight of a loss requires grad while grad mode is on. PyTorch
/// refuses to differentiate loss weights; ferrograd differentiates the
/// composite form of the loss instead.
fn weights_need_grad(weights: &[Option<&Tensor>]) -> bool {
    weights.iter().flatten().any(|w| w.requires_grad()) && is_grad_enabled()
}

/// PyTorch's floor on `x (1 - x)` in the gradient of binary cross entropy
/// (a single-precision constant there too).
const BCE_EPSILON: f32 = 1e-12;

/// Binary cross entropy on probabilities (`BinaryCrossEntropyBackward0`);
/// logs are clamped at -100 as in PyTorch so that 0 and 1 give finite losses.
pub(crate) fn binary_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    check_same_shape(input, target, "binary_cross_entropy")?;
    if weights_need_grad(&[weight]) {
        return reduce(&bce_values(input, target, weight)?, reduction);
    }
    let (out, n) = {
        let _g = GradModeGuard::new(false);
        let l = bce_values(input, target, weight)?;
        (reduce(&l, reduction)?, l.numel())
    };
    if needs_record(&[input, target]) {
        record(
            "BinaryCrossEntropyBackward0",
            &[input, target],
            &out,
            saved![input, target, weight],
            move |c| {
                let (x, y) = (c.saved(0)?, c.saved(1)?);
                let mut g = unreduce(c.grad()?, reduction, n)?;
                if let Some(w) = saved_opt(c, 2) {
                    g = mul(&g, w)?;
                }
                let gi = if c.needs(0) {
                    // PyTorch's rule: g (x - y) / max(x (1 - x), 1e-12).
                    let var = mul(&rsub_scalar(x, Scalar::Int(1))?, x)?;
                    let eps = Tensor::scalar_of(f64::from(BCE_EPSILON), var.dtype());
                    let var = clamp(&var, Some(&eps), None, false)?;
                    Some(div(&mul(&g, &sub(x, y)?)?, &var)?)
                } else {
                    None
                };
                let gt = if c.needs(1) {
                    // The loss is linear in y: the slope is the difference of the clamped logs.
                    let slope = sub(
                        &clamped_log(&rsub_scalar(x, Scalar::Int(1))?)?,
                        &clamped_log(x)?,
                    )?;
                    Some(mul(&g, &slope)?)
                } else {
                    None
                };
                Ok(smallvec![gi, gt])
            },
        );
    }
    Ok(out)
}

/// Per-element `w (pos_weight y softplus(-x) + (1 - y) softplus(x))`, which
/// is `-w (pos_weight y log(sigmoid(x)) + (1 - y) log(1 - sigmoid(x)))`
/// without overflow for any logit.
fn bce_logits_values(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
) -> Result<Tensor> {
    let sp_neg = softplus(&neg(input)?, 1.0, f64::INFINITY)?;
    let sp_pos = softplus(input, 1.0, f64::INFINITY)?;
    let one_m_y = rsub_scalar(target, Scalar::Int(1))?;
    let pos_term = match pos_weight {
        Some(pw) => mul(&mul(pw, target)?, &sp_neg)?,
        None => mul(target, &sp_neg)?,
    };
    let l = add(&pos_term, &mul(&one_m_y, &sp_pos)?)?;
    match weight {
        Some(w) => mul(&l, w),
        None => Ok(l),
    }
}

/// Binary cross entropy on logits (`BinaryCrossEntropyWithLogitsBackward0`),
/// with `pos_weight` on the positive term.
pub(crate) fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    check_same_shape(input, target, "binary_cross_entropy_with_logits")?;
    if weights_need_grad(&[weight, pos_weight]) {
        return reduce(
            &bce_logits_values(input, target, weight, pos_weight)?,
            reduction,
        );
    }
    let (out, n) = {
        let _g = GradModeGuard::new(false);
        let l = bce_logits_values(input, target, weight, pos_weight)?;
        (reduce(&l, reduction)?, l.numel())
    };
    if needs_record(&[input, target]) {
        record(
            "BinaryCrossEntropyWithLogitsBackward0",
            &[input, target],
            &out,
            saved![input, target, weight, pos_weight],
            move |c| {
                let (x, y) = (c.saved(0)?, c.saved(1)?);
                let pw = saved_opt(c, 3);
                let mut g = unreduce(c.grad()?, reduction, n)?;
                if let Some(w) = saved_opt(c, 2) {
                    g = mul(&g, w)?;
                }
                let gi = if c.needs(0) {
                    // sigmoid(x) - y; with pos_weight, (pw y + 1 - y) sigmoid(x) - pw y.
                    let s = sigmoid(x)?;
                    let slope = match pw {
                        None => sub(&s, y)?,
                        Some(pw) => {
                            let t = mul(pw, y)?;
                            let k = sub(&add_scalar(&t, Scalar::Int(1))?, y)?;
                            sub(&mul(&k, &s)?, &t)?
                        }
                    };
                    Some(mul(&slope, &g)?)
                } else {
                    None
                };
                let gt = if c.needs(1) {
                    // -x; with pos_weight, pw softplus(-x) - softplus(x).
                    let slope = match pw {
                        None => neg(x)?,
                        Some(pw) => sub(
                            &mul(pw, &softplus(&neg(x)?, 1.0, f64::INFINITY)?)?,
                            &softplus(x, 1.0, f64::INFINITY)?,
                        )?,
                    };
                    Some(mul(&slope, &g)?)
                } else {
                    None
                };
                Ok(smallvec![gi, gt])
            },
        );
    }
    Ok(out)
}

// ----- nll_loss --------------------------------------------------------------

/// PyTorch's checks of `nll_loss`'s arguments. Returns the shape of the
/// unreduced loss: the target's.
fn check_nll(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
) -> Result<Shape> {
    if target.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "expected scalar type Long but found {}",
            target.dtype().scalar_name()
        )));
    }
    let (si, st) = (input.shape(), target.shape());
    let multi_target = || {
        Error::runtime(format!(
            "0D or 1D target tensor expected, multi-target not supported (target shape {})",
            fmt_shape(&st)
        ))
    };
    let (c, out_shape) = match si.len() {
        0 => {
            return Err(Error::index(
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)",
            ))
        }
        1 => {
            if !st.is_empty() {
                return Err(multi_target());
            }
            (si[0], Shape::new())
        }
        _ => {
            let mut expect: Shape = smallvec![si[0]];
            expect.extend_from_slice(&si[2..]);
            if st != expect {
                if si.len() == 2 && st.len() != 1 {
                    return Err(multi_target());
                }
                return Err(Error::runtime(format!(
                    "Expected input batch_size ({}) to match target batch_size ({}).",
                    si[0],
                    st.first().copied().unwrap_or(0)
                )));
            }
            (si[1], expect)
        }
    };
    if let Some(w) = weight {
        if w.shape().as_slice() != [c] {
            return Err(Error::runtime(format!(
                "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {}",
                fmt_shape(&w.shape())
            )));
        }
    }
    if !input.dtype().is_float() {
        return Err(Error::runtime(format!(
            "\"nll_loss_out_frame\" not implemented for '{}'",
            input.dtype().scalar_name()
        )));
    }
    if let Some(w) = weight {
        if w.dtype() != input.dtype() {
            return Err(Error::runtime(format!(
                "expected scalar type {} but found {}",
                input.dtype().scalar_name(),
                w.dtype().scalar_name()
            )));
        }
    }
    for k in target.to_vec::<i64>() {
        if k != ignore_index {
            class_index(k, c)?;
        }
    }
    Ok(out_shape)
}

fn class_index(k: i64, c: usize) -> Result<usize> {
    usize::try_from(k)
        .ok()
        .filter(|&k| k < c)
        .ok_or_else(|| Error::index(format!("Target {k} is out of bounds.")))
}

/// The weight of class `k` (checked to exist by [`check_nll`]); 1 without weights.
fn class_weight<T: Float>(weight: Option<&[T]>, k: usize) -> T {
    match weight {
        Some(w) => w.get(k).copied().unwrap_or(<T as Element>::zero()),
        None => <T as Element>::one(),
    }
}

/// Classes and elements per class and sample of a `[C]`, `[N, C]` or
/// `[N, C, d1, ...]` input: element `(n, k, d)` is at `(n C + k) inner + d`.
fn class_layout(shape: &[usize]) -> (usize, usize) {
    match shape {
        [c] => (*c, 1),
        [_, c, rest @ ..] => (*c, rest.iter().product()),
        [] => (1, 1),
    }
}

/// The elements of `t` in row-major order, borrowed when it is contiguous.
fn with_slice<T: Float, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> R {
    let v = t.view();
    match v.as_slice::<T>() {
        Some(s) => f(s),
        None => f(&crate::kernels::copy::gather::<T>(&v)),
    }
}

/// Per-element `-w[t] x[n, t, d]` and `w[t]` (both 0 where `t` is
/// `ignore_index`), flat, for a float `x` laid out as [`class_layout`] says.
fn nll_elements(
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    let dt = x.dtype();
    if !dt.is_float() {
        return Err(Error::runtime(format!(
            "\"nll_loss_out_frame\" not implemented for '{}'",
            dt.scalar_name()
        )));
    }
    let (c, inner) = class_layout(&x.shape());
    let tv = target.to_vec::<i64>();
    let m = tv.len();
    crate::dispatch_float!(dt, T => {
        let wv = weight.map(|w| w.to_vec::<T>());
        let mut l: Vec<T> = crate::error::alloc_vec(m);
        let mut wt: Vec<T> = crate::error::alloc_vec(m);
        with_slice::<T, Result<()>>(x, |xs| {
            for (i, &k) in tv.iter().enumerate() {
                if k == ignore_index {
                    l.push(T::zero());
                    wt.push(T::zero());
                    continue;
                }
                let k = class_index(k, c)?;
                let wk = class_weight(wv.as_deref(), k);
                let at = (i / inner * c + k) * inner + i % inner;
                let xk = *xs.get(at).ok_or_else(|| Error::runtime("nll_loss: target does not match input"))?;
                l.push(-(xk * wk));
                wt.push(wk);
            }
            Ok(())
        })?;
        Ok((Tensor::from_vec(l, smallvec![m]), Tensor::from_vec(wt, smallvec![m])))
    })
}

/// `d nll / d x` for the scaled output gradient `g` (one value, or one per
/// element with `reduction='none'`): `-w[t] g` at each target class, 0
/// elsewhere.
fn nll_grad_data(
    g: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    per_element: bool,
    shape: &Shape,
) -> Result<Tensor> {
    let dt = g.dtype();
    let (c, inner) = class_layout(shape);
    let tv = target.to_vec::<i64>();
    crate::dispatch_float!(dt, T => {
        let gv = g.to_vec::<T>();
        let wv = weight.map(|w| w.to_vec::<T>());
        let mut out = crate::error::filled_vec(crate::tensor::numel(shape), T::zero());
        for (i, &k) in tv.iter().enumerate() {
            if k == ignore_index {
                continue;
            }
            let k = class_index(k, c)?;
            let wk = class_weight(wv.as_deref(), k);
            let gi = gv.get(if per_element { i } else { 0 }).copied().unwrap_or(T::zero());
            if let Some(slot) = out.get_mut((i / inner * c + k) * inner + i % inner) {
                *slot = gi * -wk;
            }
        }
        Ok(Tensor::from_vec(out, shape.clone()))
    })
}

/// Node names of one `nll_loss` variant and of its backward.
#[derive(Clone, Copy)]
struct NllNames {
    forward: &'static str,
    backward: &'static str,
}

const NLL: NllNames = NllNames {
    forward: "NllLossBackward0",
    backward: "NllLossBackwardBackward0",
};

const NLL_2D: NllNames = NllNames {
    forward: "NllLoss2DBackward0",
    backward: "NllLoss2DBackwardBackward0",
};

/// `nll_loss` of a `[C]`, `[N, C]` or `[N, C, H, W]` input as one node.
fn nll_node(
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    names: NllNames,
) -> Result<Tensor> {
    let (out, total_weight) = {
        let _g = GradModeGuard::new(false);
        let (l, w) = nll_elements(x, target, weight, ignore_index)?;
        match reduction {
            Reduction::None => (reshape(&l, &target.shape())?, None),
            Reduction::Sum => (sum(&l, None, false)?, None),
            Reduction::Mean => {
                let total = sum(&w, None, false)?;
                (div(&sum(&l, None, false)?, &total)?, Some(total))
            }
        }
    };
    if needs_record(&[x]) {
        let (shape, dt) = (x.shape(), x.dtype());
        record(
            names.forward,
            &[x],
            &out,
            saved![target, weight, x],
            move |c| {
                let gx = nll_backward(
                    c.grad()?,
                    c.saved(2)?,
                    c.saved(0)?,
                    saved_opt(c, 1),
                    ignore_index,
                    reduction,
                    total_weight.as_ref(),
                    &shape,
                    dt,
                    names,
                )?;
                Ok(smallvec![Some(gx)])
            },
        );
    }
    Ok(out)
}

/// The backward of [`nll_node`] on input `x`, itself a node: linear in `g`,
/// so its gradient is `nll_loss` of the incoming gradient, and constant in
/// `x` (which PyTorch still lists as an input, with a zero gradient).
#[allow(clippy::too_many_arguments)]
fn nll_backward(
    g: &Tensor,
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    total_weight: Option<&Tensor>,
    shape: &Shape,
    dt: DType,
    names: NllNames,
) -> Result<Tensor> {
    let g = to_dtype(g, dt)?;
    let gx = {
        let _g = GradModeGuard::new(false);
        let g = match total_weight {
            Some(total) => div(&g, total)?,
            None => g.clone(),
        };
        let per_element = reduction == Reduction::None;
        nll_grad_data(&g, target, weight, ignore_index, per_element, shape)?
    };
    if needs_record(&[&g, x]) {
        let shape = shape.clone();
        record(
            names.backward,
            &[&g, x],
            &gx,
            saved![target, weight],
            move |c| {
                let gg = if c.needs(0) {
                    Some(nll_node(
                        c.grad()?,
                        c.saved(0)?,
                        saved_opt(c, 1),
                        ignore_index,
                        reduction,
                        names,
                    )?)
                } else {
                    None
                };
                let gx = c.needs(1).then(|| Tensor::zeros(shape.clone(), dt));
                Ok(smallvec![gg, gx])
            },
        );
    }
    Ok(gx)
}

/// Negative log likelihood of class indices under log-probabilities, with
/// class weights, `ignore_index` and PyTorch's weighted mean. One node, as
/// in PyTorch: `NllLossBackward0` for `[C]` and `[N, C]` inputs,
/// `NllLoss2DBackward0` for `[N, C, H, W]`, and other shapes viewed as
/// `[N, C, 1, -1]` (the unreduced loss viewed back).
pub(crate) fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    let out_shape = check_nll(input, target, weight, ignore_index)?;
    if weights_need_grad(&[weight]) {
        return nll_loss_composite(input, target, weight, ignore_index, reduction);
    }
    let si = input.shape();
    match si.len() {
        1 | 2 => nll_node(input, target, weight, ignore_index, reduction, NLL),
        4 => nll_node(input, target, weight, ignore_index, reduction, NLL_2D),
        _ => {
            let (n, c) = (si[0] as i64, si[1] as i64);
            let inner = si[2..].iter().product::<usize>() as i64;
            let x = super::view(&super::contiguous(input)?, &[n, c, 1, inner])?;
            let t = super::view(&super::contiguous(target)?, &[n, 1, inner])?;
            let out = nll_node(&x, &t, weight, ignore_index, reduction, NLL_2D)?;
            match reduction {
                Reduction::None => {
                    let s: Vec<i64> = out_shape.iter().map(|&d| d as i64).collect();
                    super::view(&out, &s)
                }
                _ => Ok(out),
            }
        }
    }
}

/// Moves the class dimension (1) of `[N, C, d1, ...]` last and flattens:
/// `[M, C]` plus the target flattened to `[M]`.
fn flatten_classes(input: &Tensor, target: &Tensor) -> Result<(Tensor, Tensor)> {
    let si = input.shape();
    if si.len() == 1 {
        return Ok((super::unsqueeze(input, 0)?, super::reshape(target, &[1])?));
    }
    let c = si[1];
    let m = target.numel();
    let moved = super::movedim(input, 1, -1)?;
    Ok((
        super::reshape(&moved, &[m, c])?,
        super::reshape(target, &[m])?,
    ))
}

/// `nll_loss` built of differentiable ops, for a `weight` that requires
/// grad (which PyTorch refuses).
fn nll_loss_composite(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    let out_shape = target.shape();
    let (x, t) = flatten_classes(input, target)?;
    let tv = t.to_vec::<i64>();
    let keep: Vec<bool> = tv.iter().map(|&k| k != ignore_index).collect();
    let m = tv.len();
    let safe: Vec<i64> = tv
        .iter()
        .map(|&k| if k == ignore_index { 0 } else { k })
        .collect();
    let safe = Tensor::from_vec(safe, smallvec![m, 1]);
    let picked = super::reshape(&super::gather(&x, 1, &safe)?, &[m])?;
    let keep_t = super::cast_data(&Tensor::from_vec(keep, smallvec![m]), x.dtype());
    let w = match weight {
        Some(w) => mul(
            &super::index_select(w, 0, &super::reshape(&safe, &[m])?)?,
            &keep_t,
        )?,
        None => keep_t,
    };
    let l = neg(&mul(&picked, &w)?)?;
    match reduction {
        Reduction::None => super::reshape(&l, &out_shape),
        Reduction::Sum => sum(&l, None, false),
        Reduction::Mean => div(&sum(&l, None, false)?, &sum(&w, None, false)?),
    }
}

/// `cross_entropy`: log_softmax over the class dimension, then `nll_loss`
/// (class indices) or a soft-target sum (class probabilities), with
/// PyTorch's label smoothing; the graph is PyTorch's.
pub(crate) fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::runtime(format!(
            "label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
        )));
    }
    let class_dim = if input.ndim() == 1 { 0 } else { 1 };
    let logp = super::log_softmax(input, class_dim, None)?;
    let c = input.shape().get(class_dim as usize).copied().unwrap_or(1);
    // Weight shaped to broadcast along the class dimension.
    let wb = match weight {
        Some(w) => {
            let mut s: Shape = smallvec::SmallVec::from_elem(1, input.ndim());
            s[class_dim as usize] = c;
            Some(super::reshape(w, &s)?)
        }
        None => None,
    };
    if target.dtype().is_float() {
        if target.shape() != input.shape() {
            return Err(Error::runtime(format!(
                "Expected target size {}, got {}",
                fmt_shape(&input.shape()),
                fmt_shape(&target.shape())
            )));
        }
        let t = if label_smoothing > 0.0 {
            add_scalar(
                &mul_f64(target, 1.0 - label_smoothing)?,
                Scalar::Float(label_smoothing / c as f64),
            )?
        } else {
            target.clone()
        };
        let mut prod = mul(&logp, &t)?;
        if let Some(w) = &wb {
            prod = mul(&prod, w)?;
        }
        return match reduction {
            Reduction::None => neg(&sum(&prod, Some(&[class_dim]), false)?),
            Reduction::Sum => neg(&sum(&prod, None, false)?),
            Reduction::Mean => {
                // Over the samples; 0 / 0 = nan for an empty batch, as in PyTorch.
                let samples = input.numel().checked_div(c).unwrap_or(0);
                div_scalar1(&neg(&sum(&prod, None, false)?)?, samples as f64)
            }
        };
    }
    let nll = nll_loss(&logp, target, weight, ignore_index, reduction)?;
    if label_smoothing == 0.0 {
        return Ok(nll);
    }
    let ignored = super::eq(target, &Tensor::scalar(ignore_index))?;
    let weighted = match &wb {
        Some(w) => mul(&logp, w)?,
        None => logp.clone(),
    };
    let smooth = neg(&sum(&weighted, Some(&[class_dim]), false)?)?;
    let smooth = super::masked_fill_scalar(&smooth, &ignored, Scalar::Float(0.0))?;
    let ret = match reduction {
        Reduction::None => smooth,
        Reduction::Sum => sum(&smooth, None, false)?,
        Reduction::Mean => {
            let denom = match weight {
                Some(w) => {
                    let kept = super::logical_not(&ignored)?;
                    let safe = super::masked_fill_scalar(target, &ignored, Scalar::Int(0))?;
                    let flat = super::reshape(&safe, &[safe.numel()])?;
                    let tw = super::index_select(w, 0, &flat)?;
                    let kept_f = super::cast_data(&kept, tw.dtype());
                    sum(
                        &mul(&tw, &super::reshape(&kept_f, &[kept_f.numel()])?)?,
                        None,
                        false,
                    )?
                }
                None => {
                    let kept = super::logical_not(&ignored)?;
                    super::cast_data(&sum(&kept, None, false)?, logp.dtype())
                }
            };
            div(&sum(&smooth, None, false)?, &denom)?
        }
    };
    add(
        &mul_scalar1(&nll, 1.0 - label_smoothing)?,
        &mul_scalar1(&ret, label_smoothing / c as f64)?,
    )
}

//! Loss functions. Each loss PyTorch implements as one op is one recorded
//! node here too, under PyTorch's name: the forward is computed outside the
//! graph and the backward rule, written in differentiable ops, sits next to
//! it. `l1_loss` stays a composite, as in PyTorch.

use smallvec::smallvec;

use super::arith::map2;
use super::{
    abs, add, add_scalar, clamp, div, log, lt, mean, mul, mul_f64, neg, rsub_scalar, sigmoid, sign,
    softplus, sub, sum, where_, Scalar,
};
use crate::autograd::{is_grad_enabled, needs_record, record, BackwardCtx, GradModeGuard, Grads};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{broadcast_shapes, fmt_shape, DType, Tensor};

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
pub(super) fn saved_opt<'a>(c: &'a BackwardCtx<'_>, i: usize) -> Option<&'a Tensor> {
    c.saved.get(i).and_then(Option::as_ref)
}

/// Whether `input` and `target` take the fused one-pass loops below: one
/// float dtype (float32/float64) and one shape.
fn fusable(input: &Tensor, target: &Tensor) -> bool {
    let dt = input.dtype();
    target.dtype() == dt && matches!(dt, DType::F32 | DType::F64) && input.shape() == target.shape()
}

/// `input` and `target` as flat runs of their memory when both are dense with
/// the same non-row-major strides (a transposed pair), with the shape and
/// strides to give an elementwise result: the loop then reads memory in
/// order instead of gathering.
fn flat_pair(
    input: &Tensor,
    target: &Tensor,
) -> Option<(Tensor, Tensor, crate::tensor::Shape, crate::tensor::Strides)> {
    let (fa, sh, st) = super::layout::memory_order(input)?;
    let (fb, sh2, st2) = super::layout::memory_order(target)?;
    (sh == sh2 && st == st2).then_some((fa, fb, sh, st))
}

/// `f(input, target)` elementwise, over memory in order for a transposed
/// pair, then reduced: `(loss, number of elements)`.
fn elementwise_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    f: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<(Tensor, usize)> {
    if let Some((fa, fb, sh, st)) = flat_pair(input, target) {
        let l = f(&fa, &fb)?;
        let n = l.numel();
        let out = match reduction {
            Reduction::None => super::layout::restrided(&l, sh, st),
            _ => reduce(&l, reduction)?,
        };
        return Ok((out, n));
    }
    let l = f(input, target)?;
    Ok((reduce(&l, reduction)?, l.numel()))
}

/// A `sum` or `mean` loss of the per-element values `$body` of `$x` (input)
/// and `$y` (target), summed as they are made
/// (`kernels::reduce::sum_mapped`): no loss tensor written and read back.
/// The values, the summation tree and the mean's scaling are those of
/// materialising the values and reducing them, so the result is the same.
/// `Ok(None)` for `reduction='none'`, mixed dtypes or shapes, operands that
/// are not each one dense run in the same order, and no elements.
macro_rules! summed_loss {
    ($input:expr, $target:expr, $reduction:expr, $T:ident, |$x:ident, $y:ident| $body:expr) => {{
        let (input, target): (&Tensor, &Tensor) = ($input, $target);
        let n = input.numel();
        let pair = if $reduction == Reduction::None || n == 0 || !fusable(input, target) {
            None
        } else if input.is_contiguous() && target.is_contiguous() {
            Some((input.clone(), target.clone()))
        } else {
            flat_pair(input, target).map(|(a, b, _, _)| (a, b))
        };
        match pair {
            None => Ok(None),
            Some((a, b)) => {
                let (va, vb) = (a.view(), b.view());
                let dt = input.dtype();
                let total = crate::dispatch_float!(dt, $T => {
                    match (va.as_slice::<$T>(), vb.as_slice::<$T>()) {
                        (Some(a), Some(b)) => {
                            let s: $T = crate::kernels::reduce::sum_mapped(n, |lo, out: &mut [$T]| {
                                let end = lo + out.len();
                                for ((o, &$x), &$y) in out.iter_mut().zip(&a[lo..end]).zip(&b[lo..end]) {
                                    *o = $body;
                                }
                            });
                            Some(Tensor::from_vec(vec![s], crate::tensor::Shape::new()))
                        }
                        _ => None,
                    }
                });
                match (total, $reduction) {
                    (Some(s), Reduction::Mean) => mul_f64(&s, 1.0 / n as f64).map(Some),
                    (total, _) => Ok(total),
                }
            }
        }
    }};
}

/// The input's gradient of a reduced loss of `d = input - target` in one
/// pass, `$body` giving it from `$d` and the (unreduced) output gradient
/// `$gs`; `None` where the recorded rule must run instead (`create_graph`,
/// `reduction='none'`, mixed dtypes or shapes). The target's is its negation.
macro_rules! fused_difference_grad {
    ($c:expr, $reduction:expr, $n:expr, $T:ident, |$d:ident, $gs:ident| $body:expr) => {{
        let c: &BackwardCtx<'_> = $c;
        let (x, y, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
        if is_grad_enabled() || $reduction == Reduction::None || !fusable(x, y) || g.numel() != 1
        {
            None
        } else {
            let gsf = unreduce(g, $reduction, $n)?.item()?;
            let dt = x.dtype();
            let run = |a: &Tensor, b: &Tensor| -> Result<Tensor> {
                Ok(crate::dispatch_float!(dt, $T => {
                    let $gs = gsf as $T;
                    map2!(a, b, dt, $T, |p, q| {
                        let $d = p - q;
                        $body
                    })
                }))
            };
            let gi = match flat_pair(x, y) {
                Some((fa, fb, sh, st)) => super::layout::restrided(&run(&fa, &fb)?, sh, st),
                None => run(x, y)?,
            };
            Some(difference_grads(c, gi))
        }
    }};
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
        let summed = summed_loss!(input, target, reduction, T, |x, y| {
            let d = x - y;
            d * d
        })?;
        if let Some(out) = summed {
            out
        } else if fusable(input, target) {
            // One pass, with the composite's roundings: `(x - y) * (x - y)`.
            let dt = input.dtype();
            elementwise_loss(input, target, reduction, |a, b| {
                Ok(crate::dispatch_float!(dt, T => map2!(a, b, dt, T, |x, y| {
                    let d = x - y;
                    d * d
                })))
            })?
            .0
        } else {
            let d = sub(input, target)?;
            reduce(&mul(&d, &d)?, reduction)?
        }
    };
    if needs_record(&[input, target]) {
        record(
            "MseLossBackward0",
            &[input, target],
            &out,
            saved![input, target],
            move |c| {
                let (x, y) = (c.saved(0)?, c.saved(1)?);
                let scale_of = |n: usize| match reduction {
                    Reduction::Mean => 2.0 / n.max(1) as f64,
                    _ => 2.0,
                };
                // `(d * scale) * g`, as the rule below rounds it (the fused
                // loop needs one shape, so `x` has the loss's element count).
                let fused_scale = scale_of(x.numel());
                if let Some(r) = fused_difference_grad!(c, Reduction::Sum, 1, T, |d, gs| {
                    (d * fused_scale as T) * gs
                }) {
                    return r;
                }
                let d = sub(x, y)?;
                let scale = scale_of(d.numel());
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
    if !needs_record(&[input, target]) && fusable(input, target) {
        // Nothing recorded: one pass, `|x - y|`.
        if let Some(out) = summed_loss!(input, target, reduction, T, |x, y| (x - y).abs())? {
            return Ok(out);
        }
        let dt = input.dtype();
        return Ok(elementwise_loss(input, target, reduction, |a, b| {
            Ok(crate::dispatch_float!(dt, T => map2!(a, b, dt, T, |x, y| (x - y).abs())))
        })?
        .0);
    }
    reduce(&abs(&sub(input, target)?)?, reduction)
}

/// One smooth L1 value: `(d * d) * c` where `d = |x - y| < b`, `d + e`
/// elsewhere (`c = 0.5 / beta`, `e = -0.5 * beta`, each rounded to `T`).
#[inline(always)]
fn smooth_l1_at<T: crate::tensor::Float>(x: T, y: T, b: T, c: T, e: T) -> T {
    let d = (x - y).abs();
    crate::kernels::pick(d < b, (d * d) * c, d + e)
}

/// The reduced smooth L1 values, summed as they are made (`summed_loss!`).
fn smooth_l1_summed(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    beta: f64,
) -> Result<Option<Tensor>> {
    summed_loss!(input, target, reduction, T, |x, y| {
        let (b, c, e) = (beta as T, (0.5 / beta) as T, (-0.5 * beta) as T);
        smooth_l1_at(x, y, b, c, e)
    })
}

/// Per-element `0.5 d^2 / beta` where `|d| < beta`, `|d| - 0.5 beta` elsewhere.
fn smooth_l1_values(input: &Tensor, target: &Tensor, beta: f64) -> Result<Tensor> {
    let dt = input.dtype();
    if target.dtype() == dt && matches!(dt, DType::F32 | DType::F64) {
        // One pass, with the roundings of the composite below (each number
        // rounded to the dtype, then `|d| < beta ? (d * d) * c : |d| + e`).
        return Ok(crate::dispatch_float!(dt, T => {
            let (b, c, e) = (beta as T, (0.5 / beta) as T, (-0.5 * beta) as T);
            // Both sides computed and one selected (`pick`), not branched on.
            map2!(input, target, dt, T, |x, y| smooth_l1_at(x, y, b, c, e))
        }));
    }
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
        match smooth_l1_summed(input, target, reduction, beta)? {
            Some(l) => (l, input.numel()),
            None => elementwise_loss(input, target, reduction, |a, b| {
                smooth_l1_values(a, b, beta)
            })?,
        }
    };
    if needs_record(&[input, target]) {
        record(
            "SmoothL1LossBackward0",
            &[input, target],
            &out,
            saved![input, target],
            move |c| {
                // PyTorch's kernel: -g below -beta, g above beta, (d / beta) g
                // between (and for NaN).
                // Every side computed, then selected (no branch per element).
                if let Some(r) = fused_difference_grad!(c, reduction, n, T, |d, gs| {
                    let b = beta as T;
                    let upper = crate::kernels::pick(d > b, gs, (d / b) * gs);
                    crate::kernels::pick(d < -b, -gs, upper)
                }) {
                    return r;
                }
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
        let (l, n) = match smooth_l1_summed(input, target, reduction, delta)? {
            Some(l) => (l, input.numel()),
            None => elementwise_loss(input, target, reduction, |a, b| {
                smooth_l1_values(a, b, delta)
            })?,
        };
        (mul_f64(&l, delta)?, n)
    };
    if needs_record(&[input, target]) {
        record(
            "HuberLossBackward0",
            &[input, target],
            &out,
            saved![input, target],
            move |c| {
                // PyTorch's kernel: -delta g below -delta, delta g above
                // delta, d g between (and for NaN).
                // Every side computed, then selected (no branch per element).
                if let Some(r) = fused_difference_grad!(c, reduction, n, T, |d, gs| {
                    let b = delta as T;
                    let outer = b * gs;
                    let upper = crate::kernels::pick(d > b, outer, d * gs);
                    crate::kernels::pick(d < -b, -outer, upper)
                }) {
                    return r;
                }
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
pub(super) fn weights_need_grad(weights: &[Option<&Tensor>]) -> bool {
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

/// Per-element `w ((1 - y) x + (1 + (pos_weight - 1) y) softplus(-x))`,
/// PyTorch's form of `-w (pos_weight y log(sigmoid(x)) + (1 - y) log(1 -
/// sigmoid(x)))`: no overflow for any logit, and the same infinities and
/// NaNs as PyTorch where the input or target is not finite.
fn bce_logits_values(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
) -> Result<Tensor> {
    let sp_neg = softplus(&neg(input)?, 1.0, f64::INFINITY)?;
    let one_m_y = rsub_scalar(target, Scalar::Int(1))?;
    let log_term = match pos_weight {
        Some(pw) => {
            let lw = add_scalar(
                &mul(&add_scalar(pw, Scalar::Int(-1))?, target)?,
                Scalar::Int(1),
            )?;
            mul(&lw, &sp_neg)?
        }
        None => sp_neg,
    };
    let l = add(&mul(&one_m_y, input)?, &log_term)?;
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

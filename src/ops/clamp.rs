//! `maximum`, `minimum` and `clamp`: piecewise-linear, so each backward rule
//! is the incoming gradient times a constant mask, which keeps it
//! differentiable to any order.

use smallvec::{smallvec, SmallVec};

use super::arith::map2;
use super::{compare, mul, result_type, where_};
use crate::autograd::{needs_record, record, GradModeGuard};
use crate::error::{Error, Result};
use crate::kernels::elementwise::binary;
use crate::saved;
use crate::tensor::{broadcast_shapes, Arith, Tensor};

type Compare = fn(&Tensor, &Tensor) -> Result<Tensor>;

/// The share of the gradient `a` gets from `maximum(a, b)` (or `minimum`
/// with the comparisons swapped): all of it where it wins, half on a tie (PyTorch's rule).
fn share(a: &Tensor, b: &Tensor, loses: Compare, dt: crate::tensor::DType) -> Result<Tensor> {
    let tie = compare::eq(a, b)?;
    let lost = loses(a, b)?;
    let one = Tensor::scalar_of(1.0, dt);
    let w = where_(&lost, &Tensor::scalar_of(0.0, dt), &one)?;
    where_(&tie, &Tensor::scalar_of(0.5, dt), &w)
}

fn extreme(a: &Tensor, b: &Tensor, name: &'static str, is_max: bool) -> Result<Tensor> {
    let dt = result_type(a, b);
    let out = crate::dispatch!(dt, T => {
        if is_max {
            map2!(a, b, dt, T, |x, y| x.max_of(y))
        } else {
            map2!(a, b, dt, T, |x, y| x.min_of(y))
        }
    });
    if needs_record(&[a, b]) {
        record(name, &[a, b], &out, saved![a, b], move |c| {
            let (a, b, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let (la, lb): (Compare, Compare) = if is_max {
                (compare::lt, compare::gt)
            } else {
                (compare::gt, compare::lt)
            };
            let ga = if c.needs(0) {
                Some(mul(g, &share(a, b, la, g.dtype())?)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(mul(g, &share(a, b, lb, g.dtype())?)?)
            } else {
                None
            };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

/// Elementwise maximum; NaN propagates.
pub(crate) fn maximum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    extreme(a, b, "MaximumBackward0", true)
}

/// Elementwise minimum; NaN propagates.
pub(crate) fn minimum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    extreme(a, b, "MinimumBackward0", false)
}

/// The bounds of a clamp that one pass over `x` can do, as float64 (absent
/// ones infinite): each given bound a single element of `x`'s dtype, so
/// the result keeps it.
fn one_pass_bounds(
    x: &Tensor,
    lo: Option<&Tensor>,
    hi: Option<&Tensor>,
) -> Result<Option<(f64, f64)>> {
    let dt = x.dtype();
    // A one-element bound of no more dimensions than `x` leaves its shape as it is.
    let ok = |b: Option<&Tensor>| {
        b.is_none_or(|b| b.numel() == 1 && b.dtype() == dt && b.ndim() <= x.ndim())
    };
    if !ok(lo) || !ok(hi) || dt == crate::tensor::DType::I64 {
        // int64 bounds may not be exact in float64: the general path.
        return Ok(None);
    }
    let l = lo
        .map(|b| b.item())
        .transpose()?
        .unwrap_or(f64::NEG_INFINITY);
    let h = hi.map(|b| b.item()).transpose()?.unwrap_or(f64::INFINITY);
    Ok(Some((l, h)))
}

/// `clamp` with number bounds in one pass: `x < lo` gives `lo`, then
/// `> hi` gives `hi` (so `hi` wins when `lo > hi`), NaN stays (and a NaN
/// bound gives NaN).
fn clamp_one_pass(x: &Tensor, l: f64, h: f64) -> Result<Tensor> {
    if l.is_nan() || h.is_nan() {
        // A NaN bound gives NaN everywhere, as PyTorch's clamp.
        return super::map1(
            x,
            x.dtype(),
            |_: f32| f32::NAN,
            |_: f64| f64::NAN,
            None::<fn(i64) -> i64>,
        );
    }
    let (l32, h32) = (l as f32, h as f32);
    // Integer bounds are whole numbers within the dtype (checked above).
    let (li, hi) = (l.max(i64::MIN as f64) as i64, h.min(i64::MAX as f64) as i64);
    super::map1(
        x,
        x.dtype(),
        move |v| {
            let y = if v < l32 { l32 } else { v };
            if y > h32 {
                h32
            } else {
                y
            }
        },
        move |v| {
            let y = if v < l { l } else { v };
            if y > h {
                h
            } else {
                y
            }
        },
        Some(move |v: i64| v.max(li).min(hi)),
    )
}

/// `clamp(x, min, max)`; `tensor_bounds` says whether the caller gave the
/// bounds as tensors (PyTorch's `ClampBackward0`) or numbers (`ClampBackward1`).
/// The gradient reaches `x` where `min <= x <= max` (PyTorch's convention at
/// the boundaries), `min` where `x < min`, and `max` where `x > max` (or
/// everywhere if `max < min`, where the result is `max`).
// The one-pass bound below is instantiated for bool too (refused first).
#[allow(clippy::bool_comparison)]
pub(crate) fn clamp(
    x: &Tensor,
    lo: Option<&Tensor>,
    hi: Option<&Tensor>,
    tensor_bounds: bool,
) -> Result<Tensor> {
    if lo.is_none() && hi.is_none() {
        return Err(Error::runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    if x.dtype() == crate::tensor::DType::Bool {
        return Err(Error::runtime("\"clamp_cpu\" not implemented for 'Bool'"));
    }
    let fast = one_pass_bounds(x, lo, hi)?;
    let out = if let Some((l, h)) = fast {
        clamp_one_pass(x, l, h)?
    } else {
        let _g = GradModeGuard::new(false);
        let mut out = x.clone();
        // A bound of `x`'s dtype in one pass (the same choice as the
        // `where` below, NaN and signed zeros included); others promote.
        if let Some(lo) = lo {
            out = if lo.dtype() == out.dtype() {
                let dt = out.dtype();
                crate::dispatch!(dt, T => map2!(&out, lo, dt, T, |v, b| if v < b { b } else { v }))
            } else {
                where_(&compare::lt(&out, lo)?, lo, &out)?
            };
        }
        if let Some(hi) = hi {
            out = if hi.dtype() == out.dtype() {
                let dt = out.dtype();
                crate::dispatch!(dt, T => map2!(&out, hi, dt, T, |v, b| if v > b { b } else { v }))
            } else {
                where_(&compare::gt(&out, hi)?, hi, &out)?
            };
        }
        if out.same(x) {
            super::clone_data(x)
        } else {
            out
        }
    };
    let inputs: SmallVec<[&Tensor; 3]> = std::iter::once(x).chain(lo).chain(hi).collect();
    if needs_record(&inputs) {
        let name = if tensor_bounds {
            "ClampBackward0"
        } else {
            "ClampBackward1"
        };
        let (has_lo, has_hi) = (lo.is_some(), hi.is_some());
        record(name, &inputs, &out, saved![x, lo, hi], move |c| {
            let (g, x) = (c.grad()?, c.saved(0)?);
            if let Some((l, h)) =
                fast.filter(|_| super::can_fuse(g, x) && !c.needs(1) && !c.needs(2))
            {
                // The gradient passes where l <= x <= h, in one pass.
                let (l32, h32) = (l as f32, h as f32);
                let gx = super::fused_grad(
                    g,
                    x,
                    move |g, x| if x >= l32 && x <= h32 { g } else { 0.0 },
                    move |g, x| if x >= l && x <= h { g } else { 0.0 },
                )?;
                let mut grads: crate::autograd::Grads = smallvec![Some(gx)];
                grads.extend((0..usize::from(has_lo) + usize::from(has_hi)).map(|_| None));
                return Ok(grads);
            }
            let lo = has_lo.then(|| c.saved(1)).transpose()?;
            let hi = has_hi.then(|| c.saved(2)).transpose()?;
            let zero = Tensor::scalar_of(0.0, g.dtype());
            let pass = |m: &Tensor| where_(m, g, &zero);
            let mut grads: crate::autograd::Grads = smallvec![None];
            if c.needs(0) {
                let keep = match (lo, hi) {
                    (Some(l), Some(h)) => {
                        compare::logical_and(&compare::ge(x, l)?, &compare::le(x, h)?)?
                    }
                    (Some(l), None) => compare::ge(x, l)?,
                    (None, Some(h)) => compare::le(x, h)?,
                    (None, None) => unreachable!("checked above"),
                };
                grads[0] = Some(pass(&keep)?);
            }
            if let Some(l) = lo {
                let mut g_lo = None;
                if c.needs(1) {
                    let mut below = compare::lt(x, l)?;
                    if let Some(h) = hi {
                        below = compare::logical_and(&below, &compare::lt(l, h)?)?;
                    }
                    g_lo = Some(pass(&below)?);
                }
                grads.push(g_lo);
            }
            if let Some(h) = hi {
                let i = grads.len();
                let mut g_hi = None;
                if c.needs(i) {
                    let mut above = compare::gt(x, h)?;
                    if let Some(l) = lo {
                        above = compare::logical_or(&above, &compare::lt(h, l)?)?;
                    }
                    g_hi = Some(pass(&above)?);
                }
                grads.push(g_hi);
            }
            Ok(grads)
        });
    }
    Ok(out)
}

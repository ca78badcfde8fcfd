//! `maximum`, `minimum` and `clamp`: piecewise-linear, so each backward rule
//! is the incoming gradient times a constant mask, which keeps it
//! differentiable to any order.

use smallvec::{smallvec, SmallVec};

use super::arith::map2;
use super::{compare, mul, result_type, where_};
use crate::autograd::{needs_record, record, GradModeGuard};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{broadcast_shapes, Arith, DType, Tensor};

type Compare = fn(&Tensor, &Tensor) -> Result<Tensor>;

/// The share of the gradient `a` gets from `maximum(a, b)` (or `minimum`
/// with the comparisons swapped): all of it where it wins, half on a tie (PyTorch's rule).
pub(crate) fn share(a: &Tensor, b: &Tensor, loses: Compare, dt: DType) -> Result<Tensor> {
    let tie = compare::eq(a, b)?;
    let lost = loses(a, b)?;
    let one = Tensor::scalar_of(1.0, dt);
    let w = where_(&lost, &Tensor::scalar_of(0.0, dt), &one)?;
    where_(&tie, &Tensor::scalar_of(0.5, dt), &w)
}

/// `g` times its share `w`, selected rather than multiplied where the share
/// is 0, so a NaN or infinite gradient does not leak to the side that lost
/// (PyTorch's rules are `where`s and `masked_fill`s).
pub(crate) fn apply_share(g: &Tensor, w: &Tensor) -> Result<Tensor> {
    let zero = Tensor::scalar_of(0.0, g.dtype());
    where_(&compare::eq(w, &zero)?, &zero, &mul(g, w)?)
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
                Some(apply_share(g, &share(a, b, la, g.dtype())?)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(apply_share(g, &share(a, b, lb, g.dtype())?)?)
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
            #[inline(always)]
            |_: f32| f32::NAN,
            #[inline(always)]
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
        #[inline(always)]
        move |v| {
            let y = if v < l32 { l32 } else { v };
            if y > h32 {
                h32
            } else {
                y
            }
        },
        #[inline(always)]
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

/// `clamp(x, min, max)`: `min(max(x, min), max)` with NaN propagated from
/// any of the three (a NaN bound makes its results NaN, as in PyTorch).
/// `tensor_bounds` says whether the caller gave the bounds as tensors
/// (PyTorch's `ClampBackward0`) or numbers (`ClampBackward1`).
///
/// The gradient follows PyTorch's subgradients. With number bounds it
/// reaches `x` only strictly inside `(min, max)` (not at a bound, not at a
/// NaN). With tensor bounds the bounds are inputs too: a tie of `x` with the
/// bound that limits it splits the gradient in halves, and with one bound
/// the rule is exactly `maximum`'s (or `minimum`'s), NaN included; with two,
/// `min` gets it where `x < min <= max`, `max` where `x > max` or
/// `max < min` (the result is then `max`), and `x` everywhere else.
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
        clamp_composite(x, lo, hi)?
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
            if let Some((l, h)) = fast
                .filter(|_| !tensor_bounds && super::can_fuse(g, x) && !c.needs(1) && !c.needs(2))
            {
                // `ClampBackward1` in one pass: the gradient passes strictly
                // inside the given bounds (not at one, not at a NaN).
                let (l32, h32) = (l as f32, h as f32);
                let gx = super::fused_grad(
                    g,
                    x,
                    #[inline(always)]
                    move |g, x| {
                        if (!has_lo || x > l32) && (!has_hi || x < h32) {
                            g
                        } else {
                            0.0
                        }
                    },
                    #[inline(always)]
                    move |g, x| {
                        if (!has_lo || x > l) && (!has_hi || x < h) {
                            g
                        } else {
                            0.0
                        }
                    },
                )?;
                let mut grads: crate::autograd::Grads = smallvec![Some(gx)];
                grads.extend((0..usize::from(has_lo) + usize::from(has_hi)).map(|_| None));
                return Ok(grads);
            }
            let lo = has_lo.then(|| c.saved(1)).transpose()?;
            let hi = has_hi.then(|| c.saved(2)).transpose()?;
            let dt = g.dtype();
            let [wx, wlo, whi] = if tensor_bounds {
                tensor_bound_shares(x, lo, hi, dt)?
            } else {
                number_bound_shares(x, lo, hi, dt)?
            };
            let mut grads: crate::autograd::Grads = smallvec![None];
            if c.needs(0) {
                grads[0] = Some(apply_share(g, &wx)?);
            }
            for (bound, w) in [(lo, wlo), (hi, whi)] {
                if bound.is_some() {
                    let i = grads.len();
                    grads.push(if c.needs(i) {
                        Some(apply_share(g, &w)?)
                    } else {
                        None
                    });
                }
            }
            Ok(grads)
        });
    }
    Ok(out)
}

/// The clamp by tensor bounds, with broadcasting and type promotion.
// The one-pass bound is instantiated for bool too (refused before it runs), and
// `b != b` is the generic NaN test (false for integers).
#[allow(clippy::bool_comparison, clippy::eq_op)]
fn clamp_composite(x: &Tensor, lo: Option<&Tensor>, hi: Option<&Tensor>) -> Result<Tensor> {
    let mut out = x.clone();
    // A bound of `x`'s dtype is applied in one pass, choosing what the
    // `where` form chooses (a NaN bound wins, NaN in `x` stays); others promote.
    if let Some(lo) = lo {
        out = if lo.dtype() == out.dtype() {
            let dt = out.dtype();
            crate::dispatch!(dt, T => map2!(&out, lo, dt, T, |v, b| if v < b || b != b { b } else { v }))
        } else {
            let take = compare::logical_or(&compare::lt(&out, lo)?, &super::isnan(lo)?)?;
            where_(&take, lo, &out)?
        };
    }
    if let Some(hi) = hi {
        out = if hi.dtype() == out.dtype() {
            let dt = out.dtype();
            crate::dispatch!(dt, T => map2!(&out, hi, dt, T, |v, b| if v > b || b != b { b } else { v }))
        } else {
            let take = compare::logical_or(&compare::gt(&out, hi)?, &super::isnan(hi)?)?;
            where_(&take, hi, &out)?
        };
    }
    Ok(if out.same(x) {
        super::clone_data(x)
    } else {
        out
    })
}

/// 1 where `m`, else 0, in `dt`.
fn ones_where(m: &Tensor, dt: DType) -> Result<Tensor> {
    where_(m, &Tensor::scalar_of(1.0, dt), &Tensor::scalar_of(0.0, dt))
}

/// `ClampBackward1`: `x` gets the gradient strictly inside the bounds.
fn number_bound_shares(
    x: &Tensor,
    lo: Option<&Tensor>,
    hi: Option<&Tensor>,
    dt: DType,
) -> Result<[Tensor; 3]> {
    let inside = match (lo, hi) {
        (Some(l), Some(h)) => compare::logical_and(&compare::gt(x, l)?, &compare::lt(x, h)?)?,
        (Some(l), None) => compare::gt(x, l)?,
        (None, Some(h)) => compare::lt(x, h)?,
        (None, None) => unreachable!("checked by clamp"),
    };
    let z = Tensor::scalar_of(0.0, dt);
    Ok([ones_where(&inside, dt)?, z.clone(), z])
}

/// `ClampBackward0`'s shares of the gradient for `x`, `min` and `max`.
fn tensor_bound_shares(
    x: &Tensor,
    lo: Option<&Tensor>,
    hi: Option<&Tensor>,
    dt: DType,
) -> Result<[Tensor; 3]> {
    let z = Tensor::scalar_of(0.0, dt);
    match (lo, hi) {
        (Some(l), None) => Ok([
            share(x, l, compare::lt, dt)?,
            share(l, x, compare::lt, dt)?,
            z,
        ]),
        (None, Some(h)) => Ok([
            share(x, h, compare::gt, dt)?,
            z,
            share(h, x, compare::gt, dt)?,
        ]),
        (Some(l), Some(h)) => {
            let above = compare::logical_or(&compare::gt(x, h)?, &compare::lt(h, l)?)?;
            let below = compare::logical_and(&compare::lt(x, l)?, &compare::le(l, h)?)?;
            let proper = compare::lt(l, h)?;
            let tie_lo = compare::logical_and(&compare::eq(x, l)?, &proper)?;
            let tie_hi = compare::logical_and(&compare::eq(x, h)?, &proper)?;
            let half = Tensor::scalar_of(0.5, dt);
            let one = Tensor::scalar_of(1.0, dt);
            let tie = compare::logical_or(&tie_lo, &tie_hi)?;
            let limited = compare::logical_or(&above, &below)?;
            let wx = where_(&limited, &z, &where_(&tie, &half, &one)?)?;
            let wl = where_(&below, &one, &where_(&tie_lo, &half, &z)?)?;
            let wh = where_(&above, &one, &where_(&tie_hi, &half, &z)?)?;
            Ok([wx, wl, wh])
        }
        (None, None) => unreachable!("checked by clamp"),
    }
}

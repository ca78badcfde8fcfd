//! Float-valued binary functions of two broadcast tensors: `atan2`, `hypot`,
//! `logaddexp`/`logaddexp2`, `xlogy`, `copysign`, `fmax`/`fmin`.

use smallvec::smallvec;

use super::super::arith::map2;
use super::super::{compare, div, log, mul, mul_f64, neg, result_type, sigmoid, sub, where_};
use super::{sq, zero_like_dt};
use crate::autograd::{needs_record, record, SavedTensor};
use crate::error::Result;
use crate::saved;
use crate::tensor::{broadcast_shapes, Arith, DType, Tensor};

// ----- binary ------------------------------------------------------------------------

pub(crate) fn atan2(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = fbin2!(
        a,
        b,
        |x, y| crate::kernels::vmath::atan2_f32(x, y),
        x.atan2(y)
    );
    if needs_record(&[a, b]) {
        record("Atan2Backward0", &[a, b], &out, saved![a, b], |c| {
            // PyTorch's form: g * b * recip and -g * a * recip, with
            // recip = 1 / (a^2 + b^2) taken as 0 where it is infinite (the
            // gradient at the origin, or where a^2 + b^2 underflows, is 0).
            let (a, b, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let recip = super::super::reciprocal(&super::super::add(&sq(a)?, &sq(b)?)?)?;
            let recip = where_(&super::super::isinf(&recip)?, &zero_like_dt(&recip), &recip)?;
            let ga = if c.needs(0) {
                Some(mul(&mul(g, b)?, &recip)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(mul(&mul(g, &neg(a)?)?, &recip)?)
            } else {
                None
            };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

pub(crate) fn hypot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    // float32: the sum of squares is exact in float64, one rounding after the root.
    let out = fbin2!(
        a,
        b,
        |x, y| {
            let r = (x as f64).mul_add(x as f64, (y as f64) * (y as f64)).sqrt() as f32;
            // C's rule: an infinite argument wins over NaN.
            if x.is_infinite() || y.is_infinite() {
                f32::INFINITY
            } else {
                r
            }
        },
        x.hypot(y)
    );
    if needs_record(&[a, b]) {
        let o = SavedTensor::output(&out, 0);
        record(
            "HypotBackward0",
            &[a, b],
            &out,
            saved![a, b, Some(o)],
            |c| {
                // g * a / h, in PyTorch's order (so a subnormal h with a = 0
                // gives 0, not 0 * inf).
                let (g, h) = (c.grad()?, c.saved(2)?);
                let ga = if c.needs(0) {
                    Some(div(&mul(g, c.saved(0)?)?, h)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(div(&mul(g, c.saved(1)?)?, h)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// `log(exp(a) + exp(b))`, computed as `max + log1p(exp(-|a - b|))`.
pub(crate) fn logaddexp(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = fbin2!(
        a,
        b,
        |x, y| {
            use crate::kernels::{math::exp_f32, vmath::log1p_f32};
            let r = x.max(y) + log1p_f32(exp_f32(-(x - y).abs()));
            if x == y && x.is_infinite() {
                x
            } else {
                r
            }
        },
        if x == y && x.is_infinite() {
            x
        } else {
            x.max(y) + (-(x - y).abs()).exp().ln_1p()
        }
    );
    logaddexp_record(a, b, &out, "LogaddexpBackward0", 1.0);
    Ok(out)
}

/// `log2(2^a + 2^b)`.
pub(crate) fn logaddexp2(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = fbin2!(
        a,
        b,
        |x, y| {
            use crate::kernels::vmath::{exp2_f32, log2_f32};
            let r = x.max(y) + log2_f32(1.0 + exp2_f32(-(x - y).abs()));
            if x == y && x.is_infinite() {
                x
            } else {
                r
            }
        },
        if x == y && x.is_infinite() {
            x
        } else {
            x.max(y) + (1.0 + (-(x - y).abs()).exp2()).log2()
        }
    );
    logaddexp_record(a, b, &out, "Logaddexp2Backward0", std::f64::consts::LN_2);
    Ok(out)
}

/// The gradients of `logaddexp` (`k = 1`) and `logaddexp2` (`k = ln 2`):
/// `g * sigmoid(k (a - b))` and `g * sigmoid(k (b - a))`.
fn logaddexp_record(a: &Tensor, b: &Tensor, out: &Tensor, name: &'static str, k: f64) {
    if needs_record(&[a, b]) {
        record(name, &[a, b], out, saved![a, b], move |c| {
            let (a, b, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let d = mul_f64(&sub(a, b)?, k)?;
            let ga = if c.needs(0) {
                Some(mul(g, &sigmoid(&d)?)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(mul(g, &sigmoid(&neg(&d)?)?)?)
            } else {
                None
            };
            Ok(smallvec![ga, gb])
        });
    }
}

/// `x * log(y)`, 0 where `x == 0` unless `y` is NaN.
pub(crate) fn xlogy(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = fbin2!(
        a,
        b,
        |x, y| {
            let r = x * crate::kernels::vmath::log_f32(y);
            if x == 0.0 && !y.is_nan() {
                0.0
            } else {
                r
            }
        },
        if x == 0.0 && !y.is_nan() {
            0.0
        } else {
            x * y.ln()
        }
    );
    if needs_record(&[a, b]) {
        record("XlogyBackward0", &[a, b], &out, saved![a, b], |c| {
            let (x, y, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let ga = if c.needs(0) {
                // PyTorch's rule: 0 where x == 0 and y <= 0, g * log(y) elsewhere.
                let z = zero_like_dt(g);
                let mask = super::super::logical_and(&compare::eq(x, &z)?, &compare::le(y, &z)?)?;
                let safe_y = where_(&mask, &Tensor::scalar_of(1.0, g.dtype()), y)?;
                Some(where_(&mask, &z, &mul(g, &log(&safe_y)?)?)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(div(&mul(g, x)?, y)?)
            } else {
                None
            };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

/// `|a|` with the sign of `b`; its gradient reaches `a` only (times the sign
/// ratio `out / a`, 0 where `a == 0`).
pub(crate) fn copysign(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = fbin!(a, b, |x, y| x.copysign(y));
    if needs_record(&[a, b]) {
        let o = SavedTensor::output(&out, 0);
        record(
            "CopysignBackward0",
            &[a, b],
            &out,
            saved![a, Some(o)],
            |c| {
                let (a, y, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
                let ga = if c.needs(0) {
                    let z = zero_like_dt(g);
                    let zero = compare::eq(a, &z)?;
                    let safe = where_(&zero, &Tensor::scalar_of(1.0, g.dtype()), a)?;
                    let ratio = where_(&zero, &z, &div(y, &safe)?)?;
                    Some(mul(g, &ratio)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(mul_f64(g, 0.0)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

fn fextreme(a: &Tensor, b: &Tensor, is_max: bool) -> Result<Tensor> {
    let dt = result_type(a, b);
    let out = match dt {
        d if d.is_float() => {
            if is_max {
                fbin!(a, b, |x, y| x.max(y))
            } else {
                fbin!(a, b, |x, y| x.min(y))
            }
        }
        _ => crate::dispatch!(dt, T => {
            if is_max {
                map2!(a, b, dt, T, |x, y| x.max_of(y))
            } else {
                map2!(a, b, dt, T, |x, y| x.min_of(y))
            }
        }),
    };
    if needs_record(&[a, b]) && out.dtype().is_float() {
        let name = if is_max {
            "FmaxBackward0"
        } else {
            "FminBackward0"
        };
        record(name, &[a, b], &out, saved![a, b], move |c| {
            let (a, b, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            // `a` wins where it is on the right side of `b` or `b` is NaN
            // (both NaN included); a tie splits the gradient in halves, as
            // PyTorch's rule for maximum does.
            let side = if is_max {
                compare::gt(a, b)?
            } else {
                compare::lt(a, b)?
            };
            let wins = super::super::logical_or(&side, &super::super::isnan(b)?)?;
            let dt = g.dtype();
            let (z, one) = (zero_like_dt(g), Tensor::scalar_of(1.0, dt));
            let wa = where_(
                &compare::eq(a, b)?,
                &Tensor::scalar_of(0.5, dt),
                &where_(&wins, &one, &z)?,
            )?;
            let ga = if c.needs(0) {
                Some(super::super::apply_share(g, &wa)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(super::super::apply_share(
                    g,
                    &super::super::sub(&one, &wa)?,
                )?)
            } else {
                None
            };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

/// Elementwise maximum where a NaN loses to a number.
pub(crate) fn fmax(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    fextreme(a, b, true)
}

/// Elementwise minimum where a NaN loses to a number.
pub(crate) fn fmin(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    fextreme(a, b, false)
}

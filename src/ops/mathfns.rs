//! Elementwise math functions beyond the basic ones in `unary.rs`/`arith.rs`:
//! inverse trigonometric and hyperbolic functions, `log10`/`exp2`, the special
//! functions (`erfc`, `erfinv`, `lgamma`, `digamma`, `polygamma`), and the
//! binary ones (`atan2`, `hypot`, `logaddexp`, `xlogy`, `remainder`, `fmod`,
//! `fmax`, ...). Each backward sits under its forward, written in recorded
//! ops so that every order differentiates.

use smallvec::smallvec;

use super::arith::map2;
use super::{
    add_scalar, cast_data, compare, div, floor, log, map1, mul, mul_f64, neg, reciprocal,
    result_type, rsqrt, sigmoid, sub, trunc, where_, Scalar,
};
use crate::autograd::{needs_record, record, SavedTensor};
use crate::error::{Error, Result};
use crate::kernels::elementwise::binary;
use crate::kernels::special;
use crate::saved;
use crate::tensor::{broadcast_shapes, Arith, DType, Tensor};

const NO_INT: Option<fn(i64) -> i64> = None;

/// A float-valued function of one tensor (integers and bools promote).
macro_rules! ffn {
    ($a:expr, |$x:ident| $body:expr) => {
        map1(
            $a,
            $a.dtype().to_float(),
            |$x: f32| $body,
            |$x: f64| $body,
            NO_INT,
        )
    };
}

/// A float-valued function of two broadcast tensors (integers promote).
macro_rules! fbin {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {{
        let (a, b): (&Tensor, &Tensor) = ($a, $b);
        let dt = result_type(a, b).to_float();
        if dt == DType::F32 {
            map2!(a, b, dt, f32, |$x, $y| $body)
        } else {
            map2!(a, b, DType::F64, f64, |$x, $y| $body)
        }
    }};
}

/// Records `name` for a unary op whose gradient is `grad * d(s)`, `s` the
/// saved input (or the output, when `from_out`).
fn rec1(
    a: &Tensor,
    out: &Tensor,
    name: &'static str,
    from_out: bool,
    d: fn(&Tensor) -> Result<Tensor>,
) {
    if needs_record(&[a]) {
        let s = if from_out {
            SavedTensor::output(out, 0)
        } else {
            SavedTensor::input(a)
        };
        record(name, &[a], out, saved![Some(s)], move |c| {
            Ok(smallvec![Some(mul(c.grad()?, &d(c.saved(0)?)?)?)])
        });
    }
}

fn sq(x: &Tensor) -> Result<Tensor> {
    mul(x, x)
}

/// `1 - x^2`.
fn one_minus_sq(x: &Tensor) -> Result<Tensor> {
    add_scalar(&neg(&sq(x)?)?, Scalar::Int(1))
}

fn zero_like_dt(t: &Tensor) -> Tensor {
    Tensor::scalar_of(0.0, t.dtype())
}

// ----- trigonometric and hyperbolic ------------------------------------------------

pub(crate) fn acos(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.acos())?;
    rec1(a, &out, "AcosBackward0", false, |x| {
        neg(&rsqrt(&one_minus_sq(x)?)?)
    });
    Ok(out)
}

pub(crate) fn asin(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.asin())?;
    rec1(a, &out, "AsinBackward0", false, |x| {
        rsqrt(&one_minus_sq(x)?)
    });
    Ok(out)
}

pub(crate) fn atan(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.atan())?;
    rec1(a, &out, "AtanBackward0", false, |x| {
        reciprocal(&add_scalar(&sq(x)?, Scalar::Int(1))?)
    });
    Ok(out)
}

pub(crate) fn sinh(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.sinh())?;
    rec1(a, &out, "SinhBackward0", false, cosh);
    Ok(out)
}

pub(crate) fn cosh(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.cosh())?;
    rec1(a, &out, "CoshBackward0", false, sinh);
    Ok(out)
}

pub(crate) fn asinh(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.asinh())?;
    rec1(a, &out, "AsinhBackward0", false, |x| {
        rsqrt(&add_scalar(&sq(x)?, Scalar::Int(1))?)
    });
    Ok(out)
}

pub(crate) fn acosh(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.acosh())?;
    rec1(a, &out, "AcoshBackward0", false, |x| {
        rsqrt(&add_scalar(&sq(x)?, Scalar::Int(-1))?)
    });
    Ok(out)
}

pub(crate) fn atanh(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.atanh())?;
    rec1(a, &out, "AtanhBackward0", false, |x| {
        reciprocal(&one_minus_sq(x)?)
    });
    Ok(out)
}

/// `sin(pi x) / (pi x)`, 1 at 0 (the normalized sinc, as PyTorch's).
pub(crate) fn sinc(a: &Tensor) -> Result<Tensor> {
    let out = map1(
        a,
        a.dtype().to_float(),
        |x: f32| {
            if x == 0.0 {
                1.0
            } else {
                let p = std::f32::consts::PI * x;
                p.sin() / p
            }
        },
        |x: f64| {
            if x == 0.0 {
                1.0
            } else {
                let p = std::f64::consts::PI * x;
                p.sin() / p
            }
        },
        NO_INT,
    )?;
    // PyTorch's rule: (cos(pi x) - sinc(x)) / x, 0 at x = 0.
    rec1(a, &out, "SincBackward0", false, |x| {
        let zero = compare::eq(x, &zero_like_dt(x))?;
        let safe = where_(&zero, &Tensor::scalar_of(1.0, x.dtype()), x)?;
        let c = super::cos(&mul_f64(&safe, std::f64::consts::PI)?)?;
        let d = div(&sub(&c, &sinc(&safe)?)?, &safe)?;
        where_(&zero, &zero_like_dt(x), &d)
    });
    Ok(out)
}

pub(crate) fn deg2rad(a: &Tensor) -> Result<Tensor> {
    const K: f64 = std::f64::consts::PI / 180.0;
    let out = map1(
        a,
        a.dtype().to_float(),
        |x: f32| x * K as f32,
        |x: f64| x * K,
        NO_INT,
    )?;
    if needs_record(&[a]) {
        record("Deg2RadBackward0", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(mul_f64(c.grad()?, K)?)])
        });
    }
    Ok(out)
}

pub(crate) fn rad2deg(a: &Tensor) -> Result<Tensor> {
    const K: f64 = 180.0 / std::f64::consts::PI;
    let out = map1(
        a,
        a.dtype().to_float(),
        |x: f32| x * K as f32,
        |x: f64| x * K,
        NO_INT,
    )?;
    if needs_record(&[a]) {
        record("Rad2DegBackward0", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(mul_f64(c.grad()?, K)?)])
        });
    }
    Ok(out)
}

// ----- exponentials and logarithms ---------------------------------------------------

pub(crate) fn log10(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.log10())?;
    rec1(a, &out, "Log10Backward0", false, |x| {
        reciprocal(&mul_f64(x, std::f64::consts::LN_10)?)
    });
    Ok(out)
}

pub(crate) fn exp2(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| x.exp2())?;
    rec1(a, &out, "Exp2Backward0", true, |y| {
        mul_f64(y, std::f64::consts::LN_2)
    });
    Ok(out)
}

/// `log(x / (1 - x))`.
pub(crate) fn logit(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| (x / (1.0 - x)).ln())?;
    rec1(a, &out, "LogitBackward0", false, |x| {
        reciprocal(&mul(x, &add_scalar(&neg(x)?, Scalar::Int(1))?)?)
    });
    Ok(out)
}

// ----- special functions -------------------------------------------------------------

pub(crate) fn erfc(a: &Tensor) -> Result<Tensor> {
    let out = map1(a, a.dtype().to_float(), libm::erfcf, libm::erfc, NO_INT)?;
    rec1(a, &out, "ErfcBackward0", false, |x| {
        let e = super::exp(&neg(&sq(x)?)?)?;
        mul_f64(&e, -std::f64::consts::FRAC_2_SQRT_PI)
    });
    Ok(out)
}

pub(crate) fn erfinv(a: &Tensor) -> Result<Tensor> {
    let out = map1(
        a,
        a.dtype().to_float(),
        |x: f32| special::erfinv(x as f64) as f32,
        special::erfinv,
        NO_INT,
    )?;
    // sqrt(pi)/2 * exp(erfinv(x)^2).
    rec1(a, &out, "ErfinvBackward0", true, |y| {
        mul_f64(&super::exp(&sq(y)?)?, std::f64::consts::PI.sqrt() / 2.0)
    });
    Ok(out)
}

pub(crate) fn lgamma(a: &Tensor) -> Result<Tensor> {
    let out = map1(a, a.dtype().to_float(), libm::lgammaf, libm::lgamma, NO_INT)?;
    rec1(a, &out, "LgammaBackward0", false, digamma);
    Ok(out)
}

pub(crate) fn digamma(a: &Tensor) -> Result<Tensor> {
    polygamma(0, a)
}

/// The n-th derivative of digamma; its gradient is the next one.
pub(crate) fn polygamma(n: i64, a: &Tensor) -> Result<Tensor> {
    if n < 0 {
        return Err(Error::runtime(
            "polygamma(n, x) does not support negative n.",
        ));
    }
    let k = n as u32;
    let out = map1(
        a,
        a.dtype().to_float(),
        move |x: f32| special::polygamma(k, x as f64) as f32,
        move |x: f64| special::polygamma(k, x),
        NO_INT,
    )?;
    if needs_record(&[a]) {
        let name = if n == 0 {
            "DigammaBackward0"
        } else {
            "PolygammaBackward0"
        };
        record(name, &[a], &out, saved![a], move |c| {
            Ok(smallvec![Some(mul(
                c.grad()?,
                &polygamma(n + 1, c.saved(0)?)?
            )?)])
        });
    }
    Ok(out)
}

// ----- sign and fractional parts -----------------------------------------------------

/// `x - trunc(x)`; its gradient is the incoming one.
pub(crate) fn frac(a: &Tensor) -> Result<Tensor> {
    if !a.dtype().is_float() {
        return Err(Error::runtime(format!(
            "\"frac_cpu\" not implemented for '{}'",
            a.dtype().scalar_name()
        )));
    }
    let out = ffn!(a, |x| x - x.trunc())?;
    if needs_record(&[a]) {
        record("FracBackward0", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(c.grad()?.clone())])
        });
    }
    Ok(out)
}

/// `sign` under PyTorch's name for the complex-aware version; for real
/// inputs it is the sign, with a zero gradient.
pub(crate) fn sgn(a: &Tensor) -> Result<Tensor> {
    let out = {
        let _s = crate::autograd::GradModeGuard::new(false);
        super::sign(&a.detach())?
    };
    if needs_record(&[a]) {
        record("SgnBackward0", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(mul_f64(c.grad()?, 0.0)?)])
        });
    }
    Ok(out)
}

/// Whether the sign bit is set (True for -0.0), a bool tensor.
pub(crate) fn signbit(a: &Tensor) -> Result<Tensor> {
    let v = a.view();
    let shape = v.shape.clone();
    use crate::kernels::elementwise::unary;
    let out = match v.dtype() {
        DType::F32 => unary::<f32, bool>(&v, |x| x.is_sign_negative()),
        DType::F64 => unary::<f64, bool>(&v, |x| x.is_sign_negative()),
        DType::I64 => unary::<i64, bool>(&v, |x| x < 0),
        DType::Bool => vec![false; v.numel()],
    };
    Ok(Tensor::from_vec(out, shape))
}

/// NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default
/// the dtype's largest and lowest finite values); integers are copied. The
/// gradient passes where the input is finite, as PyTorch's.
pub(crate) fn nan_to_num(
    a: &Tensor,
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    let out = match a.dtype() {
        DType::F32 => {
            let (n, p, m) = (
                nan as f32,
                posinf.map_or(f32::MAX, |v| v as f32),
                neginf.map_or(f32::MIN, |v| v as f32),
            );
            map1(
                a,
                DType::F32,
                move |x: f32| {
                    if x.is_nan() {
                        n
                    } else if x == f32::INFINITY {
                        p
                    } else if x == f32::NEG_INFINITY {
                        m
                    } else {
                        x
                    }
                },
                |x: f64| x,
                NO_INT,
            )?
        }
        DType::F64 => {
            let (p, m) = (posinf.unwrap_or(f64::MAX), neginf.unwrap_or(f64::MIN));
            map1(
                a,
                DType::F64,
                |x: f32| x,
                move |x: f64| {
                    if x.is_nan() {
                        nan
                    } else if x == f64::INFINITY {
                        p
                    } else if x == f64::NEG_INFINITY {
                        m
                    } else {
                        x
                    }
                },
                NO_INT,
            )?
        }
        _ => super::clone_data(a),
    };
    if needs_record(&[a]) {
        record("NanToNumBackward0", &[a], &out, saved![a], |c| {
            let g = c.grad()?;
            let finite = super::isfinite(c.saved(0)?)?;
            Ok(smallvec![Some(where_(&finite, g, &zero_like_dt(g))?)])
        });
    }
    Ok(out)
}

// ----- binary ------------------------------------------------------------------------

pub(crate) fn atan2(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = fbin!(a, b, |x, y| x.atan2(y));
    if needs_record(&[a, b]) {
        record("Atan2Backward0", &[a, b], &out, saved![a, b], |c| {
            let (a, b, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let r = super::add(&sq(a)?, &sq(b)?)?;
            let gr = div(g, &r)?;
            let ga = if c.needs(0) { Some(mul(&gr, b)?) } else { None };
            let gb = if c.needs(1) {
                Some(neg(&mul(&gr, a)?)?)
            } else {
                None
            };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

pub(crate) fn hypot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = fbin!(a, b, |x, y| x.hypot(y));
    if needs_record(&[a, b]) {
        let o = SavedTensor::output(&out, 0);
        record(
            "HypotBackward0",
            &[a, b],
            &out,
            saved![a, b, Some(o)],
            |c| {
                let (g, h) = (c.grad()?, c.saved(2)?);
                let gh = div(g, h)?;
                let ga = if c.needs(0) {
                    Some(mul(&gh, c.saved(0)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(mul(&gh, c.saved(1)?)?)
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
    let out = fbin!(a, b, |x, y| {
        if x == y && x.is_infinite() {
            x
        } else {
            x.max(y) + (-(x - y).abs()).exp().ln_1p()
        }
    });
    logaddexp_record(a, b, &out, "LogaddexpBackward0", 1.0);
    Ok(out)
}

/// `log2(2^a + 2^b)`.
pub(crate) fn logaddexp2(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = fbin!(a, b, |x, y| {
        if x == y && x.is_infinite() {
            x
        } else {
            x.max(y) + (1.0 + (-(x - y).abs()).exp2()).log2()
        }
    });
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
    let out = fbin!(a, b, |x, y| if x == 0.0 && !y.is_nan() {
        0.0
    } else {
        x * y.ln()
    });
    if needs_record(&[a, b]) {
        record("XlogyBackward0", &[a, b], &out, saved![a, b], |c| {
            let (x, y, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let ga = if c.needs(0) {
                // PyTorch's rule: 0 where x == 0 and y <= 0, g * log(y) elsewhere.
                let z = zero_like_dt(g);
                let mask = super::logical_and(&compare::eq(x, &z)?, &compare::le(y, &z)?)?;
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
        DType::F32 | DType::F64 => {
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
            // `a` wins where it is on the right side of `b` or `b` is NaN (PyTorch's rule: no split on ties).
            let side = if is_max {
                compare::ge(a, b)?
            } else {
                compare::le(a, b)?
            };
            let wins = super::logical_or(&side, &super::isnan(b)?)?;
            let z = zero_like_dt(g);
            let ga = if c.needs(0) {
                Some(where_(&wins, g, &z)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(where_(&wins, &z, g)?)
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

// ----- integer-preserving division ---------------------------------------------------

/// PyTorch raises "ZeroDivisionError" (as a RuntimeError) for an integer
/// division by zero.
fn check_int_divisor(b: &Tensor) -> Result<()> {
    if cast_data(b, DType::I64).to_vec::<i64>().contains(&0) {
        return Err(Error::runtime("ZeroDivisionError"));
    }
    Ok(())
}

/// Applies an integer or a float kernel of `a` and `b` (promoted), refusing
/// bool operands and integer division by zero.
fn divlike(
    a: &Tensor,
    b: &Tensor,
    op: &str,
    int_f: fn(i64, i64) -> i64,
    f32f: fn(f32, f32) -> f32,
    f64f: fn(f64, f64) -> f64,
) -> Result<Tensor> {
    let dt = result_type(a, b);
    Ok(match dt {
        DType::Bool => {
            return Err(Error::runtime(format!(
                "\"{op}_cpu\" not implemented for 'Bool'"
            )))
        }
        DType::I64 => {
            check_int_divisor(b)?;
            map2!(a, b, dt, i64, |x, y| int_f(x, y))
        }
        DType::F32 => map2!(a, b, dt, f32, |x, y| f32f(x, y)),
        DType::F64 => map2!(a, b, dt, f64, |x, y| f64f(x, y)),
    })
}

macro_rules! float_rem {
    ($x:expr, $y:expr) => {{
        let (x, y) = ($x, $y);
        let r = x % y;
        if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
            r + y
        } else {
            r
        }
    }};
}

/// Python's float floor division (`float.__floordiv__`'s algorithm), which
/// PyTorch's `div(rounding_mode='floor')` follows.
macro_rules! float_floordiv {
    ($x:expr, $y:expr) => {{
        let (x, y) = ($x, $y);
        if y == 0.0 {
            x / y
        } else {
            let m = x % y;
            let mut d = (x - m) / y;
            if m != 0.0 && ((y < 0.0) != (m < 0.0)) {
                d -= 1.0;
            }
            if d != 0.0 {
                let f = d.floor();
                if d - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            } else {
                (x / y) * 0.0
            }
        }
    }};
}

/// Python's `%`: the result has the divisor's sign. The gradient w.r.t. the
/// divisor is `-grad * floor(a / b)`.
pub(crate) fn remainder(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = divlike(
        a,
        b,
        "remainder",
        |x, y| {
            let r = x.wrapping_rem(y);
            if r != 0 && ((r < 0) != (y < 0)) {
                r + y
            } else {
                r
            }
        },
        |x, y| float_rem!(x, y),
        |x, y| float_rem!(x, y),
    )?;
    divlike_record(a, b, &out, "RemainderBackward1", floor);
    Ok(out)
}

/// C's `fmod`: the result has the dividend's sign. The gradient w.r.t. the
/// divisor is `-grad * trunc(a / b)`.
pub(crate) fn fmod(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = divlike(
        a,
        b,
        "fmod",
        |x, y| x.wrapping_rem(y),
        |x, y| x % y,
        |x, y| x % y,
    )?;
    divlike_record(a, b, &out, "FmodBackward1", trunc);
    Ok(out)
}

fn divlike_record(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    name: &'static str,
    round: fn(&Tensor) -> Result<Tensor>,
) {
    if out.dtype().is_float() && needs_record(&[a, b]) {
        let rb = crate::autograd::tracked(b);
        record(
            name,
            &[a, b],
            out,
            saved![rb.then_some(a), rb.then_some(b)],
            move |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) { Some(g.clone()) } else { None };
                let gb = if c.needs(1) {
                    let q = round(&div(c.saved(0)?, c.saved(1)?)?)?;
                    Some(neg(&mul(g, &q)?)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
}

/// Division rounded toward negative infinity, keeping integer dtypes (as
/// `div(rounding_mode='floor')`); not differentiable, as in PyTorch.
pub(crate) fn floor_divide(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    divlike(
        &a.detach(),
        &b.detach(),
        "floor_divide",
        |x, y| {
            let q = x.wrapping_div(y);
            if x.wrapping_rem(y) != 0 && ((x < 0) != (y < 0)) {
                q - 1
            } else {
                q
            }
        },
        |x, y| float_floordiv!(x, y),
        |x, y| float_floordiv!(x, y),
    )
}

/// The Heaviside step: 0 below zero, 1 above, `values` at zero (NaN stays
/// NaN). Not differentiable, as in PyTorch.
pub(crate) fn heaviside(a: &Tensor, values: &Tensor) -> Result<Tensor> {
    if a.dtype() != values.dtype() {
        return Err(Error::runtime(
            "heaviside is not yet implemented for tensors with different dtypes.",
        ));
    }
    let dt = a.dtype();
    let (a, v) = (a.detach(), values.detach());
    Ok(match dt {
        DType::Bool => map2!(&a, &v, dt, bool, |x, y| if !x { y } else { x }),
        DType::I64 => map2!(&a, &v, dt, i64, |x, y| match x {
            0 => y,
            x if x < 0 => 0,
            _ => 1,
        }),
        DType::F32 => map2!(&a, &v, dt, f32, |x, y| if x == 0.0 {
            y
        } else if x < 0.0 {
            0.0
        } else if x > 0.0 {
            1.0
        } else {
            x
        }),
        DType::F64 => map2!(&a, &v, dt, f64, |x, y| if x == 0.0 {
            y
        } else if x < 0.0 {
            0.0
        } else if x > 0.0 {
            1.0
        } else {
            x
        }),
    })
}

/// `pow` computed in float64 (both operands converted first, as PyTorch's
/// composite does, so the graph is `ToCopyBackward0` then `PowBackward1`).
pub(crate) fn float_power(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let a = super::to_dtype(a, DType::F64)?;
    let b = super::to_dtype(b, DType::F64)?;
    super::pow(&a, &b)
}

// ----- aliases with a rule of their own ----------------------------------------------

/// `+x`: the tensor itself, as PyTorch's `positive` (refused for bool).
pub(crate) fn positive(a: &Tensor) -> Result<Tensor> {
    if a.dtype() == DType::Bool {
        return Err(Error::runtime(
            "The `+` operator, on a bool tensor is not supported.",
        ));
    }
    Ok(a.clone())
}

/// `clamp(x, min=bound)` (`is_min`) or `clamp(x, max=bound)` with a tensor
/// bound, recorded as PyTorch's `ClampMinBackward1`/`ClampMaxBackward1`: the
/// gradient reaches `x` where it is inside the bound (ties included) and the
/// bound elsewhere.
fn clamp_bound(x: &Tensor, bound: &Tensor, is_min: bool) -> Result<Tensor> {
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let (xd, bd) = (x.detach(), bound.detach());
        if is_min {
            super::clamp(&xd, Some(&bd), None, true)?
        } else {
            super::clamp(&xd, None, Some(&bd), true)?
        }
    };
    if out.dtype().is_float() && needs_record(&[x, bound]) {
        let name = if is_min {
            "ClampMinBackward1"
        } else {
            "ClampMaxBackward1"
        };
        record(name, &[x, bound], &out, saved![x, bound], move |c| {
            let (x, b, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let inside = if is_min {
                compare::ge(x, b)?
            } else {
                compare::le(x, b)?
            };
            let z = zero_like_dt(g);
            let gx = if c.needs(0) {
                Some(where_(&inside, g, &z)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(where_(&inside, &z, g)?)
            } else {
                None
            };
            Ok(smallvec![gx, gb])
        });
    }
    Ok(out)
}

pub(crate) fn clamp_min(x: &Tensor, min: &Tensor) -> Result<Tensor> {
    clamp_bound(x, min, true)
}

pub(crate) fn clamp_max(x: &Tensor, max: &Tensor) -> Result<Tensor> {
    clamp_bound(x, max, false)
}

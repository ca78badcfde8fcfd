//! Exponentials and logarithms beyond the basic ones (`log10`, `exp2`,
//! `logit`) and the special functions (`erfc`, `erfinv`, `lgamma`,
//! `digamma`, `polygamma`), each with its backward under it.

use smallvec::smallvec;

use super::super::arith::map2;
use super::super::{
    add_scalar, compare, div, map1, mul, mul_f64, neg, reciprocal, result_type, sign, sub, where_,
    Scalar,
};
use super::{rec1, rec1f, sq, NO_INT};
use crate::autograd::{needs_record, record, SavedTensor};
use crate::error::{Error, Result};
use crate::kernels::vmath as vm;
use crate::kernels::{bessel, normal_fns, special};
use crate::saved;
use crate::tensor::{broadcast_shapes, DType, Tensor};

// ----- exponentials and logarithms ---------------------------------------------------

pub(crate) fn log10(a: &Tensor) -> Result<Tensor> {
    const LN10: f64 = std::f64::consts::LN_10;
    let out = ffn2!(a, vm::log10_f32, f64::log10)?;
    rec1f(
        a,
        &out,
        "Log10Backward0",
        false,
        #[inline(always)]
        |x| reciprocal(&mul_f64(x, LN10)?),
        #[inline(always)]
        |x: f32| 1.0 / (x * LN10 as f32),
        #[inline(always)]
        |x: f64| 1.0 / (x * LN10),
    );
    Ok(out)
}

pub(crate) fn exp2(a: &Tensor) -> Result<Tensor> {
    const LN2: f64 = std::f64::consts::LN_2;
    let out = ffn2!(a, vm::exp2_f32, f64::exp2)?;
    rec1f(
        a,
        &out,
        "Exp2Backward0",
        true,
        #[inline(always)]
        |y| mul_f64(y, LN2),
        #[inline(always)]
        |y: f32| y * LN2 as f32,
        #[inline(always)]
        |y: f64| y * LN2,
    );
    Ok(out)
}

/// `log(x / (1 - x))`; its gradient `1 / (x (1 - x))` is NaN outside
/// `[0, 1]`, as PyTorch's `logit_backward` gives it.
pub(crate) fn logit(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(
        a,
        |x: f32| vm::log_f32(x / (1.0 - x)),
        #[inline(always)]
        |x: f64| (x / (1.0 - x)).ln()
    )?;
    // The one-pass forms compute what the tensor rule computes (the reciprocal
    // of `x (1 - x)`, NaN outside [0, 1]), in one pass over `g` and `x`.
    rec1f(
        a,
        &out,
        "LogitBackward0",
        false,
        |x| {
            let d = reciprocal(&mul(x, &add_scalar(&neg(x)?, Scalar::Int(1))?)?)?;
            let (zero, one) = (
                Tensor::scalar_of(0.0, x.dtype()),
                Tensor::scalar_of(1.0, x.dtype()),
            );
            let outside = super::super::logical_or(
                &super::super::compare::lt(x, &zero)?,
                &super::super::compare::gt(x, &one)?,
            )?;
            super::super::where_(&outside, &Tensor::scalar_of(f64::NAN, d.dtype()), &d)
        },
        #[inline(always)]
        |x: f32| {
            if !(0.0..=1.0).contains(&x) {
                f32::NAN
            } else {
                1.0 / (x * (1.0 - x))
            }
        },
        #[inline(always)]
        |x: f64| {
            if !(0.0..=1.0).contains(&x) {
                f64::NAN
            } else {
                1.0 / (x * (1.0 - x))
            }
        },
    );
    Ok(out)
}

// ----- special functions -------------------------------------------------------------

pub(crate) fn erfc(a: &Tensor) -> Result<Tensor> {
    const K: f64 = -std::f64::consts::FRAC_2_SQRT_PI;
    let out = ffn2!(a, vm::erfc_f32, libm::erfc)?;
    rec1f(
        a,
        &out,
        "ErfcBackward0",
        false,
        #[inline(always)]
        |x| {
            let e = super::super::exp(&neg(&sq(x)?)?)?;
            mul_f64(&e, K)
        },
        #[inline(always)]
        |x: f32| crate::kernels::math::exp_f32(-(x * x)) * K as f32,
        #[inline(always)]
        |x: f64| (-(x * x)).exp() * K,
    );
    Ok(out)
}

pub(crate) fn erfinv(a: &Tensor) -> Result<Tensor> {
    const K: f64 = 0.886_226_925_452_758; // sqrt(pi) / 2
    let out = ffn2!(a, vm::erfinv_f32, special::erfinv)?;
    // sqrt(pi)/2 * exp(erfinv(x)^2).
    rec1f(
        a,
        &out,
        "ErfinvBackward0",
        true,
        #[inline(always)]
        |y| mul_f64(&super::super::exp(&sq(y)?)?, K),
        #[inline(always)]
        |y: f32| crate::kernels::math::exp_f32(y * y) * K as f32,
        #[inline(always)]
        |y: f64| (y * y).exp() * K,
    );
    Ok(out)
}

pub(crate) fn lgamma(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(a, vm::lgamma_f32, libm::lgamma)?;
    rec1f(
        a,
        &out,
        "LgammaBackward0",
        false,
        digamma,
        #[inline(always)]
        |x: f32| vm::digamma_f32(x),
        #[inline(always)]
        |x: f64| special::digamma(x),
    );
    Ok(out)
}

pub(crate) fn digamma(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(a, vm::digamma_f32, special::digamma)?;
    rec1f(
        a,
        &out,
        "DigammaBackward0",
        false,
        trigamma,
        #[inline(always)]
        |x: f32| vm::trigamma_f32(x),
        #[inline(always)]
        |x: f64| special::polygamma(1, x),
    );
    Ok(out)
}

/// `polygamma(1, x)`, digamma's gradient.
fn trigamma(a: &Tensor) -> Result<Tensor> {
    polygamma(1, a)
}

/// The n-th derivative of digamma; its gradient is the next one.
pub(crate) fn polygamma(n: i64, a: &Tensor) -> Result<Tensor> {
    if n < 0 {
        return Err(Error::runtime(
            "polygamma(n, x) does not support negative n.",
        ));
    }
    if n == 0 {
        return digamma(a);
    }
    // Every order past 170 gives the same results (n! is infinite).
    let k = n.min(1 << 20) as u32;
    let out = if k == 1 {
        ffn2!(
            a,
            vm::trigamma_f32,
            #[inline(always)]
            |x: f64| special::polygamma(1, x)
        )?
    } else {
        map1(
            a,
            a.dtype().to_float(),
            #[inline(always)]
            move |x: f32| special::polygamma(k, x as f64) as f32,
            #[inline(always)]
            move |x: f64| special::polygamma(k, x),
            NO_INT,
        )?
    };
    if needs_record(&[a]) {
        record("PolygammaBackward0", &[a], &out, saved![a], move |c| {
            Ok(smallvec![Some(mul(
                c.grad()?,
                &polygamma(n + 1, c.saved(0)?)?
            )?)])
        });
    }
    Ok(out)
}

// ----- Bessel functions, the normal distribution, zeta --------------------------------

/// A float-valued unary op computed by an f64 kernel (float32 rounds its
/// result). A macro, not a function taking `f`: the kernel is then called by
/// name inside closures that are always inlined, so a branch-free kernel
/// lands in `vmath`'s AVX2/AVX-512 loops and vectorises (through a generic
/// `f` the call went through `Fn::call`, compiled without FMA: each
/// `mul_add` became a libm call).
macro_rules! f64_map {
    ($a:expr, $f:path) => {
        map1(
            $a,
            $a.dtype().to_float(),
            #[inline(always)]
            |x: f32| $f(x as f64) as f32,
            #[inline(always)]
            |x: f64| $f(x),
            NO_INT,
        )
    };
}

/// `x` with its zeros replaced by 1 (a safe divisor), and the zero mask.
fn nonzero_divisor(x: &Tensor) -> Result<(Tensor, Tensor)> {
    // As PyTorch's i1 backward: |x| up to the dtype's epsilon counts as 0, where
    // I1(x) / x has lost its precision (1 instead of 1/2 at the smallest subnormal)
    // and the derivative is 1/2 to within x^2.
    let eps = match x.dtype() {
        DType::F64 => f64::EPSILON,
        DType::F16 => 9.765_625e-4,
        DType::BF16 => 7.812_5e-3,
        _ => f32::EPSILON as f64,
    };
    let tiny = compare::le(
        &super::super::unary::abs(x)?,
        &Tensor::scalar_of(eps, x.dtype()),
    )?;
    let safe = where_(&tiny, &Tensor::scalar_of(1.0, x.dtype()), x)?;
    Ok((safe, tiny))
}

/// As `f64_map!`, with a float32 kernel of its own for float32 input.
macro_rules! f32_f64_map {
    ($a:expr, $f32:path, $f64:path) => {
        map1(
            $a,
            $a.dtype().to_float(),
            #[inline(always)]
            |x: f32| $f32(x),
            #[inline(always)]
            |x: f64| $f64(x),
            NO_INT,
        )
    };
}

/// Records a unary op whose gradient `d(x, y)` needs the input and the output.
fn rec_xy(a: &Tensor, out: &Tensor, name: &'static str, d: fn(&Tensor, &Tensor) -> Result<Tensor>) {
    if needs_record(&[a]) {
        let o = SavedTensor::output(out, 0);
        record(name, &[a], out, saved![a, Some(o)], move |c| {
            let dx = d(c.saved(0)?, c.saved(1)?)?;
            Ok(smallvec![Some(mul(c.grad()?, &dx)?)])
        });
    }
}

/// The modified Bessel function I0; its derivative is I1.
pub(crate) fn i0(a: &Tensor) -> Result<Tensor> {
    let out = f64_map!(a, bessel::i0)?;
    rec1(a, &out, "I0Backward0", false, special_i1);
    Ok(out)
}

/// exp(-|x|) I0(x); derivative i1e(x) - sign(x) i0e(x).
pub(crate) fn special_i0e(a: &Tensor) -> Result<Tensor> {
    let out = f64_map!(a, bessel::i0e)?;
    rec_xy(a, &out, "SpecialI0EBackward0", |x, y| {
        sub(&special_i1e(x)?, &mul(&sign(x)?, y)?)
    });
    Ok(out)
}

/// I1; derivative I0(x) - I1(x) / x, 1/2 at 0.
pub(crate) fn special_i1(a: &Tensor) -> Result<Tensor> {
    let out = f64_map!(a, bessel::i1)?;
    rec_xy(a, &out, "SpecialI1Backward0", |x, y| {
        let (safe, is0) = nonzero_divisor(x)?;
        let d = sub(&i0(x)?, &div(y, &safe)?)?;
        where_(&is0, &Tensor::scalar_of(0.5, d.dtype()), &d)
    });
    Ok(out)
}

/// exp(-|x|) I1(x); derivative i0e(x) - i1e(x) (sign(x) + 1/x), 1/2 at 0.
pub(crate) fn special_i1e(a: &Tensor) -> Result<Tensor> {
    let out = f32_f64_map!(a, bessel::i1e_f32, bessel::i1e)?;
    rec_xy(a, &out, "SpecialI1EBackward0", |x, y| {
        let (safe, is0) = nonzero_divisor(x)?;
        let k = super::super::add(&sign(x)?, &reciprocal(&safe)?)?;
        let d = sub(&special_i0e(x)?, &mul(y, &k)?)?;
        where_(&is0, &Tensor::scalar_of(0.5, d.dtype()), &d)
    });
    Ok(out)
}

/// The inverse of the standard normal distribution function; derivative
/// sqrt(2 pi) exp(y^2 / 2).
pub(crate) fn special_ndtri(a: &Tensor) -> Result<Tensor> {
    let out = f64_map!(a, normal_fns::ndtri)?;
    rec1(a, &out, "SpecialNdtriBackward0", true, |y| {
        mul_f64(
            &super::super::exp(&mul_f64(&sq(y)?, 0.5)?)?,
            (2.0 * std::f64::consts::PI).sqrt(),
        )
    });
    Ok(out)
}

/// exp(x^2) erfc(x); derivative 2 x erfcx(x) - 2 / sqrt(pi).
pub(crate) fn special_erfcx(a: &Tensor) -> Result<Tensor> {
    let out = f64_map!(a, normal_fns::erfcx)?;
    rec_xy(a, &out, "SpecialErfcxBackward0", |x, y| {
        add_scalar(
            &mul_f64(&mul(x, y)?, 2.0)?,
            Scalar::Float(-std::f64::consts::FRAC_2_SQRT_PI),
        )
    });
    Ok(out)
}

/// log(ndtr(x)); derivative phi(x) / ndtr(x) = exp(-x^2/2 - y) / sqrt(2 pi).
pub(crate) fn special_log_ndtr(a: &Tensor) -> Result<Tensor> {
    let out = f64_map!(a, normal_fns::log_ndtr)?;
    rec_xy(a, &out, "SpecialLogNdtrBackward0", |x, y| {
        let e = super::super::exp(&sub(&mul_f64(&sq(x)?, -0.5)?, y)?)?;
        mul_f64(&e, 1.0 / (2.0 * std::f64::consts::PI).sqrt())
    });
    Ok(out)
}

/// The Hurwitz zeta function zeta(x, q). As in PyTorch only `q` has a
/// gradient, -x zeta(x + 1, q); asking for the one of `x` is an error.
pub(crate) fn special_zeta(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dt = result_type(a, b).to_float();
    let out = if dt == DType::F32 {
        map2!(a, b, dt, f32, |x, y| special::zeta_f32(x, y))
    } else {
        map2!(a, b, DType::F64, f64, |x, y| special::zeta(x, y))
    };
    if needs_record(&[a, b]) {
        record("SpecialZetaBackward0", &[a, b], &out, saved![a, b], |c| {
            if c.needs(0) {
                return Err(Error::not_implemented(
                    "the derivative for 'zeta' is not implemented.",
                ));
            }
            let (x, q, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let z = special_zeta(&add_scalar(x, Scalar::Int(1))?, q)?;
            Ok(smallvec![None, Some(neg(&mul(g, &mul(x, &z)?)?)?)])
        });
    }
    Ok(out)
}

/// `_standard_gamma_grad(alpha, x)`: dx/dalpha of standard Gamma samples `x`
/// (not differentiable itself, as in PyTorch).
pub(crate) fn standard_gamma_grad(alpha: &Tensor, x: &Tensor) -> Result<Tensor> {
    let dt = result_type(alpha, x).to_float();
    Ok(if dt == DType::F32 {
        map2!(
            alpha,
            x,
            dt,
            f32,
            |a, v| special::standard_gamma_grad(a as f64, v as f64) as f32
        )
    } else {
        map2!(alpha, x, DType::F64, f64, |a, v| {
            special::standard_gamma_grad(a, v)
        })
    })
}

/// Records the reparameterised backward of `x`, standard Gamma samples drawn
/// from concentrations `alpha`: grad * _standard_gamma_grad(alpha, x).
pub(crate) fn record_standard_gamma(alpha: &Tensor, x: &Tensor) {
    if needs_record(&[alpha]) {
        let o = SavedTensor::output(x, 0);
        record(
            "StandardGammaBackward0",
            &[alpha],
            x,
            saved![alpha, Some(o)],
            |c| {
                let d = standard_gamma_grad(c.saved(0)?, c.saved(1)?)?;
                Ok(smallvec![Some(mul(c.grad()?, &d)?)])
            },
        );
    }
}

/// The regularised incomplete gamma functions of `a` at `x` (`igamma` P,
/// `igammac` Q). Only `x` has a gradient, +-x^(a-1) e^-x / Gamma(a); asking for
/// the one of `a` is an error, as in PyTorch.
fn igamma_op(a: &Tensor, x: &Tensor, lower: bool) -> Result<Tensor> {
    let dt = result_type(a, x).to_float();
    let out = if dt == DType::F32 {
        map2!(a, x, dt, f32, |p, q| special::igamma_f32(p, q, lower))
    } else {
        map2!(a, x, DType::F64, f64, |p, q| special::igamma(p, q, lower))
    };
    if needs_record(&[a, x]) {
        let name = if lower {
            "IgammaBackward0"
        } else {
            "IgammacBackward0"
        };
        record(name, &[a, x], &out, saved![a, x], move |c| {
            if c.needs(0) {
                let which = if lower { "igamma" } else { "igammac" };
                return Err(Error::not_implemented(format!(
                    "the derivative for '{which}: input' is not implemented."
                )));
            }
            let (a, x, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            // exp((a - 1) log x - x - lgamma(a)), the Gamma(a) density at x.
            let am1 = add_scalar(a, Scalar::Int(-1))?;
            let log_pdf = sub(&sub(&super::xlogy(&am1, x)?, x)?, &lgamma(a)?)?;
            let pdf = super::super::exp(&log_pdf)?;
            let d = if lower { pdf } else { neg(&pdf)? };
            Ok(smallvec![None, Some(mul(g, &d)?)])
        });
    }
    Ok(out)
}

pub(crate) fn igamma(a: &Tensor, x: &Tensor) -> Result<Tensor> {
    igamma_op(a, x, true)
}

pub(crate) fn igammac(a: &Tensor, x: &Tensor) -> Result<Tensor> {
    igamma_op(a, x, false)
}

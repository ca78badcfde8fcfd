//! Exponentials and logarithms beyond the basic ones (`log10`, `exp2`,
//! `logit`) and the special functions (`erfc`, `erfinv`, `lgamma`,
//! `digamma`, `polygamma`), each with its backward under it.

use smallvec::smallvec;

use super::super::{add_scalar, map1, mul, mul_f64, neg, reciprocal, Scalar};
use super::{rec1, rec1f, sq, NO_INT};
use crate::kernels::vmath as vm;
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::special;
use crate::saved;
use crate::tensor::Tensor;

// ----- exponentials and logarithms ---------------------------------------------------

pub(crate) fn log10(a: &Tensor) -> Result<Tensor> {
    const LN10: f64 = std::f64::consts::LN_10;
    let out = ffn2!(a, vm::log10_f32, f64::log10)?;
    rec1f(
        a,
        &out,
        "Log10Backward0",
        false,
        |x| reciprocal(&mul_f64(x, LN10)?),
        |x: f32| 1.0 / (x * LN10 as f32),
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
        |y| mul_f64(y, LN2),
        |y: f32| y * LN2 as f32,
        |y: f64| y * LN2,
    );
    Ok(out)
}

/// `log(x / (1 - x))`.
pub(crate) fn logit(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(a, |x: f32| vm::log_f32(x / (1.0 - x)), |x: f64| (x / (1.0 - x)).ln())?;
    rec1(a, &out, "LogitBackward0", false, |x| {
        reciprocal(&mul(x, &add_scalar(&neg(x)?, Scalar::Int(1))?)?)
    });
    Ok(out)
}

// ----- special functions -------------------------------------------------------------

pub(crate) fn erfc(a: &Tensor) -> Result<Tensor> {
    const K: f64 = -std::f64::consts::FRAC_2_SQRT_PI;
    let out = ffn2!(a, vm::erfc_f32, |x: f64| libm::erfc(x))?;
    rec1f(
        a,
        &out,
        "ErfcBackward0",
        false,
        |x| {
            let e = super::super::exp(&neg(&sq(x)?)?)?;
            mul_f64(&e, K)
        },
        |x: f32| crate::kernels::math::exp_f32(-(x * x)) * K as f32,
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
        |y| mul_f64(&super::super::exp(&sq(y)?)?, K),
        |y: f32| crate::kernels::math::exp_f32(y * y) * K as f32,
        |y: f64| (y * y).exp() * K,
    );
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

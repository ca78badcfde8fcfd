//! Exponentials and logarithms beyond the basic ones (`log10`, `exp2`,
//! `logit`) and the special functions (`erfc`, `erfinv`, `lgamma`,
//! `digamma`, `polygamma`), each with its backward under it.

use smallvec::smallvec;

use super::super::{add_scalar, map1, mul, mul_f64, neg, reciprocal, Scalar};
use super::{rec1, sq, NO_INT};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::special;
use crate::saved;
use crate::tensor::Tensor;

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

/// `log(x / (1 - x))`; its gradient `1 / (x (1 - x))` is NaN outside
/// `[0, 1]`, as PyTorch's `logit_backward` gives it.
pub(crate) fn logit(a: &Tensor) -> Result<Tensor> {
    let out = ffn!(a, |x| (x / (1.0 - x)).ln())?;
    rec1(a, &out, "LogitBackward0", false, |x| {
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
    });
    Ok(out)
}

// ----- special functions -------------------------------------------------------------

pub(crate) fn erfc(a: &Tensor) -> Result<Tensor> {
    let out = map1(a, a.dtype().to_float(), libm::erfcf, libm::erfc, NO_INT)?;
    rec1(a, &out, "ErfcBackward0", false, |x| {
        let e = super::super::exp(&neg(&sq(x)?)?)?;
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
        mul_f64(
            &super::super::exp(&sq(y)?)?,
            std::f64::consts::PI.sqrt() / 2.0,
        )
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
    // Every order past 170 gives the same results (n! is infinite).
    let k = n.min(1 << 20) as u32;
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

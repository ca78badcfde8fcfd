//! Inverse trigonometric and hyperbolic functions, `sinh`/`cosh`, `sinc`,
//! and degree/radian conversion, each with its backward under it.

use smallvec::smallvec;

use super::super::{
    add_scalar, compare, div, map1, mul_f64, neg, reciprocal, rsqrt, sub, where_, Scalar,
};
use super::{one_minus_sq, rec1, sq, zero_like_dt, NO_INT};
use crate::autograd::{needs_record, record};
use crate::error::Result;
use crate::saved;
use crate::tensor::Tensor;

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

/// `asinh`, by libm's (std's forms overflow to inf from `x` near the largest
/// float, where the result is about 710 in float64).
pub(crate) fn asinh(a: &Tensor) -> Result<Tensor> {
    let out = map1(a, a.dtype().to_float(), libm::asinhf, libm::asinh, NO_INT)?;
    rec1(a, &out, "AsinhBackward0", false, |x| {
        rsqrt(&add_scalar(&sq(x)?, Scalar::Int(1))?)
    });
    Ok(out)
}

pub(crate) fn acosh(a: &Tensor) -> Result<Tensor> {
    let out = map1(a, a.dtype().to_float(), libm::acoshf, libm::acosh, NO_INT)?;
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
        let c = super::super::cos(&mul_f64(&safe, std::f64::consts::PI)?)?;
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

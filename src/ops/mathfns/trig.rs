//! Inverse trigonometric and hyperbolic functions, `sinh`/`cosh`, `sinc`,
//! and degree/radian conversion, each with its backward under it.

use smallvec::smallvec;

use super::super::unary::{can_fuse, trig};
use super::super::{
    add_scalar, compare, div, map1, mul, mul_f64, neg, reciprocal, rsqrt, sub, where_, Scalar,
};
use super::{one_minus_sq, rec1f, sq, zero_like_dt, NO_INT};
use crate::autograd::{needs_record, record};
use crate::error::Result;
use crate::kernels::vmath as vm;
use crate::saved;
use crate::tensor::Tensor;

// ----- trigonometric and hyperbolic ------------------------------------------------

pub(crate) fn acos(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(a, vm::acos_f32, f64::acos)?;
    rec1f(
        a,
        &out,
        "AcosBackward0",
        false,
        #[inline(always)]
        |x| neg(&rsqrt(&one_minus_sq(x)?)?),
        #[inline(always)]
        |x: f32| -(1.0 / (1.0 - x * x).sqrt()),
        #[inline(always)]
        |x: f64| -(1.0 / (1.0 - x * x).sqrt()),
    );
    Ok(out)
}

pub(crate) fn asin(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(a, vm::asin_f32, f64::asin)?;
    rec1f(
        a,
        &out,
        "AsinBackward0",
        false,
        #[inline(always)]
        |x| rsqrt(&one_minus_sq(x)?),
        #[inline(always)]
        |x: f32| 1.0 / (1.0 - x * x).sqrt(),
        #[inline(always)]
        |x: f64| 1.0 / (1.0 - x * x).sqrt(),
    );
    Ok(out)
}

pub(crate) fn atan(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(a, vm::atan_f32, f64::atan)?;
    rec1f(
        a,
        &out,
        "AtanBackward0",
        false,
        #[inline(always)]
        |x| reciprocal(&add_scalar(&sq(x)?, Scalar::Int(1))?),
        #[inline(always)]
        |x: f32| 1.0 / (x * x + 1.0),
        #[inline(always)]
        |x: f64| 1.0 / (x * x + 1.0),
    );
    Ok(out)
}

pub(crate) fn sinh(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(a, vm::sinh_f32, f64::sinh)?;
    rec1f(
        a,
        &out,
        "SinhBackward0",
        false,
        cosh,
        vm::cosh_f32,
        f64::cosh,
    );
    Ok(out)
}

pub(crate) fn cosh(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(a, vm::cosh_f32, f64::cosh)?;
    rec1f(
        a,
        &out,
        "CoshBackward0",
        false,
        sinh,
        vm::sinh_f32,
        f64::sinh,
    );
    Ok(out)
}

/// `asinh`; float64 by libm's (std's form overflows to inf from `x` near the
/// largest float, where the result is about 710).
pub(crate) fn asinh(a: &Tensor) -> Result<Tensor> {
    let out = ffn2!(a, vm::asinh_f32, libm::asinh)?;
    rec1f(
        a,
        &out,
        "AsinhBackward0",
        false,
        #[inline(always)]
        |x| rsqrt(&add_scalar(&sq(x)?, Scalar::Int(1))?),
        #[inline(always)]
        |x: f32| 1.0 / (x * x + 1.0).sqrt(),
        #[inline(always)]
        |x: f64| 1.0 / (x * x + 1.0).sqrt(),
    );
    Ok(out)
}

pub(crate) fn acosh(a: &Tensor) -> Result<Tensor> {
    // float64: `log1p` of `(x - 1) + sqrt((x - 1)(x + 1))` keeps the precision
    // near 1 that `ln(x + sqrt(x^2 - 1))` loses.
    let out = ffn2!(
        a,
        vm::acosh_f32,
        #[inline(always)]
        |x: f64| if x.is_nan() || x < 1.0 {
            f64::NAN
        } else if x > 1e8 {
            x.ln() + std::f64::consts::LN_2
        } else {
            let d = x - 1.0;
            (d + (d * (x + 1.0)).sqrt()).ln_1p()
        }
    )?;
    rec1f(
        a,
        &out,
        "AcoshBackward0",
        false,
        #[inline(always)]
        |x| rsqrt(&add_scalar(&sq(x)?, Scalar::Int(-1))?),
        #[inline(always)]
        |x: f32| 1.0 / (x * x - 1.0).sqrt(),
        #[inline(always)]
        |x: f64| 1.0 / (x * x - 1.0).sqrt(),
    );
    Ok(out)
}

pub(crate) fn atanh(a: &Tensor) -> Result<Tensor> {
    // float64: odd, so `log1p` only sees its argument above 0, where it is
    // accurate (near -1 it is not).
    let out = ffn2!(
        a,
        vm::atanh_f32,
        #[inline(always)]
        |x: f64| {
            let a = x.abs();
            (0.5 * ((2.0 * a) / (1.0 - a)).ln_1p()).copysign(x)
        }
    )?;
    rec1f(
        a,
        &out,
        "AtanhBackward0",
        false,
        #[inline(always)]
        |x| reciprocal(&one_minus_sq(x)?),
        #[inline(always)]
        |x: f32| 1.0 / (1.0 - x * x),
        #[inline(always)]
        |x: f64| 1.0 / (1.0 - x * x),
    );
    Ok(out)
}

/// `(p cos p - sin p) / p^3` = `sum_k>=1 (-1)^k 2k p^(2k-2) / (2k + 1)!`, the
/// series of sinc's derivative over `pi p` where the closed form cancels
/// (`|p| < 1`; the first omitted term is below 2^-68 of the first). The
/// float32 form is `trig_f32::sinc_grad_f32`.
const SINC_D64: [f64; 10] = [
    -0.3333333333333333,
    0.03333333333333333,
    -0.0011904761904761906,
    2.2045855379188714e-05,
    -2.505210838544172e-07,
    1.9270852604185937e-09,
    -1.0706029224547743e-11,
    4.498331606952833e-14,
    -1.4797143443923793e-16,
    3.9145882126782523e-19,
];

fn sinc_f64(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let p = std::f64::consts::PI * x;
        p.sin() / p
    }
}

fn sinc_grad_f64(x: f64) -> f64 {
    let p = std::f64::consts::PI * x;
    if p.abs() < 1.0 {
        let mut q = SINC_D64[SINC_D64.len() - 1];
        for c in SINC_D64.iter().rev().skip(1) {
            q = q * (p * p) + c;
        }
        std::f64::consts::PI * p * q
    } else {
        (p * p.cos() - p.sin()) / (p * x)
    }
}

/// `sin(pi x) / (pi x)`, 1 at 0 (the normalized sinc, as PyTorch's). The
/// float32 sine is the vectorised one of `trig_f32`, in blocks of lanes.
pub(crate) fn sinc(a: &Tensor) -> Result<Tensor> {
    use crate::kernels::trig_f32 as t;
    let out = trig(a, t::sinc_slice, t::sinc_f32, sinc_f64)?;
    if needs_record(&[a]) {
        record("SincBackward0", &[a], &out, saved![a], |c| {
            let (g, x) = (c.grad()?, c.saved(0)?);
            if can_fuse(g, x) {
                // The derivative in lanes, then one product: a two-pass
                // form whose sine and cosine vectorise beats one pass of
                // scalar calls.
                let d = trig(x, t::sinc_grad_slice, t::sinc_grad_f32, sinc_grad_f64)?;
                return Ok(smallvec![Some(mul(g, &d)?)]);
            }
            // PyTorch's rule, in ops so it is differentiable again:
            // (cos(pi x) - sinc(x)) / x, 0 at x = 0.
            let zero = compare::eq(x, &zero_like_dt(x))?;
            let safe = where_(&zero, &Tensor::scalar_of(1.0, x.dtype()), x)?;
            let cp = super::super::cos(&mul_f64(&safe, std::f64::consts::PI)?)?;
            let d = div(&sub(&cp, &sinc(&safe)?)?, &safe)?;
            Ok(smallvec![Some(mul(
                g,
                &where_(&zero, &zero_like_dt(x), &d)?
            )?)])
        });
    }
    Ok(out)
}

pub(crate) fn deg2rad(a: &Tensor) -> Result<Tensor> {
    const K: f64 = std::f64::consts::PI / 180.0;
    let out = map1(
        a,
        a.dtype().to_float(),
        #[inline(always)]
        |x: f32| x * K as f32,
        #[inline(always)]
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
        #[inline(always)]
        |x: f32| x * K as f32,
        #[inline(always)]
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

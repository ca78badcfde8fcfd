//! float32 inverse trigonometric functions, evaluated in float64 (Cephes'
//! reductions with fitted polynomials) and rounded once.

use super::core::poly;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

/// atan(t) / t as a polynomial in t^2 for |t| <= tan(pi/8); relative error
/// 7.5e-13.
const ATAN_P: [f64; 8] = [
    0.999_999_999_999_250_8,
    -0.333_333_332_772_870_03,
    0.199_999_930_871_914_48,
    -0.142_853_877_198_789_25,
    0.111_034_761_912_538_54,
    -0.089_927_167_808_893_22,
    0.069_748_889_577_901_58,
    -0.037_666_570_213_449_05,
];

/// `atan(t)` for `t >= 0` (inf included, NaN kept): t above tan(3pi/8) is
/// reduced by `atan(t) = pi/2 - atan(1/t)`, t above tan(pi/8) by
/// `atan(t) = pi/4 + atan((t - 1)/(t + 1))`, with one division for all.
#[inline(always)]
fn atan_pos(t: f64) -> f64 {
    const TAN_3PI_8: f64 = 2.414_213_562_373_095;
    const TAN_PI_8: f64 = 0.414_213_562_373_095_03;
    let big = t > TAN_3PI_8;
    let mid = t > TAN_PI_8;
    let num = if big {
        -1.0
    } else if mid {
        t - 1.0
    } else {
        t
    };
    let den = if big {
        t
    } else if mid {
        t + 1.0
    } else {
        1.0
    };
    let off = if big {
        FRAC_PI_2
    } else if mid {
        FRAC_PI_4
    } else {
        0.0
    };
    let z = num / den;
    (z * poly(z * z, &ATAN_P)) + off
}

/// `atan(x)`, within 1 ulp.
#[inline(always)]
pub(crate) fn atan_f32(x: f32) -> f32 {
    (atan_pos((x as f64).abs()) as f32).copysign(x)
}

/// `atan2(y, x)`, within 1 ulp, with C's special values (signed zeros,
/// infinities, NaN).
#[inline(always)]
pub(crate) fn atan2_f32(y: f32, x: f32) -> f32 {
    let (ax, ay) = ((x as f64).abs(), (y as f64).abs());
    let swap = ay > ax;
    let (num, den) = if swap { (ax, ay) } else { (ay, ax) };
    let t = num / den;
    // 0/0 and inf/inf: the angle is that of the limit along the diagonal.
    let t = if num == 0.0 {
        0.0
    } else if num == f64::INFINITY {
        1.0
    } else {
        t
    };
    let a = atan_pos(t);
    let a = if swap { FRAC_PI_2 - a } else { a };
    let a = if x.is_sign_negative() { PI - a } else { a };
    let r = (a as f32).copysign(y);
    if x.is_nan() || y.is_nan() {
        f32::NAN
    } else {
        r
    }
}

/// asin(s) / s as a polynomial in s^2 for |s| <= 1/2; relative error 9.7e-13.
const ASIN_P: [f64; 9] = [
    1.000_000_000_000_858,
    0.166_666_666_115_403_46,
    0.075_000_058_038_543_44,
    0.044_640_516_798_877_75,
    0.030_428_878_468_812_82,
    0.021_849_212_582_598_69,
    0.020_712_396_408_969_446,
    0.001_838_706_478_722_126_9,
    0.033_034_872_868_642_61,
];

/// `(asin(s), big)` for `a = |x|`: `s = a` when `a <= 1/2`, else
/// `s = sqrt((1 - a) / 2)` (`big`), where `asin(a) = pi/2 - 2 asin(s)`.
#[inline(always)]
fn asin_reduced(a: f64) -> (f64, bool) {
    let big = a > 0.5;
    let z = if big { (1.0 - a) * 0.5 } else { a * a };
    let s = if big { z.sqrt() } else { a };
    (s * poly(z, &ASIN_P), big)
}

/// `asin(x)`, within 1 ulp; NaN outside [-1, 1].
#[inline(always)]
pub(crate) fn asin_f32(x: f32) -> f32 {
    let (p, big) = asin_reduced((x as f64).abs());
    let r = if big { FRAC_PI_2 - 2.0 * p } else { p };
    (r as f32).copysign(x)
}

/// `acos(x)`, within 1 ulp; NaN outside [-1, 1].
#[inline(always)]
pub(crate) fn acos_f32(x: f32) -> f32 {
    let t = x as f64;
    let (p, big) = asin_reduced(t.abs());
    let r = if !big {
        FRAC_PI_2 - p.copysign(t)
    } else if t > 0.0 {
        2.0 * p
    } else {
        PI - 2.0 * p
    };
    r as f32
}

//! float32 inverse trigonometric functions. `atan`, `asin` and `acos` are
//! evaluated in float32 lanes (16 per AVX-512 register): Cephes' reductions
//! with fitted polynomials, the reduced argument (a reciprocal, a square
//! root) carried with its rounding error and the last subtraction from
//! pi/2 or pi done as an exact sum, so each result rounds about once.
//! `atan2` is evaluated in float64 and rounded once.

use super::core::poly;
use super::explog32::{fast_two_sum, poly as poly32};
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

// pi/2 and pi as a float32 and the rest.
const PIO2_H: f32 = std::f32::consts::FRAC_PI_2;
const PIO2_L: f32 = -4.371_139e-8;
const PI_H: f32 = std::f32::consts::PI;
const PI_L: f32 = -8.742_278e-8;

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

/// (atan(t) - t) / t^3 for |t| <= 1 as `ATAN_W0 + w Q(w)`, w = t^2 - 1/2
/// (centred, so the terms fall by about 4 each and Horner's rule loses
/// nothing to cancellation), fitted; the constant is a float32 and the
/// rest. Relative error of atan from it 2.7e-9.
const ATAN_W0: (f32, f32) = (-0.259_160_5, -3.892_750_6e-9);
const ATAN_W: [f32; 8] = [
    0.110_814_795,
    -0.054_815_63,
    0.029_139_036,
    -0.016_152_998,
    0.009_170_764,
    -0.005_533_011_6,
    0.003_739_176_6,
    -0.001_791_492_7,
];

/// `atan(x)`, within 1 ulp (measured 0.74): for |x| <= 1 `t + t^3 P`,
/// above it `pi/2 - atan(1/|x|)` with the reciprocal's rounding error `tl`
/// carried (it moves atan by `tl / (1 + t^2)`, for which a quadratic in
/// `t^2` within 2% is enough). `t^3` and `P` are each kept as a float and
/// its error, so the terms after the leading `bh + m t` round once.
#[inline(always)]
pub(crate) fn atan_f32(x: f32) -> f32 {
    let a = x.abs();
    let big = a > 1.0;
    // inf is taken as float32's largest value: 1/a is then 0 to float32
    // precision and the error term stays finite. NaN passes.
    let ac = if a > f32::MAX { f32::MAX } else { a };
    let rc = 1.0 / ac;
    let th = if big { rc } else { a };
    let tl = if big {
        (-rc).mul_add(ac, 1.0) * rc
    } else {
        0.0
    };
    let z = th * th;
    let ze = th.mul_add(th, -z);
    let v = th * z;
    let ve = th.mul_add(z, -v) + th * ze;
    let w = z - 0.5;
    let (ph, pl) = fast_two_sum(ATAN_W0.0, w * poly32(w, &ATAN_W));
    let pl = pl + ATAN_W0.1;
    let corr = tl * 0.3f32.mul_add(z, -0.8).mul_add(z, 1.0);
    let (bh, m, bl) = if big {
        (PIO2_H, -1.0f32, PIO2_L)
    } else {
        (0.0, 1.0, 0.0)
    };
    // bh + m t exactly (|t| <= 1 < pi/2), then t^3 P and the small terms.
    let (s, e) = fast_two_sum(bh, m * th);
    let small = m.mul_add(v.mul_add(pl, ve * ph) + corr, e + bl);
    (s + (m * v).mul_add(ph, small)).copysign(x)
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

/// (asin(s) - s) / s^3 as a polynomial in s^2 for |s| <= 1/2, fitted
/// (relative error of asin from it 2.9e-10).
const ASIN_P32: [f32; 6] = [
    0.166_666_6,
    0.075_005_196,
    0.044_514_116,
    0.031_830_784,
    0.014_353_078,
    0.037_634_78,
];

/// `(big, h, q)` for `a = |x|` with `asin(h) = h + q` to float32 precision
/// beyond h's own rounding: `h = a` when `a <= 1/2`, else `h ~ sqrt(z)`,
/// `z = (1 - a) / 2` (exact), where `asin(a) = pi/2 - 2 asin(sqrt(z))`;
/// the square root's rounding error is in `q`. NaN for `a > 1` and NaN.
#[inline(always)]
fn asin_parts(a: f32) -> (bool, f32, f32) {
    let big = a > 0.5;
    let z = if big { (1.0 - a) * 0.5 } else { a * a };
    let root = z.sqrt();
    let h = if big { root } else { a };
    // sqrt(z) = root + (z - root^2) / (2 root); the numerator is exact.
    let d = (-root).mul_add(root, z);
    let den = if root > 0.0 { root + root } else { 1.0 };
    let l = if big { d / den } else { 0.0 };
    (big, h, (h * z).mul_add(poly32(z, &ASIN_P32), l))
}

/// `asin(x)`, within 1 ulp; NaN outside [-1, 1].
#[inline(always)]
pub(crate) fn asin_f32(x: f32) -> f32 {
    let (big, h, q) = asin_parts(x.abs());
    let (bh, m, bl) = if big {
        (PIO2_H, -2.0f32, PIO2_L)
    } else {
        (0.0, 1.0, 0.0)
    };
    // |2h| <= 1 < pi/2: the sum is exact.
    let (s, e) = fast_two_sum(bh, m * h);
    (s + (m.mul_add(q, e) + bl)).copysign(x)
}

/// `acos(x)`, within 1 ulp; NaN outside [-1, 1]: `pi/2 - asin(x)` for
/// |x| <= 1/2, `2 asin(sqrt(z))` above, `pi - 2 asin(sqrt(z))` below -1/2.
#[inline(always)]
pub(crate) fn acos_f32(x: f32) -> f32 {
    let (big, h, q) = asin_parts(x.abs());
    let neg = x < 0.0;
    let (bh, m, bl) = if !big {
        (PIO2_H, if neg { 1.0f32 } else { -1.0 }, PIO2_L)
    } else if neg {
        (PI_H, -2.0, PI_L)
    } else {
        (0.0, 2.0, 0.0)
    };
    let (s, e) = fast_two_sum(bh, m * h);
    s + (m.mul_add(q, e) + bl)
}

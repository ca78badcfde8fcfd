//! float32 inverse trigonometric functions. `atan`, `asin` and `acos` are
//! evaluated in float32 lanes (16 per AVX-512 register): Cephes' reductions
//! with fitted polynomials, the reduced argument (a reciprocal, a square
//! root) carried with its rounding error and the last subtraction from
//! pi/2 or pi done as an exact sum, so each result rounds about once.
//! `atan2` shares `atan`'s evaluation, with the quotient formed in float64.

use super::explog32::{fast_two_sum, poly as poly32};

// pi/2 and pi as a float32 and the rest.
const PIO2_H: f32 = std::f32::consts::FRAC_PI_2;
const PIO2_L: f32 = -4.371_139e-8;
const PI_H: f32 = std::f32::consts::PI;
const PI_L: f32 = -8.742_278e-8;

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
    let (bh, m, bl) = if big {
        (PIO2_H, -1.0f32, PIO2_L)
    } else {
        (0.0, 1.0, 0.0)
    };
    atan_from(th, tl, (bh, bl), m).copysign(x)
}

/// `(bh + bl) + m atan(th + tl)` for `0 <= th <= 1`, `m = +-1`, `bh` 0 or a
/// float32 at least pi/2 (so `bh + m th` is an exact Fast2Sum). `tl` moves
/// atan by `tl / (1 + t^2)`, for which a quadratic in `t^2` within 2% is
/// enough. `t^3` and `P` are each kept as a float and its error, so the
/// terms after the leading `bh + m t` round once.
#[inline(always)]
fn atan_from(th: f32, tl: f32, (bh, bl): (f32, f32), m: f32) -> f32 {
    let z = th * th;
    let ze = th.mul_add(th, -z);
    let v = th * z;
    let ve = th.mul_add(z, -v) + th * ze;
    let w = z - 0.5;
    let (ph, pl) = fast_two_sum(ATAN_W0.0, w * poly32(w, &ATAN_W));
    let pl = pl + ATAN_W0.1;
    let corr = tl * 0.3f32.mul_add(z, -0.8).mul_add(z, 1.0);
    let (s, e) = fast_two_sum(bh, m * th);
    let small = m.mul_add(v.mul_add(pl, ve * ph) + corr, e + bl);
    s + (m * v).mul_add(ph, small)
}

/// `atan2(y, x)`, within 1 ulp, with C's special values (signed zeros,
/// infinities, NaN). The quotient of the smaller magnitude by the larger
/// is taken in float64 (no float32 quotient keeps its residual exact over
/// the whole range, subnormals included) and split into a float32 and the
/// rest; the quadrant is a float32 multiple of pi/2 added exactly, as in
/// `atan`.
#[inline(always)]
pub(crate) fn atan2_f32(y: f32, x: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    let swap = ay > ax;
    let (num, den) = if swap { (ax, ay) } else { (ay, ax) };
    let t = num as f64 / den as f64;
    let th = t as f32;
    let tl = (t - th as f64) as f32;
    // 0/0 and inf/inf: the angle is that of the limit along the diagonal;
    // x/inf is 0 (the residual of a finite t is 0 there already).
    let (th, tl) = if num == 0.0 {
        (0.0, 0.0)
    } else if num == f32::INFINITY {
        (1.0, 0.0)
    } else {
        (th, tl)
    };
    let neg = x.is_sign_negative();
    // atan, pi/2 - atan, pi - atan, pi - (pi/2 - atan).
    let (bh, bl, m) = match (swap, neg) {
        (false, false) => (0.0, 0.0, 1.0),
        (true, false) => (PIO2_H, PIO2_L, -1.0),
        (false, true) => (PI_H, PI_L, -1.0),
        (true, true) => (PIO2_H, PIO2_L, 1.0),
    };
    let r = atan_from(th, tl, (bh, bl), m).copysign(y);
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

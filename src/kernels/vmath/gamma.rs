//! float32 `lgamma`, `digamma` and `trigamma` (digamma's derivative: the
//! gradient of digamma and lgamma's second order), evaluated in float64
//! lanes and rounded once, branch free.
//!
//! Each works on `y = x` for `x >= 0.5` and on `y = 1 - x` below (exact in
//! float64 for every float32 `x` that matters), then applies the reflection
//! formula with `sin(pi r)`, `cos(pi r)` of the reduced `r = x - round(x)`
//! (exact). For `y` below 10 the functions use their recurrences up to
//! `z = y + 8`, as one rational term (a single division), and the
//! asymptotic series at `z`; where the result has a zero that the
//! recurrence would cancel into (lgamma at 1 and 2, digamma at 1.4616...),
//! a polynomial that carries the zero as a factor. Poles, infinities and
//! NaN give PyTorch's values: lgamma is +inf at every non-positive integer
//! and at both infinities, digamma -inf at +0, +inf at -0 and NaN at the
//! negative integers and -inf, trigamma +inf at the non-positive integers.

use super::core::{log_core, poly};
use crate::kernels::pick;

/// `sin(pi r) / r` and `cos(pi r)` as polynomials in `r^2` for `|r| <= 1/2`:
/// the Taylor terms, the first omitted one below 2^-55 relative.
const SIN_PI: [f64; 11] = [
    std::f64::consts::PI,
    -5.16771278004997,
    2.5501640398773455,
    -0.5992645293207921,
    0.08214588661112823,
    -0.0073704309457143504,
    0.00046630280576761255,
    -2.1915353447830217e-05,
    7.952054001475513e-07,
    -2.2948428997269873e-08,
    5.392664662608129e-10,
];
const COS_PI: [f64; 11] = [
    1.0,
    -4.934802200544679,
    4.0587121264167685,
    -1.3352627688545895,
    0.2353306303588932,
    -0.02580689139001406,
    0.0019295743094039231,
    -0.0001046381049248457,
    4.303069587032947e-06,
    -1.3878952462213771e-07,
    3.604730797462501e-09,
];

/// 1.5 * 2^52: adding it rounds a float64 below 2^51 in magnitude to an integer.
const SHIFT: f64 = 6_755_399_441_055_744.0;

/// `r = x - round(x)` (exact; 0 at the integers, which every float32 of
/// magnitude 2^23 or more is, and at the infinities).
#[inline(always)]
fn reduce(x: f64) -> f64 {
    const BIG: f64 = 16_777_216.0;
    // NaN stays NaN (and its results are replaced).
    let c = x.clamp(-BIG, BIG);
    c - ((c + SHIFT) - SHIFT)
}

/// `sin(pi r)` for `|r| <= 1/2`.
#[inline(always)]
fn sin_pi(r: f64) -> f64 {
    r * poly(r * r, &SIN_PI)
}

/// `1 - x` for the reflection (`x < 0.5`), or `x`.
#[inline(always)]
fn reflected(x: f64) -> f64 {
    pick(x < 0.5, 1.0 - x, x)
}

/// `(y + 8, prod_{k<8} (y + k))` for `y < 10`, `(y, 1)` beyond.
#[inline(always)]
fn shift8(y: f64) -> (f64, f64) {
    let near = y < 10.0;
    let mut q = y;
    for k in 1..8 {
        q *= y + k as f64;
    }
    (pick(near, y + 8.0, y), pick(near, q, 1.0))
}

/// lgamma(2 + t) / t for |t| <= 1/2, fitted to the Taylor series
/// `(1 - gamma) t + sum_k>=2 (-1)^k (zeta(k) - 1) t^k / k` (relative error
/// 6e-12).
const LGAMMA_2: [f64; 12] = [
    0.42278433509981417,
    0.32246703341999877,
    -0.0673523014391943,
    0.020580808886116658,
    -0.007385533139967179,
    0.002890495773325825,
    -0.001193056067172225,
    0.0005098669566041764,
    -0.0002208635872924063,
    9.816541436688364e-05,
    -5.27972156459342e-05,
    2.449184165220695e-05,
];

/// The Stirling series' terms `B_2k / (2k (2k - 1))` for k = 1..6, as a
/// polynomial in `1/z^2` (the first omitted term is below 2^-52 relative
/// from z = 10).
const STIRLING: [f64; 6] = [
    1.0 / 12.0,
    -1.0 / 360.0,
    1.0 / 1260.0,
    -1.0 / 1680.0,
    1.0 / 1188.0,
    -691.0 / 360360.0,
];

/// ln(2 pi) / 2.
const HALF_LN_2PI: f64 = 0.9189385332046728;

/// `ln|Gamma(x)|`, within 1 ulp where the result is not next to one of the
/// zeros below -2 (where the reflection cancels and the error is absolute,
/// about 2^-50): +inf at the poles and at both infinities.
#[inline(always)]
pub(crate) fn lgamma_f32(x: f32) -> f32 {
    let xd = x as f64;
    let y = reflected(xd);
    // lgamma(y) = a - ln(q): below 2.5 from the polynomial about 2 (for y
    // below 1.5 through lgamma(y) = lgamma(y + 1) - ln(y)); above, Stirling's
    // series at z = y + 8 less the log of the product y (y + 1) ... (y + 7).
    let small = y < 2.5;
    let t = y - if y < 1.5 { 1.0 } else { 2.0 };
    let (z, prod) = shift8(y);
    let lz = log_core(z);
    let iz = 1.0 / z;
    let stirling = (z - 0.5).mul_add(lz, HALF_LN_2PI - z) + iz * poly(iz * iz, &STIRLING);
    // Selects (`pick`), not branches: LLVM would sink each side's work into
    // a branch and leave the dispatched loop scalar.
    let a = pick(small, t * poly(t, &LGAMMA_2), stirling);
    let q = pick(small, pick(y < 1.5, y, 1.0), prod);
    // Below 0.5: lgamma(x) = ln(pi / |sin(pi x)|) - lgamma(1 - x)
    //                      = ln(q pi / |sin(pi r)|) - a.
    let r = reduce(xd);
    let s = sin_pi(r).abs();
    let refl = xd < 0.5;
    let q = pick(refl, q * std::f64::consts::PI / s, q);
    let lq = log_core(q);
    let v = pick(refl, lq - a, a - lq);
    let v = pick(refl & (s == 0.0), f64::INFINITY, v);
    let v = pick(xd.abs() == f64::INFINITY, f64::INFINITY, v);
    pick(x.is_nan(), x, v as f32)
}

/// The digamma function's zero 1.4616321449683623... as a float64 and the rest.
const PSI_ROOT: f64 = 1.4616321449683623;
const PSI_ROOT_LO: f64 = 9.549995429965697e-17;

/// digamma(root + d) / d for d in [1.25 - root, 1.75 - root], fitted to the
/// Taylor series `sum_n>=1 (-1)^(n+1) zeta(n + 1, root) d^(n-1)` (relative
/// error 1.5e-12).
const PSI_NEAR_ROOT: [f64; 11] = [
    0.9676722454489796,
    -0.442763168981614,
    0.2584997596060917,
    -0.16394270489153875,
    0.1078242661186446,
    -0.07219984276638187,
    0.04879221291087471,
    -0.03313647955763223,
    0.022870138710311787,
    -0.01617067763439949,
    0.008622928031663354,
];

/// `B_2k / (2k)` for k = 1..7, the asymptotic series of digamma as a
/// polynomial in `1/z^2` (the first omitted term is below 2^-52 relative
/// from z = 8.5).
const PSI_SERIES: [f64; 7] = [
    1.0 / 12.0,
    -1.0 / 120.0,
    1.0 / 252.0,
    -1.0 / 240.0,
    1.0 / 132.0,
    -691.0 / 32760.0,
    1.0 / 12.0,
];

/// `sum_{k<8} 1/(y + k)^p` for p = 1 or 2, as one fraction.
#[inline(always)]
fn recurrence_sum<const P: u32>(y: f64) -> f64 {
    let mut num = 0.0f64;
    let mut den = 1.0;
    for k in 0..8 {
        let a = y + k as f64;
        let a = if P == 2 { a * a } else { a };
        num = num.mul_add(a, den);
        den *= a;
    }
    num / den
}

/// `digamma(x)`, within 1 ulp away from its zeros below 0 (where the
/// reflection cancels and the error is absolute, about 2^-52): -inf at +0,
/// +inf at -0, NaN at the negative integers and -inf, +inf at +inf.
#[inline(always)]
pub(crate) fn digamma_f32(x: f32) -> f32 {
    let xd = x as f64;
    let y = reflected(xd);
    // digamma(y) = digamma(z) - sum_{k<8} 1/(y + k) below 10, with the
    // asymptotic ln z - 1/(2z) - sum B_2k / (2k z^2k); about the zero,
    // the polynomial.
    let (z, _) = shift8(y);
    let iz = 1.0 / z;
    let w = iz * iz;
    let series = log_core(z) - iz.mul_add(0.5, w * poly(w, &PSI_SERIES));
    let sum = recurrence_sum::<1>(y);
    let far = pick(y < 10.0, series - sum, series);
    let d = (y - PSI_ROOT) - PSI_ROOT_LO;
    let near = d * poly(d, &PSI_NEAR_ROOT);
    let v = pick((1.25..=1.75).contains(&y), near, far);
    // Below 0.5: digamma(x) = digamma(1 - x) - pi cos(pi r) / sin(pi r).
    let r = reduce(xd);
    let c = poly(r * r, &COS_PI);
    let refl = xd < 0.5;
    let v = pick(refl, v - std::f64::consts::PI * c / sin_pi(r), v);
    // Poles: sin(pi r) is a signed zero at 0, which gives -inf at +0 and
    // +inf at -0; the negative integers (and -inf, reduced to 0) are NaN.
    let v = pick((xd < 0.0) & (r == 0.0), f64::NAN, v);
    let v = pick(xd == f64::INFINITY, xd, v);
    pick(x.is_nan(), x, v as f32)
}

/// `B_2k` for k = 1..8, the asymptotic series of trigamma beyond
/// `1/z + 1/(2 z^2)` as `sum B_2k / z^(2k+1)`, a polynomial in `1/z^2`
/// (the first omitted term is below 2^-50 relative from z = 8.5).
const TRIGAMMA_SERIES: [f64; 8] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
    7.0 / 6.0,
    -3617.0 / 510.0,
];

/// `trigamma(x)` (polygamma(1, x)), within 1 ulp: +inf at the
/// non-positive integers and -inf, 0 at +inf.
#[inline(always)]
pub(crate) fn trigamma_f32(x: f32) -> f32 {
    let xd = x as f64;
    let y = reflected(xd);
    // trigamma(y) = trigamma(z) + sum_{k<8} 1/(y + k)^2 below 10.
    let (z, _) = shift8(y);
    let iz = 1.0 / z;
    let w = iz * iz;
    let series = iz.mul_add(iz.mul_add(0.5, w * poly(w, &TRIGAMMA_SERIES)), iz);
    let sum = recurrence_sum::<2>(y);
    let v = pick(y < 10.0, series + sum, series);
    // Below 0.5: trigamma(x) = pi^2 / sin^2(pi x) - trigamma(1 - x), +inf at
    // the poles.
    let s = sin_pi(reduce(xd));
    let refl = xd < 0.5;
    let v = pick(
        refl,
        (std::f64::consts::PI * std::f64::consts::PI) / (s * s) - v,
        v,
    );
    pick(x.is_nan(), x, v as f32)
}

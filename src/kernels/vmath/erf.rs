//! float32 `erf` and `erfc` evaluated in float32 lanes (16 per AVX-512
//! register), branch free, with the steps that would lose the 1 ulp bound
//! carried as pairs of floats; `erfinv` from fitted polynomials in
//! float32 lanes as well. The measured worst errors are from sweeps
//! of every float32 input in the ranges where each piece works.

use super::explog32::{fast_two_sum, poly as poly32, SHIFT};
use crate::kernels::pick;

/// (erf(x)/x - 1) as a polynomial in x^2 for |x| <= 0.9, fitted (absolute
/// error 1e-9).
const ERF_G: [f32; 7] = [
    0.128_379_17,
    -0.376_126_3,
    0.112_836_23,
    -0.026_855_404,
    0.005_191_216,
    -0.000_803_228_3,
    7.906_74e-5,
];

/// erfc(x) on [0.9, 2] as a polynomial in `2 (x - 1.5)` and on [2, 3.92]
/// in `x - 3`, fitted (absolute error 2e-9 and 7e-9). Both centres keep
/// the subtraction exact (Sterbenz) where erfc is large, and the terms
/// fall fast enough that Horner's rule loses little to rounding.
const ERFC_A: [f32; 11] = [
    0.033_894_856,
    -0.059_465_144,
    0.044_598_78,
    -0.017_344_017,
    0.002_787_924_8,
    0.000_464_682_35,
    -0.000_303_090_52,
    3.675_713e-5,
    1.028_056_4e-5,
    -3.013_412_7e-6,
    -2.797_159_2e-7,
];
const ERFC_B: [f32; 11] = [
    2.209_399_1e-5,
    -0.000_139_191_31,
    0.000_417_527_07,
    -0.000_790_467,
    0.001_046_851_2,
    -0.001_008_013_8,
    0.000_728_824_35,
    -0.000_412_547_52,
    0.000_149_792_15,
    1.122_757_9e-5,
    -2.633_938e-5,
];

/// `erf(x)`, within 1 ulp (measured 0.89): below 0.9 in magnitude
/// `x + x g(x^2)`, rounded once by a fused multiply-add; up to 3.92
/// `1 - erfc`, the polynomial for erfc chosen per lane; beyond, 1.
#[inline(always)]
pub(crate) fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let small = a.mul_add(poly32(a * a, &ERF_G), a);
    // NaN passes the clamp and stays NaN.
    let c = if a > 3.92 { 3.92 } else { a };
    let hi = c >= 2.0;
    let u = if hi { c - 3.0 } else { (c - 1.5) * 2.0 };
    let mut q = if hi { ERFC_B[10] } else { ERFC_A[10] };
    let mut i = 10;
    while i > 0 {
        i -= 1;
        q = q.mul_add(u, if hi { ERFC_B[i] } else { ERFC_A[i] });
    }
    let r = if a < 0.9 {
        small
    } else if a > 3.92 {
        1.0
    } else {
        1.0 - q
    };
    r.copysign(x)
}

// ln 2 in two parts: `k * LN2_H1` is exact for |k| < 512.
const LN2_H1: f32 = 0.693_145_75;
const LN2_L1: f32 = 1.428_606_8e-6;

/// (e^r - 1 - r) / r^2 on [-ln2/2, ln2/2], fitted (error of e^r from it
/// 3e-9 relative).
const EXP_Q: [f32; 5] = [
    0.5,
    0.166_665_2,
    0.041_666_45,
    0.008_368_807,
    0.001_393_569_9,
];

/// (x + 2) e^(x^2) erfc(x) on [0.6, 10.06] as `P0 + v (P1 + v P(v))`, v =
/// 1/(x + 2) - `TAIL_C`, fitted; the first two coefficients are pairs of
/// floats. Relative error 1.8e-9.
const TAIL_C: f32 = 0.233_767_06;
const TAIL_P0: (f32, f32) = (0.978_132_1, -2.783_413e-8);
const TAIL_P1: (f32, f32) = (2.605_405_3, 5.192_413_6e-8);
const TAIL_P: [f32; 8] = [
    4.349_56,
    2.671_354_5,
    -4.919_165,
    -7.784_577_4,
    10.622_514,
    19.380_2,
    -31.737_427,
    -39.620_48,
];

/// `erfc(a)` for `0.6 <= a <= 10.06`, as `e^(-a^2) (x + 2)^-1 P`, each of
/// the three factors carried as a float and its error so the product
/// rounds about once; the power of two from e^(-a^2) is applied last, in
/// two exact steps, so a subnormal result rounds once.
#[inline(always)]
fn erfc_tail(a: f32) -> f32 {
    // e^(-a^2): a^2 = z + zl exactly; -z = k ln2 + r1 exactly (Sterbenz),
    // and the small rest d joins r1 as a pair.
    let z = a * a;
    let zl = a.mul_add(a, -z);
    let tk = (-z).mul_add(std::f32::consts::LOG2_E, SHIFT);
    let k = tk - SHIFT;
    let r1 = k.mul_add(-LN2_H1, -z);
    let d = (-k).mul_add(LN2_L1, -zl);
    let (rs, rl) = fast_two_sum(r1, d);
    let (s, se) = fast_two_sum(1.0, rs);
    let el = (rs * rs).mul_add(poly32(rs, &EXP_Q), se + rl);
    // t + tl = 1 / (a + 2).
    let uh = a + 2.0;
    let ul = if a < 2.0 {
        a - (uh - 2.0)
    } else {
        2.0 - (uh - a)
    };
    let t = 1.0 / uh;
    let tl = t * (t.mul_add(-uh, 1.0) - t * ul);
    // v + vl = t + tl - TAIL_C (the subtraction is not always exact).
    let v = t - TAIL_C;
    let vb = v - t;
    let vl = ((t - (v - vb)) + (-TAIL_C - vb)) + tl;
    // P = ph + pl.
    let pv = poly32(v, &TAIL_P);
    let w = v * pv;
    let (p1, p1e) = fast_two_sum(TAIL_P1.0, w);
    let p1l = p1e + TAIL_P1.1 + v.mul_add(pv, -w);
    let q = v * p1;
    let qe = v.mul_add(p1, -q);
    let (ph, pe) = fast_two_sum(TAIL_P0.0, q);
    let pl = vl.mul_add(p1, v.mul_add(p1l, pe + (TAIL_P0.1 + qe)));
    // (s + el) (t + tl) (ph + pl).
    let m = s * t;
    let ml = s.mul_add(t, -m) + s.mul_add(tl, el * t);
    let b = m * ph;
    let bl = m.mul_add(ph, -b) + m.mul_add(pl, ml * ph);
    // times 2^k, k in [-146, 0].
    let n = (tk.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) << 23) as u32);
    let s2 = f32::from_bits((n2.wrapping_add(127) << 23) as u32);
    (b + bl) * s1 * s2
}

/// `erfc(x) = 1 - erf(x)`, within 1 ulp (measured 0.99): below 0.6 in
/// magnitude `(1 - x) - x g(x^2)` with `1 - x` as an exact pair; beyond,
/// the tail `erfc(|x|)` (`2 - erfc(|x|)` for negative x), which is 0 in
/// float32 from 10.06.
#[inline(always)]
pub(crate) fn erfc_f32(x: f32) -> f32 {
    let a = x.abs();
    let g = poly32(a * a, &ERF_G);
    let (s, e) = fast_two_sum(1.0, -x);
    let small = s + (-x).mul_add(g, e);
    let c = if a > 10.06 { 10.06 } else { a };
    let tail = erfc_tail(c);
    let tail = if a > 10.06 { 0.0 } else { tail };
    let big = if x < 0.0 { 2.0 - tail } else { tail };
    let r = if a < 0.6 { small } else { big };
    if x.is_nan() {
        x
    } else {
        r
    }
}

/// sqrt(pi) / 2 = erfinv(x) / x at 0, as a float32 and the rest.
const ERFINV_0: (f32, f32) = (0.88622695, -2.66232e-08);

/// (erfinv(x) / x - sqrt(pi)/2) / w as a polynomial in `(w - 3.125) /
/// 3.125`, w = -ln(1 - x^2) in [0, 6.25], fitted with each coefficient
/// rounded to float32 in turn and the rest refitted (relative error of
/// erfinv 7.9e-9). Taking the constant out keeps the rest a small
/// positive addition for small x.
const ERFINV_W: [f32; 10] = [
    0.24557684,
    -0.005418664,
    -0.013436679,
    0.006203319,
    -0.0005030322,
    -0.00082144735,
    0.00040756524,
    -1.09697985e-05,
    -6.0496932e-05,
    1.8509249e-05,
];

/// erfinv(x) / x as `ERFINV_S0 + u q(u)`, `q` a polynomial in `u =
/// (sqrt(w) - 3.25) / 0.75`, sqrt(w) in [2.5, 4] (float32's largest |x|
/// below 1 gives sqrt(w) = 3.99), fitted as `ERFINV_W` (relative error
/// 1.9e-8).
const ERFINV_S0: f32 = 3.0838857;
const ERFINV_S: [f32; 10] = [
    0.7539443,
    0.003020107,
    -0.001583252,
    0.0007933126,
    -0.00039792233,
    0.00015979026,
    -5.1414383e-05,
    1.0867418e-05,
    7.5268e-06,
    -5.17345e-06,
];

/// `erfinv(x)`, within 2 ulp: ±inf at ±1, NaN beyond. In float32 lanes:
/// `1 - x^2` is rounded once (a fused multiply-add), so w = -ln(1 - x^2)
/// is off by about 2^-24 absolute, which moves erfinv by far less than an
/// ulp; the leading constant goes in by a last fused step, `x c0 + x
/// (rest)`, so the rounding of the smaller rest is scaled down.
#[inline(always)]
pub(crate) fn erfinv_f32(x: f32) -> f32 {
    let w = -super::log_f32(x.mul_add(-x, 1.0));
    let tail = w >= 6.25;
    // Selects (`pick`), not branches: a branch would take the square root
    // and the polynomials' choice out of the vectorised loop.
    let u = pick(
        tail,
        (w.sqrt() - 3.25) * (1.0 / 0.75),
        (w - 3.125) * (1.0 / 3.125),
    );
    let mut q = pick(tail, ERFINV_S[9], ERFINV_W[9]);
    let mut i = 9;
    while i > 0 {
        i -= 1;
        q = q.mul_add(u, pick(tail, ERFINV_S[i], ERFINV_W[i]));
    }
    // Below 6.25: c0 + (c0_lo + w q); above: S0 + u q.
    let rest = pick(tail, u, w).mul_add(q, pick(tail, 0.0, ERFINV_0.1));
    let c0 = pick(tail, ERFINV_S0, ERFINV_0.0);
    // erfinv is odd: the sign of x (also of a zero) goes on the result.
    let r = x.mul_add(c0, x * rest).copysign(x);
    let a = x.abs();
    let edge = pick(a == 1.0, f32::INFINITY.copysign(x), f32::NAN);
    pick(a < 1.0, r, edge)
}

//! float64 `pow` that vectorises: `|x|^y = e^(y ln|x|)` with `ln|x|` and
//! the product `y ln|x|` carried as pairs of doubles, so the exponential's
//! argument keeps about 2^-64 relative error, and `e^(z_hi + z_lo)` summed
//! so that its last addition is the only full rounding. No table (AVX2 has
//! no cheap gather for float64 lanes), no branch: C99's special cases are
//! selects, as in the float32 `pow`.
//!
//! Within 1 ulp of the correctly rounded result (the tests compare with
//! glibc's `pow`, itself within 0.52 ulp, and find every result equal to it
//! or one ulp away), except on results below float64's normal range, which
//! are rounded twice (the scaling by `2^k` is the second rounding).

use super::core::int_to_f64;

/// Adding and subtracting it rounds a float64 of magnitude below 2^51 to a
/// whole number, which then sits in the low mantissa bits.
const SHIFT: f64 = 6_755_399_441_055_744.0;

/// 2^52: from it up every float64 is a whole number.
const TWO52: f64 = 4_503_599_627_370_496.0;

// ln 2 split so that n * LN2_HI is exact for |n| < 2^11.
pub(crate) const LN2_HI: f64 = 6.931_471_803_691_238e-1;
pub(crate) const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// 2/3 as a pair: `C3_HI + C3_LO` is within 2^-110 of it.
const C3_HI: f64 = 2.0 / 3.0;
const C3_LO: f64 = 3.700_743_415_417_188e-17;

/// `2 / (2j + 1)` for j = 2..=12: `ln m = 2 s + (2/3) s^3 + s^5 Q(s^2)` is
/// the series of `2 atanh(s)`, `s = (m - 1) / (m + 1)`. With `|s| <= 0.1716`
/// the first term left out is below 2^-70 of the result.
const LOG_Q: [f64; 11] = [
    2.0 / 5.0,
    2.0 / 7.0,
    2.0 / 9.0,
    2.0 / 11.0,
    2.0 / 13.0,
    2.0 / 15.0,
    2.0 / 17.0,
    2.0 / 19.0,
    2.0 / 21.0,
    2.0 / 23.0,
    2.0 / 25.0,
];

/// `(e^r - 1 - r - r^2/2) / r^3` for `|r| <= ln2/2`: Taylor terms to r^15
/// (the first term left out is below 2^-68).
const EXP_Q: [f64; 13] = [
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5_040.0,
    1.0 / 40_320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
    1.0 / 87_178_291_200.0,
    1.0 / 1_307_674_368_000.0,
];

/// `c[0] + c[1] x + ... + c[n] x^n` by Estrin's scheme: pairs
/// `c[2i] + c[2i+1] x`, then pairs of those in `x^2`, and so on. The chain
/// of dependent steps is about log2(N) long instead of N, which is what
/// bounds this function's speed (the loops unroll: every bound is a
/// constant).
#[inline(always)]
pub(crate) fn estrin<const N: usize>(x: f64, c: &[f64; N]) -> f64 {
    let mut v = *c;
    let mut n = N;
    let mut p = x;
    while n > 1 {
        let m = n.div_ceil(2);
        for i in 0..m {
            v[i] = if 2 * i + 1 < n {
                v[2 * i + 1].mul_add(p, v[2 * i])
            } else {
                v[2 * i]
            };
        }
        n = m;
        p = p * p;
    }
    v[0]
}

/// `(s, e)` with `s = a + b` rounded and `e` its exact error, for `|a| >= |b|`
/// (or `a == 0`; when both are tiny the error's own error is tinier still).
#[inline(always)]
fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

/// 2^k for `-1022 <= k <= 1023`.
#[inline(always)]
fn pow2(k: i64) -> f64 {
    f64::from_bits((k.wrapping_add(1023) as u64) << 52)
}

/// The logarithms' argument reduction: `(k, f)` with `u = 2^k (1 + f)`,
/// `1 + f` in `[sqrt(1/2), sqrt(2))` and `f` exact, for a positive finite
/// `u` (subnormals included); anything else gives an unspecified pair.
#[inline(always)]
pub(crate) fn log_reduce(u: f64) -> (f64, f64) {
    // Subnormals scaled into the normal range first.
    let tiny = u < f64::MIN_POSITIVE;
    let u = crate::kernels::pick(tiny, u * 18_446_744_073_709_551_616.0, u);
    // u = 2^k m with m in [sqrt(1/2), sqrt(2)); f = m - 1 is exact.
    const OFF: u64 = 0x3FE6_A09E_667F_3BCD; // sqrt(1/2)
    let tmp = u.to_bits().wrapping_sub(OFF);
    let k = (tmp as i64) >> 52;
    let m = f64::from_bits(u.to_bits().wrapping_sub((k as u64) << 52));
    let k = int_to_f64(k) - crate::kernels::pick(tiny, 64.0, 0.0);
    (k, m - 1.0)
}

/// `ln(u)` as a pair `(hi, lo)` for a positive finite `u` (subnormals
/// included), relative error about 2^-64; anything else gives an
/// unspecified pair that the caller replaces.
#[inline(always)]
fn log_pair(u: f64) -> (f64, f64) {
    let (k, f) = log_reduce(u);
    // s = f / (2 + f) as a pair: the denominator's own rounding error `dl`
    // and the quotient's residual go into `sl`.
    let dh = 2.0 + f;
    let dl = (2.0 - dh) + f;
    let rcp = 1.0 / dh;
    let sh = f * rcp;
    let sl = ((-sh).mul_add(dh, f) - sh * dl) * rcp;
    // s^2 and s^3 as pairs (the products' errors from `mul_add`).
    let s2h = sh * sh;
    let s2l = sh.mul_add(sh, -s2h);
    let s3h = s2h * sh;
    let s3l = s2h.mul_add(sh, -s3h) + s2l * sh + 3.0 * s2h * sl;
    // (2/3) s^3 as a pair; the rest of the series fits in one double.
    let t3h = C3_HI * s3h;
    let t3l = C3_HI.mul_add(s3h, -t3h) + C3_HI * s3l + C3_LO * s3h;
    let t5 = s3h * s2h * estrin(s2h, &LOG_Q);
    // k ln2 + 2s + (2/3) s^3 + s^5 Q: k LN2_HI is exact, and each sum of the
    // large parts keeps its error.
    let (h, l1) = fast_two_sum(k * LN2_HI, 2.0 * sh);
    let (h, l2) = fast_two_sum(h, t3h);
    let lo = k.mul_add(LN2_LO, 2.0 * sl) + t3l + t5 + l1 + l2;
    fast_two_sum(h, lo)
}

/// `e^(zh + zl)` for `|zh| <= 760`, `|zl| <= 2^-40 |zh|`: the sum of the
/// large parts is exact until the last addition; results below the normal
/// range are scaled (and so rounded) once more.
#[inline(always)]
fn exp_pair(zh: f64, zl: f64) -> f64 {
    // zh + zl = n ln2 + r, |r| <= ln2/2 (n LN2_HI is exact).
    let t = zh.mul_add(std::f64::consts::LOG2_E, SHIFT);
    let n = t - SHIFT;
    let k = t.to_bits().wrapping_sub(SHIFT.to_bits()) as i64;
    let rh = (-n).mul_add(LN2_HI, zh);
    let rl = (-n).mul_add(LN2_LO, zl);
    // |rl| is below 2^-21: its square matters, so the sum keeps its error
    // (Fast2Sum even where |rh| < |rl|: then both are so small that the
    // error term's own error is far below the result's ulp).
    let (r, rc) = fast_two_sum(rh, rl);
    // e^r = 1 + r + r^2/2 + r^3 Q(r), the first two sums kept exact.
    let (h1, l1) = fast_two_sum(1.0, r);
    let r2 = r * r;
    let r2e = r.mul_add(r, -r2);
    let (h2, l2) = fast_two_sum(h1, 0.5 * r2);
    let tail = r * r2 * estrin(r, &EXP_Q);
    // e^(r + rc) = e^r (1 + rc) to far below an ulp.
    let lo = rc.mul_add(h1, 0.5f64.mul_add(r2e, tail)) + (l1 + l2);
    let e = h2 + lo;
    // 2^k in two factors, each in the normal range for |k| <= 1100.
    let k1 = k >> 1;
    e * pow2(k1) * pow2(k - k1)
}

/// ln(u) for a positive finite u (subnormals included), within an ulp, in
/// code that vectorises; for anything else the value is unspecified and the
/// caller selects its own.
#[inline(always)]
pub(crate) fn ln_f64(u: f64) -> f64 {
    log_pair(u).0
}

/// e^x for |x| <= 760, within an ulp, in code that vectorises (callers
/// clamp their argument; the Bessel functions use it).
#[inline(always)]
pub(crate) fn exp_f64(x: f64) -> f64 {
    exp_pair(x, 0.0)
}

/// e^(hi + lo) for |hi| <= 760, |lo| <= 2^-40 |hi| (a product kept exact
/// as a pair), vectorising.
#[inline(always)]
pub(crate) fn exp_f64_pair(hi: f64, lo: f64) -> f64 {
    exp_pair(hi, lo)
}

/// Whether `v` is a whole number (infinities count as even ones, as in C).
#[inline(always)]
fn is_int(v: f64) -> bool {
    let a = v.abs();
    (a >= TWO52) | ((a + TWO52) - TWO52 == a)
}

/// `x ** y` as C's `pow` defines it, within 1 ulp, with the exact forms
/// PyTorch's tensor `pow` keeps for the small whole exponents: `x * x`,
/// `x * x * x`, `x` and `1 / x` for `y` = 2, 3, 1, -1.
#[inline(always)]
pub(crate) fn pow_f64(x: f64, y: f64) -> f64 {
    let ax = x.abs();
    let (lh, ll) = log_pair(ax);
    // ln|x| at 0 and inf.
    let lh = if ax == 0.0 { f64::NEG_INFINITY } else { lh };
    let lh = if ax == f64::INFINITY {
        f64::INFINITY
    } else {
        lh
    };
    let ll = if (ax == 0.0) | (ax == f64::INFINITY) {
        0.0
    } else {
        ll
    };
    // y ln|x| as a pair; beyond +-760 the result is inf or 0 whatever the
    // low part (a NaN passes and is replaced below).
    let zh = y * lh;
    let zl = y.mul_add(lh, -zh) + y * ll;
    let inside = zh.abs() <= 760.0;
    let zl = if inside { zl } else { 0.0 };
    let zh = if zh > 760.0 { 760.0 } else { zh };
    let zh = if zh < -760.0 { -760.0 } else { zh };
    let r = exp_pair(zh, zl);
    let y_int = is_int(y);
    let y_odd = y_int & !is_int(0.5 * y);
    // A negative base (-0 included): the sign for an odd exponent; NaN for
    // a finite one below 0 to a fractional power (-inf to one is inf or 0,
    // as in C).
    let r = if x.is_sign_negative() & y_odd { -r } else { r };
    let r = if (x < 0.0) & !y_int & (ax != f64::INFINITY) {
        f64::NAN
    } else {
        r
    };
    let r = if x.is_nan() | y.is_nan() { f64::NAN } else { r };
    // (-1) ** +-inf = 1.
    let r = if (ax == 1.0) & (y.abs() == f64::INFINITY) {
        1.0
    } else {
        r
    };
    let r = if y == 2.0 { x * x } else { r };
    let r = if y == 3.0 { x * x * x } else { r };
    let r = if y == 1.0 { x } else { r };
    let r = if y == -1.0 { 1.0 / x } else { r };
    // x ** 0 = 1 and 1 ** y = 1, NaN included.
    if (y == 0.0) | (x == 1.0) {
        1.0
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::isas;
    use super::super::{zip_on, Isa};
    use super::*;
    use std::mem::MaybeUninit;

    fn eval(isa: Isa, xs: &[f64], ys: &[f64]) -> Vec<f64> {
        let mut out = vec![MaybeUninit::<f64>::uninit(); xs.len()];
        zip_on(isa, &mut out, xs, ys, &pow_f64);
        // SAFETY: `zip_on` wrote every element.
        out.into_iter()
            .map(|v| unsafe { v.assume_init() })
            .collect()
    }

    /// The distance from `got` to `want` in float64 ulps of `want` (the
    /// subnormal spacing below the normal range); infinities, zeros and NaN
    /// must match exactly.
    fn ulps64(got: f64, want: f64) -> f64 {
        if want.is_nan() || got.is_nan() {
            return if want.is_nan() && got.is_nan() {
                0.0
            } else {
                f64::INFINITY
            };
        }
        if got == want {
            return 0.0;
        }
        if want.is_infinite() || got.is_infinite() {
            // glibc and this code may round to either side of MAX.
            let edge = got.abs().min(want.abs()) == f64::MAX;
            return if edge { 1.0 } else { f64::INFINITY };
        }
        let a = want.abs().max(f64::MIN_POSITIVE);
        let ulp = f64::from_bits(a.to_bits() + 1) - a;
        (got - want).abs() / ulp
    }

    /// A dense sample of float64 values: for every 16th biased exponent
    /// (subnormals included) `per` mantissas, both signs, plus the specials.
    fn sample64(per: u64) -> Vec<f64> {
        let mut v = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for e in (0..2047u64).step_by(16).chain([1022, 1023, 1024, 2046]) {
            for _ in 0..per {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let bits = (e << 52) | (seed & ((1 << 52) - 1));
                v.push(f64::from_bits(bits));
                v.push(-f64::from_bits(bits));
            }
        }
        v.extend_from_slice(&[
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            -2.0,
            0.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(1),
            1.0 + f64::EPSILON,
            1.0 - f64::EPSILON / 2.0,
        ]);
        v
    }

    /// Every pair on every path against glibc's `pow`: equal or one ulp
    /// apart (two ulps on results below the normal range, rounded twice),
    /// zeros and infinities with glibc's sign, and the paths equal. Returns the share of results that differ from glibc's.
    fn sweep(xs: &[f64], ys: &[f64]) -> f64 {
        let (mut differ, mut total) = (0usize, 0usize);
        for &y in ys {
            let yv = vec![y; xs.len()];
            let mut first: Option<Vec<f64>> = None;
            for isa in isas() {
                let got = eval(isa, xs, &yv);
                for (&x, &r) in xs.iter().zip(&got) {
                    let want = x.powf(y);
                    let e = ulps64(r, want);
                    let bound = if want.abs() < f64::MIN_POSITIVE {
                        2.0
                    } else {
                        1.0
                    };
                    assert!(
                        e <= bound,
                        "pow({x:e}, {y:e}) on {isa:?}: {r:e} vs {want:e}"
                    );
                    // Signed zeros and infinities keep glibc's sign; the
                    // trivial ones are exact.
                    if want == 0.0 || want.is_infinite() {
                        assert_eq!(
                            r.is_sign_negative(),
                            want.is_sign_negative(),
                            "pow({x:e}, {y:e})"
                        );
                    }
                    if x.abs() == 1.0 || y == 0.0 {
                        assert!(r.to_bits() == want.to_bits() || r.is_nan() && want.is_nan());
                    }
                    differ += (e > 0.0) as usize;
                    total += 1;
                }
                if let Some(f) = &first {
                    for ((&x, a), b) in xs.iter().zip(f).zip(&got) {
                        assert!(
                            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                            "pow({x:e}, {y:e}) differs on {isa:?}"
                        );
                    }
                } else {
                    first = Some(got);
                }
            }
        }
        differ as f64 / total as f64
    }

    #[test]
    fn within_one_ulp_of_the_c_library() {
        let xs = sample64(60);
        let mut ys: Vec<f64> = sample64(3);
        ys.extend([
            3.0,
            -3.0,
            4.0,
            5.0,
            -7.0,
            0.5,
            -0.5,
            1.5,
            -2.5,
            0.1,
            1e-3,
            17.0,
            -31.0,
            100.5,
            1e4,
            -1e4,
            3e15,
            9_007_199_254_740_993.0,
            1e-300,
            0.9,
        ]);
        let d = sweep(&xs, &ys);
        eprintln!(
            "pow64 over the whole range: {:.4} of results differ from glibc",
            d
        );
        // Where results are neither 0 nor inf for many exponents, and next
        // to 1, where ln x is small and y large.
        let near: Vec<f64> = (0..=40_000)
            .map(|i| 0.25 + 3.75 * i as f64 / 40_000.0)
            .collect();
        let ys: Vec<f64> = (0..=240).map(|i| -600.0 + 5.0 * i as f64 + 0.37).collect();
        let d = sweep(&near, &ys);
        eprintln!("pow64 on [1/4, 4]: {:.4} differ", d);
        let one: Vec<f64> = (1..4000u64)
            .flat_map(|k| {
                [
                    f64::from_bits(1f64.to_bits() + k * 997),
                    f64::from_bits(1f64.to_bits() - k * 991),
                ]
            })
            .collect();
        let ys = [1e3, -1e3, 1e9, -1e9, 1e12, 3.3e14, -2.9e14, 12_345.678];
        sweep(&one, &ys);
        // Results next to overflow and underflow, and subnormal results.
        let xs: Vec<f64> = (0..20_000).map(|i| 1.5 + i as f64 * 1e-4).collect();
        let ys: Vec<f64> = (0..200)
            .map(|i| -1900.0 + i as f64 * 19.0 + 0.123)
            .collect();
        sweep(&xs, &ys);
        let neg: Vec<f64> = (0..20_000).map(|i| -4.0 + i as f64 * 1.9e-4).collect();
        let ys: Vec<f64> = (-40..=40).map(|k| k as f64).collect();
        sweep(&neg, &ys);
    }

    #[test]
    fn special_cases_are_the_c_librarys() {
        let vals = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            2.0,
            -2.0,
            3.0,
            -3.0,
            1.5,
            -1.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(1),
            9_007_199_254_740_992.0,
            -9_007_199_254_740_993.0,
            4_503_599_627_370_497.0,
            -4_503_599_627_370_497.0,
            1e300,
            -1e300,
        ];
        for &x in &vals {
            for &y in &vals {
                let want = x.powf(y);
                for isa in isas() {
                    let got = eval(isa, &[x], &[y])[0];
                    let ok = if !want.is_normal() || want.abs() == 1.0 {
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
                    } else {
                        ulps64(got, want) <= 1.0
                    };
                    assert!(ok, "pow({x:e}, {y:e}) on {isa:?}: {got:e} vs {want:e}");
                }
            }
        }
        // The small whole exponents are the exact products.
        for &x in &sample64(2) {
            for isa in isas() {
                let got = eval(isa, &[x; 4], &[2.0, 3.0, 1.0, -1.0]);
                let want = [x * x, x * x * x, x, 1.0 / x];
                for (g, w) in got.iter().zip(want) {
                    assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
                }
            }
        }
        // 2/3 as a pair.
        assert_eq!(C3_LO, (-3.0f64).mul_add(C3_HI, 2.0) / 3.0);
    }
}

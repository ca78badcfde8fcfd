//! The modified Bessel functions of the first kind I0 and I1, plain and
//! scaled by exp(-|x|) (`i0`, `i0e`, `i1`, `i1e`).
//!
//! Each is a Chebyshev series of a smooth function (the same split of the
//! range as Cephes': e^-x I(x) on [0, 8], sqrt(x) e^-x I(x) in 8/x above),
//! summed by Clenshaw's recurrence. The coefficients were computed at 50
//! digits from the power and asymptotic series (`tools/chebyshev_tables.py`)
//! and cut where a term falls below 1e-18 of the largest. Both halves are
//! evaluated and one is selected, with no branch and no table, so a loop of
//! these vectorises in float64 lanes; the unscaled forms multiply by
//! e^|x| from `vmath`'s float64 exponential. The results agree with the
//! series (`reference` below) to a few ulp.

use crate::kernels::vmath::{clenshaw, exp_f64};

/// e^-x I0(x) on 0 <= x <= 8, in t = x/4 - 1.
const I0E_A: [f64; 31] = [
    0.33839763720473803,
    -0.3046826723431984,
    0.17162090152220877,
    -0.09490109704804764,
    0.04930528423967071,
    -0.02373741480589947,
    0.010546460394594998,
    -0.004324309995050576,
    0.0016394756169413357,
    -0.0005763755745385824,
    0.00018850288509584165,
    -5.754195010082104e-05,
    1.6448448070728896e-05,
    -4.4167383584587505e-06,
    1.1173875391201037e-06,
    -2.670793853940612e-07,
    6.046995022541919e-08,
    -1.300025009986248e-08,
    2.6598237246823866e-09,
    -5.189795601635263e-10,
    9.675809035373237e-11,
    -1.726826291441556e-11,
    2.95505266312964e-12,
    -4.856446783111929e-13,
    7.676185498604936e-14,
    -1.1685332877993451e-14,
    1.715391285555133e-15,
    -2.431279846547955e-16,
    3.3307945188222384e-17,
    -4.4153416464793395e-18,
    5.669178006921496e-19,
];

/// sqrt(x) e^-x I0(x) on x >= 8, in t = 16/x - 1 (x = inf at t = -1).
const I0E_B: [f64; 27] = [
    0.4022452055070544,
    0.0033691164782556943,
    6.889758346916825e-05,
    2.8913705208347567e-06,
    2.0489185894690638e-07,
    2.266668990498178e-08,
    3.3962320257083865e-09,
    4.94060238822497e-10,
    1.1889147107846439e-11,
    -3.1499165279632416e-11,
    -1.3215811840447713e-11,
    -1.7941785315068062e-12,
    7.180124451383666e-13,
    3.8527783827421426e-13,
    1.54008621752141e-14,
    -4.150569347287222e-14,
    -9.554846698828307e-15,
    3.8116806693526224e-15,
    1.7725601330565263e-15,
    -3.425485619677219e-16,
    -2.8276239805165836e-16,
    3.461222867697461e-17,
    4.46562142029676e-17,
    -4.830504485944182e-18,
    -7.233180487874754e-18,
    9.921475412173699e-19,
    1.193650890845982e-18,
];

/// e^-x I1(x) / x on 0 <= x <= 8, in t = x/4 - 1.
const I1E_A: [f64; 30] = [
    0.12629359322181682,
    -0.17641651835783406,
    0.1026436586898471,
    -0.05294598120809499,
    0.024726449030626516,
    -0.010564084894626197,
    0.004156422944312888,
    -0.0015135724506312532,
    0.0005122859561685758,
    -0.00016176081582589674,
    4.781565107550054e-05,
    -1.3273163656039436e-05,
    3.4702513081376785e-06,
    -8.568720264695455e-07,
    2.0032947535521353e-07,
    -4.445059128796328e-08,
    9.381537386495773e-09,
    -1.8872497517228294e-09,
    3.625590281552117e-10,
    -6.663489723502027e-11,
    1.1736186298890901e-11,
    -1.9839743977649436e-12,
    3.223793365945575e-13,
    -5.042185504727912e-14,
    7.600684294735408e-15,
    -1.1055969477353862e-15,
    1.5536319577362005e-16,
    -2.111421214358166e-17,
    2.7779141127610464e-18,
    -3.541581772542136e-19,
];

/// sqrt(x) e^-x I1(x) on x >= 8, in t = 16/x - 1.
const I1E_B: [f64; 27] = [
    0.38928811750914005,
    -0.009761097491361469,
    -0.00011058893876262371,
    -3.882564808877691e-06,
    -2.512236237870209e-07,
    -2.6314688468895196e-08,
    -3.835380385964237e-09,
    -5.589743462196584e-10,
    -1.8974958123505413e-11,
    3.2526035830154884e-11,
    1.4125807436613782e-11,
    2.0356285441470896e-12,
    -7.198551776245908e-13,
    -4.0835511110921974e-13,
    -2.1015418427726643e-14,
    4.272440016711951e-14,
    1.0420276984128802e-14,
    -3.8144030724370075e-15,
    -1.8803547755107825e-15,
    3.3082023109209285e-16,
    2.96262899764595e-16,
    -3.209525921993424e-17,
    -4.6503053684893586e-17,
    4.414348323071708e-18,
    7.517296310842105e-18,
    -9.314178867326884e-19,
    -1.242193275194891e-18,
];

/// e^-a I_nu(a) for a = |x| >= 0 (NaN for NaN): the small-argument series
/// `small(t)` below 8 (times `a` for I1), the large-argument one above.
#[inline(always)]
fn scaled<const N: usize, const M: usize>(
    a: f64,
    small: &[f64; N],
    large: &[f64; M],
    odd: bool,
) -> f64 {
    let near = clenshaw(a.mul_add(0.25, -1.0), small);
    let near = if odd { near * a } else { near };
    // 8 / max(a, 8) in (0, 1]; 0 at infinity, where the result is 0.
    let b = if a > 8.0 { a } else { 8.0 };
    let far = clenshaw(16.0 / b - 1.0, large) / b.sqrt();
    let v = if a <= 8.0 { near } else { far };
    // I0(0) = 1 exactly (the series sums to it within an ulp).
    let v = if a == 0.0 && !odd { 1.0 } else { v };
    // NaN fails both comparisons above and would take the far series at 8.
    if a.is_nan() {
        a
    } else {
        v
    }
}

/// e^a times `s` (= e^-a I(a)): in two halves, as I0 stays finite a little
/// past the exponential's overflow.
#[inline(always)]
fn unscale(a: f64, s: f64) -> f64 {
    let h = exp_f64((0.5 * a).min(750.0));
    let v = s * h * h;
    if a == f64::INFINITY {
        a
    } else {
        v
    }
}

#[inline(always)]
pub(crate) fn i0e(x: f64) -> f64 {
    scaled(x.abs(), &I0E_A, &I0E_B, false)
}

#[inline(always)]
pub(crate) fn i0(x: f64) -> f64 {
    let a = x.abs();
    unscale(a, scaled(a, &I0E_A, &I0E_B, false))
}

#[inline(always)]
pub(crate) fn i1e(x: f64) -> f64 {
    scaled(x.abs(), &I1E_A, &I1E_B, true).copysign(x)
}

/// The first `N` terms of a float64 Chebyshev table, rounded to float32.
const fn narrow<const N: usize, const M: usize>(c: &[f64; M]) -> [f32; N] {
    let mut out = [0.0f32; N];
    let mut i = 0;
    while i < N {
        out[i] = c[i] as f32;
        i += 1;
    }
    out
}

// The float32 form: e^-x I1(x) / x on [0, 4] and on [4, 8], in t = x/2 - 1
// and t = x/2 - 3, to 2^-27 (summed in float32, one series over [0, 8]
// lost up to 7 ulp to cancellation near 8), and the large-argument series
// cut at the same 2^-27.
const I1E_LOW: [f64; 14] = [
    0.18142058230071564,
    -0.19682987517970651,
    0.08182016882091878,
    -0.028447633978094543,
    0.00854663180184914,
    -0.002260959640348992,
    0.0005337954852493472,
    -0.00011366635576318096,
    2.2021888277601513e-05,
    -3.910710113272514e-06,
    6.406226772173248e-07,
    -9.734298151999355e-08,
    1.3787319061338465e-08,
    -1.8281051416928955e-09,
];
const I1E_HIGH: [f64; 11] = [
    0.027947364726109907,
    -0.013447340584312654,
    0.002690539881795342,
    -0.0004975018677537552,
    8.741532584676023e-05,
    -1.4727902443452828e-05,
    2.3844856872271264e-06,
    -3.7072908412438424e-07,
    5.525736268209145e-08,
    -7.881569450135684e-09,
    1.074208433828335e-09,
];
const I1E_LOW32: [f32; 14] = narrow(&I1E_LOW);
const I1E_HIGH32: [f32; 11] = narrow(&I1E_HIGH);
const I1E_B32: [f32; 7] = narrow(&I1E_B);

/// Clenshaw's recurrence in float32 lanes (twice as many a vector as float64).
#[inline(always)]
fn clenshaw32<const N: usize>(t: f32, c: &[f32; N]) -> f32 {
    let t2 = t + t;
    let (mut b1, mut b2) = (0.0f32, 0.0f32);
    for &ck in c[1..].iter().rev() {
        let b0 = t2.mul_add(b1, ck - b2);
        b2 = b1;
        b1 = b0;
    }
    t.mul_add(b1, c[0] - b2)
}

/// `i1e` for float32 input, summed in float32 as PyTorch sums its float32
/// series: within 4 float32 ulp of the float64 form rounded (PyTorch's float32
/// i1e strays up to 9), at 32 terms in 8-wide lanes instead of 57 in 4-wide
/// ones.
#[inline(always)]
pub(crate) fn i1e_f32(x: f32) -> f32 {
    let a = x.abs();
    let low = clenshaw32(a.mul_add(0.5, -1.0), &I1E_LOW32);
    let high = clenshaw32(a.mul_add(0.5, -3.0), &I1E_HIGH32);
    let near = if a <= 4.0 { low } else { high } * a;
    let b = if a > 8.0 { a } else { 8.0 };
    let far = clenshaw32(16.0 / b - 1.0, &I1E_B32) / b.sqrt();
    let v = if a <= 8.0 { near } else { far };
    let v = if a.is_nan() { a } else { v };
    v.copysign(x)
}

#[inline(always)]
pub(crate) fn i1(x: f64) -> f64 {
    let a = x.abs();
    unscale(a, scaled(a, &I1E_A, &I1E_B, true)).copysign(x)
}

/// The power series sum_k (x/2)^(2k+nu) / (k! (k+nu)!) below |x| = 20 (all
/// terms positive, no cancellation) and the asymptotic series
/// e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k above (Abramowitz & Stegun
/// 9.7.1): slow, but accurate to an ulp or two; the Chebyshev forms are
/// checked against it.
#[cfg(test)]
mod reference {
    use std::f64::consts::PI;

    pub(super) const SERIES_LIMIT: f64 = 20.0;

    /// sum_k (x^2/4)^k / (k! (k+nu)!), times (x/2)^nu.
    pub(super) fn series(nu: u32, x: f64) -> f64 {
        let q = 0.25 * x * x;
        let mut term = if nu == 0 { 1.0 } else { 0.5 * x };
        let mut sum = term;
        let mut k = 1.0;
        loop {
            term *= q / (k * (k + nu as f64));
            sum += term;
            if term <= 1e-17 * sum.abs() || term == 0.0 {
                return sum;
            }
            k += 1.0;
        }
    }

    /// The asymptotic sum for x >= SERIES_LIMIT, without its factor e^x / sqrt(2 pi x).
    pub(super) fn asymptotic(nu: u32, x: f64) -> f64 {
        let mu = 4.0 * (nu * nu) as f64;
        let mut term = 1.0;
        let mut sum = 1.0;
        for k in 1..200 {
            let j = (2 * k - 1) as f64;
            let next = -term * (mu - j * j) / (8.0 * k as f64 * x);
            if next.abs() >= term.abs() {
                break; // past the smallest term the series diverges
            }
            term = next;
            sum += term;
            if term.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum
    }

    /// I_nu(|x|) (nu = 0 or 1), scaled by exp(-|x|) when `scaled`.
    pub(super) fn bessel_i(nu: u32, x: f64, scaled: bool) -> f64 {
        let a = x.abs();
        let v = if a.is_infinite() {
            if scaled {
                0.0
            } else {
                f64::INFINITY
            }
        } else if a < SERIES_LIMIT {
            let s = series(nu, a);
            if scaled {
                s * (-a).exp()
            } else {
                s
            }
        } else {
            let base = asymptotic(nu, a) / (2.0 * PI * a).sqrt();
            if scaled {
                base
            } else {
                // e^a in two halves: I0 stays finite a little past exp's overflow.
                let h = (0.5 * a).exp();
                h * base * h
            }
        };
        if nu == 1 && x < 0.0 {
            -v
        } else {
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::reference::{asymptotic, bessel_i, series, SERIES_LIMIT};
    use super::*;
    use std::f64::consts::PI;

    #[test]
    fn known_values() {
        // Abramowitz & Stegun table 9.8 and the Wronskian-free identities.
        assert!((i0(1.0) - 1.266_065_877_752_008_4).abs() < 1e-15);
        assert!((i1(1.0) - 0.565_159_103_992_485_1).abs() < 1e-15);
        assert!((i0e(30.0) - 0.073_145_946_482_237_3).abs() < 1e-15);
        assert!((i1(-2.0) + 1.590_636_854_637_329_5).abs() < 1e-14);
        assert_eq!(i0(0.0), 1.0);
        assert_eq!(i1(0.0), 0.0);
        assert!(i0(f64::NAN).is_nan());
        assert_eq!(i0e(f64::NEG_INFINITY), 0.0);
        assert!(i0(713.0).is_finite() && i0(714.0).is_infinite());
        // The two methods agree where they meet.
        for nu in [0, 1] {
            let by_series = series(nu, SERIES_LIMIT) * (-SERIES_LIMIT).exp();
            let by_asymptotic = asymptotic(nu, SERIES_LIMIT) / (2.0 * PI * SERIES_LIMIT).sqrt();
            assert!((by_series / by_asymptotic - 1.0).abs() < 2e-15, "{nu}");
        }
    }

    /// The Chebyshev forms against the series, over the whole float64 range
    /// that matters (x below 1e-3 up to past the overflow of I0), both signs.
    #[test]
    fn chebyshev_forms_match_the_series() {
        let mut worst = 0.0f64;
        let mut x = 1e-6f64;
        while x < 720.0 {
            for s in [1.0, -1.0] {
                let v = s * x;
                for (nu, scaled, got) in [
                    (0, false, i0(v)),
                    (0, true, i0e(v)),
                    (1, false, i1(v)),
                    (1, true, i1e(v)),
                ] {
                    let want = bessel_i(nu, v, scaled);
                    if want.is_infinite() {
                        assert_eq!(got, want, "nu={nu} scaled={scaled} x={v}");
                        continue;
                    }
                    let err = ((got - want) / want).abs() / f64::EPSILON;
                    worst = worst.max(err);
                    assert!(
                        err < 8.0,
                        "nu={nu} scaled={scaled} x={v}: {got} vs {want} ({err} eps)"
                    );
                }
            }
            x *= 1.0 + 1.0 / 64.0;
        }
        assert!(worst > 0.0);
        for f in [i0, i0e, i1, i1e] {
            assert!(f(f64::NAN).is_nan());
        }
        assert_eq!(i0(f64::INFINITY), f64::INFINITY);
        assert_eq!(i0(f64::NEG_INFINITY), f64::INFINITY);
        assert_eq!(i1(f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(i0e(f64::INFINITY), 0.0);
        assert_eq!(i1e(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(i0(0.0), 1.0);
    }

    /// The float32 form against the float64 one rounded, over every float32
    /// exponent that matters and both signs.
    #[test]
    fn i1e_f32_matches_float64() {
        let mut worst = 0.0f64;
        let mut x = 1e-30f32;
        while x < 1e30 {
            for v in [x, -x, x * 1.37] {
                let (got, want) = (i1e_f32(v), i1e(v as f64) as f32);
                let err =
                    (got as f64 - want as f64).abs() / (want.abs() as f64 * f32::EPSILON as f64);
                worst = worst.max(err);
                assert!(err <= 4.0, "i1e_f32({v}) = {got}, want {want} ({err} ulp)");
            }
            x *= 1.0 + 1.0 / 256.0;
        }
        assert!(worst > 0.0);
        assert!(i1e_f32(f32::NAN).is_nan());
        assert_eq!(i1e_f32(f32::INFINITY), 0.0);
        assert_eq!(i1e_f32(f32::NEG_INFINITY).to_bits(), (-0.0f32).to_bits());
        assert_eq!(i1e_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    }
}

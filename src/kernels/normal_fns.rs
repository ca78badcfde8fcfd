//! Functions of the standard normal distribution and the scaled complementary
//! error function: `erfcx`, `ndtr`, `log_ndtr` and `ndtri`.

use std::f64::consts::FRAC_1_SQRT_2;

use super::vmath::{clenshaw, estrin, exp_f64_pair, ln_f64, log_reduce, LN2_HI, LN2_LO};

/// (1 + 2x) erfcx(x) on x >= 0 in t = (x - 3) / (x + 3): a Chebyshev series
/// (Schonfelder's mapping of the half line; `tools/chebyshev_tables.py`).
const ERFCX: [f64; 25] = [
    1.17756257419656,
    0.005353904539615676,
    -0.09377550342284209,
    0.05436652555744322,
    -0.018976596707845208,
    0.004453426061462712,
    -0.0006335531710553147,
    1.7661719523171593e-05,
    1.2841532864056671e-05,
    -2.0072285659059913e-06,
    -1.807522790414837e-07,
    7.549828343825093e-08,
    1.885668523838603e-09,
    -2.699519049798364e-09,
    -1.460079119939105e-11,
    1.0361607445969489e-10,
    1.475715976623473e-12,
    -4.277340064396911e-12,
    -2.07922492859799e-13,
    1.8134502003176963e-13,
    1.973425574544739e-14,
    -7.287943737592673e-15,
    -1.5169878690228116e-15,
    2.3514112258781403e-16,
    1.0006111691821667e-16,
];

/// erfcx(x) for x >= 0 (and +inf): the Chebyshev series alone.
#[inline(always)]
fn erfcx_nonneg(a: f64) -> f64 {
    // Finite stand-in for infinity: t rounds to 1 there, and the quotient
    // gives the limit's 0 from 1 + 2a = inf below.
    let b = a.min(f64::MAX);
    let t = (b - 3.0) / (b + 3.0);
    clenshaw(t, &ERFCX) / b.mul_add(2.0, 1.0)
}

/// erfcx(x) = exp(x^2) erfc(x), branch free so that a loop of it vectorises:
/// the Chebyshev series over 1 + 2x for x >= 0, and erfcx(x) = 2 exp(x^2) -
/// erfcx(-x) below, with x^2 carried as an exact pair into the exponential.
/// Within a few ulp of exp(x^2) times libm's erfc (`reference` below).
#[inline(always)]
pub(crate) fn erfcx(x: f64) -> f64 {
    let pos = erfcx_nonneg(x.abs());
    let h = x * x;
    let l = x.mul_add(x, -h);
    // Beyond 26.7, 2 exp(x^2) overflows; the clamp keeps the pair in range.
    let inside = h <= 720.0;
    let e = exp_f64_pair(h.min(720.0), if inside { l } else { 0.0 });
    let neg = if inside {
        2.0f64.mul_add(e, -pos)
    } else {
        f64::INFINITY
    };
    let v = if x < 0.0 { neg } else { pos };
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// log(ndtr(x)), branch free. With E = erfcx(|x| / sqrt2): below 0,
/// ndtr(x) = E exp(-x^2/2) / 2, so the log is ln(E/2) - x^2/2, two terms of
/// one sign (no cancellation, and finite far past where ndtr underflows).
/// Above 0 it is log1p(-q) with q = ndtr(-x) from the same E and x^2 as an
/// exact pair, the log1p taken as ln(u) + (-q - (u - 1)) / u with u = 1 - q
/// (the second term restores what rounding u lost).
#[inline(always)]
pub(crate) fn log_ndtr(x: f64) -> f64 {
    let e = erfcx_nonneg(x.abs() * FRAC_1_SQRT_2);
    let h = x * x;
    let lower = if e > 0.0 {
        ln_f64(0.5 * e) - 0.5 * h
    } else {
        // Only past |x| ~ 1e154, where x^2 has already overflowed.
        f64::NEG_INFINITY
    };
    let l = x.mul_add(x, -h);
    let zh = (-0.5 * h).max(-750.0);
    let q = 0.5 * e * exp_f64_pair(zh, if zh > -750.0 { -0.5 * l } else { 0.0 });
    let u = 1.0 - q;
    let upper = ln_f64(u) + ((-q) - (u - 1.0)) / u;
    let v = if x > 0.0 { upper } else { lower };
    if x.is_nan() {
        x
    } else {
        v
    }
}

// Wichura's AS 241 (Applied Statistics 37(3), 1988, PPND16): the central
// rational in r = 0.180625 - q^2 for |p - 1/2| <= 0.425, and two in
// r = sqrt(-ln min(p, 1 - p)) beyond it (split at r = 5). Lowest order first.
const AS241_A: [f64; 8] = [
    3.3871328727963665,
    133.14166789178438,
    1971.5909503065513,
    13731.69376550946,
    45921.95393154987,
    67265.7709270087,
    33430.57558358813,
    2509.0809287301227,
];
const AS241_B: [f64; 8] = [
    1.0,
    42.31333070160091,
    687.1870074920579,
    5394.196021424751,
    21213.794301586597,
    39307.89580009271,
    28729.085735721943,
    5226.495278852854,
];
const AS241_C: [f64; 8] = [
    1.4234371107496835,
    4.630337846156546,
    5.769497221460691,
    3.6478483247632045,
    1.2704582524523684,
    0.2417807251774506,
    0.022723844989269184,
    0.0007745450142783414,
];
const AS241_D: [f64; 8] = [
    1.0,
    2.053191626637759,
    1.6763848301838038,
    0.6897673349851,
    0.14810397642748008,
    0.015198666563616457,
    0.0005475938084995345,
    1.0507500716444169e-09,
];
const AS241_E: [f64; 8] = [
    6.657904643501103,
    5.463784911164114,
    1.7848265399172913,
    0.29656057182850487,
    0.026532189526576124,
    0.0012426609473880784,
    2.7115555687434876e-05,
    2.0103343992922881e-07,
];
const AS241_F: [f64; 8] = [
    1.0,
    0.599832206555888,
    0.1369298809227358,
    0.014875361290850615,
    0.0007868691311456133,
    1.8463183175100548e-05,
    1.421511758316446e-07,
    2.0442631033899397e-15,
];

/// ln(u) for 0 < u <= 1/2 (subnormals included), within about an ulp, for
/// `ndtri`'s tails: k ln2 + 2 atanh(f / (2 + f)) with u = 2^k (1 + f)
/// (`vmath::log_reduce`, shared with `ln_f64` and `pow_f64`). No
/// pair arithmetic as in `ln_f64`: below 1/2 the two terms share a sign and
/// nothing cancels. Anything else gives an unspecified value.
#[inline(always)]
fn ln_half(u: f64) -> f64 {
    // 2 / (2j + 1) for j = 1..=10: with |s| <= 0.1716 the first term left
    // out is below 2^-60 of the result.
    const Q: [f64; 10] = [
        2.0 / 3.0,
        2.0 / 5.0,
        2.0 / 7.0,
        2.0 / 9.0,
        2.0 / 11.0,
        2.0 / 13.0,
        2.0 / 15.0,
        2.0 / 17.0,
        2.0 / 19.0,
        2.0 / 21.0,
    ];
    let (k, f) = log_reduce(u);
    let s = f / (2.0 + f);
    let s2 = s * s;
    let q = estrin(s2, &Q);
    let lnm = (s * s2).mul_add(q, 2.0 * s);
    k.mul_add(LN2_HI, k.mul_add(LN2_LO, lnm))
}

/// The inverse of `ndtr`: Wichura's AS 241, within 3 ulp of the true
/// quantile from p = 0.5 down to the smallest subnormal (the tests compare
/// it with Newton's method run to convergence). Branch free: the three
/// rationals are all evaluated, the chosen numerator and denominator are
/// selected, and one division follows, so the loop vectorises. The
/// logarithm, the square root and the tail's rational form one chain of
/// dependent steps: the polynomials go by Estrin's scheme (about half
/// Horner's latency), which is what the loop's speed depends on.
#[inline(always)]
pub(crate) fn ndtri(p: f64) -> f64 {
    let q = p - 0.5;
    let rc = (-q).mul_add(q, 0.180_625);
    let (nc, dc) = (q * estrin(rc, &AS241_A), estrin(rc, &AS241_B));
    // min(p, 1 - p), exact for p in [0, 1]; a stand-in where it is not
    // positive (0 and 1 are patched below, outside [0, 1] is NaN).
    let s = if q < 0.0 { p } else { 1.0 - p };
    let r = (-ln_half(if s > 0.0 { s } else { 0.5 })).sqrt();
    let near = r - 1.6;
    let far = r - 5.0;
    let (nn, dn) = (estrin(near, &AS241_C), estrin(near, &AS241_D));
    let (nf, df) = (estrin(far, &AS241_E), estrin(far, &AS241_F));
    let tail_n = if r <= 5.0 { nn } else { nf };
    let tail_d = if r <= 5.0 { dn } else { df };
    let tail_n = if q < 0.0 { -tail_n } else { tail_n };
    let central = q.abs() <= 0.425;
    let v = if central { nc } else { tail_n } / if central { dc } else { tail_d };
    let v = if p == 0.0 { f64::NEG_INFINITY } else { v };
    let v = if p == 1.0 { f64::INFINITY } else { v };
    if (0.0..=1.0).contains(&p) {
        v
    } else {
        f64::NAN
    }
}

/// The former erfcx: exp(x^2) times libm's erfc below 26, the asymptotic
/// series above; the vectorising form is checked against it.
#[cfg(test)]
mod reference {
    use std::f64::consts::{FRAC_1_SQRT_2, PI};

    /// The standard normal distribution function, through libm's erfc.
    pub(super) fn ndtr(x: f64) -> f64 {
        0.5 * libm::erfc(-x * FRAC_1_SQRT_2)
    }

    /// The former log_ndtr: libm's log1p and erfc, and the erfcx form
    /// below -20.
    pub(super) fn log_ndtr(x: f64) -> f64 {
        if x > 0.0 {
            (-ndtr(-x)).ln_1p()
        } else if x > -20.0 {
            ndtr(x).ln()
        } else {
            (0.5 * erfcx(-x * FRAC_1_SQRT_2)).ln() - 0.5 * x * x
        }
    }

    /// The quantile by Newton's method run to convergence: on ndtr(x) = p
    /// in the centre, on log_ndtr(x) = ln p in the tail (where the slope
    /// phi/ndtr = sqrt(2/pi) / erfcx(-x/sqrt2) stays finite), from AS 241's
    /// start.
    pub(super) fn ndtri(p: f64) -> f64 {
        if p > 0.5 {
            return -ndtri(1.0 - p);
        }
        let mut x = super::ndtri(p);
        if p == 0.0 || p == 0.5 || x.is_nan() {
            return x;
        }
        for _ in 0..8 {
            let step = if p >= 0.1 {
                (ndtr(x) - p) * (2.0 * PI).sqrt() * (0.5 * x * x).exp()
            } else {
                (log_ndtr(x) - p.ln()) * erfcx(-x * FRAC_1_SQRT_2) * (PI / 2.0).sqrt()
            };
            x -= step;
            if step.abs() <= 1e-17 * x.abs() {
                break;
            }
        }
        x
    }

    /// exp(x^2), with the rounding error of x^2 put back (x^2 = h + l exactly).
    pub(super) fn exp_sq(x: f64) -> f64 {
        let h = x * x;
        let l = x.mul_add(x, -h);
        h.exp() * (1.0 + l)
    }

    /// erfcx(x) = exp(x^2) erfc(x). Below 26 the product (exp(x^2) is still
    /// finite there); above it the asymptotic series 1/(x sqrt(pi)) sum_k
    /// (-1)^k (2k-1)!! / (2x^2)^k, whose terms fall below 1e-17 within 10 terms.
    /// Negative x use erfcx(x) = 2 exp(x^2) - erfcx(-x).
    pub(super) fn erfcx(x: f64) -> f64 {
        if x.is_nan() {
            return x;
        }
        if x < 0.0 {
            if x < -26.7 {
                return f64::INFINITY;
            }
            return 2.0 * exp_sq(x) - erfcx(-x);
        }
        if x < 26.0 {
            return exp_sq(x) * libm::erfc(x);
        }
        if x.is_infinite() {
            return 0.0;
        }
        let r = 1.0 / (2.0 * x * x);
        let (mut term, mut sum) = (1.0, 1.0);
        for k in 1..20 {
            term *= -((2 * k - 1) as f64) * r;
            sum += term;
            if term.abs() < 1e-17 {
                break;
            }
        }
        sum / (x * PI.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(erfcx(0.0), 1.0);
        // erfcx(1) = e * erfc(1); erfcx(30) from the asymptotic series.
        assert!((erfcx(1.0) - 0.427_583_576_155_807).abs() < 1e-16);
        assert!((erfcx(30.0) - 0.018_795_888_861_416_75).abs() < 1e-17);
        assert!((erfcx(-1.0) - 5.008_980_080_762_283).abs() < 1e-14);
        assert!((ndtri(0.975) - 1.959_963_984_540_054).abs() < 1e-15);
        assert!((ndtri(1e-300) + 37.047_096_299_361_2).abs() < 1e-12);
        assert_eq!(ndtri(0.0), f64::NEG_INFINITY);
        assert_eq!(ndtri(1.0), f64::INFINITY);
        assert!(ndtri(1.5).is_nan());
        // Round trips, within ndtr's own conditioning (relative error ~ x^2 ulp).
        for p in [1e-200, 1e-20, 0.01, 0.2, 0.3, 0.6, 0.99] {
            let x = ndtri(p);
            let back = reference::ndtr(x);
            assert!((back - p).abs() <= 4e-15 * p * (1.0 + x * x), "{p}");
        }
        assert!((log_ndtr(-40.0) + 804.608_442_013_753_9).abs() < 1e-10);
        assert!((log_ndtr(0.0) + std::f64::consts::LN_2).abs() < 1e-16);
    }

    /// The Chebyshev form against exp(x^2) erfc(x) over both half lines,
    /// from 1e-8 to 1e8 and out to the overflow below -26.6.
    #[test]
    fn erfcx_matches_the_product_form() {
        let mut a = 1e-8f64;
        while a < 1e8 {
            for x in [a, -a] {
                let (got, want) = (erfcx(x), super::reference::erfcx(x));
                if want.is_infinite() {
                    assert_eq!(got, want, "{x}");
                    continue;
                }
                let err = ((got - want) / want).abs() / f64::EPSILON;
                assert!(err < 6.0, "erfcx({x}) = {got}, want {want} ({err} eps)");
            }
            a *= 1.0 + 1.0 / 128.0;
        }
        assert_eq!(erfcx(0.0), 1.0);
        assert_eq!(erfcx(f64::INFINITY), 0.0);
        assert_eq!(erfcx(f64::NEG_INFINITY), f64::INFINITY);
        assert_eq!(erfcx(-27.0), f64::INFINITY);
        assert!(erfcx(f64::NAN).is_nan());
    }

    fn ulps(got: f64, want: f64) -> f64 {
        if got == want {
            return 0.0;
        }
        (got - want).abs() / f64::EPSILON / want.abs().max(f64::MIN_POSITIVE)
    }

    /// AS 241 against Newton's method run to convergence, from 0.5 down to
    /// the smallest subnormal and on both sides of 1/2.
    #[test]
    fn ndtri_matches_newton() {
        let mut worst = 0.0f64;
        let mut p = 0.5f64;
        // Down to the subnormals (0.97 times the smallest one rounds back up).
        while p > 1e-322 {
            for v in [p, 1.0 - p, p * 0.999_9] {
                let (got, want) = (ndtri(v), reference::ndtri(v));
                let err = ulps(got, want);
                assert!(err <= 8.0, "ndtri({v:e}) = {got}, want {want} ({err} eps)");
                worst = worst.max(err);
            }
            p *= 0.97;
        }
        assert!(worst > 0.0, "the comparison saw no rounding at all");
        let tiny = f64::from_bits(1);
        assert!((ndtri(tiny) + 38.467_405_617_144_346).abs() < 1e-12);
        assert_eq!(ndtri(0.5), 0.0);
        assert!(ndtri(-0.0).is_infinite() && ndtri(-0.0) < 0.0);
        assert!(ndtri(f64::NAN).is_nan() && ndtri(-1e-300).is_nan());
        assert!(ndtri(f64::INFINITY).is_nan());
        // Odd about 1/2 wherever 1 - p is exact.
        for v in [0.1, 0.25, 0.4, 0.49] {
            assert_eq!(ndtri(v), -ndtri(1.0 - v));
        }
    }

    /// The vectorising log_ndtr against libm's log1p and erfc.
    #[test]
    fn log_ndtr_matches_libm() {
        let (mut worst, mut at) = (0.0f64, 0.0f64);
        let mut a = 1e-8f64;
        while a < 1e5 {
            for x in [a, -a] {
                // The reference rounds x / sqrt2 before erfc: relative error
                // ~x^2 eps in ndtr(-x), so its own error grows with x^2.
                let err = ulps(log_ndtr(x), reference::log_ndtr(x)) / (1.0 + x * x / 12.0);
                if err > worst {
                    (worst, at) = (err, x);
                }
            }
            a *= 1.0 + 1.0 / 64.0;
        }
        assert!(worst <= 12.0, "log_ndtr({at}): {worst} eps from libm's");
        // Values to 17 digits from mpmath at 50 digits.
        for (x, want) in [
            (10.0, -7.619_853_024_160_526e-24),
            (20.0, -2.753_624_118_606_233_7e-89),
            (30.0, -4.906_713_927_148_187e-198),
            (3.5, -2.326_561_413_768_045_5e-4),
            (-0.5, -1.175_911_761_593_618_6),
            (-10.0, -53.231_285_150_512_47),
        ] {
            let err = ulps(log_ndtr(x), want);
            assert!(err <= 4.0, "log_ndtr({x}) = {}, want {want}", log_ndtr(x));
        }
        assert_eq!(log_ndtr(f64::INFINITY), 0.0);
        assert_eq!(log_ndtr(f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(log_ndtr(-1e200), f64::NEG_INFINITY);
        assert_eq!(log_ndtr(40.0), 0.0);
        assert!(log_ndtr(f64::NAN).is_nan());
    }

    /// `ndtri`'s logarithm against libm's from 1/2 down to the subnormals.
    #[test]
    fn ln_half_matches_libm() {
        let mut u = 0.5f64;
        while u > 1e-322 {
            for v in [u, u * 0.713, u * 0.999_999] {
                let err = ulps(ln_half(v), v.ln());
                assert!(
                    err <= 1.0,
                    "ln_half({v:e}) = {}, want {} ({err} eps)",
                    ln_half(v),
                    v.ln()
                );
            }
            u *= 0.93;
        }
        assert_eq!(ln_half(0.5), -std::f64::consts::LN_2);
        assert_eq!(ln_half(0.25), -2.0 * std::f64::consts::LN_2);
    }
}

//! Functions of the standard normal distribution and the scaled complementary
//! error function: `erfcx`, `ndtr`, `log_ndtr` and `ndtri`.

use std::f64::consts::{FRAC_1_SQRT_2, PI};

use super::vmath::{clenshaw, exp_f64_pair};

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

/// erfcx(x) = exp(x^2) erfc(x), branch free so that a loop of it vectorises:
/// the Chebyshev series over 1 + 2x for x >= 0, and erfcx(x) = 2 exp(x^2) -
/// erfcx(-x) below, with x^2 carried as an exact pair into the exponential.
/// Within a few ulp of exp(x^2) times libm's erfc (`reference` below).
#[inline(always)]
pub(crate) fn erfcx(x: f64) -> f64 {
    let a = x.abs();
    // Finite stand-in for infinity: t rounds to 1 there, and the quotient
    // gives the limit's 0 from 1 + 2a = inf below.
    let b = a.min(f64::MAX);
    let t = (b - 3.0) / (b + 3.0);
    let pos = clenshaw(t, &ERFCX) / b.mul_add(2.0, 1.0);
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

/// The standard normal distribution function.
#[inline(always)]
pub(crate) fn ndtr(x: f64) -> f64 {
    0.5 * libm::erfc(-x * FRAC_1_SQRT_2)
}

/// log(ndtr(x)) without underflow: log1p(-ndtr(-x)) above 0, log(ndtr(x))
/// down to -20, and log(erfcx(-x/sqrt2)/2) - x^2/2 below.
#[inline(always)]
pub(crate) fn log_ndtr(x: f64) -> f64 {
    if x > 0.0 {
        (-ndtr(-x)).ln_1p()
    } else if x > -20.0 {
        ndtr(x).ln()
    } else {
        (0.5 * erfcx(-x * FRAC_1_SQRT_2)).ln() - 0.5 * x * x
    }
}

/// The inverse of `ndtr`. For p > 1/2 it is -ndtri(1 - p) (1 - p is exact
/// there). In the centre a start from sqrt2 erfinv(2p - 1) takes two Newton
/// steps on ndtr(x) = p; in the tail (p < 0.1) a start from Abramowitz &
/// Stegun 26.2.23 (error below 4.5e-4) takes Newton steps on
/// log_ndtr(x) = log(p), whose slope phi(x)/ndtr(x) = sqrt(2/pi) /
/// erfcx(-x/sqrt2) stays finite down to the smallest subnormal p.
// Inlined into `vmath`'s FMA loops: compiled apart, its `mul_add`s (and
// erfcx's) were software FMA calls.
#[inline(always)]
pub(crate) fn ndtri(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p > 0.5 {
        return -ndtri_lower(1.0 - p);
    }
    ndtri_lower(p)
}

#[inline(always)]
fn ndtri_lower(p: f64) -> f64 {
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 0.5 {
        return 0.0;
    }
    if p >= 0.1 {
        let mut x = std::f64::consts::SQRT_2 * super::special::erfinv(2.0 * p - 1.0);
        for _ in 0..2 {
            let pdf = (-0.5 * x * x).exp() / (2.0 * PI).sqrt();
            x -= (ndtr(x) - p) / pdf;
        }
        return x;
    }
    let t = (-2.0 * p.ln()).sqrt();
    let mut x = -(t
        - (2.515_517 + 0.802_853 * t + 0.010_328 * t * t)
            / (1.0 + 1.432_788 * t + 0.189_269 * t * t + 0.001_308 * t * t * t));
    let lp = p.ln();
    let slope_inv = (PI / 2.0).sqrt();
    for _ in 0..6 {
        let step = (log_ndtr(x) - lp) * erfcx(-x * FRAC_1_SQRT_2) * slope_inv;
        x -= step;
        if step.abs() <= 1e-16 * x.abs() {
            break;
        }
    }
    x
}

/// The former erfcx: exp(x^2) times libm's erfc below 26, the asymptotic
/// series above; the vectorising form is checked against it.
#[cfg(test)]
mod reference {
    use std::f64::consts::PI;

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
            assert!((ndtr(x) - p).abs() <= 1e-15 * p * (1.0 + x * x), "{p}");
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
}

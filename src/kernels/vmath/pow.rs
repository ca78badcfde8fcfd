//! float32 `pow` that vectorises: `|x|^y = e^(y ln|x|)` evaluated in
//! float64 lanes (`ln` and `exp` from `core`, each accurate to about
//! 2^-35 relative), so `y ln|x|` keeps its error far below a float32 ulp
//! of the result wherever the result is finite and nonzero, and the one
//! rounding to float32 is the only one that matters. C99's special cases
//! (those PyTorch's `pow` gives) are selects, branch free.

use super::core::{exp_core, log_core};

/// 2^23: from it up every float32 is a whole number; below it, adding and
/// subtracting it rounds a nonnegative float32 to a whole number.
const TWO23: f32 = 8_388_608.0;

/// Whether `v` is a whole number (infinities count as even ones, as in C).
#[inline(always)]
fn is_int(v: f32) -> bool {
    let a = v.abs();
    (a >= TWO23) | ((a + TWO23) - TWO23 == a)
}

/// `x ** y` as C's `powf` defines it, within 1 ulp (measured 0.51 over the
/// tests' sweep),
/// with the exact forms PyTorch's tensor `pow` keeps for the small
/// whole exponents: `x * x`, `x * x * x`, `x` and `1 / x` for `y` = 2, 3,
/// 1, -1 (each correctly rounded, where `e^(y ln x)` could round a tie
/// the other way).
#[inline(always)]
pub(crate) fn pow_f32(x: f32, y: f32) -> f32 {
    let ax = x.abs();
    // ln|x| with its limits at 0 and inf (log_core covers positive normal
    // float64s, which every positive finite float32 is).
    let l = log_core(ax as f64);
    let l = if ax == 0.0 { f64::NEG_INFINITY } else { l };
    let l = if ax == f32::INFINITY {
        f64::INFINITY
    } else {
        l
    };
    // e^200 overflows float32 and e^-200 underflows it; the clamp keeps
    // exp_core in its range (a NaN passes and is replaced below).
    let t = (y as f64 * l).clamp(-200.0, 200.0);
    let r = exp_core(t) as f32;
    let y_int = is_int(y);
    let y_odd = y_int & !is_int(0.5 * y);
    // A negative base (-0 included): the sign for an odd exponent; NaN for
    // a finite one below 0 to a fractional power (-inf to one is inf or 0,
    // as in C).
    let r = if x.is_sign_negative() & y_odd { -r } else { r };
    let r = if (x < 0.0) & !y_int & (ax != f32::INFINITY) {
        f32::NAN
    } else {
        r
    };
    let r = if x.is_nan() | y.is_nan() { f32::NAN } else { r };
    // (-1) ** +-inf = 1.
    let r = if (ax == 1.0) & (y.abs() == f32::INFINITY) {
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
    use super::super::tests::{isas, sample, span, ulps};
    use super::super::{zip_on, Isa};
    use super::*;
    use std::mem::MaybeUninit;

    fn eval(isa: Isa, xs: &[f32], ys: &[f32]) -> Vec<f32> {
        let mut out = vec![MaybeUninit::<f32>::uninit(); xs.len()];
        zip_on(isa, &mut out, xs, ys, &pow_f32);
        // SAFETY: `zip_on` wrote every element.
        out.into_iter()
            .map(|v| unsafe { v.assume_init() })
            .collect()
    }

    /// Every pair of `xs` and `ys` on every path, against float64's `powf`
    /// (about correctly rounded for float32 operands); the paths must agree
    /// bit for bit. Returns the worst error in ulps.
    fn sweep(xs: &[f32], ys: &[f32], max_ulp: f64) -> f64 {
        let mut worst = 0.0f64;
        for &y in ys {
            let yv = vec![y; xs.len()];
            let mut first: Option<Vec<f32>> = None;
            for isa in isas() {
                let got = eval(isa, xs, &yv);
                for (&x, &r) in xs.iter().zip(&got) {
                    let e = ulps(r, (x as f64).powf(y as f64));
                    // x * x * x rounds twice (checked exactly below).
                    let bound = if y == 3.0 { 1.5 } else { max_ulp };
                    assert!(e <= bound, "pow({x:e}, {y:e}) on {isa:?}: {r:e}, {e} ulp");
                    if y != 3.0 {
                        worst = worst.max(e);
                    }
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
        worst
    }

    #[test]
    fn within_one_ulp_everywhere() {
        let xs = sample(200, &[-2.0, 2.0, 10.0, -10.0, 1.000_000_1, 0.999_999_94]);
        let ys = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            -2.0,
            3.0,
            -3.0,
            4.0,
            5.0,
            -7.0,
            0.5,
            -0.5,
            1.5,
            -2.5,
            0.333_333_34,
            2.7,
            -0.1,
            1e-3,
            17.0,
            -31.0,
            100.5,
            1e4,
            -1e4,
            3e7,
            16_777_217.0,
            1e-30,
            0.9,
            8.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ];
        let w = sweep(&xs, &ys, 1.0);
        eprintln!("pow over every exponent: worst {w:.3} ulp");
        // Where the results are neither 0 nor inf for many exponents.
        let near = span(0.25, 4.0, 50_000);
        let ys: Vec<f32> = span(-60.0, 60.0, 121);
        let w = sweep(&near, &ys, 1.0);
        eprintln!("pow on [1/4, 4]: worst {w:.3} ulp");
        let neg = span(-4.0, -0.25, 50_000);
        let ys: Vec<f32> = (-40..=40).map(|k| k as f32).collect();
        sweep(&neg, &ys, 1.0);
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
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(1),
            16_777_216.0,
            -16_777_217.0,
            1e30,
            -1e30,
        ];
        for &x in &vals {
            for &y in &vals {
                let want = x.powf(y);
                // The exact results (0, inf, NaN, +-1 and their signs) bit for
                // bit; the others within the bound.
                let exact = !want.is_normal() || want.abs() == 1.0;
                for isa in isas() {
                    let got = eval(isa, &[x], &[y])[0];
                    let ok = if exact {
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
                    } else {
                        ulps(got, (x as f64).powf(y as f64)) <= 1.0
                    };
                    assert!(ok, "pow({x:e}, {y:e}) on {isa:?}: {got:e} vs {want:e}");
                }
            }
        }
        // The small whole exponents are the exact products.
        for x in sample(40, &[]) {
            for isa in isas() {
                let got = eval(isa, &[x; 4], &[2.0, 3.0, 1.0, -1.0]);
                let want = [x * x, x * x * x, x, 1.0 / x];
                for (g, w) in got.iter().zip(want) {
                    assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
                }
            }
        }
    }
}

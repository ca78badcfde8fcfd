//! ULP sweeps of every float32 function here against a float64 reference,
//! over the whole float32 range (every exponent with a few thousand
//! mantissas each, subnormals, signed zeros, infinities, NaN and each
//! function's special points), on every instruction set this CPU has. The
//! paths must also agree bit for bit.

use super::*;
use std::mem::MaybeUninit;

/// The paths this machine can run, widest first.
pub(crate) fn isas() -> Vec<Isa> {
    [Isa::Avx512, Isa::Avx2, Isa::Portable]
        .into_iter()
        .filter(|&i| i <= detected())
        .collect()
}

/// A dense sample of float32 values: for every biased exponent (subnormals
/// included) `per` mantissas spread over the whole mantissa range, both
/// signs, plus the special values.
pub(crate) fn sample(per: u32, extra: &[f32]) -> Vec<f32> {
    let mut v = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for e in 0..255u32 {
        for k in 0..per {
            // Evenly spread mantissas, jittered, always including 0 and the last.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let step = (1u32 << 23) / per;
            let m = if k == 0 {
                0
            } else if k == per - 1 {
                (1 << 23) - 1
            } else {
                (k * step + (seed as u32) % step) & ((1 << 23) - 1)
            };
            let bits = (e << 23) | m;
            v.push(f32::from_bits(bits));
            v.push(f32::from_bits(bits | 0x8000_0000));
        }
    }
    v.extend_from_slice(&[
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::MAX,
        f32::MIN,
        1.0,
        -1.0,
        0.5,
        -0.5,
    ]);
    v.extend_from_slice(extra);
    v
}

/// Values densely spread over `[lo, hi]`, where a function does its work.
pub(crate) fn span(lo: f32, hi: f32, n: usize) -> Vec<f32> {
    (0..=n)
        .map(|i| lo + (hi - lo) * (i as f32 / n as f32))
        .collect()
}

/// The error of `got` in units of the last place of the float32 nearest
/// to `want` (subnormal spacing below the normal range). Infinities and NaN
/// must match exactly (0 or `f64::INFINITY`).
pub(crate) fn ulps(got: f32, want: f64) -> f64 {
    let w32 = want as f32;
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if w32.is_infinite() || got.is_infinite() {
        // The reference may lie just beyond float32's largest finite value
        // and round either way; within half an ulp of MAX counts as exact.
        if got as f64 == w32 as f64 {
            return 0.0;
        }
        let edge = f32::MAX as f64 * (1.0 + f32::EPSILON as f64 / 2.0);
        if got.is_infinite()
            && want.abs() >= f32::MAX as f64
            && got.signum() as f64 == want.signum()
        {
            return if want.abs() >= edge * 0.999_999 {
                0.0
            } else {
                1.0
            };
        }
        return f64::INFINITY;
    }
    let a = w32.abs().max(f32::MIN_POSITIVE);
    let ulp = (f32::from_bits(a.to_bits() + 1) - a) as f64;
    (got as f64 - want).abs() / ulp
}

/// Checks `f` against `reference` on every path over `xs`; returns the
/// worst error seen.
pub(crate) fn check(
    name: &str,
    xs: &[f32],
    f: impl Fn(f32) -> f32 + Copy,
    reference: impl Fn(f64) -> f64,
    max_ulp: f64,
) -> f64 {
    check_abs(name, xs, f, reference, max_ulp, 0.0)
}

/// [`check`], where an absolute error up to `abs` also passes (next to a
/// function's zeros, where an absolute bound is all a formula that
/// subtracts gives).
pub(crate) fn check_abs(
    name: &str,
    xs: &[f32],
    f: impl Fn(f32) -> f32 + Copy,
    reference: impl Fn(f64) -> f64,
    max_ulp: f64,
    abs: f64,
) -> f64 {
    let mut worst = (0.0f64, 0.0f32);
    let mut worst_abs = 0.0f64;
    let mut first: Option<Vec<f32>> = None;
    for isa in isas() {
        let got = eval_on(isa, xs, f);
        for (&x, &y) in xs.iter().zip(&got) {
            let want = reference(x as f64);
            let e = ulps(y, want);
            let near = (y as f64 - want).abs() <= abs;
            if e > max_ulp && near {
                worst_abs = worst_abs.max((y as f64 - want).abs());
            }
            if e > worst.0 && !near {
                worst = (e, x);
            }
            assert!(
                e <= max_ulp || near,
                "{name}({x:e} = {:#x}) on {isa:?}: got {y:e}, want {:e} ({e} ulp)",
                x.to_bits(),
                reference(x as f64)
            );
            // Signed zeros must match too.
            let w = reference(x as f64) as f32;
            if y == 0.0 && w == 0.0 {
                assert_eq!(
                    y.is_sign_negative(),
                    w.is_sign_negative(),
                    "{name}({x:e}) sign of zero on {isa:?}"
                );
            }
        }
        match &first {
            None => first = Some(got),
            Some(f0) => {
                for (i, (a, b)) in f0.iter().zip(&got).enumerate() {
                    assert!(
                        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                        "{name}({:e}): {isa:?} gives {b:e}, the widest path {a:e}",
                        xs[i]
                    );
                }
            }
        }
    }
    eprintln!("{name}: worst {:.3} ulp at {:e}", worst.0, worst.1);
    if worst_abs > 0.0 {
        eprintln!("{name}: beyond {max_ulp} ulp, worst absolute error {worst_abs:e}");
    }
    worst.0
}

fn all(extra: &[f32]) -> Vec<f32> {
    let mut v = sample(1500, extra);
    v.extend(span(-12.0, 12.0, 400_000));
    v
}

#[test]
fn exponentials_and_logarithms() {
    let xs = all(&[
        88.72, 88.73, -87.3, -103.9, 1e-8, -1e-8, 128.0, -149.0, -150.0, 127.99,
    ]);
    check("expm1", &xs, expm1_f32, f64::exp_m1, 1.0);
    check("exp2", &xs, exp2_f32, f64::exp2, 1.0);
    let logs = {
        let mut v = xs.clone();
        v.extend(span(0.5, 2.0, 300_000));
        v.extend(span(-1.0, -0.5, 100_000));
        v
    };
    check("log", &logs, log_f32, f64::ln, 1.0);
    check("log2", &logs, log2_f32, f64::log2, 1.0);
    check("log10", &logs, log10_f32, f64::log10, 1.0);
    check("log1p", &logs, log1p_f32, f64::ln_1p, 1.0);
    for k in -149..128 {
        // Through float64: 2f32.powi(-149) overflows 2^149 on the way and gives 0.
        assert_eq!(log2_f32(2f64.powi(k) as f32), k as f32, "log2(2^{k})");
    }
}

#[test]
fn hyperbolic() {
    let xs = all(&[89.4, 89.5, -89.4, 1.0, -1.0, 0.999_999_9]);
    check("sinh", &xs, sinh_f32, f64::sinh, 1.0);
    check("cosh", &xs, cosh_f32, f64::cosh, 1.0);
    check("asinh", &xs, asinh_f32, f64::asinh, 1.0);
    let mut near = xs.clone();
    near.extend(span(1.0, 1.01, 100_000));
    check("acosh", &near, acosh_f32, f64::acosh, 1.0);
    let mut unit = xs.clone();
    unit.extend(span(-1.0, 1.0, 400_000));
    check("atanh", &unit, atanh_f32, f64::atanh, 1.0);
}

#[test]
fn tanh_everywhere() {
    // 1 is where the polynomial hands over to the exponential form, 9.01
    // where float32's tanh reaches 1.
    let mut xs = all(&[1.0, -1.0, 0.999_999_9, 1.000_000_1, 9.01, 9.02, 10.0, 1e-20]);
    xs.extend(span(0.9, 1.1, 200_000));
    check("tanh", &xs, tanh_f32, f64::tanh, 1.0);
}

#[test]
fn sine_and_cosine() {
    use crate::kernels::trig_f32::{cos_f32, sin_f32, LIMIT};
    let mut xs = all(&[LIMIT, -LIMIT, 1e-30, -1e-30]);
    // Next to multiples of pi/2, where the reduced argument is smallest,
    // up to the reduction's limit, and beyond it (the C library's path).
    let mut k = 1.0f64;
    while k < 2.0 * LIMIT as f64 {
        let m = (k * std::f64::consts::FRAC_PI_2) as f32;
        for d in 0..8 {
            xs.push(f32::from_bits(m.to_bits() + d));
            xs.push(f32::from_bits(m.to_bits() - d));
        }
        k = (k * 1.003).ceil();
    }
    xs.extend(span(-LIMIT, LIMIT, 400_000));
    xs.extend(span(-100.0, 100.0, 400_000));
    check("sin", &xs, sin_f32, f64::sin, 1.0);
    check("cos", &xs, cos_f32, f64::cos, 1.0);
}

#[test]
fn error_functions() {
    // The hand-over points of each piece, and where erfc reaches 0.
    let mut xs = all(&[
        0.6,
        0.599_999_96,
        0.9,
        0.899_999_9,
        2.0,
        1.999_999_9,
        3.92,
        3.95,
        10.05,
        10.06,
        10.060_001,
        10.1,
        -10.1,
        1e-30,
        -1e-30,
    ]);
    // Where erfc's relative error peaks (the tail's products).
    xs.extend(span(0.5, 4.0, 400_000));
    xs.extend(span(4.0, 10.1, 200_000));
    check("erf", &xs, erf_f32, libm::erf, 1.0);
    check("erfc", &xs, erfc_f32, libm::erfc, 1.0);
    let mut unit = xs.clone();
    unit.extend(span(-1.0, 1.0, 400_000));
    unit.extend((1..2000).map(|k| f32::from_bits(1.0f32.to_bits() - k)));
    unit.extend((1..2000).map(|k| -f32::from_bits(1.0f32.to_bits() - k)));
    check(
        "erfinv",
        &unit,
        erfinv_f32,
        crate::kernels::special::erfinv,
        2.0,
    );
}

#[test]
fn inverse_trigonometric() {
    let xs = all(&[0.414_213_57, 2.414_213_6, 0.5, -0.5, 1.0, -1.0, 1.000_000_1]);
    check("atan", &xs, atan_f32, f64::atan, 1.0);
    let mut unit = xs.clone();
    unit.extend(span(-1.0, 1.0, 400_000));
    check("asin", &unit, asin_f32, f64::asin, 1.0);
    check("acos", &unit, acos_f32, f64::acos, 1.0);
}

#[test]
fn atan2_everywhere() {
    // A grid of both arguments over the whole range, and the special pairs.
    let base = sample(40, &[]);
    let mut worst = 0.0f64;
    for isa in isas() {
        for &y in base.iter().step_by(7) {
            let ys = vec![y; base.len()];
            let mut out = vec![MaybeUninit::<f32>::uninit(); base.len()];
            zip_on(isa, &mut out, &ys, &base, &atan2_f32);
            for (&x, o) in base.iter().zip(&out) {
                // SAFETY: written by `zip_on`.
                let got = unsafe { o.assume_init() };
                let want = (y as f64).atan2(x as f64);
                let e = ulps(got, want);
                worst = worst.max(e);
                assert!(
                    e <= 1.0,
                    "atan2({y:e}, {x:e}) on {isa:?}: {got:e} vs {want:e}"
                );
                if want == 0.0 || want.is_infinite() {
                    assert_eq!(
                        got.to_bits(),
                        (want as f32).to_bits(),
                        "atan2({y:e}, {x:e})"
                    );
                }
            }
        }
    }
    eprintln!("atan2: worst {worst:.3} ulp");
}

#[test]
fn tangent() {
    use crate::kernels::trig_f32::{tan_f32, tan_slice, LIMIT};
    let mut xs = all(&[LIMIT, -LIMIT, LIMIT * 1.5, 1e30, -1e30]);
    // Next to the poles and zeros, where the reduction matters most.
    for k in -2000i32..2000 {
        let c = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
        for d in -3i32..=3 {
            xs.push(f32::from_bits((c.to_bits() as i32 + d) as u32));
        }
    }
    check("tan", &xs, tan_f32, f64::tan, 1.0);
    let mut out = vec![0.0f32; xs.len()];
    tan_slice(&mut out, &xs);
    for (x, (a, b)) in xs
        .iter()
        .zip(out.iter().zip(xs.iter().map(|&x| tan_f32(x))))
    {
        assert!(
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            "tan({x:e})"
        );
    }
}

#[test]
fn fmod_matches_the_c_library_wherever_it_is_used() {
    // Every pair of a grid over the whole range (the libm-only pairs are
    // skipped: the callers send them to `%`), then quotients right next to
    // integers up to the limit, where the division rounds up.
    let base = sample(40, &[]);
    let mut pairs: Vec<(f32, f32)> = Vec::new();
    for &y in base.iter().step_by(13) {
        pairs.extend(base.iter().map(|&x| (x, y)));
    }
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..200_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let y = f32::from_bits(((seed >> 32) as u32) & 0x7fff_ffff);
        let n = ((seed & 0x00ff_ffff) as f32).max(1.0);
        let x = n * y;
        for d in -2i32..=2 {
            let x = f32::from_bits((x.to_bits() as i32 + d) as u32);
            pairs.push((x, y));
            pairs.push((-x, y));
            pairs.push((x, -y));
        }
    }
    let (xs, ys): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
    let mut checked = 0usize;
    for isa in isas() {
        let mut out = vec![MaybeUninit::<f32>::uninit(); xs.len()];
        zip_on(isa, &mut out, &xs, &ys, &fmod_f32);
        for ((&x, &y), o) in xs.iter().zip(&ys).zip(&out) {
            // The float32 test never misses a pair the one step gets wrong:
            // every finite quotient of 2^24 or more goes to the C library.
            let q = (x as f64 / y as f64).abs();
            if ((1u64 << 24) as f64..f64::INFINITY).contains(&q) {
                assert!(fmod_needs_libm(x, y), "fmod({x:e}, {y:e}) not flagged");
            }
            if fmod_needs_libm(x, y) {
                continue;
            }
            // SAFETY: written by `zip_on`.
            let got = unsafe { o.assume_init() };
            let want = x % y;
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "fmod({x:e}, {y:e}) on {isa:?}: {got:e} vs {want:e}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 2_000_000, "the one-step path was exercised");
}

#[test]
fn gamma_functions() {
    use crate::kernels::special::{digamma, polygamma};
    // The pieces' hand-over points, the zeros of lgamma (1, 2) and digamma
    // (1.4616...) with their neighbours, poles and the region below 0.
    let mut xs = all(&[
        0.5,
        1.25,
        1.75,
        1.5,
        2.5,
        10.0,
        9.999_999,
        -0.5,
        0.499_999_97,
        1e-30,
        -1e-30,
        4.08e36,
        4.09e36,
        1e20,
        -1e20,
        -16_777_215.5,
        -8_388_607.5,
    ]);
    for c in [1.0f32, 2.0, 1.461_632_1] {
        for d in 1..3000u32 {
            xs.push(f32::from_bits(c.to_bits() + d));
            xs.push(f32::from_bits(c.to_bits() - d));
        }
    }
    for k in 0..60 {
        // Next to the poles.
        let c = -(k as f32);
        for d in 1..40u32 {
            xs.push(f32::from_bits(c.to_bits() + d));
            if k > 0 {
                xs.push(f32::from_bits(c.to_bits() - d));
            }
        }
    }
    xs.extend(span(0.0, 3.0, 400_000));
    xs.extend(span(-60.0, 0.0, 400_000));
    xs.extend(span(3.0, 200.0, 200_000));
    let positive: Vec<f32> = xs
        .iter()
        .copied()
        .filter(|x| x.is_nan() || *x >= 0.0)
        .collect();
    let negative: Vec<f32> = xs.iter().copied().filter(|x| *x < 0.0).collect();
    check("lgamma", &positive, lgamma_f32, libm::lgamma, 1.0);
    check("digamma", &positive, digamma_f32, digamma, 1.0);
    check("trigamma", &xs, trigamma_f32, |x| polygamma(1, x), 1.0);
    // Below 0 the reflection subtracts values of a few units next to the
    // zeros there, each carrying the float64 logarithm's error (2^-36
    // relative): 1 ulp, or an absolute 2^-32.
    check_abs(
        "lgamma",
        &negative,
        lgamma_f32,
        libm::lgamma,
        1.0,
        2f64.powi(-32),
    );
    check_abs(
        "digamma",
        &negative,
        digamma_f32,
        digamma,
        1.0,
        2f64.powi(-32),
    );
    // PyTorch's values at the poles and infinities.
    let inf = f32::INFINITY;
    for (x, l, d) in [
        (0.0f32, inf, -inf),
        (-0.0, inf, inf),
        (-1.0, inf, f32::NAN),
        (-7.0, inf, f32::NAN),
        (-1e30, inf, f32::NAN),
        (inf, inf, inf),
        (-inf, inf, f32::NAN),
    ] {
        let (gl, gd) = (lgamma_f32(x), digamma_f32(x));
        assert!(gl == l, "lgamma({x}) = {gl}");
        assert!(
            gd == d || (gd.is_nan() && d.is_nan()),
            "digamma({x}) = {gd}"
        );
        assert_eq!(
            trigamma_f32(x),
            if x == inf { 0.0 } else { inf },
            "trigamma({x})"
        );
    }
}

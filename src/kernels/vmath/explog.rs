//! float32 `expm1` and hyperbolic functions, evaluated in float64 (see
//! `core`) and rounded once (`exp2`, the logarithms, `log1p`, `atanh` and
//! `tanh` are in `explog32`, evaluated in float32 lanes).

use super::core::{exp_core, expm1_core, log1p_core, poly};

/// `e^x - 1`, within 1 ulp.
#[inline(always)]
pub(crate) fn expm1_f32(x: f32) -> f32 {
    // Beyond the clamp float32's result is -1 or inf already.
    let c = (x as f64).clamp(-120.0, 120.0);
    let r = expm1_core(c) as f32;
    // Keeps -0 and NaN (the clamp keeps NaN too; this makes it explicit).
    if x == 0.0 || x.is_nan() {
        x
    } else {
        r
    }
}

/// sinh(x) / x as a polynomial in x^2 on [0, 1] (Taylor through x^14; the
/// first omitted term is below 2^-40).
const SINH_P: [f64; 8] = [
    1.0,
    1.0 / 6.0,
    1.0 / 120.0,
    1.0 / 5_040.0,
    1.0 / 362_880.0,
    1.0 / 39_916_800.0,
    1.0 / 6_227_020_800.0,
    1.0 / 1_307_674_368_000.0,
];

/// `(e^a, e^-a)` for `0 <= a`, clamped where float32 overflows anyway.
#[inline(always)]
fn exp_pair(a: f64) -> (f64, f64) {
    // A select rather than `min`, which would turn NaN into 120.
    let a = if a > 120.0 { 120.0 } else { a };
    (exp_core(a), exp_core(-a))
}

/// `sinh(x)`, within 1 ulp.
#[inline(always)]
pub(crate) fn sinh_f32(x: f32) -> f32 {
    let a = (x as f64).abs();
    let (e, ei) = exp_pair(a);
    let big = 0.5 * (e - ei);
    let small = a * poly(a * a, &SINH_P);
    let r = if a < 1.0 { small } else { big } as f32;
    // Odd, NaN kept (a NaN `a` falls to `big`, which is NaN).
    r.copysign(x)
}

/// `cosh(x)`, within 1 ulp.
#[inline(always)]
pub(crate) fn cosh_f32(x: f32) -> f32 {
    let (e, ei) = exp_pair((x as f64).abs());
    (0.5 * (e + ei)) as f32
}

/// `asinh(x) = sign(x) ln(|x| + sqrt(x^2 + 1))`, written as `log1p` of
/// `|x| + x^2 / (1 + sqrt(x^2 + 1))` so it keeps its precision near 0.
#[inline(always)]
pub(crate) fn asinh_f32(x: f32) -> f32 {
    let a = (x as f64).abs();
    let a2 = a * a;
    let t = a + a2 / (1.0 + (a2 + 1.0).sqrt());
    let r = log1p_core(t);
    let r = if a == f64::INFINITY { a } else { r };
    let r = if x == 0.0 || x.is_nan() { x } else { r as f32 };
    r.copysign(x)
}

/// `acosh(x) = ln(x + sqrt(x^2 - 1))`, as `log1p((x - 1) + sqrt((x - 1)(x + 1)))`.
#[inline(always)]
pub(crate) fn acosh_f32(x: f32) -> f32 {
    let u = x as f64;
    let d = u - 1.0;
    let t = d + (d * (u + 1.0)).sqrt();
    let r = log1p_core(t);
    let r = if (1.0..f64::INFINITY).contains(&u) {
        r
    } else if u == f64::INFINITY {
        u
    } else {
        f64::NAN
    };
    r as f32
}

//! float64 building blocks for the float32 functions: polynomial
//! evaluation, `exp`/`expm1` and `log`/`log1p` of a float64, each branch
//! free and accurate to about 2^-36 relative or better, far beyond what a
//! float32 result keeps.

/// `c[0] + c[1] x + ... + c[n] x^n` by Horner's rule with fused steps.
#[inline(always)]
pub(super) fn poly<const N: usize>(x: f64, c: &[f64; N]) -> f64 {
    let mut p = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        p = p.mul_add(x, c[i]);
    }
    p
}

/// `c[0] T_0(t) + c[1] T_1(t) + ...` (a Chebyshev series, `c[0]` already
/// halved) by Clenshaw's recurrence.
#[inline(always)]
pub(crate) fn clenshaw<const N: usize>(t: f64, c: &[f64; N]) -> f64 {
    let t2 = t + t;
    let (mut b1, mut b2) = (0.0f64, 0.0f64);
    for &ck in c[1..].iter().rev() {
        let b0 = t2.mul_add(b1, ck - b2);
        b2 = b1;
        b1 = b0;
    }
    t.mul_add(b1, c[0] - b2)
}

/// 1.5 * 2^52: adding it rounds a float64 of magnitude below 2^51 to an
/// integer, which then sits in the low mantissa bits.
const SHIFT: f64 = 6_755_399_441_055_744.0;

/// `k as f64` for `|k| < 2^51` without the integer conversion (which AVX2
/// lacks for 64-bit lanes).
#[inline(always)]
pub(crate) fn int_to_f64(k: i64) -> f64 {
    f64::from_bits(SHIFT.to_bits().wrapping_add(k as u64)) - SHIFT
}

/// 2^k for `-1022 <= k <= 1023`.
#[inline(always)]
fn pow2(k: i64) -> f64 {
    f64::from_bits((k.wrapping_add(1023) as u64) << 52)
}

// ln 2 split so that n * LN2_HI is exact for |n| < 2^11.
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// `(n, r)` with `x = n ln 2 + r`, `|r| <= ln2/2`, for `|x| < 2^10` (or NaN).
#[inline(always)]
fn reduce_ln2(x: f64) -> (i64, f64, f64) {
    let t = x.mul_add(std::f64::consts::LOG2_E, SHIFT);
    let n = t - SHIFT;
    let r = n.mul_add(-LN2_HI, x);
    let r = n.mul_add(-LN2_LO, r);
    (t.to_bits().wrapping_sub(SHIFT.to_bits()) as i64, n, r)
}

/// (e^r - 1 - r) / r^2 for |r| <= ln2/2: Taylor terms to r^11 (the first
/// omitted term is below 2^-42 relative).
const EXPM1_Q: [f64; 10] = [
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5_040.0,
    1.0 / 40_320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
];

/// e^x for `-700 <= x <= 700` (and NaN): the result's relative error is
/// below 2^-42.
#[inline(always)]
pub(super) fn exp_core(x: f64) -> f64 {
    let (k, _, r) = reduce_ln2(x);
    let p = (r * r).mul_add(poly(r, &EXPM1_Q), r) + 1.0;
    p * pow2(k)
}

/// e^x - 1 for `-700 <= x <= 700` (and NaN), accurate relative to the
/// result also near 0 (where `exp_core(x) - 1` would cancel). `-0` gives `+0`.
#[inline(always)]
pub(super) fn expm1_core(x: f64) -> f64 {
    let (k, _, r) = reduce_ln2(x);
    let e = (r * r).mul_add(poly(r, &EXPM1_Q), r);
    let s = pow2(k);
    // 2^k e^r - 1 = 2^k (e^r - 1) + (2^k - 1); exact when k = 0.
    s.mul_add(e, s - 1.0)
}

/// log(1 + f) / f for f in [sqrt(1/2) - 1, sqrt(2) - 1], fitted (relative
/// error 1.9e-11).
const LOG_P: [f64; 13] = [
    0.999_999_999_987_571,
    -0.500_000_000_364_815_2,
    0.333_333_342_432_038_4,
    -0.249_999_926_205_413_64,
    0.199_998_886_346_337_45,
    -0.166_670_309_567_208_19,
    0.142_907_996_335_772_17,
    -0.124_952_762_317_778_47,
    0.110_060_934_513_692_28,
    -0.099_477_724_010_435_23,
    0.100_483_724_981_523_01,
    -0.097_970_869_010_180_07,
    0.052_260_770_715_439_45,
];

/// `(k, f)` with `u = 2^k (1 + f)`, `1 + f` in [sqrt(1/2), sqrt(2)), for a
/// positive normal `u`; `f` is exact.
#[inline(always)]
fn split_log(u: f64) -> (f64, f64) {
    const OFF: u64 = 0x3FE6_A09E_667F_3BCD; // sqrt(1/2)
    let tmp = u.to_bits().wrapping_sub(OFF);
    let k = (tmp as i64) >> 52;
    let m = f64::from_bits(u.to_bits().wrapping_sub((k as u64) << 52));
    (int_to_f64(k), m - 1.0)
}

/// `ln(u)` for a positive normal `u`; anything else gives an unspecified
/// value that callers replace.
#[inline(always)]
pub(super) fn log_core(u: f64) -> f64 {
    let (k, f) = split_log(u);
    k.mul_add(std::f64::consts::LN_2, f * poly(f, &LOG_P))
}

/// `ln(1 + t)` for `t > -1` (`t` finite), accurate relative to the result
/// also for tiny `t`: the rounding error `c` of `u = 1 + t` is added back
/// (`ln(u + c) = ln(u) + c/u`; only for `|t| < 1`, where `u - 1` is exact,
/// and `c` is 0 unless `u` is within a factor 2 of 1, so `c` stands for
/// `c/u` within 2^-51 of the result).
#[inline(always)]
pub(super) fn log1p_core(t: f64) -> f64 {
    let u = 1.0 + t;
    let c = if t.abs() < 1.0 { t - (u - 1.0) } else { 0.0 };
    log_core(u) + c
}

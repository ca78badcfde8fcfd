//! float32 `exp2`, `log`, `log2`, `log10`, `log1p`, `atanh` and `tanh` evaluated in float32
//! lanes (16 per AVX-512 register, twice what the float64 evaluation in
//! `explog` fits), branch free. Where a plain float32 evaluation would lose
//! more than the 1 ulp bound, the step that loses it is carried as an
//! unevaluated sum of two floats (an exact product from a fused
//! multiply-add, an exact sum from Fast2Sum), so the result rounds about
//! once. The bound stated on each function is checked by `tests` against
//! the float64 function on every instruction-set path; the measured worst
//! error is from a sweep of every float32 input.

/// `c[0] + c[1] x + ... + c[n] x^n` by Horner's rule with fused steps.
#[inline(always)]
pub(crate) fn poly<const N: usize>(x: f32, c: &[f32; N]) -> f32 {
    let mut p = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        p = p.mul_add(x, c[i]);
    }
    p
}

/// Fast2Sum: `a + b = s + e` exactly when `|a| >= |b|` or `a = 0`.
#[inline(always)]
pub(crate) fn fast_two_sum(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    (s, b - (s - a))
}

/// 1.5 * 2^23: adding it rounds a float32 of magnitude below 2^22 to an
/// integer (ties to even), which then sits in the low mantissa bits.
pub(crate) const SHIFT: f32 = 12_582_912.0;

/// `p 2^n` for the integer `n` held in the low bits of `t = n + SHIFT`,
/// `|n| <= 152`: two exact power-of-two factors, so an overflowing result
/// becomes inf and a tiny one rounds once into the subnormals.
#[inline(always)]
fn scale(p: f32, t: f32) -> f32 {
    let n = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) << 23) as u32);
    let s2 = f32::from_bits((n2.wrapping_add(127) << 23) as u32);
    p * s1 * s2
}

// ln 2 as a float32 and the rest.
const LN2_H: f32 = std::f32::consts::LN_2;
const LN2_L: f32 = -1.904_654_2e-9;

/// (2^r - 1 - r ln2) / r^2 on [-1/2, 1/2], fitted (relative error of
/// 2^r from it 2.0e-9).
const EXP2_Q: [f32; 5] = [
    0.240_226_48,
    0.055_503_324,
    0.009_618_437,
    0.001_339_887_5,
    0.000_153_533_6,
];

/// `2^x`, within 1 ulp (measured 0.51 ulp on normal results, 0.82 on
/// subnormal ones); PyTorch's float32 `exp2` is within 1 ulp.
#[inline(always)]
pub(crate) fn exp2_f32(x: f32) -> f32 {
    // Below -151 the result rounds to 0 (written outright: scaling through
    // the subnormals costs a microcode assist per lane on Intel cores);
    // from 128 it is inf. NaN passes the clamp.
    let under = x < -151.0;
    let c = if under { 0.0 } else { x.clamp(-151.0, 129.0) };
    let t = c + SHIFT;
    let r = c - (t - SHIFT);
    // 2^r = 1 + r ln2 + r^2 Q(r): the product r ln2 and its sum with 1
    // keep their rounding errors, so the sum rounds once.
    let u = r * LN2_H;
    let ue = r.mul_add(LN2_H, -u);
    let (s, se) = fast_two_sum(1.0, u);
    let tail = (r * r).mul_add(poly(r, &EXP2_Q), r.mul_add(LN2_L, ue + se));
    let e = scale(s + tail, t);
    if under {
        0.0
    } else {
        e
    }
}

/// (log1p(f) - f + f^2/2) / f^3 on [sqrt(1/2) - 1, sqrt(2) - 1], fitted
/// (relative error of log1p(f) from it 8e-10).
const LOG_P: [f32; 9] = [
    0.333_333_13,
    -0.250_000_1,
    0.200_021_19,
    -0.166_679_96,
    0.142_195_51,
    -0.124_055_91,
    0.118_881_75,
    -0.116_756_41,
    0.067_466_01,
];

/// `(k, hi, lo)` with `x = 2^k m`, `m` in [sqrt(1/2), sqrt(2)) and
/// `ln m = hi + lo` (to about 2^-30 relative), for a positive finite `x`,
/// subnormals included; other inputs give values the callers replace.
#[inline(always)]
fn log_parts(x: f32) -> (f32, f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits();
    let k = (bits.wrapping_sub(0x3F35_04F3) as i32) >> 23; // sqrt(1/2)
    let m = f32::from_bits(bits.wrapping_sub((k << 23) as u32));
    let k = k as f32 - if sub { 23.0 } else { 0.0 };
    // ln(1 + f) = f - f^2/2 + f^3 P(f); f is exact, f^2/2 is split into
    // h + hl exactly and f - h carries its rounding error e.
    let f = m - 1.0;
    let hf = 0.5 * f;
    let h = hf * f;
    let hl = hf.mul_add(f, -h);
    let (s, e) = fast_two_sum(f, -h);
    let lo = (f * f * f).mul_add(poly(f, &LOG_P), e - hl);
    (k, s, lo)
}

/// `k (ah + al) + (hi + lo) (bh + bl)` from [`log_parts`], with the special
/// values of a logarithm: NaN below 0 (and for NaN), -inf at +-0, inf at
/// inf. `SCALE_K` / `SCALE_L` say whether the `k` term / the `ln m` term is
/// multiplied (for ln and log2 one factor is 1).
#[inline(always)]
fn log_combine<const SCALE_K: bool, const SCALE_L: bool>(
    x: f32,
    (ah, al): (f32, f32),
    (bh, bl): (f32, f32),
) -> f32 {
    let (k, hi, lo) = log_parts(x);
    let (kh, kl) = if SCALE_K {
        let kh = k * ah;
        (kh, k.mul_add(al, k.mul_add(ah, -kh)))
    } else {
        (k, 0.0)
    };
    let (lh, ll) = if SCALE_L {
        let lh = hi * bh;
        (lh, lo.mul_add(bh, hi.mul_add(bl, hi.mul_add(bh, -lh))))
    } else {
        (hi, lo)
    };
    // |kh| > |lh| whenever k != 0, as |ln m| <= ln2 / 2.
    let (s, e) = fast_two_sum(kh, lh);
    let r = s + (e + (kl + ll));
    if x > 0.0 && x < f32::INFINITY {
        r
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// `ln(x)`, within 1 ulp (measured 0.63); PyTorch's float32 `log` is
/// within 1 ulp.
#[inline(always)]
pub(crate) fn log_f32(x: f32) -> f32 {
    log_combine::<true, false>(x, (LN2_H, LN2_L), (1.0, 0.0))
}

/// `log2(x)`, within 1 ulp (measured 0.66), exact at powers of two;
/// PyTorch's float32 `log2` is within 1 ulp.
#[inline(always)]
pub(crate) fn log2_f32(x: f32) -> f32 {
    // log2(e) as a float32 and the rest.
    log_combine::<false, true>(x, (1.0, 0.0), (std::f32::consts::LOG2_E, 1.925_963e-8))
}

/// `log10(x)`, within 1 ulp (measured 0.63); PyTorch's float32 `log10` is
/// within 1 ulp.
#[inline(always)]
pub(crate) fn log10_f32(x: f32) -> f32 {
    // log10(2) and log10(e), each as a float32 and the rest.
    log_combine::<true, true>(
        x,
        (std::f32::consts::LOG10_2, -1.432_098_9e-8),
        (std::f32::consts::LOG10_E, -1.010_305e-8),
    )
}

/// `ln(1 + x)`, within 1 ulp; PyTorch's float32 `log1p` is within 1 ulp.
#[inline(always)]
pub(crate) fn log1p_f32(x: f32) -> f32 {
    log1p_pair(x, 0.0)
}

/// `ln(1 + x + xl)` for a pair `x + xl` (`|xl|` at most about an ulp of
/// `x`), within 1 ulp. `u = 1 + x` is rounded and its rounding error `c`
/// kept (Fast2Sum, the larger addend first) with `xl` added to it, then
/// `ln(1 + x + xl) = ln(u) + c/u - (c/u)^2 / 2`: `c/u` is below 2^-23, so the
/// next term is beyond float32's reach, and for a tiny `x` (`u = 1`) the
/// result is `c = x + xl` itself.
#[inline(always)]
fn log1p_pair(x: f32, xl: f32) -> f32 {
    let u = 1.0 + x;
    let c = if x.abs() < 1.0 {
        x - (u - 1.0)
    } else {
        1.0 - (u - x)
    };
    let c = c + xl;
    let q = c / u;
    let (k, hi, lo) = log_parts(u);
    let lo = (-0.5 * q).mul_add(q, q + lo);
    let kh = k * LN2_H;
    let kl = k.mul_add(LN2_L, k.mul_add(LN2_H, -kh));
    // |kh| > |hi| whenever k != 0, as |ln m| <= ln2 / 2.
    let (s, e) = fast_two_sum(kh, hi);
    let r = s + (e + (kl + lo));
    if x > -1.0 && x < f32::INFINITY {
        // log1p(-0) = -0 (`r` is +0 there).
        if x == 0.0 {
            x
        } else {
            r
        }
    } else if x == -1.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// `atanh(x) = sign(x) log1p(2|x| / (1 - |x|)) / 2`, within 1 ulp. `1 - |x|`
/// is kept with its rounding error (Fast2Sum), and the quotient carries
/// its residual, so `log1p` sees the argument to about 2^-46. Below 2^-12
/// the series `|x| + |x|^3 / 3` (the next term is below 2^-48 of it)
/// instead: there `1 + t` rounds by as much as `t` itself, and the
/// logarithm's quotient `c / u` would round by half an ulp of the result.
#[inline(always)]
pub(crate) fn atanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let series = (a * a).mul_add(a * (1.0 / 3.0), a);
    let (d, dl) = fast_two_sum(1.0, -a);
    let n = 2.0 * a;
    let t = n / d;
    // n - t (d + dl), exact but for the dl term's rounding, over d.
    let tl = ((-t).mul_add(d, n) - t * dl) / d;
    // From 1 on the quotient is inf or negative: the result is inf or NaN.
    let tl = if a < 1.0 { tl } else { 0.0 };
    let r = 0.5 * log1p_pair(t, tl);
    // A select, not a branch that would take the logarithm out of the
    // vector loop (see `kernels::pick`).
    let r = crate::kernels::pick(a < 1.0 / 4096.0, series, r);
    let r = if a < 1.0 {
        r
    } else if a == 1.0 {
        f32::INFINITY
    } else {
        f32::NAN
    };
    // Odd, -0 kept; NaN stays NaN.
    let r = if a == 0.0 { a } else { r };
    r.copysign(x)
}

/// (tanh(x) - x) / x^3 as a polynomial in x^2 for |x| <= 1, fitted
/// (relative error of tanh from it 4e-10).
const TANH_P: [f32; 8] = [
    -0.333_333_28,
    0.133_332,
    -0.053_953_096,
    0.021_784_73,
    -0.008_595_112,
    0.003_078_590_4,
    -0.000_841_134_87,
    0.000_121_470_14,
];

/// `tanh(x)`, within 1 ulp (measured 0.95); PyTorch's float32 `tanh` is
/// within 1 ulp. Below 1 in magnitude an odd polynomial; from 1,
/// `1 - 2 / (e^(2|x|) + 1)`, where the quotient is below 0.24 so its
/// rounding errors weigh at most a quarter ulp; from 9.1 the result is 1.
#[inline(always)]
pub(crate) fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let z = a * a;
    let small = (a * z).mul_add(poly(z, &TANH_P), a);
    let c = if a > 10.0 { 10.0 } else { a };
    let e = crate::kernels::math::exp_f32(2.0 * c);
    let big = 1.0 - 2.0 / (e + 1.0);
    // Odd: the sign of x (-0 included) on |tanh x|; NaN stays NaN.
    let r = if a < 1.0 { small } else { big };
    r.copysign(x)
}

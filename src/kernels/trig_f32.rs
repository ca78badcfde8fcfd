//! float32 `sin`, `cos` and `tan` that vectorise. `sin` and `cos` reduce
//! the argument and evaluate their polynomials in float32 lanes (16 per
//! AVX-512 instruction), the reduced argument kept as a pair of floats
//! (about 46 bits, also next to a multiple of pi/2) and the last additions
//! carrying their rounding errors, so each result is within 1 ulp of the
//! correctly rounded value. `tan` divides the two pairs from the same
//! reduction, its quotient corrected by the exact residual.
//! The C library's `sinf`/`cosf` are scalar calls. Every float32
//! `sin`/`cos`/`tan` in ferrograd (eager kernels, the compiled tape's
//! loops, fused programs) uses these, so they agree bit for bit with one
//! another.
//!
//! Arguments beyond [`LIMIT`] in magnitude (and NaN, infinities) go to the
//! C library, whose reduction is exact for every float; the slice forms
//! check a block of lanes at once and take the scalar path only for a
//! block that holds one.

use multiversion::multiversion;

use crate::kernels::vmath::{fast_two_sum, poly_f32, SHIFT_F32};

/// Largest magnitude reduced here: `k = round(x * 2/pi)` stays below 2^20,
/// so the three-part Cody-Waite reduction below (in float32 pairs) loses
/// nothing that matters.
pub const LIMIT: f32 = 1_048_576.0;

// pi/2 = PIO2_1F + PIO2_2F + PIO2_3F to about 2^-75, each a float32.
const PIO2_1F: f32 = 1.570_796_4;
const PIO2_2F: f32 = -4.371_139e-8;
const PIO2_3F: f32 = -1.715_124_5e-15;

/// (sin r - r) / r^3 and (cos r - 1 + r^2/2) / r^4 as polynomials in r^2
/// for |r| <= 0.83 (a reduced argument's bound with `k`'s rounding),
/// fitted (relative errors 9e-12 and 2e-13).
const SIN_P: [f32; 4] = [
    -0.166_666_67,
    0.008_333_328,
    -0.000_198_388_27,
    2.713_735e-6,
];
const COS_P: [f32; 4] = [
    0.041_666_668,
    -0.001_388_888_1,
    2.479_892_6e-5,
    -2.716_429_3e-7,
];

/// `(k mod 4, rh, rl)`: `a = k pi/2 + rh + rl` for `0 <= a <= LIMIT`,
/// `|rh| <= 0.81`, `rl` below an ulp of `rh`. `a - k PIO2_1F` is exact (both
/// are multiples of 2^-23 when a >= 1, and k <= 1 below), `k PIO2_2F` is
/// split exactly by a fused multiply-add and the difference of the two is
/// summed exactly, so `rh + rl` keeps about 46 bits even next to a multiple
/// of pi/2.
#[inline(always)]
fn trig_reduce(a: f32) -> (u32, f32, f32) {
    let t = a.mul_add(std::f32::consts::FRAC_2_PI, SHIFT_F32);
    let k = t - SHIFT_F32;
    let r1 = (-k).mul_add(PIO2_1F, a);
    let p = k * PIO2_2F;
    let pl = k.mul_add(PIO2_2F, -p);
    // Two-sum of r1 and -p (either may be the larger).
    let s = r1 - p;
    let bb = s - r1;
    let e = (r1 - (s - bb)) - (p + bb);
    let rl = (-k).mul_add(PIO2_3F, e - pl);
    let (rh, rl) = fast_two_sum(s, rl);
    (t.to_bits() & 3, rh, rl)
}

/// `(sin r, cos r)` for `r = rh + rl` from [`trig_reduce`], each about
/// half an ulp from the true value before its final rounding.
#[inline(always)]
fn sincos_r(rh: f32, rl: f32) -> (f32, f32) {
    let z = rh * rh;
    let sin = rh + (rh * z).mul_add(poly_f32(z, &SIN_P), rl);
    let hr = 0.5 * rh;
    let h = hr * rh;
    let hl = hr.mul_add(rh, -h);
    let hl = rh.mul_add(rl, hl);
    let (c, ce) = fast_two_sum(1.0, -h);
    let cos = c + (z * z).mul_add(poly_f32(z, &COS_P), ce - hl);
    (sin, cos)
}

/// `(sin r, cos r)` for `r = rh + rl` from [`trig_reduce`], each as a
/// normalised pair of floats within about a fifth of an ulp of the true
/// value (for `tan`, whose quotient would add the errors of two rounded
/// values): `r^3` is formed from the exact square, and `rl cos r` keeps
/// its `-rl r^2 / 2`.
#[inline(always)]
fn sincos_pairs(rh: f32, rl: f32) -> ((f32, f32), (f32, f32)) {
    let z = rh * rh;
    let zl = rh.mul_add(rh, -z);
    let c3 = rh * z;
    let c3l = rh.mul_add(z, -c3);
    let c3l = rh.mul_add(zl, c3l);
    let p = poly_f32(z, &SIN_P);
    let hr = 0.5 * rh;
    let h = hr * rh;
    let sl = c3.mul_add(p, c3l.mul_add(p, (-h).mul_add(rl, rl)));
    let sin = fast_two_sum(rh, sl);
    let hl = hr.mul_add(rh, -h);
    let hl = rh.mul_add(rl, hl);
    let (c, ce) = fast_two_sum(1.0, -h);
    let cl = (z * z).mul_add(poly_f32(z, &COS_P), ce - hl);
    (sin, fast_two_sum(c, cl))
}

/// `sin(r + q pi/2)` from `(sin r, cos r)`: s, c, -s, -c for q = 0, 1, 2, 3.
#[inline(always)]
fn quadrant32(q: u32, s: f32, c: f32) -> f32 {
    let v = if q & 1 == 1 { c } else { s };
    f32::from_bits(v.to_bits() ^ ((q & 2) << 30))
}

/// `sin(x)` for `|x| <= LIMIT`, within 1 ulp (measured 0.84).
#[inline(always)]
fn sin_fast(x: f32) -> f32 {
    sincos_fast(x).0
}

/// `cos(x)` for `|x| <= LIMIT`, within 1 ulp (measured 0.85).
#[inline(always)]
fn cos_fast(x: f32) -> f32 {
    sincos_fast(x).1
}

/// `(sin x, cos x)` for `|x| <= LIMIT` from one reduction, in float32
/// lanes (the compiler drops the half a caller does not use).
#[inline(always)]
fn sincos_fast(x: f32) -> (f32, f32) {
    let (q, rh, rl) = trig_reduce(x.abs());
    let (s, c) = sincos_r(rh, rl);
    // sin is odd: the sign of x (including -0.0) goes on the result.
    let sin = quadrant32(q, s, c);
    let sin = f32::from_bits(sin.to_bits() ^ (x.to_bits() & 0x8000_0000));
    (sin, quadrant32(q.wrapping_add(1), s, c))
}

/// `sin(x)` in float32.
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    if x.abs() <= LIMIT {
        sin_fast(x)
    } else {
        x.sin()
    }
}

/// `cos(x)` in float32.
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    if x.abs() <= LIMIT {
        cos_fast(x)
    } else {
        x.cos()
    }
}

/// `tan(x)` for `|x| <= LIMIT`, within 1 ulp (0.80 measured over every
/// float32 below `LIMIT`): `sin r / cos r`, or `-cos r / sin r` in the odd
/// quadrants, from one reduction, in float32 lanes. Both are kept as pairs of floats and the quotient of their
/// leading parts is corrected by its exact residual, so the result rounds
/// about once (a quotient of two rounded values could be 1.5 ulp off, also
/// next to the poles).
#[inline(always)]
fn tan_fast(x: f32) -> f32 {
    let (q, rh, rl) = trig_reduce(x.abs());
    let ((sh, sl), (ch, cl)) = sincos_pairs(rh, rl);
    let odd = q & 1 == 1;
    let (nh, nl) = if odd { (-ch, -cl) } else { (sh, sl) };
    let (dh, dl) = if odd { (sh, sl) } else { (ch, cl) };
    let inv = 1.0 / dh;
    let q0 = nh * inv;
    // (nh + nl) - q0 (dh + dl), the first product's part exact.
    let e = (-q0).mul_add(dh, nh);
    let e = (-q0).mul_add(dl, e + nl);
    let v = e.mul_add(inv, q0);
    // tan is odd: the sign of x (including -0.0) goes on the result.
    f32::from_bits(v.to_bits() ^ (x.to_bits() & 0x8000_0000))
}

/// `tan(x)` in float32.
#[inline(always)]
pub fn tan_f32(x: f32) -> f32 {
    if x.abs() <= LIMIT {
        tan_fast(x)
    } else {
        ((x as f64).tan()) as f32
    }
}

/// Lanes checked together: a block of them whose magnitudes are all within
/// [`LIMIT`] runs the branch-free form.
const LANES: usize = 16;

/// Whether every lane of a block takes the branch-free form (`<=` is
/// false for NaN, so a NaN sends its block to the scalar path).
#[inline(always)]
fn in_range(s: &[f32; LANES]) -> bool {
    in_range_by(s, |x| x)
}

/// [`in_range`] for the arguments `arg(x)` the fast form reduces.
#[inline(always)]
fn in_range_by(s: &[f32; LANES], arg: impl Fn(f32) -> f32) -> bool {
    s.iter().fold(true, |ok, &x| ok & (arg(x).abs() <= LIMIT))
}

#[inline(always)]
fn map(dst: &mut [f32], src: &[f32], fast: impl Fn(f32) -> f32, each: impl Fn(f32) -> f32) {
    map_by(dst, src, |x| x, fast, each)
}

/// [`map`] for a function that reduces `arg(x)` rather than `x`.
#[inline(always)]
fn map_by(
    dst: &mut [f32],
    src: &[f32],
    arg: impl Fn(f32) -> f32,
    fast: impl Fn(f32) -> f32,
    each: impl Fn(f32) -> f32,
) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    let mut dc = dst.chunks_exact_mut(LANES);
    let mut sc = src.chunks_exact(LANES);
    for (d, s) in (&mut dc).zip(&mut sc) {
        let d: &mut [f32; LANES] = d.try_into().unwrap();
        let s: &[f32; LANES] = s.try_into().unwrap();
        if in_range_by(s, &arg) {
            // A whole block formed then stored at once: the next op reads
            // it as one 16-lane load, which a store split in halves would
            // make wait for the cache.
            let mut v = [0.0; LANES];
            for j in 0..LANES {
                v[j] = fast(s[j]);
            }
            store(d, v);
        } else {
            for j in 0..LANES {
                d[j] = each(s[j]);
            }
        }
    }
    for (d, &s) in dc.into_remainder().iter_mut().zip(sc.remainder()) {
        *d = each(s);
    }
}

/// `*d = v` as one 64-byte store where the target has one.
#[inline(always)]
fn store(d: &mut [f32; LANES], v: [f32; LANES]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: `d` holds 16 floats and the CPU has AVX-512F.
        unsafe { store512(d, v) };
        return;
    }
    *d = v;
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn store512(d: &mut [f32; LANES], v: [f32; LANES]) {
    use std::arch::x86_64::{_mm512_loadu_ps, _mm512_storeu_ps};
    // SAFETY: both arrays hold 16 floats.
    unsafe { _mm512_storeu_ps(d.as_mut_ptr(), _mm512_loadu_ps(v.as_ptr())) }
}

/// `dst[i] = sin(src[i])` (the shorter length), as [`sin_f32`] element by element.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
pub fn sin_slice(dst: &mut [f32], src: &[f32]) {
    map(dst, src, sin_fast, sin_f32)
}

/// `dst[i] = cos(src[i])` (the shorter length), as [`cos_f32`] element by element.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
pub fn cos_slice(dst: &mut [f32], src: &[f32]) {
    map(dst, src, cos_fast, cos_f32)
}

/// `dst[i] = tan(src[i])` (the shorter length), as [`tan_f32`] element by element.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
pub fn tan_slice(dst: &mut [f32], src: &[f32]) {
    map(dst, src, tan_fast, tan_f32)
}

// ----- sinc ---------------------------------------------------------------------------

/// `(p cos p - sin p) / p^3` = `sum_k>=1 (-1)^k 2k p^(2k-2) / (2k + 1)!`, the
/// series of sinc's derivative over `pi p` where the closed form cancels
/// (`|p| < 1`; the first omitted term is below 2^-34 of the first).
const SINC_D: [f32; 6] = [
    -1.0 / 3.0,
    1.0 / 30.0,
    -1.0 / 840.0,
    1.0 / 45_360.0,
    -1.0 / 3_991_680.0,
    1.0 / 518_918_400.0,
];

/// `pi x` rounded to float32, the argument PyTorch's float32 `sinc` reduces.
#[inline(always)]
fn pi_x(x: f32) -> f32 {
    std::f32::consts::PI * x
}

/// `sin(pi x) / (pi x)`, 1 at 0, for `|pi x| <= LIMIT`.
#[inline(always)]
fn sinc_fast(x: f32) -> f32 {
    let p = pi_x(x);
    let v = sincos_fast(p).0 / p;
    if x == 0.0 {
        1.0
    } else {
        v
    }
}

/// The normalized sinc `sin(pi x) / (pi x)` in float32 (1 at 0), PyTorch's
/// product-then-quotient form with [`sin_f32`] for the sine.
#[inline(always)]
pub fn sinc_f32(x: f32) -> f32 {
    if x == 0.0 {
        1.0
    } else {
        let p = pi_x(x);
        sin_f32(p) / p
    }
}

/// sinc's derivative from `(sin p, cos p)`, `p = pi x`: PyTorch's
/// `(cos p - sinc x) / x` as `(p cos p - sin p) / (p x)`, and its series
/// where `|p| < 1` (0 at 0).
#[inline(always)]
fn sinc_grad_from(x: f32, p: f32, s: f32, c: f32) -> f32 {
    let small = std::f32::consts::PI * p * poly_f32(p * p, &SINC_D);
    let big = p.mul_add(c, -s) / (p * x);
    if p.abs() < 1.0 {
        small
    } else {
        big
    }
}

#[inline(always)]
fn sinc_grad_fast(x: f32) -> f32 {
    let p = pi_x(x);
    let (s, c) = sincos_fast(p);
    sinc_grad_from(x, p, s, c)
}

/// The derivative of the normalized sinc in float32.
#[inline(always)]
pub fn sinc_grad_f32(x: f32) -> f32 {
    let p = pi_x(x);
    sinc_grad_from(x, p, sin_f32(p), cos_f32(p))
}

/// `dst[i] = sinc(src[i])` (the shorter length), as [`sinc_f32`] element by element.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
pub fn sinc_slice(dst: &mut [f32], src: &[f32]) {
    map_by(dst, src, pi_x, sinc_fast, sinc_f32)
}

/// `dst[i] = sinc'(src[i])` (the shorter length), as [`sinc_grad_f32`] element by element.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
pub fn sinc_grad_slice(dst: &mut [f32], src: &[f32]) {
    map_by(dst, src, pi_x, sinc_grad_fast, sinc_grad_f32)
}

/// `sin[i] = sin(src[i])` and `cos[i] = cos(src[i])` (the shortest
/// length), each as [`sin_slice`] and [`cos_slice`] compute it; one
/// argument reduction serves both.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
pub fn sincos_slice(sin: &mut [f32], cos: &mut [f32], src: &[f32]) {
    let n = sin.len().min(cos.len()).min(src.len());
    let (sin, cos, src) = (&mut sin[..n], &mut cos[..n], &src[..n]);
    let mut i = 0;
    while i + LANES <= n {
        let s: &[f32; LANES] = src[i..i + LANES].try_into().unwrap();
        let ds: &mut [f32; LANES] = (&mut sin[i..i + LANES]).try_into().unwrap();
        if in_range(s) {
            let (mut vs, mut vc) = ([0.0; LANES], [0.0; LANES]);
            for j in 0..LANES {
                (vs[j], vc[j]) = sincos_fast(s[j]);
            }
            store(ds, vs);
            let dc: &mut [f32; LANES] = (&mut cos[i..i + LANES]).try_into().unwrap();
            store(dc, vc);
        } else {
            for j in 0..LANES {
                ds[j] = sin_f32(s[j]);
            }
            for j in 0..LANES {
                cos[i + j] = cos_f32(s[j]);
            }
        }
        i += LANES;
    }
    for j in i..n {
        sin[j] = sin_f32(src[j]);
        cos[j] = cos_f32(src[j]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> u32 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0;
        }
        let (ia, ib) = (a.to_bits() as i64, b.to_bits() as i64);
        let key = |i: i64| if i < 0x8000_0000 { i } else { 0x8000_0000 - i };
        (key(ia) - key(ib)).unsigned_abs() as u32
    }

    /// Every float32 in [-LIMIT, LIMIT] sampled densely near zero and the
    /// multiples of pi/2, against float64's libm rounded once.
    #[test]
    fn within_one_ulp_of_the_float64_result() {
        let mut xs: Vec<f32> = Vec::new();
        let mut s = 0x1234_5678_9abc_def0u64;
        for _ in 0..400_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let bits = (s >> 32) as u32;
            let x = f32::from_bits(bits & 0x7fff_ffff) * if bits & 1 == 1 { -1.0 } else { 1.0 };
            if x.abs() <= 2.0 * LIMIT {
                xs.push(x);
            }
            xs.push(((s >> 40) as f32 / 16_777_216.0 - 0.5) * 200.0);
        }
        for k in 0..2000 {
            let m = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
            xs.extend([
                m,
                f32::from_bits(m.to_bits() + 1),
                f32::from_bits(m.to_bits().max(1) - 1),
            ]);
        }
        xs.extend([
            0.0,
            -0.0,
            1e-30,
            -1e-30,
            LIMIT,
            -LIMIT,
            3e38,
            f32::INFINITY,
            f32::NAN,
        ]);
        let (mut worst, mut inexact) = (0, 0);
        for &x in &xs {
            for (got, want) in [
                (sin_f32(x), (x as f64).sin() as f32),
                (cos_f32(x), (x as f64).cos() as f32),
            ] {
                let u = ulps(got, want);
                worst = worst.max(u);
                inexact += (u != 0) as usize;
            }
        }
        assert!(worst <= 1, "worst error {worst} ulp");
        // Most results are the correctly rounded one.
        assert!(
            inexact * 20 < xs.len(),
            "{inexact} of {} off by one ulp",
            2 * xs.len()
        );
    }

    #[test]
    fn signs_zeros_and_specials() {
        assert_eq!(sin_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(sin_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(cos_f32(-0.0), 1.0);
        assert!(sin_f32(f32::NAN).is_nan() && cos_f32(f32::INFINITY).is_nan());
        for x in [0.5f32, 2.0, 4.0, 100.0, 1e5] {
            assert_eq!(sin_f32(-x).to_bits(), (-sin_f32(x)).to_bits());
            assert_eq!(cos_f32(-x).to_bits(), cos_f32(x).to_bits());
        }
    }

    #[test]
    fn slices_equal_the_element_functions() {
        let src: Vec<f32> = (0..1000)
            .map(|i| match i % 97 {
                13 => f32::NAN,
                29 => 5e6,
                _ => (i as f32 - 500.0) * 0.37,
            })
            .collect();
        let (mut s, mut c) = (vec![0.0f32; 1000], vec![0.0f32; 1000]);
        sin_slice(&mut s, &src);
        cos_slice(&mut c, &src);
        for (i, &x) in src.iter().enumerate() {
            assert_eq!(s[i].to_bits(), sin_f32(x).to_bits(), "sin {x}");
            assert_eq!(c[i].to_bits(), cos_f32(x).to_bits(), "cos {x}");
        }
    }

    #[test]
    fn sinc_slices_equal_the_element_functions() {
        // Zeros, NaN, infinities and arguments whose pi x passes LIMIT (and
        // those just inside it) in blocks among ordinary ones.
        let edge = LIMIT / std::f32::consts::PI;
        let src: Vec<f32> = (0..1000)
            .map(|i| match i % 89 {
                3 => 0.0,
                11 => -0.0,
                13 => f32::NAN,
                29 => 5e6,
                31 => f32::INFINITY,
                47 => edge,
                53 => -edge * 1.000_001,
                61 => 1e-30,
                _ => (i as f32 - 500.0) * 0.0371,
            })
            .collect();
        let (mut v, mut d) = (vec![0.0f32; 1000], vec![0.0f32; 1000]);
        sinc_slice(&mut v, &src);
        sinc_grad_slice(&mut d, &src);
        for (i, &x) in src.iter().enumerate() {
            assert_eq!(v[i].to_bits(), sinc_f32(x).to_bits(), "sinc {x}");
            assert_eq!(d[i].to_bits(), sinc_grad_f32(x).to_bits(), "sinc' {x}");
        }
    }

    #[test]
    fn sinc_is_the_float64_quotient_of_the_float32_product() {
        // PyTorch's float32 sinc: p = pi x rounded to float32, sin(p) / p.
        // The sine is within 1 ulp and the quotient rounds once more.
        let mut worst = 0;
        for i in 0..200_000 {
            let x = (i as f32 - 100_000.0) * 0.001_37;
            let p = std::f32::consts::PI * x;
            let want = if x == 0.0 {
                1.0
            } else {
                ((p as f64).sin() / p as f64) as f32
            };
            let got = sinc_f32(x);
            // Near a root sin(p) is tiny and the quotient's error is
            // relative to it; compare there in absolute terms.
            if want.abs() > 1e-3 {
                worst = worst.max(ulps(got, want));
            } else {
                assert!((got - want).abs() <= 1e-9, "sinc({x}) = {got}, want {want}");
            }
        }
        assert!(worst <= 2, "sinc strays {worst} ulp");
        assert_eq!(sinc_f32(0.0), 1.0);
        assert!(sinc_f32(f32::NAN).is_nan() && sinc_f32(f32::INFINITY).is_nan());
        assert_eq!(sinc_grad_f32(0.0), 0.0);
    }

    #[test]
    fn sincos_equals_the_separate_slices() {
        // Lengths with and without a remainder; blocks with a NaN, an
        // infinity or a large argument take the scalar path.
        for n in [0usize, 5, 16, 37, 160] {
            let src: Vec<f32> = (0..n)
                .map(|i| match i % 53 {
                    7 => f32::NAN,
                    19 => f32::NEG_INFINITY,
                    31 => -3e7,
                    41 => -0.0,
                    _ => (i as f32 - 80.0) * 1.37 + 1e-3 * i as f32,
                })
                .collect();
            let (mut s, mut c) = (vec![0.0f32; n], vec![0.0f32; n]);
            sin_slice(&mut s, &src);
            cos_slice(&mut c, &src);
            let (mut s2, mut c2) = (vec![1.0f32; n], vec![1.0f32; n]);
            sincos_slice(&mut s2, &mut c2, &src);
            for i in 0..n {
                assert_eq!(s[i].to_bits(), s2[i].to_bits(), "sin {}", src[i]);
                assert_eq!(c[i].to_bits(), c2[i].to_bits(), "cos {}", src[i]);
            }
        }
    }
}

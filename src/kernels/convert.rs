//! Element conversions between dtypes (`tensor.to(dtype)`), with PyTorch's
//! semantics, and the vectorised float32 <-> float16/bfloat16 loops that
//! every low-precision op goes through twice (in, and out rounded once).
//!
//! float32 -> bfloat16 rounds to nearest even with integer arithmetic (the
//! portable form autovectorises; AVX512_BF16's `vcvtneps2bf16` is not used
//! because it flushes subnormal inputs to zero, which would make the result
//! depend on the CPU). float32 <-> float16 use F16C's `vcvtps2ph`/`vcvtph2ps`
//! when the CPU has them (IEEE round to nearest even, subnormals kept), and
//! the `half` crate's scalar conversion otherwise; the tests check the two
//! agree bit for bit.

use multiversion::multiversion;

use super::{build_vec, par_ranges, SendPtr};
use crate::tensor::{bf16, f16, DType, Element, Tensor, View};

/// float32 to bfloat16, rounded to nearest even. NaN becomes the quiet NaN
/// 0x7FC0, as PyTorch's scalar conversion makes it.
#[inline(always)]
pub fn f32_to_bf16(x: f32) -> bf16 {
    let b = x.to_bits();
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    bf16::from_bits(if x.is_nan() { 0x7fc0 } else { rounded })
}

#[inline(always)]
pub fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits((x.to_bits() as u32) << 16)
}

/// One element converted as `tensor.to(D)` converts it: from an integer or
/// bool exactly through int64 (integers wrap into narrower ones, floats
/// round to nearest), from a float through float64 (exact for every source
/// float; see `Element::from_f64` for float -> integer).
#[inline(always)]
pub fn cast<S: Element, D: Element>(x: S) -> D {
    if S::DTYPE.category() < 2 {
        D::from_i64(x.to_i64())
    } else {
        D::from_f64(x.to_f64())
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn f32_to_bf16_portable(dst: &mut [bf16], src: &[f32]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = f32_to_bf16(x);
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn bf16_to_f32_portable(dst: &mut [f32], src: &[bf16]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = bf16_to_f32(x);
    }
}

/// float32 -> float16, element by element (the reference for the F16C path).
pub fn f32_to_f16_portable(dst: &mut [f16], src: &[f32]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = f16::from_f32(x);
    }
}

/// float16 -> float32, element by element (the reference for the F16C path).
pub fn f16_to_f32_portable(dst: &mut [f32], src: &[f16]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = x.to_f32();
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f32_to_f16_f16c(dst: &mut [f16], src: &[f32]) {
    use std::arch::x86_64::*;
    let n = dst.len().min(src.len());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n for both slices.
        unsafe {
            let v = _mm256_loadu_ps(src.as_ptr().add(i));
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
            _mm_storeu_si128(dst.as_mut_ptr().add(i) as *mut __m128i, h);
        }
        i += 8;
    }
    f32_to_f16_portable(&mut dst[i..n], &src[i..n]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_to_f32_f16c(dst: &mut [f32], src: &[f16]) {
    use std::arch::x86_64::*;
    let n = dst.len().min(src.len());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n for both slices.
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    f16_to_f32_portable(&mut dst[i..n], &src[i..n]);
}

/// Whether the F16C instructions convert float16 here.
pub fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// float32 -> float16 over a slice: F16C when the CPU has it.
pub fn f32_to_f16_slice(dst: &mut [f16], src: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: the features were detected at run time.
        return unsafe { f32_to_f16_f16c(dst, src) };
    }
    f32_to_f16_portable(dst, src)
}

/// float16 -> float32 over a slice: F16C when the CPU has it.
pub fn f16_to_f32_slice(dst: &mut [f32], src: &[f16]) {
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: the features were detected at run time.
        return unsafe { f16_to_f32_f16c(dst, src) };
    }
    f16_to_f32_portable(dst, src)
}

pub fn f32_to_bf16_slice(dst: &mut [bf16], src: &[f32]) {
    f32_to_bf16_portable(dst, src)
}

pub fn bf16_to_f32_slice(dst: &mut [f32], src: &[bf16]) {
    bf16_to_f32_portable(dst, src)
}

/// `src` converted by `conv` into a fresh vector, split across the pool.
fn par_convert<S: Copy + Sync, D: Copy + Send>(src: &[S], conv: fn(&mut [D], &[S])) -> Vec<D> {
    let n = src.len();
    build_vec(n, |out| {
        let o = SendPtr(out.as_mut_ptr() as *mut D);
        par_ranges(n, |lo, hi| {
            // SAFETY: the ranges are disjoint and inside `out`; every slot in
            // them is written by `conv` before the vector is read.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(lo), hi - lo) };
            conv(dst, &src[lo..hi]);
        });
    })
}

/// The contiguous float32 <-> float16/bfloat16 conversions through the
/// slice kernels above; `None` for every other case (the generic loop).
pub fn fast_cast(v: &View, to: DType) -> Option<Tensor> {
    let shape = v.shape.clone();
    Some(match (v.dtype(), to) {
        (DType::F32, DType::BF16) => {
            Tensor::from_vec(par_convert(v.as_slice::<f32>()?, f32_to_bf16_slice), shape)
        }
        (DType::F32, DType::F16) => {
            Tensor::from_vec(par_convert(v.as_slice::<f32>()?, f32_to_f16_slice), shape)
        }
        (DType::BF16, DType::F32) => {
            Tensor::from_vec(par_convert(v.as_slice::<bf16>()?, bf16_to_f32_slice), shape)
        }
        (DType::F16, DType::F32) => {
            Tensor::from_vec(par_convert(v.as_slice::<f16>()?, f16_to_f32_slice), shape)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every float32 class: zeros, subnormals, normals near each rounding
    /// boundary, the largest finite values, infinities, NaNs with payloads.
    fn samples() -> Vec<f32> {
        let mut bits: Vec<u32> = vec![
            0,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000,
            0x3f80_0000,
            0x3f80_8000,
            0x3f81_8000,
            0x3f80_7fff,
            0x3f80_8001,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0xffc0_0001,
            0x7f80_0001,
            0x7fbf_ffff,
            0x3380_0000,
            0x3380_0001,
            0x477f_f000,
            0x477f_efff,
            0x4780_0000,
        ];
        // A deterministic sweep over the whole bit space.
        let mut s: u32 = 0x1234_5678;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            bits.push(s);
        }
        bits.into_iter().map(f32::from_bits).collect()
    }

    #[test]
    fn f16c_agrees_with_the_portable_conversion_bit_for_bit() {
        let src = samples();
        let mut a = vec![f16::ZERO; src.len()];
        let mut b = vec![f16::ZERO; src.len()];
        f32_to_f16_slice(&mut a, &src);
        f32_to_f16_portable(&mut b, &src);
        for i in 0..src.len() {
            assert_eq!(
                a[i].to_bits(),
                b[i].to_bits(),
                "f32 bits {:#x}",
                src[i].to_bits()
            );
        }
        let halves: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let mut x = vec![0f32; halves.len()];
        let mut y = vec![0f32; halves.len()];
        f16_to_f32_slice(&mut x, &halves);
        f16_to_f32_portable(&mut y, &halves);
        for i in 0..halves.len() {
            assert_eq!(x[i].to_bits(), y[i].to_bits(), "f16 bits {i:#x}");
        }
    }

    #[test]
    fn bf16_rounds_to_nearest_even_and_agrees_with_the_scalar_form() {
        let src = samples();
        let mut a = vec![bf16::ZERO; src.len()];
        f32_to_bf16_slice(&mut a, &src);
        for i in 0..src.len() {
            let x = src[i];
            if x.is_nan() {
                assert!(a[i].is_nan());
                continue;
            }
            // The half crate's conversion is the reference for non-NaN values.
            assert_eq!(
                a[i].to_bits(),
                bf16::from_f32(x).to_bits(),
                "bits {:#x}",
                x.to_bits()
            );
        }
        // Ties go to even.
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)).to_bits(), 0x3f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)).to_bits(), 0x3f82);
        let all: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        let mut back = vec![0f32; all.len()];
        bf16_to_f32_slice(&mut back, &all);
        for i in 0..all.len() {
            // Widening is a shift: NaN payloads stay as they are (the half
            // crate quiets signalling NaNs instead).
            assert_eq!(back[i].to_bits(), (i as u32) << 16);
            if !all[i].is_nan() {
                assert_eq!(back[i].to_bits(), all[i].to_f32().to_bits());
            }
        }
    }

    #[test]
    fn cast_follows_pytorch() {
        assert_eq!(cast::<i64, u8>(300), 44);
        assert_eq!(cast::<i64, i8>(-129), 127);
        assert_eq!(cast::<f32, u8>(-1.0), 255);
        assert!(cast::<f32, bool>(f32::NAN));
        assert_eq!(cast::<bool, f32>(true), 1.0);
        // Directly, not through float64: 2^53 + 1 rounds once.
        assert_eq!(cast::<i64, f32>((1 << 53) + 1), 9_007_199_254_740_992.0);
        assert_eq!(cast::<f32, bf16>(1.0 + 1.0 / 256.0).to_bits(), 0x3f80);
    }
}

//! float32 <-> bfloat16 conversion of slices, bfloat16 values held as their
//! `u16` bit patterns (the upper half of the float32 with the same value).
//!
//! bfloat16 -> float32 is exact: a 16-bit shift.
//!
//! float32 -> bfloat16 rounds to nearest, ties to even, as PyTorch's cast
//! does: values past bfloat16's largest finite value round to infinity,
//! subnormals round like any other value (they stay subnormal or become
//! zero or the smallest normal as rounding says), and a NaN stays a NaN
//! with its sign and top payload bits, made quiet. With AVX512_BF16 the
//! conversion is `vcvtneps2bf16` (`_mm512_cvtneps_pbh`), which rounds the
//! same way but flushes float32 subnormals to zero; those lanes (rare: below
//! 2^-126) are redone with the integer rounding, so both paths give the same
//! bits for every input.

/// Converts one float32 to bfloat16 bits (round to nearest even, NaN quiet).
#[inline(always)]
pub fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    // Adding 0x7fff plus the lowest kept bit rounds the dropped half to
    // nearest, ties to even, carrying into the exponent (up to infinity).
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    let quiet_nan = ((b >> 16) | 0x0040) as u16;
    if b & 0x7fff_ffff > 0x7f80_0000 {
        quiet_nan
    } else {
        rounded
    }
}

/// The float32 with the value of bfloat16 bits `h` (exact).
#[inline(always)]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// `dst[i] = f32_to_bf16(src[i])`, with `vcvtneps2bf16` where the CPU has it.
///
/// # Panics
/// If the slices differ in length.
pub fn f32_to_bf16_slice(src: &[f32], dst: &mut [u16]) {
    f32_to_bf16_slice_on(Conv::best(), src, dst)
}

/// `dst[i] = bf16_to_f32(src[i])`.
///
/// # Panics
/// If the slices differ in length.
pub fn bf16_to_f32_slice(src: &[u16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "bf16_to_f32_slice: lengths differ");
    // A shift per element, which the compiler vectorises at any level.
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = bf16_to_f32(s);
    }
}

/// How [`f32_to_bf16_slice_on`] converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conv {
    /// The integer rounding of [`f32_to_bf16`], element by element.
    Portable,
    /// `vcvtneps2bf16`, 16 lanes at a time, subnormal lanes redone.
    Avx512Bf16,
}

impl Conv {
    pub(crate) fn best() -> Conv {
        if super::has_avx512_bf16() {
            Conv::Avx512Bf16
        } else {
            Conv::Portable
        }
    }
}

/// [`f32_to_bf16_slice`] on a chosen path (which must be available).
pub(crate) fn f32_to_bf16_slice_on(conv: Conv, src: &[f32], dst: &mut [u16]) {
    assert_eq!(src.len(), dst.len(), "f32_to_bf16_slice: lengths differ");
    match conv {
        #[cfg(target_arch = "x86_64")]
        Conv::Avx512Bf16 => {
            assert!(super::has_avx512_bf16(), "this CPU has no AVX512_BF16");
            // SAFETY: the features were detected; the slices have equal lengths.
            unsafe { x86::f32_to_bf16(src.as_ptr(), dst.as_mut_ptr(), src.len()) }
        }
        _ => {
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = f32_to_bf16(s);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use std::arch::x86_64::*;

    /// 16 float32 lanes to 16 bfloat16 lanes, rounded as [`super::f32_to_bf16`].
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")]
    pub(crate) fn cvt16(v: __m512) -> __m256i {
        // SAFETY: `__m256bh` and `__m256i` are both 256 plain bits.
        let h: __m256i = unsafe { std::mem::transmute(_mm512_cvtneps_pbh(v)) };
        // vcvtneps2bf16 reads float32 subnormals as zero; round those lanes
        // with integers (the same sum as the scalar form).
        let sub = _mm512_fpclass_ps_mask::<0x20>(v);
        if sub == 0 {
            return h;
        }
        let b = _mm512_castps_si512(v);
        let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(b), _mm512_set1_epi32(1));
        let r = _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
        let r = _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(r));
        _mm256_mask_blend_epi16(sub, h, r)
    }

    /// Converts `n` float32 at `src` into bfloat16 bits at `dst`.
    ///
    /// # Safety
    /// `src` and `dst` must hold `n` elements.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")]
    pub(crate) unsafe fn f32_to_bf16(src: *const f32, dst: *mut u16, n: usize) {
        let mut i = 0;
        while i + 16 <= n {
            let v = _mm512_loadu_ps(src.add(i));
            _mm256_storeu_si256(dst.add(i) as *mut __m256i, cvt16(v));
            i += 16;
        }
        if i < n {
            let mask: u16 = (1u32 << (n - i)).wrapping_sub(1) as u16;
            let v = _mm512_maskz_loadu_ps(mask, src.add(i));
            _mm256_mask_storeu_epi16(dst.add(i) as *mut i16, mask, cvt16(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest bfloat16 by arithmetic on the value (not the bits): the two
    /// neighbours in float64, ties to the even mantissa.
    fn reference(x: f32) -> u16 {
        if x.is_nan() {
            return ((x.to_bits() >> 16) | 0x40) as u16;
        }
        let down = (x.to_bits() >> 16) as u16; // truncation: toward zero
        let up = down.wrapping_add(1); // away from zero (may be infinity)
        let (xd, dd, du) = (x as f64, bf16_to_f32(down) as f64, bf16_to_f32(up) as f64);
        // Beyond the largest finite bfloat16 the upper neighbour is
        // "2^128", the next step of the format, as IEEE rounding defines.
        let du = if (up & 0x7fff) == 0x7f80 {
            dd.signum() * 2f64.powi(128)
        } else {
            du
        };
        let (ed, eu) = ((xd - dd).abs(), (du - xd).abs());
        if x.to_bits() & 0xffff == 0 || ed < eu || (ed == eu && down & 1 == 0) {
            down
        } else {
            up
        }
    }

    /// Inputs that stress every branch: each exponent (subnormal, normal,
    /// the largest, infinity, NaN) with each low-half pattern that decides
    /// rounding (just below, at and above a tie, with an even and an odd
    /// kept bit), both signs; then pseudo-random bit patterns.
    fn samples() -> Vec<f32> {
        let mut v = Vec::new();
        for sign in [0u32, 1] {
            for exp in 0..=255u32 {
                for hi in [0u32, 1, 0x3f, 0x40, 0x7e, 0x7f] {
                    for lo in [0u32, 1, 0x7fff, 0x8000, 0x8001, 0xffff] {
                        v.push(f32::from_bits((sign << 31) | (exp << 23) | (hi << 16) | lo));
                    }
                }
            }
        }
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.push(f32::from_bits(s as u32));
        }
        v
    }

    #[test]
    fn scalar_rounding_matches_the_nearest_value() {
        for x in samples() {
            assert_eq!(f32_to_bf16(x), reference(x), "{:08x}", x.to_bits());
        }
        // Known values: 1 + 2^-8 ties to 1; 1 + 3 * 2^-8 ties up to 1 + 2^-6;
        // f32::MAX overflows; a quiet NaN keeps its sign.
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f80);
        assert_eq!(f32_to_bf16(-f32::MAX), 0xff80);
        assert_eq!(f32_to_bf16(f32::from_bits(0xff81_2345)), 0xffc1);
        assert_eq!(f32_to_bf16(f32::from_bits(0x007f_ffff)), 0x0080);
    }

    #[test]
    fn every_bfloat16_survives_the_round_trip() {
        for h in 0..=u16::MAX {
            let back = f32_to_bf16(bf16_to_f32(h));
            // A signalling NaN comes back quiet; everything else unchanged.
            let want = if h & 0x7fff > 0x7f80 { h | 0x40 } else { h };
            assert_eq!(back, want, "{h:04x}");
        }
        let all: Vec<u16> = (0..=u16::MAX).collect();
        let mut f = vec![0.0f32; all.len()];
        bf16_to_f32_slice(&all, &mut f);
        for (&h, x) in all.iter().zip(&f) {
            assert_eq!(x.to_bits(), (h as u32) << 16);
        }
    }

    #[test]
    fn every_path_gives_the_same_bits() {
        let x = samples();
        let mut want = vec![0u16; x.len()];
        f32_to_bf16_slice_on(Conv::Portable, &x, &mut want);
        if Conv::best() == Conv::Portable {
            return;
        }
        // Every length up to two vectors, at every offset, for the tails.
        for len in 0..40 {
            for start in 0..20 {
                let mut got = vec![0u16; len];
                f32_to_bf16_slice_on(Conv::Avx512Bf16, &x[start..start + len], &mut got);
                assert_eq!(got, want[start..start + len]);
            }
        }
        let mut got = vec![0u16; x.len()];
        f32_to_bf16_slice_on(Conv::Avx512Bf16, &x, &mut got);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{:08x}", x[i].to_bits());
        }
    }

    /// Every float32 bit pattern, both paths (4 billion values: minutes).
    #[test]
    #[ignore]
    fn every_float32_gives_the_same_bits() {
        let mut x = vec![0f32; 1 << 24];
        let (mut a, mut b) = (vec![0u16; 1 << 24], vec![0u16; 1 << 24]);
        for hi in 0..256u32 {
            for (i, v) in x.iter_mut().enumerate() {
                *v = f32::from_bits((hi << 24) | i as u32);
            }
            f32_to_bf16_slice_on(Conv::Portable, &x, &mut a);
            f32_to_bf16_slice(&x, &mut b);
            assert_eq!(a, b, "block {hi}");
        }
    }
}

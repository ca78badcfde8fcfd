//! In-register transposes of small square blocks, the inner step of a
//! strided copy whose source and destination run along different
//! dimensions (`contiguous()` of a transposed or permuted view).
//!
//! A block is read as whole vectors along the source's unit stride and
//! written as whole vectors along the destination's, so neither side pays an
//! element-sized access: 8 x 8 four-byte or 4 x 4 eight-byte elements per
//! step, with AVX2's unpack and lane-permute instructions. Elements are moved
//! as bits, so one kernel serves every dtype of the size.

use super::vmath::{isa, Isa};

/// The side of the block [`block`] moves for elements of `size` bytes, or
/// None when this CPU (or the size) has no vector kernel.
pub(crate) fn block_side(size: usize) -> Option<usize> {
    if isa() < Isa::Avx2 {
        return None;
    }
    match size {
        4 => Some(8),
        8 => Some(4),
        _ => None,
    }
}

/// `dst[i * dst_row + j] = src[i + j * src_row]` for `i, j < side`, with
/// `side = block_side(size_of::<T>())`.
///
/// # Safety
/// [`block_side`] must have returned `Some` for `T`'s size, and every offset
/// named above must lie inside its buffer.
#[inline]
pub(crate) unsafe fn block<T>(src: *const T, src_row: isize, dst: *mut T, dst_row: usize) {
    #[cfg(target_arch = "x86_64")]
    match std::mem::size_of::<T>() {
        4 => return avx2::block8(src as *const f32, src_row, dst as *mut f32, dst_row),
        8 => return avx2::block4(src as *const f64, src_row, dst as *mut f64, dst_row),
        _ => {}
    }
    unreachable!("transpose::block called without a vector kernel")
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// 8 x 8 four-byte elements (moved as float bits: no arithmetic touches them).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn block8(src: *const f32, src_row: isize, dst: *mut f32, dst_row: usize) {
        let r = |j: isize| _mm256_loadu_ps(src.offset(j * src_row));
        let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
        let (r4, r5, r6, r7) = (r(4), r(5), r(6), r(7));
        let t0 = _mm256_unpacklo_ps(r0, r1);
        let t1 = _mm256_unpackhi_ps(r0, r1);
        let t2 = _mm256_unpacklo_ps(r2, r3);
        let t3 = _mm256_unpackhi_ps(r2, r3);
        let t4 = _mm256_unpacklo_ps(r4, r5);
        let t5 = _mm256_unpackhi_ps(r4, r5);
        let t6 = _mm256_unpacklo_ps(r6, r7);
        let t7 = _mm256_unpackhi_ps(r6, r7);
        let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        let w = |i: usize, v: __m256| _mm256_storeu_ps(dst.add(i * dst_row), v);
        w(0, _mm256_permute2f128_ps::<0x20>(u0, u4));
        w(1, _mm256_permute2f128_ps::<0x20>(u1, u5));
        w(2, _mm256_permute2f128_ps::<0x20>(u2, u6));
        w(3, _mm256_permute2f128_ps::<0x20>(u3, u7));
        w(4, _mm256_permute2f128_ps::<0x31>(u0, u4));
        w(5, _mm256_permute2f128_ps::<0x31>(u1, u5));
        w(6, _mm256_permute2f128_ps::<0x31>(u2, u6));
        w(7, _mm256_permute2f128_ps::<0x31>(u3, u7));
    }

    /// 4 x 4 eight-byte elements.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn block4(src: *const f64, src_row: isize, dst: *mut f64, dst_row: usize) {
        let r = |j: isize| _mm256_loadu_pd(src.offset(j * src_row));
        let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
        let t0 = _mm256_unpacklo_pd(r0, r1);
        let t1 = _mm256_unpackhi_pd(r0, r1);
        let t2 = _mm256_unpacklo_pd(r2, r3);
        let t3 = _mm256_unpackhi_pd(r2, r3);
        let w = |i: usize, v: __m256d| _mm256_storeu_pd(dst.add(i * dst_row), v);
        w(0, _mm256_permute2f128_pd::<0x20>(t0, t2));
        w(1, _mm256_permute2f128_pd::<0x20>(t1, t3));
        w(2, _mm256_permute2f128_pd::<0x31>(t0, t2));
        w(3, _mm256_permute2f128_pd::<0x31>(t1, t3));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Copy + PartialEq + std::fmt::Debug>(make: impl Fn(usize) -> T) {
        let Some(side) = block_side(std::mem::size_of::<T>()) else {
            return;
        };
        // A source whose rows are 11 apart and a destination whose rows are 13 apart,
        // so a kernel that assumed packed rows would be caught.
        let (sr, dr) = (11usize, 13usize);
        let src: Vec<T> = (0..sr * side + side).map(&make).collect();
        let mut dst = vec![make(usize::MAX); dr * side];
        unsafe { block(src.as_ptr(), sr as isize, dst.as_mut_ptr(), dr) };
        for i in 0..side {
            for j in 0..side {
                assert_eq!(dst[i * dr + j], src[i + j * sr], "i {i} j {j}");
            }
            for j in side..dr {
                assert_eq!(dst[i * dr + j], make(usize::MAX), "wrote past the block");
            }
        }
    }

    #[test]
    fn blocks_are_transposed_bit_for_bit() {
        check(|k| k as u32);
        check(|k| f32::from_bits(0x7fc0_0000 | (k as u32 & 0xffff)).to_bits());
        check(|k| (k as u64).wrapping_mul(0x1_0000_0001));
        check(|k| (k as f64).to_bits());
    }
}

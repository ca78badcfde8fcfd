//! `x @ w.t()` for float32 with at most 8 rows of `x` (a recurrent step, a
//! small batch through `linear`), on AVX-512. Vectorising over the rows of
//! `x` fills only half a 512-bit register, so each register holds two steps
//! of `k` instead: lane `2i + s` carries row `i` at `k` positions of parity
//! `s`, multiplied by one 64-bit broadcast of the two neighbouring weights
//! `w[j, 2q..2q + 2]`. Half the loads and half the multiply-adds of the
//! plain transposed tile. Each output is the chain over even `k` plus the
//! chain over odd `k`, a fixed order whatever the tiling or thread count.

use std::arch::x86_64::*;

use super::super::matmul::{Dst, Mat};
use super::MR;

/// Rows of `x` that fit a register as pairs.
pub(super) const MAX_M: usize = 8;

/// `dst[m, n] (+)= x[m, k] @ w^T`, where row `j` of `w` is the `k`
/// contiguous elements at `w + j * ldw`.
///
/// # Safety
/// Valid operands and destination; `x.rows <= MAX_M`; AVX-512F present.
pub(super) unsafe fn run(x: Mat<f32>, w: *const f32, ldw: usize, n: usize, dst: Dst<f32>) {
    let (m, k) = (x.rows, x.cols);
    let steps = k.div_ceil(2);
    // Row i's elements 2q and 2q + 1 at lanes 2i and 2i + 1 of step q; zero
    // beyond the rows and past an odd k.
    let mut panel = crate::error::zeroed_vec::<f32>(steps * 16);
    for i in 0..m {
        let row = x.ptr.add(i * x.row_stride);
        for (q, lanes) in panel.chunks_exact_mut(16).enumerate() {
            let p = 2 * q;
            lanes[2 * i] = *row.add(p * x.col_stride);
            if p + 1 < k {
                lanes[2 * i + 1] = *row.add((p + 1) * x.col_stride);
            }
        }
    }
    let t = PairTile {
        panel: panel.as_ptr(),
        k,
        w,
        ldw,
        m,
        dst,
    };
    let mut j = 0;
    while j < n {
        let left = n - j;
        j += if left >= MR {
            t.run::<MR>(j)
        } else if left >= 4 {
            t.run::<4>(j)
        } else if left >= 2 {
            t.run::<2>(j)
        } else {
            t.run::<1>(j)
        };
    }
}

struct PairTile {
    panel: *const f32,
    k: usize,
    w: *const f32,
    ldw: usize,
    m: usize,
    dst: Dst<f32>,
}

impl PairTile {
    /// Columns `j0..j0 + R` of the result.
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const R: usize>(&self, j0: usize) -> usize {
        let mut acc = [_mm512_setzero_ps(); R];
        let pairs = self.k / 2;
        for q in 0..pairs {
            let xv = _mm512_loadu_ps(self.panel.add(q * 16));
            for (r, a) in acc.iter_mut().enumerate() {
                let at = self.w.add((j0 + r) * self.ldw + 2 * q) as *const f64;
                let wv = _mm512_castpd_ps(_mm512_set1_pd(at.read_unaligned()));
                *a = _mm512_fmadd_ps(xv, wv, *a);
            }
        }
        if self.k % 2 == 1 {
            // The last weight alone, with a zero (not a neighbour that may
            // lie past the buffer) in the odd lanes.
            let xv = _mm512_loadu_ps(self.panel.add(pairs * 16));
            for (r, a) in acc.iter_mut().enumerate() {
                let last = *self.w.add((j0 + r) * self.ldw + self.k - 1);
                let wv = _mm512_castpd_ps(_mm512_set1_pd(f64::from_bits(last.to_bits() as u64)));
                *a = _mm512_fmadd_ps(xv, wv, *a);
            }
        }
        let d = self.dst;
        let mut sums = [[0.0f32; 16]; R];
        for (s, a) in sums.iter_mut().zip(acc.iter()) {
            // Even lanes: even chain + odd chain of each row.
            _mm512_storeu_ps(
                s.as_mut_ptr(),
                _mm512_add_ps(*a, _mm512_permute_ps(*a, 0xB1)),
            );
        }
        // Row by row of the destination: its `R` columns are neighbours
        // when the destination is row-major (`linear`'s output).
        for i in 0..self.m {
            let row = d.ptr.add(i * d.rs + j0 * d.cs);
            for (r, s) in sums.iter().enumerate() {
                let at = row.add(r * d.cs);
                *at = if d.add { *at + s[2 * i] } else { s[2 * i] };
            }
        }
        R
    }
}

//! Small matrix products for the recurrent steps: a step multiplies a few rows
//! of state (the batch) by the recurrent weight, too small for the GEMM crate's
//! packing to pay, so register-tiled loops over the transposed weight do it,
//! split by output columns across the pool. The float trait here also carries
//! the activations the fused gate passes in `rnn.rs` use.

use std::ops::{Add, Mul, Sub};

use multiversion::multiversion;

use crate::tensor::Element;
/// The float types the loops run on, with their activation functions (the
/// same formulas as the standalone `sigmoid`/`tanh` ops, so fused and
/// composite paths agree to the last bit on the pointwise part).
pub(crate) trait Real:
    Element + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self>
{
    fn sigmoid(self) -> Self;
    fn tanh(self) -> Self;
    /// Columns per register tile of [`small_nn`] (four AVX-512 registers).
    const TILE: usize;
    #[allow(clippy::too_many_arguments)]
    fn nn_cols(
        a: &[Self],
        bt: &[Self],
        m: usize,
        n: usize,
        k: usize,
        out: &mut [Self],
        add: bool,
        lo: usize,
        hi: usize,
    );
}

impl Real for f32 {
    #[inline(always)]
    fn sigmoid(self) -> f32 {
        1.0 / (1.0 + super::math::exp_f32(-self))
    }
    #[inline(always)]
    fn tanh(self) -> f32 {
        super::math::tanh_f32(self)
    }
    const TILE: usize = 64;
    fn nn_cols(
        a: &[f32],
        bt: &[f32],
        m: usize,
        n: usize,
        k: usize,
        out: &mut [f32],
        add: bool,
        lo: usize,
        hi: usize,
    ) {
        nn_cols::<f32, 64>(a, bt, m, n, k, out, add, lo, hi)
    }
}

impl Real for f64 {
    #[inline(always)]
    fn sigmoid(self) -> f64 {
        1.0 / (1.0 + (-self).exp())
    }
    #[inline(always)]
    fn tanh(self) -> f64 {
        f64::tanh(self)
    }
    const TILE: usize = 32;
    fn nn_cols(
        a: &[f64],
        bt: &[f64],
        m: usize,
        n: usize,
        k: usize,
        out: &mut [f64],
        add: bool,
        lo: usize,
        hi: usize,
    ) {
        nn_cols::<f64, 32>(a, bt, m, n, k, out, add, lo, hi)
    }
}

/// `out[i0..i0+4, j0..j0+JB] (+)= a[i0..i0+4, :] @ bt[:, j0..j0+JB]`: a
/// register tile of 4 x JB accumulators (one AVX-512 register per 16 f32),
/// updated by broadcasting one element of `a` per row for each `k`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tile4<T: Real, const JB: usize>(
    a: &[T],
    bt: &[T],
    i0: usize,
    j0: usize,
    n: usize,
    k: usize,
    out: &mut [T],
    ldo: usize,
    oj: usize,
    add: bool,
) {
    let mut acc = [[T::zero(); JB]; 4];
    let (a0, a1, a2, a3) = (
        &a[i0 * k..(i0 + 1) * k],
        &a[(i0 + 1) * k..(i0 + 2) * k],
        &a[(i0 + 2) * k..(i0 + 3) * k],
        &a[(i0 + 3) * k..(i0 + 4) * k],
    );
    for kk in 0..k {
        let w: &[T; JB] = bt[kk * n + j0..kk * n + j0 + JB].try_into().unwrap();
        let (x0, x1, x2, x3) = (a0[kk], a1[kk], a2[kk], a3[kk]);
        for jj in 0..JB {
            acc[0][jj] = acc[0][jj] + x0 * w[jj];
            acc[1][jj] = acc[1][jj] + x1 * w[jj];
            acc[2][jj] = acc[2][jj] + x2 * w[jj];
            acc[3][jj] = acc[3][jj] + x3 * w[jj];
        }
    }
    for (r, acc_row) in acc.iter().enumerate() {
        let o = &mut out[(i0 + r) * ldo + oj..(i0 + r) * ldo + oj + JB];
        for jj in 0..JB {
            o[jj] = if add {
                o[jj] + acc_row[jj]
            } else {
                acc_row[jj]
            };
        }
    }
}

/// Columns `lo..hi` of `a[m, k] @ bt[k, n]`, written (or added) into
/// `out[m, hi - lo]`.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
#[allow(clippy::too_many_arguments)]
fn nn_cols<T: Real, const JB: usize>(
    a: &[T],
    bt: &[T],
    m: usize,
    n: usize,
    k: usize,
    out: &mut [T],
    add: bool,
    lo: usize,
    hi: usize,
) {
    let full_rows = m / 4 * 4;
    let mut j0 = lo;
    while j0 + JB <= hi {
        for i0 in (0..full_rows).step_by(4) {
            tile4::<T, JB>(a, bt, i0, j0, n, k, out, hi - lo, j0 - lo, add);
        }
        j0 += JB;
    }
    // Leftover rows and columns: plain sums.
    for i in 0..m {
        let cols = if i < full_rows { j0..hi } else { lo..hi };
        for j in cols {
            let mut sum = T::zero();
            for kk in 0..k {
                sum = sum + a[i * k + kk] * bt[kk * n + j];
            }
            let o = &mut out[i * (hi - lo) + j - lo];
            *o = if add { *o + sum } else { sum };
        }
    }
}

/// `out[m, n] (+)= a[m, k] @ bt[k, n]` for the small-`m` products of the
/// recurrence (m is the batch), where a general GEMM spends more time packing
/// an operand than multiplying. The columns are split across the pool.
pub(crate) fn small_nn<T: Real>(
    a: &[T],
    bt: &[T],
    m: usize,
    n: usize,
    k: usize,
    out: &mut [T],
    add: bool,
) {
    let jb = T::TILE;
    let parts = if m * n * k >= 1 << 16 && n >= 2 * jb {
        2
    } else {
        1
    };
    if parts == 1 {
        T::nn_cols(a, bt, m, n, k, out, add, 0, n);
        return;
    }
    let cols = n.div_ceil(parts).next_multiple_of(jb);
    let o = super::SendPtr(out.as_mut_ptr());
    super::parallel::tasks(n.div_ceil(cols), |p| {
        let (lo, hi) = (p * cols, ((p + 1) * cols).min(n));
        let w = hi - lo;
        // SAFETY: row `i`'s columns lo..hi of `out`: disjoint between tasks,
        // and `out` outlives the region.
        let row = |i: usize| unsafe { std::slice::from_raw_parts_mut(o.get().add(i * n + lo), w) };
        let mut part = vec![T::zero(); m * w];
        if add {
            for i in 0..m {
                part[i * w..(i + 1) * w].copy_from_slice(row(i));
            }
        }
        T::nn_cols(a, bt, m, n, k, &mut part, add, lo, hi);
        for i in 0..m {
            row(i).copy_from_slice(&part[i * w..(i + 1) * w]);
        }
    });
}

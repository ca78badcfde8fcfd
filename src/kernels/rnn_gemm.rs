//! Small matrix products for the recurrent steps: a step multiplies a few rows
//! of state (the batch) by the recurrent weight, too small for the GEMM crate's
//! packing to pay, so register-tiled loops over the transposed weight do it,
//! split by output columns across the pool. The float trait here also carries
//! the activations the fused gate passes in `rnn/` use.

use std::borrow::Cow;
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
    /// `self * a + b` rounded once: a single FMA instruction in the
    /// multiversioned loops (Rust never contracts `x * y + z` on its own, so
    /// written out it costs two instructions and halves a product's speed).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Columns per block of the packed weight and per unit of the split
    /// loops: four AVX-512 registers. On a machine without AVX-512 a block
    /// is worked in narrower sub-tiles ([`wide`]), so the layout and the results do not
    /// depend on the instruction set.
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

/// Whether the register tiles may span four 512-bit registers per row. With
/// 256-bit registers the same 4 x `TILE` tile would need all 32 accumulators
/// of which the machine has 16, and the compiler spills them to the stack on
/// every multiply-add (the LSTM step ran at half speed on AVX2), so there a
/// tile is two registers wide: 4 x 2 accumulators, a load and a broadcast.
fn wide() -> bool {
    super::small_gemm::isa() == super::small_gemm::Isa::Avx512
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
    #[inline(always)]
    fn mul_add(self, a: f32, b: f32) -> f32 {
        f32::mul_add(self, a, b)
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
        if wide() {
            nn_cols::<f32, 64>(a, bt, m, n, k, out, add, lo, hi)
        } else {
            nn_cols::<f32, 16>(a, bt, m, n, k, out, add, lo, hi)
        }
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
    #[inline(always)]
    fn mul_add(self, a: f64, b: f64) -> f64 {
        f64::mul_add(self, a, b)
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
        if wide() {
            nn_cols::<f64, 32>(a, bt, m, n, k, out, add, lo, hi)
        } else {
            nn_cols::<f64, 8>(a, bt, m, n, k, out, add, lo, hi)
        }
    }
}

/// `out[i0..i0+4, j0..j0+JB] (+)= a[i0..i0+4, :] @ bt[:, j0..j0+JB]`: a
/// register tile of 4 x JB accumulators (one vector register per 16 f32 on
/// AVX-512, per 8 on AVX2; JB follows [`wide`]), updated by broadcasting one element of `a` per row for each `k`.
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
            acc[0][jj] = x0.mul_add(w[jj], acc[0][jj]);
            acc[1][jj] = x1.mul_add(w[jj], acc[1][jj]);
            acc[2][jj] = x2.mul_add(w[jj], acc[2][jj]);
            acc[3][jj] = x3.mul_add(w[jj], acc[3][jj]);
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
        let mut part = crate::error::filled_vec(m * w, T::zero());
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

/// The right-hand operand `b[k, n]` of many small products with the same
/// weight, prepared once per sequence as blocks of [`Real::TILE`] columns: a
/// register tile streams one block, `k` rows of `TILE` contiguous elements.
/// A row-major `b` already is such blocks, `n` elements apart, and is read in
/// place; a transposed one is packed, each block `[k][TILE]` contiguous. The
/// last, partial block is copied zero-padded either way.
pub(crate) struct Packed<'a, T: Clone> {
    k: usize,
    n: usize,
    /// The whole blocks: block `b`, row `kk` starts at `b * block_step + kk * row_step`.
    full: Cow<'a, [T]>,
    row_step: usize,
    block_step: usize,
    /// The last block when `n` is not a multiple of `TILE`: `[k][TILE]`.
    tail: Vec<T>,
}

impl<'a, T: Real> Packed<'a, T> {
    /// `b` given row-major as `[k, n]`, read in place.
    pub(crate) fn from_rows(b: &'a [T], k: usize, n: usize) -> Packed<'a, T> {
        let jb = T::TILE;
        let whole = n / jb * jb;
        let mut tail = Vec::new();
        if whole < n {
            tail = crate::error::filled_vec(k * jb, T::zero());
            for (row, t) in b[..k * n].chunks_exact(n).zip(tail.chunks_exact_mut(jb)) {
                t[..n - whole].copy_from_slice(&row[whole..]);
            }
        }
        Packed {
            k,
            n,
            full: Cow::Borrowed(&b[..k * n]),
            row_step: n,
            block_step: jb,
            tail,
        }
    }

    /// `b = w^T` for `w` given row-major as `[n, k]` (the recurrent weight
    /// `[gates * H, H]` as the right operand of `h @ W^T`), packed.
    pub(crate) fn from_transposed(w: &[T], n: usize, k: usize) -> Packed<'a, T> {
        Packed::from_transposed_parts(&[(w, k)], n)
    }

    /// `b = [w_0 | w_1 | ...]^T` for weights `w_p` given row-major as `[n,
    /// k_p]`: their `k`s stacked, so `[x | h] @ [W_ih | W_hh]^T` is one
    /// product over `k_0 + k_1`.
    pub(crate) fn from_transposed_parts(parts: &[(&[T], usize)], n: usize) -> Packed<'a, T> {
        let jb = T::TILE;
        let k: usize = parts.iter().map(|p| p.1).sum();
        let blocks = n / jb;
        let mut full: Vec<T> = crate::error::alloc_vec(blocks * k * jb);
        // SAFETY: the loop below writes every element (each block's `k` rows
        // of `jb`) before anything reads them.
        unsafe { full.set_len(blocks * k * jb) };
        // Rows j0..j0 + G of each part at a time: a block row `kk` then gets G
        // contiguous elements, and the G source rows stream in order.
        const G: usize = 16;
        let pack = |blk: usize, dst: &mut [T]| {
            let mut row0 = 0;
            for &(w, kp) in parts {
                for g0 in (0..jb).step_by(G) {
                    let rows: [&[T]; G] = std::array::from_fn(|r| {
                        let j = blk * jb + g0 + r;
                        &w[j * kp..(j + 1) * kp]
                    });
                    let mine = &mut dst[row0 * jb..(row0 + kp) * jb];
                    for (kk, out) in mine.chunks_exact_mut(jb).enumerate() {
                        for (r, o) in out[g0..g0 + G].iter_mut().enumerate() {
                            *o = rows[r][kk];
                        }
                    }
                }
                row0 += kp;
            }
        };
        // The weights are packed on every call, before the loop can start:
        // large ones are shared across the pool, a block per task.
        let at = super::SendPtr(full.as_mut_ptr());
        // SAFETY: block `blk` of `full`; each block is written by one task.
        let block = |blk: usize| unsafe {
            std::slice::from_raw_parts_mut(at.get().add(blk * k * jb), k * jb)
        };
        if n * k >= super::GRAIN {
            super::parallel::tasks(blocks, |blk| pack(blk, block(blk)));
        } else {
            (0..blocks).for_each(|blk| pack(blk, block(blk)));
        }
        let mut tail = Vec::new();
        if blocks * jb < n {
            tail = crate::error::filled_vec(k * jb, T::zero());
            let mut row0 = 0;
            for &(w, kp) in parts {
                for j in blocks * jb..n {
                    for (kk, &v) in w[j * kp..(j + 1) * kp].iter().enumerate() {
                        tail[(row0 + kk) * jb + j - blocks * jb] = v;
                    }
                }
                row0 += kp;
            }
        }
        Packed {
            k,
            n,
            full: Cow::Owned(full),
            row_step: jb,
            block_step: k * jb,
            tail,
        }
    }
}

/// `out[i0..i0+R, j0..j0+JB] (+)= a[i0..i0+R, :] @ block`, `block` being
/// `k` rows of `JB` columns, `step` apart: R x JB accumulators in registers
/// (R = 4 and JB = 64 f32 are 16 AVX-512 registers; JB = 16 f32 are 8 AVX2
/// ones), one FMA per accumulator and `k`.
/// Every length in the loops is a constant and nothing takes the
/// accumulators' address, so they stay in registers.
///
/// # Safety
/// `a` must hold rows `i0..i0 + R` of length `k`, `block` `k * JB` elements,
/// and `out` rows `i0..i0 + R` of stride `ldo` with columns `j0..j0 + JB`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn packed_tile<T: Real, const R: usize, const JB: usize>(
    (a, is, ks): (*const T, usize, usize),
    i0: usize,
    k: usize,
    (block, step): (*const T, usize),
    out: *mut T,
    ldo: usize,
    j0: usize,
    add: bool,
) {
    let mut acc = [[T::zero(); JB]; R];
    if add {
        for (r, acc_row) in acc.iter_mut().enumerate() {
            let o = out.add((i0 + r) * ldo + j0);
            for (jj, v) in acc_row.iter_mut().enumerate() {
                *v = *o.add(jj);
            }
        }
    }
    let rows: [*const T; R] = std::array::from_fn(|r| a.add((i0 + r) * is));
    for kk in 0..k {
        let w = block.add(kk * step);
        for (acc_row, row) in acc.iter_mut().zip(&rows) {
            let x = *row.add(kk * ks);
            for (jj, v) in acc_row.iter_mut().enumerate() {
                *v = x.mul_add(*w.add(jj), *v);
            }
        }
    }
    for (r, acc_row) in acc.iter().enumerate() {
        let o = out.add((i0 + r) * ldo + j0);
        for (jj, &v) in acc_row.iter().enumerate() {
            *o.add(jj) = v;
        }
    }
}

/// Rows `0..m` of one column block of `JB` columns, in sub-tiles of `SW`
/// columns (`JB` on AVX-512, a quarter of it on AVX2: see [`wide`]) by 4
/// rows and one of the rest. Each output is the same chain of multiply-adds
/// whatever the tile, so the sub-tile width does not change a bit.
///
/// # Safety
/// As [`packed_tile`], for rows `0..m`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn packed_block<T: Real, const JB: usize, const SW: usize>(
    a: (*const T, usize, usize),
    m: usize,
    k: usize,
    (block, step): (*const T, usize),
    out: *mut T,
    ldo: usize,
    j0: usize,
    add: bool,
) {
    for sub in (0..JB).step_by(SW) {
        let (b, j) = ((block.add(sub), step), j0 + sub);
        let mut i0 = 0;
        while i0 + 4 <= m {
            packed_tile::<T, 4, SW>(a, i0, k, b, out, ldo, j, add);
            i0 += 4;
        }
        match m - i0 {
            3 => packed_tile::<T, 3, SW>(a, i0, k, b, out, ldo, j, add),
            2 => packed_tile::<T, 2, SW>(a, i0, k, b, out, ldo, j, add),
            1 => packed_tile::<T, 1, SW>(a, i0, k, b, out, ldo, j, add),
            _ => {}
        }
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn packed_mm_impl<T: Real, const JB: usize, const SW: usize>(
    (a, is, ks): (&[T], usize, usize),
    m: usize,
    b: &Packed<'_, T>,
    out: &mut [T],
    add: bool,
) {
    let (k, n) = (b.k, b.n);
    let full = n / JB;
    let reach =
        |blocks: usize| (blocks.max(1) - 1) * b.block_step + (k.max(1) - 1) * b.row_step + JB;
    assert!(a.len() > (m - 1) * is + (k - 1) * ks && out.len() >= m * n);
    assert!(full == 0 || b.full.len() >= reach(full));
    for blk in 0..full {
        // SAFETY: the asserts above cover rows 0..m and every whole block.
        unsafe {
            packed_block::<T, JB, SW>(
                (a.as_ptr(), is, ks),
                m,
                k,
                (b.full.as_ptr().add(blk * b.block_step), b.row_step),
                out.as_mut_ptr(),
                n,
                blk * JB,
                add,
            )
        };
    }
    let cols = n - full * JB;
    if cols > 0 {
        assert!(b.tail.len() >= k * JB);
        // The zero-padded last block goes through a full-width scratch, so
        // the tile keeps constant lengths.
        let mut tmp = crate::error::filled_vec(m * JB, T::zero());
        if add {
            for (t, o) in tmp.chunks_exact_mut(JB).zip(out.chunks_exact(n)) {
                t[..cols].copy_from_slice(&o[full * JB..]);
            }
        }
        // SAFETY: `tmp` is `[m, JB]`; the tail block is `[k][JB]` (asserted).
        unsafe {
            packed_block::<T, JB, SW>(
                (a.as_ptr(), is, ks),
                m,
                k,
                (b.tail.as_ptr(), JB),
                tmp.as_mut_ptr(),
                JB,
                0,
                add,
            )
        };
        for (t, o) in tmp.chunks_exact(JB).zip(out.chunks_exact_mut(n)) {
            o[full * JB..].copy_from_slice(&t[..cols]);
        }
    }
}

/// `out[m, n] (+)= a[m, k] @ b` on the calling thread, for the few rows of
/// state one task of a recurrent loop owns.
pub(crate) fn packed_mm<T: Real>(a: &[T], m: usize, b: &Packed<'_, T>, out: &mut [T], add: bool) {
    packed_mm_strided(a, m, (b.k, 1), b, out, add)
}

/// [`packed_mm`] with element `(i, kk)` of the left operand at `i * is + kk *
/// ks` of `a`: `(ks, 1)` reads `a` transposed.
pub(crate) fn packed_mm_strided<T: Real>(
    a: &[T],
    m: usize,
    (is, ks): (usize, usize),
    b: &Packed<'_, T>,
    out: &mut [T],
    add: bool,
) {
    if m == 0 || b.k == 0 {
        if !add {
            out[..m * b.n].fill(T::zero());
        }
        return;
    }
    let a = (a, is, ks);
    match (T::TILE, wide()) {
        (64, true) => packed_mm_impl::<T, 64, 64>(a, m, b, out, add),
        (64, false) => packed_mm_impl::<T, 64, 16>(a, m, b, out, add),
        (32, true) => packed_mm_impl::<T, 32, 32>(a, m, b, out, add),
        (32, false) => packed_mm_impl::<T, 32, 8>(a, m, b, out, add),
        _ => unreachable!("Real::TILE is 64 or 32"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(i: usize) -> f64 {
        ((i * 37 % 23) as f64 - 11.0) / 8.0 + (i % 7) as f64 * 0.013
    }

    /// `a @ b` as one FMA chain per element over `k` in order, the chain
    /// starting from `init` (the packed tiles) or from zero with `init` added
    /// after it (`nn_cols`): the rounding every tiling must reproduce.
    fn reference<T: Real>(
        (a, b): (&[T], &[T]),
        (m, k, n): (usize, usize, usize),
        init: &[T],
        from_init: bool,
    ) -> Vec<T> {
        let mut out = init.to_vec();
        for i in 0..m {
            for j in 0..n {
                let o = &mut out[i * n + j];
                let mut s = if from_init { *o } else { T::zero() };
                for p in 0..k {
                    s = a[i * k + p].mul_add(b[p * n + j], s);
                }
                *o = if from_init { s } else { *o + s };
            }
        }
        out
    }

    fn bits<T: Real>(v: &[T]) -> Vec<f64> {
        v.iter().map(|x| x.to_f64()).collect()
    }

    /// Both register tile widths (the AVX-512 one and the AVX2 quarter), on
    /// whatever machine runs the test, give the reference's bits, for whole
    /// and partial column blocks, row counts off the tile, and accumulation.
    fn widths_agree<T: Real>(from: fn(f64) -> T) {
        let jb = T::TILE;
        for &(m, k, n) in &[
            (1, 3, jb),
            (4, 17, 2 * jb),
            (7, 40, jb + 5),
            (8, 192, 4 * jb),
            (3, 1, 9),
        ] {
            let a: Vec<T> = (0..m * k).map(|i| from(val(i))).collect();
            let b: Vec<T> = (0..k * n).map(|i| from(val(i + 5))).collect();
            let w: Vec<T> = (0..n)
                .flat_map(|j| (0..k).map(move |p| (j, p)))
                .map(|(j, p)| b[p * n + j])
                .collect();
            let packed = Packed::from_transposed(&w, n, k);
            let in_place = Packed::from_rows(&b, k, n);
            for add in [false, true] {
                let init: Vec<T> = (0..m * n)
                    .map(|i| from(if add { val(i + 9) } else { 0.0 }))
                    .collect();
                let want = bits(&reference((&a, &b), (m, k, n), &init, true));
                let want_cols = bits(&reference((&a, &b), (m, k, n), &init, false));
                let run = |p: &Packed<'_, T>, narrow: bool| {
                    let mut out = init.clone();
                    let a = (&a[..], k, 1);
                    match (jb, narrow) {
                        (64, false) => packed_mm_impl::<T, 64, 64>(a, m, p, &mut out, add),
                        (64, true) => packed_mm_impl::<T, 64, 16>(a, m, p, &mut out, add),
                        (32, false) => packed_mm_impl::<T, 32, 32>(a, m, p, &mut out, add),
                        _ => packed_mm_impl::<T, 32, 8>(a, m, p, &mut out, add),
                    }
                    bits(&out)
                };
                for narrow in [false, true] {
                    assert_eq!(run(&packed, narrow), want, "packed {m}x{k}x{n} add={add}");
                    assert_eq!(run(&in_place, narrow), want, "rows {m}x{k}x{n} add={add}");
                }
                let cols = |narrow: bool| {
                    let mut out = init.clone();
                    match (jb, narrow) {
                        (64, false) => nn_cols::<T, 64>(&a, &b, m, n, k, &mut out, add, 0, n),
                        (64, true) => nn_cols::<T, 16>(&a, &b, m, n, k, &mut out, add, 0, n),
                        (32, false) => nn_cols::<T, 32>(&a, &b, m, n, k, &mut out, add, 0, n),
                        _ => nn_cols::<T, 8>(&a, &b, m, n, k, &mut out, add, 0, n),
                    }
                    bits(&out)
                };
                if m % 4 == 0 && n % jb == 0 {
                    // Elsewhere the leftover plain sums round each product
                    // before adding it, as they always have.
                    assert_eq!(cols(false), want_cols, "nn_cols {m}x{k}x{n} add={add}");
                }
                assert_eq!(
                    cols(true),
                    cols(false),
                    "nn_cols widths {m}x{k}x{n} add={add}"
                );
            }
        }
    }

    #[test]
    fn both_tile_widths_give_the_reference_bits() {
        widths_agree::<f32>(|v| v as f32);
        widths_agree::<f64>(|v| v);
    }
}

//! Running sums, products and extremes over one dimension of a contiguous
//! `[outer, n, inner]` block (`cumsum`, `cumprod`, `cummax`/`cummin` and
//! their gradients).
//!
//! With `inner == 1` each of the `outer` rows is scanned on its own (groups
//! of rows side by side, [`fold_rows`]); with `inner > 1` whole rows of
//! `inner` elements are combined with the previous result row, so memory
//! streams in order and the inner loop vectorises. Work is split over outer
//! positions and column blocks, so every element's scan runs in `j` order on
//! any thread count and the result does not depend on it.

mod extreme;
mod prod;

pub use extreme::cum_extreme;
pub use prod::{cumprod, cumprod_backward, cumprod_f32};

use super::{build_vec, par_ranges, SendPtr};
use crate::tensor::{Arith, Element};

/// Columns per unit when combining whole rows: a block of the running
/// result stays in L1 while the rows stream past.
const COLS: usize = 1024;

/// Calls `f(o, c0, c1)` for every outer position and column block, in
/// parallel above the grain size (each call owns its columns of `o`).
fn units(outer: usize, n: usize, inner: usize, f: impl Fn(usize, usize, usize) + Sync + Send) {
    let blocks = inner.div_ceil(COLS).max(1);
    crate::kernels::copy::par_units(outer * blocks, n * COLS.min(inner.max(1)), |lo, hi| {
        for u in lo..hi {
            let (o, b) = (u / blocks, u % blocks);
            f(o, b * COLS, ((b + 1) * COLS).min(inner));
        }
    });
}

/// The running sum along each contiguous row of `n` (from zero, in order;
/// with `rev` from the end of the row, the gradient of `cumsum`).
pub fn cumsum_rows<T: Arith>(data: &[T], rows: usize, n: usize, rev: bool) -> Vec<T> {
    fold_rows(data, rows, n, rev, T::zero(), |a, x| a.add(x))
}

/// Applies `f(row_in, row_out)` to each contiguous row (scans such as cumsum).
pub fn scan_rows<T: Element>(
    data: &[T],
    rows: usize,
    cols: usize,
    f: impl Fn(&[T], &mut [T]) + Sync,
) -> Vec<T> {
    if rows == 0 || cols == 0 {
        return Vec::new();
    }
    let mut out = crate::error::filled_vec(rows * cols, T::zero());
    let o = SendPtr(out.as_mut_ptr());
    par_ranges(rows * cols, |lo, hi| {
        let (r0, r1) = (lo / cols, hi.div_ceil(cols).min(rows));
        for r in r0..r1 {
            if r * cols < lo {
                continue;
            }
            // SAFETY: each row is owned by the one range holding its first element.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(r * cols), cols) };
            f(&data[r * cols..(r + 1) * cols], dst);
        }
    });
    out
}

/// Running sums down the middle dimension of a contiguous `[outer, n,
/// inner]` block (`cumsum` along a leading dimension): whole rows are added
/// to the previous result row, so memory streams in order and the adds
/// vectorise; each element's sum runs in `j` order, as the row scan's does
/// (with `rev`, from `j = n - 1` down: the gradient of `cumsum`).
pub fn scan_mid<T: Arith>(data: &[T], outer: usize, n: usize, inner: usize, rev: bool) -> Vec<T> {
    if outer == 0 || n == 0 || inner == 0 {
        // Empty, however large the other factors: no loop over them.
        return Vec::new();
    }
    build_vec(outer * n * inner, |out| {
        let o = SendPtr(out.as_mut_ptr().cast::<T>());
        units(outer, n, inner, |r, c0, c1| {
            for step in 0..n {
                let j = if rev { n - 1 - step } else { step };
                let at = (r * n + j) * inner;
                let x = &data[at + c0..at + c1];
                // SAFETY: the unit owns columns `c0..c1` of outer position `r`.
                let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(at + c0), c1 - c0) };
                if step == 0 {
                    dst.copy_from_slice(x);
                } else {
                    // The row written just before: `j - 1`, or `j + 1` in reverse.
                    let before = if rev { at + inner } else { at - inner };
                    let prev =
                        unsafe { std::slice::from_raw_parts(o.get().add(before + c0), c1 - c0) };
                    add_rows(dst, prev, x);
                }
            }
        });
    })
}

#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn add_rows<T: Arith>(d: &mut [T], a: &[T], b: &[T]) {
    for ((o, &x), &y) in d.iter_mut().zip(a).zip(b) {
        *o = x.add(y);
    }
}

/// Rows scanned together: each row's running value is a chain of dependent
/// operations (a float add waits ~4 cycles on the previous one), so `LANES`
/// rows advance side by side and their chains overlap. Every row still
/// combines its elements in order, so results equal a one-row scan.
const LANES: usize = 8;

/// Columns of a row group moved through a tile at a time.
const TILE: usize = 64;

/// A tile: `LANES` rows side by side, `[column][row]`.
type Tile<T> = [[T; LANES]; TILE];

/// `buf[c][l] = src[l * n + c]` for `c < w`, `l < LANES`: columns of `LANES`
/// rows of length `n` turned so that each column's rows sit together.
///
/// Scanning the rows in place instead reads (and writes) `LANES` streams
/// `n` elements apart; when `n` is a multiple of 1024 four-byte elements
/// they all fall in one set of the L1 cache, which holds eight lines, so
/// every access missed (`cumprod(dim=1)` of a 1024 x 1024 matrix ran at
/// half PyTorch's one-row speed). Vectors of whole rows are read instead
/// and turned in registers.
///
/// # Safety
/// `src` must be valid for reads of `LANES` rows of `n` elements from
/// column 0 to `w`, with `w <= TILE` and `w <= n`.
#[inline]
unsafe fn tile_in<T: Copy>(src: *const T, n: usize, w: usize, buf: &mut Tile<T>) {
    let mut c = 0;
    if let Some(side) = crate::kernels::transpose::block_side(std::mem::size_of::<T>()) {
        let b = buf.as_mut_ptr() as *mut T;
        while c + side <= w {
            for h in (0..LANES).step_by(side) {
                crate::kernels::transpose::block(
                    src.add(h * n + c),
                    n as isize,
                    b.add(c * LANES + h),
                    LANES,
                );
            }
            c += side;
        }
    }
    for (cc, col) in buf.iter_mut().enumerate().take(w).skip(c) {
        for (l, e) in col.iter_mut().enumerate() {
            *e = *src.add(l * n + cc);
        }
    }
}

/// [`tile_in`]'s inverse: `dst[l * n + c] = buf[c][l]` for `c < w`.
///
/// # Safety
/// `dst` must be valid for writes as `src` is for reads in [`tile_in`].
#[inline]
unsafe fn tile_out<T: Copy>(buf: &Tile<T>, w: usize, dst: *mut T, n: usize) {
    let mut c = 0;
    if let Some(side) = crate::kernels::transpose::block_side(std::mem::size_of::<T>()) {
        let b = buf.as_ptr() as *const T;
        while c + side <= w {
            for h in (0..LANES).step_by(side) {
                crate::kernels::transpose::block(
                    b.add(c * LANES + h),
                    LANES as isize,
                    dst.add(h * n + c),
                    n,
                );
            }
            c += side;
        }
    }
    for (cc, col) in buf.iter().enumerate().take(w).skip(c) {
        for (l, e) in col.iter().enumerate() {
            *dst.add(l * n + cc) = *e;
        }
    }
}

/// Runs `step(tile, w)` over `LANES` rows of length `n` from `src`, a tile
/// of `w` columns at a time in column order (from the last tile back with
/// `rev`), and writes each stepped tile to the same place in `dst`.
///
/// # Safety
/// `src` and `dst` must each hold `LANES` rows of `n` elements.
#[inline(always)]
unsafe fn tiled<T: Copy>(
    src: *const T,
    dst: *mut T,
    n: usize,
    rev: bool,
    mut step: impl FnMut(&mut Tile<T>, usize),
) {
    let mut buf = [[*src; LANES]; TILE];
    for t in 0..n.div_ceil(TILE) {
        let t = if rev { n.div_ceil(TILE) - 1 - t } else { t };
        let c0 = t * TILE;
        let w = TILE.min(n - c0);
        tile_in(src.add(c0), n, w, &mut buf);
        step(&mut buf, w);
        tile_out(&buf, w, dst.add(c0), n);
    }
}

/// `out[r][j] = f(out[r][j-1], x[r][j])` from `init`, for `rows` contiguous
/// rows of `n` (with `rev`, `out[r][j] = f(out[r][j+1], x[r][j])` from the
/// end), row groups spread over the pool.
fn fold_rows<T: Element>(
    data: &[T],
    rows: usize,
    n: usize,
    rev: bool,
    init: T,
    f: impl Fn(T, T) -> T + Sync + Send + Copy,
) -> Vec<T> {
    if rows == 0 || n == 0 {
        return Vec::new();
    }
    crate::kernels::build_vec(rows * n, |out| {
        let o = SendPtr(out.as_mut_ptr() as *mut T);
        let groups = rows.div_ceil(LANES);
        crate::kernels::copy::par_units(groups, n * LANES, |lo, hi| {
            for g in lo..hi {
                let (r0, r1) = (g * LANES, ((g + 1) * LANES).min(rows));
                if r1 - r0 == LANES {
                    let mut acc = [init; LANES];
                    // SAFETY: rows `r0..r1` lie inside `data` and the
                    // output, and only this unit writes them.
                    unsafe {
                        let (x, y) = (data.as_ptr().add(r0 * n), o.get().add(r0 * n));
                        let mut col = |col: &mut [T; LANES]| {
                            for (a, e) in acc.iter_mut().zip(col.iter_mut()) {
                                *a = f(*a, *e);
                                *e = *a;
                            }
                        };
                        tiled(x, y, n, rev, |t, w| {
                            if rev {
                                t.iter_mut().take(w).rev().for_each(&mut col);
                            } else {
                                t.iter_mut().take(w).for_each(&mut col);
                            }
                        });
                    }
                } else {
                    for r in r0..r1 {
                        let mut a = init;
                        for j in 0..n {
                            let j = if rev { n - 1 - j } else { j };
                            a = f(a, data[r * n + j]);
                            // SAFETY: as above.
                            unsafe { *o.get().add(r * n + j) = a };
                        }
                    }
                }
            }
        });
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_scans_cover_every_row_once() {
        let data: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
        let c = scan_rows(&data, 1000, 100, |a, b| {
            let mut acc = 0.0;
            for (x, y) in a.iter().zip(b.iter_mut()) {
                acc += x;
                *y = acc;
            }
        });
        for r in [0, 1, 517, 999] {
            let want: f64 = (r * 100..(r + 1) * 100).map(|i| i as f64).sum();
            assert_eq!(c[r * 100 + 99], want);
        }
    }

    /// Both layouts (row groups full and partial), one and two threads,
    /// forward and reversed sums, against a direct scan per column.
    #[test]
    fn scans_match_a_direct_loop() {
        for &(outer, n, inner) in &[
            (3, 7, 1),
            (17, 40, 1),
            (16, 300, 1),
            (2, 50, 2100),
            (1, 1, 5),
            (4, 9, 3),
            (8, 5, 1),
            (24, 1030, 1),
        ] {
            let x: Vec<f32> = (0..outer * n * inner)
                .map(|i| match i % 23 {
                    5 => f32::NAN,
                    k => ((k * 7) % 5) as f32 - 2.0,
                })
                .collect();
            for t in [1, 2] {
                crate::kernels::parallel::set_num_threads(t).unwrap();
                let p = cumprod(&x, outer, n, inner);
                let sums = cumsum_rows(&x, outer, n, false);
                let mids = scan_mid(&x, outer, n, inner, false);
                let back = scan_mid(&x, outer, n, inner, true);
                let (v, ix) = cum_extreme(&x, outer, n, inner, true);
                for o in 0..outer {
                    for c in 0..inner {
                        let (mut acc, mut best, mut at) = (1f32, f32::NAN, 0i64);
                        let mut total = 0f32;
                        for j in 0..n {
                            let k = (o * n + j) * inner + c;
                            acc *= x[k];
                            let e = x[k];
                            if j == 0 || e.is_nan() || (!best.is_nan() && e >= best) {
                                best = e;
                                at = j as i64;
                            }
                            total += x[k];
                            if inner == 1 {
                                let same = sums[k].to_bits() == total.to_bits();
                                assert!(same || (sums[k].is_nan() && total.is_nan()));
                            }
                            let same = mids[k].to_bits() == total.to_bits();
                            assert!(same || (mids[k].is_nan() && total.is_nan()));
                            let same = p[k].to_bits() == acc.to_bits();
                            assert!(same || (p[k].is_nan() && acc.is_nan()));
                            assert_eq!(v[k].to_bits(), best.to_bits());
                            assert_eq!(ix[k], at);
                        }
                        let mut total = 0f32;
                        for j in (0..n).rev() {
                            let k = (o * n + j) * inner + c;
                            total += x[k];
                            let same = back[k].to_bits() == total.to_bits();
                            assert!(same || (back[k].is_nan() && total.is_nan()));
                        }
                    }
                }
            }
        }
    }
}

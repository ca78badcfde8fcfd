//! Running products and running extremes over one dimension of a contiguous
//! `[outer, n, inner]` block.
//!
//! With `inner == 1` each of the `outer` rows is scanned on its own; with
//! `inner > 1` whole rows of `inner` elements are combined with the previous
//! result row, so memory streams in order and the inner loop vectorises
//! (no transpose, as `scan_mid` does for `cumsum`). Work is split over outer
//! positions and column blocks, so every element's scan runs in `j` order on
//! any thread count and the result does not depend on it.

use multiversion::multiversion;

use super::SendPtr;
use crate::tensor::{Arith, Element};

/// Columns per unit when combining whole rows: a block of the running
/// result stays in L1 while the rows stream past.
const COLS: usize = 1024;

/// Calls `f(o, c0, c1)` for every outer position and column block, in
/// parallel above the grain size (each call owns its columns of `o`).
fn units(outer: usize, n: usize, inner: usize, f: impl Fn(usize, usize, usize) + Sync + Send) {
    let blocks = inner.div_ceil(COLS).max(1);
    super::copy::par_units(outer * blocks, n * COLS.min(inner.max(1)), |lo, hi| {
        for u in lo..hi {
            let (o, b) = (u / blocks, u % blocks);
            f(o, b * COLS, ((b + 1) * COLS).min(inner));
        }
    });
}

/// The running product along `n` (each product taken in `j` order).
pub fn cumprod<T: Arith>(data: &[T], outer: usize, n: usize, inner: usize) -> Vec<T> {
    let total = outer * n * inner;
    if total == 0 {
        // Empty, however large the other factors: no loop over them.
        return Vec::new();
    }
    if inner == 1 {
        return fold_rows(data, outer, n, false, T::one(), |a, x| a.mul(x));
    }
    let mut out = crate::error::filled_vec(total, T::zero());
    let o = SendPtr(out.as_mut_ptr());
    units(outer, n, inner, |r, c0, c1| {
        let base = r * n * inner;
        for j in 0..n {
            let at = base + j * inner;
            let x = &data[at + c0..at + c1];
            // SAFETY: the unit owns columns `c0..c1` of outer position `r`.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(at + c0), c1 - c0) };
            if j == 0 {
                dst.copy_from_slice(x);
            } else {
                let prev =
                    unsafe { std::slice::from_raw_parts(o.get().add(at - inner + c0), c1 - c0) };
                mul_rows(dst, prev, x);
            }
        }
    });
    out
}

/// `cumprod` of float32 with a float64 running product, each prefix rounded
/// once to float32 (PyTorch's CPU scan accumulates so; a shrinking product
/// also stays clear of float32's subnormals). Reads float32 and writes
/// float32 directly: no float64 copy of the input or the output.
pub fn cumprod_f32(data: &[f32], outer: usize, n: usize, inner: usize) -> Vec<f32> {
    let total = outer * n * inner;
    if total == 0 {
        return Vec::new();
    }
    if inner == 1 {
        return super::build_vec(total, |out| {
            let o = SendPtr(out.as_mut_ptr() as *mut f32);
            let groups = outer.div_ceil(LANES);
            super::copy::par_units(groups, n * LANES, |lo, hi| {
                for g in lo..hi {
                    let (r0, r1) = (g * LANES, ((g + 1) * LANES).min(outer));
                    // SAFETY: rows `r0..r1` lie inside `data` and the output,
                    // and only this unit writes them.
                    unsafe {
                        if r1 - r0 == LANES {
                            let mut acc = [1f64; LANES];
                            tiled(
                                data.as_ptr().add(r0 * n),
                                o.get().add(r0 * n),
                                n,
                                false,
                                |t, w| {
                                    for col in t.iter_mut().take(w) {
                                        for (a, e) in acc.iter_mut().zip(col.iter_mut()) {
                                            *a *= f64::from(*e);
                                            *e = *a as f32;
                                        }
                                    }
                                },
                            );
                            continue;
                        }
                        for r in r0..r1 {
                            let mut a = 1f64;
                            for at in r * n..(r + 1) * n {
                                a *= f64::from(*data.get_unchecked(at));
                                *o.get().add(at) = a as f32;
                            }
                        }
                    }
                }
            });
        });
    }
    let mut out = crate::error::filled_vec(total, 0f32);
    let o = SendPtr(out.as_mut_ptr());
    units(outer, n, inner, |r, c0, c1| {
        let w = c1 - c0;
        let mut acc = vec![1f64; w];
        let base = r * n * inner;
        for j in 0..n {
            let at = base + j * inner + c0;
            // SAFETY: the unit owns columns `c0..c1` of outer position `r`.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(at), w) };
            mul_acc_f32(&mut acc, &data[at..at + w], dst);
        }
    });
    out
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn mul_acc_f32(acc: &mut [f64], x: &[f32], out: &mut [f32]) {
    for ((a, &x), o) in acc.iter_mut().zip(x).zip(out) {
        *a *= f64::from(x);
        *o = *a as f32;
    }
}

/// The gradient of `out = cumprod(x)` along `n` given `g`, exact where
/// inputs are zero and with no division: with `r[k] = g[k] + x[k+1] r[k+1]`
/// (a reversed linear scan, `r[n-1] = g[n-1]`), the gradient of `x[k]` is
/// `out[k-1] r[k]` (`r[0]` for the first). Each element's scan runs in
/// reverse `j` order on any thread count.
pub fn cumprod_backward<T: Arith>(
    x: &[T],
    out: &[T],
    g: &[T],
    outer: usize,
    n: usize,
    inner: usize,
) -> Vec<T> {
    let total = outer * n * inner;
    if total == 0 {
        return Vec::new();
    }
    let mut gx = crate::error::filled_vec(total, T::zero());
    let o = SendPtr(gx.as_mut_ptr());
    if inner == 1 {
        // Rows side by side, so the dependent multiply-add chains overlap.
        let groups = outer.div_ceil(LANES);
        super::copy::par_units(groups, n * LANES, |lo, hi| {
            for grp in lo..hi {
                let (r0, r1) = (grp * LANES, ((grp + 1) * LANES).min(outer));
                let mut acc = [T::zero(); LANES];
                for j in (0..n).rev() {
                    for (l, a) in acc.iter_mut().enumerate().take(r1 - r0) {
                        let at = (r0 + l) * n + j;
                        // SAFETY: `at` is inside row `r0 + l` of this group,
                        // which only this unit writes.
                        unsafe {
                            let gj = *g.get_unchecked(at);
                            *a = if j + 1 == n {
                                gj
                            } else {
                                gj.add(x.get_unchecked(at + 1).mul(*a))
                            };
                            *o.get().add(at) = if j == 0 {
                                *a
                            } else {
                                out.get_unchecked(at - 1).mul(*a)
                            };
                        }
                    }
                }
            }
        });
        return gx;
    }
    units(outer, n, inner, |r, c0, c1| {
        let w = c1 - c0;
        let mut acc = crate::error::filled_vec(w, T::zero());
        let base = r * n * inner;
        for j in (0..n).rev() {
            let at = base + j * inner + c0;
            if j + 1 == n {
                acc.copy_from_slice(&g[at..at + w]);
            } else {
                fma_rows(&mut acc, &g[at..at + w], &x[at + inner..at + inner + w]);
            }
            // SAFETY: the unit owns columns `c0..c1` of outer position `r`.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(at), w) };
            if j == 0 {
                dst.copy_from_slice(&acc);
            } else {
                mul_rows(dst, &out[at - inner..at - inner + w], &acc);
            }
        }
    });
    gx
}

/// `acc = g + x * acc`, elementwise (rounded after each operation).
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn fma_rows<T: Arith>(acc: &mut [T], g: &[T], x: &[T]) {
    for ((a, &g), &x) in acc.iter_mut().zip(g).zip(x) {
        *a = g.add(x.mul(*a));
    }
}

/// The running sum along each contiguous row of `n` (from zero, in order;
/// with `rev` from the end of the row, the gradient of `cumsum`).
pub fn cumsum_rows<T: Arith>(data: &[T], rows: usize, n: usize, rev: bool) -> Vec<T> {
    fold_rows(data, rows, n, rev, T::zero(), |a, x| a.add(x))
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
    if let Some(side) = super::transpose::block_side(std::mem::size_of::<T>()) {
        let b = buf.as_mut_ptr() as *mut T;
        while c + side <= w {
            for h in (0..LANES).step_by(side) {
                super::transpose::block(
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
    if let Some(side) = super::transpose::block_side(std::mem::size_of::<T>()) {
        let b = buf.as_ptr() as *const T;
        while c + side <= w {
            for h in (0..LANES).step_by(side) {
                super::transpose::block(
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
    super::build_vec(rows * n, |out| {
        let o = SendPtr(out.as_mut_ptr() as *mut T);
        let groups = rows.div_ceil(LANES);
        super::copy::par_units(groups, n * LANES, |lo, hi| {
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

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn mul_rows<T: Arith>(d: &mut [T], a: &[T], b: &[T]) {
    for ((o, &x), &y) in d.iter_mut().zip(a).zip(b) {
        *o = x.mul(y);
    }
}

/// Whether `x` replaces the running extreme `best`: PyTorch's rule, where an
/// equal value also moves the index forward (`>=`/`<=`), a NaN always wins,
/// and a NaN kept is only replaced by a later NaN (so the index follows the
/// last NaN). Integers are never NaN (`x != x` is false).
#[inline(always)]
#[allow(clippy::eq_op)]
fn takes<T: Element>(x: T, best: T, is_max: bool) -> bool {
    let ge = if is_max { x >= best } else { x <= best };
    x != x || (best == best && ge)
}

/// The running maximum (or minimum) along `n` and the index it came from.
pub fn cum_extreme<T: Element>(
    data: &[T],
    outer: usize,
    n: usize,
    inner: usize,
    is_max: bool,
) -> (Vec<T>, Vec<i64>) {
    let total = outer * n * inner;
    if total == 0 {
        return (Vec::new(), Vec::new());
    }
    if inner == 1 {
        let mut idx: Vec<i64> = Vec::new();
        let vals = super::build_vec(total, |vals| {
            idx = super::build_vec(total, |idx| {
                extreme_of_rows(data, vals, idx, outer, n, is_max)
            });
        });
        return (vals, idx);
    }
    let mut vals = crate::error::filled_vec(total, T::zero());
    let mut idx = crate::error::zeroed_vec::<i64>(total);
    let (vp, ip) = (SendPtr(vals.as_mut_ptr()), SendPtr(idx.as_mut_ptr()));
    units(outer, n, inner, |r, c0, c1| {
        let (vp, ip) = (vp, ip);
        let base = r * n * inner;
        let w = c1 - c0;
        for j in 0..n {
            let at = base + j * inner + c0;
            let x = &data[at..at + w];
            // SAFETY: the unit owns columns `c0..c1` of outer position `r`.
            let (v, ix) = unsafe {
                (
                    std::slice::from_raw_parts_mut(vp.get().add(at), w),
                    std::slice::from_raw_parts_mut(ip.get().add(at), w),
                )
            };
            if j == 0 {
                v.copy_from_slice(x);
                continue;
            }
            let (pv, pi) = unsafe {
                (
                    std::slice::from_raw_parts(vp.get().add(at - inner), w),
                    std::slice::from_raw_parts(ip.get().add(at - inner), w),
                )
            };
            extreme_rows(v, ix, pv, pi, x, j as i64, is_max);
        }
    });
    (vals, idx)
}

/// The running extreme and its index along each of `rows` contiguous rows
/// of `n`, into `vals` and `idx` (every element written).
///
/// Two rows at a time, each one's running extreme and index in registers:
/// the rows' compare-select chains overlap. Not more: the rows' inputs,
/// values and indices are 4 or 8 KiB apart for rows of 1024, so they all
/// fall into one set of the L1 cache, which holds eight lines; four rows
/// made twelve such streams and most accesses missed (0.7x PyTorch's
/// one-row loop), two make six.
fn extreme_of_rows<T: Element>(
    data: &[T],
    vals: &mut [std::mem::MaybeUninit<T>],
    idx: &mut [std::mem::MaybeUninit<i64>],
    rows: usize,
    n: usize,
    is_max: bool,
) {
    const ROWS: usize = 2;
    let (vp, ip) = (
        SendPtr(vals.as_mut_ptr().cast::<T>()),
        SendPtr(idx.as_mut_ptr().cast::<i64>()),
    );
    let groups = rows.div_ceil(ROWS);
    super::copy::par_units(groups, n * ROWS, |lo, hi| {
        let (vp, ip) = (vp, ip);
        for g in lo..hi {
            let (r0, r1) = (g * ROWS, ((g + 1) * ROWS).min(rows));
            let x = &data[r0 * n..r1 * n];
            // SAFETY: rows `r0..r1` of the results belong to this unit only,
            // and are written, not read.
            unsafe {
                let (v, ix) = (vp.get().add(r0 * n), ip.get().add(r0 * n));
                match (r1 - r0 == ROWS, is_max) {
                    (true, true) => scan_rows::<T, ROWS, true>(x, v, ix, n),
                    (true, false) => scan_rows::<T, ROWS, false>(x, v, ix, n),
                    (false, true) => scan_rows::<T, 1, true>(x, v, ix, n),
                    (false, false) => scan_rows::<T, 1, false>(x, v, ix, n),
                }
            }
        }
    });
}

/// The running extreme of `R` consecutive rows of length `n` (`x`) at once,
/// into `v` and `ix`.
///
/// # Safety
/// `v` and `ix` must be valid for writes of `R * n` elements.
#[inline(always)]
unsafe fn scan_rows<T: Element, const R: usize, const MAX: bool>(
    x: &[T],
    v: *mut T,
    ix: *mut i64,
    n: usize,
) {
    assert!(x.len() == R * n && n > 0);
    let mut best: [T; R] = std::array::from_fn(|r| x[r * n]);
    let mut at = [0i64; R];
    for j in 0..n {
        for r in 0..R {
            let p = r * n + j;
            let e = *x.get_unchecked(p);
            // Selects, not a branch: on unordered data the outcome is
            // unpredictable.
            let t = takes(e, best[r], MAX);
            best[r] = if t { e } else { best[r] };
            at[r] = if t { j as i64 } else { at[r] };
            *v.add(p) = best[r];
            *ix.add(p) = at[r];
        }
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn extreme_rows<T: Element>(
    v: &mut [T],
    ix: &mut [i64],
    pv: &[T],
    pi: &[i64],
    x: &[T],
    j: i64,
    is_max: bool,
) {
    for (((v, i), (&p, &q)), &x) in v.iter_mut().zip(ix).zip(pv.iter().zip(pi)).zip(x) {
        let t = takes(x, p, is_max);
        *v = if t { x } else { p };
        *i = if t { j } else { q };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both layouts (row groups full and partial), one and two threads,
    /// against a direct scan per column.
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
                            let same = p[k].to_bits() == acc.to_bits();
                            assert!(same || (p[k].is_nan() && acc.is_nan()));
                            assert_eq!(v[k].to_bits(), best.to_bits());
                            assert_eq!(ix[k], at);
                        }
                    }
                }
            }
        }
    }

    /// The running minimum and maximum, rows in full groups and a tail,
    /// against a direct scan (ties move the index, NaN wins and stays).
    #[test]
    fn extremes_of_rows_match_a_direct_scan() {
        for &(outer, n) in &[(1, 1), (3, 5), (4, 9), (9, 33), (13, 2), (8, 3), (17, 200)] {
            let x: Vec<f32> = (0..outer * n)
                .map(|i| match i % 19 {
                    7 => f32::NAN,
                    k => ((k * 5) % 7) as f32 - 3.0,
                })
                .collect();
            for is_max in [true, false] {
                let (v, ix) = cum_extreme(&x, outer, n, 1, is_max);
                for o in 0..outer {
                    let (mut best, mut at) = (x[o * n], 0i64);
                    for j in 0..n {
                        let e = x[o * n + j];
                        let moves = if is_max { e >= best } else { e <= best };
                        if e.is_nan() || (!best.is_nan() && moves) {
                            best = e;
                            at = j as i64;
                        }
                        assert_eq!(
                            v[o * n + j].to_bits(),
                            best.to_bits(),
                            "{outer} {n} {o} {j}"
                        );
                        assert_eq!(ix[o * n + j], at, "{outer} {n} {o} {j}");
                    }
                }
            }
        }
    }

    /// The backward kernel against the product rule written out (no
    /// division), with zeros first, last, repeated and everywhere, on both
    /// layouts and thread counts.
    #[test]
    fn cumprod_backward_matches_the_product_rule() {
        for &(outer, n, inner) in &[(5, 6, 1), (17, 9, 1), (2, 7, 1100), (3, 1, 4), (1, 5, 3)] {
            let x: Vec<f64> = (0..outer * n * inner)
                .map(|i| match i % 11 {
                    0 | 4 => 0.0,
                    k => k as f64 / 4.0 - 1.3,
                })
                .collect();
            let g: Vec<f64> = (0..x.len()).map(|i| ((i * 5) % 7) as f64 - 3.0).collect();
            let out = cumprod(&x, outer, n, inner);
            for t in [1, 2] {
                crate::kernels::parallel::set_num_threads(t).unwrap();
                let gx = cumprod_backward(&x, &out, &g, outer, n, inner);
                for o in 0..outer {
                    for c in 0..inner {
                        let at = |j: usize| (o * n + j) * inner + c;
                        for k in 0..n {
                            let mut want = 0.0;
                            for j in k..n {
                                let mut p = g[at(j)];
                                for i in (0..=j).filter(|&i| i != k) {
                                    p *= x[at(i)];
                                }
                                want += p;
                            }
                            let got = gx[at(k)];
                            assert!(
                                (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                                "{got} {want}"
                            );
                        }
                    }
                }
            }
        }
        let f: Vec<f32> = (0..8 * 2100).map(|i| 0.5 + (i % 9) as f32 / 8.0).collect();
        for &(outer, n, inner) in &[(3, 2100, 1), (1, 3, 2100), (8, 2100, 1), (19, 70, 1)] {
            let wide: Vec<f64> = f.iter().map(|&v| f64::from(v)).collect();
            let want: Vec<f32> = cumprod(&wide, outer, n, inner)
                .iter()
                .map(|&v| v as f32)
                .collect();
            let got = cumprod_f32(&f, outer, n, inner);
            assert!(got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }
}

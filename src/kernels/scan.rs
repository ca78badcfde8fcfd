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
        return fold_rows(data, outer, n, T::one(), |a, x| a.mul(x));
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

/// The running sum along each contiguous row of `n` (from zero, in order).
pub fn cumsum_rows<T: Arith>(data: &[T], rows: usize, n: usize) -> Vec<T> {
    fold_rows(data, rows, n, T::zero(), |a, x| a.add(x))
}

/// Rows scanned together: each row's running value is a chain of dependent
/// operations (a float add waits ~4 cycles on the previous one), so `LANES`
/// rows advance side by side and their chains overlap. Every row still
/// combines its elements in order, so results equal a one-row scan.
const LANES: usize = 8;

/// `out[r][j] = f(out[r][j-1], x[r][j])` from `init`, for `rows` contiguous
/// rows of `n`, row groups spread over the pool.
fn fold_rows<T: Element>(
    data: &[T],
    rows: usize,
    n: usize,
    init: T,
    f: impl Fn(T, T) -> T + Sync + Send + Copy,
) -> Vec<T> {
    if rows == 0 || n == 0 {
        return Vec::new();
    }
    let mut out = crate::error::filled_vec(rows * n, T::zero());
    let o = SendPtr(out.as_mut_ptr());
    let groups = rows.div_ceil(LANES);
    super::copy::par_units(groups, n * LANES, |lo, hi| {
        for g in lo..hi {
            let (r0, r1) = (g * LANES, ((g + 1) * LANES).min(rows));
            if r1 - r0 == LANES {
                let mut acc = [init; LANES];
                for j in 0..n {
                    for (l, a) in acc.iter_mut().enumerate() {
                        let at = (r0 + l) * n + j;
                        // SAFETY: `at` is inside row `r0 + l` of this group,
                        // which only this unit writes.
                        unsafe {
                            *a = f(*a, *data.get_unchecked(at));
                            *o.get().add(at) = *a;
                        }
                    }
                }
            } else {
                for r in r0..r1 {
                    let mut a = init;
                    for j in 0..n {
                        a = f(a, data[r * n + j]);
                        // SAFETY: as above.
                        unsafe { *o.get().add(r * n + j) = a };
                    }
                }
            }
        }
    });
    out
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
    let mut vals = crate::error::filled_vec(total, T::zero());
    let mut idx = crate::error::zeroed_vec::<i64>(total);
    let (vp, ip) = (SendPtr(vals.as_mut_ptr()), SendPtr(idx.as_mut_ptr()));
    if inner == 1 {
        // Rows side by side, as `fold_rows` does: each row's compare chain
        // overlaps the others'.
        let groups = outer.div_ceil(LANES);
        super::copy::par_units(groups, n * LANES, |lo, hi| {
            let (vp, ip) = (vp, ip);
            for g in lo..hi {
                let (r0, r1) = (g * LANES, ((g + 1) * LANES).min(outer));
                let mut best = [T::zero(); LANES];
                let mut at = [0i64; LANES];
                for (l, b) in best.iter_mut().enumerate().take(r1 - r0) {
                    *b = data[(r0 + l) * n];
                }
                for j in 0..n {
                    for l in 0..r1 - r0 {
                        let p = (r0 + l) * n + j;
                        // SAFETY: `p` is inside row `r0 + l` of this group,
                        // which only this unit writes.
                        unsafe {
                            let x = *data.get_unchecked(p);
                            // Selects, not a branch: on unordered data the
                            // outcome is unpredictable.
                            let t = takes(x, best[l], is_max);
                            best[l] = if t { x } else { best[l] };
                            at[l] = if t { j as i64 } else { at[l] };
                            *vp.get().add(p) = best[l];
                            *ip.get().add(p) = at[l];
                        }
                    }
                }
            }
        });
        return (vals, idx);
    }
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
                let sums = cumsum_rows(&x, outer, n);
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
}

//! The running maximum or minimum (`cummax`, `cummin`) and the index it
//! came from.

use multiversion::multiversion;

use super::{units, SendPtr};
use crate::tensor::Element;

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
        let vals = crate::kernels::build_vec(total, |vals| {
            idx = crate::kernels::build_vec(total, |idx| {
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
    crate::kernels::copy::par_units(groups, n * ROWS, |lo, hi| {
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
}

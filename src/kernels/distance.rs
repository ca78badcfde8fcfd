//! Distances between every pair of rows of one `n x m` matrix (`pdist`):
//! the upper triangle of the distance matrix, row by row, and the gradient
//! of those distances. One pass over the pairs, with no `pairs x m`
//! difference matrix in memory.

use super::{par_ranges, SendPtr};
use crate::tensor::{Element, Float};
use multiversion::multiversion;

/// The norms with loops of their own; `P` is any other positive power.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Norm {
    Zero,
    One,
    Two,
    Inf,
    P(f64),
}

impl Norm {
    pub fn of(p: f64) -> Norm {
        match p {
            0.0 => Norm::Zero,
            1.0 => Norm::One,
            2.0 => Norm::Two,
            p if p.is_infinite() => Norm::Inf,
            p => Norm::P(p),
        }
    }
}

/// The number of pairs `i < j` of `n` rows.
pub fn pairs(n: usize) -> usize {
    n * n.saturating_sub(1) / 2
}

/// The index of pair `(i, i + 1)`: the pairs of the rows before `i` come first.
fn first_pair(i: usize, n: usize) -> usize {
    i * (2 * n - i - 1) / 2
}

/// The pair `(i, j)` at index `k` of the row-by-row order.
fn pair_at(k: usize, n: usize) -> (usize, usize) {
    // A guess from the closed form, then corrected: float rounding can put
    // it one row off either way.
    let nf = n as f64;
    let disc = ((2.0 * nf - 1.0) * (2.0 * nf - 1.0) - 8.0 * k as f64).max(0.0);
    let mut i = (((2.0 * nf - 1.0) - disc.sqrt()) / 2.0).floor().max(0.0) as usize;
    i = i.min(n.saturating_sub(2));
    while i > 0 && first_pair(i, n) > k {
        i -= 1;
    }
    while i + 1 < n.saturating_sub(1) && first_pair(i + 1, n) <= k {
        i += 1;
    }
    (i, i + 1 + k - first_pair(i, n))
}

/// Lanes of partial sums: enough independent chains to fill the vector units.
const LANES: usize = 16;

/// `sum f(a_k - b_k)` over two rows, in `LANES` partial sums folded in a
/// fixed order, so the result does not depend on which task computed it.
/// Whole blocks go through fixed-size arrays: over `chunks_exact` the
/// partial sums stayed in scalar and 4-lane registers.
#[inline(always)]
fn lane_sum<T: Float>(a: &[T], b: &[T], f: impl Fn(T) -> T) -> T {
    let mut acc = [<T as Element>::zero(); LANES];
    let n = a.len().min(b.len());
    let full = n / LANES * LANES;
    let (a, b) = (&a[..n], &b[..n]);
    let mut i = 0;
    while i < full {
        let (x, y): (&[T; LANES], &[T; LANES]) =
            match (a[i..i + LANES].try_into(), b[i..i + LANES].try_into()) {
                (Ok(x), Ok(y)) => (x, y),
                _ => break,
            };
        for k in 0..LANES {
            acc[k] += f(x[k] - y[k]);
        }
        i += LANES;
    }
    for (k, j) in (i..n).enumerate() {
        acc[k % LANES] += f(a[j] - b[j]);
    }
    fold_lanes(acc)
}

/// The lanes' sum, halving pairwise: the order both loops above share, so
/// their bits agree.
#[inline(always)]
fn fold_lanes<T: Float>(mut acc: [T; LANES]) -> T {
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for k in 0..w {
            acc[k] += acc[k + w];
        }
    }
    acc[0]
}

/// The `p`-norm of `a - b`.
#[inline(always)]
fn dist<T: Float>(a: &[T], b: &[T], p: Norm) -> T {
    let zero = <T as Element>::zero();
    match p {
        Norm::Zero => lane_sum(a, b, |d| {
            if d != zero {
                <T as Element>::one()
            } else {
                zero
            }
        }),
        Norm::One => lane_sum(a, b, |d| d.abs()),
        Norm::Two => lane_sum(a, b, |d| d * d).sqrt(),
        Norm::Inf => a.iter().zip(b).fold(zero, |m, (&x, &y)| {
            let d = (x - y).abs();
            // A NaN difference makes the distance NaN, as PyTorch's max does.
            if d > m || d.is_nan() {
                d
            } else {
                m
            }
        }),
        Norm::P(p) => {
            let pt = <T as Element>::from_f64(p);
            lane_sum(a, b, |d| d.abs().powf(pt)).powf(<T as Element>::one() / pt)
        }
    }
}

/// [`lane_sum`] of `|a - b|` (`SQUARE` false) or `(a - b)^2` for float32 on
/// AVX-512: the same sixteen partial sums, added and folded in the same
/// order, so the bits are the portable loop's. The loop vectoriser kept
/// that loop in 4-lane registers here.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq")]
unsafe fn lane_sum_f32_avx512<const SQUARE: bool>(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let mut acc = _mm512_setzero_ps();
    let mut i = 0;
    while i < n {
        let m = ((1u32 << (n - i).min(LANES)) - 1) as __mmask16;
        let d = _mm512_sub_ps(
            _mm512_maskz_loadu_ps(m, a.as_ptr().add(i)),
            _mm512_maskz_loadu_ps(m, b.as_ptr().add(i)),
        );
        let t = if SQUARE {
            _mm512_mul_ps(d, d)
        } else {
            _mm512_abs_ps(d)
        };
        acc = _mm512_add_ps(acc, t);
        i += LANES;
    }
    let mut lanes = [0f32; LANES];
    _mm512_storeu_ps(lanes.as_mut_ptr(), acc);
    fold_lanes(lanes)
}

/// The distances of the pairs `lo..hi` into `out`.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn pair_range<T: Float>(x: &[T], n: usize, m: usize, p: Norm, lo: usize, out: &mut [T]) {
    let (mut i, mut j) = pair_at(lo, n);
    #[cfg(target_arch = "x86_64")]
    let avx512 = T::DTYPE == crate::tensor::DType::F32
        && matches!(p, Norm::One | Norm::Two)
        && crate::kernels::vmath::isa() == crate::kernels::vmath::Isa::Avx512;
    for o in out.iter_mut() {
        let (a, b) = (&x[i * m..(i + 1) * m], &x[j * m..(j + 1) * m]);
        #[cfg(target_arch = "x86_64")]
        if avx512 {
            // SAFETY: `T` is `f32` and the CPU has AVX-512 (checked above).
            let (a, b) = unsafe {
                (
                    std::slice::from_raw_parts(a.as_ptr().cast::<f32>(), m),
                    std::slice::from_raw_parts(b.as_ptr().cast::<f32>(), m),
                )
            };
            let v = unsafe {
                match p {
                    Norm::Two => lane_sum_f32_avx512::<true>(a, b).sqrt(),
                    _ => lane_sum_f32_avx512::<false>(a, b),
                }
            };
            *o = <T as Element>::from_f64(v as f64);
            j += 1;
            if j == n {
                i += 1;
                j = i + 1;
            }
            continue;
        }
        *o = dist(a, b, p);
        j += 1;
        if j == n {
            i += 1;
            j = i + 1;
        }
    }
}

/// `pdist` of the row-major `n x m` matrix `x`: the `p`-norm distance of
/// rows `i < j`, pair `(i, j)` at `i (2n - i - 1) / 2 + j - i - 1`.
pub fn pdist<T: Float>(x: &[T], n: usize, m: usize, p: Norm) -> Vec<T> {
    let total = pairs(n);
    let mut out: Vec<T> = crate::error::filled_vec(total, <T as Element>::zero());
    let o = SendPtr(out.as_mut_ptr());
    // Work per pair is `m`; the parallel split counts elements, not pairs.
    let per = m.max(1);
    par_ranges(total * per, |a, b| {
        let (lo, hi) = (a.div_ceil(per), b.div_ceil(per).min(total));
        if lo >= hi {
            return;
        }
        // SAFETY: the ranges of pairs are disjoint and inside `out`.
        let part = unsafe { std::slice::from_raw_parts_mut(o.get().add(lo), hi - lo) };
        pair_range(x, n, m, p, lo, part);
    });
    out
}

/// The gradient of `pdist` with respect to `x`: row `i` gathers, over every
/// other row `j`, `g_ij` times the derivative of `|x_i - x_j|_p`, as
/// PyTorch's `_pdist_backward` defines it (zero where the distance is zero;
/// for `p < 1`, also where a coordinate's difference is). Each row is one
/// task's alone, so nothing is added concurrently.
pub fn pdist_backward<T: Float>(g: &[T], x: &[T], d: &[T], n: usize, m: usize, p: Norm) -> Vec<T> {
    let mut out: Vec<T> = crate::error::filled_vec(n * m, <T as Element>::zero());
    if matches!(p, Norm::Zero) || n < 2 {
        return out;
    }
    let o = SendPtr(out.as_mut_ptr());
    let per = (n * m).max(1);
    par_ranges(n * per, |a, b| {
        let (lo, hi) = (a.div_ceil(per), b.div_ceil(per).min(n));
        for i in lo..hi {
            // SAFETY: row `i` of `out` belongs to this range alone.
            let row = unsafe { std::slice::from_raw_parts_mut(o.get().add(i * m), m) };
            grad_row(g, x, d, n, m, p, i, row);
        }
    });
    out
}

/// Row `i` of [`pdist_backward`].
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
#[allow(clippy::too_many_arguments)]
fn grad_row<T: Float>(
    g: &[T],
    x: &[T],
    d: &[T],
    n: usize,
    m: usize,
    p: Norm,
    i: usize,
    row: &mut [T],
) {
    let zero = <T as Element>::zero();
    let xi = &x[i * m..(i + 1) * m];
    for j in 0..n {
        if j == i {
            continue;
        }
        let k = if i < j {
            first_pair(i, n) + j - i - 1
        } else {
            first_pair(j, n) + i - j - 1
        };
        let (gk, dk) = (g[k], d[k]);
        if dk == zero {
            continue;
        }
        let xj = &x[j * m..(j + 1) * m];
        match p {
            Norm::Zero => {}
            Norm::One => {
                for ((r, &a), &b) in row.iter_mut().zip(xi).zip(xj) {
                    *r += signum(a - b) * gk;
                }
            }
            Norm::Two => {
                let s = gk / dk;
                for ((r, &a), &b) in row.iter_mut().zip(xi).zip(xj) {
                    *r += (a - b) * s;
                }
            }
            Norm::Inf => {
                for ((r, &a), &b) in row.iter_mut().zip(xi).zip(xj) {
                    let diff = a - b;
                    let hit = if diff.abs() == dk { gk } else { zero };
                    *r += signum(diff) * hit;
                }
            }
            Norm::P(pv) => {
                let pm1 = <T as Element>::from_f64(pv - 1.0);
                let s = gk / dk.powf(pm1);
                let below_one = pv < 1.0;
                for ((r, &a), &b) in row.iter_mut().zip(xi).zip(xj) {
                    let diff = a - b;
                    if below_one && diff == zero {
                        continue;
                    }
                    *r += signum(diff) * diff.abs().powf(pm1) * s;
                }
            }
        }
    }
}

/// -1, 0 or 1 (0 at zero, unlike `f32::signum`).
#[inline(always)]
fn signum<T: Float>(v: T) -> T {
    let zero = <T as Element>::zero();
    if v > zero {
        <T as Element>::one()
    } else if v < zero {
        -<T as Element>::one()
    } else {
        zero
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_indices_run_row_by_row() {
        for n in [2usize, 3, 7, 100, 1001] {
            let mut k = 0;
            for i in 0..n {
                for j in i + 1..n {
                    assert_eq!(pair_at(k, n), (i, j), "pair {k} of {n}");
                    assert_eq!(first_pair(i, n) + j - i - 1, k);
                    k += 1;
                }
            }
            assert_eq!(k, pairs(n));
        }
    }

    #[test]
    fn float32_paths_give_the_portable_loops_bits() {
        for (n, m) in [(5, 1), (6, 15), (7, 16), (9, 37), (4, 64)] {
            let x: Vec<f32> = (0..n * m)
                .map(|k| ((k * 7919) % 29) as f32 / 3.0 - 4.0)
                .collect();
            for p in [1.0, 2.0] {
                let got = pdist(&x, n, m, Norm::of(p));
                let mut k = 0;
                for i in 0..n {
                    for j in i + 1..n {
                        let want =
                            dist(&x[i * m..(i + 1) * m], &x[j * m..(j + 1) * m], Norm::of(p));
                        assert_eq!(
                            got[k].to_bits(),
                            want.to_bits(),
                            "p={p} {n}x{m} pair ({i},{j})"
                        );
                        k += 1;
                    }
                }
            }
        }
    }

    #[test]
    fn distances_match_a_float64_loop() {
        let (n, m) = (9, 37);
        let x: Vec<f64> = (0..n * m)
            .map(|k| ((k * 7919) % 23) as f64 / 7.0 - 1.5)
            .collect();
        for p in [0.0, 0.5, 1.0, 2.0, 3.0, f64::INFINITY] {
            let got = pdist(&x, n, m, Norm::of(p));
            let mut k = 0;
            for i in 0..n {
                for j in i + 1..n {
                    let diffs = (0..m).map(|c| (x[i * m + c] - x[j * m + c]).abs());
                    let want = match p {
                        0.0 => diffs.filter(|&d| d != 0.0).count() as f64,
                        p if p.is_infinite() => diffs.fold(0.0, f64::max),
                        p => diffs.map(|d| d.powf(p)).sum::<f64>().powf(1.0 / p),
                    };
                    assert!(
                        (got[k] - want).abs() <= 1e-12 * want.max(1.0),
                        "p={p} pair ({i},{j})"
                    );
                    k += 1;
                }
            }
        }
    }
}

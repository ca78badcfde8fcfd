//! Softmax and log-softmax along one dimension, and their backward rules,
//! each in one pass per row over a contiguous `[outer, n, inner]` block: the
//! composite form (max, subtract, exp, sum, divide) reads and writes the
//! whole tensor five times and runs a node per step.

use multiversion::multiversion;

use super::{build_vec, SendPtr};
use crate::tensor::{Element, Float};

/// Columns of an `inner > 1` block handled together: their running maxima
/// and sums stay in L1 while the rows stream past.
const TILE: usize = 256;

/// The layout of a reduction along one dimension of a contiguous tensor.
#[derive(Clone, Copy)]
pub struct Rows {
    pub outer: usize,
    pub n: usize,
    pub inner: usize,
}

impl Rows {
    fn tiles(&self) -> usize {
        self.inner.div_ceil(TILE)
    }
}

/// Runs `f(o, j0, j1)` for every outer index and tile of inner columns,
/// split across the pool when the work is large enough.
fn for_tiles(r: Rows, f: impl Fn(usize, usize, usize) + Sync) {
    if r.outer == 0 || r.n == 0 || r.inner == 0 {
        // No elements: no loop over the other sizes, however large.
        return;
    }
    let tiles = r.tiles();
    let count = r.outer * tiles;
    let work = r.outer * r.n * r.inner;
    super::parallel::run(work, |threads| {
        let per = if threads == 1 {
            count.max(1)
        } else {
            count.div_ceil(threads * 4).max(1)
        };
        super::parallel::tasks(count.div_ceil(per), |ci| {
            for k in ci * per..((ci + 1) * per).min(count) {
                let (o, t) = (k / tiles, k % tiles);
                f(o, t * TILE, ((t + 1) * TILE).min(r.inner));
            }
        });
    });
}

/// The 16 lanes of an accumulator folded pairwise, 4 operations deep rather
/// than 16: on rows of a few vectors (attention's) the serial fold's latency
/// was most of a row's time.
#[inline(always)]
fn fold16<T: Copy>(mut a: [T; 16], f: impl Fn(T, T) -> T) -> T {
    let mut half = 8;
    while half > 0 {
        for i in 0..half {
            a[i] = f(a[i], a[i + half]);
        }
        half /= 2;
    }
    a[0]
}

/// The maximum of `x`, NaN if any element is NaN (as PyTorch's softmax
/// propagates it); several accumulators so the loop vectorises.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn row_max<T: Float>(x: &[T]) -> T {
    let mut acc = [T::neg_infinity(); 16];
    let mut nan = [false; 16];
    let chunks = x.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..16 {
            nan[k] |= c[k].is_nan();
            acc[k] = if c[k] > acc[k] { c[k] } else { acc[k] };
        }
    }
    let mut m = fold16(acc, |a, b| a.max(b));
    let mut any_nan = nan.iter().any(|&b| b);
    for &v in rest {
        any_nan |= v.is_nan();
        m = m.max(v);
    }
    if any_nan {
        T::nan()
    } else {
        m
    }
}

/// The shift that keeps `exp` in range: the row's maximum, whatever it is.
/// An infinite maximum makes the row NaN (`inf - inf`), as PyTorch's
/// softmax gives for `[inf, 0]` and for a row of `-inf`.
#[inline(always)]
fn shift_of<T: Float>(m: T) -> T {
    m
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn softmax_row<T: Float>(x: &[T], out: &mut [T], log: bool) {
    let m = shift_of(row_max(x));
    let mut acc = [<T as Element>::zero(); 16];
    let (xs, xr) = x.split_at(x.len() - x.len() % 16);
    let (os, or) = out.split_at_mut(xs.len());
    if log {
        for c in xs.chunks_exact(16) {
            for k in 0..16 {
                acc[k] += (c[k] - m).exp_fast();
            }
        }
        let tail = xr
            .iter()
            .fold(<T as Element>::zero(), |a, &v| a + (v - m).exp_fast());
        // (x - m) - ln(sum), not x - (m + ln(sum)): m + ln(sum) would round
        // at the scale of m and lose the digits of results near zero.
        let ln_sum = (fold16(acc, |a, b| a + b) + tail).ln();
        for (o, &v) in out.iter_mut().zip(x) {
            *o = (v - m) - ln_sum;
        }
    } else {
        for (oc, xc) in os.chunks_exact_mut(16).zip(xs.chunks_exact(16)) {
            for k in 0..16 {
                let e = (xc[k] - m).exp_fast();
                oc[k] = e;
                acc[k] += e;
            }
        }
        let mut total = fold16(acc, |a, b| a + b);
        for (o, &v) in or.iter_mut().zip(xr) {
            *o = (v - m).exp_fast();
            total += *o;
        }
        // One division per row, as PyTorch's vectorised softmax: a divide per
        // element was a third of a short row's time.
        let inv = <T as Element>::one() / total;
        for o in out.iter_mut() {
            *o = *o * inv;
        }
    }
}

/// One tile of columns `j0..j1` of block `o` when `inner > 1`.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn softmax_tile<T: Float>(
    x: &[T],
    out: *mut T,
    r: Rows,
    o: usize,
    j0: usize,
    j1: usize,
    log: bool,
) {
    let w = j1 - j0;
    let at = |i: usize| o * r.n * r.inner + i * r.inner + j0;
    // Every loop zips slices of the tile's width: indexed by a `j` below a
    // run-time width, each access kept a bounds check and the loops ran
    // scalar.
    let mut m_all = [T::neg_infinity(); TILE];
    let mut nan_all = [false; TILE];
    let (m, nan) = (&mut m_all[..w], &mut nan_all[..w]);
    for i in 0..r.n {
        let row = &x[at(i)..at(i) + w];
        for ((mj, nj), &v) in m.iter_mut().zip(nan.iter_mut()).zip(row) {
            *nj |= v.is_nan();
            *mj = if v > *mj { v } else { *mj };
        }
    }
    for (mj, &nj) in m.iter_mut().zip(nan.iter()) {
        *mj = if nj { T::nan() } else { shift_of(*mj) };
    }
    let mut s_all = [<T as Element>::zero(); TILE];
    let s = &mut s_all[..w];
    for i in 0..r.n {
        let row = &x[at(i)..at(i) + w];
        if log {
            for ((sj, &mj), &v) in s.iter_mut().zip(m.iter()).zip(row) {
                *sj += (v - mj).exp_fast();
            }
        } else {
            // SAFETY: each (o, tile) is written by one task, inside `out`.
            let dst = unsafe { std::slice::from_raw_parts_mut(out.add(at(i)), w) };
            for (((d, sj), &mj), &v) in dst.iter_mut().zip(s.iter_mut()).zip(m.iter()).zip(row) {
                let e = (v - mj).exp_fast();
                *sj += e;
                *d = e;
            }
        }
    }
    if log {
        for v in s.iter_mut() {
            *v = v.ln();
        }
    }
    for i in 0..r.n {
        let row = &x[at(i)..at(i) + w];
        // SAFETY: as above.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.add(at(i)), w) };
        if log {
            // As in `softmax_row`: subtract the shift first.
            for (((d, &sj), &mj), &v) in dst.iter_mut().zip(s.iter()).zip(m.iter()).zip(row) {
                *d = (v - mj) - sj;
            }
        } else {
            for (d, &sj) in dst.iter_mut().zip(s.iter()) {
                *d = *d / sj;
            }
        }
    }
}

/// `softmax` (or `log_softmax` when `log`) of the contiguous `x` along the
/// middle dimension of `r`.
pub fn softmax<T: Float>(x: &[T], r: Rows, log: bool) -> Vec<T> {
    build_vec(x.len(), |out| {
        let out = SendPtr(out.as_mut_ptr() as *mut T);
        for_tiles(r, |o, j0, j1| {
            if r.inner == 1 {
                let row = &x[o * r.n..(o + 1) * r.n];
                // SAFETY: row `o` is written by this task only.
                let dst = unsafe { std::slice::from_raw_parts_mut(out.get().add(o * r.n), r.n) };
                softmax_row(row, dst, log);
            } else {
                softmax_tile(x, out.get(), r, o, j0, j1, log);
            }
        });
    })
}

/// `logsumexp` of the contiguous `x` along the middle dimension of `r` (one
/// result per outer index and inner column), shifted by the maximum: a
/// pass for the maximum and one for the sum of exponentials, with no
/// intermediate tensor. A NaN maximum gives NaN and an infinite one a
/// shift of zero (so `+inf` stays `inf` and a row of `-inf` gives `-inf`).
/// `r.n` must not be zero.
pub fn logsumexp<T: Float>(x: &[T], r: Rows) -> Vec<T> {
    build_vec(r.outer * r.inner, |out| {
        let out = SendPtr(out.as_mut_ptr() as *mut T);
        for_tiles(r, |o, j0, j1| {
            if r.inner == 1 {
                let v = lse_row(&x[o * r.n..(o + 1) * r.n]);
                // SAFETY: slot `o` is written by this task only.
                unsafe { *out.get().add(o) = v };
            } else {
                // SAFETY: columns `j0..j1` of block `o` belong to this task.
                let dst = unsafe {
                    std::slice::from_raw_parts_mut(out.get().add(o * r.inner + j0), j1 - j0)
                };
                lse_tile(x, r, o, j0, dst);
            }
        });
    })
}

/// The shift of a `logsumexp` whose maximum is `m`.
#[inline(always)]
fn lse_shift<T: Float>(m: T) -> T {
    if m.is_infinite() {
        <T as Element>::zero()
    } else {
        m
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn lse_row<T: Float>(x: &[T]) -> T {
    let m = row_max(x);
    if m.is_nan() {
        return m;
    }
    let m = lse_shift(m);
    let mut acc = [<T as Element>::zero(); 16];
    let (xs, xr) = x.split_at(x.len() - x.len() % 16);
    for c in xs.chunks_exact(16) {
        for k in 0..16 {
            acc[k] += (c[k] - m).exp_fast();
        }
    }
    let tail = xr
        .iter()
        .fold(<T as Element>::zero(), |a, &v| a + (v - m).exp_fast());
    (fold16(acc, |a, b| a + b) + tail).ln() + m
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn lse_tile<T: Float>(x: &[T], r: Rows, o: usize, j0: usize, out: &mut [T]) {
    let w = out.len();
    let mut m = [T::neg_infinity(); TILE];
    let mut nan = [false; TILE];
    let (m, nan) = (&mut m[..w], &mut nan[..w]);
    let row = |j: usize| &x[(o * r.n + j) * r.inner + j0..][..w];
    for j in 0..r.n {
        for ((a, f), &v) in m.iter_mut().zip(nan.iter_mut()).zip(row(j)) {
            *f |= v.is_nan();
            *a = if v > *a { v } else { *a };
        }
    }
    for (a, &f) in m.iter_mut().zip(nan.iter()) {
        *a = if f { T::nan() } else { lse_shift(*a) };
    }
    out.fill(<T as Element>::zero());
    for j in 0..r.n {
        for ((s, &a), &v) in out.iter_mut().zip(m.iter()).zip(row(j)) {
            *s += (v - a).exp_fast();
        }
    }
    for (s, &a) in out.iter_mut().zip(m.iter()) {
        *s = s.ln() + a;
    }
}

/// The gradient of softmax (`y * (g - sum(g * y))`) or of log-softmax
/// (`g - exp(y) * sum(g)`), from the contiguous output `y` and gradient `g`.
pub fn softmax_backward<T: Float>(g: &[T], y: &[T], r: Rows, log: bool) -> Vec<T> {
    build_vec(y.len(), |out| {
        let out = SendPtr(out.as_mut_ptr() as *mut T);
        for_tiles(r, |o, j0, j1| {
            backward_tile(g, y, out.get(), r, o, j0, j1, log);
        });
    })
}

/// Softmax of each `n`-long row of `x` into `out`, on the calling thread
/// (the attention kernel's rows, already split by head).
pub(crate) fn softmax_rows<T: Float>(x: &[T], out: &mut [T], n: usize) {
    if n == 0 {
        return;
    }
    for (xr, or) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        softmax_row(xr, or, false);
    }
}

/// [`softmax_backward`] of each `n`-long row, on the calling thread.
pub(crate) fn softmax_rows_backward<T: Float>(g: &[T], y: &[T], out: &mut [T], n: usize) {
    if n == 0 {
        return;
    }
    let r = Rows {
        outer: y.len() / n,
        n,
        inner: 1,
    };
    for o in 0..r.outer {
        backward_tile(g, y, out.as_mut_ptr(), r, o, 0, 1, false);
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
#[allow(clippy::too_many_arguments)]
fn backward_tile<T: Float>(
    g: &[T],
    y: &[T],
    out: *mut T,
    r: Rows,
    o: usize,
    j0: usize,
    j1: usize,
    log: bool,
) {
    let w = j1 - j0;
    let at = |i: usize| o * r.n * r.inner + i * r.inner + j0;
    let mut s = [<T as Element>::zero(); TILE];
    if r.inner == 1 {
        // One row: sum in 16 lanes so the loop vectorises.
        let (gr, yr) = (&g[at(0)..at(0) + r.n], &y[at(0)..at(0) + r.n]);
        // Whole blocks as fixed-size arrays: a `chunks` of unknown length
        // compiled into scalar adds. Element `i` still lands in lane `i % 16`.
        let mut acc = [<T as Element>::zero(); 16];
        let (gb, yb) = (gr.chunks_exact(16), yr.chunks_exact(16));
        let (gt, yt) = (gb.remainder(), yb.remainder());
        for (gc, yc) in gb.zip(yb) {
            let (gc, yc): (&[T; 16], &[T; 16]) = (gc.try_into().unwrap(), yc.try_into().unwrap());
            for k in 0..16 {
                acc[k] += if log { gc[k] } else { gc[k] * yc[k] };
            }
        }
        for (k, (&gv, &yv)) in gt.iter().zip(yt).enumerate() {
            acc[k] += if log { gv } else { gv * yv };
        }
        let total = fold16(acc, |a, b| a + b);
        // SAFETY: row `o` is written by this task only.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.add(at(0)), r.n) };
        for ((d, &gv), &yv) in dst.iter_mut().zip(gr).zip(yr) {
            *d = if log {
                gv - yv.exp_fast() * total
            } else {
                yv * (gv - total)
            };
        }
        return;
    }
    // Zipped slices of the tile's width, as in `softmax_tile`.
    let s = &mut s[..w];
    for i in 0..r.n {
        let (gr, yr) = (&g[at(i)..at(i) + w], &y[at(i)..at(i) + w]);
        for ((sj, &gv), &yv) in s.iter_mut().zip(gr).zip(yr) {
            *sj += if log { gv } else { gv * yv };
        }
    }
    for i in 0..r.n {
        let (gr, yr) = (&g[at(i)..at(i) + w], &y[at(i)..at(i) + w]);
        // SAFETY: each (o, tile) is written by one task, inside `out`.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.add(at(i)), w) };
        for (((d, &sj), &gv), &yv) in dst.iter_mut().zip(s.iter()).zip(gr).zip(yr) {
            *d = if log {
                gv - yv.exp_fast() * sj
            } else {
                yv * (gv - sj)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f64], r: Rows, log: bool) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        for o in 0..r.outer {
            for j in 0..r.inner {
                let idx = |i: usize| o * r.n * r.inner + i * r.inner + j;
                let m = (0..r.n)
                    .map(|i| x[idx(i)])
                    .fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = (0..r.n).map(|i| (x[idx(i)] - m).exp()).sum();
                for i in 0..r.n {
                    let z = x[idx(i)] - m;
                    out[idx(i)] = if log { z - s.ln() } else { z.exp() / s };
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_definition_for_every_layout() {
        for &(outer, n, inner) in &[
            (3, 5, 1),
            (2, 37, 1),
            (4, 3, 7),
            (2, 5, 300),
            (1, 1, 1),
            (50_000, 3, 1),
        ] {
            let r = Rows { outer, n, inner };
            let x: Vec<f64> = (0..outer * n * inner)
                .map(|k| ((k * 7919) % 1000) as f64 / 97.0 - 5.0)
                .collect();
            for log in [false, true] {
                let got = softmax(&x, r, log);
                for (a, b) in got.iter().zip(naive(&x, r, log)) {
                    assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn infinities_and_nan_follow_pytorch() {
        let r = Rows {
            outer: 1,
            n: 3,
            inner: 1,
        };
        let y = softmax(&[f32::INFINITY, 1.0, 2.0], r, false);
        assert!(y.iter().all(|v| v.is_nan()));
        let y = softmax(&[f32::INFINITY, 1.0, 2.0], r, true);
        assert!(y.iter().all(|v| v.is_nan()));
        let y = softmax(&[f32::NEG_INFINITY, 0.0, 0.0], r, false);
        assert_eq!(y, vec![0.0, 0.5, 0.5]);
        let y = softmax(&[f32::NAN, 0.0, 0.0], r, true);
        assert!(y.iter().all(|v| v.is_nan()));
        let y = softmax(&[f32::NEG_INFINITY; 3], r, false);
        assert!(y.iter().all(|v| v.is_nan()));
    }

    #[test]
    fn backward_matches_the_formula() {
        for &(outer, n, inner) in &[(3, 40, 1), (2, 5, 300)] {
            let r = Rows { outer, n, inner };
            let len = outer * n * inner;
            let x: Vec<f64> = (0..len).map(|k| ((k * 31) % 17) as f64 / 5.0).collect();
            let g: Vec<f64> = (0..len)
                .map(|k| ((k * 13) % 11) as f64 / 3.0 - 1.5)
                .collect();
            for log in [false, true] {
                let y = softmax(&x, r, log);
                let got = softmax_backward(&g, &y, r, log);
                for o in 0..outer {
                    for j in 0..inner {
                        let idx = |i: usize| o * n * inner + i * inner + j;
                        let s: f64 = (0..n)
                            .map(|i| {
                                if log {
                                    g[idx(i)]
                                } else {
                                    g[idx(i)] * y[idx(i)]
                                }
                            })
                            .sum();
                        for i in 0..n {
                            let k = idx(i);
                            let want = if log {
                                g[k] - y[k].exp() * s
                            } else {
                                y[k] * (g[k] - s)
                            };
                            assert!((got[k] - want).abs() < 1e-12);
                        }
                    }
                }
            }
        }
    }
}

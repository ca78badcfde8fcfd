//! Max pooling over the last two dimensions of a stack of planes: each
//! output is the maximum of a window of evenly spaced positions ([`Window`]),
//! and records where it was, as a flat index into its plane, as PyTorch does.
//!
//! PyTorch's rule decides ties and NaNs: the taps are read in row-major
//! order, starting from `-inf` at the first tap, and a larger value or any
//! NaN takes over, so the first maximum wins, or the last NaN. Every path
//! below applies that rule to each output's taps in that order, so they
//! agree bit for bit, indices included.

use super::pool::planes_per_task;
use super::{par_ranges, SendPtr};
use crate::tensor::{Element, Float};
use multiversion::multiversion;

/// For each output index along one axis, the input positions of its window:
/// `start[o] + i * step` for `i < count[o]`, all inside the input.
#[derive(Clone, Debug, Default)]
pub struct Window {
    pub len_in: usize,
    pub start: Vec<usize>,
    pub count: Vec<usize>,
    pub step: usize,
}

impl Window {
    pub fn len_out(&self) -> usize {
        self.start.len()
    }

    /// The widest run of outputs `lo..hi` whose windows are whole (`k`
    /// taps, the most any window has) and evenly spaced (`start[o] =
    /// start[lo] + (o - lo) * stride`): everything but the padded edges of a
    /// strided pooling. Adaptive windows may have no such run.
    fn regular(&self) -> Regular {
        let k = self.count.iter().copied().max().unwrap_or(0);
        let n = self.len_out();
        let mut best = Regular {
            lo: 0,
            hi: 0,
            k,
            stride: 1,
        };
        let mut lo = 0;
        while lo < n {
            if self.count[lo] != k || k == 0 {
                lo += 1;
                continue;
            }
            let stride = match self.start.get(lo + 1) {
                Some(&next) if self.count[lo + 1] == k && next > self.start[lo] => {
                    next - self.start[lo]
                }
                _ => 1,
            };
            let mut hi = lo + 1;
            while hi < n
                && self.count[hi] == k
                && self.start[hi] == self.start[lo] + (hi - lo) * stride
            {
                hi += 1;
            }
            if hi - lo > best.hi - best.lo {
                best = Regular { lo, hi, k, stride };
            }
            lo = hi;
        }
        best
    }
}

/// A run of whole, evenly spaced windows along the columns (see
/// [`Window::regular`]), which one vectorised loop pools tap by tap.
#[derive(Clone, Copy, Debug)]
struct Regular {
    lo: usize,
    hi: usize,
    k: usize,
    stride: usize,
}

/// Max over each window of `planes` planes of `wh.len_in x ww.len_in`
/// values, and with `indices` the flat in-plane index of the maximum (see
/// the module's rule for ties and NaNs); without, the index vector is empty.
pub fn max_pool<T: Float>(
    x: &[T],
    planes: usize,
    wh: &Window,
    ww: &Window,
    indices: bool,
) -> (Vec<T>, Vec<i64>) {
    let (h, w) = (wh.len_in, ww.len_in);
    let (oh, ow) = (wh.len_out(), ww.len_out());
    let n = planes * oh * ow;
    let mut out: Vec<T> = crate::error::filled_vec(n, <T as Element>::zero());
    let mut idx: Vec<i64> = crate::error::filled_vec(if indices { n } else { 0 }, 0);
    let (op, ip) = (SendPtr(out.as_mut_ptr()), SendPtr(idx.as_mut_ptr()));
    let per = planes_per_task(h * w);
    let cols = ww.regular();
    par_ranges(planes.div_ceil(per) * super::GRAIN, |a, b| {
        let (a, b) = (a / super::GRAIN * per, (b / super::GRAIN * per).min(planes));
        // Where the indices go when nobody keeps them: one row's worth.
        let mut scratch: Vec<i64> = Vec::new();
        if !indices {
            crate::error::reserve_more(&mut scratch, ow);
            scratch.resize(ow, 0);
        }
        for p in a..b {
            // SAFETY: plane `p` of the outputs belongs to this range alone.
            let o = unsafe { std::slice::from_raw_parts_mut(op.get().add(p * oh * ow), oh * ow) };
            let i = indices.then(|| unsafe {
                std::slice::from_raw_parts_mut(ip.get().add(p * oh * ow), oh * ow)
            });
            plane(
                &x[p * h * w..(p + 1) * h * w],
                w,
                wh,
                ww,
                cols,
                o,
                i,
                &mut scratch,
            );
        }
    });
    (out, idx)
}

/// One plane: per output row, the irregular columns window by window, and
/// the regular run tap by tap across all its outputs at once, which
/// vectorises (rows of a 1-d pooling, a depth pass's whole slices). With
/// no `idx`, each row's indices go to `scratch` and are dropped.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
#[allow(clippy::too_many_arguments)]
fn plane<T: Float>(
    xp: &[T],
    w: usize,
    wh: &Window,
    ww: &Window,
    cols: Regular,
    out: &mut [T],
    mut idx: Option<&mut [i64]>,
    scratch: &mut [i64],
) {
    let ow = ww.len_out();
    let avx512_f32 = T::DTYPE == crate::tensor::DType::F32
        && crate::kernels::vmath::isa() == crate::kernels::vmath::Isa::Avx512;
    for (y, o) in out.chunks_exact_mut(ow.max(1)).enumerate() {
        let keep = idx.is_some();
        let ix: &mut [i64] = match idx.as_deref_mut() {
            Some(all) => &mut all[y * ow..(y + 1) * ow],
            None => &mut scratch[..ow],
        };
        let (sy, cy) = (wh.start[y], wh.count[y]);
        let (lo, hi) = if cy == 0 { (0, 0) } else { (cols.lo, cols.hi) };
        for xo in (0..lo).chain(hi..ow) {
            let rows = (sy, cy, wh.step);
            (o[xo], ix[xo]) = window_max(xp, w, rows, (ww.start[xo], ww.count[xo], ww.step));
        }
        if lo == hi {
            continue;
        }
        let (best, at) = (&mut o[lo..hi], &mut ix[lo..hi]);
        let first = sy * w + ww.start[lo];
        #[cfg(target_arch = "x86_64")]
        // Gathered lane offsets are 32-bit.
        if avx512_f32 && cols.stride.saturating_mul(16) < i32::MAX as usize {
            let taps = Taps {
                first,
                rows: cy,
                row_step: wh.step * w,
                cols: cols.k,
                col_step: ww.step,
            };
            // SAFETY: `T` is `f32` (checked, with the CPU's AVX-512, where
            // `avx512_f32` is set); the run's windows are whole, so every
            // tap is inside `xp`.
            unsafe {
                let xs = std::slice::from_raw_parts(xp.as_ptr().cast::<f32>(), xp.len());
                let bs =
                    std::slice::from_raw_parts_mut(best.as_mut_ptr().cast::<f32>(), best.len());
                let s = cols.stride;
                match (s, keep) {
                    (1, true) => run_f32_avx512::<1, true>(xs, taps, s, bs, at),
                    (1, false) => run_f32_avx512::<1, false>(xs, taps, s, bs, at),
                    (2, true) => run_f32_avx512::<2, true>(xs, taps, s, bs, at),
                    (2, false) => run_f32_avx512::<2, false>(xs, taps, s, bs, at),
                    (_, true) => run_f32_avx512::<0, true>(xs, taps, s, bs, at),
                    (_, false) => run_f32_avx512::<0, false>(xs, taps, s, bs, at),
                }
            }
            continue;
        }
        best.fill(T::neg_infinity());
        for (t, a) in at.iter_mut().enumerate() {
            *a = (first + t * cols.stride) as i64;
        }
        for i in 0..cy {
            let row = (sy + i * wh.step) * w + ww.start[lo];
            for j in 0..cols.k {
                let base = row + j * ww.step;
                match cols.stride {
                    1 => fold::<T, 1>(xp, base, 1, best, at),
                    2 => fold::<T, 2>(xp, base, 2, best, at),
                    3 => fold::<T, 3>(xp, base, 3, best, at),
                    4 => fold::<T, 4>(xp, base, 4, best, at),
                    s => fold::<T, 0>(xp, base, s, best, at),
                }
            }
        }
    }
}

/// The taps of a regular run's first window: `rows x cols` of them from
/// `first`, `row_step` and `col_step` apart; window `t` is the first
/// shifted by `t` times the run's stride.
#[derive(Clone, Copy)]
struct Taps {
    first: usize,
    rows: usize,
    row_step: usize,
    cols: usize,
    col_step: usize,
}

/// One tap of every window of a regular run: output `t` reads
/// `xp[base + t * stride]` (`S` is the stride when known at compile time).
/// Written as a zip over `chunks`, whose first element is always in
/// bounds: an indexed `src[t * stride]` kept its bounds check and stayed a
/// branchy scalar loop; this vectorises for each constant stride.
#[inline(always)]
fn fold<T: Float, const S: usize>(
    xp: &[T],
    base: usize,
    stride: usize,
    best: &mut [T],
    at: &mut [i64],
) {
    let stride = if S > 0 { S } else { stride };
    let taps = xp[base..].chunks(stride);
    for (t, ((b, a), c)) in best.iter_mut().zip(at.iter_mut()).zip(taps).enumerate() {
        let v = c[0];
        let take = (v > *b) | v.is_nan();
        *b = if take { v } else { *b };
        *a = if take { (base + t * stride) as i64 } else { *a };
    }
}

/// A regular run of windows for float32 on AVX-512, stride `S` of 1 or 2
/// (or, with `S` 0, any `stride`, gathered):
/// sixteen windows at a time, every tap folded into registers before one
/// store (the last few windows under a mask), indices kept when `KEEP`.
/// Real feature maps are 14-56 outputs wide, and on runs that short the
/// loop vectoriser's code fell through to a branchy scalar loop.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq")]
unsafe fn run_f32_avx512<const S: usize, const KEEP: bool>(
    xp: &[f32],
    taps: Taps,
    stride: usize,
    best: &mut [f32],
    at: &mut [i64],
) {
    use std::arch::x86_64::*;
    let n = best.len().min(at.len());
    let src = xp.as_ptr();
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    // Any other stride gathers: lane `k` reads `k * stride` past the tap.
    let stride = if S > 0 { S } else { stride };
    let gather = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32(stride as i32),
    );
    let s = stride as i64;
    let lanes_lo = _mm512_setr_epi64(0, s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s);
    let lanes_hi = _mm512_add_epi64(lanes_lo, _mm512_set1_epi64(8 * s));
    let first = |k: usize| ((1u32 << k.min(16)) - 1) as __mmask16;
    let mut t = 0;
    while t < n {
        let r = (n - t).min(16);
        let m = first(r);
        let mut b = _mm512_set1_ps(f32::NEG_INFINITY);
        let start = _mm512_set1_epi64((taps.first + t * stride) as i64);
        let (mut a_lo, mut a_hi) = (
            _mm512_add_epi64(start, lanes_lo),
            _mm512_add_epi64(start, lanes_hi),
        );
        for i in 0..taps.rows {
            for j in 0..taps.cols {
                let base = taps.first + i * taps.row_step + j * taps.col_step + t * stride;
                let v = if S == 1 {
                    _mm512_maskz_loadu_ps(m, src.add(base))
                } else if S == 0 {
                    _mm512_mask_i32gather_ps::<4>(
                        _mm512_setzero_ps(),
                        m,
                        gather,
                        src.add(base).cast(),
                    )
                } else {
                    // The taps `base, base + 2, ..`: `2r - 1` values, none past the last.
                    let need = 2 * r - 1;
                    let lo = _mm512_maskz_loadu_ps(first(need), src.add(base));
                    let hi =
                        _mm512_maskz_loadu_ps(first(need.saturating_sub(16)), src.add(base + 16));
                    _mm512_permutex2var_ps(lo, even, hi)
                };
                // PyTorch's rule: a larger value, or a NaN, takes over.
                let take = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, b)
                    | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
                b = _mm512_mask_mov_ps(b, take, v);
                if KEEP {
                    let pos = _mm512_set1_epi64(base as i64);
                    a_lo = _mm512_mask_mov_epi64(a_lo, take as u8, _mm512_add_epi64(pos, lanes_lo));
                    a_hi = _mm512_mask_mov_epi64(
                        a_hi,
                        (take >> 8) as u8,
                        _mm512_add_epi64(pos, lanes_hi),
                    );
                }
            }
        }
        _mm512_mask_storeu_ps(best.as_mut_ptr().add(t), m, b);
        if KEEP {
            _mm512_mask_storeu_epi64(at.as_mut_ptr().add(t), m as u8, a_lo);
            _mm512_mask_storeu_epi64(at.as_mut_ptr().add(t + 8), (m >> 8) as u8, a_hi);
        }
        t += 16;
    }
}

/// The maximum of one window (rows `(start, count, step)`, columns the
/// same) of a plane `w` wide, and where it is; an empty window (a dilated
/// one can miss the input) gives `-inf` at index 0, or at its first tap
/// when that is inside the plane.
#[inline(always)]
fn window_max<T: Float>(
    xp: &[T],
    w: usize,
    (sy, cy, ty): (usize, usize, usize),
    (sx, cx, tx): (usize, usize, usize),
) -> (T, i64) {
    let mut best = T::neg_infinity();
    let mut at = sy * w + sx;
    for i in 0..cy {
        let row = (sy + i * ty) * w + sx;
        for j in 0..cx {
            let pos = row + j * tx;
            let v = xp[pos];
            // `|` and a mask, not `||` and `if`: the compiler turned those
            // into branches that random data mispredicts.
            let take = (v > best) | v.is_nan();
            let m = 0usize.wrapping_sub(take as usize);
            best = if take { v } else { best };
            at = (pos & m) | (at & !m);
        }
    }
    if at >= xp.len() {
        at = 0;
    }
    (best, at as i64)
}

/// Adds `g[p, o]` at `idx[p, o]` of plane `p` (`planes` planes of `plane`
/// elements): the gradient of max pooling.
pub fn scatter_planes<T: Float>(g: &[T], idx: &[i64], planes: usize, plane: usize) -> Vec<T> {
    let per_out = g.len().checked_div(planes).unwrap_or(0);
    let mut out: Vec<T> = crate::error::filled_vec(planes * plane, <T as Element>::zero());
    let op = SendPtr(out.as_mut_ptr());
    let per = planes_per_task(plane + per_out);
    par_ranges(planes.div_ceil(per) * super::GRAIN, |a, b| {
        let (a, b) = (a / super::GRAIN * per, (b / super::GRAIN * per).min(planes));
        for p in a..b {
            // SAFETY: plane `p` of `out` belongs to this range alone.
            let d = unsafe { std::slice::from_raw_parts_mut(op.get().add(p * plane), plane) };
            let (gp, ip) = (
                &g[p * per_out..(p + 1) * per_out],
                &idx[p * per_out..(p + 1) * per_out],
            );
            for (v, &i) in gp.iter().zip(ip) {
                d[i as usize] += *v;
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows along an axis of `len` for kernel, stride, padding and
    /// dilation, clipped to the input as the ops build them.
    fn window(len: usize, k: usize, s: usize, p: usize, d: usize) -> Window {
        let span = d * (k - 1) + 1;
        let out = (len + 2 * p).saturating_sub(span) / s + 1;
        let mut w = Window {
            len_in: len,
            step: d,
            ..Default::default()
        };
        for o in 0..out {
            let start = (o * s) as i64 - p as i64;
            let taps: Vec<i64> = (0..k as i64)
                .map(|j| start + j * d as i64)
                .filter(|&t| t >= 0 && t < len as i64)
                .collect();
            w.start.push(taps.first().copied().unwrap_or(0) as usize);
            w.count.push(taps.len());
        }
        w
    }

    /// Each output by PyTorch's loop: from `-inf` at the first tap, a larger
    /// value or a NaN takes over.
    fn reference<T: Float>(x: &[T], wh: &Window, ww: &Window) -> (Vec<T>, Vec<i64>) {
        let w = ww.len_in;
        let (mut out, mut idx) = (vec![], vec![]);
        for y in 0..wh.len_out() {
            for xo in 0..ww.len_out() {
                let mut best = T::neg_infinity();
                let mut at = wh.start[y] * w + ww.start[xo];
                for i in 0..wh.count[y] {
                    for j in 0..ww.count[xo] {
                        let pos = (wh.start[y] + i * wh.step) * w + ww.start[xo] + j * ww.step;
                        if x[pos] > best || x[pos].is_nan() {
                            best = x[pos];
                            at = pos;
                        }
                    }
                }
                out.push(best);
                idx.push(if at >= x.len() { 0 } else { at as i64 });
            }
        }
        (out, idx)
    }

    /// Every shape and window against the reference, on planes of few
    /// distinct values (so windows hold ties), NaNs and -inf; float32 takes
    /// the AVX-512 steps where the CPU has them, float64 the portable loop.
    fn check<T: Float>() {
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let values = [0.0, 1.0, 1.0, 2.0, -1.0, f64::NEG_INFINITY, f64::NAN];
        let shapes = [(1, 37), (5, 9), (7, 40), (1, 1), (3, 2), (3, 100), (2, 67)];
        let windows = [
            (2, 2, 0, 1),
            (3, 1, 1, 1),
            (3, 2, 1, 1),
            (2, 3, 1, 2),
            (4, 4, 2, 1),
            (1, 1, 0, 1),
            (2, 1, 0, 1),
        ];
        for (h, w) in shapes {
            for (k, s, p, d) in windows {
                if 2 * p > k || d * (k - 1) + 1 > w + 2 * p {
                    continue;
                }
                let x: Vec<T> = (0..2 * h * w)
                    .map(|_| T::from_f64(values[next() % values.len()]))
                    .collect();
                let wh = if h == 1 {
                    window(1, 1, 1, 0, 1)
                } else {
                    window(h, 2, 1, 0, 1)
                };
                let ww = window(w, k, s, p, d);
                let (out, idx) = max_pool(&x, 2, &wh, &ww, true);
                let (values_only, none) = max_pool(&x, 2, &wh, &ww, false);
                assert!(none.is_empty());
                let same = out
                    .iter()
                    .zip(&values_only)
                    .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()));
                assert!(
                    same,
                    "values without indices of {h}x{w} k{k} s{s} p{p} d{d}"
                );
                let per = wh.len_out() * ww.len_out();
                for plane in 0..2 {
                    let (ro, ri) = reference(&x[plane * h * w..(plane + 1) * h * w], &wh, &ww);
                    let got = &out[plane * per..(plane + 1) * per];
                    let same = got
                        .iter()
                        .zip(&ro)
                        .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()));
                    assert!(same, "values of {h}x{w} k{k} s{s} p{p} d{d}");
                    assert_eq!(
                        &idx[plane * per..(plane + 1) * per],
                        &ri[..],
                        "indices of {h}x{w} k{k} s{s} p{p} d{d}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_path_follows_pytorchs_rule() {
        check::<f32>();
        check::<f64>();
    }
}

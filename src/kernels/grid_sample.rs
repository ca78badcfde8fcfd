//! `grid_sample`: reading an image `(N, C, *sizes)` at the points of a grid
//! `(N, P, d)` of normalised coordinates (`grid[..., 0]` indexes the last
//! spatial dimension), and the two gradients of that read. The arithmetic
//! follows PyTorch's grid sampler step by step (the unnormalisation, the
//! reflection and clipping of a coordinate with their derivatives, the cubic
//! convolution weights with a = -0.75), in the input's own precision.
//!
//! A point becomes, per spatial dimension, a few taps (an index, whether it
//! lies inside the image, a weight and the weight's derivative with respect
//! to the coordinate): two for linear interpolation, one for nearest, four
//! for bicubic. The point's value is the sum over every combination of one
//! tap per dimension of the product of their weights times the pixel there.

use rayon::prelude::*;

use crate::tensor::Float;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Bilinear,
    Nearest,
    Bicubic,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Padding {
    Zeros,
    Border,
    Reflection,
}

/// The sampling's shape and options: `sizes` are the input's spatial sizes,
/// outermost first (depth, height, width).
#[derive(Clone, Debug)]
pub struct Spec {
    pub mode: Mode,
    pub padding: Padding,
    pub align_corners: bool,
    pub batch: usize,
    pub channels: usize,
    pub sizes: Vec<usize>,
    pub points: usize,
}

impl Spec {
    fn pixels(&self) -> usize {
        self.sizes.iter().product()
    }
}

#[derive(Clone, Copy, Default)]
struct Tap<T> {
    /// The tap's offset in the flattened spatial block (0 when outside).
    offset: usize,
    inside: bool,
    w: T,
    dw: T,
}

/// One dimension's taps of a point and `d(coordinate)/d(grid value)`.
#[derive(Clone, Copy, Default)]
struct Taps<T> {
    taps: [Tap<T>; 4],
    len: usize,
    scale: T,
}

fn c<T: Float>(v: f64) -> T {
    T::from_f64(v)
}

/// A grid value as a pixel coordinate, and its derivative.
fn unnormalize<T: Float>(g: T, size: usize, align_corners: bool) -> (T, T) {
    let one = c::<T>(1.0);
    let two = c::<T>(2.0);
    if align_corners {
        let s = c::<T>(size as f64 - 1.0);
        ((g + one) / two * s, s / two)
    } else {
        let s = c::<T>(size as f64);
        (((g + one) * s - one) / two, s / two)
    }
}

/// Clipped to `[0, size - 1]`; the derivative is 0 on and beyond the borders
/// (PyTorch counts the borders as outside for the gradient).
fn clip<T: Float>(x: T, size: usize) -> (T, T) {
    let max = c::<T>(size as f64 - 1.0);
    if x <= c::<T>(0.0) {
        (c::<T>(0.0), c::<T>(0.0))
    } else if x >= max {
        (max, c::<T>(0.0))
    } else {
        (x, c::<T>(1.0))
    }
}

/// `x` mirrored into `[twice_low / 2, twice_high / 2]` as often as needed, and
/// the derivative (+-1).
fn reflect<T: Float>(x: T, twice_low: f64, twice_high: f64) -> (T, T) {
    if twice_low == twice_high {
        return (c::<T>(0.0), c::<T>(0.0));
    }
    let low = c::<T>(twice_low / 2.0);
    let span = c::<T>((twice_high - twice_low) / 2.0);
    let mut x = x - low;
    let mut d = c::<T>(1.0);
    if x < c::<T>(0.0) {
        d = -d;
        x = -x;
    }
    let extra = x % span;
    let flips = (x / span).floor();
    if !is_odd(flips) {
        (extra + low, d)
    } else {
        (span - extra + low, -d)
    }
}

/// Where `padding` puts a coordinate that may lie outside, with its derivative.
fn pad<T: Float>(x: T, size: usize, padding: Padding, align_corners: bool) -> (T, T) {
    match padding {
        Padding::Zeros => (x, c::<T>(1.0)),
        Padding::Border => clip(x, size),
        Padding::Reflection => {
            let (r, dr) = if align_corners {
                reflect(x, 0.0, 2.0 * (size as f64 - 1.0))
            } else {
                reflect(x, -1.0, 2.0 * size as f64 - 1.0)
            };
            let (y, dy) = clip(r, size);
            (y, dr * dy)
        }
    }
}

/// A tap at the integer coordinate `i` (a float), `stride` apart from the next.
fn tap<T: Float>(i: T, size: usize, stride: usize, w: T, dw: T) -> Tap<T> {
    // NaN and infinite coordinates fail the comparison and read nothing.
    let inside = i >= c::<T>(0.0) && i <= c::<T>(size as f64 - 1.0);
    let offset = if inside {
        crate::tensor::Element::to_f64(i) as usize * stride
    } else {
        0
    };
    Tap {
        offset,
        inside,
        w,
        dw,
    }
}

/// Whether an integer-valued float is odd (without C's `fmodf`, a software
/// routine on the baseline target). Floats beyond 2^53 are even.
fn is_odd<T: Float>(f: T) -> bool {
    let v = crate::tensor::Element::to_f64(f);
    v.abs() < 9_007_199_254_740_992.0 && (v as i64) & 1 != 0
}

/// Round half to even, as `torch.round` and C's `nearbyint`.
fn round_even<T: Float>(x: T) -> T {
    let f = x.floor();
    let d = x - f;
    let half = c::<T>(0.5);
    if d > half || (d == half && is_odd(f)) {
        f + c::<T>(1.0)
    } else {
        f
    }
}

const A: f64 = -0.75;

fn cubic_near<T: Float>(x: T) -> (T, T) {
    let (a2, a3) = (c::<T>(A + 2.0), c::<T>(A + 3.0));
    let v = (a2 * x - a3) * x * x + c::<T>(1.0);
    let d = (c::<T>(3.0) * a2 * x - c::<T>(2.0) * a3) * x;
    (v, d)
}

fn cubic_far<T: Float>(x: T) -> (T, T) {
    let a = c::<T>(A);
    let v = ((a * x - c::<T>(5.0) * a) * x + c::<T>(8.0) * a) * x - c::<T>(4.0) * a;
    let d = (c::<T>(3.0) * a * x - c::<T>(10.0) * a) * x + c::<T>(8.0) * a;
    (v, d)
}

/// The taps of grid value `g` along a dimension of `size` pixels.
#[inline(always)]
fn taps_of<T: Float>(spec: &Spec, g: T, size: usize, stride: usize) -> Taps<T> {
    let (x, dx) = unnormalize(g, size, spec.align_corners);
    let mut out = Taps::<T>::default();
    let one = c::<T>(1.0);
    match spec.mode {
        Mode::Bilinear => {
            let (x, dp) = pad(x, size, spec.padding, spec.align_corners);
            let low = x.floor();
            let f = x - low;
            out.taps[0] = tap(low, size, stride, one - f, -one);
            out.taps[1] = tap(low + one, size, stride, f, one);
            out.len = 2;
            out.scale = dx * dp;
        }
        Mode::Nearest => {
            let (x, _) = pad(x, size, spec.padding, spec.align_corners);
            out.taps[0] = tap(round_even(x), size, stride, one, c::<T>(0.0));
            out.len = 1;
            out.scale = c::<T>(0.0);
        }
        Mode::Bicubic => {
            let x0 = x.floor();
            let t = x - x0;
            let (w0, d0) = cubic_far(t + one);
            let (w1, d1) = cubic_near(t);
            let (w2, d2) = cubic_near(one - t);
            let (w3, d3) = cubic_far(c::<T>(2.0) - t);
            let ws = [(w0, d0), (w1, d1), (w2, -d2), (w3, -d3)];
            for (i, (w, dw)) in ws.into_iter().enumerate() {
                // Padding applies to each tap's index, not to the point.
                let (at, _) = pad(
                    x0 + c::<T>(i as f64 - 1.0),
                    size,
                    spec.padding,
                    spec.align_corners,
                );
                // A reflected index may be fractional in its last bit: truncated.
                out.taps[i] = tap(at.trunc(), size, stride, w, dw);
            }
            out.len = 4;
            out.scale = dx;
        }
    }
    out
}

/// The taps of every spatial dimension of point `p` of sample `n`.
#[inline(always)]
fn point_taps<T: Float>(spec: &Spec, grid: &[T], n: usize, p: usize) -> [Taps<T>; 3] {
    let d = spec.sizes.len();
    let mut out = [Taps::<T>::default(); 3];
    let mut stride = 1;
    for k in (0..d).rev() {
        let g = grid[(n * spec.points + p) * d + (d - 1 - k)];
        out[k] = taps_of(spec, g, spec.sizes[k], stride);
        stride *= spec.sizes[k];
    }
    out
}

/// Calls `f(offset, weight, k_derivatives)` for every combination of one tap
/// per dimension that lies inside the image; `k_derivatives[k]` is the
/// weight's derivative with respect to dimension `k`'s coordinate.
#[inline]
fn each_corner<T: Float>(taps: &[Taps<T>; 3], d: usize, mut f: impl FnMut(usize, T, [T; 3])) {
    let lens = [
        taps[0].len,
        if d > 1 { taps[1].len } else { 1 },
        if d > 2 { taps[2].len } else { 1 },
    ];
    let unit = Tap {
        offset: 0,
        inside: true,
        w: c::<T>(1.0),
        dw: c::<T>(0.0),
    };
    for i in 0..lens[0] {
        for j in 0..lens[1] {
            for k in 0..lens[2] {
                let t = [
                    taps[0].taps[i],
                    if d > 1 { taps[1].taps[j] } else { unit },
                    if d > 2 { taps[2].taps[k] } else { unit },
                ];
                if !(t[0].inside && t[1].inside && t[2].inside) {
                    continue;
                }
                let w = t[0].w * t[1].w * t[2].w;
                let dws = [
                    t[0].dw * t[1].w * t[2].w,
                    t[0].w * t[1].dw * t[2].w,
                    t[0].w * t[1].w * t[2].dw,
                ];
                f(t[0].offset + t[1].offset + t[2].offset, w, dws);
            }
        }
    }
}

fn par_over_batch<T: Send>(
    out: &mut [T],
    chunk: usize,
    work: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    if chunk == 0 {
        return;
    }
    if work < super::GRAIN {
        out.chunks_mut(chunk).enumerate().for_each(|(n, o)| f(n, o));
    } else {
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(n, o)| f(n, o));
    }
}

/// One sample's slices of the input's and the grid's gradients.
type GradSlices<'a, T> = (Option<&'a mut [T]>, Option<&'a mut [T]>);

/// Marks a corner outside the image in `Corners::offset`.
const OUTSIDE: usize = usize::MAX;

/// Every point's corners for one sample, a fixed `per` slots a point in the
/// order `each_corner` visits them; a corner outside the image has offset
/// `OUTSIDE` (and is skipped, as PyTorch skips it: a NaN pixel at offset 0
/// must not leak in through a zero weight). Built once per sample, then read
/// channel by channel: a channel's plane is walked in point order, with none
/// of the 4 KiB-apart accesses that a loop over channels per point makes.
struct Corners<T> {
    per: usize,
    offset: Vec<usize>,
    w: Vec<T>,
    /// The weight's derivative per dimension (only for the grid's gradient).
    dw: Vec<[T; 3]>,
    /// `d(coordinate)/d(grid value)` per point and dimension (ditto).
    scale: Vec<[T; 3]>,
}

fn corners<T: Float>(spec: &Spec, grid: &[T], n: usize, with_dw: bool) -> Corners<T> {
    let d = spec.sizes.len();
    let per = match spec.mode {
        Mode::Bilinear => 1 << d,
        Mode::Nearest => 1,
        Mode::Bicubic => 16,
    };
    let slots = spec.points * per;
    let zero = c::<T>(0.0);
    let mut out = Corners {
        per,
        offset: vec![OUTSIDE; slots],
        w: vec![zero; slots],
        dw: if with_dw {
            vec![[zero; 3]; slots]
        } else {
            Vec::new()
        },
        scale: if with_dw {
            vec![[zero; 3]; spec.points]
        } else {
            Vec::new()
        },
    };
    for p in 0..spec.points {
        let taps = point_taps(spec, grid, n, p);
        let mut j = p * per;
        if d == 2 && !with_dw {
            // The common case written out (the same products as
            // `each_corner`'s, whose third factor is an exact 1).
            let (ty, tx) = (&taps[0], &taps[1]);
            for a in &ty.taps[..ty.len] {
                for b in &tx.taps[..tx.len] {
                    if a.inside && b.inside {
                        out.offset[j] = a.offset + b.offset;
                        out.w[j] = a.w * b.w;
                        j += 1;
                    }
                }
            }
            continue;
        }
        each_corner(&taps, d, |off, w, dws| {
            out.offset[j] = off;
            out.w[j] = w;
            if with_dw {
                out.dw[j] = dws;
            }
            j += 1;
        });
        if with_dw {
            out.scale[p] = [taps[0].scale, taps[1].scale, taps[2].scale];
        }
    }
    out
}

/// `out[p]` = the weighted sum of point `p`'s corners in `img`, `P` corners a
/// point (a constant, so the loop over them unrolls).
#[inline(always)]
fn sum_corners<T: Float, const P: usize>(img: &[T], k: &Corners<T>, out: &mut [T]) {
    let rows = k.offset.chunks_exact(P).zip(k.w.chunks_exact(P));
    for (v, (offs, ws)) in out.iter_mut().zip(rows) {
        let mut acc = c::<T>(0.0);
        for (&o, &w) in offs.iter().zip(ws) {
            if o != OUTSIDE {
                acc += w * img[o];
            }
        }
        *v = acc;
    }
}

/// The sampled values `(N, C, P)` of `input` `(N, C, *sizes)` at `grid` `(N, P, d)`.
pub fn forward<T: Float>(spec: &Spec, input: &[T], grid: &[T]) -> Vec<T> {
    let (cs, ps, s, d) = (spec.channels, spec.points, spec.pixels(), spec.sizes.len());
    let mut out = vec![c::<T>(0.0); spec.batch * cs * ps];
    let work = out.len() * (1 << d);
    par_over_batch(&mut out, cs * ps, work, |n, o| {
        let k = corners(spec, grid, n, false);
        for (ch, oc) in o.chunks_mut(ps).enumerate() {
            let img = &input[(n * cs + ch) * s..(n * cs + ch + 1) * s];
            match k.per {
                1 => sum_corners::<T, 1>(img, &k, oc),
                4 => sum_corners::<T, 4>(img, &k, oc),
                8 => sum_corners::<T, 8>(img, &k, oc),
                _ => sum_corners::<T, 16>(img, &k, oc),
            }
        }
    });
    out
}

/// The gradients with respect to `input` (`(N, C, *sizes)`, when `need_input`)
/// and to `grid` (`(N, P, d)`, when `need_grid`) of `sum(g * forward)`.
pub fn backward<T: Float>(
    spec: &Spec,
    input: &[T],
    grid: &[T],
    g: &[T],
    need_input: bool,
    need_grid: bool,
) -> (Option<Vec<T>>, Option<Vec<T>>) {
    let (cs, ps, s, d) = (spec.channels, spec.points, spec.pixels(), spec.sizes.len());
    let work = g.len() * (1 << d);
    // Nearest sampling is piecewise constant: no gradient flows to the grid.
    let grid_flows = need_grid && spec.mode != Mode::Nearest;
    let zero = c::<T>(0.0);
    let mut gi = vec![zero; if need_input { spec.batch * cs * s } else { 0 }];
    let mut gg = vec![zero; if need_grid { spec.batch * ps * d } else { 0 }];
    // One item per sample: its slices of both gradients, so that the
    // sample's corners are built once and serve both.
    fn split<T>(v: &mut [T], chunk: usize, batch: usize) -> Vec<Option<&mut [T]>> {
        if v.is_empty() {
            (0..batch).map(|_| None).collect()
        } else {
            v.chunks_mut(chunk).map(Some).collect()
        }
    }
    let items: Vec<_> = split(&mut gi, cs * s, spec.batch)
        .into_iter()
        .zip(split(&mut gg, ps * d, spec.batch))
        .enumerate()
        .collect();
    let one = |(n, (gi_n, gg_n)): (usize, GradSlices<'_, T>)| {
        let gg_n = gg_n.filter(|_| grid_flows);
        if gi_n.is_none() && gg_n.is_none() {
            return;
        }
        let k = corners(spec, grid, n, gg_n.is_some());
        if let Some(o) = gi_n {
            for (ch, oc) in o.chunks_mut(s).enumerate() {
                let gc = &g[(n * cs + ch) * ps..(n * cs + ch + 1) * ps];
                let rows = k.offset.chunks_exact(k.per).zip(k.w.chunks_exact(k.per));
                for (&gv, (offs, ws)) in gc.iter().zip(rows) {
                    for (&off, &w) in offs.iter().zip(ws) {
                        if off != OUTSIDE {
                            oc[off] += w * gv;
                        }
                    }
                }
            }
        }
        if let Some(o) = gg_n {
            // d(out)/d(coordinate) per point, summed over the channels.
            let mut acc = vec![[zero; 3]; ps];
            for ch in 0..cs {
                let img = &input[(n * cs + ch) * s..(n * cs + ch + 1) * s];
                let gc = &g[(n * cs + ch) * ps..(n * cs + ch + 1) * ps];
                let rows = k.offset.chunks_exact(k.per).zip(k.dw.chunks_exact(k.per));
                for ((&gv, a), (offs, dws)) in gc.iter().zip(acc.iter_mut()).zip(rows) {
                    for (&off, dw) in offs.iter().zip(dws) {
                        if off == OUTSIDE {
                            continue;
                        }
                        let dot = gv * img[off];
                        for (ak, &dk) in a.iter_mut().zip(dw).take(d) {
                            *ak += dk * dot;
                        }
                    }
                }
            }
            for (p, a) in acc.iter().enumerate() {
                for kd in 0..d {
                    o[p * d + (d - 1 - kd)] = a[kd] * k.scale[p][kd];
                }
            }
        }
    };
    if work < super::GRAIN {
        items.into_iter().for_each(one);
    } else {
        items.into_par_iter().for_each(one);
    }
    (need_input.then_some(gi), need_grid.then_some(gg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(
        mode: Mode,
        padding: Padding,
        align_corners: bool,
        sizes: &[usize],
        points: usize,
    ) -> Spec {
        Spec {
            mode,
            padding,
            align_corners,
            batch: 1,
            channels: 2,
            sizes: sizes.to_vec(),
            points,
        }
    }

    #[test]
    fn bilinear_reads_pixels_and_midpoints() {
        // A 2x2 image per channel; align_corners puts -1 and 1 on the corner centres.
        let img = [0.0f64, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0];
        let grid = [-1.0, -1.0, 1.0, 1.0, 0.0, 0.0];
        let s = spec(Mode::Bilinear, Padding::Zeros, true, &[2, 2], 3);
        assert_eq!(
            forward(&s, &img, &grid),
            vec![0.0, 3.0, 1.5, 10.0, 13.0, 11.5]
        );
        let s = spec(Mode::Nearest, Padding::Zeros, true, &[2, 2], 3);
        // The centre rounds half to even: pixel (0, 0).
        assert_eq!(
            forward(&s, &img, &grid),
            vec![0.0, 3.0, 0.0, 10.0, 13.0, 10.0]
        );
    }

    #[test]
    fn reflection_mirrors_and_clips() {
        assert_eq!(reflect(5.5f64, 0.0, 8.0).0, 2.5);
        assert_eq!(reflect(-1.5f64, 0.0, 8.0), (1.5, -1.0));
        assert_eq!(pad(7.0f64, 4, Padding::Border, true), (3.0, 0.0));
        assert_eq!(round_even(2.5f64), 2.0);
        assert_eq!(round_even(3.5f64), 4.0);
    }

    #[test]
    fn gradients_match_finite_differences() {
        let img: Vec<f64> = (0..2 * 3 * 4 * 5)
            .map(|i| ((i * 37 % 11) as f64).sin())
            .collect();
        let grid: Vec<f64> = (0..4 * 3)
            .map(|i| ((i * 7 % 13) as f64) / 7.0 - 0.9)
            .collect();
        let g: Vec<f64> = (0..2 * 4).map(|i| 1.0 + i as f64 / 3.0).collect();
        for mode in [Mode::Bilinear, Mode::Bicubic] {
            for padding in [Padding::Zeros, Padding::Border, Padding::Reflection] {
                for ac in [false, true] {
                    let sizes: &[usize] = if mode == Mode::Bicubic {
                        &[4, 5]
                    } else {
                        &[3, 4, 5]
                    };
                    let d = sizes.len();
                    let mut s = spec(mode, padding, ac, sizes, 4);
                    s.channels = if d == 2 { 6 } else { 2 };
                    let grid = &grid[..4 * d];
                    let f = |img: &[f64], grid: &[f64]| -> f64 {
                        forward(&s, img, grid)
                            .iter()
                            .zip(g.iter().cycle())
                            .map(|(a, b)| a * b)
                            .sum()
                    };
                    let gfull: Vec<f64> = g.iter().cycle().take(s.channels * 4).copied().collect();
                    let (gi, gg) = backward(&s, &img, grid, &gfull, true, true);
                    let (gi, gg) = (gi.unwrap(), gg.unwrap());
                    let h = 1e-6;
                    for i in 0..grid.len() {
                        let (mut up, mut down) = (grid.to_vec(), grid.to_vec());
                        up[i] += h;
                        down[i] -= h;
                        let fd = (f(&img, &up) - f(&img, &down)) / (2.0 * h);
                        assert!(
                            (gg[i] - fd).abs() < 1e-5,
                            "{mode:?} {padding:?} {ac} grid {i}: {} vs {fd}",
                            gg[i]
                        );
                    }
                    for i in (0..img.len()).step_by(7) {
                        let (mut up, mut down) = (img.clone(), img.clone());
                        up[i] += h;
                        down[i] -= h;
                        let fd = (f(&up, grid) - f(&down, grid)) / (2.0 * h);
                        assert!(
                            (gi[i] - fd).abs() < 1e-5,
                            "{mode:?} {padding:?} {ac} input {i}: {} vs {fd}",
                            gi[i]
                        );
                    }
                }
            }
        }
    }
}

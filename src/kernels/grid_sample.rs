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

use super::vmath::{detected, isa, isa_loop, Isa};
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

#[inline(always)]
fn c<T: Float>(v: f64) -> T {
    T::from_f64(v)
}

/// A grid value as a pixel coordinate, and its derivative.
#[inline(always)]
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
#[inline(always)]
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
#[inline(always)]
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
#[inline(always)]
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
#[inline(always)]
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
#[inline(always)]
fn is_odd<T: Float>(f: T) -> bool {
    let v = crate::tensor::Element::to_f64(f);
    v.abs() < 9_007_199_254_740_992.0 && (v as i64) & 1 != 0
}

/// Round half to even, as `torch.round` and C's `nearbyint`.
#[inline(always)]
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

#[inline(always)]
fn cubic_near<T: Float>(x: T) -> (T, T) {
    let (a2, a3) = (c::<T>(A + 2.0), c::<T>(A + 3.0));
    let v = (a2 * x - a3) * x * x + c::<T>(1.0);
    let d = (c::<T>(3.0) * a2 * x - c::<T>(2.0) * a3) * x;
    (v, d)
}

#[inline(always)]
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

/// Points per task. A task builds its points' corner table once and then
/// reads it for every channel: at most 16 corners a point, so the table
/// (offsets and weights) stays in L1 while each channel's plane is walked in
/// point order. Fixed, so a task's work (and every result's arithmetic) is
/// the same whatever the thread count.
const TILE: usize = 256;

/// Runs `f(0)`, ..., `f(count - 1)` on the pool when `work` pays for it.
fn each_task(count: usize, work: usize, f: impl Fn(usize) + Sync) {
    super::parallel::run(work, |threads| {
        if threads == 1 {
            (0..count).for_each(&f);
        } else {
            super::parallel::tasks(count, f);
        }
    });
}

/// Marks a corner outside the image in a corner table.
const OUTSIDE: usize = usize::MAX;

/// Corners a point has (slots in a corner table).
fn corners_per_point(spec: &Spec) -> usize {
    match spec.mode {
        Mode::Bilinear => 1 << spec.sizes.len(),
        Mode::Nearest => 1,
        Mode::Bicubic => 16,
    }
}

/// A corner table's weight derivatives (per slot) and coordinate scales (per point).
type Derivatives<'a, T> = (&'a mut [[T; 3]], &'a mut [[T; 3]]);

/// The corner table of points `p0..` of sample `n` (as many as `off` holds),
/// `per` slots a point: the corners inside the image in the order
/// `each_corner` visits them, then unused slots with offset `OUTSIDE` and
/// weight 0. A corner outside is never read (as PyTorch never reads it: a
/// NaN pixel must not leak in through a zero weight). With `dw`, also each
/// slot's weight derivatives and each point's `d(coordinate)/d(grid value)`.
#[inline(always)]
fn fill_corners<T: Float>(
    spec: &Spec,
    grid: &[T],
    n: usize,
    p0: usize,
    off: &mut [usize],
    w: &mut [T],
    mut dw: Option<Derivatives<'_, T>>,
) {
    let d = spec.sizes.len();
    let per = corners_per_point(spec);
    let zero = c::<T>(0.0);
    for (i, (offs, ws)) in off
        .chunks_exact_mut(per)
        .zip(w.chunks_exact_mut(per))
        .enumerate()
    {
        let taps = point_taps(spec, grid, n, p0 + i);
        let mut j = 0;
        match dw.as_mut() {
            None if d == 2 => {
                // The common case written out (the same products as
                // `each_corner`'s, whose third factor is an exact 1).
                let (ty, tx) = (&taps[0], &taps[1]);
                for a in &ty.taps[..ty.len] {
                    for b in &tx.taps[..tx.len] {
                        if a.inside && b.inside {
                            offs[j] = a.offset + b.offset;
                            ws[j] = a.w * b.w;
                            j += 1;
                        }
                    }
                }
            }
            None => each_corner(&taps, d, |o, wt, _| {
                offs[j] = o;
                ws[j] = wt;
                j += 1;
            }),
            Some((dws, scale)) => {
                let dws = &mut dws[i * per..(i + 1) * per];
                each_corner(&taps, d, |o, wt, dk| {
                    offs[j] = o;
                    ws[j] = wt;
                    dws[j] = dk;
                    j += 1;
                });
                dws[j..].fill([zero; 3]);
                scale[i] = [taps[0].scale, taps[1].scale, taps[2].scale];
            }
        }
        offs[j..].fill(OUTSIDE);
        ws[j..].fill(zero);
    }
}

/// `out[p]` = the weighted sum of point `p`'s corners in `img`, `P` corners a
/// point (a constant, so the loop over them unrolls). An unused slot reads
/// pixel 0 and adds an exact +0 instead (a select, not a branch: which slots
/// are unused follows the points, which a branch predictor cannot learn);
/// the sum starts at +0 and so is never -0, and adding +0 changes nothing.
#[inline(always)]
fn sum_corners<T: Float, const P: usize>(img: &[T], off: &[usize], w: &[T], out: &mut [T]) {
    let zero = c::<T>(0.0);
    for (v, (offs, ws)) in out
        .iter_mut()
        .zip(off.chunks_exact(P).zip(w.chunks_exact(P)))
    {
        let mut acc = zero;
        for k in 0..P {
            let inside = offs[k] != OUTSIDE;
            let x = img[super::pick(inside, offs[k], 0)];
            acc += super::pick(inside, ws[k] * x, zero);
        }
        *v = acc;
    }
}

/// `img[corner] += w * g[p]` over every used corner of every point, in
/// point order (an unused slot adds an exact +0 to pixel 0, as above).
#[inline(always)]
fn scatter_corners<T: Float, const P: usize>(g: &[T], off: &[usize], w: &[T], img: &mut [T]) {
    let zero = c::<T>(0.0);
    for (&gv, (offs, ws)) in g.iter().zip(off.chunks_exact(P).zip(w.chunks_exact(P))) {
        for k in 0..P {
            let inside = offs[k] != OUTSIDE;
            img[super::pick(inside, offs[k], 0)] += super::pick(inside, ws[k] * gv, zero);
        }
    }
}

/// The sampled values `(N, C, P)` of `input` `(N, C, *sizes)` at `grid` `(N, P, d)`.
pub fn forward<T: Float>(spec: &Spec, input: &[T], grid: &[T]) -> Vec<T> {
    let (cs, ps, s) = (spec.channels, spec.points, spec.pixels());
    let per = corners_per_point(spec);
    let mut out = vec![c::<T>(0.0); spec.batch * cs * ps];
    let tiles = ps.div_ceil(TILE);
    let work = out.len() * per;
    let dst = super::SendPtr(out.as_mut_ptr());
    each_task(spec.batch * tiles, work, |task| {
        let (n, p0) = (task / tiles, task % tiles * TILE);
        let np = TILE.min(ps - p0);
        let mut off = vec![OUTSIDE; np * per];
        let mut w = vec![c::<T>(0.0); np * per];
        table(spec, grid, n, p0, &mut off, &mut w);
        for ch in 0..cs {
            let img = &input[(n * cs + ch) * s..(n * cs + ch + 1) * s];
            // SAFETY: each (sample, channel, tile) run of `out` belongs to one
            // task, and `out` outlives the region.
            let oc = unsafe {
                std::slice::from_raw_parts_mut(dst.get().add((n * cs + ch) * ps + p0), np)
            };
            sums(img, &off, &w, oc);
        }
    });
    out
}

// The forward's two loops, compiled per instruction set: on the baseline
// target each `floor` of a corner table is a libm call, and the sums'
// selects stay scalar.
isa_loop! {
    /// [`fill_corners`] without derivatives.
    fn table / table_on<T>(spec: &Spec, grid: &[T], n: usize, p0: usize, off: &mut [usize], w: &mut [T])
    where [T: Float] {
        fill_corners(spec, grid, n, p0, off, w, None)
    }
}

isa_loop! {
    /// [`sum_corners`] with the table's corners a point (`off.len() / out.len()`).
    fn sums / sums_on<T>(img: &[T], off: &[usize], w: &[T], out: &mut [T]) where [T: Float] {
        match off.len() / out.len().max(1) {
            1 => sum_corners::<T, 1>(img, off, w, out),
            4 => sum_corners::<T, 4>(img, off, w, out),
            8 => sum_corners::<T, 8>(img, off, w, out),
            _ => sum_corners::<T, 16>(img, off, w, out),
        }
    }
}

/// Channel blocks a sample's input gradient is split into: one task a
/// sample when the batch alone keeps the threads busy, else a few blocks
/// a sample (each channel's plane is written by one task either way, in
/// point order, so the result does not depend on the split).
fn channel_blocks(batch: usize, channels: usize) -> usize {
    4usize.div_ceil(batch.max(1)).clamp(1, channels.max(1))
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
    let per = corners_per_point(spec);
    let work = g.len() * per;
    // Nearest sampling is piecewise constant: no gradient flows to the grid.
    let grid_flows = need_grid && spec.mode != Mode::Nearest;
    let zero = c::<T>(0.0);
    let mut gi = vec![zero; if need_input { spec.batch * cs * s } else { 0 }];
    let mut gg = vec![zero; if need_grid { spec.batch * ps * d } else { 0 }];
    // The input's gradient reads every point's corners of a sample, kept
    // whole (built once); the grid's gradient reads a tile's, with their
    // derivatives, built and used in one task.
    let slots = if need_input { spec.batch * ps * per } else { 0 };
    let mut off = vec![OUTSIDE; slots];
    let mut w = vec![zero; slots];
    let tiles = ps.div_ceil(TILE);
    if need_input || grid_flows {
        let (offp, wp, ggp) = (
            super::SendPtr(off.as_mut_ptr()),
            super::SendPtr(w.as_mut_ptr()),
            super::SendPtr(gg.as_mut_ptr()),
        );
        each_task(spec.batch * tiles, work, |task| {
            let (n, p0) = (task / tiles, task % tiles * TILE);
            let np = TILE.min(ps - p0);
            let (mut own_off, mut own_w) = (Vec::new(), Vec::new());
            let (toff, tw): (&mut [usize], &mut [T]) = if need_input {
                let at = (n * ps + p0) * per;
                // SAFETY: each tile's slots belong to one task.
                unsafe {
                    (
                        std::slice::from_raw_parts_mut(offp.get().add(at), np * per),
                        std::slice::from_raw_parts_mut(wp.get().add(at), np * per),
                    )
                }
            } else {
                own_off.resize(np * per, OUTSIDE);
                own_w.resize(np * per, zero);
                (&mut own_off[..], &mut own_w[..])
            };
            if !grid_flows {
                fill_corners(spec, grid, n, p0, toff, tw, None);
                return;
            }
            let mut dws = vec![[zero; 3]; np * per];
            let mut scale = vec![[zero; 3]; np];
            fill_corners(spec, grid, n, p0, toff, tw, Some((&mut dws, &mut scale)));
            // d(out)/d(coordinate) per point, summed over the channels in
            // order; an unused slot's derivatives are 0 and its read is
            // replaced by +0, so it adds an exact +0.
            let mut acc = vec![[zero; 3]; np];
            for ch in 0..cs {
                let img = &input[(n * cs + ch) * s..(n * cs + ch + 1) * s];
                let gc = &g[(n * cs + ch) * ps + p0..(n * cs + ch) * ps + p0 + np];
                let rows = toff.chunks_exact(per).zip(dws.chunks_exact(per));
                for ((&gv, a), (offs, dw)) in gc.iter().zip(acc.iter_mut()).zip(rows) {
                    for (&o, dk) in offs.iter().zip(dw) {
                        let inside = o != OUTSIDE;
                        let dot = super::pick(inside, gv * img[super::pick(inside, o, 0)], zero);
                        for (ak, &dkk) in a.iter_mut().zip(dk).take(d) {
                            *ak += dkk * dot;
                        }
                    }
                }
            }
            // SAFETY: each tile's points of the grid's gradient belong to one task.
            let o =
                unsafe { std::slice::from_raw_parts_mut(ggp.get().add((n * ps + p0) * d), np * d) };
            for (p, a) in acc.iter().enumerate() {
                for kd in 0..d {
                    o[p * d + (d - 1 - kd)] = a[kd] * scale[p][kd];
                }
            }
        });
    }
    if need_input {
        let blocks = channel_blocks(spec.batch, cs);
        let per_block = cs.div_ceil(blocks);
        let gip = super::SendPtr(gi.as_mut_ptr());
        let (off, w) = (&off, &w);
        each_task(spec.batch * blocks, work, |task| {
            let (n, b) = (task / blocks, task % blocks);
            let (t_off, t_w) = (
                &off[n * ps * per..(n + 1) * ps * per],
                &w[n * ps * per..(n + 1) * ps * per],
            );
            for ch in b * per_block..((b + 1) * per_block).min(cs) {
                let gc = &g[(n * cs + ch) * ps..(n * cs + ch + 1) * ps];
                // SAFETY: each (sample, channel) plane belongs to one task.
                let oc =
                    unsafe { std::slice::from_raw_parts_mut(gip.get().add((n * cs + ch) * s), s) };
                match per {
                    1 => scatter_corners::<T, 1>(gc, t_off, t_w, oc),
                    4 => scatter_corners::<T, 4>(gc, t_off, t_w, oc),
                    8 => scatter_corners::<T, 8>(gc, t_off, t_w, oc),
                    _ => scatter_corners::<T, 16>(gc, t_off, t_w, oc),
                }
            }
        });
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

    /// Point by point, channel by channel, with a branch on every corner:
    /// what the tiled tables must reproduce bit for bit.
    fn reference(spec: &Spec, input: &[f64], grid: &[f64], g: &[f64]) -> [Vec<f64>; 3] {
        let (cs, ps, s, d) = (spec.channels, spec.points, spec.pixels(), spec.sizes.len());
        let mut out = vec![0.0; spec.batch * cs * ps];
        let mut gi = vec![0.0; spec.batch * cs * s];
        let mut gg = vec![0.0; spec.batch * ps * d];
        for n in 0..spec.batch {
            for p in 0..ps {
                let taps = point_taps(spec, grid, n, p);
                let mut acc = [0.0; 3];
                for ch in 0..cs {
                    let at = (n * cs + ch) * s;
                    let gv = g[(n * cs + ch) * ps + p];
                    let mut v = 0.0;
                    each_corner(&taps, d, |o, w, dws| {
                        v += w * input[at + o];
                        gi[at + o] += w * gv;
                        let dot = gv * input[at + o];
                        for k in 0..d {
                            acc[k] += dws[k] * dot;
                        }
                    });
                    out[(n * cs + ch) * ps + p] = v;
                }
                for k in 0..d {
                    gg[(n * ps + p) * d + (d - 1 - k)] = if spec.mode == Mode::Nearest {
                        0.0
                    } else {
                        acc[k] * taps[k].scale
                    };
                }
            }
        }
        [out, gi, gg]
    }

    /// Equal bits, any NaN matching any NaN: a NaN's sign and payload
    /// follow operand order, which the optimiser may swap in a commutative
    /// add (a bicubic weight's derivative is negated, so +NaN and -NaN meet
    /// in a sum), and carry no meaning.
    fn same_bits(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn tiles_reproduce_the_point_by_point_sums() {
        // Two tiles and a part of a third per sample, points outside the
        // image, a NaN and an infinite grid value, and a NaN pixel at offset
        // 0 that no outside corner may read.
        for (mode, sizes) in [
            (Mode::Bilinear, &[5usize, 7][..]),
            (Mode::Nearest, &[5, 7][..]),
            (Mode::Bicubic, &[5, 7][..]),
            (Mode::Bilinear, &[3, 4, 5][..]),
            (Mode::Nearest, &[3, 4, 5][..]),
        ] {
            for padding in [Padding::Zeros, Padding::Border, Padding::Reflection] {
                let d = sizes.len();
                let points = 2 * TILE + 37;
                let spec = Spec {
                    mode,
                    padding,
                    align_corners: false,
                    batch: 3,
                    channels: 5,
                    sizes: sizes.to_vec(),
                    points,
                };
                let s = spec.pixels();
                let mut input: Vec<f64> = (0..3 * 5 * s)
                    .map(|i| ((i * 37 % 101) as f64 / 17.0).sin())
                    .collect();
                input[5 * s] = f64::NAN;
                let mut grid: Vec<f64> = (0..3 * points * d)
                    .map(|i| ((i * 7919 % 1000) as f64) / 400.0 - 1.25)
                    .collect();
                grid[3] = f64::NAN;
                grid[8] = f64::INFINITY;
                let g: Vec<f64> = (0..3 * 5 * points)
                    .map(|i| 1.0 + (i % 13) as f64 / 7.0)
                    .collect();
                let [out, gi, gg] = reference(&spec, &input, &grid, &g);
                assert!(
                    same_bits(&forward(&spec, &input, &grid), &out),
                    "{mode:?} {padding:?}"
                );
                let (got_gi, got_gg) = backward(&spec, &input, &grid, &g, true, true);
                assert!(
                    same_bits(&got_gi.unwrap(), &gi),
                    "{mode:?} {padding:?} input"
                );
                assert!(
                    same_bits(&got_gg.unwrap(), &gg),
                    "{mode:?} {padding:?} grid"
                );
                // Each gradient alone is the same.
                let (only_gi, none) = backward(&spec, &input, &grid, &g, true, false);
                assert!(none.is_none() && same_bits(&only_gi.unwrap(), &gi));
                let (none, only_gg) = backward(&spec, &input, &grid, &g, false, true);
                assert!(none.is_none() && same_bits(&only_gg.unwrap(), &gg));
            }
        }
    }

    #[test]
    fn channel_blocks_cover_every_channel_once() {
        for batch in 0..6 {
            for channels in 0..9 {
                let blocks = channel_blocks(batch, channels);
                let per = channels.div_ceil(blocks);
                // As `backward` walks them (a last block may be empty).
                let seen: Vec<usize> = (0..blocks)
                    .flat_map(|b| b * per..((b + 1) * per).min(channels))
                    .collect();
                assert_eq!(
                    seen,
                    (0..channels).collect::<Vec<_>>(),
                    "{batch} {channels}"
                );
            }
        }
    }
}

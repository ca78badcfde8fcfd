//! Pooling and resampling over the last two dimensions of a stack of planes.
//!
//! Average pooling (plain and adaptive) and nearest/bilinear interpolation
//! are all separable linear maps: each output row reads a few input rows
//! with weights, each output column a few input columns. [`Taps`] lists them
//! per axis, and one kernel pair applies such a map ([`separable`]) and its
//! adjoint ([`separable_adjoint`], the backward). Max pooling reads windows
//! of evenly spaced positions ([`Window`]) and records where each maximum
//! was, as a flat index into its plane, as PyTorch does.

use super::{par_ranges, SendPtr};
use crate::tensor::{Element, Float};

/// For each output index along one axis: the input indices it reads and
/// their weights, `idx[off[o]..off[o + 1]]` and `wt[..]`.
#[derive(Clone, Debug, Default)]
pub struct Taps {
    pub len_in: usize,
    pub off: Vec<usize>,
    pub idx: Vec<usize>,
    pub wt: Vec<f64>,
    /// Every output copies one input with weight 1 (nearest resampling): the
    /// value is stored, not added to a zero, so -0.0 stays -0.0 (an average
    /// starts from +0.0, as PyTorch's does).
    pub copies: bool,
}

impl Taps {
    pub fn new(len_in: usize) -> Taps {
        Taps {
            len_in,
            off: vec![0],
            idx: Vec::new(),
            wt: Vec::new(),
            copies: false,
        }
    }

    /// Room for `outs` outputs of `per` taps each, allocated fallibly (an
    /// output side comes from the user).
    pub fn with_capacity(len_in: usize, outs: usize, per: usize) -> Taps {
        let taps = outs.saturating_mul(per);
        let mut off = crate::error::alloc_vec(outs.saturating_add(1));
        off.push(0);
        Taps {
            len_in,
            off,
            idx: crate::error::alloc_vec(taps),
            wt: crate::error::alloc_vec(taps),
            copies: false,
        }
    }

    /// Appends the next output index's taps (growing fallibly: the tables
    /// are as long as an output side, which comes from the user).
    pub fn push(&mut self, taps: impl IntoIterator<Item = (usize, f64)>) {
        for (i, w) in taps {
            crate::error::reserve_more(&mut self.idx, 1);
            crate::error::reserve_more(&mut self.wt, 1);
            self.idx.push(i);
            self.wt.push(w);
        }
        crate::error::reserve_more(&mut self.off, 1);
        self.off.push(self.idx.len());
    }

    pub fn len_out(&self) -> usize {
        self.off.len() - 1
    }

    /// The identity of a length-1 axis (the `H` of a one-dimensional op).
    pub fn unit() -> Taps {
        let mut t = Taps::new(1);
        t.push([(0, 1.0)]);
        t.copies = true;
        t
    }
}

/// Planes per parallel task, so each task has about a grain's worth of work.
fn planes_per_task(per_plane: usize) -> usize {
    (super::GRAIN / per_plane.max(1)).max(1)
}

/// `out[p, oh, ow] = sum th[oh] * tw[ow] * x[p, ih, iw]` over `planes` planes.
pub fn separable<T: Float>(x: &[T], planes: usize, th: &Taps, tw: &Taps) -> Vec<T> {
    let (h, w) = (th.len_in, tw.len_in);
    let (oh, ow) = (th.len_out(), tw.len_out());
    let mut out: Vec<T> = crate::error::filled_vec(planes * oh * ow, <T as Element>::zero());
    let op = SendPtr(out.as_mut_ptr());
    let (wh, ww): (Vec<T>, Vec<T>) = (
        th.wt.iter().map(|&v| T::from_f64(v)).collect(),
        tw.wt.iter().map(|&v| T::from_f64(v)).collect(),
    );
    let per = planes_per_task(h * w + oh * ow);
    par_ranges(planes.div_ceil(per) * super::GRAIN, |a, b| {
        let (a, b) = (a / super::GRAIN * per, (b / super::GRAIN * per).min(planes));
        let mut tmp = crate::error::filled_vec(h * ow, <T as Element>::zero());
        for p in a..b {
            let xp = &x[p * h * w..(p + 1) * h * w];
            // Columns first: tmp[ih, ow].
            for ih in 0..h {
                let row = &xp[ih * w..(ih + 1) * w];
                let t = &mut tmp[ih * ow..(ih + 1) * ow];
                for (o, v) in t.iter_mut().enumerate() {
                    if tw.copies {
                        *v = row[tw.idx[tw.off[o]]];
                        continue;
                    }
                    let mut acc = <T as Element>::zero();
                    for q in tw.off[o]..tw.off[o + 1] {
                        acc += ww[q] * row[tw.idx[q]];
                    }
                    *v = acc;
                }
            }
            // SAFETY: plane `p` of `out` belongs to this range alone.
            let dst = unsafe { std::slice::from_raw_parts_mut(op.get().add(p * oh * ow), oh * ow) };
            for o in 0..oh {
                let d = &mut dst[o * ow..(o + 1) * ow];
                if th.copies {
                    let i = th.idx[th.off[o]];
                    d.copy_from_slice(&tmp[i * ow..(i + 1) * ow]);
                    continue;
                }
                for q in th.off[o]..th.off[o + 1] {
                    let (src, a) = (&tmp[th.idx[q] * ow..(th.idx[q] + 1) * ow], wh[q]);
                    for (v, s) in d.iter_mut().zip(src) {
                        *v += a * *s;
                    }
                }
            }
        }
    });
    out
}

/// The adjoint of [`separable`]: `gx[p, ih, iw] = sum th * tw * g[p, oh, ow]`.
pub fn separable_adjoint<T: Float>(g: &[T], planes: usize, th: &Taps, tw: &Taps) -> Vec<T> {
    let (h, w) = (th.len_in, tw.len_in);
    let (oh, ow) = (th.len_out(), tw.len_out());
    let mut out: Vec<T> = crate::error::filled_vec(planes * h * w, <T as Element>::zero());
    let op = SendPtr(out.as_mut_ptr());
    let (wh, ww): (Vec<T>, Vec<T>) = (
        th.wt.iter().map(|&v| T::from_f64(v)).collect(),
        tw.wt.iter().map(|&v| T::from_f64(v)).collect(),
    );
    let per = planes_per_task(h * w + oh * ow);
    par_ranges(planes.div_ceil(per) * super::GRAIN, |a, b| {
        let (a, b) = (a / super::GRAIN * per, (b / super::GRAIN * per).min(planes));
        let mut tmp = crate::error::filled_vec(h * ow, <T as Element>::zero());
        for p in a..b {
            let gp = &g[p * oh * ow..(p + 1) * oh * ow];
            tmp.fill(<T as Element>::zero());
            for o in 0..oh {
                let src = &gp[o * ow..(o + 1) * ow];
                for q in th.off[o]..th.off[o + 1] {
                    let (d, a) = (&mut tmp[th.idx[q] * ow..(th.idx[q] + 1) * ow], wh[q]);
                    for (v, s) in d.iter_mut().zip(src) {
                        *v += a * *s;
                    }
                }
            }
            // SAFETY: plane `p` of `out` belongs to this range alone.
            let dst = unsafe { std::slice::from_raw_parts_mut(op.get().add(p * h * w), h * w) };
            for ih in 0..h {
                let t = &tmp[ih * ow..(ih + 1) * ow];
                let row = &mut dst[ih * w..(ih + 1) * w];
                for (o, &v) in t.iter().enumerate() {
                    for q in tw.off[o]..tw.off[o + 1] {
                        row[tw.idx[q]] += ww[q] * v;
                    }
                }
            }
        }
    });
    out
}

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
}

/// Max over each window and the flat in-plane index of the first maximum;
/// a NaN wins (the last one), as in PyTorch.
pub fn max_pool<T: Float>(x: &[T], planes: usize, wh: &Window, ww: &Window) -> (Vec<T>, Vec<i64>) {
    let (h, w) = (wh.len_in, ww.len_in);
    let (oh, ow) = (wh.len_out(), ww.len_out());
    let n = planes * oh * ow;
    let mut out: Vec<T> = crate::error::filled_vec(n, <T as Element>::zero());
    let mut idx: Vec<i64> = crate::error::filled_vec(n, 0);
    let (op, ip) = (SendPtr(out.as_mut_ptr()), SendPtr(idx.as_mut_ptr()));
    let per = planes_per_task(h * w);
    let pairs = |win: &Window| {
        win.step == 1 && (0..win.len_out()).all(|o| win.start[o] == 2 * o && win.count[o] == 2)
    };
    let two_by_two = pairs(wh) && pairs(ww);
    par_ranges(planes.div_ceil(per) * super::GRAIN, |a, b| {
        let (a, b) = (a / super::GRAIN * per, (b / super::GRAIN * per).min(planes));
        for p in a..b {
            let xp = &x[p * h * w..(p + 1) * h * w];
            if two_by_two {
                // SAFETY: plane `p` of the outputs belongs to this range alone.
                let (o, i) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(op.get().add(p * oh * ow), oh * ow),
                        std::slice::from_raw_parts_mut(ip.get().add(p * oh * ow), oh * ow),
                    )
                };
                max_pool_2x2(xp, w, oh, ow, o, i);
                continue;
            }
            for y in 0..oh {
                for xo in 0..ow {
                    // PyTorch's rule: a larger value or any NaN takes over
                    // (so the first maximum, or the last NaN). Done in two
                    // passes without data-dependent branches, which random
                    // data mispredicts: the maximum, then where it is.
                    let (sy, sx) = (wh.start[y], ww.start[xo]);
                    let (cy, cx) = (wh.count[y], ww.count[xo]);
                    let mut best = T::neg_infinity();
                    let mut nan = false;
                    for i in 0..cy {
                        let row = (sy + i * wh.step) * w + sx;
                        for j in 0..cx {
                            let v = xp[row + j * ww.step];
                            best = if v > best { v } else { best };
                            nan |= v.is_nan();
                        }
                    }
                    let mut at = sy * w + sx;
                    for i in (0..cy).rev() {
                        let row = (sy + i * wh.step) * w + sx;
                        for j in (0..cx).rev() {
                            let pos = row + j * ww.step;
                            let hit = if nan {
                                xp[pos].is_nan()
                            } else {
                                xp[pos] == best
                            };
                            let m = 0usize.wrapping_sub(hit as usize);
                            at = (pos & m) | (at & !m);
                        }
                    }
                    if nan {
                        best = T::nan();
                        // The reverse pass found the first NaN; PyTorch keeps the last.
                        for i in 0..cy {
                            let row = (sy + i * wh.step) * w + sx;
                            for j in 0..cx {
                                let pos = row + j * ww.step;
                                if xp[pos].is_nan() {
                                    at = pos;
                                }
                            }
                        }
                    }
                    if at >= h * w {
                        // An empty window (a dilated one can miss the input).
                        at = 0;
                    }
                    let o = (p * oh + y) * ow + xo;
                    // SAFETY: plane `p` of the outputs belongs to this range alone.
                    unsafe {
                        *op.get().add(o) = best;
                        *ip.get().add(o) = at as i64;
                    }
                }
            }
        }
    });
    (out, idx)
}

/// [`max_pool`] of one plane (rows of `w`) with 2x2 windows, stride 2, no
/// padding: LeNet's pooling spent a fifth of its training step in the
/// general loop's window bookkeeping. The four values are taken in
/// PyTorch's order with its rule, a larger value or any NaN takes over.
fn max_pool_2x2<T: Float>(x: &[T], w: usize, oh: usize, ow: usize, out: &mut [T], idx: &mut [i64]) {
    for y in 0..oh {
        let (r0, r1) = (2 * y * w, (2 * y + 1) * w);
        let (top, bottom) = (&x[r0..r0 + 2 * ow], &x[r1..r1 + 2 * ow]);
        let (o, i) = (
            &mut out[y * ow..(y + 1) * ow],
            &mut idx[y * ow..(y + 1) * ow],
        );
        for xo in 0..ow {
            let mut best = top[2 * xo];
            let mut at = r0 + 2 * xo;
            for (v, pos) in [
                (top[2 * xo + 1], r0 + 2 * xo + 1),
                (bottom[2 * xo], r1 + 2 * xo),
                (bottom[2 * xo + 1], r1 + 2 * xo + 1),
            ] {
                // `|` and a mask, not `||` and `if`: the compiler turned
                // those into branches that random data mispredicts.
                let take = (v > best) | v.is_nan();
                let m = 0usize.wrapping_sub(take as usize);
                best = if take { v } else { best };
                at = (pos & m) | (at & !m);
            }
            o[xo] = best;
            i[xo] = at as i64;
        }
    }
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

//! Pooling and resampling over the last two dimensions of a stack of planes.
//!
//! Average pooling (plain and adaptive) and nearest/bilinear interpolation
//! are all separable linear maps: each output row reads a few input rows
//! with weights, each output column a few input columns. [`Taps`] lists them
//! per axis, and one kernel pair applies such a map ([`separable`]) and its
//! adjoint ([`separable_adjoint`], the backward). Max pooling, which is not
//! linear, is in `max_pool`.

use super::{par_ranges, SendPtr};
use crate::tensor::{Element, Float};
use multiversion::multiversion;

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
pub(super) fn planes_per_task(per_plane: usize) -> usize {
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
    // The column taps are gathers, the row taps whole-row vector updates:
    // when the map shrinks the rows (pooling), rows go first, so the
    // gathers run over `oh` rows instead of `h` (8x fewer for an 8-row
    // window); otherwise columns first, over the input's rows.
    let rows_first = oh < h;
    par_ranges(planes.div_ceil(per) * super::GRAIN, |a, b| {
        let (a, b) = (a / super::GRAIN * per, (b / super::GRAIN * per).min(planes));
        let (tr, tc) = if rows_first { (oh, w) } else { (h, ow) };
        let mut tmp = crate::error::filled_vec(tr * tc, <T as Element>::zero());
        for p in a..b {
            let xp = &x[p * h * w..(p + 1) * h * w];
            // SAFETY: plane `p` of `out` belongs to this range alone.
            let dst = unsafe { std::slice::from_raw_parts_mut(op.get().add(p * oh * ow), oh * ow) };
            separable_plane(xp, (th, &wh), (tw, &ww), rows_first, &mut tmp, dst);
        }
    });
    out
}

/// One plane of [`separable`], through `tmp` (rows of the intermediate).
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn separable_plane<T: Float>(
    xp: &[T],
    (th, wh): (&Taps, &[T]),
    (tw, ww): (&Taps, &[T]),
    rows_first: bool,
    tmp: &mut [T],
    dst: &mut [T],
) {
    let (h, w, ow) = (th.len_in, tw.len_in, tw.len_out());
    if rows_first {
        tmp.fill(<T as Element>::zero());
        rows_pass(xp, w, th, wh, tmp);
        for (o, d) in dst.chunks_exact_mut(ow.max(1)).enumerate() {
            columns_pass(&tmp[o * w..(o + 1) * w], tw, ww, d);
        }
    } else {
        for ih in 0..h {
            columns_pass(
                &xp[ih * w..(ih + 1) * w],
                tw,
                ww,
                &mut tmp[ih * ow..(ih + 1) * ow],
            );
        }
        rows_pass(tmp, ow, th, wh, dst);
    }
}

/// One row of [`separable`]'s column pass: output column `o` of `t` from
/// its taps of `row`.
#[inline(always)]
fn columns_pass<T: Float>(row: &[T], tw: &Taps, ww: &[T], t: &mut [T]) {
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

/// [`separable`]'s row pass: output row `o` of `dst` (rows of `w`, zeros
/// unless copied) adds its taps' rows of `src`, weighted.
#[inline(always)]
fn rows_pass<T: Float>(src: &[T], w: usize, th: &Taps, wh: &[T], dst: &mut [T]) {
    for (o, d) in dst
        .chunks_exact_mut(w.max(1))
        .enumerate()
        .take(th.len_out())
    {
        if th.copies {
            let i = th.idx[th.off[o]];
            d.copy_from_slice(&src[i * w..(i + 1) * w]);
            continue;
        }
        for q in th.off[o]..th.off[o + 1] {
            let (s, a) = (&src[th.idx[q] * w..(th.idx[q] + 1) * w], wh[q]);
            for (v, x) in d.iter_mut().zip(s) {
                *v += a * *x;
            }
        }
    }
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

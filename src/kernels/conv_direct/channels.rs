//! The channel-vector blocks (AVX-512): each register holds one output
//! pixel's run of output channels, so a plane narrower than a vector (8x8,
//! or a strided layer's output) still fills every lane, and a stride is
//! only each pixel's own input offset. The forward block (also the input's
//! gradient) transposes the weight once to `[group, tap, channel]`,
//! channels padded to whole vectors, and its sums go to the output planes
//! through a small transpose; the weight-gradient block reads the output
//! gradient laid pixel-major the same way.

use super::Plan;
use crate::tensor::{DType, Element, Float};

/// Pixels (or taps) per block by vectors of channels per block, `[V - 1]`:
/// accumulators that leave room for the weight vectors and one input, and
/// few enough input offsets to stay in general registers (with 12 pixels by
/// 2 vectors, 12 offsets, a layer ran 1.5-2x slower in some processes than
/// in others; 8 pixels cured it).
const PIXELS: [usize; 4] = [8, 8, 8, 6];

/// Most pixels a block takes.
const MAXP: usize = 8;

/// The forward of one layer as the channel-vector blocks see it.
pub(super) struct Channels<T> {
    /// `wt[(group * taps + t) * ogp + o]`, zero past `og`.
    wt: Vec<T>,
    /// Output channels per group, padded to whole vectors.
    ogp: usize,
    /// Vectors per block and pixels per block.
    v: usize,
    pp: usize,
    /// Each output pixel's first input element (before the tap's offset)
    /// and its place in an output plane.
    pix: Vec<[usize; 2]>,
}

fn lanes<T: Element>() -> usize {
    64 / std::mem::size_of::<T>()
}

/// Each output pixel's first input element in `p`'s planes (whole rows)
/// under `stride`, and its place in an output plane.
pub(super) fn pixels(p: &Plan, stride: [usize; 2]) -> Vec<[usize; 2]> {
    let mut pix = Vec::with_capacity(p.oh * p.ow);
    for oy in 0..p.oh {
        for ox in 0..p.ow {
            pix.push([oy * stride[0] * p.row() + ox * stride[1], oy * p.ow + ox]);
        }
    }
    pix
}

/// The weight's gradient of one sample's share, the channel-vector way:
/// `acc[(group * taps + t) * ogp + o] += sum_pix gyt[pix, o] * src[pix + taps[t]]`,
/// with `gyt` the sample's output gradient pixel-major (`ld` a row, each
/// group's channels padded to `ogp`) and `srcs` each pixel's first input
/// element ([`pixels`]).
///
/// # Safety
/// `src` holds the plan's padded planes (whole rows), `gyt` one row of `ld`
/// per output pixel; the CPU has AVX-512F.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn weight_sample<T: Float>(
    p: &Plan,
    taps: &[usize],
    srcs: &[usize],
    src: *const T,
    gyt: &[T],
    ld: usize,
    ogp: usize,
    acc: &mut [T],
) {
    let (og, cg, kg, l) = (p.og(), p.cg(), taps.len(), lanes::<T>());
    let v = (ogp / l).min(4);
    let tb = PIXELS[v - 1];
    for gi in 0..p.groups {
        let xs = src.wrapping_add(gi * cg * p.plane());
        for o0 in (0..og).step_by(v * l) {
            let vv = (og - o0).div_ceil(l).min(v);
            for t0 in (0..kg).step_by(tb) {
                let tt = (kg - t0).min(tb);
                let ts: [usize; MAXP] =
                    std::array::from_fn(|i| taps.get(t0 + i).copied().unwrap_or(0));
                let g = gyt[gi * ogp + o0..].as_ptr();
                let out = acc[(gi * kg + t0) * ogp + o0..].as_mut_ptr();
                // SAFETY: forwarded; `gyt` has `srcs.len()` rows of `ld` with
                // `vv` vectors from `o0`, `acc` `tt` rows of `ogp` from `t0`.
                unsafe { wblock::<T>(vv, tt, xs, srcs, &ts, g, ld, out, ogp) };
            }
        }
    }
}

impl<T: Float> Channels<T> {
    /// `p` stores its rows whole (no phases); `stride` is the convolution's.
    pub(super) fn new(p: &Plan, stride: [usize; 2], w: &[T]) -> Self {
        let (og, kg) = (p.og(), p.cg() * p.kh * p.kw);
        let l = lanes::<T>();
        let ogp = og.next_multiple_of(l);
        let mut wt = vec![<T as Element>::zero(); p.groups * kg * ogp];
        for gi in 0..p.groups {
            for o in 0..og {
                for t in 0..kg {
                    wt[(gi * kg + t) * ogp + o] = w[(gi * og + o) * kg + t];
                }
            }
        }
        let v = (ogp / l).min(4);
        Channels {
            wt,
            ogp,
            v,
            pp: PIXELS[v - 1],
            pix: pixels(p, stride),
        }
    }

    /// Blocks of pixels a sample splits into.
    pub(super) fn units(&self) -> usize {
        self.pix.len().div_ceil(self.pp)
    }

    /// One sample's pixel blocks `units` against every output channel:
    /// `y[o, pix] = sum_t w[o, t] * src[pix + taps[t]] (+ bias[o])`. The
    /// blocks write a pixel-major scratch of about [`SCRATCH`] elements,
    /// moved to the output planes a channel at a time: stores straight to
    /// the planes, a plane apart, would all fall in a few cache sets.
    ///
    /// # Safety
    /// `src` holds the plan's padded planes, `y` its output planes; the CPU
    /// has AVX-512F.
    pub(super) unsafe fn sample(
        &self,
        p: &Plan,
        taps: &[usize],
        src: *const T,
        y: *mut T,
        bias: Option<&[T]>,
        units: std::ops::Range<usize>,
    ) {
        let (og, cg, kg, l) = (p.og(), p.cg(), taps.len(), lanes::<T>());
        let (ys, ld) = (p.oh * p.ow, p.groups * self.ogp);
        let chunk = (SCRATCH / (ld * self.pp)).max(1);
        let mut scratch = vec![<T as Element>::zero(); chunk * self.pp * ld];
        for u0 in units.clone().step_by(chunk) {
            let u1 = (u0 + chunk).min(units.end);
            let first = u0 * self.pp;
            let px = &self.pix[first..(u1 * self.pp).min(self.pix.len())];
            for (b, bpx) in px.chunks(self.pp).enumerate() {
                let srcs: [usize; MAXP] = std::array::from_fn(|i| bpx.get(i).map_or(0, |q| q[0]));
                let rows = scratch[b * self.pp * ld..].as_mut_ptr();
                for gi in 0..p.groups {
                    let xs = src.wrapping_add(gi * cg * p.plane());
                    for o0 in (0..og).step_by(self.v * l) {
                        let vv = (og - o0).div_ceil(l).min(self.v);
                        let wt = self.wt[(gi * kg * self.ogp + o0)..].as_ptr();
                        let at = rows.wrapping_add(gi * self.ogp + o0);
                        // SAFETY: forwarded; `wt` holds `kg` rows of `ogp`
                        // channels from `o0` (the block reads `vv` vectors of
                        // them), and the scratch `bpx.len()` rows of `ld`.
                        unsafe { block::<T>(vv, bpx.len(), xs, &srcs, taps, wt, self.ogp, at, ld) };
                    }
                }
            }
            for gi in 0..p.groups {
                for o in 0..og {
                    let (oc, col) = (gi * og + o, gi * self.ogp + o);
                    let b = bias.map_or(<T as Element>::zero(), |b| b[oc]);
                    // SAFETY: the caller's `y` holds `O` planes of `ys`.
                    let plane = unsafe { y.add(oc * ys) };
                    for (i, q) in px.iter().enumerate() {
                        let v = scratch[i * ld + col];
                        let v = if bias.is_some() { v + b } else { v };
                        // SAFETY: `q[1] < ys`; this task owns these pixels.
                        unsafe { *plane.add(q[1]) = v };
                    }
                }
            }
        }
    }
}

/// Elements of a task's pixel-major scratch.
const SCRATCH: usize = 8192;

/// The block of `vv` vectors by `np` pixels for `T`, its sums in rows `ld`
/// apart from `out`.
///
/// # Safety
/// As the modules' `block`.
#[allow(clippy::too_many_arguments)]
unsafe fn block<T: Float>(
    vv: usize,
    np: usize,
    src: *const T,
    srcs: &[usize; MAXP],
    taps: &[usize],
    wt: *const T,
    ldw: usize,
    out: *mut T,
    ld: usize,
) {
    // SAFETY: forwarded from the caller; `T` is the module's type.
    unsafe {
        match T::DTYPE {
            DType::F32 => {
                f32z::TABLE[vv - 1][np - 1](src.cast(), srcs, taps, wt.cast(), ldw, out.cast(), ld)
            }
            _ => {
                f64z::TABLE[vv - 1][np - 1](src.cast(), srcs, taps, wt.cast(), ldw, out.cast(), ld)
            }
        }
    }
}

/// The weight-gradient block of `vv` vectors by `tt` taps for `T`.
///
/// # Safety
/// As the modules' `wblock`.
#[allow(clippy::too_many_arguments)]
unsafe fn wblock<T: Float>(
    vv: usize,
    tt: usize,
    src: *const T,
    srcs: &[usize],
    taps: &[usize; MAXP],
    gyt: *const T,
    ld: usize,
    out: *mut T,
    ldo: usize,
) {
    // SAFETY: forwarded from the caller; `T` is the module's type.
    unsafe {
        match T::DTYPE {
            DType::F32 => f32z::WTABLE[vv - 1][tt - 1](
                src.cast(),
                srcs,
                taps,
                gyt.cast(),
                ld,
                out.cast(),
                ldo,
            ),
            _ => f64z::WTABLE[vv - 1][tt - 1](
                src.cast(),
                srcs,
                taps,
                gyt.cast(),
                ld,
                out.cast(),
                ldo,
            ),
        }
    }
}

/// One row of a module's `TABLE` or `WTABLE`: the blocks `$f` of `V`
/// vectors by 1..=8 pixels (or taps).
macro_rules! row {
    ($f:ident, $v:literal) => {
        [
            $f::<1, $v>,
            $f::<2, $v>,
            $f::<3, $v>,
            $f::<4, $v>,
            $f::<5, $v>,
            $f::<6, $v>,
            $f::<7, $v>,
            $f::<8, $v>,
        ]
    };
}

macro_rules! channels {
    ($m:ident, $t:ty, $lanes:literal, $set1:ident, $zero:ident, $fma:ident, $loadu:ident, $storeu:ident, $add:ident) => {
        mod $m {
            use super::MAXP;
            use std::arch::x86_64::*;

            /// `out[p * ld + v * lanes + l] = sum_t wt[t * ldw + v * lanes + l] *
            /// src[srcs[p] + taps[t]]` for `P` pixels and `V` vectors.
            #[target_feature(enable = "avx512f")]
            unsafe fn block<const P: usize, const V: usize>(
                src: *const $t,
                srcs: &[usize; MAXP],
                taps: &[usize],
                wt: *const $t,
                ldw: usize,
                out: *mut $t,
                ld: usize,
            ) {
                let mut acc = [[$zero(); V]; P];
                for (t, &off) in taps.iter().enumerate() {
                    // SAFETY: `wt` holds `taps.len()` rows of `ldw`, each with
                    // `V` vectors from the block's first channel.
                    let w: [_; V] =
                        std::array::from_fn(|v| unsafe { $loadu(wt.add(t * ldw + v * $lanes)) });
                    for p in 0..P {
                        // SAFETY: each pixel's taps lie inside the padded planes.
                        let x = $set1(unsafe { *src.add(srcs[p] + off) });
                        for v in 0..V {
                            acc[p][v] = $fma(x, w[v], acc[p][v]);
                        }
                    }
                }
                for p in 0..P {
                    for v in 0..V {
                        // SAFETY: `out` has `P` rows of `V` vectors, `ld` apart.
                        unsafe { $storeu(out.add(p * ld + v * $lanes), acc[p][v]) };
                    }
                }
            }

            type Block =
                unsafe fn(*const $t, &[usize; MAXP], &[usize], *const $t, usize, *mut $t, usize);

            /// [`block`] by vectors and pixels, `[V - 1][P - 1]`.
            pub(super) const TABLE: [[Block; MAXP]; 4] = [
                row!(block, 1),
                row!(block, 2),
                row!(block, 3),
                row!(block, 4),
            ];

            /// `out[t * ldo + v * lanes + l] += sum_i gyt[i * ld + v * lanes + l] *
            /// src[srcs[i] + taps[t]]` for `TT` taps and `V` vectors, over
            /// every pixel `i`.
            #[target_feature(enable = "avx512f")]
            unsafe fn wblock<const TT: usize, const V: usize>(
                src: *const $t,
                srcs: &[usize],
                taps: &[usize; MAXP],
                gyt: *const $t,
                ld: usize,
                out: *mut $t,
                ldo: usize,
            ) {
                let mut acc = [[$zero(); V]; TT];
                for (i, &ps) in srcs.iter().enumerate() {
                    // SAFETY: `gyt` has a row of `ld` per pixel, `V` vectors
                    // from the block's first channel.
                    let g: [_; V] =
                        std::array::from_fn(|v| unsafe { $loadu(gyt.add(i * ld + v * $lanes)) });
                    for t in 0..TT {
                        // SAFETY: each pixel's taps lie inside the padded planes.
                        let x = $set1(unsafe { *src.add(ps + taps[t]) });
                        for v in 0..V {
                            acc[t][v] = $fma(x, g[v], acc[t][v]);
                        }
                    }
                }
                for t in 0..TT {
                    for v in 0..V {
                        // SAFETY: `out` has `TT` rows of `V` vectors, `ldo` apart.
                        unsafe {
                            let at = out.add(t * ldo + v * $lanes);
                            $storeu(at, $add($loadu(at), acc[t][v]));
                        }
                    }
                }
            }

            type WBlock =
                unsafe fn(*const $t, &[usize], &[usize; MAXP], *const $t, usize, *mut $t, usize);

            /// [`wblock`] by vectors and taps, `[V - 1][T - 1]`.
            pub(super) const WTABLE: [[WBlock; MAXP]; 4] = [
                row!(wblock, 1),
                row!(wblock, 2),
                row!(wblock, 3),
                row!(wblock, 4),
            ];
        }
    };
}

channels!(
    f32z,
    f32,
    16,
    _mm512_set1_ps,
    _mm512_setzero_ps,
    _mm512_fmadd_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_add_ps
);
channels!(
    f64z,
    f64,
    8,
    _mm512_set1_pd,
    _mm512_setzero_pd,
    _mm512_fmadd_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_add_pd
);

//! The channel-vector forward block (AVX-512): each register holds one
//! output pixel's run of output channels, so a plane narrower than a vector
//! (8x8, or a strided layer's output) still fills every lane, and a stride
//! is only each pixel's own input offset. The weight is transposed once to
//! `[group, tap, channel]`, channels padded to whole vectors; a block's sums
//! go to the output planes through a small transpose.

use super::Plan;
use crate::tensor::{DType, Element, Float};

/// Pixels per block by vectors of channels per block, `[V - 1]`: as many
/// accumulators as leave room for the weight vectors and one input.
const PIXELS: [usize; 4] = [12, 12, 8, 6];

/// Most pixels a block takes.
const MAXP: usize = 12;

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
        let mut pix = Vec::with_capacity(p.oh * p.ow);
        for oy in 0..p.oh {
            for ox in 0..p.ow {
                pix.push([oy * stride[0] * p.row() + ox * stride[1], oy * p.ow + ox]);
            }
        }
        Channels {
            wt,
            ogp,
            v,
            pp: PIXELS[v - 1],
            pix,
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

/// One row of a module's `TABLE`: the blocks of `V` vectors by 1..=12 pixels.
macro_rules! prow {
    ($v:literal) => {
        [
            block::<1, $v>,
            block::<2, $v>,
            block::<3, $v>,
            block::<4, $v>,
            block::<5, $v>,
            block::<6, $v>,
            block::<7, $v>,
            block::<8, $v>,
            block::<9, $v>,
            block::<10, $v>,
            block::<11, $v>,
            block::<12, $v>,
        ]
    };
}

macro_rules! channels {
    ($m:ident, $t:ty, $lanes:literal, $set1:ident, $zero:ident, $fma:ident, $loadu:ident, $storeu:ident) => {
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
            pub(super) const TABLE: [[Block; MAXP]; 4] = [prow!(1), prow!(2), prow!(3), prow!(4)];
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
    _mm512_storeu_ps
);
channels!(
    f64z,
    f64,
    8,
    _mm512_set1_pd,
    _mm512_setzero_pd,
    _mm512_fmadd_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd
);

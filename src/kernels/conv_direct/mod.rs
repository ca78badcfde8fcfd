//! Direct convolution for unit horizontal stride, with AVX-512 or with
//! AVX2 + FMA: each output row is cut into vectors of consecutive columns,
//! and a block of output channels times a few such vectors is accumulated
//! in registers over every tap of the kernel. No column matrix is built,
//! which is what small layers pay most for in the im2col path (LeNet's
//! second convolution spent its time copying 10-element rows into it), and
//! masked loads and stores handle rows that are not a whole number of
//! vectors.
//!
//! A zero-padded copy of each input sample (when there is padding) lets every
//! tap read a plain shifted vector. The input's gradient of a unit-stride
//! convolution is the same kernel run on the output's gradient, padded by the
//! kernel's extent, with the weight flipped and its channel axes swapped.
//!
//! The register blocks differ by ISA (32 zmm registers against 16 ymm), so
//! each ISA has its own block shape; every output is one chain of FMAs over
//! the taps in weight order either way.

#![cfg(target_arch = "x86_64")]

mod blocks;
mod channels;

use super::conv::Geom;
use super::small_gemm::{isa, Isa};
use super::{parallel, SendPtr};
use crate::tensor::{DType, Element, Float};
use blocks::{sample, shape, wgrad};
use channels::Channels;

/// The ISA the direct kernels use here for `T`, if any.
pub fn available_isa<T: Element>() -> Option<Isa> {
    if !matches!(T::DTYPE, DType::F32 | DType::F64) {
        return None;
    }
    match isa() {
        Isa::Avx512 => Some(Isa::Avx512),
        Isa::Avx2 => Some(Isa::Avx2),
        Isa::Portable => None,
    }
}

/// One vector of output columns: where its first input element sits in the
/// padded plane (before the tap's offset), where it goes in an output plane,
/// and which lanes are inside the row.
#[derive(Clone, Copy, Default)]
struct Lane {
    src: usize,
    dst: usize,
    mask: u16,
}

/// A convolution as the direct kernel sees it: `src[C, hp, wp]` (already
/// padded) correlated with `w[O, C/groups, kh, kw]` into `y[O, oh, ow]`.
///
/// With a horizontal stride `sw > 1` each padded row is stored as `sw`
/// phases of `wq` columns (columns `ph, ph + sw, ...` in phase `ph`): a tap
/// then reads consecutive elements of one phase for consecutive outputs,
/// as with unit stride.
#[derive(Clone, Copy)]
struct Plan {
    c: usize,
    hp: usize,
    wp: usize,
    o: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
    sh: usize,
    sw: usize,
    dil: [usize; 2],
    groups: usize,
}

impl Plan {
    /// The convolution `g` itself, over its zero-padded input.
    fn padded(g: &Geom) -> Plan {
        Plan {
            c: g.c,
            hp: g.h + 2 * g.padding[0],
            wp: g.w + 2 * g.padding[1],
            o: g.o,
            kh: g.kh,
            kw: g.kw,
            oh: g.oh,
            ow: g.ow,
            sh: g.stride[0],
            sw: g.stride[1],
            dil: g.dilation,
            groups: g.groups,
        }
    }

    fn cg(&self) -> usize {
        self.c / self.groups
    }
    fn og(&self) -> usize {
        self.o / self.groups
    }
    /// Columns per phase of a padded row.
    fn wq(&self) -> usize {
        self.wp.div_ceil(self.sw)
    }
    /// Elements per padded row, its phases side by side.
    fn row(&self) -> usize {
        self.sw * self.wq()
    }
    /// Elements per padded plane.
    fn plane(&self) -> usize {
        self.hp * self.row()
    }
    /// Where padded column `col` of a row sits in its stored form.
    fn col(&self, col: usize) -> usize {
        col % self.sw * self.wq() + col / self.sw
    }
    /// Offsets of the taps within one group's planes, in weight order.
    fn taps(&self) -> Vec<usize> {
        let mut t = Vec::with_capacity(self.cg() * self.kh * self.kw);
        for c in 0..self.cg() {
            for i in 0..self.kh {
                for j in 0..self.kw {
                    let at = c * self.plane() + i * self.dil[0] * self.row();
                    t.push(at + self.col(j * self.dil[1]));
                }
            }
        }
        t
    }
    /// The output's vectors, row by row.
    fn lanes(&self, width: usize) -> Vec<Lane> {
        let mut all = Vec::new();
        for oy in 0..self.oh {
            for x0 in (0..self.ow).step_by(width) {
                let n = (self.ow - x0).min(width);
                all.push(Lane {
                    src: oy * self.sh * self.row() + x0,
                    dst: oy * self.ow + x0,
                    mask: ((1u32 << n) - 1) as u16,
                });
            }
        }
        all
    }
}

/// Copies `x[C, h, w]` into the padded planes `dst` at row `top`, column
/// `left`, zeros around it, each row in its stored form ([`Plan::col`]).
fn pad_into<T: Float>(
    x: &[T],
    c: usize,
    h: usize,
    w: usize,
    dst: &mut [T],
    p: &Plan,
    at: [usize; 2],
) {
    dst.fill(<T as Element>::zero());
    for ci in 0..c {
        for r in 0..h {
            let d = (ci * p.hp + r + at[0]) * p.row();
            let src = &x[(ci * h + r) * w..(ci * h + r + 1) * w];
            if p.sw == 1 {
                dst[d + at[1]..d + at[1] + w].copy_from_slice(src);
                continue;
            }
            // Phase `ph` holds the input columns `c` with `c + left`
            // congruent to `ph`, every `sw`-th from the first, `c0`.
            let (sw, wq) = (p.sw, p.wq());
            for ph in 0..sw {
                let c0 = (ph + sw - at[1] % sw) % sw;
                if c0 >= w {
                    continue;
                }
                let k0 = (c0 + at[1]) / sw;
                let phase = &mut dst[d + ph * wq + k0..d + (ph + 1) * wq];
                for (slot, &v) in phase.iter_mut().zip(src[c0..].iter().step_by(sw)) {
                    *slot = v;
                }
            }
        }
    }
}

/// Runs the plan over `n` samples of `x[C, h, w]` (placed at `at` in the
/// padded planes, or read in place when `at` is `None`) into `y`, by rows
/// of output pixels or, given `ch`, by vectors of output channels.
#[allow(clippy::too_many_arguments)]
fn run<T: Float>(
    isa: Isa,
    p: &Plan,
    n: usize,
    x: &[T],
    hw: [usize; 2],
    at: Option<[usize; 2]>,
    w: &[T],
    bias: Option<&[T]>,
    ch: Option<&Channels<T>>,
) -> Vec<T> {
    let sh = shape::<T>(isa);
    let taps = p.taps();
    let lanes = p.lanes(sh.lanes);
    let in_n = p.c * hw[0] * hw[1];
    let out_n = p.o * p.oh * p.ow;
    let pad_n = p.c * p.plane();
    // A kernel that overreads gets its input copied, with a vector of slack.
    let (at, buf_n) = match (at, sh.overreads) {
        (None, true) => (Some([0, 0]), pad_n + sh.lanes),
        (at, true) => (at, pad_n + sh.lanes),
        (at, false) => (at, pad_n),
    };
    // A task's share of a sample: blocks of output channels, or of pixels.
    let oblocks = match ch {
        Some(ch) => ch.units(),
        None => p.groups * p.og().div_ceil(sh.r),
    };
    // SAFETY (both kernels): as the callers' below.
    let kernel = |src: *const T, y: *mut T, ob: std::ops::Range<usize>| unsafe {
        match ch {
            Some(ch) => ch.sample(p, &taps, src, y, bias, ob),
            None => sample(isa, p, &taps, &lanes, src, w, y, bias, ob),
        }
    };
    // Every element is written by a masked store.
    let mut y: Vec<T> = crate::error::alloc_vec(n * out_n);
    let yp = SendPtr(y.as_mut_ptr());
    let work = n * p.o * taps.len() * p.oh * p.ow;
    let body = |lo: usize, hi: usize, ob: std::ops::Range<usize>, buf: &mut Vec<T>| {
        for s in lo..hi {
            let xs = &x[s * in_n..(s + 1) * in_n];
            let src = match at {
                Some(at) => {
                    buf.resize(buf_n, <T as Element>::zero());
                    pad_into(xs, p.c, hw[0], hw[1], buf, p, at);
                    buf.as_ptr()
                }
                None => xs.as_ptr(),
            };
            // `available` was checked by the caller; sample `s`'s output
            // planes (the blocks `ob` of them) belong to this task.
            kernel(src, yp.get().wrapping_add(s * out_n), ob.clone());
        }
    };
    parallel::run(work, |threads| {
        if threads > 1 && n >= threads {
            let per = n.div_ceil(threads);
            parallel::tasks(n.div_ceil(per), |t| {
                body(t * per, ((t + 1) * per).min(n), 0..oblocks, &mut Vec::new())
            });
        } else if threads > 1 {
            // Fewer samples than threads: split each one's channel blocks.
            let mut buf = Vec::new();
            for s in 0..n {
                let xs = &x[s * in_n..(s + 1) * in_n];
                let src = SendPtr(match at {
                    Some(at) => {
                        buf.resize(buf_n, <T as Element>::zero());
                        pad_into(xs, p.c, hw[0], hw[1], &mut buf, p, at);
                        buf.as_ptr() as *mut T
                    }
                    None => xs.as_ptr() as *mut T,
                });
                let per = oblocks.div_ceil(threads);
                parallel::tasks(oblocks.div_ceil(per), |t| {
                    let ob = t * per..((t + 1) * per).min(oblocks);
                    // As in `body`; the blocks `ob` are this task's.
                    kernel(src.get(), yp.get().wrapping_add(s * out_n), ob);
                });
            }
        } else {
            body(0, n, 0..oblocks, &mut Vec::new());
        }
    });
    // SAFETY: every output element was stored by one block.
    unsafe { y.set_len(n * out_n) };
    y
}

/// Widest horizontal stride the phase-split rows take: a row stores
/// `stride` phases, so a huge stride would make a huge row.
const MAX_PHASES: usize = 4;

/// The ISA the direct forward runs `g` with, if it handles it.
fn forward_fits<T: Element>(g: &Geom) -> Option<Isa> {
    let fits = g.n > 0 && g.o > 0 && g.oh > 0 && g.ow > 0 && g.stride[1] <= MAX_PHASES;
    available_isa::<T>().filter(|_| fits)
}

/// The share of vector lanes that rows of `width` outputs fill.
fn lane_fill(width: usize, lanes: usize) -> f64 {
    width as f64 / width.next_multiple_of(lanes) as f64
}

/// Whether the direct kernel beats im2col + GEMM on a correlation with `og`
/// outputs per group, `taps` weights per output, `l` outputs per plane in
/// rows of `width`, and horizontal stride `sw`.
///
/// With AVX-512, measured on two cores (one thread): it wins by 2x on
/// LeNet's layers and depthwise ones (GEMM tiles along a handful of output
/// channels run mostly empty, and the column matrix of a small image costs
/// more than the product), 5-15% on 3x3 layers of up to 128 channels, and
/// loses on 1x1 kernels, on 256+ channels (2304 taps: the input rows a block
/// reads no longer stay in cache) and on rows shorter than a vector (7x7
/// images fill 7 of 16 lanes; [`channels_pay`] takes most of those). Strided
/// layers take the channel blocks or GEMM: rows of phases beat GEMM by 15%
/// on a 3x3 layer (Zen 4) but lose 3x on a 1x1 one, and the channel
/// blocks beat both on the 3x3 ones.
///
/// With AVX2 (Zen 3, one thread): 1.0-1.8x on the 3x3 layers of 3 to 64
/// channels on 8x8 to 32x32 images (up to 78 GFLOP/s, the core's peak),
/// 1.25-1.4x on strided ones, 1.7x on LeNet's second layer; 1x1 kernels
/// lose 1.5-4x, and 64 channels of 56x56 lose 15-40%.
#[allow(clippy::too_many_arguments)]
fn direct_pays<T: Element>(
    isa: Isa,
    og: usize,
    taps: usize,
    l: usize,
    width: usize,
    pointwise: bool,
    sw: usize,
) -> bool {
    // With AVX2, a layer whose padded planes outgrow L2 (64 channels of
    // 56x56) ran 15-40% slower than GEMM.
    let refused = match isa {
        Isa::Avx512 => sw > 1,
        _ => og * taps * l > 1 << 23,
    };
    if refused {
        return false;
    }
    let small = og <= 4 || (og * taps * l <= 1 << 20 && !(pointwise && isa == Isa::Avx2));
    let fill = lane_fill(width, shape::<T>(isa).lanes);
    small || (!pointwise && taps <= 1200 && fill >= 0.85)
}

/// Whether the channel-vector blocks beat the row blocks and GEMM on a
/// correlation with `og` outputs per group, `taps` weights per output and
/// rows of `width` outputs, strided or not: when the channels fill their
/// vectors and the rows do not, or a stride would make the rows phases.
///
/// Measured with AVX-512 (AMD EPYC Zen 4, one thread, float32 forward):
/// against the better of rows and GEMM, 1.2x on 64 channels of 8x8, 1.4x
/// on a stride-2 32 -> 64 layer, 1.1-1.2x on 14x14 and 7x7 planes of 64-256
/// channels, 1.45x on LeNet's second layer (rows of 10); 1.3x slower on
/// rows of 32 (which fill their vectors), 2.4x on 3 input channels (27
/// taps) and 1.25-1.7x on strided 1x1 kernels (16 and 32 taps), which stay
/// with GEMM.
fn channels_pay<T: Element>(
    isa: Isa,
    og: usize,
    taps: usize,
    width: usize,
    strided: bool,
    pointwise: bool,
) -> bool {
    let l = 64 / std::mem::size_of::<T>();
    isa == Isa::Avx512
        && !pointwise
        && og as f64 / og.next_multiple_of(l) as f64 >= 0.75
        && taps >= 32
        && (strided || !width.is_multiple_of(l))
}

/// The ISA [`forward`] should run `g` with, if the direct kernel pays.
pub fn forward_pays<T: Element>(g: &Geom) -> Option<Isa> {
    let taps = g.c / g.groups * g.kh * g.kw;
    let pointwise = g.kh * g.kw == 1;
    forward_fits::<T>(g).filter(|&isa| {
        forward_channels::<T>(isa, g)
            || direct_pays::<T>(
                isa,
                g.o / g.groups,
                taps,
                g.oh * g.ow,
                g.ow,
                pointwise,
                g.stride[1],
            )
    })
}

/// `conv(x, w) + bias` on `isa` for a geometry [`forward_fits`] accepts.
pub fn forward<T: Float>(isa: Isa, g: &Geom, x: &[T], w: &[T], bias: Option<&[T]>) -> Vec<T> {
    forward_with(isa, g, x, w, bias, forward_channels::<T>(isa, g))
}

/// Whether [`forward`] on `isa` takes the channel-vector blocks for `g`.
fn forward_channels<T: Element>(isa: Isa, g: &Geom) -> bool {
    let taps = g.c / g.groups * g.kh * g.kw;
    channels_pay::<T>(
        isa,
        g.o / g.groups,
        taps,
        g.ow,
        g.stride != [1, 1],
        g.kh * g.kw == 1,
    )
}

/// [`forward`] by the channel-vector blocks (AVX-512 only) or the row blocks.
fn forward_with<T: Float>(
    isa: Isa,
    g: &Geom,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    channels: bool,
) -> Vec<T> {
    let [ph, pw] = g.padding;
    if channels {
        // Whole rows: each pixel's offset takes the stride.
        let p = Plan {
            sw: 1,
            ..Plan::padded(g)
        };
        let ch = Channels::new(&p, g.stride, w);
        let at = (ph > 0 || pw > 0).then_some([ph, pw]);
        return run(isa, &p, g.n, x, [g.h, g.w], at, w, bias, Some(&ch));
    }
    let p = Plan::padded(g);
    // Phases of a strided row are a copy too.
    let at = (ph > 0 || pw > 0 || p.sw > 1).then_some([ph, pw]);
    run(isa, &p, g.n, x, [g.h, g.w], at, w, bias, None)
}

/// Whether [`backward_input`] handles `g` (unit strides, padding no wider
/// than the kernel's reach).
fn backward_input_fits<T: Element>(g: &Geom) -> Option<Isa> {
    let fits = g.stride == [1, 1]
        && g.padding[0] <= g.dilation[0] * (g.kh - 1)
        && g.padding[1] <= g.dilation[1] * (g.kw - 1)
        && g.n > 0
        && g.c > 0
        && g.h > 0
        && g.w > 0;
    available_isa::<T>().filter(|_| fits)
}

/// The ISA [`backward_input`] should run `g` with, if the direct kernel
/// handles it and pays.
pub fn backward_input_pays<T: Element>(g: &Geom) -> Option<Isa> {
    let taps = g.o / g.groups * g.kh * g.kw;
    let pointwise = g.kh * g.kw == 1;
    backward_input_fits::<T>(g).filter(|&isa| {
        channels_pay::<T>(isa, g.c / g.groups, taps, g.w, false, g.kh * g.kw == 1)
            || direct_pays::<T>(isa, g.c / g.groups, taps, g.h * g.w, g.w, pointwise, 1)
    })
}

/// The input's gradient `gx[N, C, H, W]` of a geometry
/// [`backward_input_fits`] accepts: `gy` padded by the kernel's reach less
/// the padding, correlated with the flipped weight `w'[C, O/groups, KH, KW]`.
pub fn backward_input<T: Float>(
    isa: Isa,
    g: &Geom,
    gy: &[T],
    w: &[T],
    bias: Option<&[T]>,
) -> Vec<T> {
    let taps = g.o / g.groups * g.kh * g.kw;
    let channels = channels_pay::<T>(isa, g.c / g.groups, taps, g.w, false, g.kh * g.kw == 1);
    backward_input_with(isa, g, gy, w, bias, channels)
}

/// [`backward_input`] by the channel-vector blocks or the row blocks.
fn backward_input_with<T: Float>(
    isa: Isa,
    g: &Geom,
    gy: &[T],
    w: &[T],
    bias: Option<&[T]>,
    channels: bool,
) -> Vec<T> {
    let (cg, og) = (g.c / g.groups, g.o / g.groups);
    let (kh, kw) = (g.kh, g.kw);
    let mut wf: Vec<T> = crate::error::filled_vec(w.len(), <T as Element>::zero());
    for gi in 0..g.groups {
        for o in 0..og {
            for c in 0..cg {
                for i in 0..kh {
                    for j in 0..kw {
                        let from = (((gi * og + o) * cg + c) * kh + i) * kw + j;
                        let to = (((gi * cg + c) * og + o) * kh + (kh - 1 - i)) * kw + (kw - 1 - j);
                        wf[to] = w[from];
                    }
                }
            }
        }
    }
    let reach = [g.dilation[0] * (kh - 1), g.dilation[1] * (kw - 1)];
    let top = [reach[0] - g.padding[0], reach[1] - g.padding[1]];
    let p = Plan {
        c: g.o,
        hp: g.h + reach[0],
        wp: g.w + reach[1],
        o: g.c,
        kh,
        kw,
        oh: g.h,
        ow: g.w,
        sh: 1,
        sw: 1,
        dil: g.dilation,
        groups: g.groups,
    };
    // Rows and columns of `gy` past what the padded planes hold feed no
    // element of `gx` (a convolution whose stride skipped the input's end).
    let (oh, ow) = (g.oh.min(p.hp - top[0]), g.ow.min(p.wp - top[1]));
    let ch = channels.then(|| Channels::new(&p, [1, 1], &wf));
    if (oh, ow) == (g.oh, g.ow) {
        return run(
            isa,
            &p,
            g.n,
            gy,
            [g.oh, g.ow],
            Some(top),
            &wf,
            bias,
            ch.as_ref(),
        );
    }
    let mut cut: Vec<T> = crate::error::alloc_vec(g.n * g.o * oh * ow);
    for plane in gy.chunks_exact(g.oh * g.ow) {
        for r in plane.chunks_exact(g.ow).take(oh) {
            cut.extend_from_slice(&r[..ow]);
        }
    }
    run(
        isa,
        &p,
        g.n,
        &cut,
        [oh, ow],
        Some(top),
        &wf,
        bias,
        ch.as_ref(),
    )
}

/// Bytes of padded input one weight-gradient pass keeps hot: each block of
/// channels and taps reads all of the pass's samples.
const WCHUNK_BYTES: usize = 256 << 10;

/// Whether [`backward_weight`] should run `g`: its blocks reduce over every
/// sample's vectors, which pays while one group's weight is small. With
/// AVX-512 up to LeNet's 16x150 (the 64x288 of a 32 -> 64 3x3 layer ran 15%
/// slower than GEMM, the transposed-GEMM path being fastest once the weight
/// fills its tiles), and on rows that fill their vectors up to the 32x288
/// of a 32 -> 32 3x3 layer, strided ones included (1.25x GEMM on Zen 4);
/// the channel-vector blocks take the layers [`channels_weight_pay`]
/// accepts. With AVX2 up to the 64x576 of a 64 -> 64 3x3 layer
/// (1.1-1.4x GEMM; 128 channels on 7x7 images lost) on planes no larger
/// than the forward takes, except strided 1x1 kernels, whose phase-split
/// copy outweighs their few taps.
pub fn backward_weight_pays<T: Element>(g: &Geom) -> Option<Isa> {
    let weight = g.o / g.groups * (g.c / g.groups * g.kh * g.kw);
    let pointwise = g.kh * g.kw == 1;
    let l = g.oh * g.ow;
    let strided_1x1 = pointwise && g.stride[1] > 1;
    forward_fits::<T>(g).filter(|&isa| match isa {
        Isa::Avx512 => {
            channels_weight_pay::<T>(isa, g)
                || (weight <= 8192 && g.stride[1] == 1)
                || (g.ow.is_multiple_of(16) && weight <= 32 * 288 && !strided_1x1)
        }
        _ => weight <= 64 * 576 && weight * l <= 1 << 23 && !(pointwise && g.stride[1] > 1),
    })
}

/// The weight's gradient `gw[O, C/groups, KH, KW] = sum_n gy_n (*) x_n`:
/// per block of output channels and taps, the products of each output
/// vector with the input vector under every tap, over a chunk of samples in
/// registers, reduced once per chunk.
pub fn backward_weight<T: Float>(isa: Isa, g: &Geom, x: &[T], gy: &[T]) -> Vec<T> {
    if channels_weight_pay::<T>(isa, g) {
        return backward_weight_channels(g, x, gy);
    }
    backward_weight_rows(isa, g, x, gy)
}

/// Whether the channel-vector weight-gradient blocks should run `g`: with
/// AVX-512, when its output channels fill their vectors and its rows do not
/// (or it is a strided 1x1 kernel, whose rows would be phases).
///
/// Measured on a Zen 4 core (one thread, float32), against the better of
/// the row blocks and GEMM: 1.2-1.5x on 64 channels of 8x8 and a stride-2
/// 32 -> 64 layer, 1.7x on LeNet's second layer (rows of 10), 1.1x on 64
/// channels of 56x56 and on a strided 1x1 kernel, even on 128 channels of
/// 14x14; on rows of 16 or 32 the row blocks win by 10-45%.
fn channels_weight_pay<T: Element>(isa: Isa, g: &Geom) -> bool {
    let l = 64 / std::mem::size_of::<T>();
    let og = g.o / g.groups;
    let strided_1x1 = g.kh * g.kw == 1 && g.stride[1] > 1;
    isa == Isa::Avx512
        && og as f64 / og.next_multiple_of(l) as f64 >= 0.75
        && g.c / g.groups * g.kh * g.kw >= 16
        && (!g.ow.is_multiple_of(l) || strided_1x1)
}

/// [`backward_weight`] by the channel-vector blocks: per sample, the output
/// gradient laid pixel-major, then blocks of taps by vectors of output
/// channels summed over every pixel in registers.
fn backward_weight_channels<T: Float>(g: &Geom, x: &[T], gy: &[T]) -> Vec<T> {
    let [ph, pw] = g.padding;
    let p = Plan {
        sw: 1,
        ..Plan::padded(g)
    };
    let padded = ph > 0 || pw > 0;
    let taps = p.taps();
    let srcs: Vec<usize> = channels::pixels(&p, g.stride)
        .iter()
        .map(|q| q[0])
        .collect();
    let (kg, og) = (taps.len(), p.og());
    let ogp = og.next_multiple_of(64 / std::mem::size_of::<T>());
    let (ld, wn) = (g.groups * ogp, g.groups * kg * ogp);
    let (in_n, out_n, ys) = (g.c * g.h * g.w, g.o * g.oh * g.ow, g.oh * g.ow);
    let pad_n = g.c * p.plane();
    let zero = <T as Element>::zero();
    let tile = |lo: usize, hi: usize, acc: &mut [T]| {
        let mut buf: Vec<T> = Vec::new();
        let mut gyt = vec![zero; ys * ld];
        for s in lo..hi {
            let xs = &x[s * in_n..(s + 1) * in_n];
            let src = if padded {
                buf.resize(pad_n, zero);
                pad_into(xs, g.c, g.h, g.w, &mut buf, &p, [ph, pw]);
                buf.as_ptr()
            } else {
                xs.as_ptr()
            };
            let gs = &gy[s * out_n..(s + 1) * out_n];
            for gi in 0..g.groups {
                for o in 0..og {
                    let col = gi * ogp + o;
                    for (i, &v) in gs[(gi * og + o) * ys..][..ys].iter().enumerate() {
                        gyt[i * ld + col] = v;
                    }
                }
            }
            // SAFETY: `forward_fits` found AVX-512 (checked by the caller);
            // `src` holds the sample's padded planes, `gyt` its gradient.
            unsafe { channels::weight_sample(&p, &taps, &srcs, src, &gyt, ld, ogp, acc) };
        }
    };
    let acc = by_sample_tiles(g, g.n * g.o * kg * ys, wn, tile);
    let mut out = crate::error::filled_vec(g.o * kg, zero);
    for gi in 0..g.groups {
        for t in 0..kg {
            for o in 0..og {
                out[(gi * og + o) * kg + t] = acc[(gi * kg + t) * ogp + o];
            }
        }
    }
    out
}

/// Runs `tile(lo, hi, acc)` over ranges of the `g.n` samples, one
/// accumulator of `wn` a range (one range a thread), and returns their sum.
fn by_sample_tiles<T: Float>(
    g: &Geom,
    work: usize,
    wn: usize,
    tile: impl Fn(usize, usize, &mut [T]) + Sync,
) -> Vec<T> {
    let threads = parallel::run(work, |t| t).min(g.n.max(1));
    let per = g.n.div_ceil(threads.max(1)).max(1);
    let tiles = g.n.div_ceil(per).max(1);
    let mut acc: Vec<T> = crate::error::filled_vec(tiles * wn, <T as Element>::zero());
    if tiles > 1 {
        let ap = SendPtr(acc.as_mut_ptr());
        parallel::tasks(tiles, |t| {
            // SAFETY: accumulator `t` belongs to this task alone.
            let a = unsafe { std::slice::from_raw_parts_mut(ap.get().add(t * wn), wn) };
            tile(t * per, ((t + 1) * per).min(g.n), a)
        });
    } else {
        tile(0, g.n, &mut acc);
    }
    let (first, rest) = acc.split_at_mut(wn);
    for part in rest.chunks(wn) {
        for (a, b) in first.iter_mut().zip(part) {
            *a += *b;
        }
    }
    acc.truncate(wn);
    acc
}

/// [`backward_weight`] by the row blocks.
fn backward_weight_rows<T: Float>(isa: Isa, g: &Geom, x: &[T], gy: &[T]) -> Vec<T> {
    let [ph, pw] = g.padding;
    let p = Plan::padded(g);
    let padded = ph > 0 || pw > 0 || p.sw > 1;
    let sh = shape::<T>(isa);
    let (taps, lanes) = (p.taps(), p.lanes(sh.lanes));
    let (kg, cg, og) = (taps.len(), p.cg(), p.og());
    let wn = g.o * kg;
    let (in_n, out_n, ys) = (g.c * g.h * g.w, g.o * g.oh * g.ow, g.oh * g.ow);
    let pad_n = g.c * p.plane();
    let xs_n = if padded { pad_n } else { in_n };
    let chunk = (WCHUNK_BYTES / (xs_n * std::mem::size_of::<T>()).max(1)).max(1);
    let tile = |lo: usize, hi: usize, acc: &mut [T]| {
        let mut buf: Vec<T> = Vec::new();
        let mut s0 = lo;
        while s0 < hi {
            let ns = chunk.min(hi - s0);
            let src = if padded {
                buf.resize(ns * pad_n, <T as Element>::zero());
                for (k, d) in buf.chunks_exact_mut(pad_n).enumerate() {
                    let xs = &x[(s0 + k) * in_n..(s0 + k + 1) * in_n];
                    pad_into(xs, g.c, g.h, g.w, d, &p, [ph, pw]);
                }
                buf.as_ptr()
            } else {
                x[s0 * in_n..].as_ptr()
            };
            for gi in 0..g.groups {
                for o0 in (0..og).step_by(sh.wr) {
                    let rr = (og - o0).min(sh.wr);
                    let oc = gi * og + o0;
                    for t0 in (0..kg).step_by(sh.wt) {
                        let tt = (kg - t0).min(sh.wt);
                        let sp = src.wrapping_add(gi * cg * p.plane());
                        let gp = gy[s0 * out_n + oc * ys..].as_ptr();
                        let ap = acc[oc * kg + t0..].as_mut_ptr();
                        let ts = &taps[t0..t0 + tt];
                        // SAFETY: `available` holds (checked by the caller);
                        // the operands cover `ns` samples and `rr` channels,
                        // the accumulator `rr` rows of `kg` from `t0`.
                        unsafe {
                            wgrad(isa, rr, tt, sp, xs_n, ts, gp, out_n, ys, &lanes, ns, ap, kg)
                        }
                    }
                }
            }
            s0 += ns;
        }
    };
    by_sample_tiles(g, g.n * g.o * kg * ys, wn, tile)
}

#[cfg(test)]
mod tests;

//! Direct convolution with AVX-512 for unit horizontal stride: each output
//! row is cut into vectors of consecutive columns, and a block of output
//! channels times a few such vectors is accumulated in registers over every
//! tap of the kernel. No column matrix is built, which is what small layers
//! pay most for in the im2col path (LeNet's second convolution spent its
//! time copying 10-element rows into it), and masked loads and stores handle
//! rows that are not a whole number of vectors.
//!
//! A zero-padded copy of each input sample (when there is padding) lets every
//! tap read a plain shifted vector. The input's gradient of a unit-stride
//! convolution is the same kernel run on the output's gradient, padded by the
//! kernel's extent, with the weight flipped and its channel axes swapped.

#![cfg(target_arch = "x86_64")]

use super::conv::Geom;
use super::{parallel, SendPtr};
use crate::tensor::{DType, Element, Float};

/// Vectors of output columns per register block.
const V: usize = 4;
/// Output channels per register block (`R * V` accumulators of 32).
const R: usize = 6;

/// Whether the direct kernels run here at all.
pub fn available<T: Element>() -> bool {
    matches!(T::DTYPE, DType::F32 | DType::F64)
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
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
    /// Offsets of the taps within one group's planes, in weight order.
    fn taps(&self) -> Vec<usize> {
        let plane = self.hp * self.wp;
        let mut t = Vec::with_capacity(self.cg() * self.kh * self.kw);
        for c in 0..self.cg() {
            for i in 0..self.kh {
                for j in 0..self.kw {
                    t.push(c * plane + i * self.dil[0] * self.wp + j * self.dil[1]);
                }
            }
        }
        t
    }
    /// The output's vectors, in groups of [`V`] (the last padded with
    /// empty lanes).
    fn lanes(&self, width: usize) -> Vec<[Lane; V]> {
        self.flat_lanes(width)
            .chunks(V)
            .map(|c| std::array::from_fn(|i| c.get(i).copied().unwrap_or_default()))
            .collect()
    }
    /// The output's vectors, row by row.
    fn flat_lanes(&self, width: usize) -> Vec<Lane> {
        let mut all = Vec::new();
        for oy in 0..self.oh {
            for x0 in (0..self.ow).step_by(width) {
                let n = (self.ow - x0).min(width);
                all.push(Lane {
                    src: oy * self.sh * self.wp + x0,
                    dst: oy * self.ow + x0,
                    mask: ((1u32 << n) - 1) as u16,
                });
            }
        }
        all
    }
}

/// One row of a kernel module's `WTABLE`.
macro_rules! wrow {
    ($r:literal) => {
        [
            wblock::<$r, 1>,
            wblock::<$r, 2>,
            wblock::<$r, 3>,
            wblock::<$r, 4>,
            wblock::<$r, 5>,
            wblock::<$r, 6>,
        ]
    };
}

macro_rules! kernels {
    ($m:ident, $t:ty, $lanes:expr, $mask:ty, $set1:ident, $zero:ident, $fma:ident, $load:ident, $store:ident, $add:ident, $reduce:ident) => {
        mod $m {
            use super::{Lane, R, V};
            use std::arch::x86_64::*;

            /// `y[r, lane] (=) sum_t w[r, t] * src[lane.src + taps[t]]` for
            /// `RR` output channels (rows `kg` apart in `w`, planes `ys`
            /// apart in `y`) and one group of vectors.
            #[target_feature(enable = "avx512f,avx512vl")]
            pub(super) unsafe fn block<const RR: usize>(
                src: *const $t,
                taps: &[usize],
                w: *const $t,
                lanes: &[Lane; V],
                y: *mut $t,
                ys: usize,
                bias: Option<*const $t>,
            ) {
                let kg = taps.len();
                let mut acc = [[$zero(); V]; RR];
                let masks: [$mask; V] = std::array::from_fn(|v| lanes[v].mask as $mask);
                for (t, &off) in taps.iter().enumerate() {
                    // SAFETY: unmasked lanes read inside the padded planes.
                    let xv: [_; V] = std::array::from_fn(|v| unsafe {
                        $load(masks[v], src.add(lanes[v].src + off))
                    });
                    for r in 0..RR {
                        // SAFETY: `w` holds `RR` rows of `kg` weights.
                        let wv = $set1(unsafe { *w.add(r * kg + t) });
                        for v in 0..V {
                            acc[r][v] = $fma(wv, xv[v], acc[r][v]);
                        }
                    }
                }
                for r in 0..RR {
                    // SAFETY: `bias` holds `RR` values when given.
                    let b = bias.map(|b| $set1(unsafe { *b.add(r) }));
                    for v in 0..V {
                        let a = match b {
                            Some(b) => $add(acc[r][v], b),
                            None => acc[r][v],
                        };
                        // SAFETY: unmasked lanes are inside output plane `r`.
                        unsafe { $store(y.add(r * ys + lanes[v].dst), masks[v], a) };
                    }
                }
            }

            /// [`block`] with the channel count chosen at run time.
            #[allow(clippy::too_many_arguments)]
            pub(super) unsafe fn block_n(
                rr: usize,
                src: *const $t,
                taps: &[usize],
                w: *const $t,
                lanes: &[Lane; V],
                y: *mut $t,
                ys: usize,
                bias: Option<*const $t>,
            ) {
                const _: () = assert!(R == 6);
                // SAFETY: forwarded from the caller.
                unsafe {
                    match rr {
                        6 => block::<6>(src, taps, w, lanes, y, ys, bias),
                        5 => block::<5>(src, taps, w, lanes, y, ys, bias),
                        4 => block::<4>(src, taps, w, lanes, y, ys, bias),
                        3 => block::<3>(src, taps, w, lanes, y, ys, bias),
                        2 => block::<2>(src, taps, w, lanes, y, ys, bias),
                        _ => block::<1>(src, taps, w, lanes, y, ys, bias),
                    }
                }
            }

            /// `out[r * ldo + t] += sum over samples and vectors of
            /// gy[r, lane.dst] * src[lane.src + taps[t]]` for `RR` output
            /// channels and `TT` taps, over `ns` samples `xs` / `gs` apart.
            #[target_feature(enable = "avx512f,avx512vl")]
            #[allow(clippy::too_many_arguments)]
            pub(super) unsafe fn wblock<const RR: usize, const TT: usize>(
                src: *const $t,
                xs: usize,
                taps: &[usize],
                gy: *const $t,
                gs: usize,
                ys: usize,
                lanes: &[Lane],
                ns: usize,
                out: *mut $t,
                ldo: usize,
            ) {
                let mut acc = [[$zero(); TT]; RR];
                let taps: [usize; TT] = std::array::from_fn(|t| taps[t]);
                for s in 0..ns {
                    let (x, g) = (src.wrapping_add(s * xs), gy.wrapping_add(s * gs));
                    for l in lanes {
                        let m = l.mask as $mask;
                        // SAFETY: unmasked lanes are inside output plane `r`
                        // and the padded input; masked ones read as zero.
                        let xv: [_; TT] =
                            std::array::from_fn(|t| unsafe { $load(m, x.add(l.src + taps[t])) });
                        for r in 0..RR {
                            let gv = unsafe { $load(m, g.add(r * ys + l.dst)) };
                            for t in 0..TT {
                                acc[r][t] = $fma(gv, xv[t], acc[r][t]);
                            }
                        }
                    }
                }
                for r in 0..RR {
                    for t in 0..TT {
                        // SAFETY: `out` holds `RR` rows of `ldo`, `TT <= ldo`.
                        unsafe { *out.add(r * ldo + t) += $reduce(acc[r][t]) };
                    }
                }
            }

            pub(super) type WFn = unsafe fn(
                *const $t,
                usize,
                &[usize],
                *const $t,
                usize,
                usize,
                &[Lane],
                usize,
                *mut $t,
                usize,
            );

            /// [`wblock`] by channel and tap count, `[RR - 1][TT - 1]`.
            pub(super) const WTABLE: [[WFn; 6]; 4] = [wrow!(1), wrow!(2), wrow!(3), wrow!(4)];

            pub(super) const LANES: usize = $lanes;
        }
    };
}

kernels!(
    f32k,
    f32,
    16,
    u16,
    _mm512_set1_ps,
    _mm512_setzero_ps,
    _mm512_fmadd_ps,
    _mm512_maskz_loadu_ps,
    _mm512_mask_storeu_ps,
    _mm512_add_ps,
    _mm512_reduce_add_ps
);
kernels!(
    f64k,
    f64,
    8,
    u8,
    _mm512_set1_pd,
    _mm512_setzero_pd,
    _mm512_fmadd_pd,
    _mm512_maskz_loadu_pd,
    _mm512_mask_storeu_pd,
    _mm512_add_pd,
    _mm512_reduce_add_pd
);

/// One sample through the kernel: every group of vectors against every block
/// of output channels, the vectors outermost so the input rows they read
/// stay in cache across the channel blocks.
///
/// # Safety
/// `src` holds the plan's padded planes, `w` its weight, `y` its output
/// planes, `bias` `O` values; `available::<T>()`.
#[allow(clippy::too_many_arguments)]
unsafe fn sample<T: Float>(
    p: &Plan,
    taps: &[usize],
    lanes: &[[Lane; V]],
    src: *const T,
    w: &[T],
    y: *mut T,
    bias: Option<&[T]>,
    oblocks: std::ops::Range<usize>,
) {
    let (cg, og, kg) = (p.cg(), p.og(), taps.len());
    let plane = p.hp * p.wp;
    let ys = p.oh * p.ow;
    let per_group = og.div_ceil(R);
    for group in lanes {
        for ob in oblocks.clone() {
            let (gi, b) = (ob / per_group, ob % per_group);
            let o0 = gi * og + b * R;
            let rr = (og - b * R).min(R);
            let s = src.wrapping_add(gi * cg * plane);
            let wp = w[o0 * kg..].as_ptr();
            let yp = y.wrapping_add(o0 * ys);
            // SAFETY: forwarded from the caller; `o0 + rr <= O`.
            unsafe {
                match T::DTYPE {
                    DType::F32 => f32k::block_n(
                        rr,
                        s as *const f32,
                        taps,
                        wp as *const f32,
                        group,
                        yp as *mut f32,
                        ys,
                        bias.map(|b| b[o0..].as_ptr() as *const f32),
                    ),
                    _ => f64k::block_n(
                        rr,
                        s as *const f64,
                        taps,
                        wp as *const f64,
                        group,
                        yp as *mut f64,
                        ys,
                        bias.map(|b| b[o0..].as_ptr() as *const f64),
                    ),
                }
            }
        }
    }
}

/// Copies `x[C, h, w]` into `dst[C, hp, wp]` at row `top`, column `left`,
/// zeros around it.
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
            let d = (ci * p.hp + r + at[0]) * p.wp + at[1];
            dst[d..d + w].copy_from_slice(&x[(ci * h + r) * w..(ci * h + r + 1) * w]);
        }
    }
}

/// Runs the plan over `n` samples of `x[C, h, w]` (placed at `at` in the
/// padded planes, or read in place when `at` is `None`) into `y`.
fn run<T: Float>(
    p: &Plan,
    n: usize,
    x: &[T],
    hw: [usize; 2],
    at: Option<[usize; 2]>,
    w: &[T],
    bias: Option<&[T]>,
) -> Vec<T> {
    let lanes_per = if T::DTYPE == DType::F32 {
        f32k::LANES
    } else {
        f64k::LANES
    };
    let taps = p.taps();
    let lanes = p.lanes(lanes_per);
    let in_n = p.c * hw[0] * hw[1];
    let out_n = p.o * p.oh * p.ow;
    let pad_n = p.c * p.hp * p.wp;
    let oblocks = p.groups * p.og().div_ceil(R);
    // Every element is written by a masked store.
    let mut y: Vec<T> = crate::error::alloc_vec(n * out_n);
    let yp = SendPtr(y.as_mut_ptr());
    let work = n * p.o * taps.len() * p.oh * p.ow;
    let body = |lo: usize, hi: usize, ob: std::ops::Range<usize>, buf: &mut Vec<T>| {
        for s in lo..hi {
            let xs = &x[s * in_n..(s + 1) * in_n];
            let src = match at {
                Some(at) => {
                    buf.resize(pad_n, <T as Element>::zero());
                    pad_into(xs, p.c, hw[0], hw[1], buf, p, at);
                    buf.as_ptr()
                }
                None => xs.as_ptr(),
            };
            // SAFETY: `available` was checked by the caller; sample `s`'s
            // output planes (the blocks `ob` of them) belong to this task.
            unsafe {
                sample(
                    p,
                    &taps,
                    &lanes,
                    src,
                    w,
                    yp.get().add(s * out_n),
                    bias,
                    ob.clone(),
                )
            };
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
                        buf.resize(pad_n, <T as Element>::zero());
                        pad_into(xs, p.c, hw[0], hw[1], &mut buf, p, at);
                        buf.as_ptr() as *mut T
                    }
                    None => xs.as_ptr() as *mut T,
                });
                let per = oblocks.div_ceil(threads);
                parallel::tasks(oblocks.div_ceil(per), |t| {
                    let ob = t * per..((t + 1) * per).min(oblocks);
                    // SAFETY: as in `body`; the blocks `ob` are this task's.
                    unsafe {
                        sample(
                            p,
                            &taps,
                            &lanes,
                            src.get(),
                            w,
                            yp.get().add(s * out_n),
                            bias,
                            ob,
                        )
                    };
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

/// Whether the direct forward handles `g`: unit horizontal stride.
fn forward_fits<T: Element>(g: &Geom) -> bool {
    available::<T>() && g.stride[1] == 1 && g.n > 0 && g.o > 0 && g.oh > 0 && g.ow > 0
}

/// The share of vector lanes that rows of `width` outputs fill.
fn lane_fill<T: Element>(width: usize) -> f64 {
    let lanes = if T::DTYPE == DType::F32 { 16 } else { 8 };
    width as f64 / width.next_multiple_of(lanes) as f64
}

/// Whether the direct kernel beats im2col + GEMM on a correlation with `og`
/// outputs per group, `taps` weights per output, `l` outputs per plane in
/// rows of `width`. Measured on two cores (one thread): it wins by 2x on
/// LeNet's layers and depthwise ones (GEMM tiles along a handful of output
/// channels run mostly empty, and the column matrix of a small image costs
/// more than the product), 5-15% on 3x3 layers of up to 128 channels, and
/// loses on 1x1 kernels, on 256+ channels (2304 taps: the input rows a block
/// reads no longer stay in cache) and on rows shorter than a vector (7x7
/// images fill 7 of 16 lanes).
fn direct_pays<T: Element>(
    og: usize,
    taps: usize,
    l: usize,
    width: usize,
    pointwise: bool,
) -> bool {
    let small = og <= 4 || og * taps * l <= 1 << 20;
    small || (!pointwise && taps <= 1200 && lane_fill::<T>(width) >= 0.85)
}

/// Whether [`forward`] should run `g`.
pub fn forward_pays<T: Element>(g: &Geom) -> bool {
    let taps = g.c / g.groups * g.kh * g.kw;
    let pointwise = g.kh * g.kw == 1;
    forward_fits::<T>(g) && direct_pays::<T>(g.o / g.groups, taps, g.oh * g.ow, g.ow, pointwise)
}

/// `conv(x, w) + bias` for a geometry [`forward_fits`] accepts.
pub fn forward<T: Float>(g: &Geom, x: &[T], w: &[T], bias: Option<&[T]>) -> Vec<T> {
    let [ph, pw] = g.padding;
    let p = Plan::padded(g);
    let at = (ph > 0 || pw > 0).then_some([ph, pw]);
    run(&p, g.n, x, [g.h, g.w], at, w, bias)
}

/// Whether [`backward_input`] handles `g` (unit strides, padding no wider
/// than the kernel's reach) and should run it.
pub fn backward_input_pays<T: Element>(g: &Geom) -> bool {
    let fits = available::<T>()
        && g.stride == [1, 1]
        && g.padding[0] <= g.dilation[0] * (g.kh - 1)
        && g.padding[1] <= g.dilation[1] * (g.kw - 1)
        && g.n > 0
        && g.c > 0
        && g.h > 0
        && g.w > 0;
    let taps = g.o / g.groups * g.kh * g.kw;
    let pointwise = g.kh * g.kw == 1;
    fits && direct_pays::<T>(g.c / g.groups, taps, g.h * g.w, g.w, pointwise)
}

/// The input's gradient `gx[N, C, H, W]` of a geometry
/// [`backward_input_fits`] accepts: `gy` padded by the kernel's reach less
/// the padding, correlated with the flipped weight `w'[C, O/groups, KH, KW]`.
pub fn backward_input<T: Float>(g: &Geom, gy: &[T], w: &[T], bias: Option<&[T]>) -> Vec<T> {
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
        dil: g.dilation,
        groups: g.groups,
    };
    // Rows and columns of `gy` past what the padded planes hold feed no
    // element of `gx` (a convolution whose stride skipped the input's end).
    let (oh, ow) = (g.oh.min(p.hp - top[0]), g.ow.min(p.wp - top[1]));
    if (oh, ow) == (g.oh, g.ow) {
        return run(&p, g.n, gy, [g.oh, g.ow], Some(top), &wf, bias);
    }
    let mut cut: Vec<T> = crate::error::alloc_vec(g.n * g.o * oh * ow);
    for plane in gy.chunks_exact(g.oh * g.ow) {
        for r in plane.chunks_exact(g.ow).take(oh) {
            cut.extend_from_slice(&r[..ow]);
        }
    }
    run(&p, g.n, &cut, [oh, ow], Some(top), &wf, bias)
}

/// Output channels and taps per weight-gradient register block: `4 x 5`
/// accumulators, the four channels' vectors and the five taps' (`4 x 6`
/// spilled the accumulators to the stack).
const WR: usize = 4;
const WT: usize = 6;

/// Bytes of padded input one weight-gradient pass keeps hot: each block of
/// channels and taps reads all of the pass's samples.
const WCHUNK_BYTES: usize = 256 << 10;

/// Whether [`backward_weight`] should run `g`: its blocks reduce over every
/// sample's vectors, which pays while one group's weight is small (up to
/// LeNet's 16x150; the 64x288 of a 32 -> 64 3x3 layer ran 15% slower than
/// GEMM, the transposed-GEMM path being fastest once the weight fills its
/// tiles).
pub fn backward_weight_pays<T: Element>(g: &Geom) -> bool {
    forward_fits::<T>(g) && g.o / g.groups * (g.c / g.groups * g.kh * g.kw) <= 8192
}

/// The weight's gradient `gw[O, C/groups, KH, KW] = sum_n gy_n (*) x_n`:
/// per block of output channels and taps, the products of each output
/// vector with the input vector under every tap, over a chunk of samples in
/// registers, reduced once per chunk.
pub fn backward_weight<T: Float>(g: &Geom, x: &[T], gy: &[T]) -> Vec<T> {
    let [ph, pw] = g.padding;
    let p = Plan::padded(g);
    let padded = ph > 0 || pw > 0;
    let width = if T::DTYPE == DType::F32 {
        f32k::LANES
    } else {
        f64k::LANES
    };
    let (taps, lanes) = (p.taps(), p.flat_lanes(width));
    let (kg, cg, og) = (taps.len(), p.cg(), p.og());
    let wn = g.o * kg;
    let (in_n, out_n, ys) = (g.c * g.h * g.w, g.o * g.oh * g.ow, g.oh * g.ow);
    let pad_n = g.c * p.hp * p.wp;
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
                for o0 in (0..og).step_by(WR) {
                    let rr = (og - o0).min(WR);
                    let oc = gi * og + o0;
                    for t0 in (0..kg).step_by(WT) {
                        let tt = (kg - t0).min(WT);
                        let sp = src.wrapping_add(gi * cg * p.hp * p.wp);
                        let gp = gy[s0 * out_n + oc * ys..].as_ptr();
                        let ap = acc[oc * kg + t0..].as_mut_ptr();
                        let ts = &taps[t0..t0 + tt];
                        // SAFETY: `available` holds (checked by the caller);
                        // the operands cover `ns` samples and `rr` channels,
                        // the accumulator `rr` rows of `kg` from `t0`.
                        unsafe {
                            match T::DTYPE {
                                DType::F32 => f32k::WTABLE[rr - 1][tt - 1](
                                    sp as *const f32,
                                    xs_n,
                                    ts,
                                    gp as *const f32,
                                    out_n,
                                    ys,
                                    &lanes,
                                    ns,
                                    ap as *mut f32,
                                    kg,
                                ),
                                _ => f64k::WTABLE[rr - 1][tt - 1](
                                    sp as *const f64,
                                    xs_n,
                                    ts,
                                    gp as *const f64,
                                    out_n,
                                    ys,
                                    &lanes,
                                    ns,
                                    ap as *mut f64,
                                    kg,
                                ),
                            }
                        }
                    }
                }
            }
            s0 += ns;
        }
    };
    let work = g.n * g.o * kg * ys;
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

#[cfg(test)]
#[path = "conv_direct_tests.rs"]
mod tests;

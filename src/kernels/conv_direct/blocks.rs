//! The register blocks of the direct convolution, one macro for every ISA
//! and element type: the forward block (output channels by vectors of
//! output columns, summed over the taps), the weight-gradient block
//! (output channels by taps, summed over samples and vectors), and the
//! dispatch from a generic element type to them.

use super::{Lane, Plan};
use crate::kernels::small_gemm::Isa;
use crate::tensor::{DType, Element, Float};

/// A kernel module's register block: lanes per vector, output channels
/// (`r`) by vectors (`v`) in the forward block, output channels (`wr`) by
/// taps (`wt`) in the weight-gradient block. `overreads`: the forward block
/// loads whole vectors past a row's end (its input needs `lanes` elements
/// of slack), because an AVX2 mask takes a vector register the
/// accumulators need.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    pub(super) lanes: usize,
    pub(super) r: usize,
    pub(super) v: usize,
    pub(super) wr: usize,
    pub(super) wt: usize,
    pub(super) overreads: bool,
}

pub(super) fn shape<T: Element>(isa: Isa) -> Shape {
    match (isa, T::DTYPE) {
        (Isa::Avx512, DType::F32) => f32z::SHAPE,
        (Isa::Avx512, _) => f64z::SHAPE,
        (_, DType::F32) => f32y::SHAPE,
        _ => f64y::SHAPE,
    }
}

/// AVX2 stand-ins for the AVX-512 masked operations: a prefix mask of `n`
/// lanes as a vector, masked loads (masked-off lanes read as zero and never
/// fault) and stores, and horizontal sums.
mod ymm {
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn mask_ps(m: u16) -> __m256i {
        let n = m.count_ones() as i32;
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(n),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn mask_pd(m: u16) -> __m256i {
        let n = m.count_ones() as i64;
        _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3))
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn load_ps(m: __m256i, p: *const f32) -> __m256 {
        // SAFETY: forwarded; masked-off lanes are not read.
        unsafe { _mm256_maskload_ps(p, m) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn load_pd(m: __m256i, p: *const f64) -> __m256d {
        // SAFETY: forwarded; masked-off lanes are not read.
        unsafe { _mm256_maskload_pd(p, m) }
    }
    /// A whole vector whatever the mask: lanes past a row's end read the
    /// input's slack and are never stored.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn whole_ps(_: __m256i, p: *const f32) -> __m256 {
        // SAFETY: the caller's buffer has a vector of slack.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn whole_pd(_: __m256i, p: *const f64) -> __m256d {
        // SAFETY: the caller's buffer has a vector of slack.
        unsafe { _mm256_loadu_pd(p) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn store_ps(p: *mut f32, m: __m256i, v: __m256) {
        // SAFETY: forwarded; masked-off lanes are not written.
        unsafe { _mm256_maskstore_ps(p, m, v) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn store_pd(p: *mut f64, m: __m256i, v: __m256d) {
        // SAFETY: forwarded; masked-off lanes are not written.
        unsafe { _mm256_maskstore_pd(p, m, v) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn sum_ps(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn sum_pd(v: __m256d) -> f64 {
        let s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
        _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)))
    }
}

/// The AVX-512 masks are the lane bits themselves.
mod zmm {
    #[inline]
    pub(super) fn mask16(m: u16) -> u16 {
        m
    }
    #[inline]
    pub(super) fn mask8(m: u16) -> u8 {
        m as u8
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

/// One kernel module: element type, ISA (`$feat`), its block [`Shape`], the
/// vector and mask types with the mask of a [`Lane`] (`$mk`), and the
/// operations, masked ones taking the mask first.
macro_rules! kernels {
    ($m:ident, $t:ty, $feat:literal, $shape:expr, $mask:ty, $mk:path,
     $set1:ident, $zero:ident, $fma:ident, $load:path, $store:path, $add:ident, $reduce:path,
     $loadu:ident, $storeu:ident, $xload:path) => {
        mod $m {
            use super::{Lane, Plan, Shape};
            use std::arch::x86_64::*;

            pub(super) const SHAPE: Shape = $shape;
            const V: usize = SHAPE.v;
            /// The mask of a whole vector.
            const FULL: u16 = ((1u32 << SHAPE.lanes) - 1) as u16;

            /// `y[r, lane] (=) sum_t w[r, t] * src[lane.src + taps[t]]` for
            /// `RR` output channels (rows `kg` apart in `w`, planes `ys`
            /// apart in `y`) and one group of vectors.
            #[target_feature(enable = $feat)]
            unsafe fn block<const RR: usize>(
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
                let masks: [$mask; V] = std::array::from_fn(|v| $mk(lanes[v].mask));
                for (t, &off) in taps.iter().enumerate() {
                    // SAFETY: unmasked lanes read inside the padded planes,
                    // and whole vectors inside their slack when the module
                    // overreads.
                    let xv: [_; V] = std::array::from_fn(|v| unsafe {
                        $xload(masks[v], src.add(lanes[v].src + off))
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
                        let at = y.wrapping_add(r * ys + lanes[v].dst);
                        // SAFETY: unmasked lanes are inside output plane `r`;
                        // a masked store is slow on some CPUs.
                        unsafe {
                            if lanes[v].mask == FULL {
                                $storeu(at, a)
                            } else {
                                $store(at, masks[v], a)
                            }
                        };
                    }
                }
            }

            /// [`block`] with the channel count chosen at run time.
            #[allow(clippy::too_many_arguments)]
            unsafe fn block_n(
                rr: usize,
                src: *const $t,
                taps: &[usize],
                w: *const $t,
                lanes: &[Lane; V],
                y: *mut $t,
                ys: usize,
                bias: Option<*const $t>,
            ) {
                const _: () = assert!(SHAPE.r <= 6);
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

            /// One sample through the kernel: every group of vectors against
            /// the blocks `oblocks` of output channels, the vectors outermost
            /// so the input rows they read stay in cache across the channel
            /// blocks.
            ///
            /// # Safety
            /// `src` holds the plan's padded planes, `w` its weight, `y` its
            /// output planes, `bias` `O` values; the CPU has `$feat`.
            #[allow(clippy::too_many_arguments)]
            pub(super) unsafe fn sample(
                p: &Plan,
                taps: &[usize],
                lanes: &[Lane],
                src: *const $t,
                w: *const $t,
                y: *mut $t,
                bias: Option<*const $t>,
                oblocks: std::ops::Range<usize>,
            ) {
                let (cg, og, kg) = (p.cg(), p.og(), taps.len());
                let plane = p.plane();
                let ys = p.oh * p.ow;
                let r = SHAPE.r;
                let per_group = og.div_ceil(r);
                for group in lanes.chunks(V) {
                    let group: [Lane; V] =
                        std::array::from_fn(|i| group.get(i).copied().unwrap_or_default());
                    for ob in oblocks.clone() {
                        let (gi, b) = (ob / per_group, ob % per_group);
                        let o0 = gi * og + b * r;
                        let rr = (og - b * r).min(r);
                        // SAFETY: forwarded from the caller; `o0 + rr <= O`.
                        unsafe {
                            block_n(
                                rr,
                                src.wrapping_add(gi * cg * plane),
                                taps,
                                w.add(o0 * kg),
                                &group,
                                y.wrapping_add(o0 * ys),
                                ys,
                                bias.map(|b| b.add(o0)),
                            )
                        }
                    }
                }
            }

            /// `out[r * ldo + t] += sum over samples and vectors of
            /// gy[r, lane.dst] * src[lane.src + taps[t]]` for `RR` output
            /// channels and `TT` taps, over `ns` samples `xs` / `gs` apart.
            #[target_feature(enable = $feat)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn wblock<const RR: usize, const TT: usize>(
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
                        // Whole vectors load without a mask, which on AVX2
                        // would hold a register.
                        if l.mask == FULL {
                            // SAFETY: the vector is inside output plane `r`
                            // and the padded input.
                            let xv: [_; TT] =
                                std::array::from_fn(|t| unsafe { $loadu(x.add(l.src + taps[t])) });
                            for r in 0..RR {
                                let gv = unsafe { $loadu(g.add(r * ys + l.dst)) };
                                for t in 0..TT {
                                    acc[r][t] = $fma(gv, xv[t], acc[r][t]);
                                }
                            }
                            continue;
                        }
                        let m = $mk(l.mask);
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
        }
    };
}

// 32 zmm registers: 6 x 4 accumulators, 4 input vectors and a weight.
kernels!(
    f32z,
    f32,
    "avx512f,avx512vl",
    Shape {
        lanes: 16,
        r: 6,
        v: 4,
        wr: 4,
        wt: 6,
        overreads: false
    },
    u16,
    super::zmm::mask16,
    _mm512_set1_ps,
    _mm512_setzero_ps,
    _mm512_fmadd_ps,
    _mm512_maskz_loadu_ps,
    _mm512_mask_storeu_ps,
    _mm512_add_ps,
    _mm512_reduce_add_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_maskz_loadu_ps
);
kernels!(
    f64z,
    f64,
    "avx512f,avx512vl",
    Shape {
        lanes: 8,
        r: 6,
        v: 4,
        wr: 4,
        wt: 6,
        overreads: false
    },
    u8,
    super::zmm::mask8,
    _mm512_set1_pd,
    _mm512_setzero_pd,
    _mm512_fmadd_pd,
    _mm512_maskz_loadu_pd,
    _mm512_mask_storeu_pd,
    _mm512_add_pd,
    _mm512_reduce_add_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_maskz_loadu_pd
);
// 16 ymm registers: 6 x 2 accumulators, 2 input vectors and a weight (4 x 3
// spilled; 3 x 3 ran at half the core's peak), and no mask in the forward
// block's loop.
kernels!(
    f32y,
    f32,
    "avx2,fma",
    Shape {
        lanes: 8,
        r: 6,
        v: 2,
        wr: 3,
        wt: 3,
        overreads: true
    },
    __m256i,
    super::ymm::mask_ps,
    _mm256_set1_ps,
    _mm256_setzero_ps,
    _mm256_fmadd_ps,
    super::ymm::load_ps,
    super::ymm::store_ps,
    _mm256_add_ps,
    super::ymm::sum_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    super::ymm::whole_ps
);
kernels!(
    f64y,
    f64,
    "avx2,fma",
    Shape {
        lanes: 4,
        r: 6,
        v: 2,
        wr: 3,
        wt: 3,
        overreads: true
    },
    __m256i,
    super::ymm::mask_pd,
    _mm256_set1_pd,
    _mm256_setzero_pd,
    _mm256_fmadd_pd,
    super::ymm::load_pd,
    super::ymm::store_pd,
    _mm256_add_pd,
    super::ymm::sum_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    super::ymm::whole_pd
);

/// [`f32z::sample`] or its kin for `T` on `isa`.
///
/// # Safety
/// As the modules' `sample`; `isa` is available.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn sample<T: Float>(
    isa: Isa,
    p: &Plan,
    taps: &[usize],
    lanes: &[Lane],
    src: *const T,
    w: &[T],
    y: *mut T,
    bias: Option<&[T]>,
    oblocks: std::ops::Range<usize>,
) {
    let (w, bias) = (w.as_ptr(), bias.map(|b| b.as_ptr()));
    macro_rules! go {
        ($m:ident) => {
            $m::sample(
                p,
                taps,
                lanes,
                src.cast(),
                w.cast(),
                y.cast(),
                bias.map(|b| b.cast()),
                oblocks,
            )
        };
    }
    // SAFETY: forwarded from the caller; `T` is the module's type.
    unsafe {
        match (isa, T::DTYPE) {
            (Isa::Avx512, DType::F32) => go!(f32z),
            (Isa::Avx512, _) => go!(f64z),
            (_, DType::F32) => go!(f32y),
            _ => go!(f64y),
        }
    }
}

/// The `rr x tt` weight-gradient block of `T` on `isa` (see the modules'
/// `wblock`).
///
/// # Safety
/// As `wblock`; `isa` is available, `rr` and `tt` within its [`Shape`].
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn wgrad<T: Float>(
    isa: Isa,
    rr: usize,
    tt: usize,
    src: *const T,
    xs: usize,
    taps: &[usize],
    gy: *const T,
    gs: usize,
    ys: usize,
    lanes: &[Lane],
    ns: usize,
    out: *mut T,
    ldo: usize,
) {
    macro_rules! go {
        ($m:ident) => {
            $m::WTABLE[rr - 1][tt - 1](
                src.cast(),
                xs,
                taps,
                gy.cast(),
                gs,
                ys,
                lanes,
                ns,
                out.cast(),
                ldo,
            )
        };
    }
    // SAFETY: forwarded from the caller; `T` is the module's type.
    unsafe {
        match (isa, T::DTYPE) {
            (Isa::Avx512, DType::F32) => go!(f32z),
            (Isa::Avx512, _) => go!(f64z),
            (_, DType::F32) => go!(f32y),
            _ => go!(f64y),
        }
    }
}

//! The AVX512_BF16 register tile: `MR` rows by `NV` zmm registers of
//! float32 accumulators. Per pair of `k` steps it loads `NV` words-of-pairs
//! registers of `B` and, for each row, broadcasts that row's pair of `A`
//! (folded into `vdpbf16ps` as a memory operand) and issues `NV`
//! `vdpbf16ps`, each adding 16 lanes x 2 products.

use std::arch::x86_64::*;

use super::driver::{self, APanel, Dst, Init, Target};
use super::{convert, finish, pack, MatRef};

/// The tile this path runs (`MR` rows, `NV * 16` columns); the others are
/// kept for the benchmark that chose it.
pub(super) type Kernel = Tiles<8, 3>;

pub(super) struct Tiles<const MR: usize, const NV: usize>;

impl<const MR: usize, const NV: usize> driver::Kernel for Tiles<MR, NV> {
    const MR: usize = MR;
    const NR: usize = 16 * NV;
    const KC: usize = 256;
    const MC: usize = 192 / MR * MR;
    const NC: usize = 4096 / (16 * NV) * (16 * NV);
    const KQ_ALIGN: usize = 1;

    unsafe fn pack_a(
        a: MatRef<u16>,
        i0: usize,
        rows: usize,
        p0: usize,
        kb: usize,
        kq: usize,
        out: *mut u32,
    ) -> APanel {
        // Pair `q` of the panel's rows side by side: one broadcast each.
        pack::a_pairs(a, i0, rows, p0, kb, kq, MR, out);
        APanel {
            ptr: out as *const u8,
            row: 4,
            step: 4 * MR,
        }
    }

    unsafe fn tile(
        kq: usize,
        a: APanel,
        b: *const u32,
        init: Option<Init>,
        dst: Dst,
        rows: usize,
        cols: usize,
    ) {
        tile::<MR, NV>(kq, a.ptr as *const u32, b, init, dst, rows, cols)
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")]
unsafe fn tile<const MR: usize, const NV: usize>(
    kq: usize,
    a: *const u32,
    b: *const u32,
    init: Option<Init>,
    dst: Dst,
    rows: usize,
    cols: usize,
) {
    let mut acc = [[_mm512_setzero_ps(); NV]; MR];
    if let Some(init) = init {
        for (r, row) in acc.iter_mut().enumerate() {
            if r < rows {
                *row = load_row::<NV>(&init, r, cols);
            }
        }
    }
    let strip = kq * 16;
    let (mut ap, mut bp) = (a, b);
    for _ in 0..kq {
        let mut bv = [_mm512_setzero_si512(); NV];
        for (v, reg) in bv.iter_mut().enumerate() {
            *reg = _mm512_loadu_si512(bp.add(v * strip) as *const __m512i);
        }
        for (r, row) in acc.iter_mut().enumerate() {
            let x: __m512bh = std::mem::transmute(_mm512_set1_epi32(*ap.add(r) as i32));
            for (slot, y) in row.iter_mut().zip(bv.iter()) {
                *slot = _mm512_dpbf16_ps(*slot, x, std::mem::transmute::<__m512i, __m512bh>(*y));
            }
        }
        ap = ap.add(MR);
        bp = bp.add(16);
    }
    for (r, row) in acc.iter().enumerate() {
        if r < rows {
            store_row::<NV>(row, &dst, r, cols);
        }
    }
}

/// The lanes of register `v` that hold one of `cols` columns.
#[inline(always)]
fn lanes(cols: usize, v: usize) -> u16 {
    let w = cols.saturating_sub(16 * v).min(16);
    ((1u32 << w) - 1) as u16
}

/// Row `r` of a tile's starting values (`cols` of them, the rest zero).
///
/// # Safety
/// Inlined into AVX-512 code only; the row must lie inside `init`.
#[inline(always)]
pub(super) unsafe fn load_row<const NV: usize>(init: &Init, r: usize, cols: usize) -> [__m512; NV] {
    let row = init.ptr.add(r * init.rs);
    let mut out = [_mm512_setzero_ps(); NV];
    if init.cs == 1 {
        for (v, reg) in out.iter_mut().enumerate() {
            *reg = _mm512_maskz_loadu_ps(lanes(cols, v), row.add(16 * v));
        }
    } else {
        let mut buf = [0f32; 64];
        for (j, x) in buf.iter_mut().enumerate().take(cols) {
            *x = *row.add(j * init.cs);
        }
        for (v, reg) in out.iter_mut().enumerate() {
            *reg = _mm512_loadu_ps(buf.as_ptr().add(16 * v));
        }
    }
    out
}

/// Writes row `r` of a tile (`cols` columns) to `dst`: `alpha * acc + beta
/// * C`, the same operations as [`finish`], rounded to bfloat16 if asked.
///
/// # Safety
/// Inlined into AVX-512 BF16 code only; the row must lie inside `dst`.
#[inline(always)]
pub(super) unsafe fn store_row<const NV: usize>(
    acc: &[__m512; NV],
    dst: &Dst,
    r: usize,
    cols: usize,
) {
    if dst.cs != 1 {
        let mut buf = [0f32; 64];
        for (v, reg) in acc.iter().enumerate() {
            _mm512_storeu_ps(buf.as_mut_ptr().add(16 * v), *reg);
        }
        for (j, &x) in buf.iter().enumerate().take(cols) {
            let off = r * dst.rs + j * dst.cs;
            match dst.target {
                Target::F32(p) => {
                    let c = if dst.beta == 0.0 { 0.0 } else { *p.add(off) };
                    *p.add(off) = finish(x, c, dst.alpha, dst.beta);
                }
                Target::Bf16(p) => {
                    let c = if dst.beta == 0.0 {
                        0.0
                    } else {
                        convert::bf16_to_f32(*p.add(off))
                    };
                    *p.add(off) = convert::f32_to_bf16(finish(x, c, dst.alpha, dst.beta));
                }
            }
        }
        return;
    }
    let (alpha, beta) = (_mm512_set1_ps(dst.alpha), _mm512_set1_ps(dst.beta));
    for (v, reg) in acc.iter().enumerate() {
        let m = lanes(cols, v);
        if m == 0 {
            break;
        }
        let mut x = *reg;
        if dst.alpha != 1.0 {
            x = _mm512_mul_ps(x, alpha);
        }
        let off = r * dst.rs + 16 * v;
        let stream = dst.stream && m == u16::MAX;
        match dst.target {
            Target::F32(p) => {
                let at = p.add(off);
                if dst.beta != 0.0 {
                    x = _mm512_add_ps(x, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(m, at)));
                }
                if stream && (at as usize).is_multiple_of(64) {
                    _mm512_stream_ps(at, x);
                } else {
                    _mm512_mask_storeu_ps(at, m, x);
                }
            }
            Target::Bf16(p) => {
                let at = p.add(off) as *mut i16;
                if dst.beta != 0.0 {
                    let h = _mm256_maskz_loadu_epi16(m, at);
                    let c = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)));
                    x = _mm512_add_ps(x, _mm512_mul_ps(beta, c));
                }
                let h = convert::x86::cvt16(x);
                if stream && (at as usize).is_multiple_of(32) {
                    _mm256_stream_si256(at as *mut __m256i, h);
                } else {
                    _mm256_mask_storeu_epi16(at, m, h);
                }
            }
        }
    }
}

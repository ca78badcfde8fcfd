//! Packing operands into the layouts the bfloat16 instructions read.
//!
//! Both `vdpbf16ps` and `tdpbf16ps` multiply pairs: a 32-bit word holds
//! the elements at `k = 2q` (low half) and `k = 2q + 1` (high half) of one
//! row of `A` or one column of `B`. A panel of `B` is `nsub` strips of 16
//! columns; strip `s` holds, for each pair `q`, the 16 words of its columns
//! (64 bytes: one zmm register, one row of an AMX tile). Beyond the matrix
//! (rows or columns past its edge, `k` past the block) the words are zero,
//! and so is an odd block's last high half, so padding adds `0 * 0`.
//!
//! The common layouts have vector paths: a row-major `B` interleaves two
//! rows; a transposed `B` (`x @ w.t()`) already holds each column's pairs
//! as consecutive words and needs a 16x16 word transpose, as does a
//! transposed `A` (`g.t() @ x`) for the AMX tiles, whose rows of `A` are
//! otherwise plain copies. Anything else (other strides, partial blocks)
//! goes element by element. The vector paths need AVX-512, which both
//! instruction paths have.

use std::arch::x86_64::*;

use super::MatRef;

/// The word for one pair.
#[inline(always)]
fn pair(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

/// Element `(i, p0 + p)` of `m`, or zero for `p >= kb`.
#[inline(always)]
unsafe fn elem(m: MatRef<u16>, i: usize, p0: usize, p: usize, kb: usize) -> u16 {
    if p < kb {
        m.at(i, p0 + p)
    } else {
        0
    }
}

/// The word of pair `q` of row `i` of `a` (columns from `p0`, `kb` valid).
#[inline(always)]
unsafe fn a_word(a: MatRef<u16>, i: usize, p0: usize, q: usize, kb: usize) -> u32 {
    pair(elem(a, i, p0, 2 * q, kb), elem(a, i, p0, 2 * q + 1, kb))
}

/// Transposes 16x16 32-bit words held in 16 registers (row `i` in `r[i]`).
#[inline(always)]
unsafe fn transpose16(r: &mut [__m512i; 16]) {
    let mut t = [_mm512_setzero_si512(); 16];
    for i in 0..8 {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for i in 0..4 {
        let b = 4 * i;
        r[b] = _mm512_unpacklo_epi64(t[b], t[b + 2]);
        r[b + 1] = _mm512_unpackhi_epi64(t[b], t[b + 2]);
        r[b + 2] = _mm512_unpacklo_epi64(t[b + 1], t[b + 3]);
        r[b + 3] = _mm512_unpackhi_epi64(t[b + 1], t[b + 3]);
    }
    for h in 0..2 {
        let b = 8 * h;
        for i in 0..4 {
            t[b + i] = _mm512_shuffle_i32x4::<0x88>(r[b + i], r[b + 4 + i]);
            t[b + 4 + i] = _mm512_shuffle_i32x4::<0xdd>(r[b + i], r[b + 4 + i]);
        }
    }
    for i in 0..8 {
        r[i] = _mm512_shuffle_i32x4::<0x88>(t[i], t[8 + i]);
        r[8 + i] = _mm512_shuffle_i32x4::<0xdd>(t[i], t[8 + i]);
    }
}

/// 16 words from two runs of bfloat16 values (`lo`, `hi`; null reads zeros),
/// the lanes outside `mask` zero.
#[inline(always)]
unsafe fn interleave16(lo: *const u16, hi: *const u16, mask: u16) -> __m512i {
    let load = |p: *const u16| {
        if p.is_null() {
            _mm512_setzero_si512()
        } else {
            _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p as *const i16))
        }
    };
    _mm512_or_si512(load(lo), _mm512_slli_epi32::<16>(load(hi)))
}

/// Packs columns `j0..j0 + cols` and rows `p0..p0 + kb` of `b` into one
/// panel of `nsub` strips of `kq >= ceil(kb / 2)` pairs.
///
/// # Safety
/// The block must lie inside `b`; `out` must hold `nsub * kq * 16` words.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub(super) unsafe fn b_panel(
    b: MatRef<u16>,
    p0: usize,
    kb: usize,
    j0: usize,
    cols: usize,
    kq: usize,
    nsub: usize,
    out: *mut u32,
) {
    let width = |s: usize| cols.saturating_sub(16 * s).min(16);
    if b.cs == 1 {
        b_rows(b, p0, kb, j0, cols, kq, nsub, 0, out);
        return;
    }
    for s in 0..nsub {
        let strip = out.add(s * kq * 16);
        let c0 = j0 + 16 * s;
        let w = width(s);
        let mut q = 0;
        if w == 16 && b.rs == 1 {
            // Each column's pairs are consecutive words: 16 columns by 16
            // pairs, transposed.
            while 2 * (q + 16) <= kb {
                let mut r = [_mm512_setzero_si512(); 16];
                for (jj, reg) in r.iter_mut().enumerate() {
                    *reg = _mm512_loadu_si512(
                        b.ptr.add((c0 + jj) * b.cs + p0 + 2 * q) as *const __m512i
                    );
                }
                transpose16(&mut r);
                for (qq, reg) in r.iter().enumerate() {
                    _mm512_storeu_si512(strip.add((q + qq) * 16) as *mut __m512i, *reg);
                }
                q += 16;
            }
        }
        // The rest element by element.
        let bt = b.t();
        for q in q..kq {
            for jj in 0..16 {
                *strip.add(q * 16 + jj) = if jj < w {
                    a_word(bt, c0 + jj, p0, q, kb)
                } else {
                    0
                };
            }
        }
    }
}

/// Packs the panels of a row-major `b` (unit column stride) for columns
/// `j0..j0 + cols` and rows `p0..p0 + kb`: panel `p` (columns from
/// `j0 + p * 16 * nsub`) at `out + p * stride`, laid out as [`b_panel`]'s.
/// Rows `2q` and `2q + 1` are read once, left to right, across all the
/// panels: walking down one panel at a time would jump a whole row per
/// step, which the hardware prefetcher does not follow.
///
/// # Safety
/// As [`b_panel`], for each panel.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub(super) unsafe fn b_rows(
    b: MatRef<u16>,
    p0: usize,
    kb: usize,
    j0: usize,
    cols: usize,
    kq: usize,
    nsub: usize,
    stride: usize,
    out: *mut u32,
) {
    let strips = cols.div_ceil(16).next_multiple_of(nsub);
    for q in 0..kq {
        let row = |p: usize| {
            if p < kb {
                b.ptr.add((p0 + p) * b.rs + j0)
            } else {
                std::ptr::null()
            }
        };
        let (r0, r1) = (row(2 * q), row(2 * q + 1));
        for st in 0..strips {
            let (p, s) = (st / nsub, st % nsub);
            let w = cols.saturating_sub(16 * st).min(16);
            let mask = ((1u32 << w) - 1) as u16;
            let at = |r: *const u16| if r.is_null() { r } else { r.add(16 * st) };
            let v = interleave16(at(r0), at(r1), mask);
            _mm512_storeu_si512(out.add(p * stride + (s * kq + q) * 16) as *mut __m512i, v);
        }
    }
}

/// Packs rows `i0..i0 + rows` (`rows <= mr`) and columns `p0..p0 + kb` of
/// `a` into `kq` pairs of `mr` words, pair-major (`out[q * mr + r]`): the
/// AVX512_BF16 tile broadcasts one word per row and pair.
///
/// # Safety
/// The block must lie inside `a`; `out` must hold `mr * kq` words.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn a_pairs(
    a: MatRef<u16>,
    i0: usize,
    rows: usize,
    p0: usize,
    kb: usize,
    kq: usize,
    mr: usize,
    out: *mut u32,
) {
    let full = kb / 2;
    for r in rows..mr {
        for q in 0..kq {
            *out.add(q * mr + r) = 0;
        }
    }
    if a.cs == 1 {
        for r in 0..rows {
            let row = a.ptr.add((i0 + r) * a.rs + p0);
            for q in 0..full {
                *out.add(q * mr + r) = (row.add(2 * q) as *const u32).read_unaligned();
            }
            for q in full..kq {
                *out.add(q * mr + r) = a_word(a, i0 + r, p0, q, kb);
            }
        }
    } else if a.rs == 1 {
        for q in 0..kq {
            let p = 2 * q;
            let (c0, c1) = (
                a.ptr.add(i0 + (p0 + p) * a.cs),
                a.ptr.add(i0 + (p0 + p + 1) * a.cs),
            );
            let o = out.add(q * mr);
            if q < full {
                for r in 0..rows {
                    *o.add(r) = pair(*c0.add(r), *c1.add(r));
                }
            } else {
                for r in 0..rows {
                    *o.add(r) = a_word(a, i0 + r, p0, q, kb);
                }
            }
        }
    } else {
        for r in 0..rows {
            for q in 0..kq {
                *out.add(q * mr + r) = a_word(a, i0 + r, p0, q, kb);
            }
        }
    }
}

/// Packs rows `i0..i0 + rows` (`rows <= 32`) and columns `p0..p0 + kb` of
/// `a` as AMX tiles: tile `(g, t)` (rows `16g..16g + 16`, pairs
/// `16t..16t + 16`, `kq` a multiple of 16) is 16 consecutive rows of 16
/// words at `out + (2t + g) * 256`.
///
/// # Safety
/// The block must lie inside `a`; `out` must hold `32 * kq` words.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub(super) unsafe fn a_tiles(
    a: MatRef<u16>,
    i0: usize,
    rows: usize,
    p0: usize,
    kb: usize,
    kq: usize,
    out: *mut u32,
) {
    let nt = kq / 16;
    let at = |r: usize, q: usize| out.add(((q / 16 * 2 + r / 16) * 16 + r % 16) * 16 + q % 16);
    for r in rows..32 {
        for t in 0..nt {
            _mm512_storeu_si512(at(r, 16 * t) as *mut __m512i, _mm512_setzero_si512());
        }
    }
    if a.cs == 1 {
        // A tile row is 32 consecutive elements of a row of `a`.
        for r in 0..rows {
            let row = a.ptr.add((i0 + r) * a.rs + p0);
            for t in 0..nt {
                let n = kb.saturating_sub(32 * t).min(32);
                let mask = (1u64 << n).wrapping_sub(1) as u32;
                let v = _mm512_maskz_loadu_epi16(mask, row.add(32 * t) as *const i16);
                _mm512_storeu_si512(at(r, 16 * t) as *mut __m512i, v);
            }
        }
        return;
    }
    let mut t0 = 0;
    if a.rs == 1 {
        // Columns hold 16 rows contiguously: interleave two columns into
        // words by row, 16 pairs at a time, and transpose to rows of pairs.
        while 32 * (t0 + 1) <= kb {
            for g in 0..rows / 16 {
                let mut r = [_mm512_setzero_si512(); 16];
                for (qq, reg) in r.iter_mut().enumerate() {
                    let p = p0 + 32 * t0 + 2 * qq;
                    let col = a.ptr.add(i0 + 16 * g + p * a.cs);
                    *reg = interleave16(col, col.add(a.cs), u16::MAX);
                }
                transpose16(&mut r);
                for (rr, reg) in r.iter().enumerate() {
                    _mm512_storeu_si512(at(16 * g + rr, 16 * t0) as *mut __m512i, *reg);
                }
            }
            // A partial group of rows: element by element.
            for r in rows / 16 * 16..rows {
                for q in 16 * t0..16 * t0 + 16 {
                    *at(r, q) = a_word(a, i0 + r, p0, q, kb);
                }
            }
            t0 += 1;
        }
    }
    for r in 0..rows {
        for q in 16 * t0..kq {
            *at(r, q) = a_word(a, i0 + r, p0, q, kb);
        }
    }
}

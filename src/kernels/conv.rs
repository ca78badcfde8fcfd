//! Convolution as im2col plus one GEMM per sample (or band of output rows)
//! and group, and the kernels of its backward: the input's gradient (GEMM
//! then col2im, which is also the transposed convolution) and the weight's
//! (im2col then a GEMM accumulated over the batch).
//!
//! The work is split into one contiguous tile per thread; each tile owns a
//! single column buffer (`C*kh*kw` by at most one sample's `OH*OW`, fewer
//! rows of the output at a time on large images, see [`BAND_BYTES`]) that it
//! reuses, so memory stays bounded by the thread count, not the batch. Work
//! too small to feed the team runs on the calling thread with each GEMM
//! split across the threads instead. One-dimensional convolutions are the
//! `H = 1` case.

use super::matmul::{gemm_add_into, gemm_into, gemm_ld_into, Mat};
use super::{parallel, SendPtr};
use crate::tensor::{Element, Float};

/// The geometry of one convolution `x[N, C, H, W] * w[O, C/groups, KH, KW]
/// -> y[N, O, OH, OW]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geom {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub o: usize,
    pub kh: usize,
    pub kw: usize,
    pub oh: usize,
    pub ow: usize,
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
}

impl Geom {
    /// Rows of one group's column matrix (`C/groups * KH * KW`).
    fn k(&self) -> usize {
        self.c / self.groups * self.kh * self.kw
    }
    fn og(&self) -> usize {
        self.o / self.groups
    }
    fn l(&self) -> usize {
        self.oh * self.ow
    }
    /// A 1x1 kernel with unit stride and no padding reads the input as its
    /// own column matrix.
    fn pointwise(&self) -> bool {
        self.kh == 1
            && self.kw == 1
            && self.stride == [1, 1]
            && self.padding == [0, 0]
            && self.oh == self.h
            && self.ow == self.w
    }
    /// Unit strides and an output as wide as the input: consecutive output
    /// rows read consecutive stretches of each input plane, so im2col and
    /// col2im move a whole band of rows at once.
    fn contiguous_rows(&self) -> bool {
        self.stride == [1, 1] && self.ow == self.w
    }
    /// Multiply-adds of the forward product, for choosing to go parallel.
    pub fn work(&self) -> usize {
        self.n
            .saturating_mul(self.o)
            .saturating_mul(self.k())
            .saturating_mul(self.l())
    }
}

/// Lays one sample `x[C, H, W]` out as columns `[C*KH*KW, OH*OW]`.
pub fn im2col<T: Float>(g: &Geom, x: &[T], cols: &mut [T]) {
    im2col_rows(g, x, cols, g.oh * g.ow, 0, g.oh)
}

/// The output rows `ya..yb` within `oy0..oy1` whose input row `oy + shift`
/// (unit vertical stride) lies inside `0..h`, if any.
fn valid_rows(h: isize, oy0: usize, oy1: usize, shift: isize) -> Option<(usize, usize)> {
    let ya = (oy0 as isize).max(-shift);
    let yb = (oy1 as isize).min(h - shift);
    (ya < yb).then_some((ya as usize, yb as usize))
}

/// The column span `[lo, hi)` of output positions `0..ow` whose input
/// column `ox * sw + off` lies inside a row of width `w`.
fn inside(w: isize, ow: usize, sw: isize, off: isize) -> (usize, usize) {
    let lo = if off >= 0 {
        0
    } else {
        ((-off + sw - 1) / sw) as usize
    };
    let hi = if w - off <= 0 {
        0
    } else {
        (((w - off + sw - 1) / sw) as usize).min(ow)
    };
    (lo.min(hi), hi)
}

/// The columns of output rows `oy0..oy1` only (a band of the full matrix),
/// each of the `C*KH*KW` rows starting `ld` elements after the previous, so
/// a band can stay in cache or several samples can sit side by side.
fn im2col_rows<T: Float>(g: &Geom, x: &[T], cols: &mut [T], ld: usize, oy0: usize, oy1: usize) {
    let (h, w, ow) = (g.h as isize, g.w as isize, g.ow);
    let [sh, sw] = g.stride.map(|s| s as isize);
    let [ph, pw] = g.padding.map(|s| s as isize);
    let [dh, dw] = g.dilation.map(|s| s as isize);
    let bl = (oy1 - oy0) * ow;
    let contiguous = g.contiguous_rows();
    let mut row = 0;
    for ci in 0..g.c {
        let plane = &x[ci * g.h * g.w..(ci + 1) * g.h * g.w];
        for i in 0..g.kh as isize {
            for j in 0..g.kw as isize {
                let dst = &mut cols[row * ld..row * ld + bl];
                row += 1;
                let off = j * dw - pw;
                let (lo, hi) = inside(w, ow, sw, off);
                if contiguous {
                    let Some((ya, yb)) = valid_rows(h, oy0, oy1, i * dh - ph) else {
                        dst.fill(<T as Element>::zero());
                        continue;
                    };
                    dst[..(ya - oy0) * ow].fill(<T as Element>::zero());
                    dst[(yb - oy0) * ow..].fill(<T as Element>::zero());
                    // One copy for all the rows: the values that land in
                    // the padding columns come from the neighbouring input
                    // row (or are cut off at the plane's ends) and are
                    // zeroed after.
                    let start = (ya as isize + i * dh - ph) * w + off;
                    let d0 = (ya - oy0) * ow;
                    let (a, b) = (start.max(0), (start + ((yb - ya) * ow) as isize).min(h * w));
                    if a < b {
                        let at = d0 + (a - start) as usize;
                        dst[at..at + (b - a) as usize]
                            .copy_from_slice(&plane[a as usize..b as usize]);
                    }
                    if lo > 0 || hi < ow {
                        for r in dst[d0..(yb - oy0) * ow].chunks_exact_mut(ow) {
                            r[..lo].fill(<T as Element>::zero());
                            r[hi..].fill(<T as Element>::zero());
                        }
                    }
                    continue;
                }
                for oy in oy0..oy1 {
                    let iy = oy as isize * sh - ph + i * dh;
                    let d = &mut dst[(oy - oy0) * ow..(oy - oy0 + 1) * ow];
                    if iy < 0 || iy >= h {
                        d.fill(<T as Element>::zero());
                        continue;
                    }
                    let src = &plane[iy as usize * g.w..(iy as usize + 1) * g.w];
                    d[..lo].fill(<T as Element>::zero());
                    d[hi..].fill(<T as Element>::zero());
                    if sw == 1 {
                        if lo < hi {
                            // `lo + off` is negative when no column is inside.
                            let s0 = (lo as isize + off) as usize;
                            d[lo..hi].copy_from_slice(&src[s0..s0 + (hi - lo)]);
                        }
                    } else {
                        for (ox, v) in d[lo..hi].iter_mut().enumerate() {
                            *v = src[((ox + lo) as isize * sw + off) as usize];
                        }
                    }
                }
            }
        }
    }
}

/// Adds columns `[C*KH*KW, OH*OW]` back into one sample `x[C, H, W]` (the
/// adjoint of [`im2col`]); `x` must be initialised.
pub fn col2im<T: Float>(g: &Geom, cols: &[T], x: &mut [T]) {
    col2im_rows(g, cols, g.oh * g.ow, x, 0, g.oh)
}

/// [`col2im`] of the band of output rows `oy0..oy1` laid out as by
/// [`im2col_rows`].
fn col2im_rows<T: Float>(g: &Geom, cols: &[T], ld: usize, x: &mut [T], oy0: usize, oy1: usize) {
    let (h, w, ow) = (g.h as isize, g.w as isize, g.ow);
    let [sh, sw] = g.stride.map(|s| s as isize);
    let [ph, pw] = g.padding.map(|s| s as isize);
    let [dh, dw] = g.dilation.map(|s| s as isize);
    let bl = (oy1 - oy0) * ow;
    let mut row = 0;
    for ci in 0..g.c {
        let plane = &mut x[ci * g.h * g.w..(ci + 1) * g.h * g.w];
        for i in 0..g.kh as isize {
            for j in 0..g.kw as isize {
                let src = &cols[row * ld..row * ld + bl];
                row += 1;
                let off = j * dw - pw;
                let (lo, hi) = inside(w, ow, sw, off);
                for oy in oy0..oy1 {
                    let iy = oy as isize * sh - ph + i * dh;
                    if iy < 0 || iy >= h {
                        continue;
                    }
                    let s = &src[(oy - oy0) * ow..(oy - oy0 + 1) * ow];
                    let d = &mut plane[iy as usize * g.w..(iy as usize + 1) * g.w];
                    if sw == 1 && lo < hi {
                        let d0 = (lo as isize + off) as usize;
                        for (a, b) in d[d0..d0 + (hi - lo)].iter_mut().zip(&s[lo..hi]) {
                            *a += *b;
                        }
                    } else {
                        for ox in lo..hi {
                            d[(ox as isize * sw + off) as usize] += s[ox];
                        }
                    }
                }
            }
        }
    }
}

/// [`col2im_rows`] of a band buffer the caller owns: with
/// [`Geom::contiguous_rows`] its padding columns are zeroed so each of its
/// rows goes back with one long add.
fn col2im_band<T: Float>(g: &Geom, cols: &mut [T], ld: usize, x: &mut [T], oy0: usize, oy1: usize) {
    if !g.contiguous_rows() {
        return col2im_rows(g, cols, ld, x, oy0, oy1);
    }
    let (h, w, ow) = (g.h as isize, g.w as isize, g.ow);
    let [ph, pw] = g.padding.map(|s| s as isize);
    let [dh, dw] = g.dilation.map(|s| s as isize);
    let mut row = 0;
    for ci in 0..g.c {
        let plane = &mut x[ci * g.h * g.w..(ci + 1) * g.h * g.w];
        for i in 0..g.kh as isize {
            for j in 0..g.kw as isize {
                let src = &mut cols[row * ld..row * ld + (oy1 - oy0) * ow];
                row += 1;
                let off = j * dw - pw;
                let (lo, hi) = inside(w, ow, 1, off);
                let Some((ya, yb)) = valid_rows(h, oy0, oy1, i * dh - ph) else {
                    continue;
                };
                let src = &mut src[(ya - oy0) * ow..(yb - oy0) * ow];
                if lo > 0 || hi < ow {
                    for r in src.chunks_exact_mut(ow) {
                        r[..lo].fill(<T as Element>::zero());
                        r[hi..].fill(<T as Element>::zero());
                    }
                }
                let start = (ya as isize + i * dh - ph) * w + off;
                let (a, b) = (start.max(0), (start + src.len() as isize).min(h * w));
                if a < b {
                    let s = &src[(a - start) as usize..(b - start) as usize];
                    for (d, v) in plane[a as usize..b as usize].iter_mut().zip(s) {
                        *d += *v;
                    }
                }
            }
        }
    }
}

/// Bytes of column matrix one band may take. gemm packs the weight afresh
/// for every product, so narrow bands pay for that again and again: on the
/// 32x32x32x32 -> 64 layer 128-column bands (150 KB) ran the forward 15%
/// slower than whole-image ones (1.2 MB), and 0.3-5 MB budgets measured
/// alike. Bands only bound the buffer on large images.
// Small under test, so the kernel tests' images split into several bands.
const BAND_BYTES: usize = if cfg!(test) { 64 << 10 } else { 2 << 20 };

/// Output rows per band for a column matrix of `rows` rows: whole output
/// lines, as many as fit [`BAND_BYTES`] and at least one. When the lines
/// allow, a band is a whole number of 64 columns: gemm computes the
/// transposed product in 64-wide tiles (16 lanes x 4 registers for f32),
/// and a ragged edge (224 = 3x64 + 32 columns) ran in the slower 32-wide
/// kernel for a seventh of the work.
fn band_rows<T>(g: &Geom, rows: usize) -> usize {
    let (oh, ow) = (g.oh.max(1), g.ow.max(1));
    let fit = BAND_BYTES / (rows.max(1) * std::mem::size_of::<T>() * ow);
    if fit >= oh {
        return oh;
    }
    let unit = 64 / gcd(64, ow);
    if fit >= unit {
        fit - fit % unit
    } else {
        fit.max(1)
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Writes `src[r, c]` (`rows` x `cols`, rows `ls` apart) to `dst[c, r]`
/// (rows `ld` apart) in square blocks, so both sides move through whole
/// cache lines.
fn transpose_into<T: Copy>(
    src: &[T],
    ls: usize,
    rows: usize,
    cols: usize,
    dst: &mut [T],
    ld: usize,
) {
    const B: usize = 16;
    for r0 in (0..rows).step_by(B) {
        let r1 = (r0 + B).min(rows);
        for c0 in (0..cols).step_by(B) {
            let c1 = (c0 + B).min(cols);
            for r in r0..r1 {
                let s = &src[r * ls + c0..r * ls + c1];
                for (c, &v) in s.iter().enumerate() {
                    dst[(c0 + c) * ld + r] = v;
                }
            }
        }
    }
}

fn mat<T>(ptr: *const T, rows: usize, cols: usize, row_stride: usize, col_stride: usize) -> Mat<T> {
    Mat {
        ptr,
        rows,
        cols,
        row_stride,
        col_stride,
    }
}

/// Runs `body(first, last, gemm_parallel)` over `n` units (samples, or
/// bands of samples): one contiguous tile per thread when the units can
/// feed the team, else all of them on the calling thread with the products
/// themselves split.
fn over_units(n: usize, work: usize, body: impl Fn(usize, usize, bool) + Sync) {
    parallel::run(work, |threads| {
        if threads > 1 && n >= threads {
            let tiles = threads.min(n);
            let per = n.div_ceil(tiles);
            parallel::tasks(n.div_ceil(per), |t| {
                body(t * per, ((t + 1) * per).min(n), false)
            });
        } else {
            body(0, n, threads > 1);
        }
    })
}

/// `y[N, O, OH, OW] = conv(x, w) (+ bias)`; `x`, `w` contiguous.
///
/// Layers the direct kernels run faster go to `conv_direct`; otherwise works
/// in bands of output rows (see [`BAND_BYTES`]): im2col of one band,
/// then one product per group writing that band's columns of `y` in place.
/// Bands of one sample write disjoint columns, so the team splits the
/// `N * bands` units freely.
pub fn conv_forward<T: Float>(g: &Geom, x: &[T], wt: &[T], bias: Option<&[T]>) -> Vec<T> {
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = super::conv_direct::forward_pays::<T>(g) {
        return super::conv_direct::forward(isa, g, x, wt, bias);
    }
    forward_gemm(g, x, wt, bias)
}

/// [`conv_forward`] through im2col and GEMM.
pub(crate) fn forward_gemm<T: Float>(g: &Geom, x: &[T], wt: &[T], bias: Option<&[T]>) -> Vec<T> {
    let (k, og, l) = (g.k(), g.og(), g.l());
    let in_n = g.c * g.h * g.w;
    let out_n = g.o * l;
    // Every element is written below (by the product, or the bias then the
    // product), so the output is not zeroed first: that pass cost about a
    // tenth of the kernel on the 32x32x32x32 layer.
    let mut y: Vec<T> = crate::error::alloc_vec(g.n * out_n);
    let yp = SendPtr(y.as_mut_ptr());
    let pointwise = g.pointwise();
    // With one group the bias rides along as one more column of the weight
    // against a row of ones under the band's columns, so the product writes
    // the output once instead of adding onto a bias-filled band.
    let fused = bias.filter(|_| g.groups == 1 && !pointwise);
    let kb = k + usize::from(fused.is_some());
    let wb: Vec<T>;
    let (wt, wk) = match fused {
        Some(b) => {
            let mut v = crate::error::alloc_vec(og * kb);
            for (row, &bv) in wt.chunks_exact(k.max(1)).zip(b) {
                v.extend_from_slice(row);
                v.push(bv);
            }
            wb = v;
            (&wb[..], kb)
        }
        None => (wt, k),
    };
    let rows = if pointwise {
        g.oh.max(1)
    } else {
        band_rows::<T>(g, g.groups * kb)
    };
    let bands = g.oh.div_ceil(rows).max(1);
    over_units(g.n * bands, g.work(), |lo, hi, par| {
        let mut cols: Vec<T> = if pointwise || lo == hi {
            Vec::new()
        } else {
            crate::error::filled_vec(g.groups * kb * rows * g.ow, <T as Element>::one())
        };
        for u in lo..hi {
            let (s, band) = (u / bands, u % bands);
            let (oy0, oy1) = (band * rows, ((band + 1) * rows).min(g.oh));
            let (p0, bl) = (oy0 * g.ow, (oy1 - oy0) * g.ow);
            let xs = &x[s * in_n..(s + 1) * in_n];
            let (src, ld): (&[T], usize) = if pointwise {
                (&xs[p0..], l)
            } else {
                if fused.is_some() && bl < rows * g.ow {
                    // A short last band: its ones row sits at the new width.
                    cols[k * bl..kb * bl].fill(<T as Element>::one());
                }
                im2col_rows(g, xs, &mut cols, bl, oy0, oy1);
                (&cols, bl)
            };
            // SAFETY: band `band` of sample `s`'s block of `y` belongs to
            // this unit alone.
            let ys = unsafe { yp.get().add(s * out_n + p0) };
            let add = bias.is_some() && fused.is_none();
            if add {
                for (oc, &bv) in bias.unwrap_or(&[]).iter().enumerate() {
                    // SAFETY: row `oc`'s columns of this band.
                    unsafe { std::slice::from_raw_parts_mut(ys.add(oc * l), bl) }.fill(bv);
                }
            }
            for gi in 0..g.groups {
                let a = mat(wt[gi * og * wk..].as_ptr(), og, wk, wk, 1);
                let b = mat(src[gi * k * ld..].as_ptr(), wk, bl, ld, 1);
                // SAFETY: operands lie inside `wt` / `src`, the result inside
                // this band of `y` (rows `l` apart).
                unsafe { gemm_ld_into(a, b, ys.add(gi * og * l), l, add, par) };
            }
        }
    });
    // SAFETY: each band of each sample was written in full by its unit (a
    // panic in a unit propagates before this point, leaving `y` empty).
    unsafe { y.set_len(g.n * out_n) };
    y
}

/// The input's gradient `gx[N, C, H, W]` from `gy[N, O, OH, OW]` (the
/// transposed convolution of `gy` with `w`), plus a per-channel `bias` of
/// `C` when it is the forward of a transposed convolution.
///
/// Direct where that pays (as [`conv_forward`]), else per band of output
/// rows: `cols = w^T @ gy[:, band]`, then col2im of the
/// band. Neighbouring bands add into shared input rows, so a sample's
/// bands stay on one thread.
pub fn conv_backward_input<T: Float>(g: &Geom, gy: &[T], wt: &[T], bias: Option<&[T]>) -> Vec<T> {
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = super::conv_direct::backward_input_pays::<T>(g) {
        return super::conv_direct::backward_input(isa, g, gy, wt, bias);
    }
    backward_input_gemm(g, gy, wt, bias)
}

/// [`conv_backward_input`] through im2col and GEMM.
pub(crate) fn backward_input_gemm<T: Float>(
    g: &Geom,
    gy: &[T],
    wt: &[T],
    bias: Option<&[T]>,
) -> Vec<T> {
    let (k, og, l) = (g.k(), g.og(), g.l());
    let in_n = g.c * g.h * g.w;
    let out_n = g.o * l;
    let mut gx: Vec<T> = crate::error::alloc_vec(g.n * in_n);
    let xp = SendPtr(gx.as_mut_ptr());
    let pointwise = g.pointwise();
    let rows = if pointwise {
        g.oh.max(1)
    } else {
        band_rows::<T>(g, g.groups * k)
    };
    over_units(g.n, g.work(), |lo, hi, par| {
        let mut cols: Vec<T> = if pointwise || lo == hi {
            Vec::new()
        } else {
            crate::error::filled_vec(g.groups * k * rows * g.ow, <T as Element>::zero())
        };
        for s in lo..hi {
            // SAFETY: sample `s`'s block of `gx` belongs to this tile alone;
            // it is initialised before anything reads it.
            let xs = unsafe {
                let p = xp.get().add(s * in_n);
                if !pointwise {
                    std::ptr::write_bytes(p, 0, in_n);
                }
                std::slice::from_raw_parts_mut(p, in_n)
            };
            if pointwise {
                for gi in 0..g.groups {
                    // w_g^T: [k, og] read through transposed strides.
                    let a = mat(wt[gi * og * k..].as_ptr(), k, og, 1, k);
                    let b = mat(gy[s * out_n + gi * og * l..].as_ptr(), og, l, l, 1);
                    // SAFETY: operands inside `wt` / `gy`; the result is
                    // group `gi`'s channels of `xs`, overwritten in full.
                    unsafe { gemm_into(a, b, xs.as_mut_ptr().add(gi * k * l), par) };
                }
            } else {
                let mut oy0 = 0;
                while oy0 < g.oh {
                    let oy1 = (oy0 + rows).min(g.oh);
                    let (p0, bl) = (oy0 * g.ow, (oy1 - oy0) * g.ow);
                    for gi in 0..g.groups {
                        let a = mat(wt[gi * og * k..].as_ptr(), k, og, 1, k);
                        let b = mat(gy[s * out_n + gi * og * l + p0..].as_ptr(), og, bl, l, 1);
                        // SAFETY: operands inside `wt` / `gy`; the result
                        // is group `gi`'s rows of the band buffer.
                        unsafe { gemm_into(a, b, cols.as_mut_ptr().add(gi * k * bl), par) };
                    }
                    col2im_band(g, &mut cols, bl, xs, oy0, oy1);
                    oy0 = oy1;
                }
            }
            if let Some(b) = bias {
                let plane = g.h * g.w;
                for (ci, &bv) in b.iter().enumerate() {
                    for v in &mut xs[ci * plane..(ci + 1) * plane] {
                        *v += bv;
                    }
                }
            }
        }
    });
    // SAFETY: every sample's block was written by its tile (zeroed then
    // added to, or overwritten by the product).
    unsafe { gx.set_len(g.n * in_n) };
    gx
}

/// Column-matrix elements per weight-gradient product: small images share
/// one, but past L2 (3 samples of the 32x32x32x32 layer, 3.5 MB) it ran
/// 10-15% slower than one sample per product.
const WGRAD_COLS: usize = 1 << 18;

/// The weight's gradient `gw[O, C/groups, KH, KW] = sum_n gy_n @ cols(x_n)^T`.
///
/// Small weights go to the direct kernel; otherwise computed transposed, `gw_g^T[k, og] += cols_g[k, l] @ gy_g^T[l, og]`
/// with `gy_n` transposed into a buffer first, and turned around once at the
/// end: the gemm crate is fastest with both operands read by rows (one
/// 64x1024x288 product: 0.19 ms, against 0.27 with `gy^T` read through
/// strides and 0.63 computing `gy @ cols^T` directly). Large images go in
/// bands of output rows as in [`conv_forward`]; small ones several samples
/// per product.
pub fn conv_backward_weight<T: Float>(g: &Geom, x: &[T], gy: &[T]) -> Vec<T> {
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = super::conv_direct::backward_weight_pays::<T>(g) {
        return super::conv_direct::backward_weight(isa, g, x, gy);
    }
    backward_weight_gemm(g, x, gy)
}

/// [`conv_backward_weight`] through im2col and GEMM.
pub(crate) fn backward_weight_gemm<T: Float>(g: &Geom, x: &[T], gy: &[T]) -> Vec<T> {
    let (k, og, l) = (g.k(), g.og(), g.l());
    let in_n = g.c * g.h * g.w;
    let out_n = g.o * l;
    let wn = g.o * k;
    let pointwise = g.pointwise();
    let threads = if g.work() >= super::GRAIN {
        parallel::get_num_threads()
    } else {
        1
    };
    // One accumulator per tile, summed at the end: tiles never share memory.
    let tiles = if threads > 1 && g.n >= threads {
        threads
    } else {
        1
    };
    let per = g.n.div_ceil(tiles).max(1);
    let tiles = g.n.div_ceil(per).max(1);
    let rows = if pointwise {
        g.oh.max(1)
    } else {
        band_rows::<T>(g, g.groups * k)
    };
    let bands = g.oh.div_ceil(rows).max(1);
    // Samples per product when a sample is a single band.
    let bt = if bands > 1 {
        1
    } else {
        (WGRAD_COLS / (g.groups * k * l).max(1)).clamp(1, per)
    };
    let ld = bt * rows * g.ow;
    // Fewer output channels than one vector holds (LeNet's 6) would leave
    // most lanes of gemm's tiles idle along `og`, so such products run
    // upright, `gw_g[og, k] += gy_g[og, l] @ cols_g^T[l, k]` read through
    // the same buffers' strides, with `k` along the vectors; the
    // accumulators are then in the weight's own layout.
    let upright = og * std::mem::size_of::<T>() < 64;
    let mut acc: Vec<T> = crate::error::filled_vec(tiles * wn, <T as Element>::zero());
    let ap = SendPtr(acc.as_mut_ptr());
    let tile = |t: usize, par: bool| {
        let (lo, hi) = (t * per, ((t + 1) * per).min(g.n));
        if lo >= hi {
            return;
        }
        // A large pointwise image is its own column matrix.
        let direct = pointwise && bt == 1 && bands == 1;
        let mut cols: Vec<T> = if direct {
            Vec::new()
        } else {
            crate::error::filled_vec(g.groups * k * ld, <T as Element>::zero())
        };
        // gy^T of the chunk, [columns, O], so the product reads both
        // operands by rows.
        let mut gyt: Vec<T> = crate::error::filled_vec(ld * g.o, <T as Element>::zero());
        // SAFETY: accumulator `t` belongs to this tile alone.
        let dw = unsafe { ap.get().add(t * wn) };
        let mut u = lo * bands;
        while u < hi * bands {
            // The chunk: `bt` whole samples, or one band of one sample.
            let cur = bt.min(hi * bands - u);
            let mut width = 0;
            for v in u..u + cur {
                let (s, band) = (v / bands, v % bands);
                let (oy0, oy1) = (band * rows, ((band + 1) * rows).min(g.oh));
                let (p0, bl) = (oy0 * g.ow, (oy1 - oy0) * g.ow);
                if !direct {
                    let xs = &x[s * in_n..(s + 1) * in_n];
                    im2col_rows(g, xs, &mut cols[width..], ld, oy0, oy1);
                }
                let gys = &gy[s * out_n + p0..(s + 1) * out_n];
                transpose_into(gys, l, g.o, bl, &mut gyt[width * g.o..], g.o);
                width += bl;
            }
            let (src, lds): (&[T], usize) = if direct {
                (&x[(u / bands) * in_n..], l)
            } else {
                (&cols, ld)
            };
            for gi in 0..g.groups {
                let (a, b) = if upright {
                    (
                        mat(gyt[gi * og..].as_ptr(), og, width, 1, g.o),
                        mat(src[gi * k * lds..].as_ptr(), width, k, 1, lds),
                    )
                } else {
                    (
                        mat(src[gi * k * lds..].as_ptr(), k, width, lds, 1),
                        mat(gyt[gi * og..].as_ptr(), width, og, g.o, 1),
                    )
                };
                // SAFETY: operands inside `src` / `gyt`; the result inside the accumulator.
                unsafe { gemm_add_into(a, b, dw.add(gi * k * og), par) };
            }
            u += cur;
        }
    };
    if tiles > 1 {
        parallel::tasks(tiles, |t| tile(t, false));
    } else {
        tile(0, threads > 1);
    }
    let (first, rest) = acc.split_at_mut(wn);
    for part in rest.chunks(wn) {
        for (a, b) in first.iter_mut().zip(part) {
            *a += *b;
        }
    }
    if upright {
        acc.truncate(wn);
        return acc;
    }
    let mut gw: Vec<T> = crate::error::filled_vec(wn, <T as Element>::zero());
    for gi in 0..g.groups {
        let src = &first[gi * k * og..(gi + 1) * k * og];
        let dst = &mut gw[gi * og * k..(gi + 1) * og * k];
        transpose_into(src, og, k, og, dst, k);
    }
    gw
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct definition of the convolution, for checking the kernels.
    fn naive(g: &Geom, x: &[f64], w: &[f64]) -> Vec<f64> {
        let (cg, og) = (g.c / g.groups, g.o / g.groups);
        let mut y = vec![0.0; g.n * g.o * g.oh * g.ow];
        for n in 0..g.n {
            for o in 0..g.o {
                let gi = o / og;
                for oy in 0..g.oh {
                    for ox in 0..g.ow {
                        let mut acc = 0.0;
                        for c in 0..cg {
                            for i in 0..g.kh {
                                for j in 0..g.kw {
                                    let iy = (oy * g.stride[0] + i * g.dilation[0]) as isize
                                        - g.padding[0] as isize;
                                    let ix = (ox * g.stride[1] + j * g.dilation[1]) as isize
                                        - g.padding[1] as isize;
                                    if iy < 0 || ix < 0 || iy >= g.h as isize || ix >= g.w as isize
                                    {
                                        continue;
                                    }
                                    let xi = ((n * g.c + gi * cg + c) * g.h + iy as usize) * g.w
                                        + ix as usize;
                                    let wi = ((o * cg + c) * g.kh + i) * g.kw + j;
                                    acc += x[xi] * w[wi];
                                }
                            }
                        }
                        y[((n * g.o + o) * g.oh + oy) * g.ow + ox] = acc;
                    }
                }
            }
        }
        y
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// Forward against the loops; both backward kernels through the adjoint
    /// identity `<gy, conv(x, w)> = <gx(gy, w), x> = <gw(x, gy), w>`.
    #[test]
    fn kernels_match_the_definition_and_are_adjoint() {
        crate::kernels::parallel::set_num_threads(2).unwrap();
        for &(n, c, h, w, o, kh, kw, s, p, d, groups) in &[
            (2, 4, 7, 6, 6, 3, 2, [2, 1], [1, 0], [1, 2], 2),
            (3, 3, 5, 5, 2, 1, 1, [1, 1], [0, 0], [1, 1], 1),
            (1, 2, 9, 4, 4, 2, 3, [3, 2], [2, 1], [2, 1], 2),
            // Several bands of output rows per sample (see `BAND_BYTES`),
            // the last one shorter.
            (3, 4, 70, 64, 3, 3, 3, [1, 1], [1, 1], [1, 1], 1),
            (2, 6, 41, 50, 4, 3, 2, [2, 1], [0, 2], [1, 2], 2),
            // Output as wide as the input (`contiguous_rows`): 'same'
            // padding, dilated, and kernels wider than the image.
            (2, 3, 12, 9, 2, 5, 5, [1, 1], [2, 2], [1, 1], 1),
            (2, 2, 10, 11, 3, 3, 3, [1, 1], [2, 2], [2, 2], 1),
            (1, 2, 4, 3, 2, 7, 7, [1, 1], [3, 3], [1, 1], 1),
            (2, 4, 5, 6, 4, 3, 5, [1, 1], [0, 2], [1, 1], 2),
            // Enough output channels per group for the weight gradient's
            // transposed product (`upright` is false).
            (3, 3, 6, 5, 16, 3, 3, [1, 1], [1, 1], [1, 1], 1),
            (2, 4, 9, 7, 16, 3, 2, [2, 1], [1, 1], [1, 2], 2),
            // A kernel tap whose every output column falls in the padding,
            // left of a 1-wide image (its slice once started at -1).
            (1, 1, 2, 1, 1, 1, 6, [1, 1], [0, 3], [1, 1], 1),
            (1, 1, 1, 1, 1, 1, 3, [1, 1], [0, 2], [1, 2], 1),
        ] {
            let oh = (h + 2 * p[0] - d[0] * (kh - 1) - 1) / s[0] + 1;
            let ow = (w + 2 * p[1] - d[1] * (kw - 1) - 1) / s[1] + 1;
            let g = Geom {
                n,
                c,
                h,
                w,
                o,
                kh,
                kw,
                oh,
                ow,
                stride: s,
                padding: p,
                dilation: d,
                groups,
            };
            let x: Vec<f64> = (0..n * c * h * w)
                .map(|i| ((i * 7 % 11) as f64) - 5.0)
                .collect();
            let wt: Vec<f64> = (0..o * c / groups * kh * kw)
                .map(|i| ((i * 5 % 9) as f64) - 4.0)
                .collect();
            let gy: Vec<f64> = (0..n * o * oh * ow)
                .map(|i| ((i * 3 % 7) as f64) - 3.0)
                .collect();
            let y = conv_forward(&g, &x, &wt, None);
            assert_eq!(y, naive(&g, &x, &wt), "{g:?}");
            // The bias, fused into the product or added to its output.
            let b: Vec<f64> = (0..o).map(|i| i as f64 - 1.5).collect();
            let yb = conv_forward(&g, &x, &wt, Some(&b));
            let want: Vec<f64> = y
                .iter()
                .enumerate()
                .map(|(i, v)| v + b[i / (oh * ow) % o])
                .collect();
            assert_eq!(yb, want, "{g:?} with bias");
            let gx = conv_backward_input(&g, &gy, &wt, None);
            let gw = conv_backward_weight(&g, &x, &gy);
            assert_eq!(dot(&gy, &y), dot(&gx, &x), "{g:?}");
            assert_eq!(dot(&gy, &y), dot(&gw, &wt), "{g:?}");
        }
    }
}

//! Convolution as im2col plus one GEMM per sample and group, and the
//! kernels of its backward: the input's gradient (GEMM then col2im, which is
//! also the transposed convolution) and the weight's (im2col then a GEMM
//! accumulated over the batch).
//!
//! The batch is split into one contiguous tile per thread; each tile owns a
//! single column buffer (`C*kh*kw` by `OH*OW`, one sample's worth) that it
//! reuses for every sample, so memory stays bounded by the thread count, not
//! the batch. A batch smaller than the team runs its samples one after the
//! other with each GEMM split across the threads instead. One-dimensional
//! convolutions are the `H = 1` case.

use super::matmul::{gemm_add_into, gemm_into, Mat};
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
    im2col_strided(g, x, cols, g.oh * g.ow)
}

/// [`im2col`] into rows `ld` elements apart, so several samples' columns can
/// sit side by side in one matrix.
fn im2col_strided<T: Float>(g: &Geom, x: &[T], cols: &mut [T], ld: usize) {
    let (h, w, oh, ow) = (g.h as isize, g.w as isize, g.oh, g.ow);
    let [sh, sw] = g.stride.map(|s| s as isize);
    let [ph, pw] = g.padding.map(|s| s as isize);
    let [dh, dw] = g.dilation.map(|s| s as isize);
    let l = oh * ow;
    let mut row = 0;
    for ci in 0..g.c {
        let plane = &x[ci * g.h * g.w..(ci + 1) * g.h * g.w];
        for i in 0..g.kh as isize {
            for j in 0..g.kw as isize {
                let dst = &mut cols[row * ld..row * ld + l];
                row += 1;
                // The output columns whose input column is inside the image.
                let off = j * dw - pw;
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
                let lo = lo.min(hi);
                for oy in 0..oh {
                    let iy = oy as isize * sh - ph + i * dh;
                    let d = &mut dst[oy * ow..(oy + 1) * ow];
                    if iy < 0 || iy >= h {
                        d.fill(<T as Element>::zero());
                        continue;
                    }
                    let src = &plane[iy as usize * g.w..(iy as usize + 1) * g.w];
                    d[..lo].fill(<T as Element>::zero());
                    d[hi..].fill(<T as Element>::zero());
                    if sw == 1 {
                        let s0 = (lo as isize + off) as usize;
                        d[lo..hi].copy_from_slice(&src[s0..s0 + (hi - lo)]);
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
    let (h, w, oh, ow) = (g.h as isize, g.w as isize, g.oh, g.ow);
    let [sh, sw] = g.stride.map(|s| s as isize);
    let [ph, pw] = g.padding.map(|s| s as isize);
    let [dh, dw] = g.dilation.map(|s| s as isize);
    let l = oh * ow;
    let mut row = 0;
    for ci in 0..g.c {
        let plane = &mut x[ci * g.h * g.w..(ci + 1) * g.h * g.w];
        for i in 0..g.kh as isize {
            for j in 0..g.kw as isize {
                let src = &cols[row * l..(row + 1) * l];
                row += 1;
                let off = j * dw - pw;
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
                let lo = lo.min(hi);
                for oy in 0..oh {
                    let iy = oy as isize * sh - ph + i * dh;
                    if iy < 0 || iy >= h {
                        continue;
                    }
                    let s = &src[oy * ow..(oy + 1) * ow];
                    let d = &mut plane[iy as usize * g.w..(iy as usize + 1) * g.w];
                    if sw == 1 {
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

fn mat<T>(ptr: *const T, rows: usize, cols: usize, row_stride: usize, col_stride: usize) -> Mat<T> {
    Mat {
        ptr,
        rows,
        cols,
        row_stride,
        col_stride,
    }
}

/// Runs `body(first, last, gemm_parallel)` over the batch: one contiguous
/// tile per thread when the batch can feed the team, else the whole batch on
/// the calling thread with the products themselves split.
fn over_batch(n: usize, work: usize, body: impl Fn(usize, usize, bool) + Sync) {
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
pub fn conv_forward<T: Float>(g: &Geom, x: &[T], wt: &[T], bias: Option<&[T]>) -> Vec<T> {
    let (k, og, l) = (g.k(), g.og(), g.l());
    let in_n = g.c * g.h * g.w;
    let out_n = g.o * l;
    // Every element is written below (by the product, or the bias then the
    // product), so the output is not zeroed first: that pass cost about a
    // tenth of the kernel on the 32x32x32x32 layer.
    let mut y: Vec<T> = crate::error::alloc_vec(g.n * out_n);
    let yp = SendPtr(y.as_mut_ptr());
    let pointwise = g.pointwise();
    over_batch(g.n, g.work(), |lo, hi, par| {
        let mut cols: Vec<T> = if pointwise || lo == hi {
            Vec::new()
        } else {
            crate::error::filled_vec(g.groups * k * l, <T as Element>::zero())
        };
        for s in lo..hi {
            let xs = &x[s * in_n..(s + 1) * in_n];
            let src: &[T] = if pointwise {
                xs
            } else {
                im2col(g, xs, &mut cols);
                &cols
            };
            // SAFETY: sample `s`'s block of `y` belongs to this tile alone.
            let ys = unsafe { yp.get().add(s * out_n) };
            if let Some(b) = bias {
                for (oc, &bv) in b.iter().enumerate() {
                    // SAFETY: row `oc` of this sample's block.
                    unsafe { std::slice::from_raw_parts_mut(ys.add(oc * l), l) }.fill(bv);
                }
            }
            for gi in 0..g.groups {
                let a = mat(wt[gi * og * k..].as_ptr(), og, k, k, 1);
                let b = mat(src[gi * k * l..].as_ptr(), k, l, l, 1);
                // SAFETY: operands lie inside `wt` / `src`, the result inside `y`.
                unsafe {
                    let dst = ys.add(gi * og * l);
                    if bias.is_some() {
                        gemm_add_into(a, b, dst, par)
                    } else {
                        gemm_into(a, b, dst, par)
                    }
                }
            }
        }
    });
    // SAFETY: each sample's block was written in full by its tile (a panic
    // in a tile propagates before this point, leaving `y` empty).
    unsafe { y.set_len(g.n * out_n) };
    y
}

/// The input's gradient `gx[N, C, H, W]` from `gy[N, O, OH, OW]` (the
/// transposed convolution of `gy` with `w`), plus a per-channel `bias` of
/// `C` when it is the forward of a transposed convolution.
pub fn conv_backward_input<T: Float>(g: &Geom, gy: &[T], wt: &[T], bias: Option<&[T]>) -> Vec<T> {
    let (k, og, l) = (g.k(), g.og(), g.l());
    let in_n = g.c * g.h * g.w;
    let out_n = g.o * l;
    let mut gx: Vec<T> = crate::error::filled_vec(g.n * in_n, <T as Element>::zero());
    let xp = SendPtr(gx.as_mut_ptr());
    let pointwise = g.pointwise();
    over_batch(g.n, g.work(), |lo, hi, par| {
        let mut cols: Vec<T> = if pointwise || lo == hi {
            Vec::new()
        } else {
            crate::error::filled_vec(g.groups * k * l, <T as Element>::zero())
        };
        for s in lo..hi {
            // SAFETY: sample `s`'s block of `gx` belongs to this tile alone.
            let xs = unsafe { std::slice::from_raw_parts_mut(xp.get().add(s * in_n), in_n) };
            let dst: *mut T = if pointwise {
                xs.as_mut_ptr()
            } else {
                cols.as_mut_ptr()
            };
            for gi in 0..g.groups {
                // w_g^T: [k, og] read through transposed strides.
                let a = mat(wt[gi * og * k..].as_ptr(), k, og, 1, k);
                let b = mat(gy[s * out_n + gi * og * l..].as_ptr(), og, l, l, 1);
                // SAFETY: operands inside `wt` / `gy`; the result inside `cols` or `xs`.
                unsafe { gemm_into(a, b, dst.add(gi * k * l), par) };
            }
            if !pointwise {
                col2im(g, &cols, xs);
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
    gx
}

/// The weight's gradient `gw[O, C/groups, KH, KW] = sum_n gy_n @ cols(x_n)^T`.
///
/// Computed transposed, `gw_g^T[k, og] += cols_g[k, l] @ gy_g^T[l, og]`
/// with `gy_n` transposed into a buffer first, and turned around once at the
/// end: the gemm crate is fastest with both operands read by rows (one
/// 64x1024x288 product: 0.19 ms, against 0.27 with `gy^T` read through
/// strides and 0.63 computing `gy @ cols^T` directly).
pub fn conv_backward_weight<T: Float>(g: &Geom, x: &[T], gy: &[T]) -> Vec<T> {
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
    // Samples per product: small layers (LeNet's 6x25 weight over 28x28)
    // make one product per sample too thin to run at speed, so several
    // samples' columns go side by side, up to about a million elements.
    let bt = ((1usize << 20) / (g.groups * k * l).max(1)).clamp(1, per);
    let ld = bt * l;
    let mut acc: Vec<T> = crate::error::filled_vec(tiles * wn, <T as Element>::zero());
    let ap = SendPtr(acc.as_mut_ptr());
    let tile = |t: usize, par: bool| {
        let (lo, hi) = (t * per, ((t + 1) * per).min(g.n));
        if lo >= hi {
            return;
        }
        let batched = bt > 1 || !pointwise;
        let mut cols: Vec<T> = if batched {
            crate::error::filled_vec(g.groups * k * ld, <T as Element>::zero())
        } else {
            Vec::new()
        };
        // gy^T of the chunk, [samples * l, O], so the product reads both
        // operands by rows.
        let mut gyt: Vec<T> = crate::error::filled_vec(ld * g.o, <T as Element>::zero());
        // SAFETY: accumulator `t` belongs to this tile alone.
        let dw = unsafe { ap.get().add(t * wn) };
        let mut s0 = lo;
        while s0 < hi {
            let cur = bt.min(hi - s0);
            for j in 0..cur {
                let s = s0 + j;
                if batched {
                    im2col_strided(g, &x[s * in_n..(s + 1) * in_n], &mut cols[j * l..], ld);
                }
                let gys = &gy[s * out_n..(s + 1) * out_n];
                for (o, row) in gys.chunks_exact(l.max(1)).enumerate() {
                    for (p, &v) in row.iter().enumerate() {
                        gyt[(j * l + p) * g.o + o] = v;
                    }
                }
            }
            let (src, lds): (&[T], usize) = if batched {
                (&cols, ld)
            } else {
                (&x[s0 * in_n..(s0 + 1) * in_n], l)
            };
            for gi in 0..g.groups {
                let a = mat(src[gi * k * lds..].as_ptr(), k, cur * l, lds, 1);
                let b = mat(gyt[gi * og..].as_ptr(), cur * l, og, g.o, 1);
                // SAFETY: operands inside `src` / `gyt`; the result inside the accumulator.
                unsafe { gemm_add_into(a, b, dw.add(gi * k * og), par) };
            }
            s0 += cur;
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
    let mut gw: Vec<T> = crate::error::filled_vec(wn, <T as Element>::zero());
    for gi in 0..g.groups {
        let src = &first[gi * k * og..(gi + 1) * k * og];
        let dst = &mut gw[gi * og * k..(gi + 1) * og * k];
        for r in 0..k {
            for o in 0..og {
                dst[o * k + r] = src[r * og + o];
            }
        }
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
            let gx = conv_backward_input(&g, &gy, &wt, None);
            let gw = conv_backward_weight(&g, &x, &gy);
            assert_eq!(dot(&gy, &y), dot(&gx, &x), "{g:?}");
            assert_eq!(dot(&gy, &y), dot(&gw, &wt), "{g:?}");
        }
    }
}

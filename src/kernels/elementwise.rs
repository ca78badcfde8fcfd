//! Elementwise maps over one or two strided (and broadcast) operands.
//!
//! Contiguous runs go through `map_slice`/`zip_slice`, which run
//! `kernels::vmath`'s loops compiled for AVX-512, AVX2 and the x86-64
//! baseline and chosen at run time, so one wheel runs on any x86-64 and
//! still uses the widest vectors the CPU has.

use std::mem::MaybeUninit;

use super::{build_vec, coalesce, drive, par_ranges, SendPtr, GRAIN};
use crate::tensor::{broadcast_strides, Element, View};

/// `dst[i] = f(src[i])` on the widest instruction set the CPU has.
#[inline]
fn map_slice<T: Copy, U: Copy, F: Fn(T) -> U>(dst: &mut [MaybeUninit<U>], src: &[T], f: &F) {
    super::vmath::map(dst, src, f)
}

/// `dst[i] = f(a[i], b[i])` on the widest instruction set the CPU has.
#[inline]
fn zip_slice<T: Copy, U: Copy, F: Fn(T, T) -> U>(
    dst: &mut [MaybeUninit<U>],
    a: &[T],
    b: &[T],
    f: &F,
) {
    super::vmath::zip(dst, a, b, f)
}

/// `f` itself. A closure takes `#[inline(always)]` only in argument
/// position; this gives the closures built here (the element function with
/// one operand bound) a place to take it. Without it LLVM may keep them out
/// of the vectorised loop, whose copies call them once per element, scalar.
#[inline(always)]
fn always<F>(f: F) -> F {
    f
}

/// The elements of a strided run gathered per call of the vector loop.
const GATHER: usize = 256;

/// The side of the square tiles of [`tiled`].
const TILE: usize = 64;

/// Fills a row-major `rows x cols` output whose operands all run along its
/// columns (unit stride down a column: a transposed matrix), a tile at a
/// time. Row-major order would read each operand with a stride of a whole
/// column, a cache line and often a page per element (ten times slower than
/// a contiguous pass); a tile reads `TILE` unit-stride runs, one per column,
/// through `run(tile_column, col, r0)`, which fills the column's run of
/// rows `r0..r0 + tile_column.len()`, and then writes the tile's rows out.
fn tiled<U: Element>(
    out: &mut [MaybeUninit<U>],
    rows: usize,
    cols: usize,
    run: impl Fn(&mut [MaybeUninit<U>], usize, usize) + Sync,
) {
    let o = SendPtr(out.as_mut_ptr());
    let band = |b: usize| {
        let (r0, r1) = (b * TILE, ((b + 1) * TILE).min(rows));
        let h = r1 - r0;
        let mut tile = [MaybeUninit::<U>::uninit(); TILE * TILE];
        for c0 in (0..cols).step_by(TILE) {
            let w = TILE.min(cols - c0);
            for j in 0..w {
                run(&mut tile[j * TILE..j * TILE + h], c0 + j, r0);
            }
            for i in 0..h {
                // SAFETY: bands are disjoint rows of `out`; the tile's first
                // `h` slots of each of its `w` columns were just written.
                unsafe {
                    let dst = o.get().add((r0 + i) * cols + c0);
                    for j in 0..w {
                        *dst.add(j) = tile[j * TILE + i];
                    }
                }
            }
        }
    };
    let bands = rows.div_ceil(TILE);
    super::parallel::run(out.len(), |threads| {
        if threads == 1 {
            (0..bands).for_each(band);
        } else {
            super::parallel::tasks(bands, band);
        }
    });
}

/// `dst[i] = f(src[i])` over a contiguous source, split across the pool.
fn par_map<T: Element, U: Element>(
    out: &mut [MaybeUninit<U>],
    src: &[T],
    f: &(impl Fn(T) -> U + Sync),
) {
    let n = out.len();
    if n < GRAIN {
        map_slice(out, src, f);
        return;
    }
    let o = SendPtr(out.as_mut_ptr());
    par_ranges(n, |lo, hi| {
        // SAFETY: the ranges are disjoint and inside `out`.
        let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(lo), hi - lo) };
        map_slice(dst, &src[lo..hi], f);
    });
}

/// `dst[i] = f(a[i], b[i])` over contiguous operands, split across the pool.
fn par_zip<T: Element, U: Element>(
    out: &mut [MaybeUninit<U>],
    a: &[T],
    b: &[T],
    f: &(impl Fn(T, T) -> U + Sync),
) {
    let n = out.len();
    if n < GRAIN {
        zip_slice(out, a, b, f);
        return;
    }
    let o = SendPtr(out.as_mut_ptr());
    par_ranges(n, |lo, hi| {
        // SAFETY: the ranges are disjoint and inside `out`.
        let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(lo), hi - lo) };
        zip_slice(dst, &a[lo..hi], &b[lo..hi], f);
    });
}

/// `f` applied to every element of `x`, as a fresh row-major vector.
pub fn unary<T: Element, U: Element>(x: &View, f: impl Fn(T) -> U + Sync) -> Vec<U> {
    let n = x.numel();
    if let Some(s) = x.as_slice::<T>() {
        return build_vec(n, |out| par_map(out, s, &f));
    }
    let (shape, [st]) = coalesce(&x.shape, [&x.strides]);
    let inner = *st.last().unwrap_or(&1);
    let src = SendPtr(x.ptr::<T>());
    if shape.len() == 2 && st[0] == 1 {
        let (rows, cols) = (shape[0], shape[1]);
        return build_vec(n, |out| {
            tiled(out, rows, cols, |o: &mut [MaybeUninit<U>], c, r0| {
                let p = src;
                // SAFETY: rows `r0..r0 + o.len()` of column `c`, unit stride, inside the view.
                let run = unsafe { std::slice::from_raw_parts(p.0.add(c * inner + r0), o.len()) };
                map_slice(o, run, &f);
            })
        });
    }
    build_vec(n, |out| {
        drive(
            out,
            &shape,
            std::array::from_ref(&st),
            |o: &mut [MaybeUninit<U>], [off]| {
                let p = src;
                if inner == 1 {
                    // SAFETY: a unit-stride run of `o.len()` elements inside the view.
                    let row = unsafe { std::slice::from_raw_parts(p.0.add(off), o.len()) };
                    map_slice(o, row, &f);
                    return;
                }
                // Gathered into a buffer a block at a time, so the function
                // still runs in the instruction-set-dispatched loop.
                let mut buf = [MaybeUninit::<T>::uninit(); GATHER];
                for (k, part) in o.chunks_mut(GATHER).enumerate() {
                    let base = off + k * GATHER * inner;
                    for (i, slot) in buf[..part.len()].iter_mut().enumerate() {
                        // SAFETY: offsets stay inside the view.
                        slot.write(unsafe { *p.0.add(base + i * inner) });
                    }
                    // SAFETY: the first `part.len()` slots were just written.
                    let run =
                        unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<T>(), part.len()) };
                    map_slice(part, run, &f);
                }
            },
        )
    })
}

/// `f(a, b)` over the broadcast of `a` and `b` to `out_shape`.
pub fn binary<T: Element, U: Element>(
    a: &View,
    b: &View,
    out_shape: &[usize],
    f: impl Fn(T, T) -> U + Sync,
) -> Vec<U> {
    let n: usize = out_shape.iter().product();
    // Fast paths: equal contiguous shapes, and a one-element operand.
    if a.shape.as_slice() == out_shape && b.shape.as_slice() == out_shape {
        if let (Some(sa), Some(sb)) = (a.as_slice::<T>(), b.as_slice::<T>()) {
            return build_vec(n, |out| par_zip(out, sa, sb, &f));
        }
    }
    if b.numel() == 1 && a.shape.as_slice() == out_shape {
        if let Some(sa) = a.as_slice::<T>() {
            // SAFETY: a one-element view has a valid first element.
            let y = unsafe { *b.ptr::<T>() };
            return build_vec(n, |out| {
                par_map(
                    out,
                    sa,
                    &always(
                        #[inline(always)]
                        |x| f(x, y),
                    ),
                )
            });
        }
    }
    if a.numel() == 1 && b.shape.as_slice() == out_shape {
        if let Some(sb) = b.as_slice::<T>() {
            // SAFETY: as above.
            let x = unsafe { *a.ptr::<T>() };
            return build_vec(n, |out| {
                par_map(
                    out,
                    sb,
                    &always(
                        #[inline(always)]
                        |y| f(x, y),
                    ),
                )
            });
        }
    }
    let sa = broadcast_strides(&a.shape, &a.strides, out_shape);
    let sb = broadcast_strides(&b.shape, &b.strides, out_shape);
    let (shape, [sa, sb]) = coalesce(out_shape, [&sa, &sb]);
    let (ia, ib) = (*sa.last().unwrap_or(&1), *sb.last().unwrap_or(&1));
    let (pa, pb) = (SendPtr(a.ptr::<T>()), SendPtr(b.ptr::<T>()));
    if shape.len() == 2 && sa[0] == 1 && sb[0] == 1 {
        let (rows, cols) = (shape[0], shape[1]);
        return build_vec(n, |out| {
            tiled(out, rows, cols, |o: &mut [MaybeUninit<U>], c, r0| {
                let (pa, pb) = (pa, pb);
                let len = o.len();
                // SAFETY: rows `r0..r0 + len` of column `c` of each operand, unit stride.
                let (ra, rb) = unsafe {
                    (
                        std::slice::from_raw_parts(pa.0.add(c * ia + r0), len),
                        std::slice::from_raw_parts(pb.0.add(c * ib + r0), len),
                    )
                };
                zip_slice(o, ra, rb, &f);
            })
        });
    }
    build_vec(n, |out| {
        drive(
            out,
            &shape,
            &[sa.clone(), sb.clone()],
            |o: &mut [MaybeUninit<U>], [oa, ob]| {
                let (pa, pb) = (pa, pb);
                let len = o.len();
                // SAFETY (all arms): offsets and unit-stride runs derive from each
                // operand's own view.
                unsafe {
                    match (ia, ib) {
                        (1, 1) => {
                            let (ra, rb) = (
                                std::slice::from_raw_parts(pa.0.add(oa), len),
                                std::slice::from_raw_parts(pb.0.add(ob), len),
                            );
                            zip_slice(o, ra, rb, &f);
                        }
                        (1, 0) => {
                            let y = *pb.0.add(ob);
                            let row = std::slice::from_raw_parts(pa.0.add(oa), len);
                            map_slice(
                                o,
                                row,
                                &always(
                                    #[inline(always)]
                                    |x| f(x, y),
                                ),
                            );
                        }
                        (0, 1) => {
                            let x = *pa.0.add(oa);
                            let row = std::slice::from_raw_parts(pb.0.add(ob), len);
                            map_slice(
                                o,
                                row,
                                &always(
                                    #[inline(always)]
                                    |y| f(x, y),
                                ),
                            );
                        }
                        _ => {
                            // Gathered a block at a time, as in `unary`.
                            let mut ba = [MaybeUninit::<T>::uninit(); GATHER];
                            let mut bb = [MaybeUninit::<T>::uninit(); GATHER];
                            for (k, part) in o.chunks_mut(GATHER).enumerate() {
                                let (ka, kb) = (oa + k * GATHER * ia, ob + k * GATHER * ib);
                                for i in 0..part.len() {
                                    ba[i].write(*pa.0.add(ka + i * ia));
                                    bb[i].write(*pb.0.add(kb + i * ib));
                                }
                                let n = part.len();
                                let ra = std::slice::from_raw_parts(ba.as_ptr().cast::<T>(), n);
                                let rb = std::slice::from_raw_parts(bb.as_ptr().cast::<T>(), n);
                                zip_slice(part, ra, rb, &f);
                            }
                        }
                    }
                }
            },
        )
    })
}

/// `dst[i] = f(dst[i], src[i])` in place (`src` has `dst.len()` elements, or
/// one that is broadcast), split across the pool.
pub fn update<T: Element>(dst: &mut [T], src: &[T], f: impl Fn(T, T) -> T + Sync + Send) {
    let n = dst.len();
    let d = SendPtr(dst.as_mut_ptr());
    par_ranges(n, |lo, hi| {
        // SAFETY: the ranges are disjoint and inside `dst`.
        let part = unsafe { std::slice::from_raw_parts_mut(d.get().add(lo), hi - lo) };
        if src.len() == 1 {
            let y = src[0];
            for x in part.iter_mut() {
                *x = f(*x, y);
            }
        } else {
            super::vmath::update(part, &src[lo..hi], &f);
        }
    });
}

//! Elementwise maps over one or two strided (and broadcast) operands.
//!
//! A result takes the layout PyTorch's TensorIterator gives it
//! ([`result_order`]): operands that agree on a dense permuted layout (a
//! transpose) give their strides to the result and run as one flat pass over
//! memory; operands in different layouts run through cache-sized tiles.
//! [`permuted`] puts the operands in the result's order, so the kernels below
//! only ever fill a row-major buffer.
//!
//! Contiguous runs go through `map_slice`/`zip_slice`, which run
//! `kernels::vmath`'s loops compiled for AVX-512, AVX2 and the x86-64
//! baseline and chosen at run time, so one wheel runs on any x86-64 and
//! still uses the widest vectors the CPU has.

use std::mem::MaybeUninit;

use smallvec::SmallVec;

use super::{build_vec, coalesce, drive, par_ranges, SendPtr, GRAIN};
use crate::tensor::{broadcast_strides, contiguous_strides, Element, Shape, Strides, View};

/// The dimensions of `shape`, outermost first, in the order PyTorch's
/// TensorIterator lays a fresh result out over operands with `strides`
/// (already broadcast to `shape`): dimensions are sorted by the first
/// operand's strides, a later operand deciding only where the earlier ones
/// cannot (a broadcast, stride 0, or a dimension of one). Operands that all
/// agree give the result their own order; a tie keeps row-major order.
pub fn result_order(shape: &[usize], strides: &[&[usize]]) -> SmallVec<[usize; 6]> {
    let nd = shape.len();
    // Innermost first, as TensorIterator's insertion sort runs.
    let mut perm: SmallVec<[usize; 6]> = (0..nd).rev().collect();
    let cmp = |d0: usize, d1: usize| -> i32 {
        for st in strides {
            let (s0, s1) = (st[d0], st[d1]);
            if s0 == 0 || s1 == 0 || shape[d0] == 1 || shape[d1] == 1 {
                continue;
            }
            if s0 < s1 {
                return -1;
            }
            if s0 > s1 {
                return 1;
            }
            if shape[d0] > shape[d1] {
                return 1;
            }
        }
        0
    };
    for i in 1..nd {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match cmp(perm[d0], perm[d1]) {
                c if c > 0 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    perm.reverse();
    perm
}

/// The strides of a dense result over `shape` laid out in `order`
/// (outermost first).
pub fn strides_in_order(shape: &[usize], order: &[usize]) -> Strides {
    let mut out: Strides = SmallVec::from_elem(0, shape.len());
    let mut acc = 1usize;
    for &d in order.iter().rev() {
        out[d] = acc;
        acc = acc.saturating_mul(shape[d]);
    }
    out
}

/// `v` broadcast to `shape` with its dimensions taken in `order`.
fn reorder(v: &View, shape: &[usize], order: &[usize]) -> View {
    let st = broadcast_strides(&v.shape, &v.strides, shape);
    View {
        storage: v.storage.clone(),
        shape: order.iter().map(|&d| shape[d]).collect(),
        strides: order.iter().map(|&d| st[d]).collect(),
        offset: v.offset,
    }
}

/// The operands of an elementwise result over `shape` put in the result's
/// memory order ([`result_order`], over `decide`: indices of the operands
/// that choose it, in priority order), with the permuted shape and the
/// result's strides in `shape`'s own order. A row-major buffer filled over
/// the permuted views is the result's memory. `None` when the result is
/// row-major (or has fewer than two elements): the views serve as they are.
/// One-element operands are left as they are (the kernels broadcast them).
pub fn permuted<const N: usize>(
    views: [&View; N],
    shape: &[usize],
    decide: &[usize],
) -> Option<([View; N], Shape, Strides)> {
    if shape.iter().product::<usize>() < 2 {
        return None;
    }
    let bst: SmallVec<[Strides; 3]> = decide
        .iter()
        .map(|&i| broadcast_strides(&views[i].shape, &views[i].strides, shape))
        .collect();
    let refs: SmallVec<[&[usize]; 3]> = bst.iter().map(|s| &s[..]).collect();
    let order = result_order(shape, &refs);
    let mut big = order.iter().filter(|&&d| shape[d] > 1);
    let mut prev = big.next();
    let mut row_major = true;
    for d in big {
        row_major &= prev.is_none_or(|p| p < d);
        prev = Some(d);
    }
    if row_major {
        return None;
    }
    let pv = std::array::from_fn(|i| {
        if views[i].numel() == 1 {
            views[i].clone()
        } else {
            reorder(views[i], shape, &order)
        }
    });
    let pshape = order.iter().map(|&d| shape[d]).collect();
    Some((pv, pshape, strides_in_order(shape, &order)))
}

/// [`unary`] with the result in the layout PyTorch gives it (the input's,
/// for a dense permuted input): the values in memory order and the strides.
pub fn unary_kept<T: Element, U: Element>(
    x: &View,
    f: impl Fn(T) -> U + Sync,
) -> (Vec<U>, Strides) {
    match permuted([x], &x.shape, &[0]) {
        Some(([p], _, st)) => (unary(&p, f), st),
        None => (unary(x, f), contiguous_strides(&x.shape)),
    }
}

/// [`binary`] with the result in the layout PyTorch gives it (see
/// [`result_order`]): the values in memory order and the strides.
pub fn binary_kept<T: Element, U: Element>(
    a: &View,
    b: &View,
    out_shape: &[usize],
    f: impl Fn(T, T) -> U + Sync,
) -> (Vec<U>, Strides) {
    match permuted([a, b], out_shape, &[0, 1]) {
        Some(([pa, pb], pshape, st)) => (binary(&pa, &pb, &pshape, f), st),
        None => (binary(a, b, out_shape, f), contiguous_strides(out_shape)),
    }
}

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

/// Fills a row-major `rows x cols` output from two operands in different
/// layouts: `r` runs along the output's rows (unit stride along a row, `rs`
/// between rows), `c` down its columns (unit stride down a column, `cs`
/// between columns: a transpose). A tile of `c` is read a column at a time
/// into a buffer laid out as rows, and each of the tile's rows then goes
/// through the vectorised loop with the matching run of `r`.
#[allow(clippy::too_many_arguments)]
fn tiled_mixed<T: Element, U: Element>(
    out: &mut [MaybeUninit<U>],
    rows: usize,
    cols: usize,
    r: SendPtr<T>,
    rs: usize,
    c: SendPtr<T>,
    cs: usize,
    f: &(impl Fn(T, T) -> U + Sync),
) {
    let o = SendPtr(out.as_mut_ptr());
    let band = |b: usize| {
        let (o, r, c) = (o, r, c);
        let (r0, r1) = (b * TILE, ((b + 1) * TILE).min(rows));
        let h = r1 - r0;
        let mut tile = [MaybeUninit::<T>::uninit(); TILE * TILE];
        for c0 in (0..cols).step_by(TILE) {
            let w = TILE.min(cols - c0);
            for j in 0..w {
                // SAFETY: rows `r0..r1` of column `c0 + j` of `c`, unit stride.
                let col = unsafe { std::slice::from_raw_parts(c.0.add((c0 + j) * cs + r0), h) };
                for (i, &x) in col.iter().enumerate() {
                    tile[i * TILE + j].write(x);
                }
            }
            for i in 0..h {
                // SAFETY: bands are disjoint rows of `out`; the run of `r` is
                // inside its view; the tile's row `i` has `w` slots written.
                unsafe {
                    let dst = std::slice::from_raw_parts_mut(o.0.add((r0 + i) * cols + c0), w);
                    let ra = std::slice::from_raw_parts(r.0.add((r0 + i) * rs + c0), w);
                    let rb = std::slice::from_raw_parts(tile.as_ptr().add(i * TILE).cast::<T>(), w);
                    zip_slice(dst, ra, rb, f);
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
    if shape.len() == 2 && n >= 2 * TILE * TILE {
        let (rows, cols) = (shape[0], shape[1]);
        if ia == 1 && sb[0] == 1 && ib > 1 {
            return build_vec(n, |out| {
                tiled_mixed(out, rows, cols, pa, sa[0], pb, ib, &f);
            });
        }
        if ib == 1 && sa[0] == 1 && ia > 1 {
            return build_vec(n, |out| {
                tiled_mixed(
                    out,
                    rows,
                    cols,
                    pb,
                    sb[0],
                    pa,
                    ia,
                    &always(
                        #[inline(always)]
                        |y, x| f(x, y),
                    ),
                );
            });
        }
    }
    if ia <= 1 && ib <= 1 && n > 0 {
        // SAFETY: every element of each broadcast view lies within its span
        // from the view's first element.
        let (ra, rb) = unsafe {
            (
                std::slice::from_raw_parts(pa.0.cast_const(), span(&shape, &sa)),
                std::slice::from_raw_parts(pb.0.cast_const(), span(&shape, &sb)),
            )
        };
        return build_vec(n, |out| {
            super::drive_runs(out, &shape, &[sa.clone(), sb.clone()], |o, runs| {
                super::vmath::zip_runs(o, runs, ra, rb, (ia, ib), &f)
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

/// The elements from a view's first one to its last, inclusive: `1 +
/// sum (shape[d] - 1) * strides[d]` (strides are never negative).
fn span(shape: &[usize], strides: &[usize]) -> usize {
    shape
        .iter()
        .zip(strides)
        .map(|(&d, &s)| d.saturating_sub(1) * s)
        .sum::<usize>()
        + 1
}

/// [`ternary`] with the result in the layout PyTorch gives it (see
/// [`result_order`], the operands deciding in order): the values in memory
/// order and the strides.
pub fn ternary_kept<T: Element, U: Element>(
    a: &View,
    b: &View,
    c: &View,
    out_shape: &[usize],
    f: impl Fn(T, T, T) -> U + Sync,
) -> (Vec<U>, Strides) {
    match permuted([a, b, c], out_shape, &[0, 1, 2]) {
        Some(([pa, pb, pc], pshape, st)) => (ternary(&pa, &pb, &pc, &pshape, f), st),
        None => (
            ternary(a, b, c, out_shape, f),
            contiguous_strides(out_shape),
        ),
    }
}

/// `dst[i] = f(a[i], b[i], c[i])`, compiled for AVX-512 and AVX2 too.
#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn zip3_slice<T: Copy, U: Copy, F: Fn(T, T, T) -> U>(
    dst: &mut [MaybeUninit<U>],
    a: &[T],
    b: &[T],
    c: &[T],
    f: &F,
) {
    for (((d, &x), &y), &z) in dst.iter_mut().zip(a).zip(b).zip(c) {
        d.write(f(x, y, z));
    }
}

/// `f(a, b, c)` over the broadcast of three operands to `out_shape`, one
/// pass: operands that are contiguous along the (coalesced) rows are read in
/// place, a broadcast or strided one is gathered a block at a time, so the
/// function always runs in the vectorised loop.
pub fn ternary<T: Element, U: Element>(
    a: &View,
    b: &View,
    c: &View,
    out_shape: &[usize],
    f: impl Fn(T, T, T) -> U + Sync,
) -> Vec<U> {
    let n: usize = out_shape.iter().product();
    let sa = broadcast_strides(&a.shape, &a.strides, out_shape);
    let sb = broadcast_strides(&b.shape, &b.strides, out_shape);
    let sc = broadcast_strides(&c.shape, &c.strides, out_shape);
    let (shape, st) = coalesce(out_shape, [&sa, &sb, &sc]);
    let inner: [usize; 3] = std::array::from_fn(|k| *st[k].last().unwrap_or(&1));
    let ptrs = [
        SendPtr(a.ptr::<T>()),
        SendPtr(b.ptr::<T>()),
        SendPtr(c.ptr::<T>()),
    ];
    let f = &f;
    build_vec(n, |out| {
        // `move`: the pointers are copied in whole (a closure would borrow the
        // array, and a shared borrow of raw pointers cannot cross threads);
        // the function is taken by reference.
        drive(out, &shape, &st, move |o: &mut [MaybeUninit<U>], offs| {
            let mut bufs = [[MaybeUninit::<T>::uninit(); GATHER]; 3];
            let [ba, bb, bc] = &mut bufs;
            if inner == [1, 1, 1] {
                // SAFETY: unit-stride runs of `o.len()` elements inside each view.
                let (ra, rb, rc) = unsafe {
                    (
                        std::slice::from_raw_parts(ptrs[0].0.add(offs[0]), o.len()),
                        std::slice::from_raw_parts(ptrs[1].0.add(offs[1]), o.len()),
                        std::slice::from_raw_parts(ptrs[2].0.add(offs[2]), o.len()),
                    )
                };
                zip3_slice(o, ra, rb, rc, f);
                return;
            }
            for (k, part) in o.chunks_mut(GATHER).enumerate() {
                let len = part.len();
                let run = |j: usize, buf: &mut [MaybeUninit<T>; GATHER]| -> *const T {
                    let base = offs[j] + k * GATHER * inner[j];
                    // SAFETY (both arms): offsets stay inside operand `j`'s view.
                    unsafe {
                        if inner[j] == 1 {
                            return ptrs[j].0.add(base);
                        }
                        for (i, slot) in buf[..len].iter_mut().enumerate() {
                            slot.write(*ptrs[j].0.add(base + i * inner[j]));
                        }
                    }
                    buf.as_ptr().cast::<T>()
                };
                let (pa, pb, pc) = (run(0, ba), run(1, bb), run(2, bc));
                // SAFETY: each pointer is a run of `len` elements: in place or
                // the first `len` slots of a buffer just written.
                let (ra, rb, rc) = unsafe {
                    (
                        std::slice::from_raw_parts(pa, len),
                        std::slice::from_raw_parts(pb, len),
                        std::slice::from_raw_parts(pc, len),
                    )
                };
                zip3_slice(part, ra, rb, rc, f);
            }
        })
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

/// `dst[i] = f(dst[i])`, split across the pool: an in-place elementwise op
/// with nothing to record (`x.relu_()`) maps the memory it overwrites, with
/// no result buffer to fault in and copy back.
pub fn map_in_place<T: Element>(dst: &mut [T], f: impl Fn(T) -> T + Sync) {
    let d = SendPtr(dst.as_mut_ptr());
    par_ranges(dst.len(), |lo, hi| {
        // SAFETY: the ranges are disjoint and inside `dst`.
        let part = unsafe { std::slice::from_raw_parts_mut(d.get().add(lo), hi - lo) };
        // Each block is copied out (it stays in L1) and mapped back by the
        // out-of-place loop itself: a loop updating its own slice compiled
        // to scalar calls for some functions (`atan` 40x slower).
        let mut buf = [MaybeUninit::<T>::uninit(); GATHER];
        for block in part.chunks_mut(GATHER) {
            let n = block.len();
            for (slot, &x) in buf.iter_mut().zip(block.iter()) {
                slot.write(x);
            }
            // SAFETY: the first `n` slots were just written; `block` holds
            // `n` initialised elements, seen as slots to overwrite.
            let (src, out) = unsafe {
                (
                    std::slice::from_raw_parts(buf.as_ptr().cast::<T>(), n),
                    std::slice::from_raw_parts_mut(block.as_mut_ptr().cast::<MaybeUninit<T>>(), n),
                )
            };
            map_slice(out, src, &f);
        }
    });
}

/// `dst = kernel(dst)` for a kernel over slices (`kernel(out, src)`), in
/// place, a block at a time through a buffer, split across the pool.
pub fn slices_in_place(dst: &mut [f32], kernel: fn(&mut [f32], &[f32])) {
    let d = SendPtr(dst.as_mut_ptr());
    par_ranges(dst.len(), |lo, hi| {
        // SAFETY: the ranges are disjoint and inside `dst`.
        let part = unsafe { std::slice::from_raw_parts_mut(d.get().add(lo), hi - lo) };
        let mut buf = [0f32; GATHER];
        for block in part.chunks_mut(GATHER) {
            let n = block.len();
            buf[..n].copy_from_slice(block);
            kernel(block, &buf[..n]);
        }
    });
}

/// `dst[i] = f(dst[i], a[i], b[i])` over operands of one length, split
/// across the pool: a three-operand in-place op (`x.addcmul_(y, z)`).
pub fn update2<T: Element>(dst: &mut [T], a: &[T], b: &[T], f: impl Fn(T, T, T) -> T + Sync) {
    let d = SendPtr(dst.as_mut_ptr());
    par_ranges(dst.len().min(a.len()).min(b.len()), |lo, hi| {
        // SAFETY: the ranges are disjoint and inside `dst`.
        let part = unsafe { std::slice::from_raw_parts_mut(d.get().add(lo), hi - lo) };
        super::vmath::update2(part, &a[lo..hi], &b[lo..hi], &f);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Storage;

    fn matrix(rows: usize, cols: usize, seed: f32) -> Vec<f32> {
        (0..rows * cols)
            .map(|i| (i as f32 * 0.37 + seed).sin())
            .collect()
    }

    /// A `rows x cols` view over `data`, row-major or (when `t`) read
    /// through a transpose of a `cols x rows` row-major buffer.
    fn view(data: &[f32], rows: usize, cols: usize, t: bool) -> View {
        let shape: Shape = if t {
            SmallVec::from_slice(&[cols, rows])
        } else {
            SmallVec::from_slice(&[rows, cols])
        };
        let v = View::contiguous(Storage::from_vec(data.to_vec()), shape);
        if !t {
            return v;
        }
        View {
            shape: SmallVec::from_slice(&[rows, cols]),
            strides: SmallVec::from_slice(&[1, rows]),
            ..v
        }
    }

    fn at(v: &View, r: usize, c: usize) -> f32 {
        // SAFETY: in-bounds indices of a view the test built.
        unsafe { *v.ptr::<f32>().add(r * v.strides[0] + c * v.strides[1]) }
    }

    #[test]
    fn mixed_layouts_go_through_tiles_and_match_the_element_loop() {
        // Sizes off the tile so partial tiles run too; both argument orders.
        let (rows, cols) = (131, 197);
        let (da, db) = (matrix(rows, cols, 0.1), matrix(rows, cols, 0.7));
        for (ta, tb) in [(false, true), (true, false), (true, true), (false, false)] {
            let (a, b) = (view(&da, rows, cols, ta), view(&db, rows, cols, tb));
            let got: Vec<f32> = binary(&a, &b, &[rows, cols], |x: f32, y: f32| x * 3.0 - y);
            for r in 0..rows {
                for c in 0..cols {
                    let want = at(&a, r, c) * 3.0 - at(&b, r, c);
                    assert_eq!(
                        got[r * cols + c].to_bits(),
                        want.to_bits(),
                        "{ta} {tb} {r} {c}"
                    );
                }
            }
        }
    }

    #[test]
    fn results_follow_the_first_decided_layout() {
        let (rows, cols) = (5, 7);
        let (da, db) = (matrix(rows, cols, 0.1), matrix(rows, cols, 0.7));
        let (t, c) = (view(&da, rows, cols, true), view(&db, rows, cols, false));
        // PyTorch: a.t() + b has a.t()'s strides, b + a.t() is row-major.
        let (vals, st) = binary_kept(&t, &c, &[rows, cols], |x: f32, y: f32| x - y);
        assert_eq!(&st[..], &[1, rows]);
        for r in 0..rows {
            for k in 0..cols {
                assert_eq!(vals[k * rows + r], at(&t, r, k) - at(&c, r, k));
            }
        }
        let (_, st) = binary_kept(&c, &t, &[rows, cols], |x: f32, y: f32| x - y);
        assert_eq!(&st[..], &[cols, 1]);
        // Both transposed: one flat pass, the values in the inputs' memory order.
        let t2 = view(&db, rows, cols, true);
        let (vals, st) = binary_kept(&t, &t2, &[rows, cols], |x: f32, y: f32| x + y);
        assert_eq!(&st[..], &[1, rows]);
        let want: Vec<f32> = da.iter().zip(&db).map(|(x, y)| x + y).collect();
        assert_eq!(vals, want);
        // A broadcast operand decides nothing: the other's layout wins.
        assert_eq!(
            &result_order(&[rows, cols], &[&[0, 1], &[1, rows]])[..],
            &[1, 0]
        );
        // Dimensions of one are ignored.
        let col = View {
            shape: SmallVec::from_slice(&[rows, 1]),
            strides: SmallVec::from_slice(&[1, rows]),
            ..t.clone()
        };
        assert!(permuted([&col], &[rows, 1], &[0]).is_none());
    }
}

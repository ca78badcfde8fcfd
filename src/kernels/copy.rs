//! Strided reads and writes: materialising a view, copying into a view.

use smallvec::SmallVec;

use super::{build_vec, coalesce, par_ranges, SendPtr};
use crate::tensor::{Element, View};

/// The elements of `v` in row-major order.
pub fn gather<T: Element>(v: &View) -> Vec<T> {
    let n = v.numel();
    if let Some(s) = v.as_slice::<T>() {
        // One thread's memcpy does not saturate the memory bus: large copies
        // go in parallel blocks (a 16 MB clone took twice PyTorch's time).
        return build_vec(n, |out| {
            let o = SendPtr(out.as_mut_ptr());
            par_ranges(n, |lo, hi| {
                // SAFETY: `MaybeUninit<T>` has `T`'s layout; the ranges are
                // disjoint and inside both buffers.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        s.as_ptr().add(lo),
                        o.get().add(lo).cast::<T>(),
                        hi - lo,
                    )
                };
            });
        });
    }
    let sst: SignedStrides = v.strides.iter().map(|&s| s as isize).collect();
    // SAFETY: the view's own strides from its own offset.
    unsafe { gather_signed(v, v.offset, &sst) }
}

/// Writes `src` (row-major, `dst.numel()` elements, or one element to broadcast)
/// into the possibly strided view `dst`.
pub fn scatter<T: Element>(dst: &View, src: &[T]) {
    let n = dst.numel();
    debug_assert!(src.len() == n || src.len() == 1);
    if n > 1 && src.len() == n && overlaps(dst, src) {
        // A source that is part of the destination's memory (`x[1:] = x[:-1]`)
        // is read from a snapshot, as if the whole value were taken first.
        let snapshot = crate::error::copied_vec(src);
        return scatter(dst, &snapshot);
    }
    let base = SendPtr(dst.ptr::<T>());
    let srcp = SendPtr(src.as_ptr() as *mut T);
    if src.len() == n && dst.is_contiguous() {
        // Every in-place op that computes out of place ends here: one block
        // copy per task instead of an element loop on one thread (a 1.5 MB
        // bias add took ten times its out-of-place form).
        par_ranges(n, |lo, hi| {
            let (b, s) = (base, srcp);
            // SAFETY: the ranges are disjoint and inside both buffers, which
            // do not overlap (the caller skips a result that aliases `dst`).
            unsafe { std::ptr::copy_nonoverlapping(s.get().add(lo), b.get().add(lo), hi - lo) };
        });
        return;
    }
    if n == 0 {
        return;
    }
    if src.len() == 1 {
        return fill(dst, src[0]);
    }
    if dst
        .shape
        .iter()
        .zip(&dst.strides)
        .all(|(&d, &s)| d == 1 || s != 0)
    {
        // A tiled copy: a transposed destination is written in square tiles
        // (a 1024 x 1024 `uniform_` of a transposed view took 80 ms written
        // one element per cache line).
        let nd = dst.shape.len();
        let mut sst: SmallVec<[isize; 6]> = SmallVec::from_elem(1, nd);
        for k in (0..nd.saturating_sub(1)).rev() {
            sst[k] = sst[k + 1] * dst.shape[k + 1] as isize;
        }
        // Walked in the destination's memory order, so its unit stride is
        // the last dimension, which the tiles need.
        let mut dims: SmallVec<[usize; 6]> = (0..nd).collect();
        dims.sort_by_key(|&d| std::cmp::Reverse(dst.strides[d]));
        let shape: SmallVec<[usize; 6]> = dims.iter().map(|&d| dst.shape[d]).collect();
        let dst_st: SmallVec<[usize; 6]> = dims.iter().map(|&d| dst.strides[d]).collect();
        let sst: SmallVec<[isize; 6]> = dims.iter().map(|&d| sst[d]).collect();
        // SAFETY: `dst` is a view inside its storage, `src` holds its `n`
        // elements row-major, and the two do not overlap (checked above).
        unsafe { copy_box(dst.ptr::<T>(), &dst_st, src.as_ptr(), &sst, &shape) };
        return;
    }
    let (shape, [st]) = coalesce(&dst.shape, [&dst.strides]);
    let inner = *st.last().unwrap_or(&1);
    super::for_each_row(
        &shape,
        std::array::from_ref(&st),
        0,
        n,
        |pos, len, [off]| {
            let (b, s) = (base, srcp);
            if inner == 1 {
                // SAFETY: a unit-stride run of `len` elements inside the view,
                // and `len` source elements from `pos`.
                unsafe { std::ptr::copy_nonoverlapping(s.0.add(pos), b.0.add(off), len) };
                return;
            }
            for i in 0..len {
                // SAFETY: in bounds by the view's construction; `src` has `n` elements.
                unsafe { *b.0.add(off + i * inner) = *s.0.add(pos + i) };
            }
        },
    );
}

/// Writes `v` to every element of `dst`, in address order (dimensions by
/// decreasing stride, so a transposed view is the contiguous block it is),
/// each run a vectorised fill: `zero_` of a 4 MB tensor went from 500 us
/// (an element loop) to a memset's time, of its transpose from 7.6 ms.
fn fill<T: Element>(dst: &View, v: T) {
    // A broadcast (stride 0) dimension writes the same elements again: once is enough.
    let mut dims: SmallVec<[(usize, usize); 6]> = dst
        .shape
        .iter()
        .zip(&dst.strides)
        .filter(|&(&d, &s)| d != 1 && s != 0)
        .map(|(&d, &s)| (d, s))
        .collect();
    dims.sort_by_key(|d| std::cmp::Reverse(d.1));
    let shape: SmallVec<[usize; 6]> = dims.iter().map(|d| d.0).collect();
    let strides: SmallVec<[usize; 6]> = dims.iter().map(|d| d.1).collect();
    let (shape, [st]) = coalesce(&shape, [&strides]);
    let n: usize = shape.iter().product();
    let inner = *st.last().unwrap_or(&1);
    let base = SendPtr(dst.ptr::<T>());
    if shape.len() <= 1 && inner == 1 {
        par_ranges(n, |lo, hi| {
            let b = base;
            // SAFETY: one run of `n` elements inside the view; ranges are disjoint.
            unsafe { fill_run(b.get().add(lo), hi - lo, v) };
        });
        return;
    }
    super::for_each_row(&shape, std::array::from_ref(&st), 0, n, |_, len, [off]| {
        let b = base;
        if inner == 1 {
            // SAFETY: a unit-stride run of `len` elements inside the view.
            unsafe { fill_run(b.0.add(off), len, v) };
            return;
        }
        for i in 0..len {
            // SAFETY: in bounds by the view's construction.
            unsafe { *b.0.add(off + i * inner) = v };
        }
    });
}

/// `len` copies of `v` from `p`: a zero pattern through libc's `memset`
/// (wide stores tuned per CPU: 4 MB in 43 us against 72 us for the loop).
///
/// # Safety
/// `p..p + len` must be writable memory of `T`s.
unsafe fn fill_run<T: Element>(p: *mut T, len: usize, v: T) {
    let size = std::mem::size_of::<T>();
    // SAFETY: `v` is a plain value of `size` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(&v as *const T as *const u8, size) };
    if bytes.iter().all(|&b| b == 0) {
        // SAFETY: forwarded from the caller.
        unsafe { std::ptr::write_bytes(p, 0, len) };
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { std::slice::from_raw_parts_mut(p, len).fill(v) };
    }
}

/// Whether `src`'s elements lie within the span of memory `dst` can touch.
fn overlaps<T: Element>(dst: &View, src: &[T]) -> bool {
    let size = std::mem::size_of::<T>();
    let start = dst.ptr::<T>() as usize;
    let reach: usize = dst
        .shape
        .iter()
        .zip(&dst.strides)
        .map(|(&d, &st)| d.saturating_sub(1) * st)
        .sum();
    let end = start + (reach + 1) * size;
    let (s0, s1) = (
        src.as_ptr() as usize,
        src.as_ptr() as usize + std::mem::size_of_val(src),
    );
    s0 < end && start < s1
}

// ----- strided box copies ----------------------------------------------------------

/// Element strides that may be negative (a flipped dimension walks backwards)
/// or zero (a broadcast one).
pub type SignedStrides = SmallVec<[isize; 6]>;

/// Runs `f(lo, hi)` over `0..units` split into contiguous ranges, in parallel
/// when `units * per_unit` elements reach the grain: each range holds at least
/// a grain's worth of elements, and there are about four ranges per thread.
pub fn par_units(units: usize, per_unit: usize, f: impl Fn(usize, usize) + Sync + Send) {
    // No call at all for no units: a body may set up per-range scratch sized
    // by a dimension that is huge beside the zero one.
    if units == 0 {
        return;
    }
    super::parallel::run(units.saturating_mul(per_unit.max(1)), |threads| {
        if threads == 1 || units < 2 {
            f(0, units);
            return;
        }
        let min_units = super::GRAIN.div_ceil(per_unit.max(1)).max(1);
        let chunk = units.div_ceil(threads * 4).max(min_units);
        super::parallel::tasks(units.div_ceil(chunk), |c| {
            f(c * chunk, ((c + 1) * chunk).min(units))
        });
    })
}

/// Drops size-1 dimensions and merges neighbours that both operands walk
/// as one (the source's strides may be negative or zero).
fn coalesce_box(
    shape: &[usize],
    dst: &[usize],
    src: &[isize],
) -> (SmallVec<[usize; 6]>, SmallVec<[usize; 6]>, SignedStrides) {
    let mut s: SmallVec<[usize; 6]> = SmallVec::new();
    let mut d: SmallVec<[usize; 6]> = SmallVec::new();
    let mut r: SignedStrides = SmallVec::new();
    for k in 0..shape.len() {
        if shape[k] == 1 {
            continue;
        }
        if let (Some(&pd), Some(&ps)) = (d.last(), r.last()) {
            if pd == dst[k] * shape[k] && ps == src[k] * shape[k] as isize {
                let l = s.len() - 1;
                s[l] *= shape[k];
                d[l] = dst[k];
                r[l] = src[k];
                continue;
            }
        }
        s.push(shape[k]);
        d.push(dst[k]);
        r.push(src[k]);
    }
    (s, d, r)
}

/// Calls `row(dst_off, src_off)` for outer rows `lo..hi` of the row-major
/// index space `shape` (the dimensions outside the copied run or tile).
fn for_rows(
    shape: &[usize],
    dst: &[usize],
    src: &[isize],
    lo: usize,
    hi: usize,
    mut row: impl FnMut(usize, isize),
) {
    let nd = shape.len();
    if lo >= hi {
        return;
    }
    let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, nd);
    let mut rem = lo;
    for k in (0..nd).rev() {
        idx[k] = rem % shape[k];
        rem /= shape[k];
    }
    let mut doff: usize = (0..nd).map(|k| idx[k] * dst[k]).sum();
    let mut soff: isize = (0..nd).map(|k| idx[k] as isize * src[k]).sum();
    for _ in lo..hi {
        row(doff, soff);
        let mut k = nd;
        while k > 0 {
            k -= 1;
            idx[k] += 1;
            doff += dst[k];
            soff += src[k];
            if idx[k] < shape[k] {
                break;
            }
            doff -= dst[k] * shape[k];
            soff -= src[k] * shape[k] as isize;
            idx[k] = 0;
        }
    }
}

/// Side of the square tiles a strided transpose copies through: 32 x 32
/// elements of both operands stay in L1.
const TILE: usize = 32;

/// Copies the box `shape` from `src` (strides `sst`, any sign) to `dst`
/// (strides `dst_st`), in parallel above the grain: a `memcpy` per run when
/// both walk forward, a reversed or repeated run for flipped or broadcast
/// sources, and square tiles when the source's unit stride is on another
/// dimension than the destination's (a transpose), so neither side misses
/// cache on every element.
///
/// # Safety
/// Every offset the box reaches must lie inside its buffer, and the two
/// regions must not overlap.
pub unsafe fn copy_box<T: Element>(
    dst: *mut T,
    dst_st: &[usize],
    src: *const T,
    sst: &[isize],
    shape: &[usize],
) {
    if shape.contains(&0) {
        return;
    }
    let (shape, dst_st, sst) = coalesce_box(shape, dst_st, sst);
    let nd = shape.len();
    let (d, s) = (SendPtr(dst), SendPtr(src as *mut T));
    if nd == 0 {
        *dst = *src;
        return;
    }
    let last = nd - 1;
    let (n, dl, sl) = (shape[last], dst_st[last], sst[last]);
    // The transposed case: the destination runs along `last`, the source
    // along some other dimension `p`.
    let p = (0..last).rev().find(|&k| sst[k].unsigned_abs() == 1);
    if let (1, Some(p)) = (dl, p) {
        if !matches!(sl, -1..=1) && shape[p] >= 4 {
            return transpose_tiles(d, &dst_st, s, &sst, &shape, p);
        }
    }
    let outer = &shape[..last];
    // Elements `k0..k1` of the run at `doff` / `soff`.
    let run = |doff: usize, soff: isize, k0: usize, k1: usize| {
        let o = d.get().add(doff + k0 * dl);
        let i = s.get().offset(soff + k0 as isize * sl);
        let n = k1 - k0;
        match (dl, sl) {
            (1, 1) => std::ptr::copy_nonoverlapping(i, o, n),
            (1, -1) => {
                let out = std::slice::from_raw_parts_mut(o, n);
                for (k, slot) in out.iter_mut().enumerate() {
                    *slot = *i.offset(-(k as isize));
                }
            }
            (1, 0) => std::slice::from_raw_parts_mut(o, n).fill(*i),
            _ => {
                for k in 0..n {
                    *o.add(k * dl) = *i.offset(k as isize * sl);
                }
            }
        }
    };
    let rows = numel_of(outer);
    // A few long runs (a whole matrix flipped or copied coalesces into one)
    // are cut into pieces, so that every thread takes part.
    let pieces = if rows < 8 { n.div_ceil(PIECE) } else { 1 };
    if pieces > 1 {
        let plen = n.div_ceil(pieces);
        par_units(rows * pieces, plen, |lo, hi| {
            for u in lo..hi {
                let (r, k0) = (u / pieces, u % pieces * plen);
                for_rows(
                    outer,
                    &dst_st[..last],
                    &sst[..last],
                    r,
                    r + 1,
                    |doff, soff| run(doff, soff, k0, (k0 + plen).min(n)),
                );
            }
        });
        return;
    }
    par_units(rows, n, |lo, hi| {
        for_rows(
            outer,
            &dst_st[..last],
            &sst[..last],
            lo,
            hi,
            |doff, soff| run(doff, soff, 0, n),
        );
    });
}

/// Elements per piece of a long run that [`copy_box`] splits.
const PIECE: usize = 1 << 15;

fn numel_of(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// [`copy_box`]'s tiled path: the destination is contiguous along the last
/// dimension, the source along dimension `p`.
unsafe fn transpose_tiles<T: Element>(
    d: SendPtr<T>,
    dst_st: &[usize],
    s: SendPtr<T>,
    sst: &[isize],
    shape: &[usize],
    p: usize,
) {
    let last = shape.len() - 1;
    let (np, nl) = (shape[p], shape[last]);
    let (dp, sp, sl) = (dst_st[p], sst[p], sst[last]);
    // Outer dimensions: all but `p` and `last`.
    let oshape: SmallVec<[usize; 6]> = (0..last).filter(|&k| k != p).map(|k| shape[k]).collect();
    let odst: SmallVec<[usize; 6]> = (0..last).filter(|&k| k != p).map(|k| dst_st[k]).collect();
    let osrc: SignedStrides = (0..last).filter(|&k| k != p).map(|k| sst[k]).collect();
    let strips = np.div_ceil(TILE);
    let units = numel_of(&oshape) * strips;
    // Whole blocks go through an in-register transpose when the source runs forward.
    let side = if sp == 1 {
        super::transpose::block_side(std::mem::size_of::<T>())
    } else {
        None
    };
    par_units(units, TILE * nl, |lo, hi| {
        let (d, s) = (d, s);
        let rect =
            |doff: usize, soff: isize, (ia, ib): (usize, usize), (ja, jb): (usize, usize)| {
                for i in ia..ib {
                    let out = d.get().add(doff + i * dp);
                    let inp = s.get().offset(soff + i as isize * sp);
                    for j in ja..jb {
                        *out.add(j) = *inp.offset(j as isize * sl);
                    }
                }
            };
        // Each unit is one strip of TILE rows along `p` of one outer position.
        let (o_lo, o_hi) = (lo / strips, (hi - 1) / strips + 1);
        let mut o = o_lo;
        for_rows(&oshape, &odst, &osrc, o_lo, o_hi, |doff, soff| {
            let first = if o == o_lo { lo % strips } else { 0 };
            let end = if o == o_hi - 1 {
                (hi - 1) % strips + 1
            } else {
                strips
            };
            for strip in first..end {
                let i0 = strip * TILE;
                let i1 = (i0 + TILE).min(np);
                let mut j0 = 0;
                while j0 < nl {
                    let j1 = (j0 + TILE).min(nl);
                    match side {
                        Some(b) => {
                            let iv = i0 + (i1 - i0) / b * b;
                            let jv = j0 + (j1 - j0) / b * b;
                            for i in (i0..iv).step_by(b) {
                                for j in (j0..jv).step_by(b) {
                                    super::transpose::block(
                                        s.get().offset(soff + i as isize + j as isize * sl),
                                        sl,
                                        d.get().add(doff + i * dp + j),
                                        dp,
                                    );
                                }
                            }
                            rect(doff, soff, (i0, iv), (jv, j1));
                            rect(doff, soff, (iv, i1), (j0, j1));
                        }
                        None => rect(doff, soff, (i0, i1), (j0, j1)),
                    }
                    j0 = j1;
                }
            }
            o += 1;
        });
    });
}

/// The elements of `v` read through signed strides from `v`'s offset (a
/// dimension with a negative stride starts at its far end), row-major.
///
/// # Safety
/// The strides must keep every read inside `v`'s storage.
pub unsafe fn gather_signed<T: Element>(v: &View, start: usize, sst: &[isize]) -> Vec<T> {
    let n = v.numel();
    let shape = v.shape.clone();
    let dst = crate::tensor::contiguous_strides(&shape);
    let base = v.storage.typed_ptr::<T>().wrapping_add(start) as *const T;
    build_vec(n, |out| {
        copy_box(out.as_mut_ptr().cast::<T>(), &dst, base, sst, &shape)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Tensor;

    /// A direct element-by-element reference for [`copy_box`].
    fn reference(src: &[f32], start: isize, sst: &[isize], shape: &[usize]) -> Vec<f32> {
        let mut out = Vec::new();
        crate::kernels::index::for_each_index(shape, |_, idx| {
            let off: isize = idx.iter().zip(sst).map(|(&i, &s)| i as isize * s).sum();
            out.push(src[(start + off) as usize]);
        });
        out
    }

    fn check(src: &[f32], start: isize, sst: &[isize], shape: &[usize]) {
        let n: usize = shape.iter().product();
        let dst_st = crate::tensor::contiguous_strides(shape);
        let mut out = vec![f32::NAN; n];
        unsafe {
            copy_box(
                out.as_mut_ptr(),
                &dst_st,
                src.as_ptr().offset(start),
                sst,
                shape,
            )
        };
        let want = reference(src, start, sst, shape);
        assert_eq!(out.len(), want.len());
        for (a, b) in out.iter().zip(&want) {
            assert_eq!(a.to_bits(), b.to_bits(), "shape {shape:?} strides {sst:?}");
        }
    }

    /// Transposes, flips, broadcasts and plain runs, on shapes small and
    /// large enough to go parallel and to leave partial tiles.
    #[test]
    fn box_copies_match_an_element_loop() {
        let src: Vec<f32> = (0..600_000).map(|i| i as f32).collect();
        for t in [1, 2] {
            crate::kernels::parallel::set_num_threads(t).unwrap();
            // Transposed 2-D: [c, r] read from an [r, c] matrix.
            for &(r, c) in &[(3, 5), (33, 70), (513, 700), (1, 9), (40, 1)] {
                check(&src, 0, &[1, c as isize], &[c, r]);
            }
            // permute(2, 0, 1) of [a, b, c].
            let (a, b, c) = (7, 40, 65);
            check(&src, 0, &[1, (b * c) as isize, c as isize], &[c, a, b]);
            // Flipped rows, flipped columns, both.
            let (r, c) = (300, 1000);
            let last = (r * c - 1) as isize;
            check(&src, (c - 1) as isize, &[c as isize, -1], &[r, c]);
            check(&src, ((r - 1) * c) as isize, &[-(c as isize), 1], &[r, c]);
            check(&src, last, &[-(c as isize), -1], &[r, c]);
            // Broadcast (stride 0) rows and columns, and a strided inner run.
            check(&src, 0, &[0, 1], &[50, 1000]);
            check(&src, 0, &[1, 0], &[1000, 50]);
            check(&src, 1, &[2000, 2], &[200, 999]);
            // Size-0 and size-1 dimensions.
            check(&src, 0, &[5, 1], &[0, 5]);
            check(&src, 3, &[1, 1, 1], &[1, 1, 1]);
        }
    }

    /// The transposed path for every element size (8 and 4 bytes have an
    /// in-register kernel, 2 and 1 do not), on sizes that leave partial blocks
    /// and partial tiles, through a row-strided source.
    #[test]
    fn transposes_of_every_element_size_match_an_element_loop() {
        fn run<T: Element + PartialEq + std::fmt::Debug>(make: impl Fn(usize) -> T) {
            for &(r, c) in &[(8, 8), (9, 17), (37, 70), (300, 257), (4, 1000)] {
                let pitch = c + 3;
                let src: Vec<T> = (0..r * pitch).map(&make).collect();
                let shape = [c, r];
                let mut out = vec![make(usize::MAX); r * c];
                unsafe {
                    copy_box(
                        out.as_mut_ptr(),
                        &[r, 1],
                        src.as_ptr(),
                        &[1, pitch as isize],
                        &shape,
                    )
                };
                for i in 0..c {
                    for j in 0..r {
                        assert_eq!(out[i * r + j], src[j * pitch + i], "{r}x{c} at {i},{j}");
                    }
                }
            }
        }
        run(|k| k as f64);
        run(|k| k as i64);
        run(|k| k as f32);
        run(|k| k as i32);
        run(|k| k as i16);
        run(|k| k as u8);
    }

    #[test]
    fn gather_of_a_transposed_view_is_its_transpose() {
        let t = Tensor::from_vec(
            (0..200 * 300).map(|i| i as f64).collect(),
            smallvec::smallvec![200, 300],
        );
        let tv = t.view();
        let v = View {
            storage: tv.storage.clone(),
            shape: smallvec::smallvec![300, 200],
            strides: smallvec::smallvec![1, 300],
            offset: 0,
        };
        let g = gather::<f64>(&v);
        for i in 0..300 {
            for j in 0..200 {
                assert_eq!(g[i * 200 + j], (j * 300 + i) as f64);
            }
        }
    }
}

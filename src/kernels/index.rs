//! Index-driven loops: gather/scatter along one dimension, flips, and
//! row-wise reductions over a contiguous `[rows, cols]` layout.
//!
//! Callers validate indices first (so these loops can trust them) and hand
//! in contiguous index buffers; data operands may be strided views.

use smallvec::SmallVec;

use super::{build_vec, par_ranges, SendPtr};
use crate::tensor::{Element, View};

/// Calls `f(linear, multi_index)` for every position of `shape` in row-major order.
pub fn for_each_index(shape: &[usize], mut f: impl FnMut(usize, &[usize])) {
    let n: usize = shape.iter().product();
    if n == 0 {
        return;
    }
    let nd = shape.len();
    let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, nd);
    for lin in 0..n {
        f(lin, &idx);
        let mut d = nd;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Element offsets of every position of `shape` under `strides`, row-major.
fn offsets_of(shape: &[usize], strides: &[usize]) -> Vec<usize> {
    let mut out = crate::error::alloc_vec(shape.iter().product());
    for_each_index(shape, |_, idx| {
        out.push(idx.iter().zip(strides).map(|(&i, &s)| i * s).sum());
    });
    if shape.is_empty() {
        out.push(0);
    }
    out
}

/// An index tensor's shape seen as `[outer, k, inner]` around `dim`.
fn split3(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    (
        shape[..dim].iter().product(),
        shape[dim],
        shape[dim + 1..].iter().product(),
    )
}

/// `out[p] = src[p with dim replaced by index[p]]` over the index's shape.
/// Every index must already be in `0..src.shape[dim]`. The index's shape is
/// read as `[outer, k, inner]`; the source's offsets of the outer and inner
/// positions are tabulated once, so each element costs one load from each
/// table, and rows go over the pool in parallel.
pub fn gather_dim<T: Element>(src: &View, dim: usize, index: &[i64], ishape: &[usize]) -> Vec<T> {
    // An empty index may still have a huge size beside its zero one
    // (`[2**62, 0]`): nothing to tabulate or loop over.
    if ishape.contains(&0) {
        return Vec::new();
    }
    let n: usize = ishape.iter().product();
    let (outer, k, inner) = split3(ishape, dim);
    let so = offsets_of(&ishape[..dim], &src.strides[..dim]);
    let si = offsets_of(&ishape[dim + 1..], &src.strides[dim + 1..]);
    let sd = src.strides[dim];
    let base = SendPtr(src.ptr::<T>());
    build_vec(n, |out| {
        let o = SendPtr(out.as_mut_ptr());
        // One unit is one (outer, j) row of `inner` elements. The outer
        // position is carried along instead of divided out per unit: with
        // `inner == 1` (gathering along the last dimension) a unit is one
        // element, and a division each would cost more than the load.
        super::copy::par_units(outer * k, inner, |lo, hi| {
            let (o, base) = (o, base);
            let (mut r, mut j) = (lo / k, lo % k);
            let mut u = lo;
            while u < hi {
                let end = (u + (k - j)).min(hi);
                let row = so[r];
                // SAFETY: indices were validated against the source's shape;
                // each unit writes only its own row of the output.
                unsafe {
                    let dst = o.get().add(u * inner).cast::<T>();
                    let src = base.get().add(row);
                    if inner == 1 {
                        for (c, &i) in index[u..end].iter().enumerate() {
                            *dst.add(c) = *src.add(i as usize * sd);
                        }
                    } else {
                        for w in 0..end - u {
                            let ix = &index[(u + w) * inner..(u + w + 1) * inner];
                            let d = dst.add(w * inner);
                            for (c, (&i, &off)) in ix.iter().zip(&si).enumerate() {
                                *d.add(c) = *src.add(i as usize * sd + off);
                            }
                        }
                    }
                }
                u = end;
                r += 1;
                j = 0;
            }
        });
    })
}

/// Writes (or, with `accumulate`, adds) `src[p]` into `dst[p with dim replaced
/// by index[p]]`, where `dst` is contiguous with shape `dshape`.
///
/// Parallel writes never meet: positions that differ outside `dim` land in
/// different elements, so the work is split by the index's outer positions
/// (or, when there is only one, by its inner columns, or by ranges of the
/// destination along `dim`). Every element receives its writes in the index's
/// order whatever the split, so the result is the same on any thread count
/// (and a repeated index keeps the last write, as the serial loop did).
pub fn scatter_dim<T: Element + crate::tensor::Arith>(
    dst: &mut [T],
    dshape: &[usize],
    dim: usize,
    index: &[i64],
    ishape: &[usize],
    src: &View,
    accumulate: bool,
) {
    if ishape.contains(&0) {
        return;
    }
    let dstrides = crate::tensor::contiguous_strides(dshape);
    let (outer, k, inner) = split3(ishape, dim);
    let dout = offsets_of(&ishape[..dim], &dstrides[..dim]);
    let din = offsets_of(&ishape[dim + 1..], &dstrides[dim + 1..]);
    let sout = offsets_of(&ishape[..dim], &src.strides[..dim]);
    let sin = offsets_of(&ishape[dim + 1..], &src.strides[dim + 1..]);
    let (dd, sd) = (dstrides[dim], src.strides[dim]);
    let (dp, sp) = (SendPtr(dst.as_mut_ptr()), SendPtr(src.ptr::<T>()));
    // Applies rows `j` of outer position `o`, columns `c0..c1`, to destination
    // positions along `dim` in `r0..r1` only.
    let apply = |o: usize, c0: usize, c1: usize, r0: usize, r1: usize| {
        let (dp, sp) = (dp, sp);
        if inner == 1 && r0 == 0 && r1 == dshape[dim] {
            // Along the last dimension with the whole destination row owned:
            // one tight loop per row, no slices or range tests per element.
            let ix = &index[o * k..(o + 1) * k];
            // SAFETY: indices were validated against both shapes.
            unsafe {
                let (src, dst) = (
                    sp.get().add(sout[o] + sin[0]),
                    dp.get().add(dout[o] + din[0]),
                );
                if accumulate {
                    for (j, &i) in ix.iter().enumerate() {
                        let slot = dst.add(i as usize * dd);
                        *slot = (*slot).add(*src.add(j * sd));
                    }
                } else {
                    for (j, &i) in ix.iter().enumerate() {
                        *dst.add(i as usize * dd) = *src.add(j * sd);
                    }
                }
            }
            return;
        }
        for j in 0..k {
            let ix = &index[(o * k + j) * inner..(o * k + j + 1) * inner];
            for c in c0..c1 {
                let i = ix[c] as usize;
                if i < r0 || i >= r1 {
                    continue;
                }
                // SAFETY: indices were validated against both shapes.
                unsafe {
                    let v = *sp.get().add(sout[o] + j * sd + sin[c]);
                    let slot = dp.get().add(dout[o] + i * dd + din[c]);
                    *slot = if accumulate { (*slot).add(v) } else { v };
                }
            }
        }
    };
    let size = dshape[dim];
    if outer > 1 {
        super::copy::par_units(outer, k * inner, |lo, hi| {
            for o in lo..hi {
                apply(o, 0, inner, 0, size);
            }
        });
    } else if inner > 1 {
        super::copy::par_units(inner, k, |lo, hi| apply(0, lo, hi, 0, size));
    } else {
        // One column: split the destination; every part reads the whole index.
        super::parallel::run(k, |threads| {
            if threads == 1 {
                apply(0, 0, 1, 0, size);
                return;
            }
            let part = size.div_ceil(threads);
            super::parallel::tasks(threads, |t| {
                apply(0, 0, 1, t * part, ((t + 1) * part).min(size))
            });
        });
    }
}

/// `index_select` on a contiguous `[outer, n, inner]` source: each picked row
/// of `inner` elements is one `memcpy`, rows spread over the pool.
pub fn index_select_rows<T: Element>(
    src: &[T],
    outer: usize,
    n: usize,
    inner: usize,
    index: &[i64],
) -> Vec<T> {
    let k = index.len();
    if outer == 0 || k == 0 || inner == 0 {
        // No units of work, however large the other factors (their product
        // may not even fit).
        return Vec::new();
    }
    let sp = SendPtr(src.as_ptr() as *mut T);
    build_vec(outer * k * inner, |out| {
        let o = SendPtr(out.as_mut_ptr());
        if inner == 1 {
            // A gather along the last dimension: a block of up to JB picks
            // from one row of the source per unit.
            const JB: usize = 4096;
            let jb = k.div_ceil(JB).max(1);
            super::copy::par_units(outer * jb, JB.min(k), |lo, hi| {
                let (o, sp) = (o, sp);
                for u in lo..hi {
                    let (r, b) = (u / jb, u % jb);
                    let (j0, j1) = (b * JB, ((b + 1) * JB).min(k));
                    // SAFETY: indices are in `0..n`; unit `u` writes its own block.
                    unsafe {
                        let row = sp.get().add(r * n);
                        let dst = o.get().add(r * k).cast::<T>();
                        for (j, &i) in index.iter().enumerate().take(j1).skip(j0) {
                            *dst.add(j) = *row.add(i as usize);
                        }
                    }
                }
            });
            return;
        }
        super::copy::par_units(outer * k, inner, |lo, hi| {
            let (o, sp) = (o, sp);
            for u in lo..hi {
                let (r, j) = (u / k.max(1), u % k.max(1));
                // SAFETY: as above; whole rows of `inner` elements.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        sp.get().add((r * n + index[j] as usize) * inner),
                        o.get().add(u * inner).cast::<T>(),
                        inner,
                    )
                };
            }
        });
    })
}

/// `dst[o, index[j], :] += src[o, j, :]` (or `=` without `accumulate`: the
/// last repeated index wins) for a contiguous `[outer, n, inner]`
/// destination and `[outer, k, inner]` source (`index_add`/`index_copy`, and
/// the gradient of `index_select`). Split by destination, never by `j`: by outer
/// position, else by inner columns, else by ranges of `n`, so parallel adds
/// never meet and each element adds its terms in `j` order whatever the
/// thread count (the sums are the same bits on one thread or many).
pub fn index_add_rows<T: crate::tensor::Arith>(
    dst: &mut [T],
    outer: usize,
    n: usize,
    inner: usize,
    index: &[i64],
    src: &[T],
    accumulate: bool,
) {
    let k = index.len();
    if outer == 0 || k == 0 || inner == 0 {
        return;
    }
    let (dp, sp) = (SendPtr(dst.as_mut_ptr()), SendPtr(src.as_ptr() as *mut T));
    let apply = |o: usize, c0: usize, c1: usize, r0: usize, r1: usize| {
        let (dp, sp) = (dp, sp);
        for (j, &i) in index.iter().enumerate() {
            let i = i as usize;
            if i < r0 || i >= r1 {
                continue;
            }
            // SAFETY: `i < n`; the caller's split keeps writers apart.
            unsafe {
                if c1 - c0 == 1 {
                    // One element (an index along the last dimension): no
                    // call per element.
                    let d = dp.get().add((o * n + i) * inner + c0);
                    let s = *sp.get().add((o * k + j) * inner + c0);
                    *d = if accumulate { (*d).add(s) } else { s };
                    continue;
                }
                let d =
                    std::slice::from_raw_parts_mut(dp.get().add((o * n + i) * inner + c0), c1 - c0);
                let s = std::slice::from_raw_parts(sp.get().add((o * k + j) * inner + c0), c1 - c0);
                if accumulate {
                    add_assign(d, s);
                } else {
                    d.copy_from_slice(s);
                }
            }
        }
    };
    const COLS: usize = 1024;
    if outer >= 4 || (outer >= 2 && inner < 2 * COLS) {
        super::copy::par_units(outer, k * inner, |lo, hi| {
            for o in lo..hi {
                apply(o, 0, inner, 0, n);
            }
        });
    } else if inner >= 2 * COLS {
        let blocks = inner.div_ceil(COLS);
        super::copy::par_units(outer * blocks, k * COLS, |lo, hi| {
            for u in lo..hi {
                let (o, b) = (u / blocks, u % blocks);
                apply(o, b * COLS, ((b + 1) * COLS).min(inner), 0, n);
            }
        });
    } else {
        super::parallel::run(outer * k * inner, |threads| {
            let part = n.div_ceil(threads.max(1));
            super::parallel::tasks(threads.min(n), |t| {
                for o in 0..outer {
                    apply(o, 0, inner, t * part, ((t + 1) * part).min(n));
                }
            });
        });
    }
}

#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn add_assign<T: crate::tensor::Arith>(d: &mut [T], s: &[T]) {
    for (a, &b) in d.iter_mut().zip(s) {
        *a = a.add(b);
    }
}

/// A row-major copy of `src` with the dimensions flagged in `flip` reversed:
/// a flipped dimension is read from its far end with a negative stride, so
/// the copy is [`copy_box`](super::copy::copy_box)'s (reversed runs, blocks).
pub fn flip_copy<T: Element>(src: &View, flip: &[bool]) -> Vec<T> {
    let mut start = src.offset;
    let mut sst: super::copy::SignedStrides = SmallVec::new();
    for (d, (&n, &st)) in src.shape.iter().zip(&src.strides).enumerate() {
        if flip[d] && n > 0 {
            start += (n - 1) * st;
            sst.push(-(st as isize));
        } else {
            sst.push(st as isize);
        }
    }
    // SAFETY: a flipped dimension starts at its last element and walks back
    // to its first, so every read stays inside the view.
    unsafe { super::copy::gather_signed(src, start, &sst) }
}

/// `f(row)` for each of the `rows` contiguous rows of length `cols` in `data`,
/// in parallel above the grain size.
pub fn map_rows<T: Element, U: Element>(
    data: &[T],
    rows: usize,
    cols: usize,
    f: impl Fn(&[T]) -> U + Sync,
) -> Vec<U> {
    build_vec(rows, |out| {
        let o = SendPtr(out.as_mut_ptr());
        let per = cols.max(1);
        par_ranges(rows * per, |lo, hi| {
            let (r0, r1) = (lo / per, hi.div_ceil(per).min(rows));
            for r in r0..r1 {
                // Ranges split on element counts; each row belongs to the range holding its first element.
                if r * per < lo {
                    continue;
                }
                let row = &data[r * cols..(r + 1) * cols];
                // SAFETY: each row index is written by exactly one range.
                unsafe { (*o.get().add(r)).write(f(row)) };
            }
        })
    })
}

/// Applies `f(row_in, row_out)` to each contiguous row (scans such as cumsum).
pub fn scan_rows<T: Element>(
    data: &[T],
    rows: usize,
    cols: usize,
    f: impl Fn(&[T], &mut [T]) + Sync,
) -> Vec<T> {
    if rows == 0 || cols == 0 {
        return Vec::new();
    }
    let mut out = crate::error::filled_vec(rows * cols, T::zero());
    let o = SendPtr(out.as_mut_ptr());
    par_ranges(rows * cols, |lo, hi| {
        let (r0, r1) = (lo / cols, hi.div_ceil(cols).min(rows));
        for r in r0..r1 {
            if r * cols < lo {
                continue;
            }
            // SAFETY: each row is owned by the one range holding its first element.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(r * cols), cols) };
            f(&data[r * cols..(r + 1) * cols], dst);
        }
    });
    out
}

/// Running sums down the middle dimension of a contiguous `[outer, n,
/// inner]` block (`cumsum` along a leading dimension): whole rows are added
/// to the previous result row, so memory streams in order and the adds
/// vectorise; each element's sum runs in `j` order, as the row scan's does.
pub fn scan_mid<T: crate::tensor::Arith>(
    data: &[T],
    outer: usize,
    n: usize,
    inner: usize,
) -> Vec<T> {
    if outer == 0 || n == 0 || inner == 0 {
        // Empty, however large the other factors: no loop over them.
        return Vec::new();
    }
    let total = outer * n * inner;
    const COLS: usize = 1024;
    let blocks = inner.div_ceil(COLS).max(1);
    build_vec(total, |out| {
        let o = SendPtr(out.as_mut_ptr().cast::<T>());
        super::copy::par_units(outer * blocks, n * COLS.min(inner.max(1)), |lo, hi| {
            for u in lo..hi {
                let (r, b) = (u / blocks, u % blocks);
                let (c0, c1) = (b * COLS, ((b + 1) * COLS).min(inner));
                for j in 0..n {
                    let at = (r * n + j) * inner;
                    let x = &data[at + c0..at + c1];
                    // SAFETY: unit `u` owns columns `c0..c1` of outer position `r`.
                    let dst =
                        unsafe { std::slice::from_raw_parts_mut(o.get().add(at + c0), c1 - c0) };
                    if j == 0 {
                        dst.copy_from_slice(x);
                    } else {
                        let prev = unsafe {
                            std::slice::from_raw_parts(o.get().add(at - inner + c0), c1 - c0)
                        };
                        add_rows(dst, prev, x);
                    }
                }
            }
        });
    })
}

#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn add_rows<T: crate::tensor::Arith>(d: &mut [T], a: &[T], b: &[T]) {
    for ((o, &x), &y) in d.iter_mut().zip(a).zip(b) {
        *o = x.add(y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_cover_everything_once() {
        let data: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
        let sums = map_rows(&data, 1000, 100, |r| r.iter().sum::<f64>());
        assert_eq!(sums.len(), 1000);
        assert_eq!(sums[1], (100..200).map(|i| i as f64).sum::<f64>());
        let c = scan_rows(&data, 1000, 100, |a, b| {
            let mut acc = 0.0;
            for (x, y) in a.iter().zip(b.iter_mut()) {
                acc += x;
                *y = acc;
            }
        });
        assert_eq!(c[199], sums[1]);
        // Down the middle dimension: the same sums as scanning transposed rows.
        let (outer, n, inner) = (3, 50, 2100);
        let x: Vec<f32> = (0..outer * n * inner)
            .map(|i| ((i * 31) % 17) as f32 * 0.3 - 2.0)
            .collect();
        for t in [1, 2] {
            crate::kernels::parallel::set_num_threads(t).unwrap();
            let got = scan_mid(&x, outer, n, inner);
            for o in 0..outer {
                for col in (0..inner).step_by(97) {
                    let mut acc = 0f32;
                    for j in 0..n {
                        acc += x[(o * n + j) * inner + col];
                        assert_eq!(got[(o * n + j) * inner + col].to_bits(), acc.to_bits());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod gather_tests {
    use super::*;
    use crate::tensor::Tensor;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    /// `index_add_rows` against a serial reference, with repeated indices,
    /// on every split (outer, columns, destination ranges), bit for bit on
    /// one and two threads.
    #[test]
    fn index_add_matches_a_serial_loop_on_any_thread_count() {
        let mut seed = 1u64;
        for &(outer, n, inner, k) in &[
            (1, 7, 1, 40),
            (1, 50, 3000, 60),
            (300, 20, 5, 40),
            (2, 9, 700, 30),
            (1, 70_000, 1, 90_000),
        ] {
            let idx: Vec<i64> = (0..k).map(|_| (lcg(&mut seed) % n as u64) as i64).collect();
            let src: Vec<f32> = (0..outer * k * inner)
                .map(|_| (lcg(&mut seed) % 1000) as f32 * 0.37 - 100.0)
                .collect();
            let base: Vec<f32> = (0..outer * n * inner)
                .map(|i| (i % 13) as f32 * 0.1)
                .collect();
            let mut want = base.clone();
            for o in 0..outer {
                for (j, &i) in idx.iter().enumerate() {
                    for c in 0..inner {
                        want[(o * n + i as usize) * inner + c] += src[(o * k + j) * inner + c];
                    }
                }
            }
            for t in [1, 2] {
                crate::kernels::parallel::set_num_threads(t).unwrap();
                let mut got = base.clone();
                index_add_rows(&mut got, outer, n, inner, &idx, &src, true);
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{outer}x{n}x{inner} k={k} t={t}"
                );
                let sel = index_select_rows(&base, outer, n, inner, &idx);
                for o in 0..outer {
                    for (j, &i) in idx.iter().enumerate() {
                        for c in 0..inner {
                            assert_eq!(
                                sel[(o * k + j) * inner + c],
                                base[(o * n + i as usize) * inner + c]
                            );
                        }
                    }
                }
            }
        }
    }

    /// `gather_dim` and `scatter_dim` (both modes) against direct loops on a
    /// strided (transposed) source, for each dimension.
    #[test]
    fn gather_and_scatter_match_direct_loops() {
        let mut seed = 5u64;
        let (a, b) = (37, 300);
        let t = Tensor::from_vec(
            (0..a * b).map(|i| i as f64).collect(),
            smallvec::smallvec![a, b],
        );
        let tv = t.view();
        // The [b, a] transpose of t.
        let src = View {
            storage: tv.storage.clone(),
            shape: smallvec::smallvec![b, a],
            strides: smallvec::smallvec![1, b],
            offset: 0,
        };
        let at = |i: usize, j: usize| (j * b + i) as f64;
        for dim in 0..2 {
            let ishape = [b - 3, a - 2];
            let size = [b, a][dim];
            let idx: Vec<i64> = (0..ishape[0] * ishape[1])
                .map(|_| (lcg(&mut seed) % size as u64) as i64)
                .collect();
            for t in [1, 2] {
                crate::kernels::parallel::set_num_threads(t).unwrap();
                let g = gather_dim::<f64>(&src, dim, &idx, &ishape);
                for i in 0..ishape[0] {
                    for j in 0..ishape[1] {
                        let ix = idx[i * ishape[1] + j] as usize;
                        let want = if dim == 0 { at(ix, j) } else { at(i, ix) };
                        assert_eq!(g[i * ishape[1] + j], want);
                    }
                }
                for acc in [false, true] {
                    let mut dst = vec![0.5f64; b * a];
                    scatter_dim::<f64>(&mut dst, &[b, a], dim, &idx, &ishape, &src, acc);
                    let mut want = vec![0.5f64; b * a];
                    for i in 0..ishape[0] {
                        for j in 0..ishape[1] {
                            let ix = idx[i * ishape[1] + j] as usize;
                            let pos = if dim == 0 { ix * a + j } else { i * a + ix };
                            want[pos] = if acc { want[pos] + at(i, j) } else { at(i, j) };
                        }
                    }
                    assert_eq!(dst, want, "dim {dim} accumulate {acc} threads {t}");
                }
            }
        }
    }

    #[test]
    fn one_column_scatter_splits_the_destination() {
        let mut seed = 9u64;
        let n = 50_000;
        let idx: Vec<i64> = (0..120_000)
            .map(|_| (lcg(&mut seed) % n as u64) as i64)
            .collect();
        let t = Tensor::from_vec(
            (0..idx.len()).map(|i| (i % 97) as f32 * 0.25).collect(),
            smallvec::smallvec![idx.len()],
        );
        let sv = t.view();
        let mut runs = Vec::new();
        for th in [1, 2] {
            crate::kernels::parallel::set_num_threads(th).unwrap();
            let mut dst = vec![0f32; n];
            scatter_dim::<f32>(&mut dst, &[n], 0, &idx, &[idx.len()], &sv, true);
            runs.push(dst);
        }
        let mut want = vec![0f32; n];
        for (j, &i) in idx.iter().enumerate() {
            want[i as usize] += (j % 97) as f32 * 0.25;
        }
        assert_eq!(runs[0], want);
        assert_eq!(runs[1], want);
    }
}

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

/// `out[p] = src[p with dim replaced by index[p]]` over the index's shape.
/// Every index must already be in `0..src.shape[dim]`.
pub fn gather_dim<T: Element>(src: &View, dim: usize, index: &[i64], ishape: &[usize]) -> Vec<T> {
    let n: usize = ishape.iter().product();
    let base = src.ptr::<T>();
    let strides = src.strides.clone();
    let mut out: Vec<T> = crate::error::alloc_vec(n);
    for_each_index(ishape, |lin, idx| {
        let mut off = 0usize;
        for (d, (&i, &s)) in idx.iter().zip(strides.iter()).enumerate() {
            let i = if d == dim { index[lin] as usize } else { i };
            off += i * s;
        }
        // SAFETY: indices were validated against the source's shape.
        out.push(unsafe { *base.add(off) });
    });
    out
}

/// Writes (or, with `accumulate`, adds) `src[p]` into `dst[p with dim replaced
/// by index[p]]`, where `dst` is contiguous with shape `dshape`. Serial,
/// because duplicate indices would race.
pub fn scatter_dim<T: Element + crate::tensor::Arith>(
    dst: &mut [T],
    dshape: &[usize],
    dim: usize,
    index: &[i64],
    ishape: &[usize],
    src: &View,
    accumulate: bool,
) {
    let dstrides = crate::tensor::contiguous_strides(dshape);
    let sbase = src.ptr::<T>();
    let sstrides = src.strides.clone();
    for_each_index(ishape, |lin, idx| {
        let mut doff = 0usize;
        let mut soff = 0usize;
        for d in 0..idx.len() {
            let i = if d == dim {
                index[lin] as usize
            } else {
                idx[d]
            };
            doff += i * dstrides[d];
            soff += idx[d] * sstrides[d];
        }
        // SAFETY: indices were validated against both shapes.
        let v = unsafe { *sbase.add(soff) };
        if accumulate {
            dst[doff] = dst[doff].add(v);
        } else {
            dst[doff] = v;
        }
    });
}

/// A row-major copy of `src` with the dimensions flagged in `flip` reversed.
pub fn flip_copy<T: Element>(src: &View, flip: &[bool]) -> Vec<T> {
    let n = src.numel();
    let base = src.ptr::<T>();
    let shape = src.shape.clone();
    let strides = src.strides.clone();
    let mut out: Vec<T> = crate::error::alloc_vec(n);
    for_each_index(&shape, |_, idx| {
        let mut off = 0usize;
        for d in 0..idx.len() {
            let i = if flip[d] {
                shape[d] - 1 - idx[d]
            } else {
                idx[d]
            };
            off += i * strides[d];
        }
        // SAFETY: every flipped index stays inside its dimension.
        out.push(unsafe { *base.add(off) });
    });
    out
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
    let mut out = crate::error::filled_vec(rows * cols, T::zero());
    if cols == 0 {
        return out;
    }
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
    }
}

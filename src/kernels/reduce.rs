//! Reductions over all elements or over a set of dimensions.

use rayon::prelude::*;
use smallvec::SmallVec;

use super::{build_vec, coalesce, for_each_row, SendPtr, GRAIN};
use crate::tensor::{Arith, Element, View};

/// Sums a contiguous slice with eight independent accumulators, which both
/// vectorises and keeps float32 rounding error far below a naive running sum.
fn sum_slice<T: Arith>(s: &[T]) -> T {
    let mut acc = [T::zero(); 8];
    let chunks = s.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..8 {
            acc[k] = acc[k].add(c[k]);
        }
    }
    let mut total = (acc[0].add(acc[4]).add(acc[1].add(acc[5])))
        .add(acc[2].add(acc[6]).add(acc[3].add(acc[7])));
    for &x in rest {
        total = total.add(x);
    }
    total
}

/// Pairwise over blocks so that error grows with log(n), not n.
fn sum_blocks<T: Arith>(s: &[T]) -> T {
    super::parallel::run(s.len(), |threads| sum_blocks_in(s, threads > 1))
}

fn sum_blocks_in<T: Arith>(s: &[T], parallel: bool) -> T {
    const BLOCK: usize = 4096;
    if s.len() <= BLOCK {
        return sum_slice(s);
    }
    let mid = (s.len() / 2).div_ceil(BLOCK) * BLOCK;
    let (l, r) = s.split_at(mid.min(s.len()));
    if parallel && s.len() >= GRAIN {
        let (a, b) = rayon::join(|| sum_blocks_in(l, true), || sum_blocks_in(r, true));
        a.add(b)
    } else {
        sum_blocks_in(l, false).add(sum_blocks_in(r, false))
    }
}

/// The sum of every element of `x`.
pub fn sum_all<T: Arith>(x: &View) -> T {
    match x.as_slice::<T>() {
        Some(s) => sum_blocks(s),
        None => sum_blocks(&super::copy::gather::<T>(x)),
    }
}

/// Sums `x` over the dimensions flagged in `reduce`; the result is row-major
/// over the kept dimensions (as if `keepdim=False`).
pub fn sum_dims<T: Arith>(x: &View, reduce: &[bool]) -> Vec<T> {
    let nd = x.shape.len();
    let mut kept_shape: SmallVec<[usize; 4]> = SmallVec::new();
    let mut kept_strides: SmallVec<[usize; 4]> = SmallVec::new();
    let mut red_shape: SmallVec<[usize; 4]> = SmallVec::new();
    let mut red_strides: SmallVec<[usize; 4]> = SmallVec::new();
    for (d, &r) in reduce.iter().enumerate().take(nd) {
        if r {
            red_shape.push(x.shape[d]);
            red_strides.push(x.strides[d]);
        } else {
            kept_shape.push(x.shape[d]);
            kept_strides.push(x.strides[d]);
        }
    }
    let out_n: usize = kept_shape.iter().product();
    let red_n: usize = red_shape.iter().product();
    let (kshape, [kst]) = coalesce(&kept_shape, [&kept_strides]);
    let (rshape, [rst]) = coalesce(&red_shape, [&red_strides]);
    let base = SendPtr(x.ptr::<T>());
    let rinner = *rst.last().unwrap_or(&1);

    // One output element: the sum of a (strided) sub-block.
    let reduce_at = |off: usize| -> T {
        let mut total = T::zero();
        let b = base;
        for_each_row(
            &rshape,
            std::array::from_ref(&rst),
            0,
            red_n,
            |_, len, [o]| {
                // SAFETY: offsets stay inside the view.
                let p = unsafe { b.0.add(off + o) };
                if rinner == 1 {
                    total = total.add(sum_slice(unsafe { std::slice::from_raw_parts(p, len) }));
                } else {
                    for i in 0..len {
                        total = total.add(unsafe { *p.add(i * rinner) });
                    }
                }
            },
        );
        total
    };

    build_vec(out_n, |out| {
        let work = out_n.saturating_mul(red_n.max(1));
        let fill = |start: usize, part: &mut [std::mem::MaybeUninit<T>]| {
            let kinner = *kst.last().unwrap_or(&1);
            for_each_row(
                &kshape,
                std::array::from_ref(&kst),
                start,
                start + part.len(),
                |pos, len, [o]| {
                    for i in 0..len {
                        part[pos - start + i].write(reduce_at(o + i * kinner));
                    }
                },
            );
        };
        super::parallel::run(if out_n == 1 { 0 } else { work }, |threads| {
            if threads == 1 {
                fill(0, out);
            } else {
                let chunk = out_n.div_ceil(threads * 4).max(1);
                out.par_chunks_mut(chunk)
                    .enumerate()
                    .for_each(|(ci, part)| fill(ci * chunk, part));
            }
        })
    })
}

/// Index of the extreme element along one flattened sub-block (argmax/argmin helper).
pub fn extreme_index<T: Element>(s: &[T], better: impl Fn(T, T) -> bool) -> usize {
    let mut best = 0;
    for (i, &v) in s.iter().enumerate().skip(1) {
        if better(v, s[best]) {
            best = i;
        }
    }
    best
}

//! Reductions over all elements or over a set of dimensions.

use multiversion::multiversion;
use smallvec::SmallVec;

use super::{build_vec, coalesce, for_each_row, SendPtr};
use crate::tensor::{Arith, Element, View};

/// How a summed element is read: as it is ([`Plain`]) or with NaN read as
/// zero ([`NanZero`], `nansum`), in the same pass and the same order.
pub trait Load: Copy + Send + Sync {
    fn load<T: Element>(self, x: T) -> T;
}

/// Elements read as they are.
#[derive(Clone, Copy)]
pub struct Plain;

impl Load for Plain {
    #[inline(always)]
    fn load<T: Element>(self, x: T) -> T {
        x
    }
}

/// NaN read as zero (a select, so the loop still vectorises).
#[derive(Clone, Copy)]
pub struct NanZero;

impl Load for NanZero {
    #[inline(always)]
    #[allow(clippy::eq_op)]
    fn load<T: Element>(self, x: T) -> T {
        if x != x {
            T::zero()
        } else {
            x
        }
    }
}

/// Sums a contiguous slice with 64 independent accumulators (four AVX-512
/// registers of floats), which both vectorises and keeps float32 rounding
/// error far below a naive running sum.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn sum_slice<T: Arith, Z: Load>(s: &[T], z: Z) -> T {
    // Chunks of 64 into 64 lanes (four float32 vectors, whose add chains
    // overlap), then a tail of whole 16s into the first 16 lanes, then the
    // lanes folded pairwise and the last few added in order: a fixed order
    // for a given length.
    let mut acc = [T::zero(); 64];
    let chunks = s.chunks_exact(64);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..64 {
            acc[k] = acc[k].add(z.load(c[k]));
        }
    }
    let sixteens = rest.chunks_exact(16);
    let rest = sixteens.remainder();
    for c in sixteens {
        for k in 0..16 {
            acc[k] = acc[k].add(z.load(c[k]));
        }
    }
    let mut width = 32;
    while width > 0 {
        for k in 0..width {
            acc[k] = acc[k].add(acc[k + width]);
        }
        width /= 2;
    }
    let mut total = acc[0];
    for &x in rest {
        total = total.add(z.load(x));
    }
    total
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn add_into<T: Arith, Z: Load>(acc: &mut [T], x: &[T], z: Z) {
    for (a, &v) in acc.iter_mut().zip(x) {
        *a = a.add(z.load(v));
    }
}

const BLOCK: usize = 4096;

/// Where the pairwise tree splits a run of `len`: whole blocks on the left.
fn split(len: usize) -> usize {
    ((len / 2).div_ceil(BLOCK) * BLOCK).min(len)
}

/// Pairwise over blocks so that error grows with log(n), not n: the sum of
/// `lo..hi`, `leaf` summing each run of at most [`BLOCK`] at the tree's
/// splits.
fn sum_pairwise<T: Arith>(lo: usize, hi: usize, leaf: &impl Fn(usize, usize) -> T) -> T {
    if hi - lo <= BLOCK {
        return leaf(lo, hi);
    }
    let mid = lo + split(hi - lo);
    sum_pairwise(lo, mid, leaf).add(sum_pairwise(mid, hi, leaf))
}

/// The subtrees `depth` levels down (or leaf blocks above that), in order.
fn subtrees(lo: usize, hi: usize, depth: u32, out: &mut Vec<(usize, usize)>) {
    if hi - lo <= BLOCK || depth == 0 {
        out.push((lo, hi));
        return;
    }
    let mid = lo + split(hi - lo);
    subtrees(lo, mid, depth - 1, out);
    subtrees(mid, hi, depth - 1, out);
}

/// Adds up the subtrees' sums along the same tree.
fn combine<T: Arith>(len: usize, depth: u32, sums: &mut impl Iterator<Item = T>) -> T {
    if len <= BLOCK || depth == 0 {
        return sums.next().unwrap_or(T::zero());
    }
    let mid = split(len);
    let a = combine(mid, depth - 1, sums);
    a.add(combine(len - mid, depth - 1, sums))
}

/// [`sum_pairwise`] of `0..n` with the subtrees summed in parallel: the same
/// tree whatever the thread count, so the same result.
fn sum_blocks<T: Arith>(n: usize, leaf: impl Fn(usize, usize) -> T + Sync) -> T {
    super::parallel::run(n, |threads| {
        if threads == 1 {
            return sum_pairwise(0, n, &leaf);
        }
        // About four subtrees per thread.
        let depth = (threads * 4).next_power_of_two().trailing_zeros();
        let mut parts = Vec::new();
        subtrees(0, n, depth, &mut parts);
        let sums = build_vec(parts.len(), |out| {
            let o = SendPtr(out.as_mut_ptr());
            super::parallel::tasks(parts.len(), |i| {
                let (lo, hi) = parts[i];
                // SAFETY: task `i` writes only slot `i`.
                unsafe { (*o.get().add(i)).write(sum_pairwise(lo, hi, &leaf)) };
            });
        });
        combine(n, depth, &mut sums.into_iter())
    })
}

/// The sum of `n` values that `fill(start, out)` makes (`out[k]` is value
/// `start + k`), never all held at once: each leaf's run is made in a
/// buffer that stays in L1 and summed there. The tree and the leaf sums are
/// [`sum_all`]'s, so the result equals summing the materialised values, on
/// any thread count.
pub fn sum_mapped<T: Arith>(n: usize, fill: impl Fn(usize, &mut [T]) + Sync) -> T {
    sum_blocks(n, |lo, hi| {
        let mut buf = [T::zero(); BLOCK];
        let run = &mut buf[..hi - lo];
        fill(lo, run);
        sum_slice(run, Plain)
    })
}

/// The sum of every element of `x`.
pub fn sum_all<T: Arith>(x: &View) -> T {
    sum_all_with(x, Plain)
}

/// The sum of every element of `x` as `z` reads them.
pub fn sum_all_with<T: Arith, Z: Load>(x: &View, z: Z) -> T {
    let sum = |s: &[T]| sum_blocks(s.len(), |lo, hi| sum_slice(&s[lo..hi], z));
    match x.as_slice::<T>() {
        Some(s) => sum(s),
        None => sum(&super::copy::gather::<T>(x)),
    }
}

/// Sums `x` over the dimensions flagged in `reduce`; the result is row-major
/// over the kept dimensions (as if `keepdim=False`).
pub fn sum_dims<T: Arith>(x: &View, reduce: &[bool]) -> Vec<T> {
    sum_dims_with(x, reduce, Plain)
}

/// [`sum_dims`] with the elements as `z` reads them.
pub fn sum_dims_with<T: Arith, Z: Load>(x: &View, reduce: &[bool], z: Z) -> Vec<T> {
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
    let kinner = *kst.last().unwrap_or(&0);
    if kinner == 1 && rinner != 1 && red_n > 1 {
        return sum_rows(base, &kshape, &kst, &rshape, &rst, out_n, red_n, z);
    }

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
                    total = total.add(sum_slice(unsafe { std::slice::from_raw_parts(p, len) }, z));
                } else {
                    for i in 0..len {
                        total = total.add(z.load(unsafe { *p.add(i * rinner) }));
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
                super::par_chunks_mut(out, out_n.div_ceil(threads * 4), fill);
            }
        })
    })
}

/// `sum_dims` when the kept elements lie in contiguous runs and the reduced
/// dimensions step over whole runs (a bias gradient: `(batch, n)` summed over
/// the batch). Adding whole rows streams memory once and vectorises, where a
/// strided walk per output would miss cache on every element.
#[allow(clippy::too_many_arguments)]
fn sum_rows<T: Arith>(
    base: SendPtr<T>,
    kshape: &[usize],
    kst: &SmallVec<[usize; 4]>,
    rshape: &[usize],
    rst: &SmallVec<[usize; 4]>,
    out_n: usize,
    red_n: usize,
    z: impl Load,
) -> Vec<T> {
    // Rows are added in blocks whose partial sums are then combined, so float
    // error grows with red_n / BLOCK + BLOCK rather than with red_n.
    const BLOCK: usize = 128;
    // Output columns handled at once: the block accumulator stays in L1.
    const TILE: usize = 2048;
    let rinner = *rst.last().unwrap_or(&1);
    let mut out = crate::error::filled_vec(out_n, T::zero());
    let fill = |start: usize, part: &mut [T]| {
        let mut block = crate::error::filled_vec(TILE.min(part.len()), T::zero());
        for_each_row(
            kshape,
            std::array::from_ref(kst),
            start,
            start + part.len(),
            |pos, len, [o]| {
                let run = &mut part[pos - start..pos - start + len];
                for (t, tile) in run.chunks_mut(TILE).enumerate() {
                    let col = o + t * TILE;
                    let blk = &mut block[..tile.len()];
                    blk.fill(T::zero());
                    let mut in_block = 0;
                    for_each_row(
                        rshape,
                        std::array::from_ref(rst),
                        0,
                        red_n,
                        |_, rlen, [ro]| {
                            for i in 0..rlen {
                                // SAFETY: `col + ro + i * rinner` addresses the start
                                // of a run of `tile.len()` elements inside the view.
                                let row = unsafe {
                                    std::slice::from_raw_parts(
                                        base.get().add(col + ro + i * rinner),
                                        tile.len(),
                                    )
                                };
                                add_into(blk, row, z);
                                in_block += 1;
                                if in_block == BLOCK {
                                    add_into(tile, blk, Plain);
                                    blk.fill(T::zero());
                                    in_block = 0;
                                }
                            }
                        },
                    );
                    add_into(tile, blk, Plain);
                }
            },
        );
    };
    super::parallel::run(out_n.saturating_mul(red_n), |threads| {
        if threads == 1 || out_n < 2 * 64 {
            fill(0, &mut out);
        } else {
            let chunk = out_n.div_ceil(threads).next_multiple_of(16);
            super::par_chunks_mut(&mut out, chunk, fill);
        }
    });
    out
}

/// The maximum (or minimum) of a non-empty slice, NaN if any element is NaN
/// (as PyTorch's amax/amin).
pub fn extreme_slice<T: Element>(s: &[T], is_max: bool) -> T {
    if is_max {
        extreme_by(s, |a: T, v: T| v > a)
    } else {
        extreme_by(s, |a: T, v: T| v < a)
    }
}

/// Sixteen accumulators so the loop vectorises instead of waiting on one
/// compare chain; NaN is tracked on the side, as a compare never picks it.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn extreme_by<T: Element, F: Fn(T, T) -> bool + Copy>(s: &[T], better: F) -> T {
    let pick = |a: T, v: T| if better(a, v) { v } else { a };
    let mut acc = [s[0]; 16];
    let mut nan = [false; 16];
    let chunks = s.chunks_exact(16);
    let rest = chunks.remainder();
    #[allow(clippy::eq_op)]
    for c in chunks {
        for k in 0..16 {
            // Only NaN differs from itself; integers compile this away.
            nan[k] |= c[k] != c[k];
            acc[k] = pick(acc[k], c[k]);
        }
    }
    let mut best = acc.iter().fold(s[0], |a, &v| pick(a, v));
    let mut any_nan = nan.iter().any(|&b| b);
    #[allow(clippy::eq_op)]
    for &v in rest {
        any_nan |= v != v;
        best = pick(best, v);
    }
    if any_nan {
        #[allow(clippy::eq_op)]
        return *s.iter().find(|&&v| v != v).unwrap_or(&best);
    }
    best
}

/// The product of a contiguous slice in [`sum_slice`]'s lanes and order,
/// which vectorises (a single running product waits on every multiply).
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
pub fn prod_slice<T: Arith>(s: &[T]) -> T {
    let mut acc = [T::one(); 64];
    let chunks = s.chunks_exact(64);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..64 {
            acc[k] = acc[k].mul(c[k]);
        }
    }
    let sixteens = rest.chunks_exact(16);
    let rest = sixteens.remainder();
    for c in sixteens {
        for k in 0..16 {
            acc[k] = acc[k].mul(c[k]);
        }
    }
    let mut width = 32;
    while width > 0 {
        for k in 0..width {
            acc[k] = acc[k].mul(acc[k + width]);
        }
        width /= 2;
    }
    let mut total = acc[0];
    for &x in rest {
        total = total.mul(x);
    }
    total
}

/// The sum of squares of a contiguous slice (a 2-norm's radicand), in
/// [`sum_slice`]'s lanes and order.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
pub fn sum_sq_slice<T: Arith>(s: &[T]) -> T {
    let mut acc = [T::zero(); 64];
    let chunks = s.chunks_exact(64);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..64 {
            acc[k] = acc[k].add(c[k].mul(c[k]));
        }
    }
    let sixteens = rest.chunks_exact(16);
    let rest = sixteens.remainder();
    for c in sixteens {
        for k in 0..16 {
            acc[k] = acc[k].add(c[k].mul(c[k]));
        }
    }
    let mut width = 32;
    while width > 0 {
        for k in 0..width {
            acc[k] = acc[k].add(acc[k + width]);
        }
        width /= 2;
    }
    let mut total = acc[0];
    for &x in rest {
        total = total.add(x.mul(x));
    }
    total
}

/// Sums of squares of each contiguous row of a `[rows, cols]` block, or of
/// the whole block (`rows == 1`) in blocks added pairwise in parallel.
pub fn sum_sq_rows<T: Arith>(data: &[T], rows: usize, cols: usize) -> Vec<T> {
    if rows == 1 {
        // The same tree whatever the thread count: blocks of BLOCK, pairwise.
        let blocks: Vec<&[T]> = data.chunks(BLOCK).collect();
        let sums = build_vec(blocks.len(), |out| {
            let o = SendPtr(out.as_mut_ptr());
            super::copy::par_units(blocks.len(), BLOCK, |lo, hi| {
                for (i, b) in blocks.iter().enumerate().take(hi).skip(lo) {
                    // SAFETY: unit `i` writes only slot `i`.
                    unsafe { (*o.get().add(i)).write(sum_sq_slice(b)) };
                }
            });
        });
        return vec![if sums.is_empty() {
            T::zero()
        } else {
            sum_pairwise(0, sums.len(), &|lo, hi| sum_slice(&sums[lo..hi], Plain))
        }];
    }
    super::index::map_rows(data, rows, cols, sum_sq_slice)
}

/// Runs `step(vals, idx, row, j)` over every row `j >= 1` of each column
/// block of a contiguous `[outer, n, inner]` array (`n > 0`), after seeding
/// `vals` with row 0; `idx` is `None` when no positions are wanted. Whole
/// rows are streamed, so reducing a leading dimension reads memory once in
/// order instead of transposing it first.
fn fold_mid<T: Element>(
    data: &[T],
    (outer, n, inner): (usize, usize, usize),
    with_idx: bool,
    step: impl Fn(&mut [T], Option<&mut [i64]>, &[T], i64) + Sync + Send,
) -> (Vec<T>, Vec<i64>) {
    let mut vals = crate::error::filled_vec(outer * inner, T::zero());
    let mut idx = crate::error::zeroed_vec::<i64>(if with_idx { outer * inner } else { 0 });
    const COLS: usize = 512;
    let blocks = inner.div_ceil(COLS);
    let (vp, ip) = (SendPtr(vals.as_mut_ptr()), SendPtr(idx.as_mut_ptr()));
    super::copy::par_units(outer * blocks, n * COLS.min(inner), |lo, hi| {
        let (vp, ip) = (vp, ip);
        for u in lo..hi {
            let (o, b) = (u / blocks, u % blocks);
            let (c0, c1) = (b * COLS, ((b + 1) * COLS).min(inner));
            let at = (o * inner + c0, c1 - c0);
            // SAFETY: unit `u` owns columns `c0..c1` of outer position `o`
            // (of `idx` too when it has them).
            let v = unsafe { std::slice::from_raw_parts_mut(vp.get().add(at.0), at.1) };
            let mut ix = with_idx
                .then(|| unsafe { std::slice::from_raw_parts_mut(ip.get().add(at.0), at.1) });
            let base = o * n * inner;
            v.copy_from_slice(&data[base + c0..base + c1]);
            for j in 1..n {
                let row = &data[base + j * inner + c0..base + j * inner + c1];
                step(v, ix.as_deref_mut(), row, j as i64);
            }
        }
    });
    (vals, idx)
}

/// Along the middle dimension of a contiguous `[outer, n, inner]` block
/// (`n > 0`): per `(o, c)` the maximum (or minimum) and the position of its
/// first occurrence, NaN winning at the first NaN, as PyTorch's `max(dim)`.
pub fn extreme_mid<T: Element>(
    data: &[T],
    outer: usize,
    n: usize,
    inner: usize,
    is_max: bool,
) -> (Vec<T>, Vec<i64>) {
    fold_mid(data, (outer, n, inner), true, |v, ix, row, j| {
        extreme_step(v, ix.expect("positions asked for"), row, j, is_max)
    })
}

/// [`extreme_mid`]'s values alone (`amax`/`amin` of a leading dimension).
/// Each step reads the running values from one buffer and writes the other:
/// updated in place, the select becomes a masked store, which Zen 3
/// microcodes (0.2x PyTorch).
pub fn extreme_mid_values<T: Element>(
    data: &[T],
    outer: usize,
    n: usize,
    inner: usize,
    is_max: bool,
) -> Vec<T> {
    // Column blocks of up to 4 KiB of each row, split further so that both
    // threads get blocks when there is one outer position: a block's rows
    // are read whole, and a row's next block is a page boundary away anyway.
    let cap = (4096 / std::mem::size_of::<T>().max(1)).max(64);
    let split = inner
        .div_ceil(super::parallel::get_num_threads().max(1))
        .next_multiple_of(64);
    let cols = cap.min(split).max(64).min(inner.max(1));
    let blocks = inner.div_ceil(cols);
    build_vec(outer * inner, |vals| {
        let vp = SendPtr(vals.as_mut_ptr() as *mut T);
        super::copy::par_units(outer * blocks, n * cols, |lo, hi| {
            let mut spare = vec![T::zero(); cols];
            for u in lo..hi {
                let (o, b) = (u / blocks, u % blocks);
                let (c0, c1) = (b * cols, ((b + 1) * cols).min(inner));
                // SAFETY: unit `u` owns columns `c0..c1` of outer position `o`;
                // both paths below store row 0 into a column before reading it,
                // and together they write every column of the block.
                let v = unsafe {
                    std::slice::from_raw_parts_mut(vp.get().add(o * inner + c0), c1 - c0)
                };
                let block = &data[o * n * inner + c0..];
                let done = match super::extreme_rows::fold_rows(v, block, n, inner, is_max) {
                    // NaN seen: the exact path decides which NaN is kept.
                    Some(false) | None => 0,
                    Some(true) => super::extreme_rows::lanes::<T>(c1 - c0),
                };
                if done < v.len() {
                    exact_mid_block(&mut v[done..], &mut spare, &block[done..], n, inner, is_max);
                }
            }
        });
    })
}

/// The exact fold of rows `0..n` (`stride` apart in `rows`) into `v`: a
/// NaN seen first is kept, otherwise a strictly better value replaces the
/// kept one.
fn exact_mid_block<T: Element>(
    v: &mut [T],
    spare: &mut [T],
    rows: &[T],
    n: usize,
    stride: usize,
    is_max: bool,
) {
    let w = v.len();
    let spare = &mut spare[..w];
    v.copy_from_slice(&rows[..w]);
    for j in 1..n {
        let row = &rows[j * stride..j * stride + w];
        if j % 2 == 1 {
            extreme_value_step(spare, v, row, is_max);
        } else {
            extreme_value_step(v, spare, row, is_max);
        }
    }
    if n.is_multiple_of(2) {
        v.copy_from_slice(spare);
    }
}

/// The product along the middle dimension of a contiguous `[outer, n,
/// inner]` block (`n > 0`), each column multiplied in row order.
pub fn prod_mid<T: Arith>(data: &[T], outer: usize, n: usize, inner: usize) -> Vec<T> {
    fold_mid(data, (outer, n, inner), false, |v, _, row, _| {
        prod_step(v, row)
    })
    .0
}

// The steps below store every element whichever way the comparison goes,
// selecting the new or the kept value (`pick`): a store under a branch
// mispredicts on unordered data and does not vectorise without AVX-512's
// masked stores (amax of a leading dimension ran at 0.1x PyTorch on Zen 3).

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
#[allow(clippy::eq_op)]
fn extreme_step<T: Element>(v: &mut [T], ix: &mut [i64], row: &[T], j: i64, is_max: bool) {
    for ((a, i), &x) in v.iter_mut().zip(ix.iter_mut()).zip(row) {
        // A NaN kept is never replaced; a new NaN always wins.
        let better = if is_max { x > *a } else { x < *a };
        let take = (*a == *a) & (better | (x != x));
        let (nv, ni) = (super::pick(take, x, *a), super::pick(take, j, *i));
        *a = nv;
        *i = ni;
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
#[allow(clippy::eq_op)]
fn extreme_value_step<T: Element>(out: &mut [T], prev: &[T], row: &[T], is_max: bool) {
    for ((o, &a), &x) in out.iter_mut().zip(prev).zip(row) {
        let better = if is_max { x > a } else { x < a };
        let take = (a == a) & (better | (x != x));
        *o = super::pick(take, x, a);
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn prod_step<T: Arith>(v: &mut [T], row: &[T]) {
    for (a, &x) in v.iter_mut().zip(row) {
        *a = a.mul(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Tensor;

    /// Values made as they are summed give the bits of summing them
    /// materialised, on one and two threads, for lengths below, at and
    /// across block and parallel boundaries.
    #[test]
    fn mapped_sums_equal_materialised_sums() {
        let value = |i: usize| ((i * 7919) % 1013) as f32 * 0.37 - 180.0;
        for n in [1, 63, 4096, 4097, 70_001, 1 << 20] {
            let data: Vec<f32> = (0..n).map(value).collect();
            let t = Tensor::from_vec(data, smallvec::smallvec![n]);
            for th in [1, 2] {
                crate::kernels::parallel::set_num_threads(th).unwrap();
                let want: f32 = sum_all(&t.view());
                let got: f32 = sum_mapped(n, |lo, out: &mut [f32]| {
                    for (k, o) in out.iter_mut().enumerate() {
                        *o = value(lo + k);
                    }
                });
                assert_eq!(got.to_bits(), want.to_bits(), "n = {n}, threads = {th}");
            }
        }
    }

    /// The row-adding path (reduced dims outside a contiguous kept run)
    /// against a direct per-output sum, on shapes that cross the tile and
    /// block sizes and the parallel threshold.
    /// `sum_slice`'s documented order, and `NanZero` reading NaN as zero
    /// in it (the same bits as summing a zeroed copy).
    #[test]
    fn slice_sums_follow_the_documented_order() {
        for len in [0usize, 1, 15, 16, 63, 64, 65, 100, 1000, 4099] {
            let x: Vec<f32> = (0..len)
                .map(|i| ((i * 37) % 101) as f32 / 7.3 - 6.0)
                .collect();
            let mut acc = [0f32; 64];
            let full = len / 64 * 64;
            for (i, &v) in x[..full].iter().enumerate() {
                acc[i % 64] += v;
            }
            let sixteens = full + (len - full) / 16 * 16;
            for (i, &v) in x[full..sixteens].iter().enumerate() {
                acc[i % 16] += v;
            }
            let mut w = 32;
            while w > 0 {
                for k in 0..w {
                    acc[k] += acc[k + w];
                }
                w /= 2;
            }
            let want = x[sixteens..].iter().fold(acc[0], |a, &v| a + v);
            assert_eq!(sum_slice(&x, Plain).to_bits(), want.to_bits(), "{len}");
            let mut holes = x.clone();
            for (i, v) in holes.iter_mut().enumerate() {
                if i % 5 == 2 {
                    *v = f32::NAN;
                }
            }
            let zeroed: Vec<f32> = holes
                .iter()
                .map(|&v| if v.is_nan() { 0.0 } else { v })
                .collect();
            assert_eq!(
                sum_slice(&holes, NanZero).to_bits(),
                sum_slice(&zeroed, Plain).to_bits()
            );
        }
    }

    #[test]
    fn summing_leading_dims_matches_a_direct_sum() {
        for &(rows, cols) in &[(3, 5), (129, 7), (1000, 300), (257, 5000), (70_000, 3)] {
            let data: Vec<f64> = (0..rows * cols).map(|i| (i % 17) as f64 - 8.0).collect();
            let t = Tensor::from_vec(data.clone(), smallvec::smallvec![rows, cols]);
            let got = sum_dims::<f64>(&t.view(), &[true, false]);
            for (j, g) in got.iter().enumerate() {
                let want: f64 = (0..rows).map(|i| data[i * cols + j]).sum();
                assert_eq!(*g, want, "{rows}x{cols} column {j}");
            }
        }
    }
}

#[cfg(test)]
mod extreme_tests {
    use super::*;

    /// `extreme_mid` against a direct scan per column: first occurrence of
    /// ties, the first NaN wins, on one and two threads.
    #[test]
    fn column_extremes_match_a_direct_scan() {
        for &(outer, n, inner) in &[(1, 5, 3), (3, 40, 1000), (2, 1, 7), (1, 300, 2000)] {
            let data: Vec<f32> = (0..outer * n * inner)
                .map(|i| {
                    if i % 331 == 7 {
                        f32::NAN
                    } else {
                        ((i * 7919) % 23) as f32 - 11.0
                    }
                })
                .collect();
            for t in [1, 2] {
                crate::kernels::parallel::set_num_threads(t).unwrap();
                for is_max in [true, false] {
                    let (v, ix) = extreme_mid(&data, outer, n, inner, is_max);
                    for o in 0..outer {
                        for c in 0..inner {
                            let col: Vec<f32> =
                                (0..n).map(|j| data[(o * n + j) * inner + c]).collect();
                            let want = match col.iter().position(|x| x.is_nan()) {
                                Some(p) => p,
                                None => {
                                    let mut b = 0;
                                    for j in 1..n {
                                        if (is_max && col[j] > col[b])
                                            || (!is_max && col[j] < col[b])
                                        {
                                            b = j;
                                        }
                                    }
                                    b
                                }
                            };
                            assert_eq!(ix[o * inner + c], want as i64);
                            assert_eq!(v[o * inner + c].to_bits(), col[want].to_bits());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn products_and_squares_of_slices() {
        let s: Vec<f64> = (1..=40).map(|i| 1.0 + i as f64 / 64.0).collect();
        let p: f64 = s.iter().product();
        assert!((prod_slice(&s) - p).abs() <= p * 1e-14);
        let ints: Vec<i64> = vec![2, -3, 5, 7, 1, 1, -1, 2, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2];
        assert_eq!(prod_slice(&ints), ints.iter().product::<i64>());
        let data: Vec<f64> = (0..10_000).map(|i| (i % 7) as f64 - 3.0).collect();
        let want: f64 = data.iter().map(|x| x * x).sum();
        assert_eq!(sum_sq_rows(&data, 1, 10_000)[0], want);
        let rows = sum_sq_rows(&data, 100, 100);
        for r in 0..100 {
            assert_eq!(
                rows[r],
                data[r * 100..(r + 1) * 100]
                    .iter()
                    .map(|x| x * x)
                    .sum::<f64>()
            );
        }
    }
}

//! Index-driven loops: gather/scatter along one dimension, flips, and
//! row-wise reductions over a contiguous `[rows, cols]` layout.
//!
//! Callers hand in contiguous index buffers; data operands may be strided
//! views. `gather_dim` and `scatter_dim` check their indices block by block
//! as they go (and give None for one out of range); the other loops trust
//! indices their callers validated.

use std::sync::atomic::{AtomicBool, Ordering};

use smallvec::SmallVec;

use super::vmath::{detected, isa, isa_loop, Isa};
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

isa_loop! {
    /// `*hit = true` when some index lies outside `0..size` (a negative one
    /// reads as a huge unsigned one). Branch-free: AVX2's 64-bit compares
    /// let the test run in vector lanes; the baseline has none.
    fn outside / outside_on<>(index: &[i64], size: usize, hit: &mut bool) where [] {
        let mut m = 0u64;
        for &i in index {
            m |= (i as u64 >= size as u64) as u64;
        }
        *hit = m != 0;
    }
}

/// Whether any index lies outside `0..size`.
pub fn any_outside(index: &[i64], size: usize) -> bool {
    let mut hit = false;
    for part in index.chunks(CHECK_BLOCK) {
        outside(part, size, &mut hit);
        if hit {
            return true;
        }
    }
    false
}

/// Indices bounds-checked at a time inside the loops below: a block is
/// tested just before it is used, so the pass that uses it reads it from L1
/// (a separate pass over the whole index first read every index from
/// memory twice, and took a third of `gather`'s time).
const CHECK_BLOCK: usize = 2048;

/// `out[p] = src[p with dim replaced by index[p]]` over the index's shape,
/// or None when an index lies outside `0..src.shape[dim]` (each block of
/// indices is checked before it is read). The index's shape is read as
/// `[outer, k, inner]`; the source's offsets of the outer and inner
/// positions are tabulated once, so each element costs one load from each
/// table, and rows go over the pool in parallel.
pub fn gather_dim<T: Element>(
    src: &View,
    dim: usize,
    index: &[i64],
    ishape: &[usize],
) -> Option<Vec<T>> {
    // An empty index may still have a huge size beside its zero one
    // (`[2**62, 0]`): nothing to tabulate or loop over.
    if ishape.contains(&0) {
        return Some(Vec::new());
    }
    let n: usize = ishape.iter().product();
    let size = src.shape[dim];
    let (outer, k, inner) = split3(ishape, dim);
    let so = offsets_of(&ishape[..dim], &src.strides[..dim]);
    let si = offsets_of(&ishape[dim + 1..], &src.strides[dim + 1..]);
    let sd = src.strides[dim];
    let base = SendPtr(src.ptr::<T>());
    let bad = AtomicBool::new(false);
    let out = build_vec(n, |out| {
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
                // SAFETY: each block of indices is checked against the
                // source's size before it is read (a block that fails is
                // written as zeros, and the result is dropped); each unit
                // writes only its own rows of the output.
                unsafe {
                    let dst = o.get().add(u * inner).cast::<T>();
                    let src = base.get().add(row);
                    if inner == 1 {
                        for (b, ix) in index[u..end].chunks(CHECK_BLOCK).enumerate() {
                            let d = dst.add(b * CHECK_BLOCK);
                            if any_outside(ix, size) {
                                bad.store(true, Ordering::Relaxed);
                                std::ptr::write_bytes(d, 0, ix.len());
                            } else if sd == 1 {
                                for (c, &i) in ix.iter().enumerate() {
                                    *d.add(c) = *src.add(i as usize);
                                }
                            } else {
                                for (c, &i) in ix.iter().enumerate() {
                                    *d.add(c) = *src.add(i as usize * sd);
                                }
                            }
                        }
                    } else {
                        for w in 0..end - u {
                            let ix = &index[(u + w) * inner..(u + w + 1) * inner];
                            let d = dst.add(w * inner);
                            if any_outside(ix, size) {
                                bad.store(true, Ordering::Relaxed);
                                std::ptr::write_bytes(d, 0, inner);
                                continue;
                            }
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
    });
    (!bad.into_inner()).then_some(out)
}

/// What a scatter's destination holds before the writes.
pub enum Base<'a> {
    /// A copy of this view (of the destination's shape).
    Copy(&'a View),
    /// Zeros.
    Zeros,
}

/// How a scatter meets the value a destination element holds: replaced,
/// added to, multiplied, or kept as the larger or the smaller (NaN wins,
/// as in PyTorch's `scatter_reduce`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    Write,
    Add,
    Mul,
    Max,
    Min,
}

impl Combine {
    /// `Add` when accumulating, else `Write`.
    pub fn adding(accumulate: bool) -> Self {
        if accumulate {
            Self::Add
        } else {
            Self::Write
        }
    }
}

/// The offsets a scatter along one dimension writes through: the index's
/// shape read as `[outer, k, inner]`, the destination's and the source's
/// offsets of every outer and inner position, and their steps along the
/// dimension. The destination may be any layout without overlaps.
struct ScatterPlan<'a> {
    index: &'a [i64],
    k: usize,
    inner: usize,
    size: usize,
    dout: Vec<usize>,
    din: Vec<usize>,
    sout: Vec<usize>,
    sin: Vec<usize>,
    dd: usize,
    sd: usize,
    combine: Combine,
}

impl<'a> ScatterPlan<'a> {
    fn new(
        index: &'a [i64],
        ishape: &[usize],
        dim: usize,
        (dshape, dstrides): (&[usize], &[usize]),
        src: &View,
        combine: Combine,
    ) -> Self {
        let (_, k, inner) = split3(ishape, dim);
        Self {
            index,
            k,
            inner,
            size: dshape[dim],
            dout: offsets_of(&ishape[..dim], &dstrides[..dim]),
            din: offsets_of(&ishape[dim + 1..], &dstrides[dim + 1..]),
            sout: offsets_of(&ishape[..dim], &src.strides[..dim]),
            sin: offsets_of(&ishape[dim + 1..], &src.strides[dim + 1..]),
            dd: dstrides[dim],
            sd: src.strides[dim],
            combine,
        }
    }

    /// The indices of outer position `o`.
    fn block(&self, o: usize) -> &[i64] {
        &self.index[o * self.k * self.inner..(o + 1) * self.k * self.inner]
    }

    /// Applies rows `j` of outer position `o`, columns `c0..c1`, to
    /// destination positions along the dimension in `r0..r1` only, by the
    /// plan's [`Combine`].
    ///
    /// # Safety
    /// The block's indices lie in `0..size`; `dst` and `src` are valid for
    /// every offset the plan holds; no other writer touches the elements
    /// these positions reach.
    unsafe fn apply<T: Element + crate::tensor::Arith>(
        &self,
        dst: *mut T,
        src: *const T,
        o: usize,
        cols: (usize, usize),
        rows: (usize, usize),
    ) {
        match self.combine {
            Combine::Write => self.apply_with(dst, src, o, cols, rows, |_, v| v),
            Combine::Add => self.apply_with(dst, src, o, cols, rows, |d: T, v| d.add(v)),
            Combine::Mul => self.apply_with(dst, src, o, cols, rows, |d: T, v| d.mul(v)),
            Combine::Max => self.apply_with(dst, src, o, cols, rows, |d: T, v| d.max_of(v)),
            Combine::Min => self.apply_with(dst, src, o, cols, rows, |d: T, v| d.min_of(v)),
        }
    }

    /// [`Self::apply`] with the combination `f(held, written)` inlined.
    #[inline(always)]
    unsafe fn apply_with<T: Element>(
        &self,
        dst: *mut T,
        src: *const T,
        o: usize,
        (c0, c1): (usize, usize),
        (r0, r1): (usize, usize),
        f: impl Fn(T, T) -> T,
    ) {
        let (block, inner, dd, sd) = (self.block(o), self.inner, self.dd, self.sd);
        if inner == 1 {
            // Along the last dimension with the whole destination row owned:
            // one tight loop per row, no slices or range tests per element.
            let (src, dst) = (
                src.add(self.sout[o] + self.sin[0]),
                dst.add(self.dout[o] + self.din[0]),
            );
            if dd == 1 && sd == 1 {
                for (j, &i) in block.iter().enumerate() {
                    let slot = dst.add(i as usize);
                    *slot = f(*slot, *src.add(j));
                }
            } else {
                for (j, &i) in block.iter().enumerate() {
                    let slot = dst.add(i as usize * dd);
                    *slot = f(*slot, *src.add(j * sd));
                }
            }
            return;
        }
        for j in 0..self.k {
            let ix = &block[j * inner..(j + 1) * inner];
            let cols = ix[c0..c1]
                .iter()
                .zip(&self.sin[c0..c1])
                .zip(&self.din[c0..c1]);
            for ((&i, &si), &di) in cols {
                let i = i as usize;
                if i < r0 || i >= r1 {
                    continue;
                }
                let v = *src.add(self.sout[o] + j * sd + si);
                let slot = dst.add(self.dout[o] + i * dd + di);
                *slot = f(*slot, v);
            }
        }
    }

    /// Every write, over the pool. Parallel writes never meet: positions
    /// that differ outside the dimension land in different elements, so the
    /// work is split by the outer positions (or, when there is one, by the
    /// inner columns; a single column runs in one pass).
    ///
    /// # Safety
    /// As [`Self::apply`], for every index.
    unsafe fn run<T: Element + crate::tensor::Arith>(
        &self,
        dst: SendPtr<T>,
        src: SendPtr<T>,
        outer: usize,
    ) {
        let (k, inner, size) = (self.k, self.inner, self.size);
        if outer > 1 {
            super::copy::par_units(outer, k * inner, |lo, hi| {
                let (dst, src) = (dst, src);
                for o in lo..hi {
                    self.apply(dst.get(), src.get(), o, (0, inner), (0, size));
                }
            });
        } else if inner > 1 {
            super::copy::par_units(inner, k, |lo, hi| {
                let (dst, src) = (dst, src);
                self.apply(dst.get(), src.get(), 0, (lo, hi), (0, size));
            });
        } else {
            // One column, in one pass. Splitting the destination makes
            // every part read the whole index and source (and select or
            // branch per element): on two cores `put` of a shuffled
            // million ran 1.7x slower than this loop alone.
            self.apply(dst.get(), src.get(), 0, (0, 1), (0, size));
        }
    }
}

/// A new tensor's elements: `base` with `src[p]` written (or, with
/// `accumulate`, added) at `p with dim replaced by index[p]`, for a
/// destination of shape `dshape`; None when an index lies outside
/// `0..dshape[dim]` (the partly written buffer is dropped).
///
/// When the index covers every outer position of the destination (its
/// shape equals `dshape` before `dim`), each outer position's block is made
/// (copied or zeroed) right before its writes, while it sits in cache: no
/// separate pass to fill the whole buffer first.
///
/// Every element receives its writes in the index's order whatever the
/// split, so the result is the same on any thread count (and a repeated
/// index keeps the last write, as the serial loop did).
pub fn scatter_dim<T: Element + crate::tensor::Arith>(
    base: Base,
    dshape: &[usize],
    dim: usize,
    index: &[i64],
    ishape: &[usize],
    src: &View,
    accumulate: bool,
) -> Option<Vec<T>> {
    let total: usize = dshape.iter().product();
    let (outer, k, inner) = split3(ishape, dim);
    let size = dshape[dim];
    // The contiguous base to copy from block by block (None: zeros), when
    // the blocks can be made on the way.
    let blockwise: Option<Option<&[T]>> = match &base {
        Base::Copy(v) => v.as_slice::<T>().map(Some),
        Base::Zeros => Some(None),
    };
    if ishape.contains(&0) {
        return Some(match base {
            Base::Copy(v) => super::copy::gather::<T>(v),
            Base::Zeros => crate::error::filled_vec(total, T::zero()),
        });
    }
    if total == 0 {
        // The index fits the destination outside `dim`, so it is `dim` that
        // is empty: no index is in range.
        return None;
    }
    let dstrides = crate::tensor::contiguous_strides(dshape);
    let plan = ScatterPlan::new(
        index,
        ishape,
        dim,
        (dshape, &dstrides),
        src,
        Combine::adding(accumulate),
    );
    let sp = SendPtr(src.ptr::<T>());
    let slab = total / dshape[..dim].iter().product::<usize>();
    if let (Some(from), true) = (blockwise, outer > 1 && ishape[..dim] == dshape[..dim]) {
        let bad = AtomicBool::new(false);
        let out = build_vec(total, |out| {
            let dp = SendPtr(out.as_mut_ptr().cast::<T>());
            super::copy::par_units(outer, k * inner + slab, |lo, hi| {
                for o in lo..hi {
                    // SAFETY: outer position `o` owns elements
                    // `o * slab..(o + 1) * slab` of the destination (the
                    // index covers every outer position, so `dout[o]` is
                    // `o * slab`), and a base holds `total` elements. Its
                    // indices are checked before they are used.
                    unsafe {
                        let at = dp.get().add(o * slab);
                        match from {
                            Some(b) => {
                                std::ptr::copy_nonoverlapping(b.as_ptr().add(o * slab), at, slab)
                            }
                            None => std::ptr::write_bytes(at, 0, slab),
                        }
                        if any_outside(plan.block(o), size) {
                            bad.store(true, Ordering::Relaxed);
                            continue;
                        }
                        plan.apply(dp.get(), sp.get(), o, (0, inner), (0, size));
                    }
                }
            });
        });
        return (!bad.into_inner()).then_some(out);
    }
    if any_outside(index, size) {
        return None;
    }
    let mut buf: Vec<T> = match base {
        Base::Copy(v) => super::copy::gather::<T>(v),
        Base::Zeros => crate::error::filled_vec(total, T::zero()),
    };
    // SAFETY: the indices are in range; the buffer is the contiguous
    // destination the plan was made for, and the source's offsets are its own.
    unsafe { plan.run(SendPtr(buf.as_mut_ptr()), sp, outer) };
    Some(buf)
}

/// `src[p]` combined into `dst`'s own memory at `p with dim replaced by
/// index[p]`: `t.scatter_(dim, index, src)` with nothing to record, or a
/// `scatter_reduce` into its result. False, with nothing written, when an index lies outside
/// `0..dst.shape[dim]`, so bad input leaves the destination as it was.
///
/// # Safety
/// `dst` has no overlapping elements and shares no memory with `src`, and
/// nothing else reads or writes it meanwhile; `index` has `ishape`'s
/// elements, and `ishape` fits `dst` (outside `dim`) and `src`.
pub unsafe fn scatter_dim_into<T: Element + crate::tensor::Arith>(
    dst: &View,
    dim: usize,
    index: &[i64],
    ishape: &[usize],
    src: &View,
    combine: Combine,
) -> bool {
    if ishape.contains(&0) {
        return true;
    }
    let size = dst.shape[dim];
    if size == 0 || any_outside(index, size) {
        return false;
    }
    let plan = ScatterPlan::new(index, ishape, dim, (&dst.shape, &dst.strides), src, combine);
    let outer = split3(ishape, dim).0;
    plan.run(SendPtr(dst.ptr::<T>()), SendPtr(src.ptr::<T>()), outer);
    true
}

/// `out[p] = if flags[p] { value[j] } else { x[p] }`, where `j` counts the
/// true flags before `p` (a `value` of one element serves every true flag):
/// `x[mask] = value` in one pass, a select and a cursor that advances by
/// the flag, with no list of positions built first.
///
/// # Safety
/// `x` and `out` must be valid for `flags.len()` elements (they may be the
/// same memory: each element is read before it is written); `value` must
/// be non-empty and hold an element for every true flag, or just one.
pub unsafe fn masked_merge<T: Copy>(flags: &[bool], x: *const T, value: &[T], out: *mut T) {
    let last = value.len() - 1;
    let mut j = 0usize;
    for (p, &f) in flags.iter().enumerate() {
        let v = *value.get_unchecked(j.min(last));
        *out.add(p) = super::pick(f, v, *x.add(p));
        j += f as usize;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_cover_everything_once() {
        let data: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
        let sums = map_rows(&data, 1000, 100, |r| r.iter().sum::<f64>());
        assert_eq!(sums.len(), 1000);
        assert_eq!(sums[1], (100..200).map(|i| i as f64).sum::<f64>());
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
                let g = gather_dim::<f64>(&src, dim, &idx, &ishape).unwrap();
                for i in 0..ishape[0] {
                    for j in 0..ishape[1] {
                        let ix = idx[i * ishape[1] + j] as usize;
                        let want = if dim == 0 { at(ix, j) } else { at(i, ix) };
                        assert_eq!(g[i * ishape[1] + j], want);
                    }
                }
                let halves = Tensor::from_vec(vec![0.5f64; b * a], smallvec::smallvec![b, a]);
                let hv = halves.view();
                for (acc, zeros) in [(false, false), (true, false), (true, true)] {
                    let base = if zeros { Base::Zeros } else { Base::Copy(&hv) };
                    let dst =
                        scatter_dim::<f64>(base, &[b, a], dim, &idx, &ishape, &src, acc).unwrap();
                    let mut want = vec![if zeros { 0.0 } else { 0.5f64 }; b * a];
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

    /// The bounds test on every instruction set, at every position of
    /// blocks short and long: negative, equal to the size, and far out.
    #[test]
    fn outside_finds_every_bad_index() {
        for isa in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
            for len in [0usize, 1, 3, 4, 5, 8, 17, 64, 2047, 2048, 2049, 5000] {
                let ok: Vec<i64> = (0..len as i64).map(|i| (i * 7) % 10).collect();
                let mut hit = true;
                outside_on(isa, &ok, 10, &mut hit);
                assert!(!hit);
                assert!(!any_outside(&ok, 10));
                for at in [0, len / 2, len.saturating_sub(1)] {
                    for bad in [-1, 10, i64::MIN, i64::MAX] {
                        if len == 0 {
                            continue;
                        }
                        let mut x = ok.clone();
                        x[at] = bad;
                        outside_on(isa, &x, 10, &mut hit);
                        assert!(hit, "{isa:?} {len} {at} {bad}");
                        assert!(any_outside(&x, 10));
                    }
                }
            }
        }
    }

    /// Scatters whose index covers every outer position (each block made
    /// just before its writes, from a contiguous base or zeros) and ones
    /// that do not or whose base is strided, against direct loops; an index
    /// out of range anywhere gives None, from `gather_dim` too.
    #[test]
    fn blockwise_scatter_and_bounds_match_direct_loops() {
        let mut seed = 3u64;
        // (destination shape, index shape, dim)
        let cases: [(&[usize], &[usize], usize); 7] = [
            (&[6, 5, 4], &[6, 7, 3], 1),
            (&[6, 5, 4], &[6, 5, 9], 2),
            (&[6, 5, 4], &[4, 5, 2], 2),
            (&[9, 1], &[9, 3], 1),
            (&[40, 33], &[40, 33], 1),
            (&[40, 33], &[40, 33], 0),
            (&[3, 2, 2], &[3, 2, 2], 0),
        ];
        for (dshape, ishape, dim) in cases {
            let total: usize = dshape.iter().product();
            let n: usize = ishape.iter().product();
            let size = dshape[dim];
            let idx: Vec<i64> = (0..n)
                .map(|_| (lcg(&mut seed) % size as u64) as i64)
                .collect();
            let sshape: Vec<usize> = ishape.iter().map(|&s| s + 1).collect();
            let src_t = Tensor::from_vec(
                (0..sshape.iter().product::<usize>())
                    .map(|i| i as f64 * 0.5)
                    .collect(),
                sshape.iter().copied().collect(),
            );
            let sv = src_t.view();
            let sst = crate::tensor::contiguous_strides(&sshape);
            let base_t = Tensor::from_vec(
                (0..total).map(|i| 1000.0 + i as f64).collect(),
                dshape.iter().copied().collect(),
            );
            let bv = base_t.view();
            let dst_st = crate::tensor::contiguous_strides(dshape);
            // The same base values through a strided view (no block copies).
            let rev: Vec<usize> = dshape.iter().rev().copied().collect();
            let base_tr = Tensor::from_vec(
                {
                    let mut v = vec![0.0; total];
                    for_each_index(dshape, |lin, p| {
                        let rst = crate::tensor::contiguous_strides(&rev);
                        let at: usize = p.iter().rev().zip(&rst).map(|(&i, &s)| i * s).sum();
                        v[at] = 1000.0 + lin as f64;
                    });
                    v
                },
                rev.iter().copied().collect(),
            );
            let rst = crate::tensor::contiguous_strides(&rev);
            let strided = View {
                storage: base_tr.view().storage.clone(),
                shape: dshape.iter().copied().collect(),
                strides: rst.iter().rev().copied().collect(),
                offset: 0,
            };
            for th in [1, 2] {
                crate::kernels::parallel::set_num_threads(th).unwrap();
                for (acc, which) in [(false, 0), (true, 0), (true, 1), (false, 2), (true, 2)] {
                    let base = match which {
                        0 => Base::Copy(&bv),
                        1 => Base::Zeros,
                        _ => Base::Copy(&strided),
                    };
                    let got = scatter_dim::<f64>(base, dshape, dim, &idx, ishape, &sv, acc);
                    let mut want: Vec<f64> = (0..total)
                        .map(|i| if which == 1 { 0.0 } else { 1000.0 + i as f64 })
                        .collect();
                    for_each_index(ishape, |lin, p| {
                        let v =
                            p.iter().zip(&sst).map(|(&i, &s)| i * s).sum::<usize>() as f64 * 0.5;
                        let at: usize = p
                            .iter()
                            .enumerate()
                            .map(|(d, &i)| if d == dim { idx[lin] as usize } else { i } * dst_st[d])
                            .sum();
                        want[at] = if acc { want[at] + v } else { v };
                    });
                    assert_eq!(
                        got.unwrap(),
                        want,
                        "{dshape:?} {ishape:?} {dim} {acc} {which} {th}"
                    );
                }
                for bad in [-1, size as i64] {
                    for at in [0, n / 2, n - 1] {
                        let mut b = idx.clone();
                        b[at] = bad;
                        for base in [Base::Copy(&bv), Base::Zeros, Base::Copy(&strided)] {
                            assert!(scatter_dim::<f64>(base, dshape, dim, &b, ishape, &sv, true)
                                .is_none());
                        }
                        let mut gb = idx.clone();
                        gb[at] = if bad < 0 { -1 } else { sshape[dim] as i64 };
                        assert!(gather_dim::<f64>(&sv, dim, &gb, ishape).is_none());
                    }
                }
            }
        }
    }

    /// The masked merge, out of place and in place, with a value per true
    /// flag and a single one, against a direct loop.
    #[test]
    fn masked_merge_takes_values_in_order() {
        let mut seed = 11u64;
        for n in [1usize, 2, 7, 64, 1000] {
            let flags: Vec<bool> = (0..n).map(|_| lcg(&mut seed).is_multiple_of(3)).collect();
            let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let k = flags.iter().filter(|&&f| f).count();
            let many: Vec<f32> = (0..k.max(1)).map(|i| -1.0 - i as f32).collect();
            for value in [&many[..], &[-7.5f32][..]] {
                let mut want = x.clone();
                let mut j = 0;
                for (w, &f) in want.iter_mut().zip(&flags) {
                    if f {
                        *w = value[j.min(value.len() - 1)];
                        j += 1;
                    }
                }
                let mut out = vec![0f32; n];
                let mut inplace = x.clone();
                unsafe {
                    masked_merge(&flags, x.as_ptr(), value, out.as_mut_ptr());
                    let p = inplace.as_mut_ptr();
                    masked_merge(&flags, p, value, p);
                }
                assert_eq!(out, want);
                assert_eq!(inplace, want);
            }
        }
    }

    /// `scatter_dim_into` over a transposed destination, by every
    /// [`Combine`], against a direct loop on one and two threads; an index
    /// out of range writes nothing.
    #[test]
    fn scatter_into_a_strided_destination_combines_in_index_order() {
        let mut seed = 11u64;
        let (rows, cols, k) = (9usize, 300usize, 7usize);
        for dim in [0usize, 1] {
            let ishape = if dim == 0 { [k, cols] } else { [rows, k] };
            let size = if dim == 0 { rows } else { cols };
            let idx: Vec<i64> = (0..ishape[0] * ishape[1])
                .map(|_| (lcg(&mut seed) % size as u64) as i64)
                .collect();
            let src = Tensor::from_vec(
                (0..ishape[0] * ishape[1])
                    .map(|_| (lcg(&mut seed) % 19) as f64 - 9.0)
                    .collect::<Vec<f64>>(),
                smallvec::smallvec![ishape[0], ishape[1]],
            );
            let sv = src.view();
            let start: Vec<f64> = (0..rows * cols).map(|i| (i % 7) as f64 - 3.0).collect();
            for combine in [
                Combine::Write,
                Combine::Add,
                Combine::Mul,
                Combine::Max,
                Combine::Min,
            ] {
                // The reference, on a row-major [rows, cols] array.
                let mut want = start.clone();
                for p in 0..ishape[0] {
                    for q in 0..ishape[1] {
                        let i = idx[p * ishape[1] + q] as usize;
                        let at = if dim == 0 { i * cols + q } else { p * cols + i };
                        let v = sv.as_slice::<f64>().unwrap()[p * ishape[1] + q];
                        want[at] = match combine {
                            Combine::Write => v,
                            Combine::Add => want[at] + v,
                            Combine::Mul => want[at] * v,
                            Combine::Max => want[at].max(v),
                            Combine::Min => want[at].min(v),
                        };
                    }
                }
                for th in [1, 2] {
                    crate::kernels::parallel::set_num_threads(th).unwrap();
                    // The destination held as [cols, rows] memory, seen transposed.
                    let mem: Vec<f64> = (0..rows * cols)
                        .map(|m| start[(m % rows) * cols + m / rows])
                        .collect();
                    let t = Tensor::from_vec(mem, smallvec::smallvec![cols, rows]);
                    let mut dv = t.view().clone();
                    dv.shape = smallvec::smallvec![rows, cols];
                    dv.strides = smallvec::smallvec![1, rows];
                    // SAFETY: a fresh destination, no overlap, separate source.
                    assert!(unsafe {
                        scatter_dim_into::<f64>(&dv, dim, &idx, &ishape, &sv, combine)
                    });
                    let got = t.to_vec::<f64>();
                    for r in 0..rows {
                        for c in 0..cols {
                            assert_eq!(
                                got[c * rows + r],
                                want[r * cols + c],
                                "{combine:?} dim {dim}"
                            );
                        }
                    }
                    let mut bad = idx.clone();
                    bad[idx.len() / 2] = size as i64;
                    // SAFETY: as above.
                    assert!(!unsafe {
                        scatter_dim_into::<f64>(&dv, dim, &bad, &ishape, &sv, combine)
                    });
                    assert_eq!(t.to_vec::<f64>(), got, "nothing written for a bad index");
                }
            }
        }
    }

    #[test]
    fn one_column_scatter_keeps_the_index_order() {
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
        // Repeated indices: added up, or the last write kept, on any split.
        for acc in [true, false] {
            let mut runs = Vec::new();
            for th in [1, 2] {
                crate::kernels::parallel::set_num_threads(th).unwrap();
                let dst = scatter_dim::<f32>(Base::Zeros, &[n], 0, &idx, &[idx.len()], &sv, acc);
                runs.push(dst.unwrap());
            }
            let mut want = vec![0f32; n];
            for (j, &i) in idx.iter().enumerate() {
                let v = (j % 97) as f32 * 0.25;
                want[i as usize] = if acc { want[i as usize] + v } else { v };
            }
            assert_eq!(runs[0], want);
            assert_eq!(runs[1], want);
        }
    }
}

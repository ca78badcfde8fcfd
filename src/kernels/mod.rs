//! Loops over raw buffers: elementwise maps, reductions and GEMM.
//!
//! Nothing here knows about autograd or Python. Every loop writes a fresh
//! contiguous output (or, for in-place ops, a caller-checked view) and goes
//! parallel on our rayon-backed pool only above [`GRAIN`] elements, because a
//! parallel loop over a small array costs more than it saves.

pub(crate) mod attention;
pub(crate) mod bessel;
pub mod bf16_gemm;
pub mod conv;
mod conv_direct;
pub(crate) mod convert;
pub(crate) mod copy;
pub(crate) mod ctc;
pub(crate) mod distance;
pub(crate) mod elementwise;
// Public for its criterion bench; `py::compile` replays captured elementwise runs with it.
pub(crate) mod embedding;
mod extreme_rows;
pub mod fused;
pub(crate) mod grid_sample;
pub(crate) mod index;
pub(crate) mod math;
pub(crate) mod matmul;
pub mod norm;
mod norm_f32;
pub(crate) mod normal_fns;
pub(crate) mod optim;
pub(crate) mod outer;
pub(crate) mod parallel;
pub use parallel::set_num_threads;
pub(crate) mod max_pool;
pub(crate) mod pool;
pub(crate) mod reduce;
pub(crate) mod rnn;
pub(crate) mod rnn_gemm;
pub(crate) mod scan;
pub mod simd;
pub(crate) mod small_gemm;
pub(crate) mod softmax;
pub(crate) mod sort;
pub(crate) mod special;
mod transpose;
pub mod trig_f32;
pub(crate) mod vmath;

use std::mem::MaybeUninit;

use smallvec::SmallVec;

/// Elements below which loops stay serial (PyTorch uses the same grain size).
pub const GRAIN: usize = 32_768;

/// A raw pointer that may cross into pool threads; the loops that use it
/// touch disjoint elements or only read.
pub struct SendPtr<T>(pub *mut T);
// Not derived: a derive would require `T: Copy`, and the pointer is Copy for any T.
impl<T> Clone for SendPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SendPtr<T> {}
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer. A method call makes a closure capture the whole
    /// (`Send`) wrapper rather than just its raw-pointer field.
    #[inline(always)]
    pub fn get(self) -> *mut T {
        self.0
    }
}

/// `if c { a } else { b }` as a select with no branch: given a branch, LLVM
/// sinks each side's work into it and, inside the run-time-dispatched loops,
/// leaves a scalar loop that mispredicts on unordered data (smooth_l1_loss ran
/// at 0.1x PyTorch on Zen 3). Indexing a pair by the condition is a select
/// from the start, which vectorises to a blend.
#[inline(always)]
pub fn pick<T: Copy>(c: bool, a: T, b: T) -> T {
    [b, a][c as usize]
}

/// Allocates `n` elements and lets `fill` initialise every one of them.
pub fn build_vec<U: Copy + Send>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<U>])) -> Vec<U> {
    let mut v: Vec<U> = crate::error::alloc_vec(n);
    fill(&mut v.spare_capacity_mut()[..n]);
    // SAFETY: `fill` writes all `n` slots (each caller loops over the full range).
    unsafe { v.set_len(n) };
    v
}

/// Merges adjacent dimensions that every operand walks contiguously, and
/// drops size-1 dimensions, so loops run over as few and as long rows as possible.
pub fn coalesce<const N: usize>(
    shape: &[usize],
    strides: [&[usize]; N],
) -> (SmallVec<[usize; 4]>, [SmallVec<[usize; 4]>; N]) {
    let mut out_shape: SmallVec<[usize; 4]> = SmallVec::new();
    let mut out_strides: [SmallVec<[usize; 4]>; N] = std::array::from_fn(|_| SmallVec::new());
    for d in 0..shape.len() {
        if shape[d] == 1 {
            continue;
        }
        if let Some(&last) = out_shape.last() {
            let mergeable = (0..N).all(|k| {
                let prev = *out_strides[k].last().unwrap_or(&0);
                prev == strides[k][d] * shape[d]
            });
            if mergeable {
                let len = out_shape.len();
                out_shape[len - 1] = last * shape[d];
                for k in 0..N {
                    let l = out_strides[k].len();
                    out_strides[k][l - 1] = strides[k][d];
                }
                continue;
            }
        }
        out_shape.push(shape[d]);
        for k in 0..N {
            out_strides[k].push(strides[k][d]);
        }
    }
    (out_shape, out_strides)
}

/// Walks linear indices `start..end` of the row-major index space `shape`,
/// calling `row(pos, len, offsets)` for each run along the last dimension;
/// `offsets[k]` is operand k's element offset at `pos`.
pub fn for_each_row<const N: usize>(
    shape: &[usize],
    strides: &[SmallVec<[usize; 4]>; N],
    start: usize,
    end: usize,
    mut row: impl FnMut(usize, usize, [usize; N]),
) {
    let nd = shape.len();
    if start >= end {
        return;
    }
    if nd == 0 {
        row(0, 1, [0; N]);
        return;
    }
    let mut idx: SmallVec<[usize; 4]> = SmallVec::from_elem(0, nd);
    let mut rem = start;
    for d in (0..nd).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    let mut offs = [0usize; N];
    for k in 0..N {
        offs[k] = (0..nd).map(|d| idx[d] * strides[k][d]).sum();
    }
    let inner = shape[nd - 1];
    let mut pos = start;
    while pos < end {
        // Whole rows down the second-last dimension in a tight loop: the
        // general step below carries through the dimensions after every
        // row, which cost more than the row itself for rows of 8-32.
        let rows = if nd >= 2 && idx[nd - 1] == 0 && inner > 0 {
            (shape[nd - 2] - idx[nd - 2]).min((end - pos) / inner)
        } else {
            0
        };
        if rows > 0 {
            let d2 = nd - 2;
            // Each row's offsets are made from loop invariants: updated in
            // place, they went through memory, and a 16-byte load of two
            // 8-byte stores stalled every row.
            let step: [usize; N] = std::array::from_fn(|k| strides[k][d2]);
            let base = offs;
            for r in 0..rows {
                row(
                    pos + r * inner,
                    inner,
                    std::array::from_fn(|k| base[k] + r * step[k]),
                );
            }
            pos += rows * inner;
            for k in 0..N {
                offs[k] += rows * step[k];
            }
            idx[d2] += rows;
            carry(shape, strides, &mut idx, &mut offs, d2);
            continue;
        }
        let len = (inner - idx[nd - 1]).min(end - pos);
        row(pos, len, offs);
        pos += len;
        idx[nd - 1] += len;
        for k in 0..N {
            offs[k] += len * strides[k][nd - 1];
        }
        carry(shape, strides, &mut idx, &mut offs, nd - 1);
    }
}

/// After dimension `d` of `idx` was advanced: every dimension from `d` down
/// that reached its size wraps to 0 and steps the one before it, the
/// offsets following.
#[inline(always)]
fn carry<const N: usize>(
    shape: &[usize],
    strides: &[SmallVec<[usize; 4]>; N],
    idx: &mut [usize],
    offs: &mut [usize; N],
    mut d: usize,
) {
    while d > 0 && idx[d] == shape[d] {
        for k in 0..N {
            offs[k] -= shape[d] * strides[k][d];
            offs[k] += strides[k][d - 1];
        }
        idx[d] = 0;
        d -= 1;
        idx[d] += 1;
    }
}

/// Runs `f(start, part)` on consecutive disjoint `chunk`-sized parts of
/// `out` as tasks of one parallel region (the caller has chosen to go parallel).
pub fn par_chunks_mut<T: Send>(out: &mut [T], chunk: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let n = out.len();
    let chunk = chunk.max(1);
    let o = SendPtr(out.as_mut_ptr());
    parallel::tasks(n.div_ceil(chunk), |ci| {
        let start = ci * chunk;
        let len = chunk.min(n - start);
        // SAFETY: the chunks are disjoint parts of `out`, which outlives the region.
        f(start, unsafe {
            std::slice::from_raw_parts_mut(o.get().add(start), len)
        });
    });
}

/// One run of the last dimension handed to [`drive_runs`]: `len` outputs
/// from `pos` (in the slice the callback gets), operand `k` from `offs[k]`.
#[derive(Clone, Copy, Debug)]
pub struct Run<const N: usize> {
    pub pos: usize,
    pub len: usize,
    pub offs: [usize; N],
}

/// Runs per call of [`drive_runs`]'s callback.
const RUNS: usize = 64;

/// [`drive`] for short rows: the runs are handed over up to [`RUNS`] at a
/// time, so one call (one instruction-set dispatch, one loop setup) covers
/// many rows. Broadcasts with rows of 8-64 elements spent most of their
/// time per row, outside the arithmetic.
pub fn drive_runs<const N: usize, U: Send>(
    out: &mut [MaybeUninit<U>],
    shape: &[usize],
    strides: &[SmallVec<[usize; 4]>; N],
    runs: impl Fn(&mut [MaybeUninit<U>], &[Run<N>]) + Sync + Send,
) {
    let n = out.len();
    let part = |start: usize, part: &mut [MaybeUninit<U>]| {
        let mut buf = [Run {
            pos: 0,
            len: 0,
            offs: [0; N],
        }; RUNS];
        let mut k = 0;
        for_each_row(
            shape,
            strides,
            start,
            start + part.len(),
            |pos, len, offs| {
                buf[k] = Run {
                    pos: pos - start,
                    len,
                    offs,
                };
                k += 1;
                if k == RUNS {
                    runs(part, &buf);
                    k = 0;
                }
            },
        );
        if k > 0 {
            runs(part, &buf[..k]);
        }
    };
    parallel::run(n, |threads| {
        if threads == 1 {
            part(0, out);
            return;
        }
        let chunk = GRAIN.max(n.div_ceil(threads * 4));
        par_chunks_mut(out, chunk, part);
    })
}

/// Fills `out` (row-major over `shape`) row by row, in parallel above the
/// grain size. `row(out_row, offsets)` fills one run of the last dimension.
pub fn drive<const N: usize, U: Send>(
    out: &mut [MaybeUninit<U>],
    shape: &[usize],
    strides: &[SmallVec<[usize; 4]>; N],
    row: impl Fn(&mut [MaybeUninit<U>], [usize; N]) + Sync + Send,
) {
    let n = out.len();
    parallel::run(n, |threads| {
        if threads == 1 {
            for_each_row(shape, strides, 0, n, |pos, len, offs| {
                row(&mut out[pos..pos + len], offs)
            });
            return;
        }
        let chunk = GRAIN.max(n.div_ceil(threads * 4));
        par_chunks_mut(out, chunk, |start, part| {
            for_each_row(
                shape,
                strides,
                start,
                start + part.len(),
                |pos, len, offs| row(&mut part[pos - start..pos - start + len], offs),
            );
        });
    })
}

/// Runs `f` over `0..n` split into contiguous ranges, in parallel above the grain size.
pub fn par_ranges(n: usize, f: impl Fn(usize, usize) + Sync + Send) {
    parallel::run(n, |threads| {
        if threads == 1 {
            f(0, n);
            return;
        }
        let chunk = GRAIN.max(n.div_ceil(threads * 4));
        parallel::tasks(n.div_ceil(chunk), |c| {
            f(c * chunk, ((c + 1) * chunk).min(n))
        });
    })
}

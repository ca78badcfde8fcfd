//! Whole-sequence loops of the LSTM and GRU layers: per time step one product
//! with the recurrent weight and one fused pass over the gates, forward and
//! backward. For the GRU, the input projections of all steps (and, in
//! backward, the weight gradients of all steps) are single large products done
//! by the caller. The LSTM layer takes its input and both weights: its
//! row-split loops compute each step's projection, and in backward the weight
//! gradients, on the rows a task owns (see `lstm_rows`).
//!
//! Layout: time steps are row blocks of a packed `[N, width]` matrix; step `t`
//! holds `batch_sizes[t]` rows (non-increasing) starting at `offsets[t]`. The
//! state is one `[B0, H]` buffer: a step updates its first `batch_sizes[t]`
//! rows and leaves the others, which is exactly how sequences of different
//! lengths start (reverse direction) and finish (forward direction).
//!
//! The LSTM loops are in `lstm`, the GRU loops in `gru`; this module holds
//! what they share: the step layout ([`Steps`]), the weight transpose, and
//! the pieces of the batch-split (row-split) loops, where a task owns a few
//! batch rows for the whole sequence.

use super::rnn_gemm::Real;

mod gru;
mod lstm;
mod lstm_rows;

pub(crate) use gru::{gru_backward, gru_forward};
pub(crate) use lstm::{lstm_backward, lstm_forward, LstmForwardRef, LstmNeeds, LstmWeights};

/// Shapes shared by the loops: hidden size, first (largest) batch, and the
/// packed row offset of each step.
pub(crate) struct Steps {
    pub hidden: usize,
    pub batch: usize,
    pub sizes: Vec<usize>,
    pub offsets: Vec<usize>,
    pub reverse: bool,
}

impl Steps {
    pub(crate) fn new(hidden: usize, sizes: Vec<usize>, reverse: bool) -> Steps {
        let mut offsets = Vec::with_capacity(sizes.len());
        let mut at = 0;
        for &s in &sizes {
            offsets.push(at);
            at += s;
        }
        Steps {
            hidden,
            batch: sizes.first().copied().unwrap_or(0),
            sizes,
            offsets,
            reverse,
        }
    }

    pub(crate) fn rows(&self) -> usize {
        self.sizes.iter().sum()
    }

    /// Time indices in the order the forward pass visits them.
    fn order(&self) -> Vec<usize> {
        let n = self.sizes.len();
        if self.reverse {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        }
    }
}

/// `w^T` for a row-major `[rows, cols]` matrix, in 16 x 16 blocks so both
/// sides stay in cache.
fn transpose<T: Real>(w: &[T], rows: usize, cols: usize) -> Vec<T> {
    const B: usize = 16;
    let mut t = crate::error::filled_vec(w.len(), T::zero());
    for r0 in (0..rows).step_by(B) {
        for c0 in (0..cols).step_by(B) {
            for r in r0..(r0 + B).min(rows) {
                for c in c0..(c0 + B).min(cols) {
                    t[c * rows + r] = w[r * cols + c];
                }
            }
        }
    }
    t
}

/// A mutable slice of `len` elements at `at` of a buffer shared by the tasks
/// of a region.
///
/// # Safety
/// `at..at + len` must lie in the buffer, and no other task may touch it
/// during the region.
#[inline(always)]
unsafe fn part_mut<'a, T>(base: super::SendPtr<T>, at: usize, len: usize) -> &'a mut [T] {
    std::slice::from_raw_parts_mut(base.get().add(at), len)
}

/// `acc += x`, element by element.
#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn add_assign<T: Real>(acc: &mut [T], x: &[T]) {
    for (a, &v) in acc.iter_mut().zip(x) {
        *a = *a + v;
    }
}

/// Batch rows per task of the row-split loops: one register tile's rows.
const ROW_CHUNK: usize = 4;

/// A buffer of `n` elements for a loop to fill: the saved buffers are a few MB
/// per call, and zeroing them first cost a separate pass over memory.
///
/// # Safety
/// The caller must write every element before the buffer is read or returned.
unsafe fn written_later<T: Real>(n: usize) -> Vec<T> {
    let mut v: Vec<T> = crate::error::alloc_vec(n);
    v.set_len(n);
    v
}

//! The LSTM loops split by batch rows: a task owns a few rows for the whole
//! sequence (rows never interact), so a loop is one parallel region with no
//! synchronisation between steps.
//!
//! Each step's input projection is computed inside the loop, on the task's
//! rows, next to the recurrent product: at a batch of 16 a separate projection
//! of every step was a 512-row product that two threads shared poorly, and
//! the loop then had to read the whole `[N, 4H]` result back. In backward the
//! weight gradients follow the same logic: a task gathers the gate gradients
//! and inputs of its rows over a block of steps and adds their product to its
//! own partial sum, so the gradients are made while the recurrence runs on
//! both threads instead of in large products after it. The partial sums are
//! per chunk of rows, not per thread, and are added in chunk order, so the
//! result does not depend on the number of threads.

use multiversion::multiversion;

use super::super::rnn_gemm::{packed_mm, packed_mm_strided, Packed, Real};
use super::lstm::{
    lstm_cell, lstm_units_backward, LstmForward, LstmForwardRef, LstmNeeds, LstmWeights,
};
use super::{add_assign, part_mut, written_later, Steps, ROW_CHUNK};

/// Batch rows per task: two register tiles once the batch gives every thread
/// of a two-core machine that many, so each task streams the recurrent weight
/// once per step for 8 rows instead of once per 4. Depends on the batch only,
/// never on the thread count, because the weight gradients' partial sums
/// follow the chunks.
pub(super) fn row_chunk(batch: usize) -> usize {
    if batch >= 4 * ROW_CHUNK {
        2 * ROW_CHUNK
    } else {
        ROW_CHUNK
    }
}

/// Rows of gate gradients a task gathers before adding their product with
/// the inputs into its partial weight gradients: enough `k` for the product
/// to run near the core's peak, small enough for the block to stay in L2.
const BLOCK_ROWS: usize = 64;

/// The largest partial weight gradients (elements over all chunks) worth
/// making in the loop; past it, the gradients are products after the loop.
const MAX_PARTIAL: usize = 1 << 21;

/// One batch row of the LSTM step over all units: `pre` holds the four gates'
/// pre-activations (both biases, the input projection and the recurrent
/// product); updates `c` in place and writes the activated gates, the cell
/// state before, `tanh` of the one after, and the new hidden state into `h`
/// and `out`.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
#[allow(clippy::too_many_arguments)]
fn lstm_row_forward<T: Real>(
    pre: &[T],
    c: &mut [T],
    c_prev: &mut [T],
    c_out: &mut [T],
    h: &mut [T],
    out: &mut [T],
    act: &mut [T],
) {
    let w = c.len();
    let (p0, rest) = pre[..4 * w].split_at(w);
    let (p1, rest) = rest.split_at(w);
    let (p2, p3) = rest.split_at(w);
    let (a0, rest) = act[..4 * w].split_at_mut(w);
    let (a1, rest) = rest.split_at_mut(w);
    let (a2, a3) = rest.split_at_mut(w);
    let (c_prev, c_out, h, out) = (
        &mut c_prev[..w],
        &mut c_out[..w],
        &mut h[..w],
        &mut out[..w],
    );
    for j in 0..w {
        let ([i, f, g, o], cn, tc, hn) = lstm_cell([p0[j], p1[j], p2[j], p3[j]], c[j]);
        (a0[j], a1[j], a2[j], a3[j]) = (i, f, g, o);
        c_prev[j] = c[j];
        c[j] = cn;
        c_out[j] = tc;
        h[j] = hn;
        out[j] = hn;
    }
}

/// The LSTM forward loop split by batch rows: per step a task starts its rows'
/// pre-activations from the bias, adds `[x_t | h] @ [W_ih | W_hh]^T` (the
/// input projection and the recurrent product as one product, the weights
/// packed once), then runs the gates.
pub(super) fn lstm_forward_rows<T: Real>(
    s: &Steps,
    x: &[T],
    h0: &[T],
    c0: &[T],
    w: &LstmWeights<'_, T>,
) -> LstmForward<T> {
    let (hd, ni, n) = (s.hidden, w.input, s.rows());
    let g4 = 4 * hd;
    let rc = row_chunk(s.batch);
    // One product per step: [x_t | h] @ [W_ih | W_hh]^T.
    let wp = Packed::from_transposed_parts(&[(w.w_ih, ni), (w.w_hh, hd)], g4);
    let zw = ni + hd;
    let mut h = h0.to_vec();
    let mut c = c0.to_vec();
    // SAFETY (all five): the tasks write every row of every step, whole.
    let mut r = unsafe {
        LstmForward {
            out: written_later(n * hd),
            h_n: Vec::new(),
            c_n: Vec::new(),
            gates: written_later(n * g4),
            c_tanh: written_later(n * hd),
            c_prev: written_later(n * hd),
            h_prev: written_later(n * hd),
        }
    };
    let order = s.order();
    let ptr = |v: &mut Vec<T>| super::super::SendPtr(v.as_mut_ptr());
    let (ph, pc, pout, pg, pcs, pcp, php) = (
        ptr(&mut h),
        ptr(&mut c),
        ptr(&mut r.out),
        ptr(&mut r.gates),
        ptr(&mut r.c_tanh),
        ptr(&mut r.c_prev),
        ptr(&mut r.h_prev),
    );
    super::super::parallel::tasks(s.batch.div_ceil(rc), |chunk| {
        let r0 = chunk * rc;
        let r1 = (r0 + rc).min(s.batch);
        let mut pre = crate::error::filled_vec(rc * g4, T::zero());
        let mut z = crate::error::filled_vec(rc * zw, T::zero());
        for &t in &order {
            let (bs, off) = (s.sizes[t], s.offsets[t]);
            // Rows past this step's batch keep their state (sequences that
            // ended, or in reverse have not started yet).
            let m = r1.min(bs).saturating_sub(r0);
            if m == 0 {
                continue;
            }
            // SAFETY: rows r0..r0 + m of the state and rows off + r0.. of the
            // packed buffers belong to this task only; all outlive the region.
            let (hs, cs) =
                unsafe { (part_mut(ph, r0 * hd, m * hd), part_mut(pc, r0 * hd, m * hd)) };
            unsafe { part_mut(php, (off + r0) * hd, m * hd) }.copy_from_slice(hs);
            let pre = &mut pre[..m * g4];
            if let Some(b) = w.bias {
                for row in pre.chunks_exact_mut(g4) {
                    row.copy_from_slice(b);
                }
            }
            for (i, zr) in z[..m * zw].chunks_exact_mut(zw).enumerate() {
                let row = off + r0 + i;
                zr[..ni].copy_from_slice(&x[row * ni..(row + 1) * ni]);
                zr[ni..].copy_from_slice(&hs[i * hd..(i + 1) * hd]);
            }
            packed_mm(&z[..m * zw], m, &wp, pre, w.bias.is_some());
            for i in 0..m {
                let row = off + r0 + i;
                // SAFETY: as above, row `row` and state row r0 + i are this task's.
                unsafe {
                    lstm_row_forward(
                        &pre[i * g4..(i + 1) * g4],
                        &mut cs[i * hd..(i + 1) * hd],
                        part_mut(pcp, row * hd, hd),
                        part_mut(pcs, row * hd, hd),
                        &mut hs[i * hd..(i + 1) * hd],
                        part_mut(pout, row * hd, hd),
                        part_mut(pg, row * g4, g4),
                    );
                }
            }
        }
    });
    r.h_n = h;
    r.c_n = c;
    r
}

/// What [`lstm_backward_rows`] returns: the gate gradients `[N, 4H]` when the
/// weight gradients are left to the caller (else empty), the state gradients,
/// and, when made in the loop, `dx` and the weight and bias gradients.
pub(super) struct RowsBackward<T> {
    pub d_gates: Vec<T>,
    pub dh0: Vec<T>,
    pub dc0: Vec<T>,
    pub dx: Option<Vec<T>>,
    pub dw_ih: Option<Vec<T>>,
    pub dw_hh: Option<Vec<T>>,
    pub db: Option<Vec<T>>,
}

/// Whether the weight gradients of this shape are made inside the backward
/// loop (their partial sums, one per chunk of rows, stay small).
pub(super) fn fuses_weight_grads(s: &Steps, input: usize) -> bool {
    let chunks = s.batch.div_ceil(row_chunk(s.batch));
    chunks.saturating_mul(4 * s.hidden * (input + s.hidden + 1)) <= MAX_PARTIAL
}

/// One chunk's running sums of the weight gradients, `[4H, zc]` (the columns
/// of `W_ih` that are needed, then those of `W_hh`), and of the bias
/// gradient; `written` once the first block has been stored in them (so they
/// need no zeroing).
struct Partial<T> {
    w: Vec<T>,
    b: Vec<T>,
    written: bool,
}

/// A chunk's gathered rows: gate gradients `[rows, 4H]`, and what they
/// multiply for the weight gradients, `[rows, zc]`: each row's input (when
/// `W_ih`'s gradient is needed) then its previous hidden state (when
/// `W_hh`'s is).
struct Block<T> {
    dg: Vec<T>,
    z: Vec<T>,
    rows: usize,
}

impl<T: Real> Block<T> {
    /// Adds `dg^T @ z` and the column sums of `dg` into `p` (or stores them,
    /// for the first block), and empties the block. The product runs on the
    /// packed tiles with `dg` read transposed and `z` read in place.
    fn flush(&mut self, p: &mut Partial<T>, g4: usize, zc: usize, bias: bool) {
        let k = self.rows;
        if k == 0 {
            return;
        }
        let first = !p.written;
        if zc > 0 {
            let z = Packed::from_rows(&self.z[..k * zc], k, zc);
            packed_mm_strided(&self.dg[..k * g4], g4, (1, g4), &z, &mut p.w, !first);
        }
        if bias {
            let mut rows = self.dg[..k * g4].chunks_exact(g4);
            if first {
                if let Some(r) = rows.next() {
                    p.b.copy_from_slice(r);
                }
            }
            for row in rows {
                add_assign(&mut p.b, row);
            }
        }
        p.written = true;
        self.rows = 0;
    }
}

/// The LSTM backward loop split by batch rows, the mirror of
/// [`lstm_forward_rows`]: per step a task runs the gates' backward on its
/// rows, then sends their gate gradients back through `W_hh` (packed once)
/// into its rows of `dh`. With `fused`, it also sends them through `W_ih`
/// into `dx` and gathers them for the weight gradients; without, it writes
/// them to `d_gates` for the caller's products.
#[allow(clippy::too_many_arguments)]
pub(super) fn lstm_backward_rows<T: Real>(
    s: &Steps,
    f: &LstmForwardRef<'_, T>,
    x: &[T],
    g_out: &[T],
    g_hn: &[T],
    g_cn: &[T],
    w: &LstmWeights<'_, T>,
    fused: Option<&LstmNeeds>,
) -> RowsBackward<T> {
    let (hd, ni, n) = (s.hidden, w.input, s.rows());
    let g4 = 4 * hd;
    let rc = row_chunk(s.batch);
    let chunks = s.batch.div_ceil(rc);
    let wp = Packed::from_rows(w.w_hh, g4, hd);
    let wip = fused
        .filter(|nd| nd.x)
        .map(|_| Packed::from_rows(w.w_ih, g4, ni));
    let mut dh = g_hn.to_vec();
    let mut dc = g_cn.to_vec();
    // SAFETY (both): every packed row belongs to one step and one chunk, whose
    // task writes it whole.
    let mut d_gates = if fused.is_none() {
        unsafe { written_later(n * g4) }
    } else {
        Vec::new()
    };
    let mut dx = if wip.is_some() {
        unsafe { written_later(n * ni) }
    } else {
        Vec::new()
    };
    // Columns of the gathered rows: the input's, then the hidden state's.
    let (xc, hc) = fused.map_or((0, 0), |nd| {
        (if nd.w_ih { ni } else { 0 }, if nd.w_hh { hd } else { 0 })
    });
    let zc = xc + hc;
    let partials: Vec<parking_lot::Mutex<Partial<T>>> = match fused {
        Some(nd) => (0..chunks)
            .map(|_| {
                // SAFETY: a chunk's first block stores every element (and
                // every chunk has rows in the first step, so one exists).
                parking_lot::Mutex::new(unsafe {
                    Partial {
                        w: written_later(g4 * zc),
                        b: written_later(if nd.bias { g4 } else { 0 }),
                        written: false,
                    }
                })
            })
            .collect(),
        None => Vec::new(),
    };
    let visits: Vec<usize> = s.order().into_iter().rev().collect();
    let ptr = |v: &mut Vec<T>| super::super::SendPtr(v.as_mut_ptr());
    let (pd, pdh, pdc, pdx) = (ptr(&mut d_gates), ptr(&mut dh), ptr(&mut dc), ptr(&mut dx));
    super::super::parallel::tasks(chunks, |chunk| {
        let r0 = chunk * rc;
        let r1 = (r0 + rc).min(s.batch);
        let cap = BLOCK_ROWS.max(rc);
        // SAFETY: only the first `rows` rows of a block are read, and each
        // is written when added.
        let mut blk = fused.map(|_| unsafe {
            Block {
                dg: written_later(cap * g4),
                z: written_later(cap * zc),
                rows: 0,
            }
        });
        let mut part = partials.get(chunk).map(|p| p.lock());
        for &t in &visits {
            let (bs, off) = (s.sizes[t], s.offsets[t]);
            let m = r1.min(bs).saturating_sub(r0);
            if m == 0 {
                continue;
            }
            // SAFETY: rows r0..r0 + m of `dh`/`dc` and rows off + r0.. of
            // `d_gates`/`dx` belong to this task only; all outlive the region.
            let (dhs, dcs) = unsafe {
                (
                    part_mut(pdh, r0 * hd, m * hd),
                    part_mut(pdc, r0 * hd, m * hd),
                )
            };
            let ds: &mut [T] = match blk.as_mut() {
                Some(b) => &mut b.dg[b.rows * g4..(b.rows + m) * g4],
                None => unsafe { part_mut(pd, (off + r0) * g4, m * g4) },
            };
            for i in 0..m {
                let row = off + r0 + i;
                let (a, rest) = ds[i * g4..(i + 1) * g4].split_at_mut(hd);
                let (b, rest) = rest.split_at_mut(hd);
                let (c, d) = rest.split_at_mut(hd);
                lstm_units_backward(
                    std::array::from_fn(|g| &f.gates[row * g4 + g * hd..row * g4 + (g + 1) * hd]),
                    &f.c_tanh[row * hd..(row + 1) * hd],
                    &f.c_prev[row * hd..(row + 1) * hd],
                    &g_out[row * hd..(row + 1) * hd],
                    &dhs[i * hd..(i + 1) * hd],
                    &mut dcs[i * hd..(i + 1) * hd],
                    [a, b, c, d],
                );
            }
            packed_mm(ds, m, &wp, dhs, false);
            if let Some(wip) = &wip {
                // SAFETY: as above.
                let dxs = unsafe { part_mut(pdx, (off + r0) * ni, m * ni) };
                packed_mm(ds, m, wip, dxs, false);
            }
            if let (Some(b), Some(p), Some(nd)) = (blk.as_mut(), part.as_mut(), fused) {
                for i in 0..m {
                    let (row, z) = (
                        off + r0 + i,
                        &mut b.z[(b.rows + i) * zc..(b.rows + i + 1) * zc],
                    );
                    z[..xc].copy_from_slice(&x[row * ni..row * ni + xc]);
                    z[xc..].copy_from_slice(&f.h_prev[row * hd..row * hd + hc]);
                }
                b.rows += m;
                if b.rows + rc > cap {
                    b.flush(p, g4, zc, nd.bias);
                }
            }
        }
        if let (Some(b), Some(p), Some(nd)) = (blk.as_mut(), part.as_mut(), fused) {
            b.flush(p, g4, zc, nd.bias);
        }
    });
    let mut r = RowsBackward {
        d_gates,
        dh0: dh,
        dc0: dc,
        dx: wip.map(|_| dx),
        dw_ih: None,
        dw_hh: None,
        db: None,
    };
    if let Some(nd) = fused {
        let parts: Vec<Partial<T>> = partials.into_iter().map(|p| p.into_inner()).collect();
        let w: Vec<&[T]> = parts.iter().map(|p| &p.w[..]).collect();
        let (dw_ih, dw_hh) = sum_split(&w, g4, xc, hc);
        (r.dw_ih, r.dw_hh) = (nd.w_ih.then_some(dw_ih), nd.w_hh.then_some(dw_hh));
        let b: Vec<&[T]> = parts.iter().map(|p| &p.b[..]).collect();
        r.db = nd.bias.then(|| sum_split(&b, 1, g4, 0).0);
    }
    r
}

/// `p_0 + p_1 + ...` over `[rows, left + right]` matrices, added left to
/// right for every element, returned as its `[rows, left]` and `[rows, right]`
/// column blocks; split across the pool by rows.
fn sum_split<'a, T: Real>(
    parts: &[&'a [T]],
    rows: usize,
    left: usize,
    right: usize,
) -> (Vec<T>, Vec<T>) {
    let width = left + right;
    // SAFETY (both): every row of each is written below.
    let (mut a, mut b) = unsafe { (written_later(rows * left), written_later(rows * right)) };
    let (pa, pb) = (
        super::super::SendPtr(a.as_mut_ptr()),
        super::super::SendPtr(b.as_mut_ptr()),
    );
    let piece = (1 << 14) / width.max(1) + 1;
    let run = |p: usize| {
        let (lo, hi) = (p * piece, ((p + 1) * piece).min(rows));
        for r in lo..hi {
            // SAFETY: row `r` of each output, written by this piece only;
            // both outlive the region.
            let (oa, ob) =
                unsafe { (part_mut(pa, r * left, left), part_mut(pb, r * right, right)) };
            let at = |p: &'a [T]| &p[r * width..(r + 1) * width];
            let (first, rest) = parts.split_first().expect("at least one chunk");
            oa.copy_from_slice(&at(first)[..left]);
            ob.copy_from_slice(&at(first)[left..]);
            for p in rest {
                let (xa, xb) = at(p).split_at(left);
                add_assign(oa, xa);
                add_assign(ob, xb);
            }
        }
    };
    let pieces = rows.div_ceil(piece);
    if rows * width * parts.len() >= super::super::GRAIN {
        super::super::parallel::tasks(pieces, run);
    } else {
        (0..pieces).for_each(run);
    }
    (a, b)
}

//! The LSTM layer's loops (gate order i, f, g, o), forward and backward,
//! split across the pool either by batch rows for the whole sequence or, for
//! small batches, by hidden units within each step.

use multiversion::multiversion;

use super::super::matmul::{gemm_add_into, gemm_into, Mat};
use super::super::rnn_gemm::Real;
use super::lstm_rows::{fuses_weight_grads, lstm_backward_rows, lstm_forward_rows, row_chunk};
use super::{part_mut, transpose, Steps};

/// What the LSTM forward loop keeps for backward, all packed `[N, .]`.
pub(crate) struct LstmForward<T> {
    pub out: Vec<T>,
    pub h_n: Vec<T>,
    pub c_n: Vec<T>,
    /// Activated gates i, f, g, o: `[N, 4H]`.
    pub gates: Vec<T>,
    /// `tanh` of the cell state after each step (backward needs nothing
    /// else of it), and the cell state before each step: `[N, H]` each.
    pub c_tanh: Vec<T>,
    pub c_prev: Vec<T>,
    /// Hidden state each step read: `[N, H]` (for the weight gradient).
    pub h_prev: Vec<T>,
}

/// How many parts the hidden units of a step are split into: whole register
/// tiles of units per part (so each gate's columns of a part are whole tiles),
/// one part per thread, and one part only when the step is too small for a
/// parallel region to pay.
fn unit_parts<T: Real>(bs: usize, hd: usize, gates: usize) -> usize {
    if bs * gates * hd * hd < 1 << 16 {
        return 1;
    }
    (hd / T::TILE)
        .min(super::super::parallel::get_num_threads())
        .max(1)
}

/// Units `u0..u1` of part `p` of `parts` (the last part takes the units left
/// over after the whole tiles).
fn part_units(p: usize, parts: usize, hd: usize, jb: usize) -> (usize, usize) {
    let blocks = (hd / jb).max(1);
    let u0 = (p * blocks / parts) * jb;
    let u1 = if p + 1 == parts {
        hd
    } else {
        ((p + 1) * blocks / parts) * jb
    };
    (u0.min(hd), u1.min(hd))
}

/// The LSTM step for units `u0..u0 + w` of one batch row: `x` and `p` hold
/// each gate's input projection and recurrent product (with `b_hh`) for those
/// units; updates `c` in place and writes the activated gates, the new hidden
/// state into `h` and `out`, the cell state before, and `tanh` of the one after.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
#[allow(clippy::too_many_arguments)]
fn lstm_units_forward<T: Real>(
    x: [&[T]; 4],
    p: [&[T]; 4],
    c: &mut [T],
    c_prev: &mut [T],
    c_out: &mut [T],
    h: &mut [T],
    out: &mut [T],
    act: [&mut [T]; 4],
) {
    let w = c.len();
    let [a0, a1, a2, a3] = act;
    let (a0, a1, a2, a3) = (&mut a0[..w], &mut a1[..w], &mut a2[..w], &mut a3[..w]);
    let (c_prev, c_out, h, out) = (
        &mut c_prev[..w],
        &mut c_out[..w],
        &mut h[..w],
        &mut out[..w],
    );
    let (x0, x1, x2, x3) = (&x[0][..w], &x[1][..w], &x[2][..w], &x[3][..w]);
    let (p0, p1, p2, p3) = (&p[0][..w], &p[1][..w], &p[2][..w], &p[3][..w]);
    for j in 0..w {
        let pre = [x0[j] + p0[j], x1[j] + p1[j], x2[j] + p2[j], x3[j] + p3[j]];
        let ([i, f, g, o], cn, tc, hn) = lstm_cell(pre, c[j]);
        (a0[j], a1[j], a2[j], a3[j]) = (i, f, g, o);
        c_prev[j] = c[j];
        c[j] = cn;
        c_out[j] = tc;
        h[j] = hn;
        out[j] = hn;
    }
}

/// One unit's LSTM cell: from the four gates' pre-activations (order i, f, g,
/// o) and the old cell state, the activated gates, the new cell state, its
/// `tanh`, and the new hidden state. Inlined into the vectorised loops.
#[inline(always)]
pub(super) fn lstm_cell<T: Real>(pre: [T; 4], c: T) -> ([T; 4], T, T, T) {
    let i = pre[0].sigmoid();
    let f = pre[1].sigmoid();
    let g = pre[2].tanh();
    let o = pre[3].sigmoid();
    let cn = f * c + i * g;
    let tc = cn.tanh();
    ([i, f, g, o], cn, tc, o * tc)
}

/// The LSTM step's backward for units `u0..u0 + w` of one batch row: `dh` is
/// the gradient reaching the step's hidden state from later steps, `dc` the
/// cell state's (updated in place to the previous cell state's); `d` receives
/// each gate's pre-activation gradient.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
pub(super) fn lstm_units_backward<T: Real>(
    act: [&[T]; 4],
    c_tanh: &[T],
    c_prev: &[T],
    g_out: &[T],
    dh: &[T],
    dc: &mut [T],
    d: [&mut [T]; 4],
) {
    let w = dc.len();
    let one = T::one();
    let [d0, d1, d2, d3] = d;
    let (d0, d1, d2, d3) = (&mut d0[..w], &mut d1[..w], &mut d2[..w], &mut d3[..w]);
    let (ai, af, ag, ao) = (&act[0][..w], &act[1][..w], &act[2][..w], &act[3][..w]);
    let (c_tanh, c_prev, g_out, dh) = (&c_tanh[..w], &c_prev[..w], &g_out[..w], &dh[..w]);
    for j in 0..w {
        let (i, f, g, o) = (ai[j], af[j], ag[j], ao[j]);
        let ct = c_tanh[j];
        let dht = g_out[j] + dh[j];
        let dct = dc[j] + dht * o * (one - ct * ct);
        d0[j] = dct * g * i * (one - i);
        d1[j] = dct * c_prev[j] * f * (one - f);
        d2[j] = dct * i * (one - g * g);
        d3[j] = dht * ct * o * (one - o);
        dc[j] = dct * f;
    }
}

/// The layer's weights: `w_ih` `[4H, input]`, `w_hh` `[4H, H]`, and the sum
/// of both biases (`b_ih + b_hh`, `[4H]`), which only ever enter added.
pub(crate) struct LstmWeights<'a, T> {
    pub input: usize,
    pub w_ih: &'a [T],
    pub w_hh: &'a [T],
    pub bias: Option<&'a [T]>,
}

/// Which gradients backward makes besides those of the initial states.
#[derive(Clone, Copy)]
pub(crate) struct LstmNeeds {
    pub x: bool,
    pub w_ih: bool,
    pub w_hh: bool,
    pub bias: bool,
}

/// The gradients of one layer direction (`None` where not needed); `db` is
/// the gradient of each of the two biases.
pub(crate) struct LstmGrads<T> {
    pub dx: Option<Vec<T>>,
    pub dh0: Vec<T>,
    pub dc0: Vec<T>,
    pub dw_ih: Option<Vec<T>>,
    pub dw_hh: Option<Vec<T>>,
    pub db: Option<Vec<T>>,
}

/// The LSTM layer over every step of the packed input `x` `[N, input]`; gate
/// order i, f, g, o as PyTorch. Split by batch rows, with each step's input
/// projection inside the loop ([`lstm_forward_rows`]), unless the batch is
/// too small for that: then the projection of all steps is one product and
/// the loop splits the hidden units.
pub(crate) fn lstm_forward<T: Real>(
    s: &Steps,
    x: &[T],
    h0: &[T],
    c0: &[T],
    w: &LstmWeights<'_, T>,
) -> LstmForward<T> {
    if use_row_split::<T>(s) {
        lstm_forward_rows(s, x, h0, c0, w)
    } else {
        let gi = project(s, x, w);
        lstm_forward_units(s, &gi, h0, c0, w.w_hh, None)
    }
}

/// `x @ w_ih^T + bias` for every step: `[N, 4H]`.
fn project<T: Real>(s: &Steps, x: &[T], w: &LstmWeights<'_, T>) -> Vec<T> {
    let (n, g4, ni) = (s.rows(), 4 * s.hidden, w.input);
    let mut gi = crate::error::filled_vec(n * g4, T::zero());
    if let Some(b) = w.bias {
        for row in gi.chunks_exact_mut(g4) {
            row.copy_from_slice(b);
        }
    }
    let xm = Mat {
        ptr: x.as_ptr(),
        rows: n,
        cols: ni,
        row_stride: ni,
        col_stride: 1,
    };
    let wt = Mat {
        ptr: w.w_ih.as_ptr(),
        rows: ni,
        cols: g4,
        row_stride: 1,
        col_stride: ni,
    };
    // SAFETY: `x` is `[n, ni]`, `w_ih` `[g4, ni]` read transposed, `gi` `[n, g4]`.
    unsafe { gemm_add_into(xm, wt, gi.as_mut_ptr(), true) };
    gi
}

/// `lstm_forward` split by hidden units. A step is one parallel region: each
/// part multiplies the previous hidden state by its units' columns of the four
/// gates and runs the cell on them right away, so the whole step (product and
/// gates) is spread over the pool and the only synchronisation is the end of
/// the region. The hidden state is double-buffered because every part reads
/// all of it.
fn lstm_forward_units<T: Real>(
    s: &Steps,
    gi: &[T],
    h0: &[T],
    c0: &[T],
    w_hh: &[T],
    b_hh: Option<&[T]>,
) -> LstmForward<T> {
    let (hd, n) = (s.hidden, s.rows());
    let g4 = 4 * hd;
    let w_t = transpose(w_hh, g4, hd);
    let mut h = h0.to_vec();
    let mut h_next = h0.to_vec();
    let mut c = c0.to_vec();
    let mut r = LstmForward {
        out: crate::error::filled_vec(n * hd, T::zero()),
        h_n: Vec::new(),
        c_n: Vec::new(),
        gates: crate::error::filled_vec(n * g4, T::zero()),
        c_tanh: crate::error::filled_vec(n * hd, T::zero()),
        c_prev: crate::error::filled_vec(n * hd, T::zero()),
        h_prev: crate::error::filled_vec(n * hd, T::zero()),
    };
    for t in s.order() {
        let (bs, off) = (s.sizes[t], s.offsets[t]);
        r.h_prev[off * hd..(off + bs) * hd].copy_from_slice(&h[..bs * hd]);
        let parts = unit_parts::<T>(bs, hd, 4);
        let ptr = |v: &mut Vec<T>| super::super::SendPtr(v.as_mut_ptr());
        let (pc, pn, pout, pg, pcs, pcp) = (
            ptr(&mut c),
            ptr(&mut h_next),
            ptr(&mut r.out),
            ptr(&mut r.gates),
            ptr(&mut r.c_tanh),
            ptr(&mut r.c_prev),
        );
        let h_cur = &h[..bs * hd];
        let w_t = &w_t[..];
        super::super::parallel::tasks(parts, |part| {
            let (u0, u1) = part_units(part, parts, hd, T::TILE);
            let w = u1 - u0;
            if w == 0 {
                return;
            }
            // Each gate's recurrent product for these units, `[bs, w]` per gate.
            let mut pre = crate::error::filled_vec(4 * bs * w, T::zero());
            for (g, blk) in pre.chunks_exact_mut(bs * w).enumerate() {
                T::nn_cols(h_cur, w_t, bs, g4, hd, blk, false, g * hd + u0, g * hd + u1);
                if let Some(b) = b_hh {
                    let b = &b[g * hd + u0..g * hd + u1];
                    for row in blk.chunks_exact_mut(w) {
                        for (v, &bb) in row.iter_mut().zip(b) {
                            *v = bb + *v;
                        }
                    }
                }
            }
            for b in 0..bs {
                let row = off + b;
                let x =
                    std::array::from_fn(|g| &gi[row * g4 + g * hd + u0..row * g4 + g * hd + u1]);
                let p = std::array::from_fn(|g| &pre[g * bs * w + b * w..g * bs * w + (b + 1) * w]);
                // SAFETY: every slice is this part's units of one row: disjoint
                // from the other parts' and within the buffers, which outlive
                // the region.
                unsafe {
                    lstm_units_forward(
                        x,
                        p,
                        part_mut(pc, b * hd + u0, w),
                        part_mut(pcp, row * hd + u0, w),
                        part_mut(pcs, row * hd + u0, w),
                        part_mut(pn, b * hd + u0, w),
                        part_mut(pout, row * hd + u0, w),
                        std::array::from_fn(|g| part_mut(pg, row * g4 + g * hd + u0, w)),
                    );
                }
            }
        });
        // Rows past this step's batch keep their state (sequences that ended,
        // or in reverse have not started yet).
        h_next[bs * hd..].copy_from_slice(&h[bs * hd..]);
        std::mem::swap(&mut h, &mut h_next);
    }
    r.h_n = h;
    r.c_n = c;
    r
}

/// Gradients of the LSTM layer: of `x`, the initial states, the weights and
/// the bias, as `needs` asks. Split like the forward; the weight gradients are
/// made inside the row-split loop when their partial sums stay small
/// ([`fuses_weight_grads`]), else by products over all steps after the loop.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lstm_backward<T: Real>(
    s: &Steps,
    f: &LstmForwardRef<'_, T>,
    x: &[T],
    g_out: &[T],
    g_hn: &[T],
    g_cn: &[T],
    w: &LstmWeights<'_, T>,
    needs: LstmNeeds,
) -> LstmGrads<T> {
    if use_row_split::<T>(s) {
        let fused = fuses_weight_grads(s, w.input);
        let r = lstm_backward_rows(s, f, x, g_out, g_hn, g_cn, w, fused.then_some(&needs));
        if fused {
            return LstmGrads {
                dx: r.dx,
                dh0: r.dh0,
                dc0: r.dc0,
                dw_ih: r.dw_ih,
                dw_hh: r.dw_hh,
                db: r.db,
            };
        }
        products_after(s, &r.d_gates, f.h_prev, x, w, needs, r.dh0, r.dc0)
    } else {
        let (d, dh, dc) = lstm_backward_units(s, f, g_out, g_hn, g_cn, w.w_hh);
        products_after(s, &d, f.h_prev, x, w, needs, dh, dc)
    }
}

/// The gradients of `x`, the weights and the bias from the gate gradients `d`
/// `[N, 4H]` of every step, as whole products over the steps.
#[allow(clippy::too_many_arguments)]
fn products_after<T: Real>(
    s: &Steps,
    d: &[T],
    h_prev: &[T],
    x: &[T],
    w: &LstmWeights<'_, T>,
    needs: LstmNeeds,
    dh0: Vec<T>,
    dc0: Vec<T>,
) -> LstmGrads<T> {
    let (n, hd, ni) = (s.rows(), s.hidden, w.input);
    let g4 = 4 * hd;
    let rows = |p: *const T, cols: usize| Mat {
        ptr: p,
        rows: n,
        cols,
        row_stride: cols,
        col_stride: 1,
    };
    let dt = Mat {
        ptr: d.as_ptr(),
        rows: g4,
        cols: n,
        row_stride: 1,
        col_stride: g4,
    };
    let product = |a: Mat<T>, b: Mat<T>| {
        let mut out = crate::error::filled_vec(a.rows * b.cols, T::zero());
        // SAFETY: the descriptors match the buffers' shapes; `out` is `[a.rows, b.cols]`.
        unsafe { gemm_into(a, b, out.as_mut_ptr(), true) };
        out
    };
    let w_ih = Mat {
        ptr: w.w_ih.as_ptr(),
        rows: g4,
        cols: ni,
        row_stride: ni,
        col_stride: 1,
    };
    LstmGrads {
        dx: needs.x.then(|| product(rows(d.as_ptr(), g4), w_ih)),
        dh0,
        dc0,
        dw_ih: needs.w_ih.then(|| product(dt, rows(x.as_ptr(), ni))),
        dw_hh: needs.w_hh.then(|| product(dt, rows(h_prev.as_ptr(), hd))),
        db: needs.bias.then(|| {
            let mut b = crate::error::filled_vec(g4, T::zero());
            for row in d[..n * g4].chunks_exact(g4) {
                for (s, &v) in b.iter_mut().zip(row) {
                    *s = *s + v;
                }
            }
            b
        }),
    }
}

/// `lstm_backward` split by hidden units: one parallel region per step, in
/// which a part first finishes the gradient reaching its units of the hidden
/// state (the product of the previously visited step's gate gradients with its
/// columns of `W_hh`), then runs the gates' backward on those units. Both
/// halves of a part touch only its own units, so the end of the region is the
/// only synchronisation a step needs.
fn lstm_backward_units<T: Real>(
    s: &Steps,
    f: &LstmForwardRef<'_, T>,
    g_out: &[T],
    g_hn: &[T],
    g_cn: &[T],
    w_hh: &[T],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (hd, n) = (s.hidden, s.rows());
    let g4 = 4 * hd;
    let mut dh = g_hn.to_vec();
    let mut dc = g_cn.to_vec();
    let mut d_gates = crate::error::filled_vec(n * g4, T::zero());
    let visits: Vec<usize> = s.order().into_iter().rev().collect();
    // Region k runs the state gradient of visit k - 1 (if any), then the gates
    // of visit k (if any); the extra last region finishes `dh` into `d_h0`.
    for k in 0..=visits.len() {
        let prev = k
            .checked_sub(1)
            .map(|i| (s.sizes[visits[i]], s.offsets[visits[i]]));
        let cur = visits.get(k).map(|&t| (s.sizes[t], s.offsets[t]));
        let bs_max = prev.map_or(0, |p| p.0).max(cur.map_or(0, |c| c.0));
        let parts = unit_parts::<T>(bs_max, hd, 4);
        let (pd, pdh, pdc) = (
            super::super::SendPtr(d_gates.as_mut_ptr()),
            super::super::SendPtr(dh.as_mut_ptr()),
            super::super::SendPtr(dc.as_mut_ptr()),
        );
        super::super::parallel::tasks(parts, |part| {
            let (u0, u1) = part_units(part, parts, hd, T::TILE);
            let w = u1 - u0;
            if w == 0 {
                return;
            }
            if let Some((bs, off)) = prev {
                // SAFETY: the rows of the step visited last were completed by
                // the previous region; nothing writes them in this one.
                let d = unsafe {
                    std::slice::from_raw_parts(pd.get().add(off * g4) as *const T, bs * g4)
                };
                let mut part_dh = crate::error::filled_vec(bs * w, T::zero());
                T::nn_cols(d, w_hh, bs, hd, g4, &mut part_dh, false, u0, u1);
                for (b, src) in part_dh.chunks_exact(w).enumerate() {
                    // SAFETY: this part's units of row b of `dh`.
                    unsafe { part_mut(pdh, b * hd + u0, w) }.copy_from_slice(src);
                }
            }
            if let Some((bs, off)) = cur {
                for b in 0..bs {
                    let row = off + b;
                    let at = |g: usize| row * g4 + g * hd + u0;
                    // SAFETY: this part's units of row `b` of `dh`/`dc` and of
                    // row `row` of `d_gates`, disjoint from the other parts'.
                    unsafe {
                        lstm_units_backward(
                            std::array::from_fn(|g| &f.gates[at(g)..at(g) + w]),
                            &f.c_tanh[row * hd + u0..row * hd + u1],
                            &f.c_prev[row * hd + u0..row * hd + u1],
                            &g_out[row * hd + u0..row * hd + u1],
                            part_mut(pdh, b * hd + u0, w),
                            part_mut(pdc, b * hd + u0, w),
                            std::array::from_fn(|g| part_mut(pd, at(g), w)),
                        );
                    }
                }
            }
        });
    }
    (d_gates, dh, dc)
}

/// Whether the LSTM loops split the batch rather than the hidden units. Batch
/// rows never interact, so a task can own a few rows for the whole sequence:
/// one parallel region per loop instead of one per step, and no step waits for
/// another thread. Splitting units is kept for batches too small to give every
/// thread rows while a step is large enough to share.
fn use_row_split<T: Real>(s: &Steps) -> bool {
    s.batch >= 2 * row_chunk(s.batch) || unit_parts::<T>(s.batch, s.hidden, 4) == 1
}

/// The saved parts of [`LstmForward`] that backward reads.
pub(crate) struct LstmForwardRef<'a, T> {
    pub gates: &'a [T],
    pub c_tanh: &'a [T],
    pub c_prev: &'a [T],
    pub h_prev: &'a [T],
}

#[cfg(test)]
#[path = "lstm_tests.rs"]
mod tests;

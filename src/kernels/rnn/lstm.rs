//! The LSTM layer's loops (gate order i, f, g, o), forward and backward,
//! split across the pool either by batch rows for the whole sequence or, for
//! small batches, by hidden units within each step.

use multiversion::multiversion;

use super::super::rnn_gemm::{packed_mm, Packed, Real};
use super::{part_mut, transpose, written_later, Steps, ROW_CHUNK};

/// What the LSTM forward loop keeps for backward, all packed `[N, .]`.
pub(crate) struct LstmForward<T> {
    pub out: Vec<T>,
    pub h_n: Vec<T>,
    pub c_n: Vec<T>,
    /// Activated gates i, f, g, o: `[N, 4H]`.
    pub gates: Vec<T>,
    /// Cell state after each step and before it: `[N, H]` each.
    pub c: Vec<T>,
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
/// state into `h` and `out`, and the cell state before and after.
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
        let i = (x0[j] + p0[j]).sigmoid();
        let f = (x1[j] + p1[j]).sigmoid();
        let g = (x2[j] + p2[j]).tanh();
        let o = (x3[j] + p3[j]).sigmoid();
        a0[j] = i;
        a1[j] = f;
        a2[j] = g;
        a3[j] = o;
        c_prev[j] = c[j];
        let cn = f * c[j] + i * g;
        c[j] = cn;
        c_out[j] = cn;
        let hn = o * cn.tanh();
        h[j] = hn;
        out[j] = hn;
    }
}

/// The LSTM step's backward for units `u0..u0 + w` of one batch row: `dh` is
/// the gradient reaching the step's hidden state from later steps, `dc` the
/// cell state's (updated in place to the previous cell state's); `d` receives
/// each gate's pre-activation gradient.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn lstm_units_backward<T: Real>(
    act: [&[T]; 4],
    c: &[T],
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
    let (c, c_prev, g_out, dh) = (&c[..w], &c_prev[..w], &g_out[..w], &dh[..w]);
    for j in 0..w {
        let (i, f, g, o) = (ai[j], af[j], ag[j], ao[j]);
        let ct = c[j].tanh();
        let dht = g_out[j] + dh[j];
        let dct = dc[j] + dht * o * (one - ct * ct);
        d0[j] = dct * g * i * (one - i);
        d1[j] = dct * c_prev[j] * f * (one - f);
        d2[j] = dct * i * (one - g * g);
        d3[j] = dht * ct * o * (one - o);
        dc[j] = dct * f;
    }
}

/// The LSTM recurrence over every step. `gi` `[N, 4H]` holds each step's input
/// projection (with `b_ih`); gate order i, f, g, o as PyTorch. Split by batch
/// rows ([`lstm_forward_rows`]) unless the batch is too small for that.
pub(crate) fn lstm_forward<T: Real>(
    s: &Steps,
    gi: &[T],
    h0: &[T],
    c0: &[T],
    w_hh: &[T],
    b_hh: Option<&[T]>,
) -> LstmForward<T> {
    if use_row_split::<T>(s) {
        lstm_forward_rows(s, gi, h0, c0, w_hh, b_hh)
    } else {
        lstm_forward_units(s, gi, h0, c0, w_hh, b_hh)
    }
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
        out: vec![T::zero(); n * hd],
        h_n: Vec::new(),
        c_n: Vec::new(),
        gates: vec![T::zero(); n * g4],
        c: vec![T::zero(); n * hd],
        c_prev: vec![T::zero(); n * hd],
        h_prev: vec![T::zero(); n * hd],
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
            ptr(&mut r.c),
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
            let mut pre = vec![T::zero(); 4 * bs * w];
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

/// Gradients of the LSTM loop: `d_gates` `[N, 4H]` (with respect to the gate
/// pre-activations, i.e. to `gi` and to the recurrent product alike) and the
/// gradients of `h0`, `c0`. Split like the forward.
pub(crate) fn lstm_backward<T: Real>(
    s: &Steps,
    f: &LstmForwardRef<'_, T>,
    g_out: &[T],
    g_hn: &[T],
    g_cn: &[T],
    w_hh: &[T],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    if use_row_split::<T>(s) {
        lstm_backward_rows(s, f, g_out, g_hn, g_cn, w_hh)
    } else {
        lstm_backward_units(s, f, g_out, g_hn, g_cn, w_hh)
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
    let mut d_gates = vec![T::zero(); n * g4];
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
                let mut part_dh = vec![T::zero(); bs * w];
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
                            &f.c[row * hd + u0..row * hd + u1],
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
    s.batch >= 2 * ROW_CHUNK || unit_parts::<T>(s.batch, s.hidden, 4) == 1
}

/// One batch row of the LSTM step over all units: `pre` holds the four gates'
/// pre-activations (input projection, both biases and the recurrent product);
/// updates `c` in place and writes the activated gates, the cell state before
/// and after, and the new hidden state into `h` and `out`.
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
        let i = p0[j].sigmoid();
        let f = p1[j].sigmoid();
        let g = p2[j].tanh();
        let o = p3[j].sigmoid();
        a0[j] = i;
        a1[j] = f;
        a2[j] = g;
        a3[j] = o;
        c_prev[j] = c[j];
        let cn = f * c[j] + i * g;
        c[j] = cn;
        c_out[j] = cn;
        let hn = o * cn.tanh();
        h[j] = hn;
        out[j] = hn;
    }
}

/// `lstm_forward` split by batch rows: each task runs a few rows
/// through every step (product with the packed `W_hh^T`, then the gates),
/// touching only its rows of the state and of every saved buffer.
fn lstm_forward_rows<T: Real>(
    s: &Steps,
    gi: &[T],
    h0: &[T],
    c0: &[T],
    w_hh: &[T],
    b_hh: Option<&[T]>,
) -> LstmForward<T> {
    let (hd, n) = (s.hidden, s.rows());
    let g4 = 4 * hd;
    let wp = Packed::from_transposed(w_hh, g4, hd);
    let mut h = h0.to_vec();
    let mut c = c0.to_vec();
    // SAFETY (all five): the tasks write every row of every step, whole.
    let mut r = unsafe {
        LstmForward {
            out: written_later(n * hd),
            h_n: Vec::new(),
            c_n: Vec::new(),
            gates: written_later(n * g4),
            c: written_later(n * hd),
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
        ptr(&mut r.c),
        ptr(&mut r.c_prev),
        ptr(&mut r.h_prev),
    );
    super::super::parallel::tasks(s.batch.div_ceil(ROW_CHUNK), |chunk| {
        let r0 = chunk * ROW_CHUNK;
        let r1 = (r0 + ROW_CHUNK).min(s.batch);
        let mut pre = vec![T::zero(); ROW_CHUNK * g4];
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
            for (i, p) in pre[..m * g4].chunks_exact_mut(g4).enumerate() {
                let x = &gi[(off + r0 + i) * g4..(off + r0 + i + 1) * g4];
                match b_hh {
                    Some(b) => {
                        for ((p, &x), &b) in p.iter_mut().zip(x).zip(b) {
                            *p = x + b;
                        }
                    }
                    None => p.copy_from_slice(x),
                }
            }
            packed_mm(hs, m, &wp, &mut pre[..m * g4], true);
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

/// `lstm_backward` split by batch rows, the mirror of [`lstm_forward_rows`]:
/// per step a task runs the gates' backward on its rows, then sends their
/// gate gradients back through `W_hh` (packed once) into its rows of `dh`.
fn lstm_backward_rows<T: Real>(
    s: &Steps,
    f: &LstmForwardRef<'_, T>,
    g_out: &[T],
    g_hn: &[T],
    g_cn: &[T],
    w_hh: &[T],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (hd, n) = (s.hidden, s.rows());
    let g4 = 4 * hd;
    let wp = Packed::from_rows(w_hh, g4, hd);
    let mut dh = g_hn.to_vec();
    let mut dc = g_cn.to_vec();
    // SAFETY: the tasks write every row of every step, whole.
    let mut d_gates = unsafe { written_later(n * g4) };
    let visits: Vec<usize> = s.order().into_iter().rev().collect();
    let (pd, pdh, pdc) = (
        super::super::SendPtr(d_gates.as_mut_ptr()),
        super::super::SendPtr(dh.as_mut_ptr()),
        super::super::SendPtr(dc.as_mut_ptr()),
    );
    super::super::parallel::tasks(s.batch.div_ceil(ROW_CHUNK), |chunk| {
        let r0 = chunk * ROW_CHUNK;
        let r1 = (r0 + ROW_CHUNK).min(s.batch);
        for &t in &visits {
            let (bs, off) = (s.sizes[t], s.offsets[t]);
            let m = r1.min(bs).saturating_sub(r0);
            if m == 0 {
                continue;
            }
            // SAFETY: rows r0..r0 + m of `dh`/`dc` and rows off + r0.. of
            // `d_gates` belong to this task only; all outlive the region.
            let (dhs, dcs, ds) = unsafe {
                (
                    part_mut(pdh, r0 * hd, m * hd),
                    part_mut(pdc, r0 * hd, m * hd),
                    part_mut(pd, (off + r0) * g4, m * g4),
                )
            };
            for i in 0..m {
                let row = off + r0 + i;
                let (a, rest) = ds[i * g4..(i + 1) * g4].split_at_mut(hd);
                let (b, rest) = rest.split_at_mut(hd);
                let (c, d) = rest.split_at_mut(hd);
                lstm_units_backward(
                    std::array::from_fn(|g| &f.gates[row * g4 + g * hd..row * g4 + (g + 1) * hd]),
                    &f.c[row * hd..(row + 1) * hd],
                    &f.c_prev[row * hd..(row + 1) * hd],
                    &g_out[row * hd..(row + 1) * hd],
                    &dhs[i * hd..(i + 1) * hd],
                    &mut dcs[i * hd..(i + 1) * hd],
                    [a, b, c, d],
                );
            }
            packed_mm(ds, m, &wp, dhs, false);
        }
    });
    (d_gates, dh, dc)
}

/// The saved parts of [`LstmForward`] that backward reads.
pub(crate) struct LstmForwardRef<'a, T> {
    pub gates: &'a [T],
    pub c: &'a [T],
    pub c_prev: &'a [T],
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both splits of the LSTM loops compute the same numbers, on a packed
    /// sequence with rows that end early (and, in reverse, start late).
    #[test]
    fn lstm_row_and_unit_splits_agree() {
        let hd = 40;
        let val = |i: usize| ((i * 37 % 23) as f64 - 11.0) / 40.0;
        for reverse in [false, true] {
            let s = Steps::new(hd, vec![7, 7, 5, 2], reverse);
            let n = s.rows();
            let gi: Vec<f64> = (0..n * 4 * hd).map(val).collect();
            let w: Vec<f64> = (0..4 * hd * hd).map(|i| val(i + 5)).collect();
            let bias: Vec<f64> = (0..4 * hd).map(|i| val(i + 11)).collect();
            let h0: Vec<f64> = (0..7 * hd).map(|i| val(i + 3)).collect();
            let c0: Vec<f64> = (0..7 * hd).map(|i| val(i + 7)).collect();
            let a = lstm_forward_rows(&s, &gi, &h0, &c0, &w, Some(&bias));
            let b = lstm_forward_units(&s, &gi, &h0, &c0, &w, Some(&bias));
            let close = |x: &[f64], y: &[f64]| {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| (p - q).abs() < 1e-12)
            };
            assert!(close(&a.out, &b.out) && close(&a.h_n, &b.h_n) && close(&a.c_n, &b.c_n));
            assert!(close(&a.gates, &b.gates) && close(&a.h_prev, &b.h_prev));
            let g_out: Vec<f64> = (0..n * hd).map(|i| val(i + 2)).collect();
            let g_hn: Vec<f64> = (0..7 * hd).map(|i| val(i + 9)).collect();
            let g_cn: Vec<f64> = (0..7 * hd).map(|i| val(i + 13)).collect();
            let saved = LstmForwardRef {
                gates: &a.gates,
                c: &a.c,
                c_prev: &a.c_prev,
            };
            let x = lstm_backward_rows(&s, &saved, &g_out, &g_hn, &g_cn, &w);
            let y = lstm_backward_units(&s, &saved, &g_out, &g_hn, &g_cn, &w);
            assert!(close(&x.0, &y.0) && close(&x.1, &y.1) && close(&x.2, &y.2));
        }
    }

    /// One LSTM step by the formulas, against the loop, and a finite-difference
    /// check of the loop's backward on a two-step, two-length packed sequence.
    #[test]
    fn lstm_loop_matches_formulas_and_differences() {
        let hd = 2;
        let s = Steps::new(hd, vec![2, 1], false);
        let n = s.rows();
        let val = |i: usize| ((i * 37 % 17) as f64 - 8.0) / 10.0;
        let gi: Vec<f64> = (0..n * 4 * hd).map(val).collect();
        let w: Vec<f64> = (0..4 * hd * hd).map(|i| val(i + 5)).collect();
        let bias: Vec<f64> = (0..4 * hd).map(|i| val(i + 11)).collect();
        let h0: Vec<f64> = (0..2 * hd).map(|i| val(i + 3)).collect();
        let c0: Vec<f64> = (0..2 * hd).map(|i| val(i + 7)).collect();
        let fwd = lstm_forward(&s, &gi, &h0, &c0, &w, Some(&bias));
        // Step 0, row 0, unit 0 by hand.
        let pre: Vec<f64> = (0..4)
            .map(|k| {
                gi[k * hd] + bias[k * hd] + (0..hd).map(|m| h0[m] * w[k * hd * hd + m]).sum::<f64>()
            })
            .collect();
        let sg = |x: f64| 1.0 / (1.0 + (-x).exp());
        let c = sg(pre[1]) * c0[0] + sg(pre[0]) * pre[2].tanh();
        assert!((fwd.out[0] - sg(pre[3]) * c.tanh()).abs() < 1e-12);
        // Loss = sum(out * wts) + sum(h_n) + 2 sum(c_n); gradient w.r.t. gi.
        let wts: Vec<f64> = (0..n * hd).map(|i| val(i + 2)).collect();
        let loss = |gi: &[f64]| {
            let f = lstm_forward(&s, gi, &h0, &c0, &w, Some(&bias));
            f.out.iter().zip(&wts).map(|(a, b)| a * b).sum::<f64>()
                + f.h_n.iter().sum::<f64>()
                + 2.0 * f.c_n.iter().sum::<f64>()
        };
        let (d, _, _) = lstm_backward(
            &s,
            &LstmForwardRef {
                gates: &fwd.gates,
                c: &fwd.c,
                c_prev: &fwd.c_prev,
            },
            &wts,
            &vec![1.0; 2 * hd],
            &vec![2.0; 2 * hd],
            &w,
        );
        for k in 0..gi.len() {
            let (mut a, mut b) = (gi.clone(), gi.clone());
            a[k] += 1e-6;
            b[k] -= 1e-6;
            let fd = (loss(&a) - loss(&b)) / 2e-6;
            assert!((fd - d[k]).abs() < 1e-6, "gi[{k}]: {fd} vs {}", d[k]);
        }
    }
}

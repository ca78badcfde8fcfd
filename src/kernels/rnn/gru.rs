//! The GRU layer's loops (gate order r, z, n), forward and backward, split
//! across the pool either by batch rows for the whole sequence or by the
//! columns of each step's recurrent product.

use multiversion::multiversion;

use super::super::rnn_gemm::{packed_mm, small_nn, Packed, Real};
use super::{part_mut, transpose, written_later, Steps, ROW_CHUNK};

/// One batch row of the GRU step; `act` receives r, z, n and `W_hn h + b_hn`.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn gru_row_forward<T: Real>(x: &[T], p: &[T], h: &mut [T], act: &mut [T]) {
    let hd = h.len();
    let (x, p, act) = (&x[..3 * hd], &p[..3 * hd], &mut act[..4 * hd]);
    for j in 0..hd {
        let r = (x[j] + p[j]).sigmoid();
        let z = (x[hd + j] + p[hd + j]).sigmoid();
        let hn = p[2 * hd + j];
        let n = (x[2 * hd + j] + r * hn).tanh();
        act[j] = r;
        act[hd + j] = z;
        act[2 * hd + j] = n;
        act[3 * hd + j] = hn;
        h[j] = n + z * (h[j] - n);
    }
}

/// One batch row of the GRU step's backward. `dh` holds the gradient reaching
/// the step's output from later steps and is replaced by the direct part of
/// the previous state's gradient (`z` times it); the caller adds the rest.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn gru_row_backward<T: Real>(
    act: &[T],
    h_prev: &[T],
    g_out: &[T],
    dh: &mut [T],
    d_gi: &mut [T],
    d_gh: &mut [T],
) {
    let hd = dh.len();
    let one = T::one();
    let (act, h_prev, g_out) = (&act[..4 * hd], &h_prev[..hd], &g_out[..hd]);
    let (d_gi, d_gh) = (&mut d_gi[..3 * hd], &mut d_gh[..3 * hd]);
    for j in 0..hd {
        let (r, z, n, hn) = (act[j], act[hd + j], act[2 * hd + j], act[3 * hd + j]);
        let d = g_out[j] + dh[j];
        let dn = d * (one - z) * (one - n * n);
        let dz = d * (h_prev[j] - n) * z * (one - z);
        let dr = dn * hn * r * (one - r);
        d_gi[j] = dr;
        d_gi[hd + j] = dz;
        d_gi[2 * hd + j] = dn;
        d_gh[j] = dr;
        d_gh[hd + j] = dz;
        d_gh[2 * hd + j] = dn * r;
        dh[j] = d * z;
    }
}

/// `gates[bs, g] = bias + h[bs, H] @ w_hh^T`, given `w_t` = `w_hh^T` (`[H, g]`).
fn recurrent_product<T: Real>(
    h: &[T],
    w_t: &[T],
    bias: Option<&[T]>,
    bs: usize,
    hidden: usize,
    gates: &mut [T],
) {
    let g = w_t.len() / hidden.max(1);
    match bias {
        Some(b) => {
            for row in gates[..bs * g].chunks_exact_mut(g) {
                row.copy_from_slice(b);
            }
        }
        None => gates[..bs * g].fill(T::zero()),
    }
    small_nn(
        &h[..bs * hidden],
        w_t,
        bs,
        g,
        hidden,
        &mut gates[..bs * g],
        true,
    );
}

/// `out[bs, H] (+)= d[bs, g] @ w_hh` (`w_hh` `[g, H]`): the gradient reaching
/// the previous state.
fn state_gradient<T: Real>(
    d: &[T],
    w_hh: &[T],
    bs: usize,
    hidden: usize,
    out: &mut [T],
    add: bool,
) {
    let g = w_hh.len() / hidden.max(1);
    small_nn(d, w_hh, bs, hidden, g, &mut out[..bs * hidden], add);
}

/// What the GRU forward loop keeps: output, final state, and per step the
/// gates r, z, n and the recurrent part of n (`W_hn h + b_hn`), `[N, 4H]`.
pub(crate) struct GruForward<T> {
    pub out: Vec<T>,
    pub h_n: Vec<T>,
    pub gates: Vec<T>,
    pub h_prev: Vec<T>,
}

/// The GRU recurrence (gate order r, z, n):
/// `n = tanh(i_n + r * (W_hn h + b_hn))`, `h' = (1 - z) n + z h`.
pub(crate) fn gru_forward<T: Real>(
    s: &Steps,
    gi: &[T],
    h0: &[T],
    w_hh: &[T],
    b_hh: Option<&[T]>,
) -> GruForward<T> {
    if gru_row_split(s) {
        gru_forward_rows(s, gi, h0, w_hh, b_hh)
    } else {
        gru_forward_cols(s, gi, h0, w_hh, b_hh)
    }
}

/// Whether the GRU loops split the batch (see
/// [`use_row_split`](super::lstm::use_row_split)); otherwise each step's
/// product is split by columns when it is large enough.
fn gru_row_split(s: &Steps) -> bool {
    s.batch >= 2 * ROW_CHUNK || s.batch * 3 * s.hidden * s.hidden < 1 << 16
}

/// `gru_forward` with each step's product split by columns across the pool.
fn gru_forward_cols<T: Real>(
    s: &Steps,
    gi: &[T],
    h0: &[T],
    w_hh: &[T],
    b_hh: Option<&[T]>,
) -> GruForward<T> {
    let (hd, n) = (s.hidden, s.rows());
    let (g3, g4) = (3 * hd, 4 * hd);
    let w_t = transpose(w_hh, g3, hd);
    let mut h = h0.to_vec();
    let mut r = GruForward {
        out: crate::error::filled_vec(n * hd, T::zero()),
        h_n: Vec::new(),
        gates: crate::error::filled_vec(n * g4, T::zero()),
        h_prev: crate::error::filled_vec(n * hd, T::zero()),
    };
    let mut pre = crate::error::filled_vec(s.batch * g3, T::zero());
    for t in s.order() {
        let (bs, off) = (s.sizes[t], s.offsets[t]);
        recurrent_product(&h, &w_t, b_hh, bs, hd, &mut pre);
        r.h_prev[off * hd..(off + bs) * hd].copy_from_slice(&h[..bs * hd]);
        for b in 0..bs {
            let row = off + b;
            gru_row_forward(
                &gi[row * g3..(row + 1) * g3],
                &pre[b * g3..(b + 1) * g3],
                &mut h[b * hd..(b + 1) * hd],
                &mut r.gates[row * g4..(row + 1) * g4],
            );
            r.out[row * hd..(row + 1) * hd].copy_from_slice(&h[b * hd..(b + 1) * hd]);
        }
    }
    r.h_n = h;
    r
}

/// Gradients of the GRU loop: with respect to `gi` `[N, 3H]`, to the recurrent
/// product `[N, 3H]` (they differ in the n gate, scaled by r) and to `h0`.
pub(crate) fn gru_backward<T: Real>(
    s: &Steps,
    gates: &[T],
    h_prev: &[T],
    g_out: &[T],
    g_hn: &[T],
    w_hh: &[T],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    if gru_row_split(s) {
        gru_backward_rows(s, gates, h_prev, g_out, g_hn, w_hh)
    } else {
        gru_backward_cols(s, gates, h_prev, g_out, g_hn, w_hh)
    }
}

/// `gru_forward` split by batch rows, as [`lstm_forward_rows`].
fn gru_forward_rows<T: Real>(
    s: &Steps,
    gi: &[T],
    h0: &[T],
    w_hh: &[T],
    b_hh: Option<&[T]>,
) -> GruForward<T> {
    let (hd, n) = (s.hidden, s.rows());
    let (g3, g4) = (3 * hd, 4 * hd);
    let wp = Packed::from_transposed(w_hh, g3, hd);
    let mut h = h0.to_vec();
    // SAFETY (all three): the tasks write every row of every step, whole.
    let mut r = unsafe {
        GruForward {
            out: written_later(n * hd),
            h_n: Vec::new(),
            gates: written_later(n * g4),
            h_prev: written_later(n * hd),
        }
    };
    let order = s.order();
    let ptr = |v: &mut Vec<T>| super::super::SendPtr(v.as_mut_ptr());
    let (ph, pout, pg, php) = (
        ptr(&mut h),
        ptr(&mut r.out),
        ptr(&mut r.gates),
        ptr(&mut r.h_prev),
    );
    super::super::parallel::tasks(s.batch.div_ceil(ROW_CHUNK), |chunk| {
        let r0 = chunk * ROW_CHUNK;
        let r1 = (r0 + ROW_CHUNK).min(s.batch);
        let mut pre = crate::error::filled_vec(ROW_CHUNK * g3, T::zero());
        for &t in &order {
            let (bs, off) = (s.sizes[t], s.offsets[t]);
            let m = r1.min(bs).saturating_sub(r0);
            if m == 0 {
                continue;
            }
            // SAFETY: rows r0..r0 + m of the state and rows off + r0.. of the
            // packed buffers belong to this task only; all outlive the region.
            let hs = unsafe { part_mut(ph, r0 * hd, m * hd) };
            unsafe { part_mut(php, (off + r0) * hd, m * hd) }.copy_from_slice(hs);
            for p in pre[..m * g3].chunks_exact_mut(g3) {
                match b_hh {
                    Some(b) => p.copy_from_slice(b),
                    None => p.fill(T::zero()),
                }
            }
            packed_mm(hs, m, &wp, &mut pre[..m * g3], true);
            for i in 0..m {
                let row = off + r0 + i;
                let h_row = &mut hs[i * hd..(i + 1) * hd];
                // SAFETY: as above.
                gru_row_forward(
                    &gi[row * g3..(row + 1) * g3],
                    &pre[i * g3..(i + 1) * g3],
                    h_row,
                    unsafe { part_mut(pg, row * g4, g4) },
                );
                unsafe { part_mut(pout, row * hd, hd) }.copy_from_slice(h_row);
            }
        }
    });
    r.h_n = h;
    r
}

/// `gru_backward` split by batch rows, as [`lstm_backward_rows`].
fn gru_backward_rows<T: Real>(
    s: &Steps,
    gates: &[T],
    h_prev: &[T],
    g_out: &[T],
    g_hn: &[T],
    w_hh: &[T],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (hd, n) = (s.hidden, s.rows());
    let (g3, g4) = (3 * hd, 4 * hd);
    let wp = Packed::from_rows(w_hh, g3, hd);
    let mut dh = g_hn.to_vec();
    // SAFETY: the tasks write every row of every step, whole.
    let (mut d_gi, mut d_gh) = unsafe { (written_later(n * g3), written_later(n * g3)) };
    let visits: Vec<usize> = s.order().into_iter().rev().collect();
    let (pgi, pgh, pdh) = (
        super::super::SendPtr(d_gi.as_mut_ptr()),
        super::super::SendPtr(d_gh.as_mut_ptr()),
        super::super::SendPtr(dh.as_mut_ptr()),
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
            // SAFETY: rows r0..r0 + m of `dh` and rows off + r0.. of the
            // gradient buffers belong to this task only; all outlive the region.
            let (dhs, dgi, dgh) = unsafe {
                (
                    part_mut(pdh, r0 * hd, m * hd),
                    part_mut(pgi, (off + r0) * g3, m * g3),
                    part_mut(pgh, (off + r0) * g3, m * g3),
                )
            };
            for i in 0..m {
                let row = off + r0 + i;
                gru_row_backward(
                    &gates[row * g4..(row + 1) * g4],
                    &h_prev[row * hd..(row + 1) * hd],
                    &g_out[row * hd..(row + 1) * hd],
                    &mut dhs[i * hd..(i + 1) * hd],
                    &mut dgi[i * g3..(i + 1) * g3],
                    &mut dgh[i * g3..(i + 1) * g3],
                );
            }
            packed_mm(dgh, m, &wp, dhs, true);
        }
    });
    (d_gi, d_gh, dh)
}

/// `gru_backward` with each step's product split by columns.
fn gru_backward_cols<T: Real>(
    s: &Steps,
    gates: &[T],
    h_prev: &[T],
    g_out: &[T],
    g_hn: &[T],
    w_hh: &[T],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (hd, n) = (s.hidden, s.rows());
    let (g3, g4) = (3 * hd, 4 * hd);
    let mut dh = g_hn.to_vec();
    let mut d_gi = crate::error::filled_vec(n * g3, T::zero());
    let mut d_gh = crate::error::filled_vec(n * g3, T::zero());
    for t in s.order().into_iter().rev() {
        let (bs, off) = (s.sizes[t], s.offsets[t]);
        for b in 0..bs {
            let row = off + b;
            let (d_gi_row, d_gh_row) = (
                &mut d_gi[row * g3..(row + 1) * g3],
                &mut d_gh[row * g3..(row + 1) * g3],
            );
            gru_row_backward(
                &gates[row * g4..(row + 1) * g4],
                &h_prev[row * hd..(row + 1) * hd],
                &g_out[row * hd..(row + 1) * hd],
                &mut dh[b * hd..(b + 1) * hd],
                d_gi_row,
                d_gh_row,
            );
        }
        state_gradient(
            &d_gh[off * g3..(off + bs) * g3],
            w_hh,
            bs,
            hd,
            &mut dh,
            true,
        );
    }
    (d_gi, d_gh, dh)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both splits of the GRU loops compute the same numbers, on a packed
    /// sequence with rows that end early (and, in reverse, start late).
    #[test]
    fn gru_row_and_column_splits_agree() {
        let hd = 40;
        let val = |i: usize| ((i * 41 % 29) as f64 - 14.0) / 50.0;
        for reverse in [false, true] {
            let s = Steps::new(hd, vec![9, 9, 6, 1], reverse);
            let n = s.rows();
            let gi: Vec<f64> = (0..n * 3 * hd).map(val).collect();
            let w: Vec<f64> = (0..3 * hd * hd).map(|i| val(i + 5)).collect();
            let bias: Vec<f64> = (0..3 * hd).map(|i| val(i + 11)).collect();
            let h0: Vec<f64> = (0..9 * hd).map(|i| val(i + 3)).collect();
            let a = gru_forward_rows(&s, &gi, &h0, &w, Some(&bias));
            let b = gru_forward_cols(&s, &gi, &h0, &w, Some(&bias));
            let close = |x: &[f64], y: &[f64]| {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| (p - q).abs() < 1e-12)
            };
            assert!(close(&a.out, &b.out) && close(&a.h_n, &b.h_n));
            assert!(close(&a.gates, &b.gates) && close(&a.h_prev, &b.h_prev));
            let g_out: Vec<f64> = (0..n * hd).map(|i| val(i + 2)).collect();
            let g_hn: Vec<f64> = (0..9 * hd).map(|i| val(i + 9)).collect();
            let x = gru_backward_rows(&s, &a.gates, &a.h_prev, &g_out, &g_hn, &w);
            let y = gru_backward_cols(&s, &a.gates, &a.h_prev, &g_out, &g_hn, &w);
            assert!(close(&x.0, &y.0) && close(&x.1, &y.1) && close(&x.2, &y.2));
        }
    }
}

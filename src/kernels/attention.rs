//! Scaled dot-product attention, unmasked or causal, one (batch, head) matrix
//! at a time: `softmax(q k^T * scale) v` and its backward rule. The composite
//! form writes the scores, the weights and their gradients to memory between
//! five ops (each a parallel region of its own); here a head's scores stay in
//! a task's scratch rows while both products and the softmax run over them.
//!
//! Each step is the step the composite form takes (`q * scale`, then the
//! product with `k^T`, the softmax rows, the product with `v`, through the
//! same GEMM calls and row kernels), so the forward gives its bits exactly.

use super::matmul::{gemm_into, Mat};
use super::softmax::{softmax_rows, softmax_rows_backward};
use super::SendPtr;
use crate::tensor::{Element, Float};

/// Sizes: `count` independent heads of `l` queries against `s` keys, with
/// query/key width `e` and value width `ev`.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub count: usize,
    pub l: usize,
    pub s: usize,
    pub e: usize,
    pub ev: usize,
}

/// A strided operand: head `h` is the matrix at `ptr + offs[h]` with the
/// given row and column strides.
pub struct Heads<'a, T> {
    pub ptr: *const T,
    pub offs: &'a [usize],
    pub rs: usize,
    pub cs: usize,
}

// SAFETY: the operands are only read, by tasks that each take whole heads.
unsafe impl<T> Sync for Heads<'_, T> {}

impl<T> Heads<'_, T> {
    fn mat(&self, h: usize, rows: usize, cols: usize) -> Mat<T> {
        Mat {
            ptr: self.ptr.wrapping_add(self.offs[h]),
            rows,
            cols,
            row_stride: self.rs,
            col_stride: self.cs,
        }
    }

    /// The same matrix transposed.
    fn mat_t(&self, h: usize, rows: usize, cols: usize) -> Mat<T> {
        Mat {
            ptr: self.ptr.wrapping_add(self.offs[h]),
            rows: cols,
            cols: rows,
            row_stride: self.cs,
            col_stride: self.rs,
        }
    }
}

/// Room for `n` elements that the products fill: gemm writes a destination
/// it is not told to add to without reading it, so no zeroing pass is needed.
fn unfilled<T: Float>(n: usize) -> Vec<T> {
    super::build_vec(n, |_| {})
}

fn dense<T>(ptr: *const T, rows: usize, cols: usize) -> Mat<T> {
    Mat {
        ptr,
        rows,
        cols,
        row_stride: cols,
        col_stride: 1,
    }
}

fn dense_t<T>(ptr: *const T, rows: usize, cols: usize) -> Mat<T> {
    Mat {
        ptr,
        rows: cols,
        cols: rows,
        row_stride: 1,
        col_stride: cols,
    }
}

/// `q * scale` of head `h` into the dense `l x e` rows of `out`.
fn scaled_q<T: Float>(q: &Heads<T>, h: usize, d: Dims, scale: T, out: &mut [T]) {
    let base = q.ptr.wrapping_add(q.offs[h]);
    for i in 0..d.l {
        let row = &mut out[i * d.e..(i + 1) * d.e];
        for (j, o) in row.iter_mut().enumerate() {
            // SAFETY: inside head `h` of the operand the caller described.
            *o = unsafe { *base.add(i * q.rs + j * q.cs) } * scale;
        }
    }
}

/// Runs `f(h0, h1)` over ranges of heads: one range per task, several tasks
/// per thread so a thread the OS takes away delays only its own. Small heads
/// go in one range on the calling thread.
fn for_heads(d: Dims, f: impl Fn(usize, usize) + Sync) {
    let work = d.count * d.l * d.s * (d.e + d.ev);
    super::parallel::run(work, |threads| {
        if threads == 1 || d.count == 1 {
            return f(0, d.count);
        }
        let per = d.count.div_ceil(threads * 4).max(1);
        super::parallel::tasks(d.count.div_ceil(per), |t| {
            f(t * per, ((t + 1) * per).min(d.count));
        });
    });
}

/// Query `i` may not see key `j > i` (the top-left aligned causal mask): its
/// score becomes `-inf`, as the composite form's `masked_fill` makes it.
fn mask_causal<T: Float>(scores: &mut [T], d: Dims) {
    if d.s == 0 {
        return;
    }
    let neg_inf = <T as Element>::from_f64(f64::NEG_INFINITY);
    for (i, row) in scores.chunks_exact_mut(d.s).enumerate().take(d.l) {
        if i + 1 < d.s {
            row[i + 1..].fill(neg_inf);
        }
    }
}

/// The output (`count x l x ev`) and the attention weights (`count x l x
/// s`, kept for the backward rule), both dense. With `causal`, a masked
/// weight is exactly zero, so the backward rule needs no mask of its own.
pub fn forward<T: Float>(
    d: Dims,
    q: &Heads<T>,
    k: &Heads<T>,
    v: &Heads<T>,
    scale: T,
    causal: bool,
) -> (Vec<T>, Vec<T>) {
    let mut out: Vec<T> = unfilled(d.count * d.l * d.ev);
    let mut p: Vec<T> = unfilled(d.count * d.l * d.s);
    let (po, pp) = (SendPtr(out.as_mut_ptr()), SendPtr(p.as_mut_ptr()));
    // One head alone may be large: then its products use the whole pool.
    let parallel = d.count == 1;
    for_heads(d, |h0, h1| {
        let mut qs = crate::error::filled_vec(d.l * d.e, <T as Element>::zero());
        let mut scores = crate::error::filled_vec(d.l * d.s, <T as Element>::zero());
        for h in h0..h1 {
            scaled_q(q, h, d, scale, &mut qs);
            // SAFETY: head `h` writes only its own block of `p` and `out`;
            // the scratch rows are this task's.
            unsafe {
                gemm_into(
                    dense(qs.as_ptr(), d.l, d.e),
                    k.mat_t(h, d.s, d.e),
                    scores.as_mut_ptr(),
                    parallel,
                );
                if causal {
                    mask_causal(&mut scores, d);
                }
                let ph = std::slice::from_raw_parts_mut(pp.get().add(h * d.l * d.s), d.l * d.s);
                softmax_rows(&scores, ph, d.s);
                gemm_into(
                    dense(ph.as_ptr(), d.l, d.s),
                    v.mat(h, d.s, d.ev),
                    po.get().add(h * d.l * d.ev),
                    parallel,
                );
            }
        }
    });
    (out, p)
}

/// The gradients that were asked for.
pub struct Grads<T> {
    pub q: Option<Vec<T>>,
    pub k: Option<Vec<T>>,
    pub v: Option<Vec<T>>,
}

/// The backward rule from the output's gradient `g` (`count x l x ev`) and
/// the saved weights `p`: `dv = p^T g`; `ds = softmax'(g v^T)`;
/// `dq = (ds k) * scale`; `dk = ds^T (q * scale)`.
#[allow(clippy::too_many_arguments)]
pub fn backward<T: Float>(
    d: Dims,
    g: &Heads<T>,
    q: &Heads<T>,
    k: &Heads<T>,
    v: &Heads<T>,
    p: &[T],
    scale: T,
    needs: [bool; 3],
) -> Grads<T> {
    let alloc = |need: bool, n: usize| need.then(|| unfilled(d.count * n));
    let mut dq = alloc(needs[0], d.l * d.e);
    let mut dk = alloc(needs[1], d.s * d.e);
    let mut dv = alloc(needs[2], d.s * d.ev);
    let ptr = |o: &mut Option<Vec<T>>| {
        SendPtr(o.as_mut().map_or(std::ptr::null_mut(), |v| v.as_mut_ptr()))
    };
    let (pq, pk, pv) = (ptr(&mut dq), ptr(&mut dk), ptr(&mut dv));
    let parallel = d.count == 1;
    for_heads(d, |h0, h1| {
        let mut dp = crate::error::filled_vec(d.l * d.s, <T as Element>::zero());
        let mut ds = crate::error::filled_vec(d.l * d.s, <T as Element>::zero());
        let mut qs = vec![<T as Element>::zero(); if needs[1] { d.l * d.e } else { 0 }];
        for h in h0..h1 {
            let ph = &p[h * d.l * d.s..(h + 1) * d.l * d.s];
            // SAFETY: head `h` writes only its own blocks of the gradients;
            // the scratch rows are this task's.
            unsafe {
                if needs[2] {
                    gemm_into(
                        dense_t(ph.as_ptr(), d.l, d.s),
                        g.mat(h, d.l, d.ev),
                        pv.get().add(h * d.s * d.ev),
                        parallel,
                    );
                }
                if !(needs[0] || needs[1]) {
                    continue;
                }
                gemm_into(
                    g.mat(h, d.l, d.ev),
                    v.mat_t(h, d.s, d.ev),
                    dp.as_mut_ptr(),
                    parallel,
                );
                softmax_rows_backward(&dp, ph, &mut ds, d.s);
                if needs[0] {
                    let out = pq.get().add(h * d.l * d.e);
                    gemm_into(
                        dense(ds.as_ptr(), d.l, d.s),
                        k.mat(h, d.s, d.e),
                        out,
                        parallel,
                    );
                    for x in std::slice::from_raw_parts_mut(out, d.l * d.e) {
                        *x = *x * scale;
                    }
                }
                if needs[1] {
                    scaled_q(q, h, d, scale, &mut qs);
                    gemm_into(
                        dense_t(ds.as_ptr(), d.l, d.s),
                        dense(qs.as_ptr(), d.l, d.e),
                        pk.get().add(h * d.s * d.e),
                        parallel,
                    );
                }
            }
        }
    });
    Grads {
        q: dq,
        k: dk,
        v: dv,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(
        d: Dims,
        q: &[f64],
        k: &[f64],
        v: &[f64],
        scale: f64,
        causal: bool,
    ) -> (Vec<f64>, Vec<f64>) {
        let mut out = vec![0.0; d.count * d.l * d.ev];
        let mut p = vec![0.0; d.count * d.l * d.s];
        for h in 0..d.count {
            for i in 0..d.l {
                let row: Vec<f64> = (0..d.s)
                    .map(|j| {
                        if causal && j > i {
                            return f64::NEG_INFINITY;
                        }
                        (0..d.e)
                            .map(|c| q[(h * d.l + i) * d.e + c] * k[(h * d.s + j) * d.e + c])
                            .sum::<f64>()
                            * scale
                    })
                    .collect();
                let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let z: f64 = row.iter().map(|x| (x - m).exp()).sum();
                for j in 0..d.s {
                    p[(h * d.l + i) * d.s + j] = (row[j] - m).exp() / z;
                }
                for c in 0..d.ev {
                    out[(h * d.l + i) * d.ev + c] = (0..d.s)
                        .map(|j| p[(h * d.l + i) * d.s + j] * v[(h * d.s + j) * d.ev + c])
                        .sum();
                }
            }
        }
        (out, p)
    }

    fn data(n: usize, seed: usize) -> Vec<f64> {
        (0..n)
            .map(|i| (((i + seed) * 7919) % 101) as f64 / 50.0 - 1.0)
            .collect()
    }

    fn heads<T>(x: &[T], offs: &[usize], cols: usize) -> Heads<'static, T> {
        Heads {
            ptr: x.as_ptr(),
            offs: Box::leak(offs.to_vec().into_boxed_slice()),
            rs: cols,
            cs: 1,
        }
    }

    #[test]
    fn forward_and_backward_match_the_definition() {
        for (d, causal) in [
            Dims {
                count: 1,
                l: 3,
                s: 5,
                e: 4,
                ev: 2,
            },
            Dims {
                count: 70,
                l: 9,
                s: 7,
                e: 5,
                ev: 6,
            },
        ]
        .into_iter()
        .flat_map(|d| [(d, false), (d, true)])
        {
            let (q, k, v) = (
                data(d.count * d.l * d.e, 1),
                data(d.count * d.s * d.e, 2),
                data(d.count * d.s * d.ev, 3),
            );
            let g = data(d.count * d.l * d.ev, 4);
            let offs = |n: usize| (0..d.count).map(|h| h * n).collect::<Vec<_>>();
            let (hq, hk, hv) = (
                heads(&q, &offs(d.l * d.e), d.e),
                heads(&k, &offs(d.s * d.e), d.e),
                heads(&v, &offs(d.s * d.ev), d.ev),
            );
            let hg = heads(&g, &offs(d.l * d.ev), d.ev);
            let scale = 0.7;
            let (out, p) = forward(d, &hq, &hk, &hv, scale, causal);
            let (want, want_p) = naive(d, &q, &k, &v, scale, causal);
            for (a, b) in out.iter().zip(&want).chain(p.iter().zip(&want_p)) {
                assert!((a - b).abs() < 1e-12, "{a} vs {b}");
            }
            // Finite differences of sum(out * g) in every input.
            let grads = backward(d, &hg, &hq, &hk, &hv, &p, scale, [true; 3]);
            let loss = |q: &[f64], k: &[f64], v: &[f64]| -> f64 {
                let (o, _) = naive(d, q, k, v, scale, causal);
                o.iter().zip(&g).map(|(a, b)| a * b).sum()
            };
            let eps = 1e-6;
            for (which, x, got) in [
                (0, &q, grads.q.as_ref().unwrap()),
                (1, &k, grads.k.as_ref().unwrap()),
                (2, &v, grads.v.as_ref().unwrap()),
            ] {
                for i in (0..x.len()).step_by(7) {
                    let (mut up, mut down) = (x.clone(), x.clone());
                    up[i] += eps;
                    down[i] -= eps;
                    let f = |y: &[f64]| match which {
                        0 => loss(y, &k, &v),
                        1 => loss(&q, y, &v),
                        _ => loss(&q, &k, y),
                    };
                    let fd = (f(&up) - f(&down)) / (2.0 * eps);
                    assert!(
                        (fd - got[i]).abs() < 1e-7,
                        "input {which}[{i}]: {fd} vs {}",
                        got[i]
                    );
                }
            }
            let only_v = backward(d, &hg, &hq, &hk, &hv, &p, scale, [false, false, true]);
            assert!(only_v.q.is_none() && only_v.k.is_none());
            assert_eq!(only_v.v.as_ref(), grads.v.as_ref());
        }
    }
}

//! Least squares through the singular value decomposition, for the forward
//! of `linalg.lstsq`: the solution, the numerical rank and the singular
//! values of every matrix pair in one call, in float64 whatever the input.
//!
//! The decomposition is one-sided Jacobi (Hestenes): plane rotations make
//! the columns of `A` (of `A^T` when `A` is wide) orthogonal, the rotations
//! accumulated in `V`; the column norms are the singular values. It is
//! accurate to a few ulps of the largest singular value, and for the small
//! matrices the Python layer hands it, several times faster than LAPACK
//! behind NumPy's per-call overhead. The solution is the minimum-norm one,
//! `sum_i v_i (u_i . b) / s_i` over the singular values above
//! `rcond * s_max`, which is what LAPACK's `gelsd` (NumPy's `lstsq`) gives.
//! The gradient is recorded by the Python layer (PyTorch's rule through
//! `pinv(A) B`).

use crate::error::{Error, Result};
use crate::tensor::{DType, Shape, Tensor};

/// One-sided Jacobi on `g` (`rows x cols`, column `j` at `g[j * rows..]`):
/// on return its columns are orthogonal, `v` (`cols x cols`, column-major)
/// holds the rotations, and the column norms are returned.
fn jacobi(g: &mut [f64], rows: usize, cols: usize, v: &mut [f64]) -> Vec<f64> {
    v.fill(0.0);
    for j in 0..cols {
        v[j * cols + j] = 1.0;
    }
    let dot = |g: &[f64], p: usize, q: usize| -> f64 {
        (0..rows).map(|r| g[p * rows + r] * g[q * rows + r]).sum()
    };
    for _sweep in 0..60 {
        let mut rotated = false;
        for p in 0..cols {
            for q in p + 1..cols {
                let (alpha, beta, gamma) = (dot(g, p, p), dot(g, q, q), dot(g, p, q));
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for r in 0..rows {
                    let (x, y) = (g[p * rows + r], g[q * rows + r]);
                    g[p * rows + r] = c * x - s * y;
                    g[q * rows + r] = s * x + c * y;
                }
                for r in 0..cols {
                    let (x, y) = (v[p * cols + r], v[q * cols + r]);
                    v[p * cols + r] = c * x - s * y;
                    v[q * cols + r] = s * x + c * y;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    (0..cols).map(|j| dot(g, j, j).sqrt()).collect()
}

/// The minimum-norm least-squares solution of one `m x n` system with `k`
/// right-hand sides (`a`, `b`, `x` row-major), keeping the singular values
/// above `cut * s_max`; its singular values, descending, into `sv`.
#[allow(clippy::too_many_arguments)]
fn solve(
    a: &[f64],
    b: &[f64],
    m: usize,
    n: usize,
    k: usize,
    cut: f64,
    x: &mut [f64],
    sv: &mut [f64],
) {
    // Orthogonalise the columns of A (tall) or of A^T (wide): `rows` long.
    let tall = m >= n;
    let (rows, cols) = if tall { (m, n) } else { (n, m) };
    let mut g = vec![0.0; rows * cols];
    for i in 0..m {
        for j in 0..n {
            // Column-major: column `c` of the matrix being orthogonalised.
            let (r, c) = if tall { (i, j) } else { (j, i) };
            g[c * rows + r] = a[i * n + j];
        }
    }
    let mut v = vec![0.0; cols * cols];
    let s = jacobi(&mut g, rows, cols, &mut v);
    let mut order: Vec<usize> = (0..cols).collect();
    order.sort_by(|&p, &q| s[q].total_cmp(&s[p]));
    for (o, &i) in sv.iter_mut().zip(&order) {
        *o = s[i];
    }
    let smax = order.first().map_or(0.0, |&i| s[i]);
    x.fill(0.0);
    for &i in &order {
        // The input is finite, so no singular value is NaN.
        if s[i] <= cut * smax {
            continue;
        }
        let s2 = s[i] * s[i];
        // A = U S V^T with U = G / s (tall); A = V S (G / s)^T (wide).
        let (left, right): (Vec<f64>, Vec<f64>) = if tall {
            (
                g[i * rows..(i + 1) * rows].to_vec(),
                v[i * cols..(i + 1) * cols].to_vec(),
            )
        } else {
            (
                v[i * cols..(i + 1) * cols].to_vec(),
                g[i * rows..(i + 1) * rows].to_vec(),
            )
        };
        // x += right * (left . b) / s^2 (left = u s when tall, right = v s when wide).
        for col in 0..k {
            let proj: f64 = (0..m).map(|r| left[r] * b[r * k + col]).sum::<f64>() / s2;
            for (r, &w) in right.iter().enumerate() {
                x[r * k + col] += w * proj;
            }
        }
    }
}

/// `lstsq(a, b, rcond)` for `a` of shape `(*, m, n)` and `b` of shape
/// `(*, m, k)` with the same batch: `(x, rank, singular_values)`, `x` of
/// shape `(*, n, k)` and the singular values in `a`'s dtype, the rank int64.
/// Singular values at most `rcond * s_max` count as zero (for the rank and
/// the solution); a negative `rcond` solves with the dtype's epsilon, as
/// LAPACK does, and counts every nonzero singular value. Not recorded.
pub(crate) fn lstsq(a: &Tensor, b: &Tensor, rcond: f64) -> Result<(Tensor, Tensor, Tensor)> {
    let dt = a.dtype();
    if !matches!(dt, DType::F32 | DType::F64) || b.dtype() != dt {
        return Err(Error::runtime(
            "linalg.lstsq: expected float32 or float64 operands of one dtype",
        ));
    }
    let (sa, sb) = (a.shape(), b.shape());
    let nd = sa.len();
    if nd < 2 || sb.len() != nd || sa[..nd - 2] != sb[..nd - 2] || sb[nd - 2] != sa[nd - 2] {
        return Err(Error::runtime(
            "linalg.lstsq: expected (*, m, n) and (*, m, k) operands with one batch",
        ));
    }
    let (m, n, k) = (sa[nd - 2], sa[nd - 1], sb[nd - 1]);
    let batch: usize = sa[..nd - 2].iter().product();
    let p = m.min(n);
    // Broadcast (expanded) operands are read as their contiguous copies.
    let (ad, bd) = (
        super::cast_data(&a.contiguous_data(), DType::F64),
        super::cast_data(&b.contiguous_data(), DType::F64),
    );
    let (av, bv) = (ad.view(), bd.view());
    let (a64, b64) = (
        av.as_slice::<f64>().unwrap_or(&[]),
        bv.as_slice::<f64>().unwrap_or(&[]),
    );
    if a64.iter().chain(b64).any(|v| !v.is_finite()) {
        // LAPACK's SVD can loop for ever on such input; PyTorch's error.
        return Err(Error::runtime(
            "linalg.lstsq: The algorithm failed to converge because the input matrix contained non-finite values.",
        ));
    }
    let eps = if dt == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let cut = if rcond < 0.0 { eps } else { rcond };
    let mut x = crate::error::filled_vec(batch * n * k, 0.0f64);
    let mut sv = crate::error::filled_vec(batch * p, 0.0f64);
    let mut rank = crate::error::filled_vec(batch, 0i64);
    if m * n > 0 {
        for i in 0..batch {
            let svi = &mut sv[i * p..(i + 1) * p];
            solve(
                &a64[i * m * n..(i + 1) * m * n],
                &b64[i * m * k..(i + 1) * m * k],
                m,
                n,
                k,
                cut,
                &mut x[i * n * k..(i + 1) * n * k],
                svi,
            );
            let smax = svi.first().copied().unwrap_or(0.0);
            rank[i] = svi.iter().filter(|&&s| s > rcond * smax).count() as i64;
        }
    }
    let lead = &sa[..nd - 2];
    let shape = |tail: &[usize]| -> Shape { lead.iter().chain(tail).copied().collect() };
    Ok((
        super::back_to(Tensor::from_vec(x, shape(&[n, k])), dt),
        Tensor::from_vec(rank, shape(&[])),
        super::back_to(Tensor::from_vec(sv, shape(&[p])), dt),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(t: &Tensor) -> Vec<f64> {
        let c = super::super::cast_data(t, DType::F64);
        let v = c.view();
        v.as_slice::<f64>().unwrap().to_vec()
    }

    fn mat(v: &[f64], shape: &[usize]) -> Tensor {
        Tensor::from_vec(v.to_vec(), Shape::from_slice(shape))
    }

    #[test]
    fn a_tall_system_gets_the_normal_equations_solution() {
        // A^T A x = A^T b for A = [[1, 0], [1, 1], [1, 2]], b = [1, 2, 4]:
        // [[3, 3], [3, 5]] x = [7, 10] gives x = [5/6, 3/2].
        let a = mat(&[1.0, 0.0, 1.0, 1.0, 1.0, 2.0], &[3, 2]);
        let b = mat(&[1.0, 2.0, 4.0], &[3, 1]);
        let (x, rank, sv) = lstsq(&a, &b, 1e-15).unwrap();
        let x = values(&x);
        assert!(
            (x[0] - 5.0 / 6.0).abs() < 1e-14 && (x[1] - 1.5).abs() < 1e-14,
            "{x:?}"
        );
        assert_eq!(values(&rank), vec![2.0]);
        // The singular values squared are the eigenvalues 4 +- sqrt(10) of A^T A.
        let s = values(&sv);
        assert!((s[0] * s[0] - (4.0 + 10f64.sqrt())).abs() < 1e-13);
        assert!((s[1] * s[1] - (4.0 - 10f64.sqrt())).abs() < 1e-13);
    }

    #[test]
    fn a_wide_or_rank_deficient_system_gets_the_minimum_norm_solution() {
        // x1 + x2 = 2: the minimum-norm solution is (1, 1).
        let (x, rank, _) = lstsq(&mat(&[1.0, 1.0], &[1, 2]), &mat(&[2.0], &[1, 1]), 1e-15).unwrap();
        assert_eq!(values(&rank), vec![1.0]);
        let x = values(&x);
        assert!((x[0] - 1.0).abs() < 1e-14 && (x[1] - 1.0).abs() < 1e-14);
        // Two equal columns: rank 1, the solution split evenly between them.
        let a = mat(&[1.0, 1.0, 2.0, 2.0], &[2, 2]);
        let (x, rank, _) = lstsq(&a, &mat(&[3.0, 6.0], &[2, 1]), 1e-12).unwrap();
        assert_eq!(values(&rank), vec![1.0]);
        let x = values(&x);
        assert!(
            (x[0] - 1.5).abs() < 1e-12 && (x[1] - 1.5).abs() < 1e-12,
            "{x:?}"
        );
    }

    #[test]
    fn a_broadcast_matrix_is_read_in_full() {
        let a = mat(&[1.0, 0.0, 1.0, 1.0, 1.0, 2.0], &[3, 2]);
        let a2 = super::super::expand(&a, &[2, 3, 2]).unwrap();
        let b = mat(&[1.0, 2.0, 4.0, 0.0, 1.0, 2.0], &[2, 3, 1]);
        let x = values(&lstsq(&a2, &b, 1e-15).unwrap().0);
        // The second right-hand side is A [0, 1] exactly.
        assert!(
            (x[0] - 5.0 / 6.0).abs() < 1e-14 && (x[1] - 1.5).abs() < 1e-14,
            "{x:?}"
        );
        assert!(x[2].abs() < 1e-14 && (x[3] - 1.0).abs() < 1e-14, "{x:?}");
    }

    #[test]
    fn non_finite_input_is_refused_and_empty_input_gives_zeros() {
        let a = mat(&[1.0, f64::NAN], &[2, 1]);
        assert!(lstsq(&a, &mat(&[1.0, 1.0], &[2, 1]), 1e-7).is_err());
        let e = Tensor::zeros(Shape::from_slice(&[1 << 20, 0, 2]), DType::F32);
        let b = Tensor::zeros(Shape::from_slice(&[1 << 20, 0, 1]), DType::F32);
        let (x, rank, sv) = lstsq(&e, &b, 1e-7).unwrap();
        assert_eq!(x.shape().as_slice(), &[1 << 20, 2, 1]);
        assert_eq!(rank.numel(), 1 << 20);
        assert_eq!(sv.numel(), 0);
    }
}

//! Householder reflectors: LAPACK's QR in compact form (`geqrf`) and the
//! product of the reflectors it leaves (`householder_product`, `orgqr`).
//!
//! `geqrf` is `dgeqr2`'s loop (`dlarfg` then `dlarf` per column), in float64
//! whatever the input (as the NumPy path before it), its outputs not
//! differentiable. `householder_product` here is
//! the forward alone: the Python layer calls it when nothing records a
//! gradient and composes the product of recorded ops otherwise.

use crate::error::{Error, Result};
use crate::tensor::{DType, Float, Shape, Tensor};

fn float_matrices(a: &Tensor, op: &str) -> Result<(usize, usize, usize)> {
    if !matches!(a.dtype(), DType::F32 | DType::F64) {
        return Err(Error::runtime(format!(
            "\"{op}\" not implemented for '{}'",
            a.dtype().scalar_name()
        )));
    }
    let s = a.shape();
    if s.len() < 2 {
        return Err(Error::runtime(format!(
            "torch.{op}: input must have at least 2 dimensions."
        )));
    }
    let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
    let batch = s[..s.len() - 2].iter().product::<usize>();
    Ok((batch, m, n))
}

/// `a` as float64, its matrices one after another.
fn f64_data(a: &Tensor) -> Vec<f64> {
    let c = super::cast_data(&a.contiguous_data(), DType::F64);
    let v = c.view();
    v.as_slice::<f64>().unwrap_or(&[]).to_vec()
}

/// `sqrt(x^2 + y^2)` without overflow, as LAPACK's `dlapy2`.
fn lapy2(x: f64, y: f64) -> f64 {
    let (xa, ya) = (x.abs(), y.abs());
    let (w, z) = (xa.max(ya), xa.min(ya));
    if z == 0.0 || w > f64::MAX {
        w
    } else {
        w * (1.0 + (z / w) * (z / w)).sqrt()
    }
}

/// The 2-norm of column `c` over `rows` of a row-major matrix `n` wide: the
/// plain sum of squares, rescaled by the largest entry when that sum
/// under- or overflows (as `dnrm2` never does: entries of 1e-192 have a norm,
/// and a reflector, where the plain sum says zero).
fn column_norm(a: &[f64], n: usize, c: usize, rows: std::ops::Range<usize>) -> f64 {
    let s: f64 = rows.clone().map(|r| a[r * n + c] * a[r * n + c]).sum();
    if s.is_finite() && s >= f64::MIN_POSITIVE {
        return s.sqrt();
    }
    let big = rows.clone().map(|r| a[r * n + c].abs()).fold(0.0, f64::max);
    if big == 0.0 || !big.is_finite() {
        return s.sqrt();
    }
    big * rows
        .map(|r| (a[r * n + c] / big) * (a[r * n + c] / big))
        .sum::<f64>()
        .sqrt()
}

/// One `m x n` row-major matrix factored in place (`dgeqr2`): R on and above
/// the diagonal, the reflectors' vectors below it; their scales in `tau`.
fn geqr2(a: &mut [f64], m: usize, n: usize, tau: &mut [f64]) {
    let safmin = f64::MIN_POSITIVE / f64::EPSILON;
    for i in 0..m.min(n) {
        // dlarfg: H = I - tau v v^T with H [alpha; x] = [beta; 0], v[0] = 1.
        let alpha = a[i * n + i];
        let xnorm = column_norm(a, n, i, i + 1..m);
        let t = if i + 1 >= m || xnorm == 0.0 {
            0.0
        } else {
            let (mut alpha, mut xnorm) = (alpha, xnorm);
            let mut beta = -lapy2(alpha, xnorm).copysign(alpha);
            // Rescale tiny columns, as dlarfg does, so 1 / (alpha - beta) is finite.
            let mut knt = 0;
            while beta.abs() < safmin && knt < 20 {
                knt += 1;
                for r in i + 1..m {
                    a[r * n + i] /= safmin;
                }
                beta /= safmin;
                alpha /= safmin;
            }
            if knt > 0 {
                xnorm = column_norm(a, n, i, i + 1..m);
                beta = -lapy2(alpha, xnorm).copysign(alpha);
            }
            let t = (beta - alpha) / beta;
            let scale = 1.0 / (alpha - beta);
            for r in i + 1..m {
                a[r * n + i] *= scale;
            }
            for _ in 0..knt {
                beta *= safmin;
            }
            a[i * n + i] = beta;
            t
        };
        tau[i] = t;
        if t != 0.0 {
            // dlarf: C = H C for the columns right of i, rows i.. (v[0] = 1).
            for c in i + 1..n {
                let mut w = a[i * n + c];
                for r in i + 1..m {
                    w += a[r * n + i] * a[r * n + c];
                }
                let tw = t * w;
                a[i * n + c] -= tw;
                for r in i + 1..m {
                    a[r * n + c] -= a[r * n + i] * tw;
                }
            }
        }
    }
}

/// `geqrf(a)`: `(a, tau)` per matrix of `a`, neither differentiable (as the
/// outputs PyTorch's refusing rule guards).
pub(crate) fn geqrf(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let (batch, m, n) = float_matrices(a, "geqrf")?;
    let k = m.min(n);
    let shape = a.shape();
    let mut tshape: Shape = Shape::from_slice(&shape[..shape.len() - 2]);
    tshape.push(k);
    let mut h = f64_data(a);
    let mut tau = crate::error::filled_vec(batch * k, 0.0f64);
    if m * n > 0 {
        for b in 0..batch {
            geqr2(
                &mut h[b * m * n..(b + 1) * m * n],
                m,
                n,
                &mut tau[b * k..(b + 1) * k],
            );
        }
    }
    let dt = a.dtype();
    let (h, tau) = (
        super::back_to(Tensor::from_vec(h, shape), dt),
        super::back_to(Tensor::from_vec(tau, tshape), dt),
    );
    Ok((h, tau))
}

/// The first `n` columns of `H_1 ... H_k` for `a` of shape `(*, m, n)` and
/// `tau` of shape `(*, k)`, `v_i` the column `i` of `a` below the diagonal
/// with 1 on it; not recorded (the caller composes the recorded form).
pub(crate) fn householder_product(a: &Tensor, tau: &Tensor) -> Result<Tensor> {
    let (batch, m, n) = float_matrices(a, "householder_product")?;
    let k = tau.shape().last().copied().unwrap_or(1);
    if tau.dtype() != a.dtype() || tau.numel() != batch * k || k > n || n > m {
        return Err(Error::runtime(
            "householder_product: the shapes or dtypes of input and tau do not match",
        ));
    }
    let shape = a.shape();
    let (ac, tc) = (a.contiguous_data(), tau.contiguous_data());
    let (av, tv) = (ac.view(), tc.view());
    let dt = a.dtype();
    Ok(crate::dispatch_float!(dt, T => {
        let (a, tau) = (av.as_slice::<T>().unwrap_or(&[]), tv.as_slice::<T>().unwrap_or(&[]));
        let mut q = crate::error::filled_vec(batch * m * n, <T as crate::tensor::Element>::zero());
        for b in 0..batch {
            reflect::<T>(
                &a[b * m * n..(b + 1) * m * n],
                &tau[b * k..(b + 1) * k],
                m,
                n,
                &mut q[b * m * n..(b + 1) * m * n],
            );
        }
        Tensor::from_vec(q, shape.clone())
    }))
}

/// `q = H_1 ... H_k I[:, :n]` for one matrix, applied right to left as the
/// composite does: `q -= (v tau_i) (v^T q)`.
fn reflect<T: Float>(a: &[T], tau: &[T], m: usize, n: usize, q: &mut [T]) {
    let zero = <T as crate::tensor::Element>::zero();
    let one = <T as crate::tensor::Element>::one();
    for i in 0..n {
        q[i * n + i] = one;
    }
    let mut w = vec![zero; n];
    for (i, &t) in tau.iter().enumerate().rev() {
        // v = (0.., 1 at i, a[i+1.., i]).
        for (c, wc) in w.iter_mut().enumerate() {
            let mut acc = q[i * n + c];
            for r in i + 1..m {
                acc = a[r * n + i].mul_add(q[r * n + c], acc);
            }
            *wc = acc;
        }
        for c in 0..n {
            q[i * n + c] = q[i * n + c] - t * w[c];
        }
        for r in i + 1..m {
            let vt = a[r * n + i] * t;
            for c in 0..n {
                q[r * n + c] = q[r * n + c] - vt * w[c];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(t: &Tensor) -> Vec<f64> {
        f64_data(t)
    }

    #[test]
    fn geqrf_and_its_product_rebuild_the_matrix() {
        let (m, n) = (4, 3);
        let data: Vec<f64> = (0..m * n)
            .map(|i| ((i * 7 + 3) % 11) as f64 - 5.0)
            .collect();
        let a = Tensor::from_vec(data.clone(), Shape::from_slice(&[m, n]));
        let (h, tau) = geqrf(&a).unwrap();
        let q = values(&householder_product(&h, &tau).unwrap());
        let hv = values(&h);
        // Q R == A, R the upper triangle of h; Q's columns orthonormal.
        for r in 0..m {
            for c in 0..n {
                let qr: f64 = (0..=c).map(|j| q[r * n + j] * hv[j * n + c]).sum();
                assert!((qr - data[r * n + c]).abs() < 1e-12, "{r} {c}");
            }
        }
        for i in 0..n {
            for j in 0..n {
                let d: f64 = (0..m).map(|r| q[r * n + i] * q[r * n + j]).sum();
                assert!((d - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        // LAPACK's sign rule: R's diagonal has the opposite sign of the pivot.
        assert!(hv[0] * data[0] < 0.0);
    }

    #[test]
    fn a_zero_column_has_no_reflector() {
        let a = Tensor::from_vec(vec![0.0f64; 6], Shape::from_slice(&[3, 2]));
        let (h, tau) = geqrf(&a).unwrap();
        assert_eq!(values(&tau), vec![0.0, 0.0]);
        assert_eq!(values(&h), vec![0.0; 6]);
    }
}

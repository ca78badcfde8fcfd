//! The products with a vector: `mv`, `dot`, `outer` and the unrecorded
//! per-sample `batched_outer`.

use smallvec::smallvec;

use super::gemm::{check_dtype, product, unsqueeze_data};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ops::{mul, unsqueeze};
use crate::saved;
use crate::tensor::{DType, Shape, Tensor};

/// `mv(a, v)`: a matrix times a vector (`MvBackward0`).
pub(crate) fn mv(a: &Tensor, v: &Tensor) -> Result<Tensor> {
    let (sa, sv) = (a.shape(), v.shape());
    if sa.len() != 2 || sv.len() != 1 {
        return Err(Error::runtime(format!(
            "vector + matrix @ vector expected, got 1, {}, {}",
            sa.len(),
            sv.len()
        )));
    }
    if sa[1] != sv[0] {
        return Err(Error::runtime(format!(
            "size mismatch, got input ({}), mat ({}x{}), vec ({})",
            sa[0], sa[0], sa[1], sv[0]
        )));
    }
    let (da, dv) = (a.dtype(), v.dtype());
    if da != dv {
        return Err(Error::runtime(format!(
            "addmv input tensors must have the same dtype, but got {}, {}, and {}",
            dv.scalar_name(),
            da.scalar_name(),
            dv.scalar_name()
        )));
    }
    if da == DType::Bool {
        return Err(Error::runtime(
            "\"addmv_impl_cpu\" not implemented for 'Bool'",
        ));
    }
    let out = {
        let v2 = unsqueeze_data(v, 1);
        let (va, vv) = (a.view(), v2.view());
        product(da, &va, &vv, Shape::from_slice(&[sa[0]]))?
    };
    if needs_record(&[a, v]) {
        let (ra, rv) = (crate::autograd::tracked(a), crate::autograd::tracked(v));
        record(
            "MvBackward0",
            &[a, v],
            &out,
            saved![rv.then_some(a), ra.then_some(v)],
            |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) {
                    Some(outer(g, c.saved(1)?)?)
                } else {
                    None
                };
                let gv = if c.needs(1) {
                    Some(mv(&crate::ops::t(c.saved(0)?)?, g)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gv])
            },
        );
    }
    Ok(out)
}

/// Inner product of two vectors.
pub(crate) fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 1 || sb.len() != 1 {
        return Err(Error::runtime(format!(
            "1D tensors expected, but got {}D and {}D tensors",
            sa.len(),
            sb.len()
        )));
    }
    if sa[0] != sb[0] {
        return Err(Error::runtime(format!(
            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
            sa[0], sb[0], sa[0], sb[0]
        )));
    }
    let dt = check_dtype(a, b, "dot")?;
    let out = {
        let a2 = unsqueeze_data(a, 0);
        let b2 = unsqueeze_data(b, 1);
        let (va, vb) = (a2.view(), b2.view());
        product(dt, &va, &vb, Shape::new())?
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (crate::autograd::tracked(a), crate::autograd::tracked(b));
        record(
            "DotBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), ra.then_some(b)],
            |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) {
                    Some(mul(g, c.saved(1)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(mul(g, c.saved(0)?)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// `outer(a, b)`: `a[i] * b[j]` for two vectors.
pub(crate) fn outer(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        return Err(Error::runtime(format!(
            "outer: Expected 1-D argument self, but got {}-D",
            if a.ndim() != 1 { a.ndim() } else { b.ndim() }
        )));
    }
    mul(&unsqueeze(a, 1)?, &unsqueeze(b, 0)?)
}

/// `out[b, i, j] = g[b, i] * x[b, j]` for matrices `g` and `x` with the same
/// number of rows, without recording a node: the per-sample weight gradients
/// of a linear layer under `vmap(grad)`, written past the caches when large
/// (`kernels::outer`). Equal, bit for bit, to `g[:, :, None] * x[:, None, :]`.
pub(crate) fn batched_outer(g: &Tensor, x: &Tensor) -> Result<Tensor> {
    let (gs, xs) = (g.shape(), x.shape());
    if gs.len() != 2 || xs.len() != 2 || gs[0] != xs[0] {
        return Err(Error::runtime(format!(
            "batched_outer: expected two matrices with the same number of rows, got {gs:?} and {xs:?}"
        )));
    }
    if g.dtype() != x.dtype() || !g.dtype().is_float() {
        return Err(Error::runtime(format!(
            "batched_outer: expected two float tensors of one dtype, got {:?} and {:?}",
            g.dtype(),
            x.dtype()
        )));
    }
    let (b, m, n) = (gs[0], gs[1], xs[1]);
    let (gc, xc) = (crate::ops::compute_contig(g), crate::ops::compute_contig(x));
    let (gv, xv) = (gc.view(), xc.view());
    Ok(crate::dispatch_float_compute!(g.dtype(), T => {
        let (Some(gsl), Some(xsl)) = (gv.as_slice::<T>(), xv.as_slice::<T>()) else {
            return Err(Error::runtime("batched_outer: operands are not contiguous"));
        };
        Tensor::from_vec(
            crate::kernels::outer::batched_outer(gsl, xsl, b, m, n),
            smallvec![b, m, n],
        )
    }))
}

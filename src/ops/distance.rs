//! `pdist`: the `p`-norm distance between every pair of rows of a matrix
//! (`_PdistForwardBackward0`), forward and backward side by side.

use smallvec::smallvec;

use crate::autograd::checkpoint::{self, key_of};
use crate::autograd::{
    current_seq, is_grad_enabled, needs_record, record, try_gradient_edge, SavedTensor,
};
use crate::error::{Error, Result};
use crate::kernels::distance::{self as kd, Norm};
use crate::saved;
use crate::tensor::{DType, Tensor};

/// `pdist(x, p)` of an `n x m` floating-point matrix: `n (n - 1) / 2`
/// distances, pair `(i, j)` with `i < j` row by row.
pub fn pdist(x: &Tensor, p: f64) -> Result<Tensor> {
    let shape = x.shape();
    if shape.len() != 2 {
        return Err(Error::runtime(format!(
            "pdist only supports 2D tensors, got: {}D",
            shape.len()
        )));
    }
    if !x.dtype().is_float() {
        return Err(Error::runtime("pdist only supports floating-point dtypes"));
    }
    if p.is_nan() || p < 0.0 {
        return Err(Error::runtime("pdist only supports non-negative p values"));
    }
    let (n, m) = (shape[0], shape[1]);
    let norm = Norm::of(p);
    let xc = super::compute_contig(x);
    let v = xc.view();
    let out = crate::dispatch_float!(xc.dtype(), T => {
        let d = kd::pdist::<T>(v.as_slice::<T>().unwrap_or(&[]), n, m, norm);
        Tensor::from_vec(d, smallvec![kd::pairs(n)])
    });
    let out = super::back_to(out, x.dtype());
    if needs_record(&[x]) {
        record(
            "_PdistForwardBackward0",
            &[x],
            &out,
            saved![x, Some(SavedTensor::output(&out, 0))],
            move |c| {
                let (g, x, d) = (c.grad()?, c.saved(0)?, c.saved(1)?);
                let gx = if is_grad_enabled() {
                    composed_backward(g, x, p)?
                } else {
                    pdist_backward(g, x, d, norm)?
                };
                Ok(smallvec![gx])
            },
        );
    }
    Ok(out)
}

/// The gradient in one pass over the pairs, when nothing records it.
fn pdist_backward(g: &Tensor, x: &Tensor, d: &Tensor, norm: Norm) -> Result<Option<Tensor>> {
    let shape = x.shape();
    let (n, m) = (shape[0], shape[1]);
    let dt = x.dtype();
    let (g, xc, d) = (
        super::compute_contig(&super::to_dtype(g, dt)?),
        super::compute_contig(x),
        super::compute_contig(d),
    );
    let (vg, vx, vd) = (g.view(), xc.view(), d.view());
    let gx = crate::dispatch_float!(xc.dtype(), T => {
        let (sg, sx, sd) = (
            vg.as_slice::<T>().unwrap_or(&[]),
            vx.as_slice::<T>().unwrap_or(&[]),
            vd.as_slice::<T>().unwrap_or(&[]),
        );
        Tensor::from_vec(kd::pdist_backward::<T>(sg, sx, sd, n, m, norm), shape.clone())
    });
    Ok(Some(super::back_to(gx, dt)))
}

/// The gradient under `create_graph`: the distances recomputed from
/// differentiable ops (a gather of the pairs' rows, their difference, its
/// norm) and differentiated, so every order of gradient works.
fn composed_backward(g: &Tensor, x: &Tensor, p: f64) -> Result<Option<Tensor>> {
    let n = x.shape()[0];
    let (mut rows, mut cols) = (Vec::new(), Vec::new());
    crate::error::reserve_more(&mut rows, kd::pairs(n));
    crate::error::reserve_more(&mut cols, kd::pairs(n));
    for i in 0..n {
        for j in i + 1..n {
            rows.push(i as i64);
            cols.push(j as i64);
        }
    }
    let len = rows.len();
    let (rows, cols) = (
        Tensor::from_vec(rows, smallvec![len]),
        Tensor::from_vec(cols, smallvec![len]),
    );
    let mark = current_seq();
    let diff = super::sub(
        &super::index_select(x, 0, &rows)?,
        &super::index_select(x, 0, &cols)?,
    )?;
    let d = super::vector_norm(&diff, p, Some(&[1]), false)?;
    let g = super::to_dtype(g, d.dtype())?;
    // The region's nodes keep their saved tensors: the gradient's own graph
    // runs back through them at the next order.
    let grads = checkpoint::backward(&[(d, g)], mark, false)?;
    let key = key_of(&try_gradient_edge(x)?);
    Ok(key.and_then(|k| grads.get(&k).cloned()).map(|t| {
        if t.dtype() == DType::F64 || t.dtype() == x.dtype() {
            t
        } else {
            super::back_to(t, x.dtype())
        }
    }))
}

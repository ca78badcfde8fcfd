//! Matrix products: `mm`, `dot`, and `matmul` over every 1-D/2-D/batched
//! combination with broadcast batch dimensions.

use rayon::prelude::*;
use smallvec::{smallvec, SmallVec};

use super::{cast_data, mul, result_type, squeeze, transpose, unsqueeze};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::matmul::{gemm_into, Mat};
use crate::kernels::{build_vec, SendPtr};
use crate::saved;
use crate::tensor::{broadcast_shapes, fmt_shape, DType, Element, Shape, Tensor, View};

fn check_dtype(a: &Tensor, b: &Tensor, what: &str) -> Result<DType> {
    let (da, db) = (a.dtype(), b.dtype());
    if da != db {
        return Err(Error::runtime(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            da.name(),
            db.name()
        )));
    }
    if da == DType::Bool {
        return Err(Error::runtime(format!(
            "\"{what}\" not implemented for 'Bool'"
        )));
    }
    Ok(da)
}

fn mat<T: Element>(v: &View, off: usize, rs: usize, cs: usize, rows: usize, cols: usize) -> Mat<T> {
    Mat {
        ptr: v.ptr::<T>().wrapping_add(off),
        rows,
        cols,
        row_stride: rs,
        col_stride: cs,
    }
}

/// Batched product of `a` (batch.., m, k) and `b` (batch.., k, n) whose batch
/// dimensions already match (they may be broadcast views with stride 0).
fn bmm_kernel<T: Element>(va: &View, vb: &View) -> Vec<T> {
    let nd = va.shape.len();
    let (m, k, n) = (va.shape[nd - 2], va.shape[nd - 1], vb.shape[nd - 1]);
    let batch: Shape = va.shape[..nd - 2].iter().copied().collect();
    let nb: usize = batch.iter().product();
    let (ars, acs) = (va.strides[nd - 2], va.strides[nd - 1]);
    let (brs, bcs) = (vb.strides[nd - 2], vb.strides[nd - 1]);
    let mut offs: Vec<(usize, usize)> = Vec::with_capacity(nb);
    let bst_a: SmallVec<[usize; 4]> = va.strides[..nd - 2].iter().copied().collect();
    let bst_b: SmallVec<[usize; 4]> = vb.strides[..nd - 2].iter().copied().collect();
    crate::kernels::for_each_row(
        &batch,
        &[bst_a.clone(), bst_b.clone()],
        0,
        nb,
        |_, len, [oa, ob]| {
            let (ia, ib) = (*bst_a.last().unwrap_or(&0), *bst_b.last().unwrap_or(&0));
            for i in 0..len {
                offs.push((oa + i * ia, ob + i * ib));
            }
        },
    );
    let per = m * n;
    build_vec(nb * per, |out| {
        let o = SendPtr(out.as_mut_ptr() as *mut T);
        let run = |bi: usize, parallel: bool| {
            let (oa, ob) = offs[bi];
            let o = o;
            // SAFETY: each batch writes its own `per` elements; operands are
            // views whose offsets were derived from their own strides.
            unsafe {
                gemm_into(
                    mat::<T>(va, oa, ars, acs, m, k),
                    mat::<T>(vb, ob, brs, bcs, k, n),
                    o.0.add(bi * per),
                    parallel,
                )
            };
        };
        // Many small products: one per task. Few large ones: parallel inside each.
        if nb > 1 && m * n * k < 1 << 18 {
            crate::kernels::parallel::run(nb * m * n * k, |threads| {
                if threads > 1 {
                    (0..nb).into_par_iter().for_each(|bi| run(bi, false));
                } else {
                    (0..nb).for_each(|bi| run(bi, false));
                }
            });
        } else {
            (0..nb).for_each(|bi| run(bi, true));
        }
    })
}

/// `mm(a, b)` for two matrices.
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 2 || sb.len() != 2 {
        return Err(Error::runtime(format!(
            "mm: expected 2-D tensors, got {}-D and {}-D",
            sa.len(),
            sb.len()
        )));
    }
    if sa[1] != sb[0] {
        return Err(Error::runtime(format!(
            "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            sa[0], sa[1], sb[0], sb[1]
        )));
    }
    let dt = check_dtype(a, b, "addmm_impl_cpu_")?;
    let out = {
        let (va, vb) = (a.view(), b.view());
        crate::dispatch!(dt, T => Tensor::from_vec(bmm_kernel::<T>(&va, &vb), Shape::from_slice(&[sa[0], sb[1]])))
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (a.requires_grad(), b.requires_grad());
        record(
            "MmBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), ra.then_some(b)],
            |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) {
                    Some(mm(g, &transpose(c.saved(1)?, 0, 1)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(mm(&transpose(c.saved(0)?, 0, 1)?, g)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// Inner product of two vectors.
pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
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
        crate::dispatch!(dt, T => Tensor::from_vec(bmm_kernel::<T>(&va, &vb), Shape::new()))
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (a.requires_grad(), b.requires_grad());
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

/// An unrecorded size-1 dimension, for feeding vectors to the matrix kernel.
fn unsqueeze_data(a: &Tensor, dim: usize) -> Tensor {
    let _g = crate::autograd::GradModeGuard::new(false);
    let d = a.detach();
    unsqueeze(&d, dim as i64).unwrap_or(d)
}

/// `a @ b` with NumPy's matmul rules.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (na, nb) = (a.ndim(), b.ndim());
    if na == 0 || nb == 0 {
        return Err(Error::runtime(format!(
            "both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D"
        )));
    }
    let dt = result_type(a, b);
    if a.dtype() != b.dtype() {
        return matmul(&cast_data(a, dt), &cast_data(b, dt));
    }
    match (na, nb) {
        (1, 1) => dot(a, b),
        (2, 2) => mm(a, b),
        (1, _) => squeeze(&matmul(&unsqueeze(a, 0)?, b)?, Some(-2)),
        (_, 1) => squeeze(&matmul(a, &unsqueeze(b, 1)?)?, Some(-1)),
        _ => bmm_broadcast(a, b),
    }
}

/// Batched product with broadcast batch dimensions.
fn bmm_broadcast(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    let (na, nb) = (sa.len(), sb.len());
    let (m, k, k2, n) = (sa[na - 2], sa[na - 1], sb[nb - 2], sb[nb - 1]);
    if k != k2 {
        return Err(Error::runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {k}] but got: [{}, {k2}]; shapes {} and {} cannot be multiplied",
            sa[..na - 2].iter().product::<usize>(),
            sb[..nb - 2].iter().product::<usize>(),
            fmt_shape(&sa),
            fmt_shape(&sb)
        )));
    }
    let dt = check_dtype(a, b, "bmm")?;
    let batch = broadcast_shapes(&sa[..na - 2], &sb[..nb - 2])?;
    let mut ta: Shape = batch.clone();
    ta.extend_from_slice(&[m, k]);
    let mut tb: Shape = batch.clone();
    tb.extend_from_slice(&[k, n]);
    let mut to: Shape = batch.clone();
    to.extend_from_slice(&[m, n]);
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let (ea, eb) = (
            super::expand(&a.detach(), &ta)?,
            super::expand(&b.detach(), &tb)?,
        );
        let (va, vb) = (ea.view(), eb.view());
        crate::dispatch!(dt, T => Tensor::from_vec(bmm_kernel::<T>(&va, &vb), to.clone()))
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (a.requires_grad(), b.requires_grad());
        record(
            "BmmBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), ra.then_some(b)],
            |c| {
                let g = c.grad()?;
                // The engine sums these back over broadcast batch dimensions.
                let ga = if c.needs(0) {
                    Some(matmul(g, &transpose(c.saved(1)?, -1, -2)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(matmul(&transpose(c.saved(0)?, -1, -2)?, g)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

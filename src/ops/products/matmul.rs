//! `matmul`: PyTorch's routes over every 1-D/2-D/batched combination, the
//! folded branch (batch dimensions folded into rows) and the batched one
//! (broadcast batch dimensions, one product each).

use smallvec::smallvec;

use super::gemm::{check_dtype, product, unsqueeze_data};
use super::mm::mm;
use super::vector::{dot, mv};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ops::{expand, squeeze, transpose, unsqueeze};
use crate::saved;
use crate::tensor::{broadcast_shapes, Shape, Tensor};

/// `a @ b` with NumPy's matmul rules, taking the same route as PyTorch's
/// `matmul` (so the graph has the same nodes): `dot`, `mv`, `mm`, or for
/// more dimensions either one `mm`/`mv` over the larger operand with its
/// batch dimensions folded into rows (`should_fold`) or a batched product,
/// each reshaped to the result by `_unsafe_view` (`UnsafeViewBackward0`).
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (na, nb) = (a.ndim(), b.ndim());
    if na == 0 || nb == 0 {
        return Err(Error::runtime(format!(
            "both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D"
        )));
    }
    // No promotion: each route refuses mixed dtypes with PyTorch's message.
    match (na, nb) {
        (1, 1) => dot(a, b),
        (2, 1) => mv(a, b),
        (1, 2) => Ok(squeeze_rows(&mm(&unsqueeze(a, 0)?, b)?)),
        (2, 2) => mm(a, b),
        _ if should_fold(a, b, na, nb) => matmul_folded(a, b),
        _ => matmul_batched(a, b),
    }
}

/// PyTorch's `squeeze_(0)` of the one-row product `vector @ matrix`: the
/// product itself (not a view of it) without its first dimension,
/// recorded as `SqueezeBackward4` and counted as a write.
fn squeeze_rows(p: &Tensor) -> Tensor {
    let shape = Shape::from_slice(&p.shape()[1..]);
    let out = p.reshape_data(shape);
    out.view().storage.bump_version();
    if needs_record(&[p]) {
        record("SqueezeBackward4", &[p], &out, saved![], |c| {
            Ok(smallvec![Some(unsqueeze(c.grad()?, 0)?)])
        });
    }
    out
}

/// Whether `matmul` folds the batch dimensions of the larger operand (of 3
/// or more dimensions, the other having 1 or 2) into the rows of one
/// `mm`/`mv`, as PyTorch's `should_fold` decides: always when the smaller
/// operand requires grad (its gradient is then one product, not a batch of
/// them summed), otherwise when the larger one folds without a copy.
fn should_fold(a: &Tensor, b: &Tensor, na: usize, nb: usize) -> bool {
    let a_larger = na >= nb;
    let (dim_t1, dim_t2) = if a_larger { (na, nb) } else { (nb, na) };
    if !(dim_t1 >= 3 && dim_t2 <= 2) {
        return false;
    }
    let small_requires_grad = if a_larger {
        b.requires_grad()
    } else {
        a.requires_grad()
    };
    if small_requires_grad {
        return true;
    }
    if na == 2 {
        // The result would need a transposed copy.
        return false;
    }
    // The larger operand, transposed if it is `b`.
    let (mut shape, mut strides) = {
        let v = if a_larger { a.view() } else { b.view() };
        (v.shape.clone(), v.strides.clone())
    };
    if !a_larger {
        shape.swap(dim_t1 - 1, dim_t1 - 2);
        strides.swap(dim_t1 - 1, dim_t1 - 2);
    }
    // It folds without a copy when its leading dimensions merge into one.
    let rows: usize = shape[..dim_t1 - 1].iter().product();
    crate::tensor::view_strides(&shape, &strides, &[rows, shape[dim_t1 - 1]]).is_some()
}

/// The folded branch of `matmul`: `t1` is the larger operand (`b.mT` when
/// `b` is larger), its leading dimensions folded into rows; the result is
/// reshaped back and, for `b.mT`, transposed back into a contiguous copy.
fn matmul_folded(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (na, nb) = (a.ndim(), b.ndim());
    let trans = nb > na;
    let t1 = if trans {
        transpose(b, -1, -2)?
    } else {
        a.clone()
    };
    let t2 = if !trans {
        b.clone()
    } else if na == 2 {
        crate::ops::t(a)?
    } else {
        a.clone()
    };
    let s1 = t1.shape();
    let mut out_shape: Shape = s1[..s1.len() - 1].iter().copied().collect();
    let rows: usize = out_shape.iter().product();
    let t2_matrix = t2.ndim() == 2;
    if t2_matrix {
        out_shape.push(t2.shape()[1]);
    }
    let folded = crate::ops::reshape_i(&t1, &[rows as i64, s1[s1.len() - 1] as i64])?;
    if t2_matrix {
        let out = crate::ops::unsafe_view(&mm(&folded, &t2)?, out_shape);
        if trans {
            return crate::ops::contiguous(&transpose(&out, -1, -2)?);
        }
        Ok(out)
    } else {
        Ok(crate::ops::unsafe_view(&mv(&folded, &t2)?, out_shape))
    }
}

/// The batched branch of `matmul`: batch dimensions broadcast, every batch
/// one product, in PyTorch's graph a `bmm` of the operands expanded and
/// flattened to 3-D, then `_unsafe_view` to the result's shape. The kernel
/// reads the broadcast operands through their strides, so the
/// `BmmBackward0` node takes `a` and `b` themselves (the engine sums its
/// gradients back over broadcast dimensions) and nothing is copied.
fn matmul_batched(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    let (na, nb) = (sa.len(), sb.len());
    let n = if na > 1 { sa[na - 2] } else { 1 };
    let m1 = sa[na - 1];
    let (m2, p) = if nb > 1 {
        (sb[nb - 2], sb[nb - 1])
    } else {
        (sb[0], 1)
    };
    let (batch1, batch2) = (&sa[..na.saturating_sub(2)], &sb[..nb.saturating_sub(2)]);
    // As PyTorch: a size-1 batch that requires grad is squeezed rather than
    // broadcast, so its gradient is not a batch of products summed.
    if na == 3 && nb == 3 && batch1[0] != batch2[0] {
        if batch1[0] == 1 && a.requires_grad() {
            return matmul(&squeeze(a, Some(0))?, b);
        }
        if batch2[0] == 1 && b.requires_grad() {
            return matmul(a, &squeeze(b, Some(0))?);
        }
    }
    let batch = broadcast_shapes(batch1, batch2)?;
    let nbatch: usize = batch.iter().product();
    if m1 != m2 {
        return Err(Error::runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{nbatch}, {m1}] but got: [{nbatch}, {m2}]."
        )));
    }
    let dt = check_dtype(a, b, "bmm")?;
    let with = |tail: &[usize]| -> Shape { batch.iter().chain(tail).copied().collect() };
    let mut out_shape = batch.clone();
    if na > 1 {
        out_shape.push(n);
    }
    if nb > 1 {
        out_shape.push(p);
    }
    let recording = needs_record(&[a, b]);
    // Unrecorded, the result is made in its final shape: nothing can tell.
    let (flat_shape, out_shape) = if recording {
        (Shape::from_slice(&[nbatch, n, p]), out_shape)
    } else {
        (out_shape, Shape::new())
    };
    let flat = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let a2 = if na == 1 {
            unsqueeze_data(a, 0)
        } else {
            a.detach()
        };
        let b2 = if nb == 1 {
            unsqueeze_data(b, 1)
        } else {
            b.detach()
        };
        let (ea, eb) = (expand(&a2, &with(&[n, m1]))?, expand(&b2, &with(&[m2, p]))?);
        let (va, vb) = (ea.view(), eb.view());
        product(dt, &va, &vb, flat_shape)?
    };
    if !recording {
        return Ok(flat);
    }
    let (ra, rb) = (crate::autograd::tracked(a), crate::autograd::tracked(b));
    let g_shape = with(&[n, p]);
    record(
        "BmmBackward0",
        &[a, b],
        &flat,
        saved![rb.then_some(a), ra.then_some(b)],
        move |c| {
            let g = crate::ops::reshape(c.grad()?, &g_shape)?;
            // Vectors as the one-row / one-column matrices they were.
            let ga = if c.needs(0) {
                let sb = c.saved(1)?;
                let bm = if nb == 1 {
                    unsqueeze(sb, 1)?
                } else {
                    sb.clone()
                };
                Some(matmul(&g, &transpose(&bm, -1, -2)?)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                let sa = c.saved(0)?;
                let am = if na == 1 {
                    unsqueeze(sa, 0)?
                } else {
                    sa.clone()
                };
                let gb = matmul(&transpose(&am, -1, -2)?, &g)?;
                Some(if nb == 1 { squeeze(&gb, Some(-1))? } else { gb })
            } else {
                None
            };
            Ok(smallvec![ga, gb])
        },
    );
    Ok(crate::ops::unsafe_view(&flat, out_shape))
}

//! The GEMM plumbing every product shares: the operands' dtype check, matrix
//! views of tensor memory, batch offsets and how batches are spread over the
//! pool, and the native batched and bias-first kernels; bfloat16 and float16
//! go through [`super::low_precision`].

use smallvec::SmallVec;

use super::low_precision::{bf16_product, product_low_precision};
use crate::error::{Error, Result};
use crate::kernels::matmul::{gemm_add_into, gemm_into, Mat};
use crate::kernels::{build_vec, SendPtr};
use crate::ops::unsqueeze;
use crate::tensor::{DType, Element, Shape, Tensor, View};

/// The operands' common dtype; PyTorch's products never promote, each
/// refuses mixed dtypes in its own words.
pub(super) fn check_dtype(a: &Tensor, b: &Tensor, what: &str) -> Result<DType> {
    let (da, db) = (a.dtype(), b.dtype());
    if da != db {
        return Err(Error::runtime(match what {
            "dot" => format!(
                "dot : expected both vectors to have same dtype, but found {} and {}",
                da.scalar_name(),
                db.scalar_name()
            ),
            "bmm" => format!(
                "expected scalar type {} but found {}",
                da.scalar_name(),
                db.scalar_name()
            ),
            _ => format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                da.cpp_name(),
                db.cpp_name()
            ),
        }));
    }
    if da == DType::Bool {
        return Err(Error::runtime(format!(
            "\"{what}\" not implemented for 'Bool'"
        )));
    }
    Ok(da)
}

pub(super) fn mat<T: Element>(
    v: &View,
    off: usize,
    rs: usize,
    cs: usize,
    rows: usize,
    cols: usize,
) -> Mat<T> {
    Mat {
        ptr: v.ptr::<T>().wrapping_add(off),
        rows,
        cols,
        row_stride: rs,
        col_stride: cs,
    }
}

/// The element offsets of each batch's matrices in `va` (batch.., m, k)
/// and `vb` (batch.., k, n), whose batch dimensions already match (they
/// may be broadcast views with stride 0).
pub(super) fn batch_offsets(va: &View, vb: &View) -> Vec<(usize, usize)> {
    let nd = va.shape.len();
    let batch: Shape = va.shape[..nd - 2].iter().copied().collect();
    let nb: usize = batch.iter().product();
    let mut offs: Vec<(usize, usize)> = crate::error::alloc_vec(nb);
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
    offs
}

/// Runs `run(batch, parallel)` for each of `nb` products of `m n k`
/// multiply-adds: many products up to ~160^3 one per task (measured faster
/// than splitting each one); few or large ones in turn, each parallel inside.
pub(super) fn run_batches(nb: usize, mnk: usize, run: impl Fn(usize, bool) + Sync) {
    if nb > 1 && mnk < 1 << 22 {
        crate::kernels::parallel::run(nb * mnk, |threads| {
            if threads > 1 {
                crate::kernels::parallel::tasks(nb, |bi| run(bi, false));
            } else {
                (0..nb).for_each(|bi| run(bi, false));
            }
        });
    } else {
        (0..nb).for_each(|bi| run(bi, true));
    }
}

/// Batched product of `a` (batch.., m, k) and `b` (batch.., k, n) whose batch
/// dimensions already match (they may be broadcast views with stride 0).
pub(super) fn bmm_kernel<T: Element>(va: &View, vb: &View) -> Vec<T> {
    let nd = va.shape.len();
    let (m, k, n) = (va.shape[nd - 2], va.shape[nd - 1], vb.shape[nd - 1]);
    let (ars, acs) = (va.strides[nd - 2], va.strides[nd - 1]);
    let (brs, bcs) = (vb.strides[nd - 2], vb.strides[nd - 1]);
    let offs = batch_offsets(va, vb);
    let per = m * n;
    build_vec(offs.len() * per, |out| {
        let o = SendPtr(out.as_mut_ptr() as *mut T);
        run_batches(offs.len(), m * n * k, |bi, parallel| {
            let (oa, ob) = offs[bi];
            // SAFETY: each batch writes its own `per` elements; operands are
            // views whose offsets were derived from their own strides.
            unsafe {
                gemm_into(
                    mat::<T>(va, oa, ars, acs, m, k),
                    mat::<T>(vb, ob, brs, bcs, k, n),
                    o.get().add(bi * per),
                    parallel,
                )
            };
        });
    })
}

/// The product of the matrix views `va` (m x k) and `vb` (k x n), plus `vbias`
/// (broadcast to m x n), in fresh row-major memory: the bias is laid out
/// first and the product accumulated onto it in one pass.
pub(super) fn addmm_kernel<T: Element>(vbias: &View, va: &View, vb: &View) -> Vec<T> {
    let (m, k, n) = (va.shape[0], va.shape[1], vb.shape[1]);
    let mut out = crate::kernels::copy::gather::<T>(vbias);
    // SAFETY: `out` holds the m x n bias; the operands are 2-D views whose
    // strides describe their own memory.
    unsafe {
        gemm_add_into(
            mat::<T>(va, 0, va.strides[0], va.strides[1], m, k),
            mat::<T>(vb, 0, vb.strides[0], vb.strides[1], k, n),
            out.as_mut_ptr(),
            true,
        )
    };
    out
}

/// The batched product of two views of one dtype (`[..., m, k] @ [..., k, n]`
/// with equal batch shapes) as a tensor of `shape`: natively, except
/// bfloat16 ([`bf16_product`]) and float16 ([`product_low_precision`]).
pub(super) fn product(dt: DType, va: &View, vb: &View, shape: Shape) -> Result<Tensor> {
    // A result that cannot exist (`[2**62, 0] @ [0, 2**62]`) is refused
    // before any work, as PyTorch's allocation of it is.
    crate::tensor::checked_storage_numel(&shape, dt.size())?;
    if shape.contains(&0) {
        // No elements, however many (empty) matrices the batch holds: no
        // table of their offsets and no loop over them.
        return Ok(Tensor::zeros(shape, dt));
    }
    if dt == DType::BF16 {
        return Ok(bf16_product(va, vb, shape));
    }
    if dt.is_low_precision() {
        let (t, d) = product_low_precision(va, vb, shape);
        return Ok(crate::ops::back_to(t, d));
    }
    Ok(crate::dispatch_native!(dt, T => Tensor::from_vec(bmm_kernel::<T>(va, vb), shape)))
}

/// An unrecorded size-1 dimension, for feeding vectors to the matrix kernel.
pub(super) fn unsqueeze_data(a: &Tensor, dim: usize) -> Tensor {
    let _g = crate::autograd::GradModeGuard::new(false);
    let d = a.detach();
    unsqueeze(&d, dim as i64).unwrap_or(d)
}

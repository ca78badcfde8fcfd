//! bfloat16 and float16 products: bfloat16 on the bfloat16 kernels
//! ([`bf16_gemm`]), float16 widened exactly to float32, each element rounded
//! once to the operands' dtype.

use super::gemm::{batch_offsets, bmm_kernel, run_batches};
use crate::kernels::bf16_gemm::{self, MatMut, MatRef, Out};
use crate::kernels::{build_vec, SendPtr};
use crate::tensor::{bf16, DType, Shape, Tensor, View};

/// A bfloat16 matrix of `v` at element offset `off`, for the bfloat16 kernels.
///
/// # Safety
/// The `rows x cols` matrix at `off` with strides `rs`, `cs` lies inside
/// `v`'s memory, which outlives the result.
unsafe fn bf16_mat<'a>(
    v: &'a View,
    off: usize,
    (rows, cols): (usize, usize),
    (rs, cs): (usize, usize),
) -> MatRef<'a, u16> {
    // SAFETY: `bf16` is a transparent `u16`; the caller vouches for the extent.
    unsafe {
        MatRef::from_raw(
            v.ptr::<bf16>().wrapping_add(off) as *const u16,
            rows,
            cols,
            rs,
            cs,
        )
    }
}

/// The batched product of bfloat16 views (`[..., m, k] @ [..., k, n]`, equal
/// batch shapes) on the bfloat16 kernels ([`bf16_gemm`]): products of pairs
/// of bfloat16 values (exact in float32) summed in float32, each element
/// rounded once to bfloat16. The path is [`bf16_gemm::Path::current`]:
/// AMX tiles, AVX512_BF16, or the operands widened for the float32 GEMM.
pub(super) fn bf16_product(va: &View, vb: &View, shape: Shape) -> Tensor {
    let nd = va.shape.len();
    let (m, k, n) = (va.shape[nd - 2], va.shape[nd - 1], vb.shape[nd - 1]);
    let (ars, acs) = (va.strides[nd - 2], va.strides[nd - 1]);
    let (brs, bcs) = (vb.strides[nd - 2], vb.strides[nd - 1]);
    let offs = batch_offsets(va, vb);
    let path = bf16_gemm::Path::current();
    let per = m * n;
    let out: Vec<bf16> = build_vec(offs.len() * per, |out| {
        let o = SendPtr(out.as_mut_ptr() as *mut u16);
        run_batches(offs.len(), m * n * k, |bi, parallel| {
            let (oa, ob) = offs[bi];
            // SAFETY: each batch writes its own `per` elements (every one of
            // them: `beta == 0` writes without reading); the operands' offsets
            // and strides come from their own views.
            unsafe {
                let c = MatMut::from_raw(o.get().add(bi * per), m, n, n, 1);
                bf16_gemm::gemm_bf16_with(
                    path,
                    parallel,
                    bf16_mat(va, oa, (m, k), (ars, acs)),
                    bf16_mat(vb, ob, (k, n), (brs, bcs)),
                    Out::Bf16(c),
                    1.0,
                    0.0,
                );
            }
        });
    });
    Tensor::from_vec(out, shape)
}

/// `bias + a @ b` for bfloat16 matrices: the product summed in float32 onto
/// the float32 bias (`beta = 1`), then rounded once.
pub(super) fn bf16_addmm(bias: &View, va: &View, vb: &View, shape: Shape) -> Tensor {
    let (m, k, n) = (va.shape[0], va.shape[1], vb.shape[1]);
    let mut acc: Vec<f32> = crate::kernels::elementwise::unary::<bf16, f32>(
        bias,
        crate::kernels::convert::cast::<bf16, f32>,
    );
    // SAFETY: `acc` is the row-major m x n bias; the operands are 2-D views
    // whose strides describe their own memory.
    unsafe {
        let c = MatMut::from_raw(acc.as_mut_ptr(), m, n, n, 1);
        bf16_gemm::gemm_bf16_with(
            bf16_gemm::Path::current(),
            true,
            bf16_mat(va, 0, (m, k), (va.strides[0], va.strides[1])),
            bf16_mat(vb, 0, (k, n), (vb.strides[0], vb.strides[1])),
            Out::F32(c),
            1.0,
            1.0,
        );
    }
    crate::ops::back_to(Tensor::from_vec(acc, shape), DType::BF16)
}

/// The product of float16 operands: the entry for float16 matrix products
/// (`mm`, `bmm`, `matmul`, `mv`, `dot`, `addmm`; `linear` and attention go
/// through these). Each element is the float32 product
/// (operands widened exactly, float32 accumulation) rounded once; returns
/// that float32 tensor with the dtype to round it to, so `addmm` can add the
/// bias before rounding.
pub(super) fn product_low_precision(va: &View, vb: &View, shape: Shape) -> (Tensor, DType) {
    let dt = va.dtype();
    let widen = |v: &View| -> Tensor {
        crate::dispatch!(v.dtype(), H => Tensor::from_vec(
            crate::kernels::elementwise::unary::<H, f32>(v, crate::kernels::convert::cast::<H, f32>),
            v.shape.clone(),
        ))
    };
    let (a, b) = (widen(va), widen(vb));
    let (fa, fb) = (a.view(), b.view());
    (Tensor::from_vec(bmm_kernel::<f32>(&fa, &fb), shape), dt)
}

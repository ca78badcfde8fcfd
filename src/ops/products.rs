//! Matrix products: `mm`, `mv`, `dot`, `bmm`, `addmm` (and `linear`), and
//! `matmul` over every 1-D/2-D/batched combination with broadcast batch
//! dimensions, recorded along PyTorch's routes so the graph has its nodes.

use smallvec::{smallvec, SmallVec};

use super::{expand, mul, mul_scalar, squeeze, transpose, unsqueeze, Scalar};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::bf16_gemm::{self, MatMut, MatRef, Out};
use crate::kernels::matmul::{gemm_add_into, gemm_into, Mat};
use crate::kernels::{build_vec, SendPtr};
use crate::saved;
use crate::tensor::{bf16, broadcast_shapes, DType, Element, Shape, Tensor, View};

/// The operands' common dtype; PyTorch's products never promote, each
/// refuses mixed dtypes in its own words.
fn check_dtype(a: &Tensor, b: &Tensor, what: &str) -> Result<DType> {
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

fn mat<T: Element>(v: &View, off: usize, rs: usize, cs: usize, rows: usize, cols: usize) -> Mat<T> {
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
fn batch_offsets(va: &View, vb: &View) -> Vec<(usize, usize)> {
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
fn run_batches(nb: usize, mnk: usize, run: impl Fn(usize, bool) + Sync) {
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
fn bmm_kernel<T: Element>(va: &View, vb: &View) -> Vec<T> {
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
fn bf16_product(va: &View, vb: &View, shape: Shape) -> Tensor {
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
fn bf16_addmm(bias: &View, va: &View, vb: &View, shape: Shape) -> Tensor {
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
    super::back_to(Tensor::from_vec(acc, shape), DType::BF16)
}

/// The product of the matrix views `va` (m x k) and `vb` (k x n), plus `vbias`
/// (broadcast to m x n), in fresh row-major memory: the bias is laid out
/// first and the product accumulated onto it in one pass.
fn addmm_kernel<T: Element>(vbias: &View, va: &View, vb: &View) -> Vec<T> {
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

/// `acc += a @ b` (or, with `transposed`, `acc += (a @ b)^T`) in `acc`'s own
/// memory, rounding exactly as `add(acc, mm(a, b))` (and its transpose)
/// would: the product is formed in `a @ b`'s own frame, by the kernel and
/// with the operands `mm(a, b)` would use, and each element is complete
/// before it is added; only the destination's strides differ, and they
/// change where an element is stored, not how it is computed (forming the
/// product as `(b^T @ a^T)` instead picks other tiles, whose rounding can
/// differ in the last bit). Only products the register-tile kernels take
/// qualify (the general GEMM adds partial sums over blocks of `k`); false,
/// having done nothing, for everything else. `acc` must be 2-D and float and
/// reachable by no other tensor ([`Tensor::owns_storage`]).
pub(crate) fn mm_accumulate(acc: &Tensor, a: &Tensor, b: &Tensor, transposed: bool) -> bool {
    if !acc.owns_storage() {
        return false;
    }
    let (va, vb, vc) = (a.view(), b.view(), acc.view());
    let dt = vc.dtype();
    if va.dtype() != dt || vb.dtype() != dt || !dt.is_float() {
        return false;
    }
    if va.shape.len() != 2 || vb.shape.len() != 2 || vc.shape.len() != 2 {
        return false;
    }
    let (m, k, n) = (va.shape[0], va.shape[1], vb.shape[1]);
    let want = if transposed { [n, m] } else { [m, n] };
    if vb.shape[0] != k || vc.shape.as_slice() != want {
        return false;
    }
    let (rs, cs) = if transposed {
        (vc.strides[1], vc.strides[0])
    } else {
        (vc.strides[0], vc.strides[1])
    };
    fn go<T: Element>(va: &View, vb: &View, acc: &View, rs: usize, cs: usize) -> bool {
        let (m, k, n) = (va.shape[0], va.shape[1], vb.shape[1]);
        let (xa, ya) = (
            mat::<T>(va, 0, va.strides[0], va.strides[1], m, k),
            mat::<T>(vb, 0, vb.strides[0], vb.strides[1], k, n),
        );
        let dst = crate::kernels::matmul::Dst {
            ptr: acc.ptr::<T>(),
            rs,
            cs,
            add: true,
        };
        // SAFETY: 2-D views whose strides describe their own memory; `acc`
        // spans the product's elements at `dst`'s strides and no other
        // tensor reaches it.
        unsafe { crate::kernels::small_gemm::try_run(xa, ya, dst) }
    }
    match dt {
        DType::F32 => go::<f32>(&va, &vb, &vc, rs, cs),
        DType::F64 => go::<f64>(&va, &vb, &vc, rs, cs),
        _ => false,
    }
}

/// The batched product of two views of one dtype (`[..., m, k] @ [..., k, n]`
/// with equal batch shapes) as a tensor of `shape`: natively, except
/// bfloat16 ([`bf16_product`]) and float16 ([`product_low_precision`]).
fn product(dt: DType, va: &View, vb: &View, shape: Shape) -> Result<Tensor> {
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
        return Ok(super::back_to(t, d));
    }
    Ok(crate::dispatch_native!(dt, T => Tensor::from_vec(bmm_kernel::<T>(va, vb), shape)))
}

/// The product of float16 operands: the entry for float16 matrix products
/// (`mm`, `bmm`, `matmul`, `mv`, `dot`, `addmm`; `linear` and attention go
/// through these). Each element is the float32 product
/// (operands widened exactly, float32 accumulation) rounded once; returns
/// that float32 tensor with the dtype to round it to, so `addmm` can add the
/// bias before rounding.
fn product_low_precision(va: &View, vb: &View, shape: Shape) -> (Tensor, DType) {
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

/// `mm(a, b)` for two matrices.
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    check_matrices("mm", &sa, &sb)?;
    let dt = check_dtype(a, b, "addmm_impl_cpu_")?;
    let out = {
        let (va, vb) = (a.view(), b.view());
        product(dt, &va, &vb, Shape::from_slice(&[sa[0], sb[1]]))?
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (crate::autograd::tracked(a), crate::autograd::tracked(b));
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

/// PyTorch's checks (and wording) for the two matrices of `mm`/`addmm`.
fn check_matrices(op: &str, sa: &[usize], sb: &[usize]) -> Result<()> {
    if sa.len() != 2 {
        return Err(Error::runtime(format!(
            "{op}: self must be a matrix, got {}-D tensor",
            sa.len()
        )));
    }
    if sb.len() != 2 {
        return Err(Error::runtime(format!(
            "{op}: mat2 must be a matrix, got {}-D tensor",
            sb.len()
        )));
    }
    if sa[1] != sb[0] {
        return Err(Error::runtime(format!(
            "{op}: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            sa[0], sa[1], sb[0], sb[1]
        )));
    }
    Ok(())
}

/// `addmm(bias, a, b) = bias + a @ b` as one node (`AddmmBackward0`), the
/// bias broadcast to the product's shape: what `linear` records for a
/// matrix input.
pub(crate) fn addmm(bias: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let shape = check_addmm(bias, a, b)?;
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let e = expand(&bias.detach(), &shape)?;
        let da = a.dtype();
        let (vc, va, vb) = (e.view(), a.view(), b.view());
        if shape.contains(&0) {
            // No elements, however long the other side.
            Tensor::zeros(shape.clone(), da)
        } else if da == DType::BF16 {
            bf16_addmm(&vc, &va, &vb, shape)
        } else if da.is_low_precision() {
            // bias + a @ b in float32, rounded once.
            let sum = crate::ops::add(
                &crate::ops::cast_data(&e, DType::F32),
                &product_low_precision(&va, &vb, shape).0,
            )?;
            super::back_to(sum, da)
        } else {
            crate::dispatch_native!(da, T => Tensor::from_vec(addmm_kernel::<T>(&vc, &va, &vb), shape))
        }
    };
    record_addmm(bias, a, b, &out, None);
    Ok(out)
}

/// `torch.addmm`: `beta * bias + alpha * (a @ b)` as one `AddmmBackward0`
/// node. With `beta == 0` the bias only gives its shape: NaN and infinity in
/// it do not reach the result, as in PyTorch.
pub(crate) fn addmm_scaled(
    bias: &Tensor,
    a: &Tensor,
    b: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    let one = |s: Scalar| matches!(s, Scalar::Int(1)) || matches!(s, Scalar::Float(f) if f == 1.0);
    if one(beta) && one(alpha) {
        return addmm(bias, a, b);
    }
    let shape = check_addmm(bias, a, b)?;
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let e = expand(&bias.detach(), &shape)?;
        let p = mm(&a.detach(), &b.detach())?;
        let p = if one(alpha) {
            p
        } else {
            mul_scalar(&p, alpha)?
        };
        let zero = matches!(beta, Scalar::Int(0)) || matches!(beta, Scalar::Float(f) if f == 0.0);
        if zero {
            p
        } else {
            let c = if one(beta) { e } else { mul_scalar(&e, beta)? };
            crate::ops::add(&c, &p)?
        }
    };
    record_addmm(bias, a, b, &out, Some((beta, alpha)));
    Ok(out)
}

/// The shape of `bias + a @ b`, after PyTorch's checks of the operands.
fn check_addmm(bias: &Tensor, a: &Tensor, b: &Tensor) -> Result<Shape> {
    let (sa, sb) = (a.shape(), b.shape());
    check_matrices("addmm", &sa, &sb)?;
    let (da, db, dc) = (a.dtype(), b.dtype(), bias.dtype());
    if dc != db {
        return Err(Error::runtime(format!(
            "self and mat2 must have the same dtype, but got {} and {}",
            dc.scalar_name(),
            db.scalar_name()
        )));
    }
    if da != db {
        return Err(Error::runtime(format!(
            "mat1 and mat2 must have the same dtype, but got {} and {}",
            da.scalar_name(),
            db.scalar_name()
        )));
    }
    if da == DType::Bool {
        return Err(Error::runtime(
            "\"addmm_impl_cpu_\" not implemented for 'Bool'",
        ));
    }
    let shape = Shape::from_slice(&[sa[0], sb[1]]);
    crate::tensor::checked_storage_numel(&shape, da.size())?;
    Ok(shape)
}

/// Records `AddmmBackward0` for `out = beta * bias + alpha * (a @ b)`
/// (`scale` is `(beta, alpha)`, `None` for both 1). Scaled, the node carries
/// its forward-mode rule (the engine's own product rule for the name knows
/// no scales).
fn record_addmm(
    bias: &Tensor,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    scale: Option<(Scalar, Scalar)>,
) {
    if !needs_record(&[bias, a, b]) {
        return;
    }
    let (ra, rb) = (crate::autograd::tracked(a), crate::autograd::tracked(b));
    let scaled = move |t: Tensor, s: Option<Scalar>| match s {
        Some(s) => mul_scalar(&t, s),
        None => Ok(t),
    };
    let (beta, alpha) = (scale.map(|s| s.0), scale.map(|s| s.1));
    let rule = move |c: &crate::autograd::BackwardCtx<'_>| {
        let g = c.grad()?;
        // The engine sums the bias's gradient back to its shape.
        let gc = if c.needs(0) {
            Some(scaled(g.clone(), beta)?)
        } else {
            None
        };
        let ga = if c.needs(1) {
            Some(scaled(mm(g, &transpose(c.saved(1)?, 0, 1)?)?, alpha)?)
        } else {
            None
        };
        let gb = if c.needs(2) {
            Some(scaled(mm(&transpose(c.saved(0)?, 0, 1)?, g)?, alpha)?)
        } else {
            None
        };
        Ok(smallvec![gc, ga, gb])
    };
    let saved = saved![rb.then_some(a), ra.then_some(b)];
    if scale.is_none() {
        record("AddmmBackward0", &[bias, a, b], out, saved, rule);
        return;
    }
    let (a0, b0, shape) = (a.detach(), b.detach(), out.shape());
    let jvp = move |t: &[Option<Tensor>]| -> Result<Tensor> {
        let mut p: Option<Tensor> = None;
        for part in [
            t[1].as_ref().map(|ta| mm(ta, &b0)),
            t[2].as_ref().map(|tb| mm(&a0, tb)),
        ]
        .into_iter()
        .flatten()
        {
            let part = part?;
            p = Some(match p {
                Some(q) => crate::ops::add(&q, &part)?,
                None => part,
            });
        }
        let mut acc = p.map(|p| scaled(p, alpha)).transpose()?;
        if let Some(tc) = &t[0] {
            let tc = scaled(expand(tc, &shape)?, beta)?;
            acc = Some(match acc {
                Some(q) => crate::ops::add(&tc, &q)?,
                None => tc,
            });
        }
        match acc {
            Some(t) => Ok(t),
            None => Ok(Tensor::zeros(shape.clone(), a0.dtype())),
        }
    };
    crate::autograd::record_jvp("AddmmBackward0", &[bias, a, b], out, saved, rule, jvp);
}

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
                    Some(mv(&super::t(c.saved(0)?)?, g)?)
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

/// An unrecorded size-1 dimension, for feeding vectors to the matrix kernel.
fn unsqueeze_data(a: &Tensor, dim: usize) -> Tensor {
    let _g = crate::autograd::GradModeGuard::new(false);
    let d = a.detach();
    unsqueeze(&d, dim as i64).unwrap_or(d)
}

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
        super::t(a)?
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
    let folded = super::reshape_i(&t1, &[rows as i64, s1[s1.len() - 1] as i64])?;
    if t2_matrix {
        let out = super::unsafe_view(&mm(&folded, &t2)?, out_shape);
        if trans {
            return super::contiguous(&transpose(&out, -1, -2)?);
        }
        Ok(out)
    } else {
        Ok(super::unsafe_view(&mv(&folded, &t2)?, out_shape))
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
            let g = super::reshape(c.grad()?, &g_shape)?;
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
    Ok(super::unsafe_view(&flat, out_shape))
}

/// `bmm(a, b)`: strictly 3-D batches of equal size.
pub(crate) fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 3 {
        return Err(Error::runtime("batch1 must be a 3D tensor"));
    }
    if sb.len() != 3 {
        return Err(Error::runtime("batch2 must be a 3D tensor"));
    }
    if sb[0] != sa[0] || sb[1] != sa[2] {
        return Err(Error::runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            sa[0], sa[2], sb[0], sb[1]
        )));
    }
    let dt = check_dtype(a, b, "bmm")?;
    let out = {
        let (va, vb) = (a.view(), b.view());
        product(dt, &va, &vb, Shape::from_slice(&[sa[0], sa[1], sb[2]]))?
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (crate::autograd::tracked(a), crate::autograd::tracked(b));
        record(
            "BmmBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), ra.then_some(b)],
            |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) {
                    Some(bmm(g, &transpose(c.saved(1)?, 1, 2)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(bmm(&transpose(c.saved(0)?, 1, 2)?, g)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
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
    let (gc, xc) = (super::compute_contig(g), super::compute_contig(x));
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

/// `linear(x, w, b) = x @ w.T + b`, by PyTorch's routes: a matrix input with
/// a bias is one `addmm` (`AddmmBackward0`); a contiguous input of other
/// rank with a bias that is contiguous and one-dimensional once squeezed is
/// flattened to a matrix for `addmm` and reshaped back; anything else is
/// `matmul` followed by an in-place add of the bias.
pub(crate) fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    let (xd, wd) = (x.ndim(), w.ndim());
    if xd == 0 || wd == 0 {
        return Err(Error::runtime(format!(
            "both arguments to linear need to be at least 1D, but they are {xd}D and {wd}D"
        )));
    }
    let Some(b) = b else {
        return matmul(x, &super::t(w)?);
    };
    if xd == 2 {
        return addmm(b, x, &super::t(w)?);
    }
    let squeezed_dims = b.shape().iter().filter(|&&s| s != 1).count();
    let bias_fusable = (b.ndim() == 1 || squeezed_dims == 1) && b.is_contiguous();
    if bias_fusable && x.is_contiguous() {
        // `_flatten_nd_linear`: the leading dimensions become rows.
        let xs = x.shape();
        let cols = xs[xs.len() - 1];
        let rows: usize = xs[..xs.len() - 1].iter().product();
        let x2 = super::view(x, &[rows as i64, cols as i64])?;
        let r = addmm(b, &x2, &super::t(w)?)?;
        let mut shape: Shape = xs[..xs.len() - 1].iter().copied().collect();
        shape.push(r.shape()[1]);
        return Ok(super::unsafe_view(&r, shape));
    }
    let out = matmul(x, &super::t(w)?)?;
    super::apply_inplace(&out, || super::add(&out, b))?;
    Ok(out)
}

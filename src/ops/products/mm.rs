//! `mm` and `addmm` (plain and scaled), their checks and the one
//! `AddmmBackward0` node they record, and the in-place accumulation
//! `acc += a @ b` that rounds as `add(acc, mm(a, b))` does.

use smallvec::smallvec;

use super::gemm::{addmm_kernel, check_dtype, mat, product};
use super::low_precision::{bf16_addmm, product_low_precision};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ops::{expand, mul_scalar, transpose, Scalar};
use crate::saved;
use crate::tensor::{DType, Element, Shape, Tensor, View};

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
            crate::ops::back_to(sum, da)
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

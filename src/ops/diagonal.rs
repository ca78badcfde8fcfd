//! `diagonal` as a strided view (as in PyTorch), its adjoint, and `trace`.
//! einsum takes diagonals through here for repeated subscripts.

use smallvec::smallvec;

use crate::autograd::{needs_record, record, GradModeGuard};
use crate::error::{Error, Result};
use crate::kernels::copy::scatter;
use crate::saved;
use crate::tensor::{wrap_dim, DType, Shape, Strides, Tensor, View};

/// A diagonal of any tensor of a given rank: the backward replays it on
/// zeros of the input's shape, and the double backward on the gradient.
#[derive(Clone, Copy, Debug)]
struct Diag {
    offset: i64,
    d1: usize,
    d2: usize,
}

fn diag_len(n1: usize, n2: usize, offset: i64) -> usize {
    let (n1, n2) = (n1 as i64, n2 as i64);
    let len = if offset >= 0 {
        n1.min(n2 - offset)
    } else {
        (n1 + offset).min(n2)
    };
    len.max(0) as usize
}

/// `d1` and `d2` are dropped and the diagonal becomes the last dimension,
/// stepping both indices at once (stride `s1 + s2`).
fn diag_view(v: &View, d: Diag) -> View {
    let (s1, s2) = (v.strides[d.d1], v.strides[d.d2]);
    let len = diag_len(v.shape[d.d1], v.shape[d.d2], d.offset);
    // An empty diagonal keeps the offset, which then never points past the storage.
    let start = match (len, d.offset >= 0) {
        (0, _) => 0,
        (_, true) => d.offset as usize * s2,
        (_, false) => d.offset.unsigned_abs() as usize * s1,
    };
    let mut shape = Shape::new();
    let mut strides = Strides::new();
    for (k, (&n, &s)) in v.shape.iter().zip(&v.strides).enumerate() {
        if k != d.d1 && k != d.d2 {
            shape.push(n);
            strides.push(s);
        }
    }
    shape.push(len);
    strides.push(s1 + s2);
    View {
        storage: v.storage.clone(),
        shape,
        strides,
        offset: v.offset + start,
    }
}

fn take_diag(a: &Tensor, d: Diag, name: &'static str) -> Tensor {
    let in_shape = a.shape();
    let view = diag_view(&a.view(), d);
    crate::ops::inplace::install_view_refresh();
    let out = Tensor::from_view(view, Some(a.root().clone()));
    if needs_record(&[a]) {
        record(name, &[a], &out, saved![], move |c| {
            Ok(smallvec![Some(diag_embed(c.grad()?, &in_shape, d)?)])
        });
    }
    out
}

/// Zeros of `in_shape` with `g` written along the diagonal: the adjoint of `take_diag`.
fn diag_embed(g: &Tensor, in_shape: &Shape, d: Diag) -> Result<Tensor> {
    let z = Tensor::zeros(in_shape.clone(), g.dtype());
    {
        let zv = z.view();
        let target = diag_view(&zv, d);
        if target.shape != g.shape() {
            return Err(Error::runtime(
                "diagonal backward: gradient does not match the diagonal",
            ));
        }
        let gc = g.contiguous_data();
        let gv = gc.view();
        crate::dispatch!(gv.dtype(), T => {
            if let Some(s) = gv.as_slice::<T>() {
                scatter::<T>(&target, s);
            }
        });
    }
    if needs_record(&[g]) {
        record("DiagonalBackwardBackward0", &[g], &z, saved![], move |c| {
            Ok(smallvec![Some(take_diag(
                c.grad()?,
                d,
                "DiagonalBackward0"
            ))])
        });
    }
    Ok(z)
}

/// `diagonal(a, offset, dim1, dim2)`: a view of the elements `a[.., i, .., i + offset, ..]`
/// (over `dim1`, `dim2`), appended as the last dimension.
pub(crate) fn diagonal(a: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let nd = a.ndim();
    let (d1, d2) = (wrap_dim(dim1, nd)?, wrap_dim(dim2, nd)?);
    // With fewer than two dimensions wrap_dim admits only 0 and -1, which land here.
    if d1 == d2 {
        return Err(Error::runtime(format!(
            "diagonal dimensions cannot be identical {dim1}, {dim2}"
        )));
    }
    Ok(take_diag(a, Diag { offset, d1, d2 }, "DiagonalBackward0"))
}

/// `trace(a)`: the sum of a matrix's main diagonal (integers sum in int64).
pub(crate) fn trace(a: &Tensor) -> Result<Tensor> {
    let shape = a.shape();
    if shape.len() != 2 {
        return Err(Error::runtime(format!(
            "trace: expected a matrix, but got tensor with dim {}",
            shape.len()
        )));
    }
    if a.dtype() == DType::Bool {
        return Err(Error::runtime("\"trace\" not implemented for 'Bool'"));
    }
    let d = Diag {
        offset: 0,
        d1: 0,
        d2: 1,
    };
    let out = {
        let _g = GradModeGuard::new(false);
        super::sum(&take_diag(&a.detach(), d, "DiagonalBackward0"), None, false)?
    };
    if needs_record(&[a]) {
        let n = diag_len(shape[0], shape[1], 0);
        record("TraceBackward0", &[a], &out, saved![], move |c| {
            let g = super::expand(c.grad()?, &[n])?;
            Ok(smallvec![Some(diag_embed(&g, &shape, d)?)])
        });
    }
    Ok(out)
}

/// `diag_embed(input, offset, dim1, dim2)`: zeros with the last dimension of
/// `input` written along the `offset`-th diagonal of the planes (`dim1`,
/// `dim2`) of the result, which has one dimension more. Recorded as
/// `DiagEmbedBackward0`, whose gradient is that diagonal of the gradient.
pub(crate) fn diag_embed_op(input: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let shape = input.shape();
    if shape.is_empty() {
        return Err(Error::runtime(
            "diag_embed(): input must be at least 1-dimensional",
        ));
    }
    let nd = shape.len() + 1;
    let (d1, d2) = (wrap_dim(dim1, nd)?, wrap_dim(dim2, nd)?);
    if d1 == d2 {
        return Err(Error::runtime(format!(
            "diagonal dimensions cannot be identical {dim1}, {dim2}"
        )));
    }
    let n = shape[shape.len() - 1];
    let size = n + offset.unsigned_abs() as usize;
    let mut out_shape: Shape = shape[..shape.len() - 1].iter().copied().collect();
    // Insert in increasing order so both land where they are asked to.
    let (lo, hi) = (d1.min(d2), d1.max(d2));
    out_shape.insert(lo, size);
    out_shape.insert(hi, size);
    let d = Diag { offset, d1, d2 };
    let out = {
        let _g = GradModeGuard::new(false);
        diag_embed(&input.detach(), &out_shape, d)?
    };
    if needs_record(&[input]) {
        record("DiagEmbedBackward0", &[input], &out, saved![], move |c| {
            Ok(smallvec![Some(take_diag(
                c.grad()?,
                d,
                "DiagonalBackward0"
            ))])
        });
    }
    Ok(out)
}

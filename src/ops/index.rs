//! Basic indexing (`t[i]`, `t[a:b:c]`) as views, with backward rules that
//! embed the gradient into zeros of the input's shape, and vice versa.

use smallvec::smallvec;

use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::copy::scatter;
use crate::saved;
use crate::tensor::{wrap_dim, Shape, Tensor, View};

/// Geometry of `select(dim, i)` or `slice(dim, start, len, step)` on any
/// tensor of a given shape, so the backward can replay it on zeros.
#[derive(Clone, Copy, Debug)]
enum Pick {
    Select {
        dim: usize,
        index: usize,
    },
    Slice {
        dim: usize,
        start: usize,
        len: usize,
        step: usize,
    },
}

fn apply_pick(v: &View, p: Pick) -> View {
    let mut shape = v.shape.clone();
    let mut strides = v.strides.clone();
    let offset = match p {
        Pick::Select { dim, index } => {
            let off = v.offset + index * strides[dim];
            shape.remove(dim);
            strides.remove(dim);
            off
        }
        Pick::Slice {
            dim,
            start,
            len,
            step,
        } => {
            let off = v.offset + if len > 0 { start * strides[dim] } else { 0 };
            shape[dim] = len;
            strides[dim] *= step;
            off
        }
    };
    View {
        storage: v.storage.clone(),
        shape,
        strides,
        offset,
    }
}

fn pick(a: &Tensor, p: Pick, name: &'static str) -> Tensor {
    let in_shape = a.shape();
    let view = apply_pick(&a.view(), p);
    crate::ops::inplace::install_view_refresh();
    let out = Tensor::new_view(view, a, name);
    if needs_record(&[a]) {
        record(name, &[a], &out, saved![], move |c| {
            Ok(smallvec![Some(embed(c.grad()?, &in_shape, p)?)])
        });
    }
    out
}

/// Zeros of `in_shape` with `g` written where `p` picks; the adjoint of `pick`.
fn embed(g: &Tensor, in_shape: &Shape, p: Pick) -> Result<Tensor> {
    let z = Tensor::zeros(in_shape.clone(), g.dtype());
    {
        let zv = z.view();
        let target = apply_pick(&zv, p);
        let gc = g.contiguous_data();
        let gv = gc.view();
        crate::dispatch!(gv.dtype(), T => {
            if let Some(s) = gv.as_slice::<T>() {
                scatter::<T>(&target, s);
            }
        });
    }
    if needs_record(&[g]) {
        record("EmbedBackward0", &[g], &z, saved![], move |c| {
            Ok(smallvec![Some(pick(
                c.grad()?,
                p,
                "EmbedBackwardBackward0"
            ))])
        });
    }
    Ok(z)
}

/// `a.select(dim, index)`: drops `dim`, keeping one position (negative counts from the end).
pub(crate) fn select(a: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    let shape = a.shape();
    if shape.is_empty() {
        return Err(Error::index("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"));
    }
    let d = wrap_dim(dim, shape.len())?;
    let n = shape[d] as i64;
    if index < -n || index >= n {
        return Err(Error::index(format!(
            "index {index} is out of bounds for dimension {d} with size {n}"
        )));
    }
    let i = if index < 0 { index + n } else { index } as usize;
    Ok(pick(
        a,
        Pick::Select { dim: d, index: i },
        "SelectBackward0",
    ))
}

/// `a[start:stop:step]` along `dim`, with Python's clamping of out-of-range bounds.
pub(crate) fn slice(
    a: &Tensor,
    dim: i64,
    start: Option<i64>,
    stop: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    if step <= 0 {
        return Err(Error::value("step must be greater than zero"));
    }
    let shape = a.shape();
    let d = wrap_dim(dim, shape.len())?;
    let n = shape[d] as i64;
    let clamp = |v: i64| -> i64 {
        let v = if v < 0 { v + n } else { v };
        v.clamp(0, n)
    };
    let s = start.map(clamp).unwrap_or(0);
    let e = stop.map(clamp).unwrap_or(n);
    let len = if e > s {
        ((e - s) + step - 1) / step
    } else {
        0
    } as usize;
    Ok(pick(
        a,
        Pick::Slice {
            dim: d,
            start: s as usize,
            len,
            step: step as usize,
        },
        "SliceBackward0",
    ))
}

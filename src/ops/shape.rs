//! Views (reshape, expand, transpose, ...) that share storage with their
//! input, plus the copies (`contiguous`, `clone`) for when a view cannot work.

use smallvec::{smallvec, SmallVec};

use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{
    fmt_shape, infer_shape, is_contiguous, view_strides, wrap_dim, Shape, Strides, Tensor, View,
};

/// A new tensor viewing `a`'s storage with another shape and strides, made
/// by the view op whose node is `op`.
fn alias(a: &Tensor, op: &'static str, shape: Shape, strides: Strides, offset: usize) -> Tensor {
    let v = a.view();
    let view = View {
        storage: v.storage.clone(),
        shape,
        strides,
        offset,
    };
    drop(v);
    crate::ops::inplace::install_view_refresh();
    Tensor::new_view(view, a, op)
}

impl Tensor {
    /// Same memory under a new shape; the caller guarantees it is contiguous.
    pub(crate) fn reshape_data(&self, shape: Shape) -> Tensor {
        let v = self.view();
        debug_assert!(v.is_contiguous());
        Tensor::from_view(View::contiguous(v.storage.clone(), shape), None)
    }
}

/// `view`: fails, like PyTorch, when the layout needs a copy.
pub(crate) fn view(a: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let (old, strides, offset) = {
        let v = a.view();
        (v.shape.clone(), v.strides.clone(), v.offset)
    };
    let new = infer_shape(shape, old.iter().product())?;
    let st = view_strides(&old, &strides, &new).ok_or_else(|| {
        Error::runtime(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
        )
    })?;
    Ok(record_view(
        a,
        alias(a, "ViewBackward0", new, st, offset),
        "ViewBackward0",
        old,
    ))
}

/// `reshape` for the library's own use: `a` itself when the shape is
/// already right (gradients and intermediates need no new node for that).
pub(crate) fn reshape(a: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if a.shape().as_slice() == shape {
        return Ok(a.clone());
    }
    let s: SmallVec<[i64; 4]> = shape.iter().map(|&d| d as i64).collect();
    reshape_i(a, &s)
}

/// The user's `reshape`: a view when possible, otherwise a copy; always a
/// new tensor, as in PyTorch, even when the shape does not change.
pub(crate) fn reshape_i(a: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let (old, strides, offset) = {
        let v = a.view();
        (v.shape.clone(), v.strides.clone(), v.offset)
    };
    let new = infer_shape(shape, old.iter().product())?;
    match view_strides(&old, &strides, &new) {
        // PyTorch views a contiguous input and `_reshape_alias`es any other.
        Some(st) => {
            let name = if is_contiguous(&old, &strides) {
                "ViewBackward0"
            } else {
                "ReshapeAliasBackward0"
            };
            Ok(record_view(a, alias(a, name, new, st, offset), name, old))
        }
        None => {
            let c = contiguous(a)?;
            let out = c.reshape_data(new);
            Ok(record_view(&c, out, "UnsafeViewBackward0", old))
        }
    }
}

/// PyTorch's `_unsafe_view`: the contiguous `a` under another shape, as a
/// new tensor that is not a view for autograd (`UnsafeViewBackward0`).
pub(crate) fn unsafe_view(a: &Tensor, shape: Shape) -> Tensor {
    let old = a.shape();
    let out = a.reshape_data(shape);
    record_view(a, out, "UnsafeViewBackward0", old)
}

fn record_view(a: &Tensor, out: Tensor, name: &'static str, old: Shape) -> Tensor {
    if needs_record(&[a]) {
        record(name, &[a], &out, saved![], move |c| {
            Ok(smallvec![Some(reshape(c.grad()?, &old)?)])
        });
    }
    out
}

/// Broadcasts `a` to `shape` without copying (stride 0 on new dimensions);
/// `a` itself when it already has that shape (see [`expand_view`]).
pub(crate) fn expand(a: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if a.shape().as_slice() == shape {
        return Ok(a.clone());
    }
    expand_view(a, shape)
}

/// The user's `expand`: always a new view, as in PyTorch.
pub(crate) fn expand_view(a: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let (old, strides, offset) = {
        let v = a.view();
        (v.shape.clone(), v.strides.clone(), v.offset)
    };
    if shape.len() < old.len() {
        return Err(Error::runtime(format!(
            "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            shape.len(),
            old.len()
        )));
    }
    // Only expand can make a view of more elements than memory holds; every
    // loop over it counts them in a usize.
    crate::tensor::checked_numel(shape)?;
    let lead = shape.len() - old.len();
    let mut st: Strides = SmallVec::from_elem(0, shape.len());
    for i in 0..old.len() {
        let (have, want) = (old[i], shape[lead + i]);
        st[lead + i] = if have == want {
            strides[i]
        } else if have == 1 {
            0
        } else {
            return Err(Error::runtime(format!(
                "The expanded size of the tensor ({want}) must match the existing size ({have}) at non-singleton dimension {}.  Target sizes: {}.  Tensor sizes: {}",
                lead + i,
                fmt_shape(shape),
                fmt_shape(&old)
            )));
        };
    }
    let out = alias(a, "ExpandBackward0", Shape::from_slice(shape), st, offset);
    if needs_record(&[a]) {
        record("ExpandBackward0", &[a], &out, saved![], move |c| {
            Ok(smallvec![Some(super::sum_to(c.grad()?, &old)?)])
        });
    }
    Ok(out)
}

/// Swaps two dimensions (a view).
pub fn transpose(a: &Tensor, d0: i64, d1: i64) -> Result<Tensor> {
    let (mut shape, mut strides, offset) = {
        let v = a.view();
        (v.shape.clone(), v.strides.clone(), v.offset)
    };
    let n = shape.len();
    // A 0-d tensor accepts dims 0 and -1 and is its own transpose.
    let (i, j) = (wrap_dim(d0, n.max(1))?, wrap_dim(d1, n.max(1))?);
    if n > 0 {
        shape.swap(i, j);
        strides.swap(i, j);
    }
    let out = alias(a, "TransposeBackward0", shape, strides, offset);
    if needs_record(&[a]) {
        record("TransposeBackward0", &[a], &out, saved![], move |c| {
            Ok(smallvec![Some(transpose(c.grad()?, i as i64, j as i64)?)])
        });
    }
    Ok(out)
}

/// `t()`: transpose of a matrix. As in PyTorch, vectors and scalars give a
/// view with the same shape (recorded as `TBackward0` like matrices).
pub(crate) fn t(a: &Tensor) -> Result<Tensor> {
    let (mut shape, mut strides, offset) = {
        let v = a.view();
        (v.shape.clone(), v.strides.clone(), v.offset)
    };
    match shape.len() {
        0 | 1 => {}
        2 => {
            shape.swap(0, 1);
            strides.swap(0, 1);
        }
        n => {
            return Err(Error::runtime(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {n}D"
            )))
        }
    }
    let out = alias(a, "TBackward0", shape, strides, offset);
    if needs_record(&[a]) {
        record("TBackward0", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(t(c.grad()?)?)])
        });
    }
    Ok(out)
}

/// Inserts a size-1 dimension at `dim`.
pub(crate) fn unsqueeze(a: &Tensor, dim: i64) -> Result<Tensor> {
    let (mut shape, mut strides, offset) = {
        let v = a.view();
        (v.shape.clone(), v.strides.clone(), v.offset)
    };
    let d = wrap_dim(dim, shape.len() + 1)?;
    let st = if d < shape.len() {
        strides[d] * shape[d]
    } else {
        1
    };
    shape.insert(d, 1);
    strides.insert(d, st);
    let out = alias(a, "UnsqueezeBackward0", shape, strides, offset);
    if needs_record(&[a]) {
        record("UnsqueezeBackward0", &[a], &out, saved![], move |c| {
            Ok(smallvec![Some(squeeze(c.grad()?, Some(d as i64))?)])
        });
    }
    Ok(out)
}

/// Removes size-1 dimensions (all of them, or only `dim`).
pub(crate) fn squeeze(a: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    let (shape, strides, offset) = {
        let v = a.view();
        (v.shape.clone(), v.strides.clone(), v.offset)
    };
    let keep: SmallVec<[bool; 4]> = match dim {
        Some(d) => {
            let d = if shape.is_empty() {
                wrap_dim(d, 0)?;
                usize::MAX
            } else {
                wrap_dim(d, shape.len())?
            };
            (0..shape.len()).map(|i| i != d || shape[i] != 1).collect()
        }
        None => shape.iter().map(|&n| n != 1).collect(),
    };
    let ns: Shape = shape
        .iter()
        .zip(&keep)
        .filter(|(_, &k)| k)
        .map(|(&n, _)| n)
        .collect();
    let nst: Strides = strides
        .iter()
        .zip(&keep)
        .filter(|(_, &k)| k)
        .map(|(&s, _)| s)
        .collect();
    let name = if dim.is_some() {
        "SqueezeBackward1"
    } else {
        "SqueezeBackward0"
    };
    let out = alias(a, name, ns, nst, offset);
    if needs_record(&[a]) {
        record(name, &[a], &out, saved![], move |c| {
            Ok(smallvec![Some(reshape(c.grad()?, &shape)?)])
        });
    }
    Ok(out)
}

/// `a` under a new tensor sharing everything, as `t[...]` gives (`AliasBackward0`).
pub(crate) fn alias_of(a: &Tensor) -> Tensor {
    let (shape, strides, offset) = {
        let v = a.view();
        (v.shape.clone(), v.strides.clone(), v.offset)
    };
    let out = alias(a, "AliasBackward0", shape, strides, offset);
    if needs_record(&[a]) {
        record("AliasBackward0", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(c.grad()?.clone())])
        });
    }
    out
}

/// Reorders dimensions (a view).
pub(crate) fn permute(a: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let (shape, strides, offset) = {
        let v = a.view();
        (v.shape.clone(), v.strides.clone(), v.offset)
    };
    let n = shape.len();
    if dims.len() != n {
        return Err(Error::runtime(format!(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = {}",
            dims.len()
        )));
    }
    let mut perm: SmallVec<[usize; 4]> = SmallVec::with_capacity(n);
    let mut seen: SmallVec<[bool; 4]> = SmallVec::from_elem(false, n);
    for &d in dims {
        let d = wrap_dim(d, n)?;
        if seen[d] {
            return Err(Error::runtime("permute(): duplicate dims are not allowed."));
        }
        seen[d] = true;
        perm.push(d);
    }
    let ns: Shape = perm.iter().map(|&p| shape[p]).collect();
    let nst: Strides = perm.iter().map(|&p| strides[p]).collect();
    let out = alias(a, "PermuteBackward0", ns, nst, offset);
    if needs_record(&[a]) {
        let mut inv: SmallVec<[i64; 4]> = SmallVec::from_elem(0, n);
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i as i64;
        }
        record("PermuteBackward0", &[a], &out, saved![], move |c| {
            Ok(smallvec![Some(permute(c.grad()?, &inv)?)])
        });
    }
    Ok(out)
}

/// A contiguous tensor with `a`'s values: `a` itself when already contiguous.
pub(crate) fn contiguous(a: &Tensor) -> Result<Tensor> {
    if a.is_contiguous() {
        return Ok(a.clone());
    }
    recorded_clone(a, clone_data(a))
}

/// A copy in fresh memory, recorded (`CloneBackward0`). A dense input keeps
/// its strides (PyTorch's `preserve_format`): the copy is one `memcpy` of its
/// memory; anything else becomes row-major.
pub(crate) fn clone(a: &Tensor) -> Result<Tensor> {
    recorded_clone(a, super::layout::clone_kept(a))
}

fn recorded_clone(a: &Tensor, out: Tensor) -> Result<Tensor> {
    if needs_record(&[a]) {
        record("CloneBackward0", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(c.grad()?.clone())])
        });
    }
    Ok(out)
}

/// A copy in fresh contiguous memory, outside the graph.
pub fn clone_data(a: &Tensor) -> Tensor {
    let v = a.view();
    let shape = v.shape.clone();
    crate::dispatch!(v.dtype(), T => Tensor::from_vec(crate::kernels::copy::gather::<T>(&v), shape))
}

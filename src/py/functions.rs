//! Helpers every creation binding shares. The module functions live by topic:
//! `creation.rs`, `random/`, `functional.rs`, `nn.rs`, `autograd.rs`, and
//! the op table (`ops_table.rs`).

use pyo3::prelude::*;

use super::convert::to_shape;
use super::tensor::{wrap, PyTensor};
use crate::tensor::{checked_storage_numel, DType, Shape, Tensor};

pub(super) fn t_of<'a>(obj: &'a Bound<'_, PyTensor>) -> &'a Tensor {
    &obj.get().t
}

/// Wraps a new tensor, a leaf that requires grad if asked.
pub(super) fn finish(py: Python<'_>, t: Tensor, requires_grad: bool) -> PyResult<Py<PyAny>> {
    if requires_grad {
        if !t.dtype().is_float() {
            // A factory's words (`requires_grad_()` has its own).
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "Only Tensors of floating point and complex dtype can require gradients",
            ));
        }
        t.set_requires_grad(true)?;
    }
    wrap(py, t)
}

/// A new tensor made a leaf that requires grad if asked (inside a replay
/// rule, so every replay's tensor is one too).
pub(super) fn leaf(t: Tensor, requires_grad: bool) -> crate::Result<Tensor> {
    if requires_grad {
        if !t.dtype().is_float() {
            // A factory's words, as `finish` gives them.
            return Err(crate::Error::Runtime(
                "Only Tensors of floating point and complex dtype can require gradients".into(),
            ));
        }
        t.set_requires_grad(true)?;
    }
    Ok(t)
}

/// The shape of a tensor about to be allocated, checked before any memory is
/// requested: no negative size, and a byte size that fits in an `i64`.
pub(super) fn alloc_shape(dims: &[i64], dtype: DType) -> PyResult<Shape> {
    let shape = to_shape(dims)?;
    checked_storage_numel(&shape, dtype.size())?;
    Ok(shape)
}

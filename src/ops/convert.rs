//! Dtype conversion, recorded so gradients flow back in the input's dtype.

use smallvec::smallvec;

use super::cast_data;
use crate::autograd::{needs_record, record};
use crate::error::Result;
use crate::saved;
use crate::tensor::{DType, Tensor};

/// `t.to(dtype)`: `t` itself when it already has that dtype, as in PyTorch.
pub fn to_dtype(t: &Tensor, dtype: DType) -> Result<Tensor> {
    let from = t.dtype();
    if from == dtype {
        return Ok(t.clone());
    }
    let out = preserving_format(t, dtype);
    if dtype.is_float() && needs_record(&[t]) {
        record("ToCopyBackward0", &[t], &out, saved![], move |c| {
            Ok(smallvec![Some(to_dtype(c.grad()?, from)?)])
        });
    }
    Ok(out)
}

/// `cast_data` with PyTorch's `preserve_format`: a dense tensor keeps its
/// layout (see [`super::layout`]), converted in one pass in memory order
/// instead of gathered element by element.
pub(crate) fn preserving_format(t: &Tensor, dtype: DType) -> Tensor {
    if t.dtype() == dtype {
        return t.clone();
    }
    match super::layout::memory_order(t) {
        Some((flat, shape, strides)) => {
            super::layout::restrided(&cast_data(&flat, dtype), shape, strides)
        }
        None => cast_data(t, dtype),
    }
}

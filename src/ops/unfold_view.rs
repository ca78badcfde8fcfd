//! `Tensor.unfold(dimension, size, step)`: every window of `size` elements,
//! `step` apart, along one dimension, as a strided view (as in PyTorch, whose
//! node is `UnfoldBackward0`), and its adjoint, which adds each window's
//! gradient back where the window was read (windows overlap when
//! `step < size`).

use std::sync::Arc;

use smallvec::smallvec;

use super::strided::{embed_region, Region};
use crate::autograd::{needs_record, record, GradModeGuard};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{contiguous_strides, wrap_dim, Shape, Strides, Tensor, View};

/// The windows of any tensor of a given rank: `dim` is `None` for a 0-d
/// tensor, whose one element is a window of size 0 or 1.
#[derive(Clone, Copy, Debug)]
struct Windows {
    dim: Option<usize>,
    size: usize,
    step: usize,
}

/// `(shape, strides)` of the windows over a tensor laid out as `(shape, strides)`:
/// `dim` counts windows (stride times `step`) and a last dimension walks one.
fn window_layout(shape: &[usize], strides: &[usize], w: Windows) -> (Shape, Strides) {
    let Some(d) = w.dim else {
        return (smallvec![w.size], smallvec![1]);
    };
    let mut out_shape: Shape = shape.iter().copied().collect();
    let mut out_strides: Strides = strides.iter().copied().collect();
    out_shape[d] = (shape[d] - w.size) / w.step + 1;
    // A step past the end leaves one window, whose stride is never used.
    out_strides[d] = strides[d].saturating_mul(w.step);
    out_shape.push(w.size);
    out_strides.push(strides[d]);
    (out_shape, out_strides)
}

fn take_windows(a: &Tensor, w: Windows) -> Tensor {
    let in_shape = a.shape();
    let view = {
        let v = a.view();
        let (shape, strides) = window_layout(&v.shape, &v.strides, w);
        View {
            storage: v.storage.clone(),
            shape,
            strides,
            offset: v.offset,
        }
    };
    crate::ops::inplace::install_view_refresh();
    let out = Tensor::new_view(view, a, "UnfoldBackward0");
    if needs_record(&[a]) {
        record("UnfoldBackward0", &[a], &out, saved![], move |c| {
            Ok(smallvec![Some(unfold_backward(c.grad()?, &in_shape, w)?)])
        });
    }
    out
}

/// Zeros of `in_shape` with each window of `g` added where it was read: the
/// adjoint of `take_windows`.
fn unfold_backward(g: &Tensor, in_shape: &Shape, w: Windows) -> Result<Tensor> {
    let (shape, strides) = window_layout(in_shape, &contiguous_strides(in_shape), w);
    let region = Arc::new(Region {
        shape,
        strides,
        offset: 0,
    });
    let z = {
        let _no_grad = GradModeGuard::new(false);
        embed_region(&g.detach(), in_shape, &region)?
    };
    if needs_record(&[g]) {
        record("UnfoldBackwardBackward0", &[g], &z, saved![], move |c| {
            Ok(smallvec![Some(take_windows(c.grad()?, w))])
        });
    }
    Ok(z)
}

/// `a.unfold(dimension, size, step)`: a view whose `dimension` counts the
/// windows and whose new last dimension of `size` walks one window.
pub(crate) fn unfold_windows(a: &Tensor, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    let shape = a.shape();
    let nd = shape.len();
    // A 0-d tensor has one dimension here (0 or -1), of one element.
    let d = wrap_dim(dimension, nd.max(1))?;
    let n = if nd == 0 { 1 } else { shape[d] };
    if size < 0 {
        return Err(Error::runtime(format!("size is {size} but must be >= 0")));
    }
    if size as u64 > n as u64 {
        return Err(Error::runtime(format!(
            "maximum size for tensor at dimension {d} is {n} but size is {size}"
        )));
    }
    if step <= 0 {
        return Err(Error::runtime(format!("step is {step} but must be > 0")));
    }
    let w = Windows {
        dim: (nd > 0).then_some(d),
        size: size as usize,
        step: step as usize,
    };
    Ok(take_windows(a, w))
}

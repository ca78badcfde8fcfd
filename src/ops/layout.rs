//! Elementwise results that keep their input's memory layout, as PyTorch's
//! do: a dense tensor whose strides are not the row-major ones (a transpose,
//! a permutation) is processed as one flat run of its memory, in memory
//! order, and the result takes the input's strides. The work is then the
//! contiguous loop's, with no gather.

use smallvec::smallvec;

use crate::tensor::{contiguous_strides, Shape, Strides, Tensor, View};

/// `t`'s memory as a flat contiguous tensor, with the shape and strides to
/// give a result computed over it; `None` when `t` is row-major already, has
/// fewer than two elements, or has gaps or overlaps (a slice, an expand).
pub(crate) fn memory_order(t: &Tensor) -> Option<(Tensor, Shape, Strides)> {
    let v = t.view();
    let n: usize = v.shape.iter().product();
    if n < 2 || v.strides == contiguous_strides(&v.shape) {
        return None;
    }
    let span = v
        .shape
        .iter()
        .zip(&v.strides)
        .map(|(&d, &s)| d.saturating_sub(1).saturating_mul(s))
        .fold(1usize, usize::saturating_add);
    if span != n || !super::strided::non_overlapping(&v.shape, &v.strides) {
        return None;
    }
    let flat = View {
        storage: v.storage.clone(),
        shape: Shape::from_slice(&[n]),
        strides: smallvec![1],
        offset: v.offset,
    };
    Some((
        Tensor::from_view(flat, None),
        v.shape.clone(),
        v.strides.clone(),
    ))
}

/// A fresh result computed over [`memory_order`]'s flat run, viewed with
/// the input's shape and strides.
pub(crate) fn restrided(flat: &Tensor, shape: Shape, strides: Strides) -> Tensor {
    let v = flat.view();
    debug_assert!(v.offset == 0 && v.shape.len() == 1);
    Tensor::from_view(
        View {
            storage: v.storage.clone(),
            shape,
            strides,
            offset: 0,
        },
        None,
    )
}

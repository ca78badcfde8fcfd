//! Elementwise results that keep their input's memory layout, as PyTorch's
//! do: a dense tensor whose strides are not the row-major ones (a transpose,
//! a permutation) is processed as one flat run of its memory, in memory
//! order, and the result takes the input's strides. The work is then the
//! contiguous loop's, with no gather. The elementwise kernels choose the
//! layout of a result over several operands themselves
//! (`kernels::elementwise::permuted`); [`laid_out`] wraps what they return.

use smallvec::smallvec;

use crate::tensor::{contiguous_strides, Element, Shape, Strides, Tensor, View};

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

/// A tensor of `shape` over `data`, the memory of a result laid out with
/// `strides` (the elementwise kernels' `*_kept` forms return both).
pub(crate) fn laid_out<T: Element>(data: Vec<T>, shape: Shape, strides: Strides) -> Tensor {
    if crate::tensor::is_contiguous(&shape, &strides) {
        return Tensor::from_vec(data, shape);
    }
    let n = data.len();
    restrided(
        &Tensor::from_vec(data, Shape::from_slice(&[n])),
        shape,
        strides,
    )
}

/// Zeros of `like`'s shape and dtype in `like`'s layout when it is a dense
/// permutation (PyTorch's `zeros_like`), for a gradient that is zero
/// whatever flows in (a rounding or sign function's): it flows into a
/// transposed leaf with no strided copy, and a large one is mapped untouched
/// rather than written (`Tensor::zeros_untouched`), like PyTorch's
/// `ZeroTensor` but an ordinary mutable tensor.
pub(crate) fn zero_grad_like(like: &Tensor) -> Tensor {
    let z = Tensor::zeros_untouched(Shape::from_slice(&[like.numel()]), like.dtype());
    match memory_order(like) {
        Some((_, shape, strides)) => restrided(&z, shape, strides),
        None => Tensor::zeros_untouched(like.shape(), like.dtype()),
    }
}

/// `t`'s values (broadcast to `like`'s shape) laid out as `like` is, for a
/// dense `like` that is not row-major (a transpose): gathered in `like`'s
/// memory order, through the blocked transpose when `t` is laid out
/// otherwise and as one `memcpy` when it agrees. `None` for any other `like`.
pub(crate) fn copied_like(t: &Tensor, like: &Tensor) -> Option<Tensor> {
    let (_, shape, strides) = memory_order(like)?;
    let order = crate::kernels::elementwise::result_order(&shape, &[&strides]);
    let v = t.view();
    let st = crate::tensor::broadcast_strides(&v.shape, &v.strides, &shape);
    let p = View {
        storage: v.storage.clone(),
        shape: order.iter().map(|&d| shape[d]).collect(),
        strides: order.iter().map(|&d| st[d]).collect(),
        offset: v.offset,
    };
    Some(
        crate::dispatch!(v.dtype(), T => laid_out(crate::kernels::copy::gather::<T>(&p), shape, strides)),
    )
}

/// A fresh copy of `t` that keeps a dense `t`'s strides (PyTorch's
/// `preserve_format`: one `memcpy` of its memory), row-major otherwise. Not
/// recorded.
pub(crate) fn clone_kept(t: &Tensor) -> Tensor {
    match memory_order(t) {
        Some((flat, shape, strides)) => restrided(&super::clone_data(&flat), shape, strides),
        None => super::clone_data(t),
    }
}

/// `g` as a leaf's `.grad`, after PyTorch's gradient layout contract: a
/// dense leaf's gradient has the leaf's strides, any other leaf's is
/// row-major. `g` itself when it already complies and nothing else holds it,
/// else a fresh copy (through the blocked transpose when the layouts differ).
pub(crate) fn grad_for_leaf(leaf: &Tensor, g: Tensor) -> Tensor {
    let permuted_leaf = memory_order(leaf).is_some() && leaf.shape() == g.shape();
    let complies = if permuted_leaf {
        g.view().strides == leaf.view().strides
    } else {
        g.is_contiguous()
    };
    if complies {
        // A permuted gradient (the transposed result of an elementwise rule,
        // dense in the leaf's order) is kept when nothing else can reach its
        // buffer, as a row-major one is.
        let owned = g.is_exclusive() || (permuted_leaf && g.is_sole_handle());
        return if owned { g } else { clone_kept(&g) };
    }
    if permuted_leaf {
        if let Some(c) = copied_like(&g, leaf) {
            return c;
        }
    }
    super::clone_data(&g)
}

//! Sorting and selection along one dimension: `sort`, `argsort`, `topk`,
//! `kthvalue`, `median`, `nanmedian`.
//!
//! Each computes, per row of the input with `dim` moved last, the order (or
//! the chosen position) of its elements; the values are gathered from the
//! input, and the gradient goes back to the elements they came from (gather's
//! adjoint, a scatter-add, which is itself differentiable). NaN sorts above
//! every number, as in PyTorch, so it comes last ascending and first
//! descending.

use std::cmp::Ordering;

use smallvec::smallvec;

use super::reduce::rows_of;
use super::{cast_data, gather, movedim, reshape, scatter_add_zeros};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::sort::{is_nan, select_rows, sort_rows, topk_rows};
use crate::saved;
use crate::tensor::{wrap_dim, DType, Element, Shape, Tensor};

/// Total order with NaN above everything (NaNs equal to each other).
#[inline]
fn cmp_nan_last<T: Element>(a: T, b: T) -> Ordering {
    #[allow(clippy::eq_op)]
    match (a != a, b != b) {
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
    }
}

/// Applies `pick` to each row of `a` along `dim`, giving `k` positions per
/// row, and returns them as an int64 tensor laid out like `a` with `dim` of
/// size `k`.
fn pick_indices(
    a: &Tensor,
    d: usize,
    k: usize,
    pick: &dyn Fn(&Tensor, usize, usize) -> Vec<i64>,
) -> Result<Tensor> {
    let shape = a.shape();
    let src = if a.dtype() == DType::Bool {
        cast_data(a, DType::I64)
    } else {
        a.clone()
    };
    let flat = if src.numel() == 0 || k == 0 {
        // Nothing to pick, whatever the other sizes (`[2**62, 0]` has no rows
        // to visit, `[0, 2**62]` no row to scan).
        Vec::new()
    } else {
        let mut mask = vec![false; shape.len()];
        mask[d] = true;
        let (rows_t, rows, cols) = rows_of(&src, &mask)?;
        pick(&rows_t, rows, cols)
    };
    // Rows come out with `dim` last; put it back where it was.
    let mut moved: Shape = shape
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != d)
        .map(|(_, &n)| n)
        .collect();
    moved.push(k);
    let idx = Tensor::from_vec(flat, moved);
    let _g = crate::autograd::GradModeGuard::new(false);
    super::contiguous(&movedim(&idx, -1, d as i64)?)
}

/// The contiguous elements of a `rows_of` block.
fn slice_of<T: Element>(t: &Tensor) -> &[T] {
    let v = t.view();
    let (p, n) = (v.ptr::<T>(), v.numel());
    if n == 0 {
        return &[];
    }
    debug_assert!(v.is_contiguous() && v.dtype() == T::DTYPE);
    // SAFETY: `rows_of` gives a contiguous tensor of `T`, alive as long as `t`.
    unsafe { std::slice::from_raw_parts(p, n) }
}

/// Values of `src` (which is `a`, or `a` seen as 1-D) at `idx` along `d`,
/// shaped `out_shape`, with one node sending the gradient back to `a`.
fn take_along(
    a: &Tensor,
    src: &Tensor,
    d: usize,
    idx: &Tensor,
    out_shape: &[usize],
    name: &'static str,
) -> Result<Tensor> {
    let values = {
        let _g = crate::autograd::GradModeGuard::new(false);
        reshape(&gather(&src.detach(), d as i64, idx)?, out_shape)?
    };
    if needs_record(&[a]) {
        let (src_shape, a_shape, idx_shape) = (src.shape(), a.shape(), idx.shape());
        record(name, &[a], &values, saved![idx], move |c| {
            let g = reshape(c.grad()?, &idx_shape)?;
            let r = scatter_add_zeros(&src_shape, d as i64, c.saved(0)?, &g)?;
            Ok(smallvec![Some(reshape(&r, &a_shape)?)])
        });
    }
    Ok(values)
}

/// `idx` viewed with `like`'s number of dimensions (a 0-d input's index is 1-D inside).
fn reshape_like(idx: &Tensor, like: &Tensor) -> Result<Tensor> {
    let _g = crate::autograd::GradModeGuard::new(false);
    if idx.ndim() == like.ndim() {
        Ok(idx.clone())
    } else {
        reshape(idx, &[idx.numel()])
    }
}

fn dim_of(a: &Tensor, dim: i64) -> Result<usize> {
    wrap_dim(dim, a.ndim().max(1))
}

/// A 0-d input is treated as one element along its only "dimension".
fn as_1d(a: &Tensor) -> Result<(Tensor, bool)> {
    let _g = crate::autograd::GradModeGuard::new(false);
    if a.ndim() == 0 {
        Ok((reshape(&a.detach(), &[1])?, true))
    } else {
        Ok((a.detach(), false))
    }
}

fn back_to_0d(t: Tensor, was_0d: bool) -> Result<Tensor> {
    let _g = crate::autograd::GradModeGuard::new(false);
    if was_0d {
        reshape(&t, &[])
    } else {
        Ok(t)
    }
}

/// `sort(a, dim, descending)`: `(values, indices)`; stable.
pub fn sort(a: &Tensor, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
    let d = dim_of(a, dim)?;
    let (x, was_0d) = as_1d(a)?;
    let n = x.shape()[d];
    let idx = pick_indices(
        &x,
        d,
        n,
        &|t, rows, cols| crate::dispatch!(t.dtype(), T => sort_rows::<T>(slice_of::<T>(t), rows, cols, descending)),
    )?;
    let values = take_along(a, &x, d, &idx, &a.shape(), "SortBackward0")?;
    Ok((values, back_to_0d(idx, was_0d)?))
}

/// `argsort(a, dim, descending)`: the indices `sort` would return.
pub fn argsort(a: &Tensor, dim: i64, descending: bool) -> Result<Tensor> {
    let d = dim_of(a, dim)?;
    let (x, was_0d) = as_1d(a)?;
    let n = x.shape()[d];
    let idx = pick_indices(
        &x,
        d,
        n,
        &|t, rows, cols| crate::dispatch!(t.dtype(), T => sort_rows::<T>(slice_of::<T>(t), rows, cols, descending)),
    )?;
    back_to_0d(idx, was_0d)
}

/// `topk(a, k, dim, largest, sorted)`: the `k` largest (or smallest) elements
/// of each row, in order.
pub fn topk(a: &Tensor, k: i64, dim: i64, largest: bool) -> Result<(Tensor, Tensor)> {
    let d = dim_of(a, dim)?;
    let (x, was_0d) = as_1d(a)?;
    let n = x.shape()[d];
    if k < 0 || k as usize > n {
        return Err(Error::runtime("selected index k out of range"));
    }
    let k = k as usize;
    let idx = pick_indices(&x, d, k, &|t, rows, cols| {
        // NaN counts as the largest, so it leads a `largest` selection.
        crate::dispatch!(t.dtype(), T => topk_rows::<T>(slice_of::<T>(t), rows, cols, k, largest))
    })?;
    let idx = back_to_0d(idx, was_0d)?;
    let values = take_along(
        a,
        &x,
        d,
        &reshape_like(&idx, &x)?,
        &idx.shape(),
        "TopkBackward0",
    )?;
    Ok((values, idx))
}

/// The `(values, indices)` of one chosen position per row, along `d`.
fn select_one(
    a: &Tensor,
    dim: i64,
    keepdim: bool,
    name: &'static str,
    op: &str,
    choose: &dyn Fn(&Tensor, usize, usize) -> Vec<i64>,
) -> Result<(Tensor, Tensor)> {
    let d = dim_of(a, dim)?;
    let (x, was_0d) = as_1d(a)?;
    if x.shape()[d] == 0 {
        return Err(Error::index(format!(
            "{op}(): Expected reduction dim {d} to have non-zero size."
        )));
    }
    let idx = pick_indices(&x, d, 1, choose)?;
    let out_shape: Shape = if was_0d {
        Shape::new()
    } else if keepdim {
        idx.shape()
    } else {
        let mut s = idx.shape();
        s.remove(d);
        s
    };
    let values = take_along(a, &x, d, &idx, &out_shape, name)?;
    let _g = crate::autograd::GradModeGuard::new(false);
    Ok((values, reshape(&idx, &out_shape)?))
}

/// `kthvalue(a, k, dim, keepdim)`: the `k`-th smallest element (1-based).
pub fn kthvalue(a: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = dim_of(a, dim)?;
    let n = if a.ndim() == 0 { 1 } else { a.shape()[d] };
    if k < 1 || k as usize > n {
        return Err(Error::index(format!(
            "kthvalue(): selected number k out of range for dimension {d}"
        )));
    }
    let pos = (k - 1) as usize;
    select_one(
        a,
        dim,
        keepdim,
        "KthvalueBackward0",
        "kthvalue",
        &|t, rows, cols| crate::dispatch!(t.dtype(), T => select_rows::<T>(slice_of::<T>(t), rows, cols, |_| Some(pos))),
    )
}

/// The rank (in a stable ascending sort) of the lower median of `row`; with
/// `ignore_nan` NaNs are skipped (`nanmedian`), otherwise a NaN in the row
/// is the answer (`None`: the first NaN).
fn median_rank<T: Element>(row: &[T], ignore_nan: bool) -> Option<usize> {
    let nans = row.iter().filter(|&&v| is_nan(v)).count();
    if nans > 0 && !ignore_nan {
        return None;
    }
    // NaNs sort last, so the valid elements hold the first ranks.
    let valid = row.len() - nans;
    Some(valid.saturating_sub(1) / 2)
}

/// `median(a, dim, keepdim)` (or `nanmedian`): the lower median of each row.
pub fn median_dim(
    a: &Tensor,
    dim: i64,
    keepdim: bool,
    ignore_nan: bool,
) -> Result<(Tensor, Tensor)> {
    let (name, op) = if ignore_nan {
        ("NanmedianBackward1", "nanmedian")
    } else {
        ("MedianBackward1", "median")
    };
    select_one(
        a,
        dim,
        keepdim,
        name,
        op,
        &|t, rows, cols| crate::dispatch!(t.dtype(), T => select_rows::<T>(slice_of::<T>(t), rows, cols, |row: &[T]| median_rank(row, ignore_nan))),
    )
}

/// `median(a)` over every element: a 0-d tensor. Of no elements it is NaN
/// (the lowest integer for an integer tensor), as in PyTorch. The gradient is
/// shared evenly among the elements equal to the result, or among the NaNs
/// when the result is NaN (PyTorch's `evenly_distribute_backward`).
pub fn median_all(a: &Tensor, ignore_nan: bool) -> Result<Tensor> {
    let name = if ignore_nan {
        "NanmedianBackward0"
    } else {
        "MedianBackward0"
    };
    let value = if a.numel() == 0 {
        if a.dtype().is_float() {
            Tensor::scalar_of(f64::NAN, a.dtype())
        } else {
            Tensor::scalar_of(i64::MIN as f64, a.dtype())
        }
    } else {
        let _g = crate::autograd::GradModeGuard::new(false);
        let flat = reshape(&a.detach(), &[a.numel()])?;
        let idx = pick_indices(
            &flat,
            0,
            1,
            &|t, rows, cols| crate::dispatch!(t.dtype(), T => select_rows::<T>(slice_of::<T>(t), rows, cols, |row: &[T]| median_rank(row, ignore_nan))),
        )?;
        reshape(&gather(&flat, 0, &idx)?, &[])?
    };
    if needs_record(&[a]) {
        record(name, &[a], &value, saved![a, &value], move |c| {
            Ok(smallvec![Some(evenly_distribute(
                c.grad()?,
                c.saved(0)?,
                c.saved(1)?
            )?)])
        });
    }
    Ok(value)
}

/// `g` (a 0-d gradient) shared evenly among the elements of `x` equal to the
/// 0-d result `y`, or among its NaNs when `y` is NaN.
pub(crate) fn evenly_distribute(g: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let hit = if y.dtype().is_float() && y.item()?.is_nan() {
        super::isnan(x)?
    } else {
        super::eq(x, y)?
    };
    let hit = cast_data(&hit, g.dtype());
    let count = super::sum(&hit, None, false)?;
    super::mul(&super::div(g, &count)?, &hit)
}

/// The position in `row` that `mode` reports, given the row's stable
/// ascending `order`: the most frequent value, the smallest of those equally
/// frequent, at its last occurrence. PyTorch's CPU kernel sorts (value,
/// index) pairs and keeps the last pair of the first longest run; its
/// `std::sort` is an insertion sort (stable) for rows of up to 16 elements,
/// so there the index is the value's last occurrence, which a stable sort
/// gives for every length. NaNs count as one value above every number.
fn mode_pos<T: Element>(row: &[T], order: &[i64]) -> usize {
    let at = |k: usize| row[order[k] as usize];
    let (mut best, mut best_count, mut run) = (order[0] as usize, 0usize, 0usize);
    for k in 0..order.len() {
        run += 1;
        let run_ends = k + 1 == order.len() || cmp_nan_last(at(k), at(k + 1)) != Ordering::Equal;
        if run_ends {
            if run > best_count {
                best = order[k] as usize;
                best_count = run;
            }
            run = 0;
        }
    }
    best
}

/// `mode(a, dim, keepdim)`: `(values, indices)` of the most frequent value of
/// each row along `dim` (see [`mode_pos`]); the gradient goes to the reported
/// position (`ModeBackward0`).
pub fn mode(a: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    select_one(
        a,
        dim,
        keepdim,
        "ModeBackward0",
        "mode",
        &|t, rows, cols| {
            crate::dispatch!(t.dtype(), T => {
                let data = slice_of::<T>(t);
                let order = sort_rows::<T>(data, rows, cols, false);
                (0..rows)
                    .map(|r| mode_pos(&data[r * cols..(r + 1) * cols], &order[r * cols..(r + 1) * cols]) as i64)
                    .collect::<Vec<i64>>()
            })
        },
    )
}

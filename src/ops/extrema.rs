//! Maxima and minima: `amax`/`amin` (gradient shared evenly among ties),
//! `max`/`min` with a dimension (values and indices; the gradient goes to
//! the chosen element), `argmax`/`argmin`.

use smallvec::smallvec;

use super::reduce::{reduce_mask, reduce_shape, rows_of};
use super::{cast_data, div, gather, mul, reshape, squeeze, sum};
use crate::autograd::{needs_record, record, SavedTensor};
use crate::error::{Error, Result};
use crate::kernels::index::map_rows;
use crate::saved;
use crate::tensor::{wrap_dim, DType, Element, Tensor};

/// `None` or empty `dims` means every dimension, as `amax(dim=())` does in
/// PyTorch (the convention of every reduction, see `reduce_mask`).
fn dims_or_all(dims: Option<&[i64]>) -> Option<&[i64]> {
    dims.filter(|d| !d.is_empty())
}

fn check_nonempty(shape: &[usize], mask: &[bool], op: &str) -> Result<()> {
    if shape.is_empty() {
        return Ok(());
    }
    for (d, (&n, &m)) in shape.iter().zip(mask).enumerate() {
        if m && n == 0 {
            return Err(Error::index(format!(
                "{op}(): Expected reduction dim {d} to have non-zero size."
            )));
        }
    }
    if mask.iter().all(|&m| m) && shape.contains(&0) {
        return Err(Error::runtime(format!(
            "{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        )));
    }
    Ok(())
}

/// `[outer, n, inner]` when `mask` reduces one dimension that is not the
/// innermost of a contiguous, non-empty `a`: then rows are streamed
/// (`extreme_mid`) instead of transposing the reduced dimension last.
pub(super) fn leading_one(a: &Tensor, mask: &[bool]) -> Option<(usize, usize, usize)> {
    let shape = a.shape();
    if mask.iter().filter(|&&m| m).count() != 1 || a.numel() == 0 || !a.is_contiguous() {
        return None;
    }
    let d = mask.iter().position(|&m| m)?;
    let inner: usize = shape[d + 1..].iter().product();
    (inner > 1).then(|| (shape[..d].iter().product(), shape[d], inner))
}

/// `amax`/`amin`, or with `whole` PyTorch's `max()`/`min()` of every element,
/// whose gradient rule differs at a NaN result: `max()` shares it among the
/// NaN elements (its `evenly_distribute_backward`), `amax` makes every
/// element's gradient NaN (no element equals a NaN result).
fn amax_impl(
    a: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    is_max: bool,
    whole: bool,
) -> Result<Tensor> {
    let op = if is_max { "amax" } else { "amin" };
    if whole && a.numel() == 0 {
        return Err(Error::runtime(format!(
            "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
            if is_max { "max" } else { "min" }
        )));
    }
    let shape = a.shape();
    let mask = reduce_mask(shape.len(), dims)?;
    check_nonempty(&shape, &mask, op)?;
    let out_shape = reduce_shape(&shape, &mask, keepdim);
    let out = if let Some((outer, n, inner)) = leading_one(a, &mask) {
        let v = a.view();
        crate::dispatch!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            Tensor::from_vec(crate::kernels::reduce::extreme_mid_values(data, outer, n, inner, is_max), out_shape)
        })
    } else {
        let (rows_t, rows, cols) = rows_of(a, &mask)?;
        let v = rows_t.view();
        crate::dispatch!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            let r: Vec<T> = map_rows(data, rows, cols, |row| {
                if row.is_empty() {
                    T::zero()
                } else {
                    crate::kernels::reduce::extreme_slice(row, is_max)
                }
            });
            Tensor::from_vec(r, out_shape)
        })
    };
    if needs_record(&[a]) {
        let keep_shape = reduce_shape(&shape, &mask, true);
        // `amax()` over every element is still PyTorch's `AmaxBackward0`.
        let name = match (is_max, whole) {
            (true, false) => "AmaxBackward0",
            (false, false) => "AminBackward0",
            (true, true) => "MaxBackward1",
            (false, true) => "MinBackward1",
        };
        let dims_v: Option<Vec<i64>> = dims.map(|d| d.to_vec());
        record(
            name,
            &[a],
            &out,
            saved![a, Some(SavedTensor::output(&out, 0))],
            move |c| {
                let x = c.saved(0)?;
                let y = reshape(c.saved(1)?, &keep_shape)?;
                let g = reshape(c.grad()?, &keep_shape)?;
                // Ties share the gradient evenly; the mask is a constant.
                let mut hit = super::eq(x, &y)?;
                if whole && y.dtype().is_float() && y.item()?.is_nan() {
                    hit = super::isnan(x)?;
                }
                let hit = cast_data(&hit, g.dtype());
                let count = sum(&hit, dims_v.as_deref(), true)?;
                Ok(smallvec![Some(mul(&div(&g, &count)?, &hit)?)])
            },
        );
    }
    Ok(out)
}

pub fn amax(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    amax_impl(a, dims_or_all(dims), keepdim, true, false)
}

pub(crate) fn amin(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    amax_impl(a, dims_or_all(dims), keepdim, false, false)
}

/// `max()` over every element.
pub(crate) fn max_all(a: &Tensor) -> Result<Tensor> {
    amax_impl(a, None, false, true, true)
}

pub(crate) fn min_all(a: &Tensor) -> Result<Tensor> {
    amax_impl(a, None, false, false, true)
}

/// Position of the first maximum (or minimum) of each row; NaN counts as
/// the extreme, as in PyTorch. The extreme comes from the vectorised
/// `extreme_slice` (NaN if the row holds one), then its first position is
/// looked up: two passes over a row in cache beat one branchy pass that
/// waits on every compare.
fn arg_rows<T: Element>(data: &[T], rows: usize, cols: usize, is_max: bool) -> Vec<i64> {
    map_rows(data, rows, cols, |row| {
        let best = crate::kernels::reduce::extreme_slice(row, is_max);
        #[allow(clippy::eq_op)]
        let nan = best != best;
        #[allow(clippy::eq_op)]
        let at = if nan {
            row.iter().position(|&v| v != v)
        } else {
            row.iter().position(|&v| v == best)
        };
        at.unwrap_or(0) as i64
    })
}

fn arg_impl(a: &Tensor, dim: Option<i64>, keepdim: bool, is_max: bool) -> Result<Tensor> {
    let op = if is_max { "argmax" } else { "argmin" };
    if a.dtype() == DType::Bool {
        return Err(Error::runtime(format!(
            "\"{op}_cpu\" not implemented for 'Bool'"
        )));
    }
    let shape = a.shape();
    let (src, dims): (Tensor, Vec<i64>) = match dim {
        Some(d) => (a.clone(), vec![d]),
        None => {
            if a.numel() == 0 {
                return Err(Error::runtime(format!(
                    "{op}(): Expected reduction dim to be specified for input.numel() == 0."
                )));
            }
            let flat = {
                let _g = crate::autograd::GradModeGuard::new(false);
                reshape(&a.detach(), &[a.numel()])?
            };
            (flat, vec![0])
        }
    };
    let sshape = src.shape();
    let mask = reduce_mask(sshape.len(), Some(&dims))?;
    check_nonempty(&sshape, &mask, op)?;
    let idx = if let Some((outer, n, inner)) = leading_one(&src, &mask) {
        let v = src.view();
        crate::dispatch!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            crate::kernels::reduce::extreme_mid(data, outer, n, inner, is_max).1
        })
    } else {
        let (rows_t, rows, cols) = rows_of(&src, &mask)?;
        let v = rows_t.view();
        crate::dispatch!(v.dtype(), T => arg_rows::<T>(v.as_slice::<T>().unwrap_or(&[]), rows, cols, is_max))
    };
    let out_shape = match dim {
        Some(_) => reduce_shape(&sshape, &mask, keepdim),
        None if keepdim => smallvec::SmallVec::from_elem(1, shape.len()),
        None => smallvec![],
    };
    Ok(Tensor::from_vec(idx, out_shape))
}

pub(crate) fn argmax(a: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    arg_impl(a, dim, keepdim, true)
}

pub(crate) fn argmin(a: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    arg_impl(a, dim, keepdim, false)
}

/// `max(dim, keepdim)`: `(values, indices)`; the gradient flows to the
/// element each index points at.
pub(crate) fn max_dim(a: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    extreme_dim(a, dim, keepdim, true)
}

pub(crate) fn min_dim(a: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    extreme_dim(a, dim, keepdim, false)
}

fn extreme_dim(a: &Tensor, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
    let op = if is_max { "max" } else { "min" };
    let nd = a.ndim();
    let d = wrap_dim(dim, nd)?;
    if nd > 0 && a.shape()[d] == 0 {
        return Err(Error::index(format!(
            "{op}(): Expected reduction dim {d} to have non-zero size."
        )));
    }
    if nd == 0 {
        return Ok((super::clone(a)?, Tensor::scalar(0i64)));
    }
    let idx = if a.dtype() == DType::Bool {
        arg_impl(&cast_data(a, DType::I64), Some(d as i64), true, is_max)?
    } else {
        arg_impl(a, Some(d as i64), true, is_max)?
    };
    let (values, out_idx) = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let values = gather(a, d as i64, &idx)?;
        if keepdim {
            (values, idx.clone())
        } else {
            (
                squeeze(&values, Some(d as i64))?,
                squeeze(&idx, Some(d as i64))?,
            )
        }
    };
    if needs_record(&[a]) {
        let name = if is_max {
            "MaxBackward0"
        } else {
            "MinBackward0"
        };
        let (in_shape, keep_shape) = (a.shape(), idx.shape());
        // The gradient goes to the chosen element of each row (gather's adjoint).
        record(name, &[a], &values, saved![&idx], move |c| {
            let g = reshape(c.grad()?, &keep_shape)?;
            Ok(smallvec![Some(super::scatter_add_zeros(
                &in_shape,
                d as i64,
                c.saved(0)?,
                &g
            )?)])
        });
    }
    Ok((values, out_idx))
}

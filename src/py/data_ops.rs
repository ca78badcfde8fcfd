//! Bindings of the kernels that the Python layer wraps: `addmm` with its
//! scales, and the data-movement ones (`roll`, `tril`/`triu`, `index_add`,
//! `index_copy`, `index_put`, `diag_embed`, the scans `cumprod`,
//! `cummax`/`cummin` and `nansum`). Python checks the arguments with
//! PyTorch's messages and calls these for the work.

use pyo3::prelude::*;

use super::capture::{run_inplace, run_op, run_tuple};
use super::convert::{dims_arg, scalar_from_any};
use super::functions::t_of;
use super::tensor::PyTensor;
use crate::ops;

/// `roll` along `dims` (as many as `shifts`, already checked), one node.
#[pyfunction]
fn _roll(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    shifts: Vec<i64>,
    dims: Vec<i64>,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    run_op(py, x.numel(), "roll", &[x], &[], move |t, _| {
        ops::roll(t[0], &shifts, &dims)
    })
}

/// `tril(input, diagonal)`, or `triu` with `lower=False`.
#[pyfunction]
fn _tril(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    diagonal: i64,
    lower: bool,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    run_op(
        py,
        x.numel(),
        if lower { "tril" } else { "triu" },
        &[x],
        &[],
        move |t, _| ops::tril(t[0], diagonal, lower),
    )
}

/// `index_add(input, dim, index, source)` with `source` already scaled.
#[pyfunction]
fn _index_add(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    dim: i64,
    index: &Bound<'_, PyTensor>,
    source: &Bound<'_, PyTensor>,
) -> PyResult<Py<PyAny>> {
    let (x, i, s) = (t_of(input), t_of(index), t_of(source));
    run_op(
        py,
        x.numel().max(s.numel()),
        "index_add",
        &[x, i, s],
        &[],
        move |t, _| ops::index_add(t[0], dim, t[1], t[2]),
    )
}

/// `index_copy(input, dim, index, source)`.
#[pyfunction]
fn _index_copy(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    dim: i64,
    index: &Bound<'_, PyTensor>,
    source: &Bound<'_, PyTensor>,
) -> PyResult<Py<PyAny>> {
    let (x, i, s) = (t_of(input), t_of(index), t_of(source));
    run_op(
        py,
        x.numel().max(s.numel()),
        "index_copy",
        &[x, i, s],
        &[],
        move |t, _| ops::index_copy(t[0], dim, t[1], t[2]),
    )
}

/// `addmm(input, mat1, mat2, beta=beta, alpha=alpha)` (arguments checked).
#[pyfunction]
fn _addmm(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    mat1: &Bound<'_, PyTensor>,
    mat2: &Bound<'_, PyTensor>,
    beta: &Bound<'_, PyAny>,
    alpha: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let (c, a, b) = (t_of(input), t_of(mat1), t_of(mat2));
    let (beta, alpha) = (scalar_from_any(beta)?, scalar_from_any(alpha)?);
    let work = a
        .numel()
        .saturating_mul(b.shape().last().copied().unwrap_or(1));
    run_op(py, work, "addmm", &[c, a, b], &[], move |t, _| {
        ops::addmm_scaled(t[0], t[1], t[2], beta, alpha)
    })
}

/// The key of `index_put`: one index tensor per leading dimension.
fn index_key(ts: &[&crate::tensor::Tensor]) -> Vec<ops::IndexItem> {
    ts.iter()
        .map(|&t| ops::IndexItem::Tensor(t.clone()))
        .collect()
}

/// `take(input, index)` (the index's dtype checked): one pass over the
/// index for its range and the picks.
#[pyfunction]
fn _take(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    index: &Bound<'_, PyTensor>,
) -> PyResult<Py<PyAny>> {
    let (x, i) = (t_of(input), t_of(index));
    run_op(py, i.numel(), "take", &[x, i], &[], move |t, _| {
        ops::take(t[0], t[1])
    })
}

/// `index_put(input, indices, values, accumulate)` (arguments checked).
#[pyfunction]
fn _index_put(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    indices: Vec<Bound<'_, PyTensor>>,
    values: &Bound<'_, PyTensor>,
    accumulate: bool,
) -> PyResult<Py<PyAny>> {
    let (x, v) = (t_of(input), t_of(values));
    let mut ins = vec![x, v];
    ins.extend(indices.iter().map(t_of));
    run_op(
        py,
        x.numel().max(v.numel()),
        "index_put",
        &ins,
        &[],
        move |t, _| ops::index_put(t[0], &index_key(&t[2..]), t[1], accumulate),
    )
}

/// `input.index_put_(indices, values, accumulate)` in `input`'s memory.
#[pyfunction]
fn _index_put_(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    indices: Vec<Bound<'_, PyTensor>>,
    values: &Bound<'_, PyTensor>,
    accumulate: bool,
) -> PyResult<()> {
    let _op = crate::tensor::write_op("index_put_");
    let (x, v) = (t_of(input), t_of(values));
    let mut ins = vec![x, v];
    ins.extend(indices.iter().map(t_of));
    run_inplace(py, v.numel(), "index_put_", &ins, &[], move |t, _| {
        ops::index_put_(t[0], &index_key(&t[2..]), t[1], accumulate)
    })
}

/// `input.index_add_(dim, index, source)` with `source` already scaled
/// (`index_copy_` without `accumulate`), in `input`'s memory.
#[pyfunction]
fn _index_rows_(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    dim: i64,
    index: &Bound<'_, PyTensor>,
    source: &Bound<'_, PyTensor>,
    accumulate: bool,
) -> PyResult<()> {
    let name = if accumulate {
        "index_add_"
    } else {
        "index_copy_"
    };
    let _op = crate::tensor::write_op(name);
    let (x, i, s) = (t_of(input), t_of(index), t_of(source));
    run_inplace(py, s.numel(), name, &[x, i, s], &[], move |t, _| {
        ops::index_rows_(t[0], dim, t[1], t[2], accumulate)
    })
}

/// `input.scatter_(dim, index, src)` in `input`'s memory, `src` a tensor or
/// (with `reduce="none"`) a number; `scatter_add_` with `reduce="sum"`, and
/// `scatter_reduce_` with `"prod"`, `"amax"` or `"amin"` (`include_self`).
#[pyfunction]
fn _scatter_(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    dim: i64,
    index: &Bound<'_, PyTensor>,
    src: &Bound<'_, PyAny>,
    reduce: &str,
) -> PyResult<()> {
    use crate::kernels::index::Combine;
    let (name, combine) = match reduce {
        "none" => ("scatter_", Combine::Write),
        "sum" => ("scatter_add_", Combine::Add),
        "prod" => ("scatter_reduce_", Combine::Mul),
        "amax" => ("scatter_reduce_", Combine::Max),
        "amin" => ("scatter_reduce_", Combine::Min),
        _ => {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
            )))
        }
    };
    let _op = crate::tensor::write_op(name);
    let (x, i) = (t_of(input), t_of(index));
    match crate::py::convert::operand(src) {
        Some(crate::py::convert::Operand::Tensor(s)) => {
            run_inplace(py, i.numel(), name, &[x, i, &s], &[], move |t, _| {
                ops::scatter_(t[0], dim, t[1], t[2], combine)
            })
        }
        Some(crate::py::convert::Operand::Scalar(v)) if combine == Combine::Write => {
            let si = crate::py::capture::scalar_in(src, v);
            run_inplace(py, i.numel(), name, &[x, i], &[si], move |t, s| {
                ops::scatter_value_(t[0], dim, t[1], s[0])
            })
        }
        _ => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{name}(): src must be a Tensor{}",
            if combine == Combine::Write {
                " or a number"
            } else {
                ""
            }
        ))),
    }
}

/// `scatter_reduce(input, dim, index, src, reduce, include_self)`'s value
/// for `prod`, `amax` and `amin`, unrecorded (arguments checked).
#[pyfunction]
fn _scatter_reduce_value(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    dim: i64,
    index: &Bound<'_, PyTensor>,
    src: &Bound<'_, PyTensor>,
    reduce: String,
    include_self: bool,
) -> PyResult<Py<PyAny>> {
    let (x, i, s) = (t_of(input), t_of(index), t_of(src));
    run_op(
        py,
        x.numel().max(i.numel()),
        "scatter_reduce",
        &[x, i, s],
        &[],
        move |t, _| ops::scatter_reduce_value(t[0], dim, t[1], t[2], &reduce, include_self),
    )
}

/// `diag_embed(input, offset, dim1, dim2)`.
#[pyfunction]
fn _diag_embed(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let n = x.shape().last().copied().unwrap_or(1) + offset.unsigned_abs() as usize;
    run_op(
        py,
        x.numel().saturating_mul(n),
        "diag_embed",
        &[x],
        &[],
        move |t, _| ops::diag_embed_op(t[0], offset, dim1, dim2),
    )
}

/// `cumprod(input, dim)` with `input` already in the result dtype.
#[pyfunction]
fn _cumprod(py: Python<'_>, input: &Bound<'_, PyTensor>, dim: i64) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    run_op(py, x.numel(), "cumprod", &[x], &[], move |t, _| {
        ops::cumprod(t[0], dim)
    })
}

/// `cummax(input, dim)` (or `cummin` with `is_max=False`) as `(values, indices)`.
#[pyfunction]
fn _cum_extreme(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    dim: i64,
    is_max: bool,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let name = if is_max { "cummax" } else { "cummin" };
    run_tuple(py, x.numel(), name, &[x], &[], move |t, _| {
        let (v, i) = ops::cum_extreme(t[0], dim, is_max)?;
        Ok(vec![v, i])
    })
}

/// `nansum(input, dim, keepdim)` with `input` already in the result dtype.
#[pyfunction]
#[pyo3(signature = (input, dim=None, keepdim=false))]
fn _nansum(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let dims = dims_arg(dim)?;
    run_op(py, x.numel(), "nansum", &[x], &[], move |t, _| {
        ops::nansum(t[0], dims.as_deref(), keepdim)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_roll, m)?)?;
    m.add_function(wrap_pyfunction!(_tril, m)?)?;
    m.add_function(wrap_pyfunction!(_index_add, m)?)?;
    m.add_function(wrap_pyfunction!(_addmm, m)?)?;
    m.add_function(wrap_pyfunction!(_index_put, m)?)?;
    m.add_function(wrap_pyfunction!(_take, m)?)?;
    m.add_function(wrap_pyfunction!(_index_put_, m)?)?;
    m.add_function(wrap_pyfunction!(_index_copy, m)?)?;
    m.add_function(wrap_pyfunction!(_index_rows_, m)?)?;
    m.add_function(wrap_pyfunction!(_scatter_, m)?)?;
    m.add_function(wrap_pyfunction!(_scatter_reduce_value, m)?)?;
    m.add_function(wrap_pyfunction!(_diag_embed, m)?)?;
    m.add_function(wrap_pyfunction!(_cumprod, m)?)?;
    m.add_function(wrap_pyfunction!(_cum_extreme, m)?)?;
    m.add_function(wrap_pyfunction!(_nansum, m)?)?;
    Ok(())
}

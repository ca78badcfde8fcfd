//! Bindings of the data-movement kernels that the Python layer composes
//! (`roll`, `tril`/`triu`, `index_add`, `index_copy`, `diag_embed`, the scans `cumprod`,
//! `cummax`/`cummin` and `nansum`): it checks the arguments with PyTorch's messages and calls
//! these for the work.

use pyo3::prelude::*;

use super::capture::{run_op, run_tuple};
use super::convert::dims_arg;
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
    m.add_function(wrap_pyfunction!(_index_copy, m)?)?;
    m.add_function(wrap_pyfunction!(_diag_embed, m)?)?;
    m.add_function(wrap_pyfunction!(_cumprod, m)?)?;
    m.add_function(wrap_pyfunction!(_cum_extreme, m)?)?;
    m.add_function(wrap_pyfunction!(_nansum, m)?)?;
    Ok(())
}

//! Bindings of `grid_sample`'s native forward and first-order backward
//! (`ops::grid_sample`). They make no autograd node;
//! `ferrograd.nn._functional.grid_sample` makes one.

use pyo3::prelude::*;

use super::capture::run;
use super::functions::t_of;
use super::tensor::{wrap_optional_tuple, PyTensor};
use crate::ops;

/// `input` `(N, C, *sizes)` read at the points of `grid` `(N, *out, d)`.
#[pyfunction]
fn _grid_sample_forward(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    grid: &Bound<'_, PyTensor>,
    mode: String,
    padding_mode: String,
    align_corners: bool,
) -> PyResult<Py<PyAny>> {
    let ins = [input, grid].map(t_of);
    let work = ins[1]
        .numel()
        .saturating_mul(ins[0].shape().get(1).copied().unwrap_or(1));
    let out = run(py, work, "grid_sample_forward", &ins, &[], move |t, _| {
        ops::grid_sample_forward(t[0], t[1], &mode, &padding_mode, align_corners)
    })?;
    super::tensor::wrap(py, out)
}

/// `(d_input, d_grid)` of `sum(g * grid_sample(input, grid))`, each `None`
/// unless `needs` asks for it.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _grid_sample_backward(
    py: Python<'_>,
    g: &Bound<'_, PyTensor>,
    input: &Bound<'_, PyTensor>,
    grid: &Bound<'_, PyTensor>,
    mode: String,
    padding_mode: String,
    align_corners: bool,
    needs: (bool, bool),
) -> PyResult<Py<PyAny>> {
    let ins = [g, input, grid].map(t_of);
    let work = ins[0].numel().saturating_mul(4);
    let out = run(py, work, "grid_sample_backward", &ins, &[], move |t, _| {
        ops::grid_sample_backward(
            t[0],
            t[1],
            t[2],
            &mode,
            &padding_mode,
            align_corners,
            needs.0,
            needs.1,
        )
    })?;
    wrap_optional_tuple(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_grid_sample_forward, m)?)?;
    m.add_function(wrap_pyfunction!(_grid_sample_backward, m)?)?;
    Ok(())
}

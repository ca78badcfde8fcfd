//! Bindings of the native linear-algebra kernels: `geqrf` and the
//! unrecorded `householder_product` (`ops/householder.rs`), and the forward
//! of `lstsq` (`ops/lstsq.rs`). The Python layer (`linalg/`) checks the
//! arguments and records the gradients.

use pyo3::prelude::*;

use super::capture::{run, run_op};
use super::tensor::{tensor_tuple, PyTensor};
use crate::ops;

#[pyfunction]
fn _geqrf(py: Python<'_>, input: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    let a = &input.get().t;
    let (h, tau) = run(py, a.numel(), "geqrf", &[a], &[], move |t, _| {
        ops::geqrf(t[0])
    })?;
    tensor_tuple(py, vec![h, tau])
}

#[pyfunction]
fn _householder_product(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    tau: &Bound<'_, PyTensor>,
) -> PyResult<Py<PyAny>> {
    let (a, t) = (&input.get().t, &tau.get().t);
    run_op(
        py,
        a.numel(),
        "householder_product",
        &[a, t],
        &[],
        move |t, _| ops::householder_product(t[0], t[1]),
    )
}

#[pyfunction]
fn _lstsq(
    py: Python<'_>,
    a: &Bound<'_, PyTensor>,
    b: &Bound<'_, PyTensor>,
    rcond: f64,
) -> PyResult<Py<PyAny>> {
    let (a, b) = (&a.get().t, &b.get().t);
    let outs = run(py, a.numel(), "lstsq", &[a, b], &[], move |t, _| {
        ops::lstsq(t[0], t[1], rcond).map(|(x, rank, sv)| vec![x, rank, sv])
    })?;
    tensor_tuple(py, outs)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_geqrf, m)?)?;
    m.add_function(wrap_pyfunction!(_householder_product, m)?)?;
    m.add_function(wrap_pyfunction!(_lstsq, m)?)?;
    Ok(())
}

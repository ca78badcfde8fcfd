//! Random tensors (`rand`, `randn`, `randint`, `manual_seed`) and the
//! helpers every creation function shares. The other module functions live
//! by topic: `creation.rs`, `functional.rs`, `nn.rs`, `autograd.rs`, and the
//! op table (`ops_table.rs`).

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::convert::{parse_size, seq_of_ints, to_shape};
use super::dtype::opt_dtype;
use super::errors::{guard, guard_nogil};
use super::tensor::{wrap, PyTensor};
use crate::ops;
use crate::random;
use crate::tensor::{checked_storage_numel, numel, DType, Shape, Tensor};

pub(super) fn t_of<'a>(obj: &'a Bound<'_, PyTensor>) -> &'a Tensor {
    &obj.get().t
}

/// Wraps a new tensor, a leaf that requires grad if asked.
pub(super) fn finish(py: Python<'_>, t: Tensor, requires_grad: bool) -> PyResult<Py<PyAny>> {
    if requires_grad {
        t.set_requires_grad(true)?;
    }
    wrap(py, t)
}

/// The shape of a tensor about to be allocated, checked before any memory is
/// requested: no negative size, and a byte size that fits in an `i64`.
pub(super) fn alloc_shape(dims: &[i64], dtype: DType) -> PyResult<Shape> {
    let shape = to_shape(dims)?;
    checked_storage_numel(&shape, dtype.size())?;
    Ok(shape)
}

fn random_tensor(shape: Shape, dt: DType, normal: bool) -> PyResult<Tensor> {
    guard(|| ops::random_tensor(shape, dt, normal))
}

#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, generator=None))]
fn rand(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let _ = (device, generator);
    let dt = opt_dtype(dtype)?.unwrap_or(DType::DEFAULT_FLOAT);
    let shape = alloc_shape(&parse_size(args, size)?, dt)?;
    finish(py, random_tensor(shape, dt, false)?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, generator=None))]
fn randn(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let _ = (device, generator);
    let dt = opt_dtype(dtype)?.unwrap_or(DType::DEFAULT_FLOAT);
    let shape = alloc_shape(&parse_size(args, size)?, dt)?;
    finish(py, random_tensor(shape, dt, true)?, requires_grad)
}

/// `randint(high, size)` or `randint(low, high, size)`.
#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, generator=None))]
fn randint(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let _ = (device, generator);
    let ints: Vec<Bound<'_, PyAny>> = args.iter().collect();
    let (low, high, size) = match (ints.len(), size) {
        (1, Some(s)) => (0, super::convert::int_arg(&ints[0])?, seq_of_ints(s)?),
        (2, Some(s)) => (
            super::convert::int_arg(&ints[0])?,
            super::convert::int_arg(&ints[1])?,
            seq_of_ints(s)?,
        ),
        (2, None) => (
            0,
            super::convert::int_arg(&ints[0])?,
            seq_of_ints(&ints[1])?,
        ),
        (3, None) => (
            super::convert::int_arg(&ints[0])?,
            super::convert::int_arg(&ints[1])?,
            seq_of_ints(&ints[2])?,
        ),
        _ => {
            return Err(PyTypeError::new_err(
                "randint(low=0, high, size) expects high and size",
            ))
        }
    };
    if high <= low {
        return Err(PyRuntimeError::new_err(format!(
            "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )));
    }
    let dt = opt_dtype(dtype)?.unwrap_or(DType::I64);
    // Drawn as int64 first, whatever the dtype.
    let shape = alloc_shape(&size, DType::I64)?;
    let n = numel(&shape);
    let t = guard_nogil(py, n, || {
        ops::to_dtype(&Tensor::from_vec(random::randint(low, high, n), shape), dt)
    })?;
    finish(py, t, requires_grad)
}

#[pyfunction]
fn manual_seed(seed: &Bound<'_, PyAny>) -> PyResult<()> {
    let s: i128 = seed.extract()?;
    random::manual_seed(s as u64);
    Ok(())
}

/// Adds the random functions to `ferrograd._C`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rand, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    Ok(())
}

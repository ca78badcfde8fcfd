//! Forward-mode AD bindings behind `ferrograd.autograd.forward_ad`: dual
//! levels, making and unpacking dual tensors, and the tangent access custom
//! `Function`s use for their `jvp`.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use smallvec::smallvec;

use super::errors::enter_py;
use super::tensor::{wrap, PyTensor};
use crate::autograd::forward;
use crate::tensor::{fmt_shape, Tensor};

/// Opens the dual level (PyTorch's only level, index 0).
#[pyfunction]
fn _enter_dual_level() -> PyResult<i64> {
    enter_py("forward_ad.dual_level", forward::enter_level)?;
    Ok(0)
}

/// Closes the dual level and drops every tangent made in it.
#[pyfunction]
#[pyo3(signature = (*, level))]
fn _exit_dual_level(level: i64) -> PyResult<()> {
    if level != 0 || forward::current_level().is_none() {
        return Err(PyRuntimeError::new_err(
            "Trying to exit a forward AD level that was not the last one that was created. This is not supported.",
        ));
    }
    enter_py("forward_ad.dual_level", forward::exit_level)
}

/// The level in use (0), or -1 when none is open.
#[pyfunction]
fn _current_dual_level() -> i64 {
    if forward::current_level().is_some() {
        0
    } else {
        -1
    }
}

/// An alias of `t` (same memory and version counter) outside forward AD:
/// in `t`'s backward graph through an identity node, with no tangent.
fn alias_of(t: &Tensor) -> Tensor {
    let out = t.detach();
    if crate::autograd::is_grad_enabled() && t.requires_grad() {
        let _s = forward::Suspend::new(true);
        crate::autograd::record("ViewBackward0", &[t], &out, crate::saved![], |c| {
            Ok(smallvec![Some(c.grad()?.clone())])
        });
    }
    out
}

/// `make_dual`: a new tensor sharing `tensor`'s memory, in its backward
/// graph, carrying `tangent`.
#[pyfunction]
#[pyo3(signature = (tensor, tangent, *, level))]
fn _make_dual(
    py: Python<'_>,
    tensor: &Bound<'_, PyTensor>,
    tangent: &Bound<'_, PyTensor>,
    level: i64,
) -> PyResult<Py<PyAny>> {
    let (p, t) = (tensor.get().t.clone(), tangent.get().t.clone());
    if level != 0 || forward::current_level().is_none() {
        return Err(PyRuntimeError::new_err(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first.",
        ));
    }
    if forward::has_tangent(&p) {
        return Err(PyRuntimeError::new_err(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level 0 is not supported.",
        ));
    }
    if p.shape() != t.shape() {
        return Err(PyRuntimeError::new_err(format!(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {} while the given forward gradient is of size {}.",
            fmt_shape(&p.shape()),
            fmt_shape(&t.shape())
        )));
    }
    if p.dtype() != t.dtype() {
        return Err(PyRuntimeError::new_err(format!(
            "Expected tangent to have the same dtype as primal, but got: ferrograd.{}",
            t.dtype().name()
        )));
    }
    let out = alias_of(&p);
    enter_py("forward_ad.make_dual", || forward::set_tangent(&out, t))?;
    wrap(py, out)
}

/// `unpack_dual`: `(primal, tangent)`, the primal an alias of `tensor`
/// without the tangent; the tangent `None` when there is none.
#[pyfunction]
#[pyo3(signature = (tensor, *, level))]
fn _unpack_dual(
    py: Python<'_>,
    tensor: &Bound<'_, PyTensor>,
    level: i64,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let t = tensor.get().t.clone();
    if level != 0 || forward::current_level().is_none() {
        return Ok((tensor.clone().into_any().unbind(), py.None()));
    }
    let tan = forward::tangent(&t);
    let primal = match &tan {
        Some(_) => wrap(py, alias_of(&t))?,
        None => tensor.clone().into_any().unbind(),
    };
    let tan = match tan {
        Some(x) => wrap(py, x)?,
        None => py.None(),
    };
    Ok((primal, tan))
}

/// The tangent of `t` at the open level, or `None`.
#[pyfunction]
fn _fw_tangent(py: Python<'_>, t: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    match forward::tangent(&t.get().t) {
        Some(x) => wrap(py, x),
        None => Ok(py.None()),
    }
}

/// Gives `t` the tangent `tangent` (a custom Function's `jvp` result).
#[pyfunction]
fn _fw_set_tangent(t: &Bound<'_, PyTensor>, tangent: &Bound<'_, PyTensor>) -> PyResult<()> {
    let (p, tan) = (t.get().t.clone(), tangent.get().t.clone());
    if p.shape() != tan.shape() {
        return Err(PyRuntimeError::new_err(format!(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {} while the given forward gradient is of size {}.",
            fmt_shape(&p.shape()),
            fmt_shape(&tan.shape())
        )));
    }
    enter_py("forward_ad.make_dual", || forward::set_tangent(&p, tan))
}

/// Whether ops propagate tangents on this thread (PyTorch's
/// `_is_fwd_grad_enabled`).
#[pyfunction]
fn _is_fwd_grad_enabled() -> bool {
    !forward::is_suspended()
}

/// Turns tangent propagation on or off on this thread.
#[pyfunction]
fn _set_fwd_grad_enabled(enabled: bool) {
    forward::set_suspended(!enabled);
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_enter_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_exit_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_current_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_make_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_unpack_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_fw_tangent, m)?)?;
    m.add_function(wrap_pyfunction!(_fw_set_tangent, m)?)?;
    m.add_function(wrap_pyfunction!(_is_fwd_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fwd_grad_enabled, m)?)?;
    Ok(())
}

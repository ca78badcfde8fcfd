//! Core errors become ordinary Python exceptions; a panic never escapes.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use pyo3::exceptions::{
    PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;

use crate::error::Error;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::Runtime(m) => PyRuntimeError::new_err(m),
            Error::Type(m) => PyTypeError::new_err(m),
            Error::Value(m) => PyValueError::new_err(m),
            Error::Index(m) => PyIndexError::new_err(m),
            Error::NotImplemented(m) => PyNotImplementedError::new_err(m),
            Error::External(payload) => match payload.downcast_ref::<PyErr>() {
                Some(err) => Python::attach(|py| err.clone_ref(py)),
                None => PyRuntimeError::new_err("error raised by a callback"),
            },
        }
    }
}

/// Wraps a Python exception so it can travel through the engine unchanged.
pub fn external(err: PyErr) -> Error {
    Error::External(Arc::new(err))
}

/// Runs core code, turning a panic (a bug) into a `RuntimeError` rather than
/// letting PyO3 raise `PanicException`, which `except Exception` cannot catch.
#[inline]
pub fn guard<T, F: FnOnce() -> crate::Result<T>>(f: F) -> PyResult<T> {
    if super::capture::active() {
        super::capture::on_guard(std::any::type_name::<F>());
    }
    finish(catch(f))
}

/// What a guarded call returned, or the panic it raised.
pub(crate) type Caught<T> = std::thread::Result<crate::Result<T>>;

/// Runs `f`, keeping a panic as a value for [`finish`].
#[inline(always)]
pub(crate) fn catch<T>(f: impl FnOnce() -> crate::Result<T>) -> Caught<T> {
    catch_unwind(AssertUnwindSafe(f))
}

/// The binding's result for a caught call: its value unless it failed,
/// panicked, or a recording error was deferred during it (one read of the
/// mode word when none was).
#[inline]
pub(crate) fn finish<T>(r: Caught<T>) -> PyResult<T> {
    match r {
        Ok(Ok(v)) if !crate::flags::any(crate::flags::DEFERRED) => Ok(v),
        r => finish_slow(r),
    }
}

/// [`finish`] once the mode word was read and found clear of deferred
/// errors: no thread-local read at all for a successful call.
#[inline]
pub(crate) fn finish_clear<T>(r: Caught<T>) -> PyResult<T> {
    match r {
        Ok(Ok(v)) => Ok(v),
        r => finish_slow(r),
    }
}

#[cold]
fn finish_slow<T>(r: Caught<T>) -> PyResult<T> {
    // Taken whatever the outcome, so it never leaks into a later call.
    let deferred = crate::autograd::take_deferred_error();
    match r {
        Ok(Ok(v)) => match deferred {
            Some(e) => Err(e.into()),
            None => Ok(v),
        },
        Ok(Err(e)) => Err(e.into()),
        Err(p) => Err(panic_error(p)),
    }
}

/// The exception for a caught panic: PyTorch's allocator error for a refused
/// allocation, otherwise an internal error (a bug).
fn panic_error(p: Box<dyn std::any::Any + Send>) -> PyErr {
    if let Some(fail) = p.downcast_ref::<crate::error::AllocFailure>() {
        return PyRuntimeError::new_err(fail.to_string());
    }
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    PyRuntimeError::new_err(format!(
        "internal error in ferrograd (please report it): {msg}"
    ))
}

/// [`guard`] for binding code that works with Python objects (it keeps the
/// GIL and returns a `PyResult`): conversions from and to Python data, whose
/// allocations can be refused like any op's.
pub fn guard_py<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_error(p)))
}

/// The one way a binding runs core work (polars' `enter_polars`): panics
/// and core errors become Python exceptions (see [`guard`]), and the GIL is
/// released around `f` when `work` (the element count of the op's largest
/// operand or result) reaches `kernels::GRAIN`, so other Python threads run
/// while a big kernel does; below that the release would cost more than the
/// op. Every op binding calls this (through `tensor::run` when it returns a
/// tensor); `f` must not touch Python.
#[inline]
pub fn enter<T: Send>(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> PyResult<T> {
    if work >= crate::kernels::GRAIN {
        py.detach(|| guard(f))
    } else {
        guard(f)
    }
}

/// [`enter`] under its older name, kept for bindings written against it.
#[inline]
pub fn guard_nogil<T: Send>(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> PyResult<T> {
    enter(py, work, f)
}

/// The work of an op over `ts`: its largest operand.
#[inline]
pub fn work(ts: &[&crate::tensor::Tensor]) -> usize {
    ts.iter().map(|t| t.numel()).max().unwrap_or(0)
}

/// The work of a matrix product `a @ b`: each element of `a` meets a row of
/// `b` (also right for `outer`, whose result is larger than both operands).
#[inline]
pub fn product_work(a: &crate::tensor::Tensor, b: &crate::tensor::Tensor) -> usize {
    a.numel()
        .saturating_mul(b.shape().last().copied().unwrap_or(1))
        .max(b.numel())
}

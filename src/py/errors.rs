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

/// What a call into core code returned, or the panic it raised.
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

/// [`catch`] for binding code that works with Python objects (it keeps the
/// GIL and returns a `PyResult`): conversions from and to Python data, whose
/// allocations can be refused like any op's.
pub fn guard_py<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_error(p)))
}

/// Runs `f` with panics caught and errors mapped (see [`finish`]), the GIL
/// released around it when `work` (the element count of the op's largest
/// operand or result) reaches `kernels::GRAIN`. The shared body of every
/// entry into core code; it knows nothing of capture.
#[inline(always)]
pub(crate) fn call<T: Send>(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> Caught<T> {
    if work >= crate::kernels::GRAIN {
        py.detach(|| catch(f))
    } else {
        catch(f)
    }
}

/// The entry into core code for a binding that has no replay rule (polars'
/// `enter_polars` is the model): panics and core errors become Python
/// exceptions and the GIL is released for big work, as in the recording
/// family of `capture.rs` (`run_op`, ...), which every op binding uses. While
/// a tape is being captured the call still runs, but the capture fails with
/// "`name` has no replay rule", so a replay never silently skips it. `f`
/// must not touch Python.
#[inline]
pub fn enter<T: Send>(
    py: Python<'_>,
    name: &'static str,
    work: usize,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> PyResult<T> {
    let r = crate::profiler::timed(
        || name.into(),
        crate::profiler::Kind::Op,
        Vec::new,
        || call(py, work, f),
    );
    let word = crate::flags::get();
    if word & crate::flags::CAPTURE != 0 {
        crate::compile::no_rule(name);
    }
    if word & crate::flags::DEFERRED == 0 {
        finish_clear(r)
    } else {
        finish(r)
    }
}

/// [`enter`] for bindings that call back into Python (a custom Function's
/// node, `_apply_inplace`'s closure, hooks): the GIL stays held. Fails a
/// running capture with `name` as `enter` does.
#[inline]
pub fn enter_py<T>(name: &'static str, f: impl FnOnce() -> crate::Result<T>) -> PyResult<T> {
    let r = catch(f);
    if crate::compile::active() {
        crate::compile::no_rule(name);
    }
    finish(r)
}

/// A read of tensor values into Python (`numpy()`, `bool(t)`, `equal`):
/// refused during capture (the Python code using the value would not run on
/// replay), then run as [`enter`] runs a call.
#[inline]
pub fn read<T: Send>(
    py: Python<'_>,
    name: &'static str,
    work: usize,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> PyResult<T> {
    crate::compile::refuse_read(name);
    finish(call(py, work, f))
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

//! The `__ferrograd_function__` protocol (PyTorch's `__torch_function__` is
//! the model): a `ferrograd.*` function given an argument that is not a
//! `Tensor` but whose type defines `__ferrograd_function__` hands the whole
//! call to `type(arg).__ferrograd_function__(func, types, args, kwargs)`.
//! `ferrograd.func.vmap`'s `BatchedTensor` is such a type.
//!
//! It costs nothing on the normal path: nothing is looked up until a tensor
//! argument has failed to convert. The converters (`convert.rs`,
//! `tensor_arg`) then return a `DispatchNeeded` error instead of their type
//! error, and `dispatching!` around the function's body turns that error
//! into the handler's call. A method of an unbatched `Tensor` given such an
//! argument (`x.copy_(batched)`, `x += batched`, `x[i] = batched`) is an
//! in-place write of a batched value into an unbatched tensor and reports
//! PyTorch's error for that (`inplace_err`).

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use pyo3::{intern, IntoPyObjectExt};

use super::tensor::PyTensor;

pyo3::create_exception!(
    _C,
    DispatchNeeded,
    PyRuntimeError,
    "An argument asked for `__ferrograd_function__` dispatch."
);

/// Whether `obj`'s type defines `__ferrograd_function__`.
pub(crate) fn dispatchable(obj: &Bound<'_, PyAny>) -> bool {
    obj.get_type()
        .hasattr(intern!(obj.py(), "__ferrograd_function__"))
        .unwrap_or(false)
}

/// The error a converter returns for a dispatchable argument. A function
/// wrapped in `dispatching!` turns it into the handler's call; its text is
/// what a user sees from a binding without dispatch.
pub(crate) fn needed(obj: &Bound<'_, PyAny>) -> PyErr {
    DispatchNeeded::new_err(format!(
        "vmap: there is no batching rule for this ferrograd function or Tensor method with a \
         {} argument; it cannot be used inside vmap/jacrev/jacfwd",
        type_name(obj)
    ))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// An in-place write into an unbatched tensor whose value asked for
/// dispatch (a batched value under `vmap`): PyTorch's error for that case.
pub(crate) fn inplace_err(py: Python<'_>, e: PyErr) -> PyErr {
    if !e.is_instance_of::<DispatchNeeded>(py) {
        return e;
    }
    PyRuntimeError::new_err(
        "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a \
         Tensor `other` in extra_args that has more elements than `self`. This happened due to \
         `other` being vmapped over but `self` not being vmapped over in a vmap. Please try to \
         use out-of-place operators instead of inplace arithmetic. If said operator is being \
         called inside the PyTorch framework, please file a bug report instead.",
    )
}

/// A tensor argument of `fname`, or the dispatch error, or PyTorch's type error.
pub(crate) fn tensor_arg<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
    fname: &str,
    arg: &str,
    position: usize,
) -> PyResult<&'a Bound<'py, PyTensor>> {
    obj.cast::<PyTensor>().map_err(|_| {
        if dispatchable(obj) {
            needed(obj)
        } else {
            PyTypeError::new_err(format!(
                "{fname}(): argument '{arg}' (position {position}) must be Tensor, not {}",
                type_name(obj)
            ))
        }
    })
}

fn collect_types<'py>(obj: &Bound<'py, PyAny>, out: &mut Vec<Bound<'py, PyAny>>) {
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        if let Ok(it) = obj.try_iter() {
            for item in it.flatten() {
                collect_types(&item, out);
            }
        }
        return;
    }
    if obj.cast::<PyTensor>().is_err() && dispatchable(obj) {
        let ty = obj.get_type().into_any();
        if !out.iter().any(|t| t.is(&ty)) {
            out.push(ty);
        }
    }
}

/// Calls the handlers of the dispatchable types among `args` (list items
/// included) for `ferrograd._C.<name>`, in order, until one does not return
/// `NotImplemented`.
pub(crate) fn dispatch<'py>(
    py: Python<'py>,
    name: &str,
    args: impl IntoPyObject<'py>,
) -> PyResult<Py<PyAny>> {
    let args = args.into_bound_py_any(py)?.cast_into::<PyTuple>()?;
    let func = py.import("ferrograd._C")?.getattr(name)?;
    let mut types = Vec::new();
    for a in args.iter() {
        collect_types(&a, &mut types);
    }
    let type_tuple = PyTuple::new(py, &types)?;
    for ty in &types {
        let r = ty.call_method1(
            intern!(py, "__ferrograd_function__"),
            (&func, &type_tuple, &args, py.None()),
        )?;
        if !r.is(py.NotImplemented()) {
            return Ok(r.unbind());
        }
    }
    Err(PyTypeError::new_err(format!(
        "no implementation found for 'ferrograd.{name}' on types that implement \
         __ferrograd_function__: {type_tuple}"
    )))
}

/// Runs a function body; when a converter asked for dispatch, calls the
/// argument types' `__ferrograd_function__` with the function's arguments
/// (positional, in signature order) instead.
macro_rules! dispatching {
    ($py:expr, $name:expr, ($($arg:expr),* $(,)?), $body:block) => {{
        // A closure so that `?` in the body stops at the dispatch check.
        #[allow(clippy::redundant_closure_call)]
        let r: PyResult<Py<PyAny>> = (|| $body)();
        match r {
            Err(e) if e.is_instance_of::<$crate::py::dispatch::DispatchNeeded>($py) => {
                $crate::py::dispatch::dispatch($py, $name, ($($arg,)*))
            }
            r => r,
        }
    }};
}

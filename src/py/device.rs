//! Devices: the CPU, where every tensor lives, and `meta`, PyTorch's device
//! of tensors with a shape and a dtype but no storage.
//!
//! A meta tensor is a Python object (`ferrograd._meta.MetaTensor`) that
//! Rust never sees as a tensor: factory functions given `device="meta"` (or
//! called under `with ferrograd.device("meta")`) and `Tensor.to("meta")`
//! hand the shape and dtype they worked out to `ferrograd._meta._factory`,
//! and ops on meta tensors reach their shape rules through the
//! `__ferrograd_function__` protocol. Ordinary tensors pay nothing for it:
//! the CPU path of a factory compares the device string as it did before,
//! and an unset `device` reads one bit of the mode word.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

use crate::flags;
use crate::tensor::DType;

/// Where a factory function puts its result.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Cpu,
    Meta,
}

/// The target of a factory's `device=` argument; `None` means the thread's
/// default device (the CPU unless `set_default_device("meta")` or a
/// `with ferrograd.device("meta")` block is active).
pub(crate) fn target(device: Option<&Bound<'_, PyAny>>) -> PyResult<Target> {
    let d = match device {
        Some(d) if !d.is_none() => d,
        _ => {
            return Ok(if flags::any(flags::DEFAULT_META) {
                Target::Meta
            } else {
                Target::Cpu
            })
        }
    };
    let s = d.str()?;
    let s = s.to_cow()?;
    if s == "cpu" || s.starts_with("cpu:") {
        Ok(Target::Cpu)
    } else if s == "meta" {
        Ok(Target::Meta)
    } else {
        Err(no_device(&s))
    }
}

/// The error for a device other than the CPU and meta.
pub(crate) fn no_device(s: &str) -> PyErr {
    PyRuntimeError::new_err(format!(
        "ferrograd has no CUDA support: only the 'cpu' device exists (got '{s}')"
    ))
}

static FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CPU: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A new meta tensor of `shape` and `dtype`, no memory allocated.
pub(crate) fn meta_tensor(
    py: Python<'_>,
    shape: &[usize],
    dtype: DType,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let f = FACTORY.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("ferrograd._meta")?.getattr("_factory")?.unbind())
    })?;
    let dims = PyTuple::new(py, shape)?;
    let dt = crate::py::dtype::dtype_object(py, dtype);
    Ok(f.bind(py).call1((dims, dt, requires_grad))?.unbind())
}

/// `ferrograd.device("cpu")`, made once: what `Tensor.device` returns.
pub(crate) fn cpu_device(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let d = CPU.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("ferrograd._device")?.getattr("_CPU")?.unbind())
    })?;
    Ok(d.clone_ref(py))
}

/// Sets whether factory functions without a `device` make meta tensors on
/// this thread (`on=None` only reads it); returns the previous setting.
#[pyfunction]
#[pyo3(signature = (on=None))]
fn _default_device_meta(on: Option<bool>) -> bool {
    match on {
        Some(v) => flags::replace(flags::DEFAULT_META, v),
        None => flags::any(flags::DEFAULT_META),
    }
}

/// Checks a `memory_format=` argument (`ferrograd.channels_last`, ...):
/// ferrograd keeps tensors row-major, so a format changes no value, but a
/// channels-last format needs the rank PyTorch requires (`ndim`, when the
/// tensor is known). Returns the format's name.
pub(crate) fn check_memory_format(
    memory_format: Option<&Bound<'_, PyAny>>,
    ndim: Option<usize>,
) -> PyResult<Option<String>> {
    let Some(f) = memory_format else {
        return Ok(None);
    };
    if f.is_none() {
        return Ok(None);
    }
    let name = f
        .repr()?
        .to_cow()?
        .rsplit('.')
        .next()
        .unwrap_or("")
        .to_string();
    let rank = match name.as_str() {
        "contiguous_format" | "preserve_format" => None,
        "channels_last" => Some(4),
        "channels_last_3d" => Some(5),
        _ => {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "memory_format must be ferrograd.memory_format, not {}",
                f.get_type().name()?
            )))
        }
    };
    if let (Some(r), Some(n)) = (rank, ndim) {
        if r != n {
            return Err(PyRuntimeError::new_err(format!(
                "required rank {r} tensor to use {name} format"
            )));
        }
    }
    Ok(Some(name))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_default_device_meta, m)?)?;
    Ok(())
}

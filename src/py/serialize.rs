//! `_C._st_write` / `_C._st_read`: the bulk bytes of `ferrograd.save` and
//! `ferrograd.load` (see `crate::serialize`); the object tree and the JSON
//! header are built and checked in `ferrograd/serialization.py`.

use std::os::unix::io::FromRawFd;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::{enter, external, read};
use super::tensor::{wrap, PyTensor};
use crate::error::Error;
use crate::serialize::{self, Entry, SerError};
use crate::tensor::Tensor;

fn core_err(e: SerError) -> Error {
    match e {
        SerError::Io(e) => external(PyErr::from(e)),
        SerError::Format(m) => Error::runtime(m),
    }
}

/// Writes a safetensors file at `path` (or returns its bytes when `path` is
/// None): the length prefix, `header` and the tensors' elements in order.
#[pyfunction]
#[pyo3(signature = (path, header, tensors, sync))]
fn _st_write(
    py: Python<'_>,
    path: Option<PathBuf>,
    header: &[u8],
    tensors: Vec<PyRef<'_, PyTensor>>,
    sync: bool,
) -> PyResult<Option<Py<PyBytes>>> {
    let ts: Vec<Tensor> = tensors.iter().map(|t| t.t.clone()).collect();
    drop(tensors);
    let total = serialize::total_len(header, &ts);
    match path {
        Some(p) => {
            read(py, "save", total, || {
                serialize::write_file(&p, header, &ts, sync).map_err(|e| core_err(SerError::Io(e)))
            })?;
            Ok(None)
        }
        None => {
            let bytes = PyBytes::new_with(py, total, |mut buf| {
                read(py, "save", total, move || {
                    serialize::write_all(&mut buf, header, &ts)
                        .map_err(|e| core_err(SerError::Io(e)))
                })
            })?;
            Ok(Some(bytes.unbind()))
        }
    }
}

/// Reads the tensors `entries` describe (name, safetensors dtype, shape,
/// absolute start, byte count) from an open file descriptor or a `bytes`
/// object; with `mmap` (descriptors only) they view a private mapping of the file.
#[pyfunction]
#[pyo3(signature = (source, entries, mmap))]
fn _st_read(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    entries: Vec<(String, String, Vec<usize>, u64, u64)>,
    mmap: bool,
) -> PyResult<Vec<Py<PyAny>>> {
    let mut es = Vec::with_capacity(entries.len());
    let mut work = 0usize;
    for (name, dt, shape, start, nbytes) in entries {
        let dtype = serialize::from_st_name(&dt).ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(format!(
                "tensor '{name}': unsupported dtype '{dt}'"
            ))
        })?;
        work = work.saturating_add(nbytes as usize);
        es.push(Entry {
            name,
            dtype,
            shape: shape.into_iter().collect(),
            start,
            nbytes,
        });
    }
    let tensors = if let Ok(data) = source.cast::<PyBytes>() {
        let data = data.as_bytes();
        enter(py, "load", work, || {
            serialize::read_bytes(data, &es).map_err(core_err)
        })?
    } else {
        // A descriptor the caller keeps open: the header it parsed and the
        // bytes read here come from the same open file, even if the path is
        // replaced meanwhile.
        let fd: i32 = source.extract()?;
        enter(py, "load", work, || {
            // SAFETY: borrowed for this call only; ManuallyDrop never closes it.
            let file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
            if mmap {
                serialize::map_file(&file, &es)
            } else {
                serialize::read_file(&file, &es)
            }
            .map_err(core_err)
        })?
    };
    tensors.into_iter().map(|t| wrap(py, t)).collect()
}

/// The CRC-32C of each tensor's elements in contiguous order (the bytes
/// `_st_write` writes for it), with the GIL released.
#[pyfunction]
fn _crc32c(py: Python<'_>, tensors: Vec<PyRef<'_, PyTensor>>) -> PyResult<Vec<u32>> {
    let ts: Vec<Tensor> = tensors.iter().map(|t| t.t.clone()).collect();
    drop(tensors);
    let work = ts.iter().map(|t| t.numel()).sum();
    read(py, "save", work, || Ok(serialize::crc32c_of(&ts)))
}

/// The CRC-32C of a bytes object (a checkpoint's header).
#[pyfunction]
fn _crc32c_bytes(data: &[u8]) -> u32 {
    crate::checksum::crc32c(data)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_st_write, m)?)?;
    m.add_function(wrap_pyfunction!(_st_read, m)?)?;
    m.add_function(wrap_pyfunction!(_crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(_crc32c_bytes, m)?)?;
    Ok(())
}

/// `copy.deepcopy` of a tensor, as PyTorch's: a leaf copied with its dtype,
/// `requires_grad` and `.grad` (see `ferrograd.serialization._deepcopy_tensor`).
#[pymethods]
impl PyTensor {
    fn __deepcopy__(slf: &Bound<'_, Self>, memo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let f = slf
            .py()
            .import("ferrograd.serialization")?
            .getattr("_deepcopy_tensor")?;
        Ok(f.call1((slf, memo))?.unbind())
    }
}

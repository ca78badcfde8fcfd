//! `_C._malloc_tuning`: what the extension did to glibc's malloc when it loaded.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::alloc::{tune_malloc, Tuning};

/// The malloc thresholds set at import (`{"mmap_threshold": .., "trim_threshold": ..}`),
/// or `{"skipped": reason}` when malloc was left as it was.
#[pyfunction]
fn _malloc_tuning(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    match tune_malloc() {
        Tuning::Applied {
            mmap_threshold,
            trim_threshold,
        } => {
            d.set_item("mmap_threshold", mmap_threshold)?;
            d.set_item("trim_threshold", trim_threshold)?;
        }
        Tuning::Skipped(reason) => d.set_item("skipped", reason)?,
    }
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_malloc_tuning, m)?)
}

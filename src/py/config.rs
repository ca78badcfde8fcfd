//! `_C._build_info`, `_C._cpu_features`, `_C._simd_paths`: what
//! `ferrograd.__config__.show()` reports about this build and this CPU;
//! `_C._bf16_matmul_path(s)` and `_C._set_bf16_matmul_path`: the bfloat16
//! product path, which `ferrograd.backends.cpu` reads and sets.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::kernels::{bf16_gemm, simd};

/// How this extension was built: version, commit, compiler, profile, target
/// and the compile-time instruction-set baseline.
#[pyfunction]
fn _build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", env!("CARGO_PKG_VERSION"))?;
    d.set_item("git_commit", env!("FERROGRAD_BUILD_COMMIT"))?;
    d.set_item("rustc", env!("FERROGRAD_BUILD_RUSTC"))?;
    d.set_item("profile", env!("FERROGRAD_BUILD_PROFILE"))?;
    d.set_item("target", env!("FERROGRAD_BUILD_TARGET"))?;
    d.set_item("target_features", env!("FERROGRAD_BUILD_TARGET_FEATURES"))?;
    d.set_item("debug_assertions", cfg!(debug_assertions))?;
    d.set_item("source_hash", env!("FERROGRAD_SOURCE_HASH"))?;
    Ok(d)
}

/// The CPU features the kernels test for, each `True` or `False` here.
#[pyfunction]
fn _cpu_features(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, present) in simd::cpu_features() {
        d.set_item(name, present)?;
    }
    Ok(d)
}

/// The path each kernel family selected on this CPU:
/// `{family: (path, what the family covers)}`.
#[pyfunction]
fn _simd_paths(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (family, path, covers) in simd::paths() {
        d.set_item(family, (path, covers))?;
    }
    Ok(d)
}

/// The path bfloat16 matrix products take now (`amx`, `avx512_bf16` or
/// `portable`).
#[pyfunction]
fn _bf16_matmul_path() -> &'static str {
    bf16_gemm::Path::current().name()
}

/// The bfloat16 matrix product paths this CPU can run, slowest first.
#[pyfunction]
fn _bf16_matmul_paths() -> Vec<&'static str> {
    bf16_gemm::Path::ALL
        .iter()
        .filter(|p| p.available())
        .map(|p| p.name())
        .collect()
}

/// Makes bfloat16 matrix products take the path `name` (`None`: the
/// fastest one again).
#[pyfunction]
#[pyo3(signature = (name))]
fn _set_bf16_matmul_path(name: Option<&str>) -> PyResult<()> {
    let path = match name {
        None => None,
        Some(s) => Some(bf16_gemm::Path::from_name(s).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown bfloat16 matmul path '{s}': expected 'amx', 'avx512_bf16' or 'portable'"
            ))
        })?),
    };
    bf16_gemm::force(path).map_err(PyRuntimeError::new_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_build_info, m)?)?;
    m.add_function(wrap_pyfunction!(_cpu_features, m)?)?;
    m.add_function(wrap_pyfunction!(_simd_paths, m)?)?;
    m.add_function(wrap_pyfunction!(_bf16_matmul_path, m)?)?;
    m.add_function(wrap_pyfunction!(_bf16_matmul_paths, m)?)?;
    m.add_function(wrap_pyfunction!(_set_bf16_matmul_path, m)?)
}

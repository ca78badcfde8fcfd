//! Anomaly detection's Python side: capturing the Python stack for the core
//! (`crate::anomaly`), formatting it like `traceback.format_stack()`, issuing
//! the warning, and the mode switches behind `ferrograd.autograd.detect_anomaly`.

use std::ffi::CString;
use std::sync::Arc;

use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::anomaly::{self, Hooks, Trace};

/// A captured stack: each frame's code object and line, outermost first.
/// Code objects live as long as their function, hold no locals, and give the
/// file and function name only when the trace is formatted, so capturing
/// costs a few attribute reads per frame.
struct PyTrace {
    frames: Vec<(Py<PyAny>, i64)>,
}

impl Trace for PyTrace {
    fn frames(&self) -> Vec<String> {
        Python::attach(|py| {
            let getline = linecache(py);
            let mut frames = Vec::with_capacity(self.frames.len());
            for (code, line) in &self.frames {
                let mut out = String::new();
                let code = code.bind(py);
                let file: String = code
                    .getattr("co_filename")
                    .and_then(|f| f.extract())
                    .unwrap_or_else(|_| "<unknown>".into());
                let name: String = code
                    .getattr("co_name")
                    .and_then(|f| f.extract())
                    .unwrap_or_else(|_| "<unknown>".into());
                out.push_str(&format!("  File \"{file}\", line {line}, in {name}\n"));
                let src: Option<String> = getline
                    .and_then(|g| g.bind(py).call1((file.as_str(), *line)).ok())
                    .and_then(|s| s.extract().ok());
                if let Some(src) = src {
                    let src = src.trim();
                    if !src.is_empty() {
                        out.push_str(&format!("    {src}\n"));
                    }
                }
                frames.push(out);
            }
            frames
        })
    }
}

static GETFRAME: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static GETLINE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn linecache(py: Python<'_>) -> Option<&Py<PyAny>> {
    GETLINE
        .get_or_try_init(py, || {
            py.import("linecache")?
                .getattr("getline")
                .map(|f| f.unbind())
        })
        .ok()
}

fn capture() -> Option<Arc<dyn Trace>> {
    Python::attach(|py| {
        let getframe = GETFRAME
            .get_or_try_init(py, || {
                py.import("sys")?.getattr("_getframe").map(|f| f.unbind())
            })
            .ok()?;
        let mut frames = Vec::new();
        let mut f = getframe.bind(py).call0().ok()?;
        while !f.is_none() {
            let code = f.getattr("f_code").ok()?;
            let line: i64 = f.getattr("f_lineno").ok()?.extract().unwrap_or(0);
            frames.push((code.unbind(), line));
            f = f.getattr("f_back").ok()?;
        }
        frames.reverse();
        Some(Arc::new(PyTrace { frames }) as Arc<dyn Trace>)
    })
}

fn warn(msg: &str) {
    Python::attach(|py| {
        let msg = CString::new(msg.replace('\0', "")).unwrap_or_default();
        // A filter that turns the warning into an error must not replace the
        // error being reported, so that outcome is dropped.
        let _ = PyErr::warn(py, &py.get_type::<PyUserWarning>(), &msg, 1);
    });
}

/// Turns anomaly detection on or off on this thread (`set_detect_anomaly`
/// and `detect_anomaly` call this).
#[pyfunction]
#[pyo3(signature = (enabled, check_nan=true))]
fn set_anomaly_enabled(enabled: bool, check_nan: bool) {
    anomaly::set(enabled, check_nan);
}

/// True while anomaly detection is enabled on this thread.
#[pyfunction]
fn is_anomaly_enabled() -> bool {
    anomaly::is_enabled()
}

/// True when anomaly detection also checks each backward node's gradients for NaN.
#[pyfunction]
fn is_anomaly_check_nan_enabled() -> bool {
    anomaly::check_nan()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    anomaly::install(Hooks { capture, warn });
    m.add_function(wrap_pyfunction!(set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_check_nan_enabled, m)?)?;
    Ok(())
}

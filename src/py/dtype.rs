//! `ferrograd.float32` and friends: one Python object per dtype.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::tensor::DType;

/// The element type of a tensor: `ferrograd.bool`, `uint8`, `int8`,
/// `int16`, `int32`, `int64`, `float16`, `bfloat16`, `float32` or `float64`
/// (one object each, compared by identity or `==`).
#[pyclass(name = "dtype", module = "ferrograd", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash, Clone, Copy)]
pub struct PyDType {
    pub dt: DType,
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("ferrograd.{}", self.dt.name())
    }

    #[getter]
    fn is_floating_point(&self) -> bool {
        self.dt.is_float()
    }

    #[getter]
    fn is_signed(&self) -> bool {
        self.dt.is_signed()
    }

    #[getter]
    fn is_complex(&self) -> bool {
        false
    }

    #[getter]
    fn itemsize(&self) -> usize {
        self.dt.size()
    }

    fn __reduce__(&self) -> String {
        self.dt.name().to_string()
    }
}

static DTYPES: PyOnceLock<[Py<PyDType>; 10]> = PyOnceLock::new();

/// The singleton object for `dt`, so `t.dtype is ferrograd.float32` holds.
pub fn dtype_object(py: Python<'_>, dt: DType) -> Py<PyDType> {
    let all = DTYPES.get_or_init(py, || {
        crate::tensor::ALL_DTYPES
            .map(|dt| Py::new(py, PyDType { dt }).expect("allocating a dtype object"))
    });
    all[dt.index() as usize].clone_ref(py)
}

/// Accepts a ferrograd dtype, a Python type (`float` is float64, as in
/// PyTorch), a NumPy dtype or type, or a name.
pub fn parse_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.cast::<PyDType>() {
        return Ok(d.get().dt);
    }
    let py = obj.py();
    if let Ok(t) = obj.cast::<PyType>() {
        if t.is(py.get_type::<pyo3::types::PyFloat>()) {
            return Ok(DType::F64);
        }
        if t.is(py.get_type::<pyo3::types::PyBool>()) {
            return Ok(DType::Bool);
        }
        if t.is(py.get_type::<pyo3::types::PyInt>()) {
            return Ok(DType::I64);
        }
    }
    // NumPy dtypes and scalar types, and plain names.
    let name: String = match obj.extract::<String>() {
        Ok(s) => s,
        Err(_) => {
            let np = py.import("numpy")?;
            np.call_method1("dtype", (obj,))
                .and_then(|d| d.getattr("name"))
                .and_then(|n| n.extract())
                .map_err(|_| PyTypeError::new_err(format!("{obj} is not a ferrograd dtype")))?
        }
    };
    let name = name
        .trim_start_matches("ferrograd.")
        .trim_start_matches("torch.");
    dtype_named(name).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "dtype {name} is not supported by ferrograd (bool, uint8, int8, int16, int32, \
             int64, float16, bfloat16, float32 and float64 are)"
        ))
    })
}

/// The dtype a name or PyTorch alias stands for (`half`, `short`, `int`, ...).
pub fn dtype_named(name: &str) -> Option<DType> {
    Some(match name {
        "float32" | "float" => DType::F32,
        "float64" | "double" => DType::F64,
        "float16" | "half" => DType::F16,
        "bfloat16" => DType::BF16,
        "int64" | "long" => DType::I64,
        "int32" | "int" => DType::I32,
        "int16" | "short" => DType::I16,
        "int8" => DType::I8,
        "uint8" => DType::U8,
        "bool" => DType::Bool,
        _ => return None,
    })
}

pub fn opt_dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => parse_dtype(o).map(Some),
    }
}

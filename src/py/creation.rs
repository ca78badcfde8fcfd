//! Creation functions: `tensor`, `from_numpy`, `zeros`/`ones`/`empty`/`full`,
//! `eye`, `arange`, `linspace` and the `*_like` helper.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::capture::run_op;
use super::convert::{as_scalar, from_numpy_shared, parse_size, seq_of_ints, tensor_from_data};
use super::device::{self, Target};
use super::dtype::opt_dtype;
use super::functions::{alloc_shape, finish, leaf};
use super::tensor::{wrap, PyTensor};
use crate::ops::{self, Scalar};
use crate::tensor::{numel, DType, Element, Shape, Tensor};

const COPY_CONSTRUCT: &std::ffi::CStr = c"To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or sourceTensor.detach().clone().requires_grad_(True), rather than ferrograd.tensor(sourceTensor).";

/// Builds a new tensor from `data` (nested sequences of numbers, a NumPy array, a number or a
/// tensor), copying it; the dtype is inferred (bool, int64 or the default float dtype) unless `dtype` is given.
#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false))]
fn tensor(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let target = device::target(device)?;
    let dt = opt_dtype(dtype)?;
    if data.cast::<PyTensor>().is_ok() {
        // PyTorch warns: the copy is detached, which `tensor(t)` does not say.
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            COPY_CONSTRUCT,
            1,
        )?;
    }
    if crate::compile::active() && target != Target::Meta {
        if let Ok(src) = data.cast::<PyTensor>() {
            // A copy of a tensor is an op on it.
            let src = &src.get().t;
            return run_op(py, src.numel(), "tensor", &[src], &[], move |t, _| {
                let c = ops::clone_data(t[0]);
                leaf(
                    match dt {
                        Some(dt) => ops::to_dtype(&c, dt)?,
                        None => c,
                    },
                    requires_grad,
                )
            });
        }
        if holds_tensor(data)? {
            crate::compile::no_rule("tensor");
        }
        // Python data: the same values on every replay, in a fresh tensor.
        let t = tensor_from_data(data, dt)?;
        return run_op(py, t.numel(), "tensor", &[], &[], move |_, _| {
            leaf(ops::clone_data(&t), requires_grad)
        });
    }
    let t = tensor_from_data(data, dt)?;
    if target == Target::Meta {
        return device::meta_tensor(py, &t.shape(), t.dtype(), requires_grad);
    }
    finish(py, t, requires_grad)
}

/// Whether nested Python sequences hold a tensor, whose value `tensor()`
/// would read at capture time.
fn holds_tensor(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if obj.cast::<PyTensor>().is_ok() {
        return Ok(true);
    }
    if obj.is_instance_of::<pyo3::types::PyList>() || obj.is_instance_of::<PyTuple>() {
        for item in obj.try_iter()? {
            if holds_tensor(&item?)? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// A tensor sharing the memory of the NumPy array `array` (bool, int64, float32 or float64):
/// writes through either are seen by the other.
#[pyfunction]
fn from_numpy(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if crate::compile::active() {
        // The array is Python's: a replay cannot know whether it is the same one.
        crate::compile::no_rule("from_numpy");
    }
    wrap(py, from_numpy_shared(array)?)
}

fn filled(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    value: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let target = device::target(device)?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::default_float());
    let shape = alloc_shape(&parse_size(args, size)?, dt)?;
    if target == Target::Meta {
        return device::meta_tensor(py, &shape, dt, requires_grad);
    }
    let n = numel(&shape);
    // A fresh tensor on every replay, as every eager call makes one.
    run_op(py, n, "full", &[], &[], move |_, _| {
        leaf(Tensor::full(shape.clone(), value, dt), requires_grad)
    })
}

/// A tensor of zeros of the given size (`zeros(2, 3)` or `zeros((2, 3))`), the default dtype (`get_default_dtype()`) unless
/// `dtype` is given.
#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false))]
fn zeros(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    filled(py, args, size, 0.0, dtype, device, requires_grad)
}

/// A tensor of ones of the given size (`ones(2, 3)` or `ones((2, 3))`), the default dtype unless `dtype`
/// is given.
#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false))]
fn ones(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    filled(py, args, size, 1.0, dtype, device, requires_grad)
}

/// A new tensor of the given size, the default dtype unless `dtype` is given; ferrograd zeroes it rather
/// than leaving old memory in it.
#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, memory_format=None))]
fn empty(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    // Every layout is row-major here; a format only has to be one PyTorch names.
    crate::py::device::check_memory_format(memory_format, None)?;
    // Zeroed rather than uninitialised: as cheap here, and never leaks old memory.
    filled(py, args, size, 0.0, dtype, device, requires_grad)
}

/// A tensor of the given size filled with `fill_value`; the dtype follows the value (bool,
/// int64 or the default dtype) unless `dtype` is given.
#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false))]
fn full(
    py: Python<'_>,
    size: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let target = device::target(device)?;
    let dims = seq_of_ints(size)?;
    let s =
        as_scalar(fill_value).ok_or_else(|| PyTypeError::new_err("fill_value must be a number"))?;
    let dt = match opt_dtype(dtype)? {
        Some(d) => d,
        None => match s {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::default_float(),
        },
    };
    let shape = alloc_shape(&dims, dt)?;
    if target == Target::Meta {
        return device::meta_tensor(py, &shape, dt, requires_grad);
    }
    let v = s.to_f64();
    run_op(py, numel(&shape), "full", &[], &[], move |_, _| {
        leaf(Tensor::full(shape.clone(), v, dt), requires_grad)
    })
}

/// The identity matrix: an n x m (n x n by default) tensor with ones on the diagonal, the default dtype
/// unless `dtype` is given.
#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, device=None, requires_grad=false))]
fn eye(
    py: Python<'_>,
    n: i64,
    m: Option<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let target = device::target(device)?;
    let m = m.unwrap_or(n);
    for (name, v) in [("n", n), ("m", m)] {
        if v < 0 {
            return Err(PyRuntimeError::new_err(format!(
                "{name} must be greater or equal to 0, got {v}"
            )));
        }
    }
    let dt = opt_dtype(dtype)?.unwrap_or(DType::default_float());
    let shape = alloc_shape(&[n, m], dt)?;
    if target == Target::Meta {
        return device::meta_tensor(py, &shape, dt, requires_grad);
    }
    let (n, m) = (shape[0], shape[1]);
    run_op(py, n * m, "eye", &[], &[], move |_, _| {
        let t = crate::dispatch!(dt, T => {
            let mut v = crate::error::filled_vec(n * m, T::zero());
            for i in 0..n.min(m) {
                v[i * m + i] = T::one();
            }
            Tensor::from_vec(v, shape.clone())
        });
        leaf(t, requires_grad)
    })
}

/// The values from `start` (0 by default) up to but not including `end`, `step` apart, as a 1-D
/// tensor (int64 for integer arguments, else the default dtype).
#[pyfunction]
#[pyo3(signature = (start, end=None, step=None, *, dtype=None, device=None, requires_grad=false))]
fn arange(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let target = device::target(device)?;
    let num = |o: &Bound<'_, PyAny>| {
        as_scalar(o).ok_or_else(|| PyTypeError::new_err("arange expects numbers"))
    };
    let (s, e) = match end {
        Some(e) if !e.is_none() => (num(start)?, num(e)?),
        _ => (Scalar::Int(0), num(start)?),
    };
    let st = match step {
        Some(x) if !x.is_none() => num(x)?,
        _ => Scalar::Int(1),
    };
    let any_float = [s, e, st].iter().any(|x| matches!(x, Scalar::Float(_)));
    let dt = opt_dtype(dtype)?.unwrap_or(if any_float {
        DType::default_float()
    } else {
        DType::I64
    });
    let (s, e, st) = (s.to_f64(), e.to_f64(), st.to_f64());
    if !s.is_finite() || !e.is_finite() {
        return Err(PyRuntimeError::new_err(format!(
            "unsupported range: {} -> {}",
            py_float(s),
            py_float(e)
        )));
    }
    if !st.is_finite() {
        return Err(PyRuntimeError::new_err(format!(
            "step must be finite but got {}",
            py_float(st)
        )));
    }
    if st == 0.0 {
        return Err(PyRuntimeError::new_err("step must be nonzero"));
    }
    if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
        return Err(PyRuntimeError::new_err(
            "upper bound and larger bound inconsistent with step sign",
        ));
    }
    let len = ((e - s) / st).ceil();
    // NaN fails this too: a float-to-int cast would quietly make it 0.
    if !(0.0..i64::MAX as f64).contains(&len) {
        return Err(PyRuntimeError::new_err("invalid size, possible overflow?"));
    }
    let shape = alloc_shape(&[len as i64], dt)?;
    if target == Target::Meta {
        return device::meta_tensor(py, &shape, dt, requires_grad);
    }
    run_op(py, shape[0], "arange", &[], &[], move |_, _| {
        let mut v = crate::error::alloc_vec(shape[0]);
        v.extend((0..shape[0]).map(|i| s + i as f64 * st));
        leaf(
            ops::to_dtype(&Tensor::from_vec(v, shape.clone()), dt)?,
            requires_grad,
        )
    })
}

/// `steps` values evenly spaced from `start` to `end` inclusive, as a 1-D tensor (the default dtype
/// unless `dtype` is given).
#[pyfunction]
#[pyo3(signature = (start, end, steps, *, dtype=None, device=None, requires_grad=false))]
fn linspace(
    py: Python<'_>,
    start: f64,
    end: f64,
    steps: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let target = device::target(device)?;
    if steps < 0 {
        return Err(PyRuntimeError::new_err(
            "number of steps must be non-negative",
        ));
    }
    let dt = opt_dtype(dtype)?.unwrap_or(DType::default_float());
    let n = alloc_shape(&[steps], dt)?[0];
    if target == Target::Meta {
        return device::meta_tensor(py, &[n], dt, requires_grad);
    }
    let step = if n > 1 {
        (end - start) / (n - 1) as f64
    } else {
        0.0
    };
    let half = n / 2;
    run_op(py, n, "linspace", &[], &[], move |_, _| {
        if n == 1 {
            // PyTorch: a single step is `[start]`.
            let t = Tensor::from_vec(vec![start], Shape::from_slice(&[1]));
            return leaf(ops::to_dtype(&t, dt)?, requires_grad);
        }
        // Both halves count from their own end, as PyTorch does, so the last
        // value is exactly `end`.
        let mut v = crate::error::alloc_vec(n);
        v.extend((0..n).map(|i| {
            if i < half {
                start + step * i as f64
            } else {
                end - step * (n - 1 - i) as f64
            }
        }));
        leaf(
            ops::to_dtype(&Tensor::from_vec(v, Shape::from_slice(&[n])), dt)?,
            requires_grad,
        )
    })
}

/// A float the way Python prints it in messages (`inf`, `nan`, `0`).
fn py_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else {
        v.to_string()
    }
}

/// `*_like(t)`: the kind of tensor `t` is, filled by `kind`.
#[pyfunction]
#[pyo3(signature = (input, kind, fill=0.0, dtype=None, requires_grad=false))]
fn _like(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    kind: &str,
    fill: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "_like", (input, kind, fill, dtype, requires_grad), {
        let t = &crate::py::dispatch::tensor_arg(input, "*_like", "input", 1)?
            .get()
            .t;
        let dt = opt_dtype(dtype)?.unwrap_or(t.dtype());
        let n = t.numel();
        // The input is an input of the entry: its shape is read on each replay.
        let (name, normal) = match kind {
            "full" => ("full_like", None),
            "rand" => ("rand_like", Some(false)),
            "randn" => ("randn_like", Some(true)),
            other => return Err(PyValueError::new_err(format!("unknown fill {other}"))),
        };
        run_op(py, n, name, &[t], &[], move |t, _| {
            let out = match normal {
                None => Tensor::full(t[0].shape(), fill, dt),
                Some(normal) => ops::random_tensor(t[0].shape(), dt, normal)?,
            };
            leaf(out, requires_grad)
        })
    })
}

/// Adds the creation functions to `ferrograd._C`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(_like, m)?)?;
    Ok(())
}

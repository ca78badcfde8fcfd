//! Module-level functions: creation, ops, autograd entry points, settings.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::convert::{
    as_scalar, from_numpy_shared, operand, parse_size, seq_of_ints, tensor_from_data, to_shape,
    to_tensor_like, Operand,
};
use super::dtype::opt_dtype;
use super::errors::{guard, guard_nogil};
use super::tensor::{default_grad, wrap, PyTensor};
use crate::autograd::{self, BackwardRequest};
use crate::ops::{self, Scalar};
use crate::tensor::{checked_storage_numel, numel, DType, Element, Shape, Tensor};

fn t_of<'a>(obj: &'a Bound<'_, PyTensor>) -> &'a Tensor {
    &obj.get().t
}

fn finish(py: Python<'_>, t: Tensor, requires_grad: bool) -> PyResult<Py<PyAny>> {
    if requires_grad {
        t.set_requires_grad(true)?;
    }
    wrap(py, t)
}

/// Every tensor in a tensor-or-sequence argument.
pub fn tensor_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(vec![t.get().t.clone()]);
    }
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        let t = item
            .cast::<PyTensor>()
            .map_err(|_| PyTypeError::new_err("expected a Tensor or a sequence of Tensors"))?;
        out.push(t.get().t.clone());
    }
    Ok(out)
}

// ----- creation --------------------------------------------------------------

/// The shape of a tensor about to be allocated, checked before any memory is
/// requested: no negative size, and a byte size that fits in an `i64`.
fn alloc_shape(dims: &[i64], dtype: DType) -> PyResult<Shape> {
    let shape = to_shape(dims)?;
    checked_storage_numel(&shape, dtype.size())?;
    Ok(shape)
}

#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false))]
fn tensor(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let _ = device;
    let t = tensor_from_data(data, opt_dtype(dtype)?)?;
    finish(py, t, requires_grad)
}

#[pyfunction]
fn from_numpy(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    wrap(py, from_numpy_shared(array)?)
}

fn filled(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    value: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let dt = opt_dtype(dtype)?.unwrap_or(DType::DEFAULT_FLOAT);
    let shape = alloc_shape(&parse_size(args, size)?, dt)?;
    let t = guard_nogil(py, numel(&shape), || Ok(Tensor::full(shape, value, dt)))?;
    finish(py, t, requires_grad)
}

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
    let _ = device;
    filled(py, args, size, 0.0, dtype, requires_grad)
}

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
    let _ = device;
    filled(py, args, size, 1.0, dtype, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false))]
fn empty(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let _ = device;
    // Zeroed rather than uninitialised: as cheap here, and never leaks old memory.
    filled(py, args, size, 0.0, dtype, requires_grad)
}

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
    let _ = device;
    let dims = seq_of_ints(size)?;
    let s =
        as_scalar(fill_value).ok_or_else(|| PyTypeError::new_err("fill_value must be a number"))?;
    let dt = match opt_dtype(dtype)? {
        Some(d) => d,
        None => match s {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::DEFAULT_FLOAT,
        },
    };
    let shape = alloc_shape(&dims, dt)?;
    let t = guard_nogil(py, numel(&shape), || {
        Ok(Tensor::full(shape, s.to_f64(), dt))
    })?;
    finish(py, t, requires_grad)
}

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
    let _ = device;
    let m = m.unwrap_or(n);
    for (name, v) in [("n", n), ("m", m)] {
        if v < 0 {
            return Err(PyRuntimeError::new_err(format!(
                "{name} must be greater or equal to 0, got {v}"
            )));
        }
    }
    let dt = opt_dtype(dtype)?.unwrap_or(DType::DEFAULT_FLOAT);
    let shape = alloc_shape(&[n, m], dt)?;
    let (n, m) = (shape[0], shape[1]);
    let t = guard_nogil(py, n * m, || {
        Ok(crate::dispatch!(dt, T => {
            let mut v = crate::error::filled_vec(n * m, T::zero());
            for i in 0..n.min(m) {
                v[i * m + i] = T::one();
            }
            Tensor::from_vec(v, shape)
        }))
    })?;
    finish(py, t, requires_grad)
}

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
    let _ = device;
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
        DType::DEFAULT_FLOAT
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
    let t = guard_nogil(py, shape[0], || {
        let mut v = crate::error::alloc_vec(shape[0]);
        v.extend((0..shape[0]).map(|i| s + i as f64 * st));
        ops::to_dtype(&Tensor::from_vec(v, shape), dt)
    })?;
    finish(py, t, requires_grad)
}

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
    let _ = device;
    if steps < 0 {
        return Err(PyRuntimeError::new_err(
            "number of steps must be non-negative",
        ));
    }
    let dt = opt_dtype(dtype)?.unwrap_or(DType::DEFAULT_FLOAT);
    let n = alloc_shape(&[steps], dt)?[0];
    if n == 1 {
        // PyTorch: a single step is `[start]`.
        let t = ops::to_dtype(&Tensor::from_vec(vec![start], Shape::from_slice(&[1])), dt)?;
        return finish(py, t, requires_grad);
    }
    let step = if n > 1 {
        (end - start) / (n - 1) as f64
    } else {
        0.0
    };
    let half = n / 2;
    // Both halves count from their own end, as PyTorch does, so the last
    // value is exactly `end`.
    let t = guard_nogil(py, n, || {
        let mut v = crate::error::alloc_vec(n);
        v.extend((0..n).map(|i| {
            if i < half {
                start + step * i as f64
            } else {
                end - step * (n - 1 - i) as f64
            }
        }));
        ops::to_dtype(&Tensor::from_vec(v, Shape::from_slice(&[n])), dt)
    })?;
    finish(py, t, requires_grad)
}

fn random_tensor(shape: Shape, dt: DType, normal: bool) -> PyResult<Tensor> {
    guard(|| ops::random_tensor(shape, dt, normal))
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
    input: &Bound<'_, PyTensor>,
    kind: &str,
    fill: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let t = t_of(input);
    let shape = t.shape();
    let dt = opt_dtype(dtype)?.unwrap_or(t.dtype());
    let out = match kind {
        "full" => guard(|| Ok(Tensor::full(shape, fill, dt)))?,
        "rand" => random_tensor(shape, dt, false)?,
        "randn" => random_tensor(shape, dt, true)?,
        other => return Err(PyValueError::new_err(format!("unknown fill {other}"))),
    };
    finish(py, out, requires_grad)
}

// ----- ops -------------------------------------------------------------------

pub fn add_impl(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let b = to_tensor_like(other, Some(a))?;
    let alpha = match alpha {
        Some(al) if !al.is_none() => {
            Some(as_scalar(al).ok_or_else(|| PyTypeError::new_err("alpha must be a number"))?)
        }
        _ => None,
    };
    let work = a.numel().max(b.numel());
    wrap(
        py,
        guard_nogil(py, work, || match alpha {
            Some(s) => ops::add_alpha(a, &b, s),
            None => ops::add(a, &b),
        })?,
    )
}

pub fn sub_impl(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let b = to_tensor_like(other, Some(a))?;
    let alpha = match alpha {
        Some(al) if !al.is_none() => {
            Some(as_scalar(al).ok_or_else(|| PyTypeError::new_err("alpha must be a number"))?)
        }
        _ => None,
    };
    let work = a.numel().max(b.numel());
    wrap(
        py,
        guard_nogil(py, work, || match alpha {
            Some(s) => {
                ops::sub_check(a, &b)?;
                ops::sub(a, &ops::mul(&b, &s.wrap(&b))?)
            }
            None => ops::sub(a, &b),
        })?,
    )
}

/// The first operand of a functional op: a tensor, or a number when the
/// other one is a tensor (`torch.add(1, t)`).
fn lhs(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    match operand(input) {
        Some(Operand::Tensor(t)) => Ok(t),
        Some(Operand::Scalar(s)) => match operand(other) {
            Some(Operand::Tensor(o)) => Ok(s.wrap(&o)),
            _ => to_tensor_like(input, None),
        },
        None => to_tensor_like(input, None),
    }
}

#[pyfunction]
#[pyo3(name = "add", signature = (input, other, *, alpha=None))]
fn add_fn(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    add_impl(py, &lhs(input, other)?, other, alpha)
}

#[pyfunction]
#[pyo3(name = "sub", signature = (input, other, *, alpha=None))]
fn sub_fn(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    sub_impl(py, &lhs(input, other)?, other, alpha)
}

macro_rules! binary_fn {
    ($pyname:literal, $fname:ident, $tt:path) => {
        #[pyfunction]
        #[pyo3(name = $pyname)]
        fn $fname(
            py: Python<'_>,
            input: &Bound<'_, PyAny>,
            other: &Bound<'_, PyAny>,
        ) -> PyResult<Py<PyAny>> {
            let a = lhs(input, other)?;
            let b = to_tensor_like(other, Some(&a))?;
            let work = a.numel().max(b.numel());
            wrap(py, guard_nogil(py, work, || $tt(&a, &b))?)
        }
    };
}

binary_fn!("mul", mul_fn, ops::mul);
binary_fn!("div", div_fn, ops::div);
/// `pow(tensor, tensor)` (`PowBackward1`), `pow(tensor, number)`
/// (`PowBackward0`) and `pow(number, tensor)` (`PowBackward2`), as PyTorch's
/// three overloads.
#[pyfunction]
#[pyo3(name = "pow")]
fn pow_fn(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    exponent: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    match (operand(input), operand(exponent)) {
        (Some(Operand::Tensor(a)), Some(Operand::Scalar(e))) => {
            wrap(py, guard_nogil(py, a.numel(), || ops::pow_scalar(&a, e))?)
        }
        (Some(Operand::Scalar(s)), Some(Operand::Tensor(e))) => {
            wrap(py, guard_nogil(py, e.numel(), || ops::rpow_scalar(&e, s))?)
        }
        _ => {
            let a = lhs(input, exponent)?;
            let b = to_tensor_like(exponent, Some(&a))?;
            let work = a.numel().max(b.numel());
            wrap(py, guard_nogil(py, work, || ops::pow(&a, &b))?)
        }
    }
}
binary_fn!("matmul", matmul_fn, ops::matmul);
binary_fn!("mm", mm_fn, ops::mm);

/// `mv(input, vec)`.
#[pyfunction]
#[pyo3(name = "mv")]
fn mv_fn(py: Python<'_>, input: &Bound<'_, PyAny>, vec: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let a = lhs(input, vec)?;
    let v = to_tensor_like(vec, Some(&a))?;
    let work = a.numel().max(v.numel());
    wrap(py, guard_nogil(py, work, || ops::mv(&a, &v))?)
}
binary_fn!("dot", dot_fn, ops::dot);
binary_fn!("eq", eq_fn, ops::eq);
binary_fn!("ne", ne_fn, ops::ne);
binary_fn!("lt", lt_fn, ops::lt);
binary_fn!("le", le_fn, ops::le);
binary_fn!("gt", gt_fn, ops::gt);
binary_fn!("ge", ge_fn, ops::ge);
binary_fn!("logical_and", logical_and_fn, ops::logical_and);
binary_fn!("logical_or", logical_or_fn, ops::logical_or);

macro_rules! unary_fn {
    ($pyname:literal, $fname:ident, $op:path) => {
        #[pyfunction]
        #[pyo3(name = $pyname)]
        fn $fname(py: Python<'_>, input: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
            let a = t_of(input);
            wrap(py, guard_nogil(py, a.numel(), || $op(a))?)
        }
    };
}

unary_fn!("neg", neg_fn, ops::neg);
unary_fn!("exp", exp_fn, ops::exp);
unary_fn!("log", log_fn, ops::log);
unary_fn!("sin", sin_fn, ops::sin);
unary_fn!("cos", cos_fn, ops::cos);
unary_fn!("tanh", tanh_fn, ops::tanh);
unary_fn!("sigmoid", sigmoid_fn, ops::sigmoid);
unary_fn!("relu", relu_fn, ops::relu);
unary_fn!("sqrt", sqrt_fn, ops::sqrt);
unary_fn!("abs", abs_fn, ops::abs);
unary_fn!("sign", sign_fn, ops::sign);
unary_fn!("logical_not", logical_not_fn, ops::logical_not);
unary_fn!("all", all_fn, ops::all);
unary_fn!("any", any_fn, ops::any);
unary_fn!("clone", clone_fn, ops::clone);

#[pyfunction]
#[pyo3(name = "where")]
fn where_fn(
    py: Python<'_>,
    condition: &Bound<'_, PyTensor>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let x = lhs(input, other)?;
    let y = to_tensor_like(other, Some(&x))?;
    wrap(py, guard(|| ops::where_(t_of(condition), &x, &y))?)
}

#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean"))]
fn mse_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    let b = to_tensor_like(target, Some(a))?;
    let r = ops::Reduction::parse(reduction)?;
    wrap(py, guard_nogil(py, a.numel(), || ops::mse_loss(a, &b, r))?)
}

// ----- more elementwise, reductions, shape and index ops ---------------------------------------

unary_fn!("expm1", expm1_fn, ops::expm1);
unary_fn!("log1p", log1p_fn, ops::log1p);
unary_fn!("log2", log2_fn, ops::log2);
unary_fn!("rsqrt", rsqrt_fn, ops::rsqrt);
unary_fn!("tan", tan_fn, ops::tan);
unary_fn!("reciprocal", reciprocal_fn, ops::reciprocal);
unary_fn!("square", square_fn, ops::square);
unary_fn!("erf", erf_fn, ops::erf);
unary_fn!("floor", floor_fn, ops::floor);
unary_fn!("ceil", ceil_fn, ops::ceil);
unary_fn!("trunc", trunc_fn, ops::trunc);
unary_fn!("isnan", isnan_fn, ops::isnan);
unary_fn!("isinf", isinf_fn, ops::isinf);
unary_fn!("isfinite", isfinite_fn, ops::isfinite);
unary_fn!("silu", silu_fn, ops::silu);
unary_fn!("trace", trace_fn, ops::trace);

binary_fn!("maximum", maximum_fn, ops::maximum);
binary_fn!("minimum", minimum_fn, ops::minimum);
binary_fn!("logical_xor", logical_xor_fn, ops::logical_xor);
binary_fn!("bmm", bmm_fn, ops::bmm);
binary_fn!("outer", outer_fn, ops::outer);

/// Module functions whose signature is the Tensor method's with `input`
/// first: they call the method, so both spellings share one parser.
macro_rules! method_fn {
    ($pyname:literal, $fname:ident) => {
        #[pyfunction]
        #[pyo3(name = $pyname, signature = (input, *args, **kwargs))]
        fn $fname<'py>(
            input: &Bound<'py, PyTensor>,
            args: &Bound<'py, PyTuple>,
            kwargs: Option<&Bound<'py, PyDict>>,
        ) -> PyResult<Bound<'py, PyAny>> {
            input.call_method($pyname, args, kwargs)
        }
    };
}

method_fn!("round", round_fn);
method_fn!("clamp", clamp_fn);
method_fn!("clip", clip_fn);
method_fn!("isclose", isclose_fn);
method_fn!("allclose", allclose_fn);
method_fn!("prod", prod_fn);
method_fn!("var", var_fn);
method_fn!("std", std_fn);
method_fn!("max", max_fn);
method_fn!("min", min_fn);
method_fn!("amax", amax_fn);
method_fn!("amin", amin_fn);
method_fn!("argmax", argmax_fn);
method_fn!("argmin", argmin_fn);
method_fn!("logsumexp", logsumexp_fn);
method_fn!("cumsum", cumsum_fn);
method_fn!("softmax", softmax_fn);
method_fn!("log_softmax", log_softmax_fn);
method_fn!("unflatten", unflatten_fn);
method_fn!("broadcast_to", broadcast_to_fn);
method_fn!("flip", flip_fn);
method_fn!("narrow", narrow_fn);
method_fn!("movedim", movedim_fn);
method_fn!("diagonal", diagonal_fn);
method_fn!("swapaxes", swapaxes_fn);
method_fn!("permute", permute_fn);
method_fn!("split", split_fn);
method_fn!("chunk", chunk_fn);
method_fn!("unbind", unbind_fn);
method_fn!("gather", gather_fn);
method_fn!("scatter_add", scatter_add_fn);
method_fn!("scatter", scatter_fn);
method_fn!("index_select", index_select_fn);
method_fn!("masked_fill", masked_fill_fn);
method_fn!("masked_select", masked_select_fn);
method_fn!("nonzero", nonzero_fn);

#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn cat(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors)?;
    let work = ts.iter().map(|t| t.numel()).sum();
    wrap(py, guard_nogil(py, work, || ops::cat(&ts, dim))?)
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn stack(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors)?;
    let work = ts.iter().map(|t| t.numel()).sum();
    wrap(py, guard_nogil(py, work, || ops::stack(&ts, dim))?)
}

/// `einsum("ij,jk->ik", a, b)` or `einsum("ij,jk->ik", [a, b])`.
#[pyfunction]
#[pyo3(signature = (equation, *operands))]
fn einsum(py: Python<'_>, equation: &str, operands: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    let ts = if operands.len() == 1 && operands.get_item(0)?.cast::<PyTensor>().is_err() {
        tensor_list(&operands.get_item(0)?)?
    } else {
        tensor_list(operands.as_any())?
    };
    wrap(py, guard(|| ops::einsum(equation, &ts))?)
}

#[pyfunction]
#[pyo3(signature = (*tensors))]
fn broadcast_tensors(py: Python<'_>, tensors: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors.as_any())?;
    let out = guard(|| {
        let mut shape = Shape::new();
        for t in &ts {
            shape = crate::tensor::broadcast_shapes(&shape, &t.shape())?;
        }
        ts.iter()
            .map(|t| ops::expand(t, &shape))
            .collect::<crate::Result<Vec<_>>>()
    })?;
    super::tensor::tensor_tuple(py, out)
}

// ----- nn.functional -----------------------------------------------------------------------------

fn opt_tensor(o: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Tensor>> {
    match o {
        Some(o) if !o.is_none() => Ok(Some(
            o.cast::<PyTensor>()
                .map_err(|_| PyTypeError::new_err("expected a Tensor or None"))?
                .get()
                .t
                .clone(),
        )),
        _ => Ok(None),
    }
}

#[pyfunction]
#[pyo3(signature = (input, min_val=-1.0, max_val=1.0))]
fn hardtanh(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    min_val: f64,
    max_val: f64,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    wrap(
        py,
        guard_nogil(py, a.numel(), || ops::hardtanh(a, min_val, max_val))?,
    )
}

#[pyfunction]
#[pyo3(signature = (input, negative_slope=0.01))]
fn leaky_relu(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    negative_slope: f64,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    wrap(
        py,
        guard_nogil(py, a.numel(), || ops::leaky_relu(a, negative_slope))?,
    )
}

/// `leaky_relu_(input, negative_slope)`: in place, recorded with a rule on
/// the result (PyTorch's `LeakyReluBackward1`).
#[pyfunction]
#[pyo3(signature = (input, negative_slope=0.01))]
fn leaky_relu_<'py>(
    input: &Bound<'py, PyTensor>,
    negative_slope: f64,
) -> PyResult<Bound<'py, PyTensor>> {
    let a = t_of(input);
    guard(|| ops::apply_inplace(a, || ops::leaky_relu_result(a, negative_slope)))?;
    Ok(input.clone())
}

/// `elu_(input, alpha)`: in place, recorded as PyTorch's `EluBackward1`.
#[pyfunction]
#[pyo3(signature = (input, alpha=1.0))]
fn elu_<'py>(input: &Bound<'py, PyTensor>, alpha: f64) -> PyResult<Bound<'py, PyTensor>> {
    let a = t_of(input);
    guard(|| ops::apply_inplace(a, || ops::elu_result(a, alpha)))?;
    Ok(input.clone())
}

#[pyfunction]
#[pyo3(signature = (input, alpha=1.0))]
fn elu(py: Python<'_>, input: &Bound<'_, PyTensor>, alpha: f64) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    wrap(py, guard_nogil(py, a.numel(), || ops::elu(a, alpha))?)
}

#[pyfunction]
#[pyo3(signature = (input, approximate="none"))]
fn gelu(py: Python<'_>, input: &Bound<'_, PyTensor>, approximate: &str) -> PyResult<Py<PyAny>> {
    let tanh = match approximate {
        "none" => false,
        "tanh" => true,
        other => {
            return Err(PyRuntimeError::new_err(format!(
                "approximate argument must be either none or tanh, got {other}"
            )))
        }
    };
    let a = t_of(input);
    wrap(py, guard_nogil(py, a.numel(), || ops::gelu(a, tanh))?)
}

#[pyfunction]
#[pyo3(signature = (input, beta=1.0, threshold=20.0))]
fn softplus(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    beta: f64,
    threshold: f64,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    wrap(
        py,
        guard_nogil(py, a.numel(), || ops::softplus(a, beta, threshold))?,
    )
}

#[pyfunction]
#[pyo3(signature = (input, p=0.5, training=true))]
fn dropout(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    p: f64,
    training: bool,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    wrap(
        py,
        guard_nogil(py, a.numel(), || ops::dropout(a, p, training))?,
    )
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias=None))]
fn linear(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    bias: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let (x, w) = (t_of(input), t_of(weight));
    let b = opt_tensor(bias)?;
    let work = x
        .numel()
        .saturating_mul(w.shape().first().copied().unwrap_or(1));
    wrap(py, guard_nogil(py, work, || ops::linear(x, w, b.as_ref()))?)
}

#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean"))]
fn l1_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    let b = to_tensor_like(target, Some(a))?;
    let r = ops::Reduction::parse(reduction)?;
    wrap(py, guard_nogil(py, a.numel(), || ops::l1_loss(a, &b, r))?)
}

#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean", beta=1.0))]
fn smooth_l1_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
    beta: f64,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    let b = to_tensor_like(target, Some(a))?;
    let r = ops::Reduction::parse(reduction)?;
    wrap(
        py,
        guard_nogil(py, a.numel(), || ops::smooth_l1_loss(a, &b, r, beta))?,
    )
}

#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean", delta=1.0))]
fn huber_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
    delta: f64,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    let b = to_tensor_like(target, Some(a))?;
    let r = ops::Reduction::parse(reduction)?;
    wrap(
        py,
        guard_nogil(py, a.numel(), || ops::huber_loss(a, &b, r, delta))?,
    )
}

#[pyfunction]
#[pyo3(signature = (input, target, weight=None, reduction="mean"))]
fn binary_cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    reduction: &str,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    let b = to_tensor_like(target, Some(a))?;
    let w = opt_tensor(weight)?;
    let r = ops::Reduction::parse(reduction)?;
    wrap(
        py,
        guard_nogil(py, a.numel(), || {
            ops::binary_cross_entropy(a, &b, w.as_ref(), r)
        })?,
    )
}

#[pyfunction]
#[pyo3(signature = (input, target, weight=None, reduction="mean", pos_weight=None))]
fn binary_cross_entropy_with_logits(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    reduction: &str,
    pos_weight: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let a = t_of(input);
    let b = to_tensor_like(target, Some(a))?;
    let (w, pw) = (opt_tensor(weight)?, opt_tensor(pos_weight)?);
    let r = ops::Reduction::parse(reduction)?;
    wrap(
        py,
        guard_nogil(py, a.numel(), || {
            ops::binary_cross_entropy_with_logits(a, &b, w.as_ref(), pw.as_ref(), r)
        })?,
    )
}

#[pyfunction]
#[pyo3(signature = (input, target, weight=None, ignore_index=-100, reduction="mean"))]
fn nll_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    weight: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduction: &str,
) -> PyResult<Py<PyAny>> {
    let (a, t) = (t_of(input), t_of(target));
    let w = opt_tensor(weight)?;
    let r = ops::Reduction::parse(reduction)?;
    wrap(
        py,
        guard_nogil(py, a.numel(), || {
            ops::nll_loss(a, t, w.as_ref(), ignore_index, r)
        })?,
    )
}

#[pyfunction]
#[pyo3(signature = (input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0))]
fn cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    weight: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduction: &str,
    label_smoothing: f64,
) -> PyResult<Py<PyAny>> {
    let (a, t) = (t_of(input), t_of(target));
    let w = opt_tensor(weight)?;
    let r = ops::Reduction::parse(reduction)?;
    wrap(
        py,
        guard_nogil(py, a.numel(), || {
            ops::cross_entropy(a, t, w.as_ref(), ignore_index, r, label_smoothing)
        })?,
    )
}

// ----- autograd ----------------------------------------------------------------

/// The engine entry behind `autograd.backward` and `autograd.grad`.
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors, retain_graph, create_graph, inputs, accumulate, allow_unused=false, materialize_grads=false))]
#[allow(clippy::too_many_arguments)]
fn _run_backward(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    grad_tensors: &Bound<'_, PyAny>,
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: &Bound<'_, PyAny>,
    accumulate: bool,
    allow_unused: bool,
    materialize_grads: bool,
) -> PyResult<Py<PyAny>> {
    let roots = tensor_list(tensors)?;
    let gl: Vec<Bound<'_, PyAny>> = if grad_tensors.is_none() {
        vec![]
    } else if grad_tensors.cast::<PyTensor>().is_ok() {
        vec![grad_tensors.clone()]
    } else {
        grad_tensors.try_iter()?.collect::<PyResult<_>>()?
    };
    if !gl.is_empty() && gl.len() != roots.len() {
        return Err(PyRuntimeError::new_err(format!(
            "grad can be implicitly created only for scalar outputs; got {} gradients for {} outputs",
            gl.len(),
            roots.len()
        )));
    }
    let mut grads = Vec::with_capacity(roots.len());
    for (i, r) in roots.iter().enumerate() {
        match gl.get(i) {
            Some(g) if !g.is_none() => grads.push(to_tensor_like(g, Some(r))?),
            _ => grads.push(default_grad(r)?),
        }
    }
    let inputs = if inputs.is_none() {
        None
    } else {
        Some(tensor_list(inputs)?)
    };
    let targets = inputs.clone().unwrap_or_default();
    if !accumulate && targets.is_empty() {
        return Err(PyRuntimeError::new_err("grad requires non-empty inputs."));
    }
    let req = BackwardRequest {
        roots,
        grads,
        inputs,
        retain_graph: retain_graph.unwrap_or(create_graph),
        create_graph,
        accumulate,
    };
    let results = py.detach(|| guard(|| autograd::run_backward(req)))?;
    if accumulate {
        return Ok(py.None());
    }
    let mut out = Vec::with_capacity(results.len());
    for (r, t) in results.into_iter().zip(&targets) {
        match r {
            Some(g) => out.push(wrap(py, g)?),
            None if materialize_grads => out.push(wrap(py, Tensor::zeros(t.shape(), t.dtype()))?),
            None if allow_unused => out.push(py.None()),
            None => {
                return Err(PyRuntimeError::new_err(
                    "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.",
                ))
            }
        }
    }
    Ok(PyTuple::new(py, out)?.into_any().unbind())
}

#[pyfunction]
fn is_grad_enabled() -> bool {
    autograd::is_grad_enabled()
}

#[pyfunction]
fn _set_grad_enabled(mode: bool) {
    autograd::set_grad_enabled(mode)
}

#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    autograd::is_inference_mode()
}

#[pyfunction]
fn _set_inference_mode(mode: bool) {
    autograd::set_inference_mode(mode)
}

/// `input.op_(...)` for an op written in Python (`F.relu(x, inplace=True)`):
/// `compute()` gives the result, which is written into `input` as the
/// built-in in-place ops do, so a node of `compute` that saved `input`
/// keeps its value from before the write.
#[pyfunction]
fn _apply_inplace<'py>(
    input: &Bound<'py, PyTensor>,
    compute: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTensor>> {
    let t = &input.get().t;
    guard(|| {
        ops::apply_inplace(t, || {
            let r = compute.call0().map_err(super::errors::external)?;
            let r = r.cast::<PyTensor>().map_err(|_| {
                crate::error::Error::type_error("_apply_inplace: compute() must return a Tensor")
            })?;
            Ok(r.get().t.clone())
        })
    })?;
    Ok(input.clone())
}

#[pyfunction]
fn _live_nodes() -> usize {
    autograd::live_nodes()
}

#[pyfunction]
fn set_num_threads(n: i64) -> PyResult<()> {
    if n <= 0 {
        return Err(PyRuntimeError::new_err(
            "set_num_threads expects a positive integer",
        ));
    }
    Ok(crate::kernels::parallel::set_num_threads(n as usize)?)
}

#[pyfunction]
fn get_num_threads() -> usize {
    crate::kernels::parallel::get_num_threads()
}

#[pyfunction]
#[pyo3(signature = (t, dim=None, keepdim=false))]
fn _sum_dims(
    py: Python<'_>,
    t: &Bound<'_, PyTensor>,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
) -> PyResult<Py<PyAny>> {
    let a = t_of(t);
    let dims = match dim {
        Some(d) if !d.is_none() => Some(seq_of_ints(d)?),
        _ => None,
    };
    wrap(
        py,
        guard_nogil(py, a.numel(), || ops::sum(a, dims.as_deref(), keepdim))?,
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(_apply_inplace, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(_like, m)?)?;
    m.add_function(wrap_pyfunction!(add_fn, m)?)?;
    m.add_function(wrap_pyfunction!(sub_fn, m)?)?;
    m.add_function(wrap_pyfunction!(mul_fn, m)?)?;
    m.add_function(wrap_pyfunction!(div_fn, m)?)?;
    m.add_function(wrap_pyfunction!(pow_fn, m)?)?;
    m.add_function(wrap_pyfunction!(matmul_fn, m)?)?;
    m.add_function(wrap_pyfunction!(mm_fn, m)?)?;
    m.add_function(wrap_pyfunction!(mv_fn, m)?)?;
    m.add_function(wrap_pyfunction!(dot_fn, m)?)?;
    m.add_function(wrap_pyfunction!(eq_fn, m)?)?;
    m.add_function(wrap_pyfunction!(ne_fn, m)?)?;
    m.add_function(wrap_pyfunction!(lt_fn, m)?)?;
    m.add_function(wrap_pyfunction!(le_fn, m)?)?;
    m.add_function(wrap_pyfunction!(gt_fn, m)?)?;
    m.add_function(wrap_pyfunction!(ge_fn, m)?)?;
    m.add_function(wrap_pyfunction!(logical_and_fn, m)?)?;
    m.add_function(wrap_pyfunction!(logical_or_fn, m)?)?;
    m.add_function(wrap_pyfunction!(neg_fn, m)?)?;
    m.add_function(wrap_pyfunction!(exp_fn, m)?)?;
    m.add_function(wrap_pyfunction!(log_fn, m)?)?;
    m.add_function(wrap_pyfunction!(sin_fn, m)?)?;
    m.add_function(wrap_pyfunction!(cos_fn, m)?)?;
    m.add_function(wrap_pyfunction!(tanh_fn, m)?)?;
    m.add_function(wrap_pyfunction!(sigmoid_fn, m)?)?;
    m.add_function(wrap_pyfunction!(relu_fn, m)?)?;
    m.add_function(wrap_pyfunction!(sqrt_fn, m)?)?;
    m.add_function(wrap_pyfunction!(abs_fn, m)?)?;
    m.add_function(wrap_pyfunction!(sign_fn, m)?)?;
    m.add_function(wrap_pyfunction!(logical_not_fn, m)?)?;
    m.add_function(wrap_pyfunction!(all_fn, m)?)?;
    m.add_function(wrap_pyfunction!(any_fn, m)?)?;
    m.add_function(wrap_pyfunction!(clone_fn, m)?)?;
    m.add_function(wrap_pyfunction!(where_fn, m)?)?;
    m.add_function(wrap_pyfunction!(mse_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(_live_nodes, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_sum_dims, m)?)?;
    m.add_function(wrap_pyfunction!(expm1_fn, m)?)?;
    m.add_function(wrap_pyfunction!(log1p_fn, m)?)?;
    m.add_function(wrap_pyfunction!(log2_fn, m)?)?;
    m.add_function(wrap_pyfunction!(rsqrt_fn, m)?)?;
    m.add_function(wrap_pyfunction!(tan_fn, m)?)?;
    m.add_function(wrap_pyfunction!(reciprocal_fn, m)?)?;
    m.add_function(wrap_pyfunction!(square_fn, m)?)?;
    m.add_function(wrap_pyfunction!(erf_fn, m)?)?;
    m.add_function(wrap_pyfunction!(floor_fn, m)?)?;
    m.add_function(wrap_pyfunction!(ceil_fn, m)?)?;
    m.add_function(wrap_pyfunction!(trunc_fn, m)?)?;
    m.add_function(wrap_pyfunction!(isnan_fn, m)?)?;
    m.add_function(wrap_pyfunction!(isinf_fn, m)?)?;
    m.add_function(wrap_pyfunction!(isfinite_fn, m)?)?;
    m.add_function(wrap_pyfunction!(silu_fn, m)?)?;
    m.add_function(wrap_pyfunction!(maximum_fn, m)?)?;
    m.add_function(wrap_pyfunction!(minimum_fn, m)?)?;
    m.add_function(wrap_pyfunction!(logical_xor_fn, m)?)?;
    m.add_function(wrap_pyfunction!(bmm_fn, m)?)?;
    m.add_function(wrap_pyfunction!(outer_fn, m)?)?;
    m.add_function(wrap_pyfunction!(round_fn, m)?)?;
    m.add_function(wrap_pyfunction!(clamp_fn, m)?)?;
    m.add_function(wrap_pyfunction!(clip_fn, m)?)?;
    m.add_function(wrap_pyfunction!(isclose_fn, m)?)?;
    m.add_function(wrap_pyfunction!(allclose_fn, m)?)?;
    m.add_function(wrap_pyfunction!(prod_fn, m)?)?;
    m.add_function(wrap_pyfunction!(var_fn, m)?)?;
    m.add_function(wrap_pyfunction!(std_fn, m)?)?;
    m.add_function(wrap_pyfunction!(max_fn, m)?)?;
    m.add_function(wrap_pyfunction!(min_fn, m)?)?;
    m.add_function(wrap_pyfunction!(amax_fn, m)?)?;
    m.add_function(wrap_pyfunction!(amin_fn, m)?)?;
    m.add_function(wrap_pyfunction!(argmax_fn, m)?)?;
    m.add_function(wrap_pyfunction!(argmin_fn, m)?)?;
    m.add_function(wrap_pyfunction!(logsumexp_fn, m)?)?;
    m.add_function(wrap_pyfunction!(cumsum_fn, m)?)?;
    m.add_function(wrap_pyfunction!(softmax_fn, m)?)?;
    m.add_function(wrap_pyfunction!(log_softmax_fn, m)?)?;
    m.add_function(wrap_pyfunction!(unflatten_fn, m)?)?;
    m.add_function(wrap_pyfunction!(broadcast_to_fn, m)?)?;
    m.add_function(wrap_pyfunction!(flip_fn, m)?)?;
    m.add_function(wrap_pyfunction!(narrow_fn, m)?)?;
    m.add_function(wrap_pyfunction!(movedim_fn, m)?)?;
    m.add_function(wrap_pyfunction!(diagonal_fn, m)?)?;
    m.add_function(wrap_pyfunction!(trace_fn, m)?)?;
    m.add_function(wrap_pyfunction!(swapaxes_fn, m)?)?;
    m.add_function(wrap_pyfunction!(permute_fn, m)?)?;
    m.add_function(wrap_pyfunction!(split_fn, m)?)?;
    m.add_function(wrap_pyfunction!(chunk_fn, m)?)?;
    m.add_function(wrap_pyfunction!(unbind_fn, m)?)?;
    m.add_function(wrap_pyfunction!(gather_fn, m)?)?;
    m.add_function(wrap_pyfunction!(scatter_add_fn, m)?)?;
    m.add_function(wrap_pyfunction!(scatter_fn, m)?)?;
    m.add_function(wrap_pyfunction!(index_select_fn, m)?)?;
    m.add_function(wrap_pyfunction!(masked_fill_fn, m)?)?;
    m.add_function(wrap_pyfunction!(masked_select_fn, m)?)?;
    m.add_function(wrap_pyfunction!(nonzero_fn, m)?)?;
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(einsum, m)?)?;
    m.add_function(wrap_pyfunction!(broadcast_tensors, m)?)?;
    m.add_function(wrap_pyfunction!(leaky_relu, m)?)?;
    m.add_function(wrap_pyfunction!(hardtanh, m)?)?;
    m.add_function(wrap_pyfunction!(elu, m)?)?;
    m.add_function(wrap_pyfunction!(elu_, m)?)?;
    m.add_function(wrap_pyfunction!(leaky_relu_, m)?)?;
    m.add_function(wrap_pyfunction!(gelu, m)?)?;
    m.add_function(wrap_pyfunction!(softplus, m)?)?;
    m.add_function(wrap_pyfunction!(dropout, m)?)?;
    m.add_function(wrap_pyfunction!(linear, m)?)?;
    m.add_function(wrap_pyfunction!(l1_loss, m)?)?;
    m.add_function(wrap_pyfunction!(smooth_l1_loss, m)?)?;
    m.add_function(wrap_pyfunction!(huber_loss, m)?)?;
    m.add_function(wrap_pyfunction!(binary_cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(binary_cross_entropy_with_logits, m)?)?;
    m.add_function(wrap_pyfunction!(nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(cross_entropy, m)?)?;
    let _ = PyList::empty(m.py());
    Ok(())
}

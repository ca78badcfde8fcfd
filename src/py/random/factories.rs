//! The sampling creation functions: `rand`, `randn`, `randint`, `randperm`,
//! `normal` and the `*_like` forms.

use super::*;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::ops;
use crate::py::convert::{int_arg, parse_size, seq_of_ints, to_shape};
use crate::py::dtype::opt_dtype;
use crate::py::tensor::{wrap, PyTensor};
use crate::random::{self as rng, CpuGenerator};
use crate::tensor::{checked_storage_numel, numel, DType, Shape, Tensor};

pub(super) fn alloc_shape(dims: &[i64], dtype: DType) -> PyResult<Shape> {
    let shape = to_shape(dims)?;
    checked_storage_numel(&shape, dtype.size())?;
    Ok(shape)
}

/// Refuses `requires_grad` for a sampled tensor of an integer dtype.
pub(super) fn check_grad(dt: DType, requires_grad: bool) -> PyResult<()> {
    if requires_grad && !dt.is_float() {
        return Err(PyRuntimeError::new_err(
            "Only Tensors of floating point and complex dtype can require gradients",
        ));
    }
    Ok(())
}

/// A sampled tensor, a leaf that requires grad if asked.
pub(super) fn leaf(t: Tensor, requires_grad: bool) -> crate::Result<Tensor> {
    if requires_grad {
        t.set_requires_grad(true)?;
    }
    Ok(t)
}

/// The shared arguments of `rand` and `randn`: a float tensor of the given size
/// filled by one sampler from the chosen generator.
pub(super) struct FloatFactory<'a, 'py> {
    args: &'a Bound<'py, PyTuple>,
    size: Option<&'a Bound<'py, PyAny>>,
    dtype: Option<&'a Bound<'py, PyAny>>,
    device: Option<&'a Bound<'py, PyAny>>,
    generator: Option<&'a Bound<'py, PyAny>>,
    requires_grad: bool,
}

impl FloatFactory<'_, '_> {
    fn draw(
        self,
        py: Python<'_>,
        name: &'static str,
        sample: impl Fn(&mut CpuGenerator, Shape, DType) -> crate::Result<Tensor>
            + Send
            + Sync
            + 'static,
    ) -> PyResult<Py<PyAny>> {
        let target = crate::py::device::target(self.device)?;
        let gen = gen_arg(self.generator, name)?;
        let dt = opt_dtype(self.dtype)?.unwrap_or(DType::default_float());
        let shape = alloc_shape(&parse_size(self.args, self.size)?, dt)?;
        if target == crate::py::device::Target::Meta {
            return crate::py::device::meta_tensor(py, &shape, dt, self.requires_grad);
        }
        let n = numel(&shape);
        let rg = self.requires_grad;
        check_grad(dt, rg)?;
        let t = draw(py, name, n, gen, &[], move |g, _| {
            leaf(sample(g, shape.clone(), dt)?, rg)
        })?;
        wrap(py, t)
    }
}

/// A tensor of the given size filled with uniform samples from [0, 1), drawn
/// as PyTorch's CPU generator draws them (same seed, same numbers).
#[pyfunction]
#[pyo3(signature = (*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=false, pin_memory=false, generator=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn rand(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let _ = (out, layout, pin_memory);
    let spec = FloatFactory {
        args,
        size,
        dtype,
        device,
        generator,
        requires_grad,
    };
    spec.draw(py, "rand", |g, shape, dt| {
        rng::uniform(g, shape, dt, 0.0, 1.0)
    })
}

/// A tensor of the given size filled with standard-normal samples, drawn as
/// PyTorch's CPU generator draws them (same seed, same numbers).
#[pyfunction]
#[pyo3(signature = (*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=false, pin_memory=false, generator=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn randn(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let _ = (out, layout, pin_memory);
    let spec = FloatFactory {
        args,
        size,
        dtype,
        device,
        generator,
        requires_grad,
    };
    spec.draw(py, "randn", |g, shape, dt| {
        rng::normal(g, shape, dt, 0.0, 1.0, true)
    })
}

pub(crate) fn check_range(low: i64, high: i64) -> PyResult<u64> {
    if high <= low {
        return Err(PyRuntimeError::new_err(format!(
            "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )));
    }
    // The span of [i64::MIN, i64::MAX) does not fit in an i64; in two's
    // complement it is still right as a u64, and so is adding it back.
    Ok(high.wrapping_sub(low) as u64)
}

/// `randint(high, size)` or `randint(low, high, size)`.
/// `randint(high, size)` or `randint(low, high, size)`: integers drawn uniformly
/// from [low, high), as PyTorch draws them.
#[pyfunction]
#[pyo3(signature = (*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
pub(super) fn randint(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<Py<PyAny>> {
    let _ = (out, layout, pin_memory);
    let target = crate::py::device::target(device)?;
    let ints: Vec<Bound<'_, PyAny>> = args.iter().collect();
    let (low, high, size) = match (ints.len(), size) {
        (1, Some(s)) => (0, int_arg(&ints[0])?, seq_of_ints(s)?),
        (2, Some(s)) => (int_arg(&ints[0])?, int_arg(&ints[1])?, seq_of_ints(s)?),
        (2, None) => (0, int_arg(&ints[0])?, seq_of_ints(&ints[1])?),
        (3, None) => (
            int_arg(&ints[0])?,
            int_arg(&ints[1])?,
            seq_of_ints(&ints[2])?,
        ),
        _ => {
            return Err(PyTypeError::new_err(
                "randint(low=0, high, size) expects high and size",
            ))
        }
    };
    let range = check_range(low, high)?;
    let gen = gen_arg(generator, "randint")?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::I64);
    let shape = alloc_shape(&size, DType::I64)?;
    if target == crate::py::device::Target::Meta {
        return crate::py::device::meta_tensor(py, &shape, dt, requires_grad);
    }
    let n = numel(&shape);
    check_grad(dt, requires_grad)?;
    let t = draw(py, "randint", n, gen, &[], move |g, _| {
        leaf(
            rng::randint(g, low, range, shape.clone(), dt),
            requires_grad,
        )
    })?;
    wrap(py, t)
}

/// `randperm(n)`: a random permutation of `0..n`, as PyTorch's `randperm_cpu`.
#[pyfunction]
#[pyo3(signature = (n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
pub(super) fn randperm(
    py: Python<'_>,
    n: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<Py<PyAny>> {
    let _ = (out, layout, pin_memory);
    let target = crate::py::device::target(device)?;
    let n = int_arg(n)?;
    if n < 0 {
        return Err(PyRuntimeError::new_err(format!(
            "n must be non-negative, got{n}"
        )));
    }
    let dt = opt_dtype(dtype)?.unwrap_or(DType::I64);
    match dt {
        DType::Bool => {
            return Err(PyRuntimeError::new_err(
                "\"randperm\" not implemented for 'Bool'",
            ))
        }
        DType::F32 if n > 1 << 24 => {
            return Err(PyRuntimeError::new_err(
                "n cannot be greater than 2^24+1 for Float type.",
            ))
        }
        _ => {}
    }
    let gen = gen_arg(generator, "randperm")?;
    let shape = alloc_shape(&[n], DType::I64)?;
    if target == crate::py::device::Target::Meta {
        return crate::py::device::meta_tensor(py, &shape, dt, requires_grad);
    }
    check_grad(dt, requires_grad)?;
    let t = draw(py, "randperm", n as usize, gen, &[], move |g, _| {
        let p = rng::randperm(g, n as usize);
        leaf(
            ops::cast_data(&Tensor::from_vec(p, shape.clone()), dt),
            requires_grad,
        )
    })?;
    wrap(py, t)
}

pub(crate) fn float_arg(o: &Bound<'_, PyAny>) -> PyResult<f64> {
    o.extract::<f64>()
}

/// `normal(mean, std, size)` with numbers, or with tensors of means and/or
/// standard deviations (broadcast), as `torch.normal`.
#[pyfunction]
#[pyo3(signature = (mean, std=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
pub(super) fn normal(
    py: Python<'_>,
    mean: &Bound<'_, PyAny>,
    std: Option<&Bound<'_, PyAny>>,
    size: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<Py<PyAny>> {
    let _ = (out, layout, pin_memory);
    check_cpu(device)?;
    let gen = gen_arg(generator, "normal")?;
    let mean_t = mean.cast::<PyTensor>().ok().map(|t| t.get().t.clone());
    let std_t = std
        .and_then(|s| s.cast::<PyTensor>().ok())
        .map(|t| t.get().t.clone());
    if mean_t.is_none() && std_t.is_none() {
        let m = float_arg(mean)?;
        let s = std.map(float_arg).transpose()?.unwrap_or(1.0);
        let Some(size) = size else {
            return Err(PyTypeError::new_err(
                "normal() received an invalid combination of arguments: numbers for mean and std need a size",
            ));
        };
        if s < 0.0 || s.is_nan() {
            return Err(PyRuntimeError::new_err(format!(
                "normal expects std >= 0.0, but found std {s}"
            )));
        }
        let dt = opt_dtype(dtype)?.unwrap_or(DType::default_float());
        let shape = alloc_shape(&seq_of_ints(size)?, dt)?;
        let n = numel(&shape);
        check_grad(dt, requires_grad)?;
        let t = draw(py, "normal", n, gen, &[], move |g, _| {
            leaf(
                rng::normal(g, shape.clone(), dt, m, s, true)?,
                requires_grad,
            )
        })?;
        return wrap(py, t);
    }
    // Tensor arguments, as PyTorch's `normal_out_impl`: a number `std` is
    // drawn with (`normal_(0, std)`), a tensor one multiplies N(0, 1)
    // samples afterwards; the mean is added last.
    let like = mean_t.clone().or(std_t.clone()).unwrap();
    let dt = like.dtype();
    let shape = match (&mean_t, &std_t) {
        (Some(m), Some(s)) => crate::tensor::broadcast_shapes(&m.shape(), &s.shape())?,
        _ => like.shape(),
    };
    let mut scalar_std = 1.0;
    if let Some(s) = &std_t {
        if s.to_vec::<f64>().iter().any(|v| *v < 0.0 || v.is_nan()) {
            return Err(PyRuntimeError::new_err(
                "normal expects all elements of std >= 0.0",
            ));
        }
    } else if let Some(s) = std {
        scalar_std = float_arg(s)?;
        if scalar_std < 0.0 || scalar_std.is_nan() {
            return Err(PyRuntimeError::new_err(format!(
                "normal expects std >= 0.0, but found std {scalar_std}"
            )));
        }
    }
    let mean_scalar = match &mean_t {
        Some(_) => 0.0,
        None => float_arg(mean)?,
    };
    let n = numel(&shape);
    check_grad(dt, requires_grad)?;
    // The tensor arguments are inputs of the entry: the mean, then the std.
    let (has_mean, has_std) = (mean_t.is_some(), std_t.is_some());
    let ins: Vec<&Tensor> = mean_t.iter().chain(std_t.iter()).collect();
    let t = draw(py, "normal", n, gen, &ins, move |g, t| {
        let z = rng::normal(g, shape.clone(), dt, 0.0, scalar_std, true)?;
        let _g = crate::autograd::GradModeGuard::new(false);
        let (m, s) = (
            has_mean.then(|| t[0]),
            has_std.then(|| t[has_mean as usize]),
        );
        let scaled = match s {
            Some(s) => ops::mul(&z, s)?,
            None => z,
        };
        let out = match m {
            Some(m) => ops::add(&scaled, m)?,
            None => ops::add(&scaled, &Tensor::scalar_of(mean_scalar, dt))?,
        };
        leaf(out, requires_grad)
    })?;
    wrap(py, t)
}

/// The sampling `*_like` functions with a generator: `rand_like`,
/// `randn_like` (kind "rand"/"randn") and `randint_like` (kind "randint"
/// with `low`/`high`).
#[pyfunction]
#[pyo3(signature = (input, kind, low=0, high=0, dtype=None, requires_grad=false, generator=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn _random_like(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    kind: &str,
    low: i64,
    high: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    dispatching!(
        py,
        "_random_like",
        (input, kind, low, high, dtype, requires_grad, generator),
        {
            let t = &crate::py::dispatch::tensor_arg(input, "*_like", "input", 1)?
                .get()
                .t;
            let dt = opt_dtype(dtype)?.unwrap_or(t.dtype());
            let gen = gen_arg(generator, kind)?;
            let n = t.numel();
            check_grad(dt, requires_grad)?;
            let rg = requires_grad;
            // The input is an input of the entry: its shape is read on each replay.
            let out = match kind {
                "rand" => draw(py, "rand_like", n, gen, &[t], move |g, t| {
                    leaf(rng::uniform(g, t[0].shape(), dt, 0.0, 1.0)?, rg)
                })?,
                "randn" => draw(py, "randn_like", n, gen, &[t], move |g, t| {
                    leaf(rng::normal(g, t[0].shape(), dt, 0.0, 1.0, true)?, rg)
                })?,
                "randint" => {
                    let range = check_range(low, high)?;
                    draw(py, "randint_like", n, gen, &[t], move |g, t| {
                        leaf(rng::randint(g, low, range, t[0].shape(), dt), rg)
                    })?
                }
                other => {
                    return Err(PyRuntimeError::new_err(format!(
                        "unknown random kind {other}"
                    )))
                }
            };
            wrap(py, out)
        }
    )
}

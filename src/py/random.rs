//! Random numbers: `Generator`, the default generator's functions, the
//! sampling creation functions and the sampling Tensor methods, all drawing
//! as PyTorch's CPU kernels do (see `crate::random`).

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::capture::{self, run, Outs};
use super::convert::{int_arg, parse_size, seq_of_ints, to_shape};
use super::dispatch::tensor_arg;
use super::dtype::opt_dtype;
use super::tensor::{wrap, PyTensor};
use crate::ops;
use crate::random::{self as rng, CpuGenerator, GenRef};
use crate::tensor::{checked_storage_numel, numel, DType, Shape, Tensor};

/// `torch.Generator`: an independent CPU random stream (a Mersenne Twister),
/// passed as `generator=` to the sampling functions.
#[pyclass(name = "Generator", module = "ferrograd", frozen)]
pub struct PyGenerator {
    g: GenRef,
}

pub(crate) fn check_cpu(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let Some(d) = device else { return Ok(()) };
    if d.is_none() {
        return Ok(());
    }
    let s = d.str()?.to_string();
    if s == "cpu" || s.starts_with("cpu:") {
        Ok(())
    } else {
        Err(PyRuntimeError::new_err(format!(
            "ferrograd has no CUDA support: only the 'cpu' device exists (got '{s}')"
        )))
    }
}

/// A seed as PyTorch unpacks it: any int in [-2^63, 2^64), negative ones
/// taken as their two's complement.
fn unpack_seed(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
    if seed.is_instance_of::<pyo3::types::PyBool>() || seed.is_instance_of::<pyo3::types::PyFloat>()
    {
        return Err(PyRuntimeError::new_err(format!(
            "manual_seed expected a long, but got {}",
            seed.get_type().name()?
        )));
    }
    let s: i128 = seed
        .call_method0("__index__")
        .and_then(|i| i.extract())
        .map_err(|_| {
            PyRuntimeError::new_err(format!(
                "manual_seed expected a long, but got {}",
                seed.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
    if s < i64::MIN as i128 || s > u64::MAX as i128 {
        return Err(PyRuntimeError::new_err("Overflow when unpacking long"));
    }
    Ok(s as u64)
}

/// A fresh nondeterministic 64-bit seed, as `Generator.seed()` draws one.
fn os_seed() -> u64 {
    let mut b = [0u8; 8];
    if getrandom_fill(&mut b) {
        return u64::from_le_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (std::process::id() as u64).rotate_left(32)
}

fn getrandom_fill(b: &mut [u8]) -> bool {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(b))
        .is_ok()
}

fn state_tensor(g: &CpuGenerator) -> Tensor {
    let bytes = g.get_state();
    let n = bytes.len();
    Tensor::from_vec(bytes, Shape::from_slice(&[n]))
}

fn set_state_from(py: Python<'_>, g: &GenRef, state: &Bound<'_, PyAny>) -> PyResult<()> {
    let t = state.cast::<PyTensor>().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected a torch.ByteTensor, but got {}",
            state
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let t = &t.get().t;
    // uint8, as `get_rng_state` returns (PyTorch's ByteTensor); int64 byte
    // values, as earlier versions returned, are still read.
    if t.dtype() != DType::U8 && t.dtype() != DType::I64 {
        return Err(PyTypeError::new_err(format!(
            "expected a torch.ByteTensor, but got torch.{}Tensor",
            t.dtype().scalar_name()
        )));
    }
    // The state tensor is an input: a replay restores whatever it holds then.
    let g = Arc::clone(g);
    run::<Vec<Tensor>, _>(py, 0, "set_rng_state", &[t], &[], move |t, _| {
        let vals = t[0].to_vec::<i64>();
        if vals.iter().any(|v| !(0..=255).contains(v)) {
            return Err(crate::Error::runtime(
                "RNG state values must be bytes in [0, 255]",
            ));
        }
        let bytes: Vec<u8> = vals.into_iter().map(|v| v as u8).collect();
        g.lock().set_state(&bytes)?;
        Ok(Vec::new())
    })
    .map(drop)
}

/// The state of `g` as a new tensor (recorded: a replay reads the state then).
fn get_state_of(py: Python<'_>, g: &GenRef) -> PyResult<Py<PyAny>> {
    let g = Arc::clone(g);
    capture::run_op(py, 0, "get_rng_state", &[], &[], move |_, _| {
        Ok(state_tensor(&g.lock()))
    })
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device=None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        check_cpu(device)?;
        Ok(PyGenerator {
            g: Arc::new(Mutex::new(CpuGenerator::new(rng::DEFAULT_SEED))),
        })
    }

    /// Seeds the generator; returns it, as PyTorch does.
    fn manual_seed<'py>(
        slf: &Bound<'py, Self>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let s = unpack_seed(seed)?;
        let g = Arc::clone(&slf.get().g);
        capture::run_effect(slf.py(), "Generator.manual_seed", move || {
            g.lock().set_seed(s);
            Ok(())
        })?;
        Ok(slf.clone())
    }

    /// Seeds the generator from the OS's entropy and returns the seed.
    fn seed(&self) -> u64 {
        crate::compile::refuse_read("Generator.seed");
        let s = os_seed();
        self.g.lock().set_seed(s);
        s
    }

    fn initial_seed(&self) -> u64 {
        crate::compile::refuse_read("Generator.initial_seed");
        self.g.lock().initial_seed()
    }

    /// The state as PyTorch's 5056 `CPUGeneratorImplState` bytes, a uint8
    /// tensor (PyTorch's ByteTensor).
    fn get_state(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        get_state_of(py, &self.g)
    }

    fn set_state<'py>(
        slf: &Bound<'py, Self>,
        new_state: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        set_state_from(slf.py(), &slf.get().g, new_state)?;
        Ok(slf.clone())
    }

    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(py
            .import("ferrograd")?
            .getattr("device")?
            .call1(("cpu",))?
            .unbind())
    }

    /// Pickles as the state, so a copied generator continues the same stream.
    fn __getstate__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.get_state(py)
    }

    fn __setstate__(slf: &Bound<'_, Self>, state: &Bound<'_, PyAny>) -> PyResult<()> {
        set_state_from(slf.py(), &slf.get().g, state)
    }

    fn __getnewargs__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, ["cpu"])
    }

    fn __repr__(&self) -> String {
        format!(
            "<ferrograd.Generator object at {:#x}>",
            Arc::as_ptr(&self.g) as usize
        )
    }
}

/// The generator behind a `generator=` argument: `None` is the default one.
pub(super) fn gen_arg(
    generator: Option<&Bound<'_, PyAny>>,
    fname: &str,
) -> PyResult<Option<GenRef>> {
    match generator {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match o.cast::<PyGenerator>() {
            Ok(g) => Ok(Some(Arc::clone(&g.get().g))),
            Err(_) => Err(PyTypeError::new_err(format!(
                "{fname}(): argument 'generator' must be torch.Generator, not {}",
                o.get_type().name()?
            ))),
        },
    }
}

fn alloc_shape(dims: &[i64], dtype: DType) -> PyResult<Shape> {
    let shape = to_shape(dims)?;
    checked_storage_numel(&shape, dtype.size())?;
    Ok(shape)
}

/// Refuses `requires_grad` for a sampled tensor of an integer dtype.
fn check_grad(dt: DType, requires_grad: bool) -> PyResult<()> {
    if requires_grad && !dt.is_float() {
        return Err(PyRuntimeError::new_err(
            "Only Tensors of floating point and complex dtype can require gradients",
        ));
    }
    Ok(())
}

/// A sampled tensor, a leaf that requires grad if asked.
fn leaf(t: Tensor, requires_grad: bool) -> crate::Result<Tensor> {
    if requires_grad {
        t.set_requires_grad(true)?;
    }
    Ok(t)
}

/// Draws `f` under the generator's lock (the default one for `None`) with the
/// GIL released for big outputs. It is the op's replay rule too: a replay
/// draws again from the same generator, so values and the generator's state
/// follow eager exactly. `ins` are the tensors `f` reads (probabilities,
/// means).
pub(super) fn draw<R: Outs>(
    py: Python<'_>,
    name: &'static str,
    work: usize,
    gen: Option<GenRef>,
    ins: &[&Tensor],
    f: impl Fn(&mut CpuGenerator, &[&Tensor]) -> crate::Result<R> + Send + Sync + 'static,
) -> PyResult<R> {
    run(py, work, name, ins, &[], move |t, _| {
        rng::with_gen(gen.as_ref(), |g| f(g, t))
    })
}

/// The shared arguments of `rand` and `randn`: a float tensor of the given size
/// filled by one sampler from the chosen generator.
struct FloatFactory<'a, 'py> {
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
fn rand(
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
fn randn(
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

pub(super) fn check_range(low: i64, high: i64) -> PyResult<u64> {
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
fn randint(
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
fn randperm(
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

/// Seeds the default generator (PyTorch's Mersenne Twister) and returns it.
#[pyfunction]
fn manual_seed(py: Python<'_>, seed: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let s = unpack_seed(seed)?;
    // Recorded: each replay seeds the generator again at the same point.
    capture::run_effect(py, "manual_seed", move || {
        rng::manual_seed(s);
        Ok(())
    })?;
    default_generator_obj(py)
}

/// Seeds the default generator from the OS's entropy and returns the seed.
#[pyfunction]
fn seed() -> u64 {
    crate::compile::refuse_read("seed");
    let s = os_seed();
    rng::manual_seed(s);
    s
}

/// The seed the default generator was last seeded with.
#[pyfunction]
fn initial_seed() -> u64 {
    crate::compile::refuse_read("initial_seed");
    rng::default_generator().lock().initial_seed()
}

/// The default generator's state, in PyTorch's 5056-byte layout (a uint8 tensor).
#[pyfunction]
fn get_rng_state(py: Python<'_>) -> PyResult<Py<PyAny>> {
    get_state_of(py, rng::default_generator())
}

/// Restores the default generator's state from `get_rng_state()`.
#[pyfunction]
fn set_rng_state(new_state: &Bound<'_, PyAny>) -> PyResult<()> {
    set_state_from(new_state.py(), rng::default_generator(), new_state)
}

static DEFAULT_OBJ: pyo3::sync::PyOnceLock<Py<PyGenerator>> = pyo3::sync::PyOnceLock::new();

fn default_generator_obj(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let g = DEFAULT_OBJ.get_or_try_init(py, || {
        Py::new(
            py,
            PyGenerator {
                g: Arc::clone(rng::default_generator()),
            },
        )
    })?;
    Ok(g.clone_ref(py).into_any())
}

pub(super) fn float_arg(o: &Bound<'_, PyAny>) -> PyResult<f64> {
    o.extract::<f64>()
}

/// `normal(mean, std, size)` with numbers, or with tensors of means and/or
/// standard deviations (broadcast), as `torch.normal`.
#[pyfunction]
#[pyo3(signature = (mean, std=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
fn normal(
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

/// `bernoulli(input, p=None)`: 1 with probability `input` (or `p`) per element.
#[pyfunction]
#[pyo3(signature = (input, p=None, *, generator=None, out=None))]
pub(super) fn bernoulli(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    p: Option<f64>,
    generator: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let _ = out;
    // A tensor-like input (vmap's BatchedTensor) goes to its type's rule, which
    // follows vmap's randomness mode.
    dispatching!(py, "bernoulli", (input, p, generator), {
        let t = &tensor_arg(input, "bernoulli", "input", 1)?.get().t;
        let gen = gen_arg(generator, "bernoulli")?;
        let n = t.numel();
        let r = match p {
            Some(p) => draw(py, "bernoulli", n, gen, &[t], move |g, t| {
                rng::bernoulli_scalar(g, t[0].shape(), t[0].dtype(), p)
            })?,
            None => draw(py, "bernoulli", n, gen, &[t], |g, t| {
                rng::bernoulli_tensor(g, t[0], t[0].dtype())
            })?,
        };
        wrap(py, r)
    })
}

/// The number of probability rows of a multinomial's input and their length.
fn multinomial_rows(t: &Tensor) -> PyResult<(usize, usize)> {
    let shape = t.shape();
    if !(shape.len() == 1 || shape.len() == 2) {
        return Err(PyRuntimeError::new_err("prob_dist must be 1 or 2 dim"));
    }
    if !t.dtype().is_float() {
        return Err(PyRuntimeError::new_err(format!(
            "multinomial only supports floating-point dtypes for input, got: {}",
            t.dtype().scalar_name()
        )));
    }
    let k = shape[shape.len() - 1];
    let rows = if shape.len() == 2 { shape[0] } else { 1 };
    Ok((rows, k))
}

pub(super) fn multinomial_impl(
    py: Python<'_>,
    t: &Tensor,
    num_samples: i64,
    replacement: bool,
    gen: Option<GenRef>,
) -> PyResult<Py<PyAny>> {
    let (rows, k) = multinomial_rows(t)?;
    if num_samples <= 0 {
        return Err(PyRuntimeError::new_err(
            "cannot sample n_sample <= 0 samples",
        ));
    }
    let ns = num_samples as usize;
    if !replacement && ns > k {
        return Err(PyRuntimeError::new_err(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement",
        ));
    }
    let work = rows.saturating_mul(ns.max(k));
    let out = draw(py, "multinomial", work, gen, &[t], move |g, t| {
        multinomial_draw(g, t[0], rows, k, ns, replacement)
    })?;
    wrap(py, out)
}

/// The draws of `multinomial` from the `rows` x `k` probabilities `t`
/// (checked here, as their values are only known now).
fn multinomial_draw(
    g: &mut CpuGenerator,
    t: &Tensor,
    rows: usize,
    k: usize,
    ns: usize,
    replacement: bool,
) -> crate::Result<Tensor> {
    let vals = t.to_vec::<f64>();
    let row_sums: Vec<f64> = vals
        .chunks_exact(k.max(1))
        .map(|r| r.iter().sum())
        .collect();
    if vals.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(crate::Error::runtime(
            "probability tensor contains either `inf`, `nan` or element < 0",
        ));
    }
    if k == 0 || row_sums.iter().any(|s| *s <= 0.0) {
        return Err(crate::Error::runtime(
            "invalid multinomial distribution (sum of probabilities <= 0)",
        ));
    }
    let out_shape: Shape = if t.ndim() == 2 {
        Shape::from_slice(&[rows, ns])
    } else {
        Shape::from_slice(&[ns])
    };
    checked_storage_numel(&out_shape, 8)?;
    let dt = t.dtype();
    let idx: Vec<i64> = if replacement && ns > 1 {
        if dt == DType::F32 {
            rng::multinomial_with_replacement(g, &t.to_vec::<f32>(), k, ns)
        } else {
            rng::multinomial_with_replacement(g, &vals, k, ns)
        }
    } else {
        // PyTorch's fast path (no replacement, or a single draw): the top
        // `ns` of p / q with q ~ Exponential(1), which is sampling without
        // replacement by the Gumbel-max argument.
        let q = rng::exponential(g, t.shape(), dt, 1.0)?;
        let ratio: Vec<f64> = if dt == DType::F32 {
            let p = t.to_vec::<f32>();
            p.iter()
                .zip(q.to_vec::<f32>())
                .map(|(a, b)| (a / b) as f64)
                .collect()
        } else {
            vals.iter()
                .zip(q.to_vec::<f64>())
                .map(|(a, b)| a / b)
                .collect()
        };
        let mut out = crate::error::alloc_vec(rows * ns);
        for row in ratio.chunks_exact(k) {
            let mut order: Vec<usize> = (0..k).collect();
            // Largest first; ties keep the lower index first, as argmax does.
            order.sort_by(|&a, &b| {
                row[b]
                    .partial_cmp(&row[a])
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.cmp(&b))
            });
            out.extend(order[..ns].iter().map(|&i| i as i64));
        }
        out
    };
    Ok(Tensor::from_vec(idx, out_shape))
}

/// `multinomial(input, num_samples, replacement=False)`: indices drawn from
/// the rows of `input` taken as (unnormalised) probabilities.
#[pyfunction]
#[pyo3(signature = (input, num_samples, replacement=false, *, generator=None, out=None))]
fn multinomial(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    num_samples: i64,
    replacement: bool,
    generator: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let _ = out;
    dispatching!(
        py,
        "multinomial",
        (input, num_samples, replacement, generator),
        {
            let t = &tensor_arg(input, "multinomial", "input", 1)?.get().t;
            let gen = gen_arg(generator, "multinomial")?;
            multinomial_impl(py, t, num_samples, replacement, gen)
        }
    )
}

/// The sampling `*_like` functions with a generator: `rand_like`,
/// `randn_like` (kind "rand"/"randn") and `randint_like` (kind "randint"
/// with `low`/`high`).
#[pyfunction]
#[pyo3(signature = (input, kind, low=0, high=0, dtype=None, requires_grad=false, generator=None))]
#[allow(clippy::too_many_arguments)]
fn _random_like(
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

/// `_standard_gamma(input)`: a standard Gamma sample per concentration
/// (ATen's Marsaglia-Tsang sampler, draw for draw), differentiable in
/// `input` through `_standard_gamma_grad`.
#[pyfunction]
#[pyo3(signature = (input, generator=None))]
fn _standard_gamma(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let t = &input.get().t;
    let gen = gen_arg(generator, "_standard_gamma")?;
    let x = draw(py, "_standard_gamma", t.numel(), gen, &[t], |g, t| {
        let x = rng::standard_gamma(g, t[0])?;
        ops::record_standard_gamma(t[0], &x);
        Ok(x)
    })?;
    wrap(py, x)
}

/// `_standard_gamma_grad(input, output)`: d output / d input for standard
/// Gamma samples `output` of concentrations `input`, at a fixed quantile.
#[pyfunction]
fn _standard_gamma_grad(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output: &Bound<'_, PyTensor>,
) -> PyResult<Py<PyAny>> {
    let (a, x) = (&input.get().t, &output.get().t);
    capture::run_op(
        py,
        a.numel(),
        "_standard_gamma_grad",
        &[a, x],
        &[],
        |t, _| {
            let _g = crate::autograd::GradModeGuard::new(false);
            ops::standard_gamma_grad(t[0], t[1])
        },
    )
}

/// Dirichlet samples as ATen's `_sample_dirichlet` makes them, and the double
/// Gamma samples they normalise (for the reparameterised gradient).
fn dirichlet_draw(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Tensor, Tensor)> {
    let t = input.get().t.clone();
    if t.ndim() == 0 {
        return Err(PyRuntimeError::new_err(
            "dirichlet: expected a tensor of at least one dimension",
        ));
    }
    let gen = gen_arg(generator, "_sample_dirichlet")?;
    draw(py, "_sample_dirichlet", t.numel(), gen, &[&t], |g, t| {
        let gam = rng::dirichlet_gammas(g, t[0])?;
        let (t, shape) = (t[0], t[0].shape());
        let k = shape[shape.len() - 1].max(1);
        let mut x = Vec::with_capacity(gam.len());
        for row in gam.chunks(k) {
            let total: f64 = row.iter().sum();
            x.extend(row.iter().map(|v| v / total));
        }
        let x = if t.dtype() == DType::F32 {
            let below_one = 1.0f32 - f32::EPSILON / 2.0;
            let v: Vec<f32> = x
                .iter()
                .map(|&v| (v as f32).max(f32::MIN_POSITIVE).min(below_one))
                .collect();
            Tensor::from_vec(v, shape.clone())
        } else {
            let below_one = 1.0f64 - f64::EPSILON / 2.0;
            let v: Vec<f64> = x
                .iter()
                .map(|&v| v.max(f64::MIN_POSITIVE).min(below_one))
                .collect();
            Tensor::from_vec(v, shape.clone())
        };
        Ok((x, Tensor::from_vec(gam, shape)))
    })
}

/// `_sample_dirichlet(input)`: one Dirichlet sample per row of concentrations.
#[pyfunction]
#[pyo3(signature = (input, generator=None))]
fn _sample_dirichlet(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let (x, _) = dirichlet_draw(py, input, generator)?;
    wrap(py, x)
}

/// `_sample_dirichlet` and the float64 Gamma samples behind it.
#[pyfunction]
#[pyo3(signature = (input, generator=None))]
fn _sample_dirichlet_gammas(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let (x, gam) = dirichlet_draw(py, input, generator)?;
    Ok((wrap(py, x)?, wrap(py, gam)?))
}

/// `binomial(count, prob)`: a binomial sample per element (ATen's BTRS and
/// inversion samplers, draw for draw).
#[pyfunction]
#[pyo3(signature = (count, prob, generator=None))]
fn binomial(
    py: Python<'_>,
    count: &Bound<'_, PyAny>,
    prob: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "binomial", (count, prob, generator), {
        let n = tensor_arg(count, "binomial", "count", 1)?.get().t.clone();
        let p = tensor_arg(prob, "binomial", "prob", 2)?.get().t.clone();
        binomial_impl(py, n, p, generator)
    })
}

fn binomial_impl(
    py: Python<'_>,
    n: Tensor,
    p: Tensor,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    if n.shape() != p.shape() {
        return Err(PyRuntimeError::new_err(format!(
            "binomial: count and prob must have the same shape, got {:?} and {:?}",
            n.shape().as_slice(),
            p.shape().as_slice()
        )));
    }
    if n.dtype() != p.dtype() {
        return Err(PyRuntimeError::new_err(format!(
            "binomial: expected count and prob of one dtype, got {} and {}",
            n.dtype().scalar_name(),
            p.dtype().scalar_name()
        )));
    }
    let gen = gen_arg(generator, "binomial")?;
    let r = draw(py, "binomial", n.numel(), gen, &[&n, &p], |g, t| {
        rng::binomial(g, t[0], t[1])
    })?;
    wrap(py, r)
}

/// `poisson(input)`: a Poisson sample per rate (ATen's sampler, draw for draw).
#[pyfunction]
#[pyo3(signature = (input, generator=None))]
fn poisson(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "poisson", (input, generator), {
        let t = &tensor_arg(input, "poisson", "input", 1)?.get().t;
        let gen = gen_arg(generator, "poisson")?;
        let r = draw(py, "poisson", t.numel(), gen, &[t], |g, t| {
            rng::poisson(g, t[0])
        })?;
        wrap(py, r)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyGenerator>()?;
    m.add_function(wrap_pyfunction!(rand, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(randperm, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(seed, m)?)?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)?;
    m.add_function(wrap_pyfunction!(get_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(normal, m)?)?;
    m.add_function(wrap_pyfunction!(bernoulli, m)?)?;
    m.add_function(wrap_pyfunction!(multinomial, m)?)?;
    m.add_function(wrap_pyfunction!(_standard_gamma, m)?)?;
    m.add_function(wrap_pyfunction!(_standard_gamma_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_sample_dirichlet, m)?)?;
    m.add_function(wrap_pyfunction!(_sample_dirichlet_gammas, m)?)?;
    m.add_function(wrap_pyfunction!(poisson, m)?)?;
    m.add_function(wrap_pyfunction!(binomial, m)?)?;
    m.add_function(wrap_pyfunction!(_random_like, m)?)?;
    m.add("default_generator", default_generator_obj(py)?)?;
    Ok(())
}

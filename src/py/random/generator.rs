//! `torch.Generator` and the default generator's seed and state functions.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::py::capture::{self, run};
use crate::py::tensor::PyTensor;
use crate::random::{self as rng, CpuGenerator, GenRef};
use crate::tensor::{DType, Shape, Tensor};

/// `torch.Generator`: an independent CPU random stream (a Mersenne Twister),
/// passed as `generator=` to the sampling functions.
#[pyclass(name = "Generator", module = "ferrograd", frozen)]
pub struct PyGenerator {
    g: GenRef,
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
pub(super) fn unpack_seed(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
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
pub(super) fn os_seed() -> u64 {
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

pub(super) fn getrandom_fill(b: &mut [u8]) -> bool {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(b))
        .is_ok()
}

pub(super) fn state_tensor(g: &CpuGenerator) -> Tensor {
    let bytes = g.get_state();
    let n = bytes.len();
    Tensor::from_vec(bytes, Shape::from_slice(&[n]))
}

pub(super) fn set_state_from(py: Python<'_>, g: &GenRef, state: &Bound<'_, PyAny>) -> PyResult<()> {
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
pub(super) fn get_state_of(py: Python<'_>, g: &GenRef) -> PyResult<Py<PyAny>> {
    let g = Arc::clone(g);
    capture::run_op(py, 0, "get_rng_state", &[], &[], move |_, _| {
        Ok(state_tensor(&g.lock()))
    })
}

/// The generator behind a `generator=` argument: `None` is the default one.
pub(crate) fn gen_arg(
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

/// Seeds the default generator (PyTorch's Mersenne Twister) and returns it.
#[pyfunction]
pub(super) fn manual_seed(py: Python<'_>, seed: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
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
pub(super) fn seed() -> u64 {
    crate::compile::refuse_read("seed");
    let s = os_seed();
    rng::manual_seed(s);
    s
}

/// The seed the default generator was last seeded with.
#[pyfunction]
pub(super) fn initial_seed() -> u64 {
    crate::compile::refuse_read("initial_seed");
    rng::default_generator().lock().initial_seed()
}

/// The default generator's state, in PyTorch's 5056-byte layout (a uint8 tensor).
#[pyfunction]
pub(super) fn get_rng_state(py: Python<'_>) -> PyResult<Py<PyAny>> {
    get_state_of(py, rng::default_generator())
}

/// Restores the default generator's state from `get_rng_state()`.
#[pyfunction]
pub(super) fn set_rng_state(new_state: &Bound<'_, PyAny>) -> PyResult<()> {
    set_state_from(new_state.py(), rng::default_generator(), new_state)
}

pub(super) static DEFAULT_OBJ: pyo3::sync::PyOnceLock<Py<PyGenerator>> =
    pyo3::sync::PyOnceLock::new();

pub(super) fn default_generator_obj(py: Python<'_>) -> PyResult<Py<PyAny>> {
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

//! The sampling methods of `Tensor` (`bernoulli_`, `random_`,
//! `exponential_`, `multinomial`, ...) and its legacy type names
//! (`Tensor.type()`), drawn through the generators of `random.rs`.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use super::capture::run_inplace;
use super::random::{bernoulli, check_range, float_arg, gen_arg, multinomial_impl};
use super::tensor::PyTensor;
use crate::ops;
use crate::random as rng;
use crate::tensor::{DType, Tensor};

// ----- sampling Tensor methods ---------------------------------------------------

fn self_t<'a>(slf: &'a Bound<'_, PyTensor>) -> &'a Tensor {
    &slf.get().t
}

#[pymethods]
impl PyTensor {
    /// `t.bernoulli_(p=0.5)`: each element becomes 1 with probability `p`
    /// (a number, or a tensor broadcast to `t`), else 0.
    #[pyo3(signature = (p=None, *, generator=None))]
    fn bernoulli_(
        slf: &Bound<'_, Self>,
        p: Option<&Bound<'_, PyAny>>,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("bernoulli_");
        let t = self_t(slf);
        let gen = gen_arg(generator, "bernoulli_")?;
        let n = t.numel();
        let py = slf.py();
        match p {
            Some(pt) if pt.cast::<PyTensor>().is_ok() => {
                let pt = &pt.cast::<PyTensor>().unwrap().get().t;
                run_inplace(py, n, "bernoulli_", &[t, pt], &[], move |t, _| {
                    let pe = ops::expand(t[1], &t[0].shape())?;
                    let pe = rng::to_memory_order(t[0], &pe);
                    let v = rng::with_gen(gen.as_ref(), |g| {
                        rng::bernoulli_tensor(g, &pe, t[0].dtype())
                    })?;
                    ops::overwrite_sampled(t[0], v)
                })?;
            }
            other => {
                let p = other.map(float_arg).transpose()?.unwrap_or(0.5);
                sample_into(py, t, "bernoulli_", gen, move |g, t| {
                    rng::bernoulli_scalar(g, t.shape(), t.dtype(), p)
                })?;
            }
        }
        Ok(slf.clone().into_any().unbind())
    }

    /// `t.bernoulli(p=None)`: a new tensor of 0/1 draws with probabilities
    /// `t` (or the number `p`).
    #[pyo3(signature = (p=None, *, generator=None))]
    fn bernoulli(
        slf: &Bound<'_, Self>,
        p: Option<f64>,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        bernoulli(slf.py(), slf, p, generator, None)
    }

    /// `t.random_(from=0, to=None)`: integers uniform in `[from, to)`, or
    /// over the values the dtype holds exactly when neither bound is given.
    #[pyo3(signature = (from_=None, to=None, *, generator=None))]
    fn random_(
        slf: &Bound<'_, Self>,
        from_: Option<i64>,
        to: Option<i64>,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("random_");
        let t = self_t(slf);
        let gen = gen_arg(generator, "random_")?;
        let py = slf.py();
        match (from_, to) {
            (None, None) => sample_into(py, t, "random_", gen, |g, t| {
                Ok(rng::random_full(g, t.shape(), t.dtype()))
            })?,
            (lo, hi) => {
                // `random_(to)`: [0, to).
                let (lo, hi) = match (lo, hi) {
                    (Some(hi), None) => (0, hi),
                    (lo, Some(hi)) => (lo.unwrap_or(0), hi),
                    (None, None) => unreachable!(),
                };
                let range = check_range(lo, hi)?;
                sample_into(py, t, "random_", gen, move |g, t| {
                    Ok(rng::randint(g, lo, range, t.shape(), t.dtype()))
                })?
            }
        }
        Ok(slf.clone().into_any().unbind())
    }

    /// `t.exponential_(lambd=1)`: samples of an exponential distribution.
    #[pyo3(signature = (lambd=1.0, *, generator=None))]
    fn exponential_(
        slf: &Bound<'_, Self>,
        lambd: f64,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("exponential_");
        let t = self_t(slf);
        let gen = gen_arg(generator, "exponential_")?;
        sample_into(slf.py(), t, "exponential_", gen, move |g, t| {
            rng::exponential(g, t.shape(), t.dtype(), lambd)
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// `t.cauchy_(median=0, sigma=1)`: samples of the Cauchy distribution,
    /// drawn as PyTorch's CPU kernel draws them.
    #[pyo3(signature = (median=0.0, sigma=1.0, *, generator=None))]
    fn cauchy_(
        slf: &Bound<'_, Self>,
        median: f64,
        sigma: f64,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let t = self_t(slf);
        let gen = gen_arg(generator, "cauchy_")?;
        sample_into(slf.py(), t, "cauchy_", gen, move |g, t| {
            rng::cauchy(g, t.shape(), t.dtype(), median, sigma)
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// `t.log_normal_(mean=1, std=2)`: samples whose logarithm is normal with
    /// that mean and standard deviation, drawn as PyTorch's CPU kernel does.
    #[pyo3(signature = (mean=1.0, std=2.0, *, generator=None))]
    fn log_normal_(
        slf: &Bound<'_, Self>,
        mean: f64,
        std: f64,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let t = self_t(slf);
        let gen = gen_arg(generator, "log_normal_")?;
        sample_into(slf.py(), t, "log_normal_", gen, move |g, t| {
            rng::log_normal(g, t.shape(), t.dtype(), mean, std)
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// `t.geometric_(p)`: the number of Bernoulli(`p`) trials up to the first
    /// success, drawn as PyTorch's CPU kernel does.
    #[pyo3(signature = (p, *, generator=None))]
    fn geometric_(
        slf: &Bound<'_, Self>,
        p: f64,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let t = self_t(slf);
        let gen = gen_arg(generator, "geometric_")?;
        sample_into(slf.py(), t, "geometric_", gen, move |g, t| {
            rng::geometric(g, t.shape(), t.dtype(), p)
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Indices drawn from the rows of this tensor taken as (unnormalised)
    /// probabilities; see `ferrograd.multinomial`.
    #[pyo3(signature = (num_samples, replacement=false, *, generator=None))]
    fn multinomial(
        slf: &Bound<'_, Self>,
        num_samples: i64,
        replacement: bool,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let gen = gen_arg(generator, "multinomial")?;
        multinomial_impl(slf.py(), self_t(slf), num_samples, replacement, gen)
    }
}

/// Fills `t` in place with `sample(g, t)` drawn from the generator (the
/// default one for `None`); recorded, so a replay draws again.
fn sample_into(
    py: Python<'_>,
    t: &Tensor,
    name: &'static str,
    gen: Option<rng::GenRef>,
    sample: impl Fn(&mut rng::CpuGenerator, &Tensor) -> crate::Result<Tensor> + Send + Sync + 'static,
) -> PyResult<()> {
    run_inplace(py, t.numel(), name, &[t], &[], move |t, _| {
        let v = rng::with_gen(gen.as_ref(), |g| sample(g, t[0]))?;
        ops::overwrite_sampled(t[0], v)
    })
}

// ----- legacy type names ---------------------------------------------------------

fn legacy_name(dt: DType) -> String {
    format!("torch.{}Tensor", dt.scalar_name())
}

#[pymethods]
impl PyTensor {
    /// `t.type()`: PyTorch's legacy type name (`'torch.FloatTensor'`, with
    /// the `torch.` prefix code compares against); `t.type(dtype)` with a
    /// dtype, such a name or a legacy type (`FloatTensor`) converts like `to`.
    #[pyo3(name = "type", signature = (dtype=None, non_blocking=false))]
    fn type_(
        slf: &Bound<'_, Self>,
        dtype: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = non_blocking;
        let py = slf.py();
        let cur = self_t(slf).dtype();
        let Some(target) = dtype.filter(|d| !d.is_none()) else {
            return Ok(pyo3::types::PyString::new(py, &legacy_name(cur))
                .into_any()
                .unbind());
        };
        let dt = if let Ok(name) = target.extract::<String>() {
            let want = crate::tensor::ALL_DTYPES
                .into_iter()
                .find(|d| legacy_name(*d) == name);
            match want {
                Some(d) => d,
                None if name.starts_with("torch.cuda.") => {
                    return Err(PyRuntimeError::new_err(format!(
                        "ferrograd has no CUDA support: cannot convert to {name}"
                    )))
                }
                None => {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "invalid type: '{name}'"
                    )))
                }
            }
        } else if let Ok(inner) = target.getattr("dtype") {
            super::dtype::parse_dtype(&inner)?
        } else {
            super::dtype::parse_dtype(target)?
        };
        if dt == cur {
            return Ok(slf.clone().into_any().unbind());
        }
        let obj = super::dtype::dtype_object(py, dt);
        Ok(slf.call_method1("to", (obj,))?.unbind())
    }
}

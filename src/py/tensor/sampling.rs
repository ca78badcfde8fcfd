//! The sampling methods of `Tensor` (`bernoulli_`, `random_`,
//! `exponential_`, `multinomial`, ...), drawn through the generators of
//! `py/random.rs`.

use pyo3::prelude::*;

use super::PyTensor;
use crate::ops;
use crate::py::capture::run_inplace;
use crate::py::random::{bernoulli, check_range, float_arg, gen_arg, multinomial_impl};
use crate::random as rng;
use crate::tensor::Tensor;

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
                    let pe = rng::to_memory_order(t[0], &pe)?;
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
        bernoulli(slf.py(), slf.as_any(), p, generator, None)
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

//! Random numbers: `Generator`, the default generator's functions, the
//! sampling creation functions and the sampling Tensor methods, all drawing
//! as PyTorch's CPU kernels do (see `crate::random`). `generator` holds the
//! `Generator` class and the seed/state functions, `factories` the creation
//! functions (`rand`, `randn`, `randint`, `randperm`, `normal`, the `*_like`
//! forms), `distributions` the samplers of a tensor's parameters
//! (`bernoulli`, `multinomial`, gamma, Dirichlet, binomial, Poisson).

mod distributions;
mod factories;
mod generator;

use distributions::*;
pub(crate) use distributions::{bernoulli, multinomial_impl};
use factories::*;
pub(crate) use factories::{check_range, float_arg};
use generator::*;
pub(crate) use generator::{check_cpu, gen_arg, PyGenerator};

use pyo3::prelude::*;

use crate::py::capture::{run, Outs};
use crate::random::{self as rng, CpuGenerator, GenRef};
use crate::tensor::Tensor;

/// Draws `f` under the generator's lock (the default one for `None`) with the
/// GIL released for big outputs. It is the op's replay rule too: a replay
/// draws again from the same generator, so values and the generator's state
/// follow eager exactly. `ins` are the tensors `f` reads (probabilities,
/// means).
pub(crate) fn draw<R: Outs>(
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

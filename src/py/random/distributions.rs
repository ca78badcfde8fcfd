//! Samplers of a tensor's parameters: `bernoulli`, `multinomial`, the gamma
//! and Dirichlet draws, `binomial` and `poisson`.

use super::*;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::ops;
use crate::py::capture::{self};
use crate::py::dispatch::tensor_arg;
use crate::py::tensor::{wrap, PyTensor};
use crate::random::{self as rng, CpuGenerator, GenRef};
use crate::tensor::{checked_storage_numel, DType, Shape, Tensor};

/// `bernoulli(input, p=None)`: 1 with probability `input` (or `p`) per element.
#[pyfunction]
#[pyo3(signature = (input, p=None, *, generator=None, out=None))]
pub(crate) fn bernoulli(
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
pub(super) fn multinomial_rows(t: &Tensor) -> PyResult<(usize, usize)> {
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

pub(crate) fn multinomial_impl(
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
pub(super) fn multinomial_draw(
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
pub(super) fn multinomial(
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

/// `_standard_gamma(input)`: a standard Gamma sample per concentration
/// (ATen's Marsaglia-Tsang sampler, draw for draw), differentiable in
/// `input` through `_standard_gamma_grad`.
#[pyfunction]
#[pyo3(signature = (input, generator=None))]
pub(super) fn _standard_gamma(
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
pub(super) fn _standard_gamma_grad(
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
pub(super) fn dirichlet_draw(
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
pub(super) fn _sample_dirichlet(
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
pub(super) fn _sample_dirichlet_gammas(
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
pub(super) fn binomial(
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

pub(super) fn binomial_impl(
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
pub(super) fn poisson(
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

//! Bindings for normalisation and embedding (`ferrograd._C.batch_norm`,
//! `layer_norm`, `group_norm`, `embedding`, `embedding_renorm_`); the
//! `nn.functional` forms in Python adapt PyTorch's signatures onto these.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::capture::{run_inplace, run_op, Opt};
use super::dispatch::{self, tensor_arg};
use super::tensor::PyTensor;
use crate::ops;
use crate::tensor::Tensor;

fn opt(o: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Tensor>> {
    match o {
        Some(o) if !o.is_none() => Ok(Some(
            o.cast::<PyTensor>()
                .map_err(|_| {
                    if dispatch::dispatchable(o) {
                        dispatch::needed(o)
                    } else {
                        PyTypeError::new_err("expected a Tensor or None")
                    }
                })?
                .get()
                .t
                .clone(),
        )),
        _ => Ok(None),
    }
}

#[pyfunction]
#[pyo3(signature = (input, running_mean, running_var, weight=None, bias=None, training=false, momentum=0.1, eps=1e-5))]
#[allow(clippy::too_many_arguments)]
fn batch_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    running_mean: Option<&Bound<'_, PyAny>>,
    running_var: Option<&Bound<'_, PyAny>>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(
        py,
        "batch_norm",
        (
            input,
            running_mean,
            running_var,
            weight,
            bias,
            training,
            momentum,
            eps
        ),
        {
            let x = &tensor_arg(input, "batch_norm", "input", 1)?.get().t;
            let (rm, rv, w, b) = (
                opt(running_mean)?,
                opt(running_var)?,
                opt(weight)?,
                opt(bias)?,
            );
            // The running statistics are inputs: a module's buffers are constants
            // of the tape, so each replay updates them in place as eager does.
            let (ins, opt) = Opt::inputs(&[x], &[w.as_ref(), b.as_ref(), rm.as_ref(), rv.as_ref()]);
            run_op(py, x.numel(), "batch_norm", &ins, &[], move |t, _| {
                ops::batch_norm(
                    t[0],
                    opt.get(t, 0),
                    opt.get(t, 1),
                    opt.get(t, 2),
                    opt.get(t, 3),
                    training,
                    momentum,
                    eps,
                )
            })
        }
    )
}

#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, bias=None, eps=1e-5))]
fn layer_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    normalized_shape: Vec<i64>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    eps: f64,
) -> PyResult<Py<PyAny>> {
    let shape = normalized_shape.clone();
    dispatching!(py, "layer_norm", (input, shape, weight, bias, eps), {
        let x = &tensor_arg(input, "layer_norm", "input", 1)?.get().t;
        if normalized_shape.iter().any(|&d| d < 0) {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "Given normalized_shape={normalized_shape:?}, expected non-negative sizes"
            )));
        }
        let ns: Vec<usize> = normalized_shape.iter().map(|&d| d as usize).collect();
        let (w, b) = (opt(weight)?, opt(bias)?);
        let (ins, opt) = Opt::inputs(&[x], &[w.as_ref(), b.as_ref()]);
        run_op(py, x.numel(), "layer_norm", &ins, &[], move |t, _| {
            ops::layer_norm(t[0], &ns, opt.get(t, 0), opt.get(t, 1), eps)
        })
    })
}

#[pyfunction]
#[pyo3(signature = (input, num_groups, weight=None, bias=None, eps=1e-5))]
fn group_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    num_groups: i64,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    eps: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "group_norm", (input, num_groups, weight, bias, eps), {
        let x = &tensor_arg(input, "group_norm", "input", 1)?.get().t;
        let (w, b) = (opt(weight)?, opt(bias)?);
        let (ins, opt) = Opt::inputs(&[x], &[w.as_ref(), b.as_ref()]);
        run_op(py, x.numel(), "group_norm", &ins, &[], move |t, _| {
            ops::group_norm(t[0], num_groups, opt.get(t, 0), opt.get(t, 1), eps)
        })
    })
}

#[pyfunction]
#[pyo3(signature = (weight, indices, padding_idx=None, scale_grad_by_freq=false))]
fn embedding(
    py: Python<'_>,
    weight: &Bound<'_, PyTensor>,
    indices: &Bound<'_, PyTensor>,
    padding_idx: Option<i64>,
    scale_grad_by_freq: bool,
) -> PyResult<Py<PyAny>> {
    let (w, i) = (&weight.get().t, &indices.get().t);
    let work = i
        .numel()
        .saturating_mul(w.shape().last().copied().unwrap_or(1));
    run_op(py, work, "embedding", &[w, i], &[], move |t, _| {
        ops::embedding(t[0], t[1], padding_idx, scale_grad_by_freq)
    })
}

/// `embedding_bag(mode="sum")` of a 2-d input: each bag's rows summed in
/// one pass (`nn.functional.embedding_bag` checks the arguments).
#[pyfunction]
fn _embedding_bag_sum(
    py: Python<'_>,
    weight: &Bound<'_, PyTensor>,
    indices: &Bound<'_, PyTensor>,
) -> PyResult<Py<PyAny>> {
    let (w, i) = (&weight.get().t, &indices.get().t);
    let work = i
        .numel()
        .saturating_mul(w.shape().last().copied().unwrap_or(1));
    run_op(py, work, "embedding_bag_sum", &[w, i], &[], move |t, _| {
        ops::embedding_bag_sum(t[0], t[1])
    })
}

#[pyfunction]
fn embedding_renorm_(
    py: Python<'_>,
    weight: &Bound<'_, PyTensor>,
    indices: &Bound<'_, PyTensor>,
    max_norm: f64,
    norm_type: f64,
) -> PyResult<()> {
    let _op = crate::tensor::write_op("embedding_renorm_");
    let (w, i) = (&weight.get().t, &indices.get().t);
    run_inplace(
        py,
        i.numel(),
        "embedding_renorm_",
        &[w, i],
        &[],
        move |t, _| ops::embedding_renorm_(t[0], t[1], max_norm, norm_type),
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_norm, m)?)?;
    m.add_function(wrap_pyfunction!(layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(group_norm, m)?)?;
    m.add_function(wrap_pyfunction!(embedding, m)?)?;
    m.add_function(wrap_pyfunction!(_embedding_bag_sum, m)?)?;
    m.add_function(wrap_pyfunction!(embedding_renorm_, m)?)?;
    Ok(())
}

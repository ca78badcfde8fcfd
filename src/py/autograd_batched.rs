//! `autograd.grad(..., is_grads_batched=True)`: a batch of cotangents run
//! through the graph in one engine call (`autograd::run_backward_batched`),
//! with the GIL released for the whole batch.
//! `autograd.functional.jacobian(vectorize=True)` builds on it.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::convert::tensor_list;
use super::errors::enter;
use super::tensor::wrap;
use crate::autograd::{self, BackwardRequest};
use crate::tensor::{fmt_shape, Tensor};

/// The engine entry behind `autograd.grad(..., is_grads_batched=True)`: each
/// `grad_tensors[i]` has a leading batch dimension followed by `tensors[i]`'s
/// shape; returns each input's gradients stacked along the same dimension.
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors, retain_graph, create_graph, inputs, allow_unused=false, materialize_grads=false))]
#[allow(clippy::too_many_arguments)]
fn _run_backward_batched(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    grad_tensors: &Bound<'_, PyAny>,
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: &Bound<'_, PyAny>,
    allow_unused: bool,
    materialize_grads: bool,
) -> PyResult<Py<PyAny>> {
    let roots = tensor_list(tensors)?;
    let grads = tensor_list(grad_tensors)?;
    let inputs = tensor_list(inputs)?;
    if inputs.is_empty() {
        return Err(PyRuntimeError::new_err("grad requires non-empty inputs."));
    }
    if grads.len() != roots.len() {
        return Err(PyRuntimeError::new_err(format!(
            "grad requires one batched gradient per output; got {} gradients for {} outputs",
            grads.len(),
            roots.len()
        )));
    }
    let mut batch = None;
    for (i, (r, g)) in roots.iter().zip(&grads).enumerate() {
        let (rs, gs) = (r.shape(), g.shape());
        if gs.is_empty() || gs[1..] != rs[..] {
            return Err(PyRuntimeError::new_err(format!(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output \
                 as the batch dimension. The sizes of the remaining dimensions are expected to match \
                 the shape of corresponding output, but a mismatch was detected: grad_output[{i}] has \
                 a shape of {} and output[{i}] has a shape of {}. If you only want some tensors in \
                 `grad_output` to be considered batched, consider using vmap.",
                fmt_shape(&gs),
                fmt_shape(&rs)
            )));
        }
        match batch {
            None => batch = Some(gs[0]),
            Some(b) if b != gs[0] => {
                return Err(PyRuntimeError::new_err(format!(
                    "Expected all grad_outputs to have the same batch size, but grad_output[{i}] \
                     has batch size {} and grad_output[0] has batch size {b}.",
                    gs[0]
                )))
            }
            Some(_) => {}
        }
    }
    let batch = batch.unwrap_or(0);
    let retain = retain_graph.unwrap_or(create_graph);
    let targets = inputs.clone();
    let results = enter(
        py,
        "autograd.grad(is_grads_batched=True)",
        usize::MAX,
        || {
            autograd::run_backward_batched(
                BackwardRequest {
                    roots,
                    grads,
                    inputs: Some(inputs),
                    retain_graph: retain,
                    create_graph,
                    accumulate: false,
                },
                batch,
            )
        },
    )?;
    let mut out = Vec::with_capacity(results.len());
    for (r, t) in results.into_iter().zip(&targets) {
        match r {
            Some(g) => out.push(wrap(py, g)?),
            None if materialize_grads || batch == 0 => {
                let mut shape = t.shape();
                shape.insert(0, batch);
                out.push(wrap(py, Tensor::zeros(shape, t.dtype()))?)
            }
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

/// Adds `_run_backward_batched` to `ferrograd._C`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_run_backward_batched, m)?)?;
    Ok(())
}

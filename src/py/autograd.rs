//! Autograd entry points and settings: `_run_backward` (behind
//! `autograd.backward`/`autograd.grad`), grad and inference mode,
//! `_apply_inplace`, thread count, and internal helpers for tests.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::convert::{seq_of_ints, tensor_list, to_tensor_like};
use super::errors::{self, enter, enter_py};
use super::functions::t_of;
use super::tensor::{default_grad, wrap, PyTensor};
use crate::autograd::{self, BackwardRequest};
use crate::ops;
use crate::tensor::Tensor;

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
    let retain_graph = retain_graph.unwrap_or(create_graph);
    if accumulate {
        let req = BackwardRequest {
            roots,
            grads,
            inputs,
            retain_graph,
            create_graph,
            accumulate,
        };
        if crate::compile::active() {
            let grad_given = gl.first().is_some_and(|g| !g.is_none());
            super::compile::backward(py, req, grad_given)?;
        } else {
            // The GIL is always released: the engine's workers may need it for hooks.
            enter(py, "backward", usize::MAX, || autograd::run_backward(req))?;
        }
        return Ok(py.None());
    }
    // `autograd.grad`: an op from (roots, their gradients, inputs) to the
    // inputs' gradients, replayed by running the engine again.
    let r = roots.len();
    let ins: Vec<&Tensor> = roots.iter().chain(&grads).chain(&targets).collect();
    let results = super::capture::run(py, usize::MAX, "autograd.grad", &ins, &[], move |t, _| {
        let own = |ts: &[&Tensor]| ts.iter().map(|x| (*x).clone()).collect::<Vec<_>>();
        let res = autograd::run_backward(BackwardRequest {
            roots: own(&t[..r]),
            grads: own(&t[r..2 * r]),
            inputs: Some(own(&t[2 * r..])),
            retain_graph,
            create_graph,
            accumulate: false,
        })?;
        Ok(res
            .into_iter()
            .zip(&t[2 * r..])
            .map(|(g, x)| match g {
                None if materialize_grads => Some(Tensor::zeros(x.shape(), x.dtype())),
                g => g,
            })
            .collect::<Vec<_>>())
    })?;
    if crate::compile::active() {
        crate::compile::mark_dynamic();
    }
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Some(g) => out.push(wrap(py, g)?),
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

/// True when operations are recorded for autograd on this thread (not inside `no_grad()`).
#[pyfunction]
fn is_grad_enabled() -> bool {
    autograd::is_grad_enabled()
}

/// Turns recording for autograd on or off on this thread (used by the grad-mode context
/// managers).
#[pyfunction]
fn _set_grad_enabled(mode: bool) {
    if crate::compile::active() {
        super::compile::note_grad_mode(mode);
    }
    autograd::set_grad_enabled(mode)
}

/// True inside `inference_mode()` on this thread.
#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    autograd::is_inference_mode()
}

/// Turns inference mode on or off on this thread (used by `inference_mode()`).
#[pyfunction]
fn _set_inference_mode(mode: bool) {
    autograd::set_inference_mode(mode)
}

/// `input.op_(...)` for an op written in Python (`F.relu(x, inplace=True)`):
/// `compute()` gives the result, which is written into `input` as the
/// built-in in-place ops do, so a node of `compute` that saved `input`
/// keeps its value from before the write.
///
/// With `direct`, `compute` is one elementwise map of `input` and nothing
/// else (`F.relu(x, inplace=True)`): with nothing to record, the map writes
/// into `input`'s memory (see `ops::apply_inplace_map`).
#[pyfunction]
#[pyo3(signature = (input, compute, name=None, direct=false))]
fn _apply_inplace<'py>(
    input: &Bound<'py, PyTensor>,
    compute: &Bound<'py, PyAny>,
    name: Option<&str>,
    direct: bool,
) -> PyResult<Bound<'py, PyTensor>> {
    let t = &input.get().t;
    // The write is attributed to `name`, or else to the op that recorded the
    // result (`ReluBackward0` -> `relu_`), for the "modified by an inplace
    // operation" error; the guard lives until the write is done.
    let mut op_name = name.map(intern);
    let mut op = op_name.map(crate::tensor::write_op);
    // While capturing, `compute`'s ops are recorded as usual and then folded,
    // with the write, into one in-place entry (`crate::compile::fold_inplace`).
    let start = crate::compile::active().then(crate::compile::entry_count);
    let mut result = None;
    let write = || {
        let run = || {
            let r = compute.call0().map_err(super::errors::external)?;
            let r = r.cast::<PyTensor>().map_err(|_| {
                crate::error::Error::type_error("_apply_inplace: compute() must return a Tensor")
            })?;
            let r = r.get().t.clone();
            if op.is_none() {
                if let Some((n, _)) = r.grad_fn() {
                    let n = intern(&inplace_name(&n.name()));
                    op_name = Some(n);
                    op = Some(crate::tensor::write_op(n));
                }
            }
            result = Some(r.clone());
            Ok(r)
        };
        // Not while capturing: the capture records `compute`'s ops one by one.
        if direct && start.is_none() {
            ops::apply_inplace_map(t, &[], run)
        } else {
            ops::apply_inplace(t, run)
        }
    };
    match start {
        None => enter_py("_apply_inplace", write)?,
        Some(start) => {
            errors::finish(errors::catch(write))?;
            if let Some(r) = &result {
                crate::compile::fold_inplace(op_name.unwrap_or("_apply_inplace"), start, t, r);
            }
        }
    }
    drop(op);
    Ok(input.clone())
}

/// `ReluBackward0` -> `relu_`, `LeakyReluBackward1` -> `leaky_relu_`.
fn inplace_name(node: &str) -> String {
    let base = node.find("Backward").map_or(node, |i| &node[..i]);
    let mut out = String::new();
    for (i, c) in base.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out.push('_');
    out
}

/// A `'static` copy of an op name; each distinct name is leaked once.
fn intern(name: &str) -> &'static str {
    static NAMES: std::sync::OnceLock<parking_lot::Mutex<std::collections::HashSet<&'static str>>> =
        std::sync::OnceLock::new();
    let mut set = NAMES.get_or_init(Default::default).lock();
    match set.get(name) {
        Some(s) => s,
        None => {
            let s: &'static str = Box::leak(name.to_string().into_boxed_str());
            set.insert(s);
            s
        }
    }
}

/// The number of autograd nodes alive (for tests of graph memory).
#[pyfunction]
fn _live_nodes() -> usize {
    autograd::live_nodes()
}

/// Whether the graph of `outputs` reaches a leaf that requires grad other than
/// the tensors `leaves`: `func.grad` and friends then keep the gradient's
/// graph, so an outer backward reaches tensors the function closed over (a
/// model's parameters), as in PyTorch. A walk over node edges, no Python.
#[pyfunction]
fn _reaches_other_leaf(
    outputs: Vec<Bound<'_, PyTensor>>,
    leaves: Vec<Bound<'_, PyTensor>>,
) -> bool {
    use crate::autograd::Edge;
    let skip: std::collections::HashSet<usize> = leaves.iter().map(|l| l.get().t.id()).collect();
    let mut seen = std::collections::HashSet::new();
    let mut stack = Vec::new();
    for o in &outputs {
        let t = &o.get().t;
        match t.grad_fn() {
            Some((n, _)) => {
                if seen.insert(n.index()) {
                    stack.push(n);
                }
            }
            None => {
                if t.requires_grad() && !skip.contains(&t.id()) {
                    return true;
                }
            }
        }
    }
    while let Some(n) = stack.pop() {
        for e in n.edges.iter() {
            match e {
                Edge::Node(c, _) => {
                    if seen.insert(c.index()) {
                        stack.push(c.clone());
                    }
                }
                Edge::Leaf(t) => {
                    if !skip.contains(&t.id()) {
                        return true;
                    }
                }
                Edge::None => {}
            }
        }
    }
    false
}

/// Sets the number of threads kernels use above the parallel grain size.
#[pyfunction]
fn set_num_threads(n: i64) -> PyResult<()> {
    if n <= 0 {
        return Err(PyRuntimeError::new_err(
            "set_num_threads expects a positive integer",
        ));
    }
    Ok(crate::kernels::parallel::set_num_threads(n as usize)?)
}

/// The number of threads kernels use above the parallel grain size.
#[pyfunction]
fn get_num_threads() -> usize {
    crate::kernels::parallel::get_num_threads()
}

/// `Tensor.sum` over `dim` without the dtype handling (for internal callers).
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
    super::capture::run_op(py, a.numel(), "sum", &[a], &[], move |t, _| {
        ops::sum(t[0], dims.as_deref(), keepdim)
    })
}

/// `g[:, :, None] * x[:, None, :]` for matrices, recorded in no graph and written past the
/// caches when large: the per-sample weight gradients of `linear` under `vmap(grad)`.
#[pyfunction]
fn _batched_outer(
    py: Python<'_>,
    g: &Bound<'_, PyTensor>,
    x: &Bound<'_, PyTensor>,
) -> PyResult<Py<PyAny>> {
    let (a, b) = (t_of(g), t_of(x));
    let work = a
        .numel()
        .saturating_mul(b.shape().get(1).copied().unwrap_or(1));
    super::capture::run_op(py, work, "batched_outer", &[a, b], &[], |t, _| {
        ops::batched_outer(t[0], t[1])
    })
}

/// Adds the autograd entry points and settings to `ferrograd._C`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(_apply_inplace, m)?)?;
    m.add_function(wrap_pyfunction!(_live_nodes, m)?)?;
    m.add_function(wrap_pyfunction!(_reaches_other_leaf, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_sum_dims, m)?)?;
    m.add_function(wrap_pyfunction!(_batched_outer, m)?)?;
    Ok(())
}

//! `ferrograd.utils.checkpoint`'s node: the checkpointed function's graph
//! is replaced by one node whose edges are the edges that graph had out of
//! itself (`autograd::checkpoint`); its backward runs the function again
//! (a Python callable) and backpropagates through the new graph only.

use std::any::Any;
use std::borrow::Cow;

use parking_lot::Mutex;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::{PyTraverseError, PyVisit};
use smallvec::SmallVec;

use super::errors::{enter, enter_py, external};
use super::tensor::{wrap, PyTensor};
use crate::autograd::checkpoint::{self, key_of, meta_of, Fingerprint, Key};
use crate::autograd::{
    current_seq, is_grad_enabled, Backward, BackwardCtx, Grads, Meta, Node, NodeRef, SavedTensor,
};
use crate::tensor::Tensor;

const NAME: &str = "CheckpointBackward";

struct CheckpointBackward {
    /// `recompute(saved_inputs) -> list of outputs`: runs the function again
    /// under the forward's RNG state (`utils/checkpoint.py`). Dropped with
    /// the saved inputs.
    recompute: Mutex<Option<Py<PyAny>>>,
    /// `CheckpointError`, for a recomputation that differs from the forward.
    error_cls: Py<PyAny>,
    /// Which of the function's outputs are this node's outputs.
    out_index: Vec<usize>,
    /// The node's edges, as keys for matching the recomputed graph's.
    boundary: Vec<Key>,
    fingerprint: Option<Fingerprint>,
    debug: bool,
}

impl Backward for CheckpointBackward {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(NAME)
    }

    fn apply(&self, c: &BackwardCtx<'_>) -> crate::Result<Grads> {
        Python::attach(|py| self.call(py, c).map_err(external))
    }

    fn on_release(&self) {
        let f = self.recompute.lock().take();
        if let Some(f) = f {
            Python::attach(|_| drop(f));
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl CheckpointBackward {
    fn call(&self, py: Python<'_>, c: &BackwardCtx<'_>) -> PyResult<Grads> {
        let recompute = self
            .recompute
            .lock()
            .as_ref()
            .map(|f| f.clone_ref(py))
            .ok_or_else(|| PyRuntimeError::new_err("checkpoint: the function was released"))?;
        let inputs: Vec<Py<PyAny>> = c
            .saved
            .iter()
            .map(|s| match s {
                Some(t) => wrap(py, t.clone()),
                None => Ok(py.None()),
            })
            .collect::<PyResult<_>>()?;
        let mark = current_seq();
        let outs = recompute.bind(py).call1((PyList::new(py, inputs)?,))?;
        let outs: Vec<Option<Tensor>> = outs
            .try_iter()?
            .map(|o| o.map(|o| o.cast::<PyTensor>().ok().map(|t| t.get().t.clone())))
            .collect::<PyResult<_>>()?;
        let mut roots = Vec::new();
        let mut recomputed = Vec::new();
        for (j, &k) in self.out_index.iter().enumerate() {
            let Some(Some(t)) = outs.get(k) else {
                return Err(self.error(
                    py,
                    format!("ferrograd.utils.checkpoint: output {k} of the function is not a tensor when recomputed, but was one in the forward pass."),
                ));
            };
            recomputed.push(t.clone());
            if let Some(Some(g)) = c.grads.get(j) {
                roots.push((t.clone(), g.clone()));
            }
        }
        let region = enter_py("checkpoint", || checkpoint::region(&recomputed, mark))?;
        if let Some(fwd) = &self.fingerprint {
            if let Some(msg) =
                checkpoint::compare(fwd, &checkpoint::fingerprint(&region), self.debug)
            {
                return Err(self.error(py, msg));
            }
        }
        if let Some(e) = region
            .boundary
            .iter()
            .find(|e| key_of(e).is_some_and(|k| !self.boundary.contains(&k)))
        {
            let m = meta_of(e);
            return Err(self.error(
                py,
                format!(
                    "ferrograd.utils.checkpoint: the recomputation used a tensor that requires grad (shape {}) which the forward pass did not use; the function must do the same work when run again.",
                    crate::tensor::fmt_shape(&m.shape)
                ),
            ));
        }
        drop(region);
        // Without a graph of this backward, the recomputed nodes' saved
        // tensors can go as soon as each node ran.
        let release = !is_grad_enabled();
        let mut got = enter(py, "checkpoint", usize::MAX, || {
            checkpoint::backward(&roots, mark, release)
        })?;
        Ok(self.boundary.iter().map(|k| got.remove(k)).collect())
    }

    fn error(&self, py: Python<'_>, msg: String) -> PyErr {
        match self.error_cls.bind(py).call1((msg.clone(),)) {
            Ok(e) => PyErr::from_value(e),
            Err(_) => PyRuntimeError::new_err(msg),
        }
    }
}

/// Reports the Python objects a checkpoint node keeps alive (the
/// recomputation closure holds the function, which may hold the output),
/// for `Tensor.__traverse__`. Never blocks.
pub(crate) fn traverse(b: &dyn Backward, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    if let Some(c) = b.as_any().downcast_ref::<CheckpointBackward>() {
        if let Some(f) = c.recompute.try_lock() {
            if let Some(f) = f.as_ref() {
                visit.call(f)?;
            }
        }
        visit.call(&c.error_cls)?;
    }
    Ok(())
}

fn tensor_of(obj: &Bound<'_, PyAny>) -> Option<Tensor> {
    obj.cast::<PyTensor>().ok().map(|t| t.get().t.clone())
}

/// Replaces the graph the checkpointed function recorded since `mark` (its
/// nodes and saved tensors) by one node that saves only `inputs` and calls
/// `recompute(inputs)` in backward. Returns the outputs to hand back: an
/// output of that graph becomes a fresh alias attached to the new node,
/// anything else is returned unchanged.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, mark, recompute, error_cls, determinism_check, debug))]
#[allow(clippy::too_many_arguments)]
fn _checkpoint_node<'py>(
    py: Python<'py>,
    outputs: &Bound<'py, PyList>,
    inputs: &Bound<'py, PyList>,
    mark: u64,
    recompute: Py<PyAny>,
    error_cls: Py<PyAny>,
    determinism_check: bool,
    debug: bool,
) -> PyResult<Bound<'py, PyList>> {
    let outs: Vec<Option<Tensor>> = outputs.iter().map(|o| tensor_of(&o)).collect();
    let mut out_index = Vec::new();
    let mut attached = Vec::new();
    for (k, t) in outs.iter().enumerate() {
        let Some(t) = t else { continue };
        if let Some((n, _)) = enter_py("checkpoint", || t.try_grad_fn())? {
            if n.seq > mark {
                out_index.push(k);
                attached.push(t.clone());
            }
        }
    }
    if attached.is_empty() {
        return Ok(outputs.clone());
    }
    let region = enter_py("checkpoint", || checkpoint::region(&attached, mark))?;
    let fingerprint = determinism_check.then(|| checkpoint::fingerprint(&region));
    let boundary: Vec<Key> = region.boundary.iter().filter_map(key_of).collect();
    let metas: SmallVec<[Meta; 2]> = region.boundary.iter().map(meta_of).collect();
    let edges = region.boundary.iter().cloned().collect();
    let out_meta: SmallVec<[Meta; 1]> = attached.iter().map(Meta::of).collect();
    let saved: SmallVec<[Option<SavedTensor>; 2]> = inputs
        .iter()
        .map(|i| tensor_of(&i).map(|t| SavedTensor::input(&t)))
        .collect();
    drop(region);
    let node = NodeRef::new(Node::new(
        edges,
        metas,
        out_meta,
        saved,
        Box::new(CheckpointBackward {
            recompute: Mutex::new(Some(recompute)),
            error_cls,
            out_index: out_index.clone(),
            boundary,
            fingerprint,
            debug,
        }),
    ));
    let mut result: Vec<Py<PyAny>> = outputs.iter().map(|o| o.unbind()).collect();
    for (j, (&k, t)) in out_index.iter().zip(&attached).enumerate() {
        let alias = t.detach();
        alias.set_grad_fn(node.clone(), j as u32);
        result[k] = wrap(py, alias)?;
    }
    PyList::new(py, result)
}

/// False inside a backward that was given `inputs` (`autograd.grad`,
/// `backward(inputs=...)`), which the reentrant checkpoint cannot serve.
#[pyfunction]
fn _is_checkpoint_valid() -> bool {
    checkpoint::is_valid()
}

/// The creation sequence of the newest node recorded on this thread.
#[pyfunction]
fn _current_seq() -> u64 {
    current_seq()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_checkpoint_node, m)?)?;
    m.add_function(wrap_pyfunction!(_is_checkpoint_valid, m)?)?;
    m.add_function(wrap_pyfunction!(_current_seq, m)?)?;
    Ok(())
}

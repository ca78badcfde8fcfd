//! Custom `autograd.Function`s: a graph node whose backward rule is a Python
//! callable. The engine runs without the GIL and takes it only to call it.

use std::any::Any;
use std::borrow::Cow;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use smallvec::SmallVec;

use super::errors::external;
use super::tensor::{wrap, PyTensor};
use crate::autograd::{
    try_gradient_edge, Backward, BackwardCtx, Edge, Grads, Meta, Node, NodeRef, SavedTensor,
};
use crate::tensor::Tensor;

/// The backward rule of one `Function.apply` call.
pub struct PyFunctionBackward {
    name: String,
    /// The `ctx` object handed to `forward`; backward receives the same one.
    pub ctx: Py<PyAny>,
    /// `cls.backward` (or its `once_differentiable` wrapper).
    pub backward: Py<PyAny>,
    materialize: bool,
    /// Which positional arguments of `forward` were tensors.
    tensor_args: Vec<bool>,
}

impl Backward for PyFunctionBackward {
    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(self.name.clone())
    }

    fn materialize_grads(&self) -> bool {
        self.materialize
    }

    fn validate_outputs(&self) -> bool {
        true
    }

    fn apply(&self, c: &BackwardCtx<'_>) -> crate::Result<Grads> {
        Python::attach(|py| self.call(py, c).map_err(external))
    }

    fn on_release(&self) {
        Python::attach(|py| {
            // Reading saved_tensors afterwards raises PyTorch's "second time" error.
            let _ = self.ctx.bind(py).setattr("_released", true);
        });
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl PyFunctionBackward {
    fn call(&self, py: Python<'_>, c: &BackwardCtx<'_>) -> PyResult<Grads> {
        let ctx = self.ctx.bind(py);
        let saved: Vec<Py<PyAny>> = c
            .saved
            .iter()
            .map(|s| match s {
                Some(t) => wrap(py, t.clone()),
                None => Ok(py.None()),
            })
            .collect::<PyResult<_>>()?;
        ctx.setattr("_unpacked", PyTuple::new(py, saved)?)?;
        let grads: Vec<Py<PyAny>> = c
            .grads
            .iter()
            .map(|g| match g {
                Some(t) => wrap(py, t.clone()),
                None => Ok(py.None()),
            })
            .collect::<PyResult<_>>()?;
        let mut args = vec![ctx.clone().unbind()];
        args.extend(grads);
        let result = self.backward.bind(py).call1(PyTuple::new(py, args)?);
        let _ = ctx.setattr("_unpacked", py.None());
        let result = result?;
        let items: Vec<Bound<'_, PyAny>> = match result.cast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => vec![result],
        };
        let expected = self.tensor_args.len();
        if items.len() < expected || items[expected..].iter().any(|x| !x.is_none()) {
            return Err(PyRuntimeError::new_err(format!(
                "function {} returned an incorrect number of gradients (expected {expected}, got {})",
                self.name,
                items.len()
            )));
        }
        let mut out: Grads = SmallVec::with_capacity(expected);
        for (i, item) in items.iter().take(expected).enumerate() {
            if item.is_none() {
                out.push(None);
                continue;
            }
            let t = item.cast::<PyTensor>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "function {} returned a gradient that is not a Tensor or None at index {i}",
                    self.name
                ))
            })?;
            if !self.tensor_args[i] {
                return Err(PyRuntimeError::new_err(format!(
                    "function {} returned a gradient different than None at position {}, but the corresponding forward input was not a Variable",
                    self.name,
                    i + 1
                )));
            }
            out.push(Some(t.get().t.clone()));
        }
        Ok(out)
    }
}

/// A non-tensor argument or output has no gradient; its slot still needs metadata.
fn meta_or_placeholder(t: &Option<Tensor>) -> Meta {
    match t {
        Some(t) => Meta::of(t),
        None => Meta {
            shape: Default::default(),
            dtype: crate::tensor::DType::F32,
        },
    }
}

fn tensor_of(obj: &Bound<'_, PyAny>) -> Option<Tensor> {
    obj.cast::<PyTensor>().ok().map(|t| t.get().t.clone())
}

fn contains(list: &[Tensor], t: &Tensor) -> bool {
    list.iter().any(|x| x.same(t))
}

/// Attaches the outputs of a custom Function's forward to a new node.
///
/// `args` are forward's positional arguments (tensors get edges, anything
/// else gets none); `outputs` are the tensors forward returned. Returns the
/// outputs as they should be handed back to the caller: a fresh alias for an
/// input returned unchanged, the input itself for one marked dirty.
#[pyfunction]
#[pyo3(signature = (ctx, backward, name, args, outputs, dirty, non_differentiable, saved, materialize_grads))]
#[allow(clippy::too_many_arguments)]
pub fn _function_node<'py>(
    py: Python<'py>,
    ctx: Py<PyAny>,
    backward: Py<PyAny>,
    name: String,
    args: &Bound<'py, PyTuple>,
    outputs: &Bound<'py, PyList>,
    dirty: &Bound<'py, PyList>,
    non_differentiable: &Bound<'py, PyList>,
    saved: &Bound<'py, PyList>,
    materialize_grads: bool,
) -> PyResult<Bound<'py, PyList>> {
    if crate::compile::active() {
        // `Function.apply` records itself through `_capture_pyop`, which
        // pauses the capture; a direct call has no replay rule.
        crate::compile::no_rule("autograd.Function");
    }
    let inputs: Vec<Option<Tensor>> = args.iter().map(|a| tensor_of(&a)).collect();
    let tensor_args: Vec<bool> = inputs.iter().map(|t| t.is_some()).collect();
    let dirty: Vec<Tensor> = dirty.iter().filter_map(|d| tensor_of(&d)).collect();
    let non_diff: Vec<Tensor> = non_differentiable
        .iter()
        .filter_map(|d| tensor_of(&d))
        .collect();
    let is_input = |t: &Tensor| inputs.iter().flatten().any(|i| i.same(t));

    for d in &dirty {
        if !is_input(d) {
            return Err(PyRuntimeError::new_err(
                "Some elements marked as dirty during the forward method were not returned as output. The inputs that are modified inplace must all be outputs of the Function.",
            ));
        }
        crate::ops::check_inplace(d).map_err(PyErr::from)?;
    }

    // Outputs as the caller will see them (aliases for returned inputs).
    let mut outs: Vec<Bound<'py, PyAny>> = Vec::with_capacity(outputs.len());
    let mut out_tensors: Vec<Option<Tensor>> = Vec::with_capacity(outputs.len());
    for o in outputs.iter() {
        match tensor_of(&o) {
            Some(t) if is_input(&t) && !contains(&dirty, &t) => {
                let alias = t.detach();
                outs.push(wrap(py, alias.clone())?.into_bound(py));
                out_tensors.push(Some(alias));
            }
            Some(t) => {
                outs.push(o.clone());
                out_tensors.push(Some(t));
            }
            None => {
                outs.push(o.clone());
                out_tensors.push(None);
            }
        }
    }

    let saved: SmallVec<[Option<SavedTensor>; 2]> = saved
        .iter()
        .map(|s| {
            tensor_of(&s).map(|t| {
                match out_tensors
                    .iter()
                    .position(|o| o.as_ref().is_some_and(|o| o.same(&t)))
                {
                    Some(k) => SavedTensor::output(&t, k as u32),
                    None => SavedTensor::input(&t),
                }
            })
        })
        .collect();
    // A saved_tensors_hooks pack hook that raised (saving cannot fail in itself).
    if let Some(e) = crate::autograd::take_deferred_error() {
        return Err(e.into());
    }

    let edges: SmallVec<[Edge; 2]> = inputs
        .iter()
        .map(|t| t.as_ref().map_or(Ok(Edge::None), try_gradient_edge))
        .collect::<crate::Result<_>>()?;
    let metas: SmallVec<[Meta; 2]> = inputs.iter().map(meta_or_placeholder).collect();
    let out_meta: SmallVec<[Meta; 1]> = out_tensors.iter().map(meta_or_placeholder).collect();

    let node = NodeRef::new(Node::new(
        edges,
        metas,
        out_meta,
        saved,
        Box::new(PyFunctionBackward {
            name,
            ctx,
            backward,
            materialize: materialize_grads,
            tensor_args,
        }),
    ));
    for (k, t) in out_tensors.iter().enumerate() {
        let Some(t) = t else { continue };
        if contains(&non_diff, t) || !t.dtype().is_float() {
            continue;
        }
        t.set_grad_fn(node.clone(), k as u32);
    }
    PyList::new(py, outs)
}

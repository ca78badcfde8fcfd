//! Autograd attributes and entry points of `Tensor`: `requires_grad`,
//! `grad`, `grad_fn`, views' bases, `detach`, hooks and `backward`.

use std::sync::Arc;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;

use super::{wrap, PyTensor};
use crate::autograd::{self, BackwardRequest};
use crate::py::capture;
use crate::py::convert::{tensor_list, to_tensor_like};
use crate::py::errors::enter;
use crate::py::node::{grad_fn_object, PyHook, RemovableHandle};
use crate::tensor::Tensor;

/// Implicit `ones` for scalar outputs, PyTorch's error otherwise.
pub fn default_grad(t: &Tensor) -> PyResult<Tensor> {
    if t.numel() != 1 {
        return Err(PyRuntimeError::new_err(
            "grad can be implicitly created only for scalar outputs",
        ));
    }
    Ok(Tensor::full(t.shape(), 1.0, t.dtype()))
}

const NON_LEAF_GRAD: &std::ffi::CStr = c"The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more informations.";
#[pymethods]
impl PyTensor {
    /// Whether operations on this tensor are recorded for autograd. Only a leaf's flag can be
    /// set.
    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.t.requires_grad()
    }

    /// The setter refuses any value on a non-leaf (PyTorch's
    /// `THPVariable_set_requires_grad`); `requires_grad_(True)` on a
    /// non-leaf is allowed.
    #[setter]
    fn set_requires_grad(&self, on: bool) -> PyResult<()> {
        if !self.t.is_leaf() {
            let mut msg =
                String::from("you can only change requires_grad flags of leaf variables.");
            if !on {
                msg.push_str(" If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
            }
            return Err(PyRuntimeError::new_err(msg));
        }
        set_requires_grad_recorded(&self.t, on)
    }

    /// Sets `requires_grad` in place (allowed on a non-leaf too) and returns the tensor itself.
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_<'py>(
        slf: &Bound<'py, Self>,
        requires_grad: bool,
    ) -> PyResult<Bound<'py, Self>> {
        set_requires_grad_recorded(&slf.get().t, requires_grad)?;
        Ok(slf.clone())
    }

    /// The gradient accumulated into this leaf by `backward()` (or a non-leaf that called
    /// `retain_grad()`), or None.
    #[getter]
    fn get_grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let grad = self.t.grad();
        if grad.is_none() && !self.t.is_leaf() && !self.t.meta().retains_grad {
            // PyTorch's warning: reading a non-leaf's .grad is almost always a mistake.
            let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
            PyErr::warn(py, category.as_any(), NON_LEAF_GRAD, 1)?;
        }
        grad.map(|g| wrap(py, g)).transpose()
    }

    #[setter]
    fn set_grad(&self, g: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let g = match g {
            None => None,
            Some(o) if o.is_none() => None,
            Some(o) => {
                let g = o
                    .cast::<PyTensor>()
                    .map_err(|_| {
                        PyTypeError::new_err("assigned grad expected to be a Tensor or None")
                    })?
                    .get()
                    .t
                    .clone();
                if g.shape() != self.t.shape() {
                    return Err(PyRuntimeError::new_err(
                        "assigned grad has data of a different size",
                    ));
                }
                if g.dtype() != self.t.dtype() {
                    return Err(PyRuntimeError::new_err(
                        "assigned grad has data of a different type",
                    ));
                }
                Some(g)
            }
        };
        if crate::compile::active() {
            crate::py::compile::note_set_grad(&self.t, g.as_ref());
        }
        self.t.set_grad(g);
        Ok(())
    }

    /// The autograd node that produced this tensor (e.g. `MulBackward0`), or None for a leaf.
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        grad_fn_object(py, &self.t)
    }

    /// The tensor whose memory this view shares (the root, never a view), or None.
    #[getter]
    fn _base(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.t.base().map(|b| wrap(py, b.clone())).transpose()
    }

    fn _is_view(&self) -> bool {
        self.t.is_view()
    }

    /// True for a tensor not produced by a recorded operation (a user-created tensor, or one
    /// that does not require grad).
    #[getter]
    fn is_leaf(&self) -> PyResult<bool> {
        Ok(self.t.try_is_leaf()?)
    }

    /// True when this non-leaf keeps its `.grad` after `backward()` (see `retain_grad()`).
    #[getter]
    fn retains_grad(&self) -> bool {
        !self.t.is_leaf() && self.t.meta().retains_grad
    }

    /// Makes this non-leaf tensor keep its gradient in `.grad` after `backward()`.
    fn retain_grad(&self) -> PyResult<()> {
        if crate::compile::active() {
            // A replay's tensors are new: the flag would not be on them.
            crate::compile::no_rule("retain_grad");
        }
        if !self.t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "can't retain_grad on Tensor that has requires_grad=False",
            ));
        }
        if let Some((node, nr)) = self.t.grad_fn() {
            let mut m = self.t.meta();
            if !m.retains_grad {
                m.retains_grad = true;
                drop(m);
                node.add_retain(nr, self.t.downgrade());
            }
        }
        Ok(())
    }

    /// The tensor's values as a new tensor that shares its memory but is outside the graph;
    /// assigning sets this tensor's values.
    #[getter]
    fn get_data(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        capture::run_op(py, 0, "data", &[&self.t], &[], |t, _| Ok(t[0].data_alias()))
    }

    #[setter]
    fn set_data(&self, other: &Bound<'_, PyTensor>) {
        if crate::compile::active() {
            crate::compile::no_rule("set_data");
        }
        // Cloned in its own statement: `t.data = t` would otherwise hold the
        // read lock of the view `set_view` is about to write.
        let view = other.get().t.view().clone();
        self.t.set_view(view);
    }

    /// Returns a new tensor sharing this one's memory, outside the graph (does not require
    /// grad).
    fn detach(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // Recorded: a replay returns a detached alias of the replayed tensor.
        capture::run_op(py, 0, "detach", &[&self.t], &[], |t, _| Ok(t[0].detach()))
    }

    /// Detaches this tensor from the graph in place, making it a leaf that does not require
    /// grad.
    fn detach_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        if slf.get().t.is_view() && slf.get().t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "Can't detach views in-place. Use detach() instead.",
            ));
        }
        capture::run_inplace(slf.py(), 0, "detach_", &[&slf.get().t], &[], |t, _| {
            t[0].detach_in_place();
            Ok(())
        })?;
        Ok(slf.clone())
    }

    /// Registers `hook(grad)`, called with this tensor's gradient during backward; a returned
    /// tensor replaces the gradient. Returns a handle whose `remove()` unregisters it.
    fn register_hook(slf: &Bound<'_, Self>, hook: Py<PyAny>) -> PyResult<RemovableHandle> {
        if crate::compile::active() {
            // The hook would be on the capture call's tensor, not a replay's.
            crate::compile::no_rule("register_hook");
        }
        let t = &slf.get().t;
        if !t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let id = crate::py::node::next_hook_id();
        let h: Arc<dyn autograd::GradHook> = Arc::new(PyHook(hook));
        match t.grad_fn() {
            Some((node, nr)) => {
                node.add_pre_hook(id, nr, h);
                Ok(RemovableHandle::on_node(id, t.downgrade()))
            }
            None => {
                t.meta().hooks.push((id, h));
                Ok(RemovableHandle::on_leaf(id, t.downgrade()))
            }
        }
    }

    /// Computes the gradient of this tensor with respect to the graph's leaves and accumulates
    /// it into their `.grad`. `gradient` is required unless the tensor has one element;
    /// `retain_graph` keeps the graph for another backward, `create_graph` records the backward
    /// pass for higher-order gradients, `inputs` limits the leaves.
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let grad_given = gradient.is_some_and(|g| !g.is_none());
        let grad = match gradient {
            Some(g) if !g.is_none() => to_tensor_like(g, Some(&self.t))?,
            _ => default_grad(&self.t)?,
        };
        let inputs = match inputs {
            None => None,
            Some(i) if i.is_none() => None,
            Some(i) => Some(tensor_list(i)?),
        };
        if let Some(i) = &inputs {
            if i.is_empty() {
                return Err(PyRuntimeError::new_err(
                    "`inputs` argument to `backward()` cannot be empty.",
                ));
            }
        }
        let req = BackwardRequest {
            roots: vec![self.t.clone()],
            grads: vec![grad],
            inputs,
            retain_graph: retain_graph.unwrap_or(create_graph),
            create_graph,
            accumulate: true,
        };
        if crate::compile::active() {
            return crate::py::compile::backward(py, req, grad_given);
        }
        // The GIL is always released: the engine's workers may need it for hooks.
        enter(py, "backward", usize::MAX, || autograd::run_backward(req))?;
        Ok(())
    }
}

/// `requires_grad_` and the `requires_grad` setter: recorded, so a tensor made
/// inside a compiled function is flagged on every replay too.
fn set_requires_grad_recorded(t: &Tensor, on: bool) -> PyResult<()> {
    if !crate::compile::active() {
        return Ok(t.set_requires_grad(on)?);
    }
    Python::attach(|py| {
        capture::run_inplace(py, 0, "requires_grad_", &[t], &[], move |t, _| {
            t[0].set_requires_grad(on)
        })
    })
}

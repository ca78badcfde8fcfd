//! Python side of autograd hooks beyond `Tensor.register_hook`:
//! `Node.register_prehook` / `register_hook`, `Node.metadata`,
//! `Tensor.register_post_accumulate_grad_hook`, the `saved_tensors_hooks`
//! stack, and `Node._saved_<name>` / `_raw_saved_<name>` introspection.

use std::sync::Arc;

use pyo3::exceptions::{PyAttributeError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::errors::{enter, enter_py, external};
use super::function::PyFunctionBackward;
use super::node::{next_hook_id, PyNode, RemovableHandle};
use super::tensor::{wrap, PyTensor};
use crate::autograd::hooks::{
    pop_saved_hooks, push_saved_hooks, NodePostHook, NodePreHook, Packed, SavedHooks, SavedSlot,
};
use crate::autograd::{Edge, GradHook, Grads, LeafHookStage, Node, NodeRef};
use crate::tensor::Tensor;

fn hook_name(h: &Bound<'_, PyAny>) -> String {
    h.getattr("__name__")
        .ok()
        .and_then(|n| n.extract::<String>().ok())
        .unwrap_or_else(|| "<unknown>".to_string())
}

fn type_name(r: &Bound<'_, PyAny>) -> String {
    r.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

fn grads_tuple<'py>(py: Python<'py>, g: &Grads) -> PyResult<Bound<'py, PyTuple>> {
    let items: PyResult<Vec<Py<PyAny>>> = g
        .iter()
        .map(|g| match g {
            Some(t) => wrap(py, t.clone()),
            None => Ok(py.None()),
        })
        .collect();
    PyTuple::new(py, items?)
}

/// PyTorch's `check_result` for a function hook's return: a tuple of the
/// same length whose tensors keep each gradient's dtype and shape.
fn grads_from(hook: &Bound<'_, PyAny>, r: &Bound<'_, PyAny>, was: &Grads) -> crate::Result<Grads> {
    let name = hook_name(hook);
    let Ok(tup) = r.cast::<PyTuple>() else {
        return Err(crate::Error::type_error(format!(
            "expected tuple, but hook returned '{}'",
            type_name(r)
        )));
    };
    if tup.len() != was.len() {
        return Err(crate::Error::runtime(format!(
            "hook '{name}' has returned an incorrect number of values (got {}, but expected {})",
            tup.len(),
            was.len()
        )));
    }
    let mut out = Grads::new();
    for (item, old) in tup.iter().zip(was.iter()) {
        if item.is_none() {
            out.push(None);
            continue;
        }
        let Ok(t) = item.cast::<PyTensor>() else {
            return Err(crate::Error::type_error(format!(
                "expected Variable, but hook returned '{}'",
                type_name(&item)
            )));
        };
        let new = t.get().t.clone();
        let Some(old) = old else {
            return Err(crate::Error::runtime(
                "can't replace a None gradient with a non-None value",
            ));
        };
        if new.dtype() != old.dtype() {
            return Err(crate::Error::runtime(format!(
                "hook '{name}' has changed the type of value (was CPU{}Type got CPU{}Type)",
                old.dtype().scalar_name(),
                new.dtype().scalar_name()
            )));
        }
        if new.shape() != old.shape() {
            return Err(crate::Error::runtime(format!(
                "hook '{name}' has changed the size of value"
            )));
        }
        out.push(Some(new));
    }
    Ok(out)
}

/// `Node.register_prehook`'s callable.
pub struct PyNodePreHook(pub Py<PyAny>);

impl NodePreHook for PyNodePreHook {
    fn call(&self, grad_outputs: &Grads) -> crate::Result<Option<Grads>> {
        Python::attach(|py| {
            let hook = self.0.bind(py);
            let r = hook
                .call1((grads_tuple(py, grad_outputs).map_err(external)?,))
                .map_err(external)?;
            if r.is_none() {
                return Ok(None);
            }
            grads_from(hook, &r, grad_outputs).map(Some)
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `Node.register_hook`'s callable.
pub struct PyNodePostHook(pub Py<PyAny>);

impl NodePostHook for PyNodePostHook {
    fn call(&self, grad_inputs: &Grads, grad_outputs: &Grads) -> crate::Result<Option<Grads>> {
        Python::attach(|py| {
            let hook = self.0.bind(py);
            let gi = grads_tuple(py, grad_inputs).map_err(external)?;
            let go = grads_tuple(py, grad_outputs).map_err(external)?;
            let r = hook.call1((gi, go)).map_err(external)?;
            if r.is_none() {
                return Ok(None);
            }
            grads_from(hook, &r, grad_inputs).map(Some)
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `Tensor.register_post_accumulate_grad_hook`'s callable: called with the
/// leaf after its `.grad` was written.
pub struct PyPostAccumulateHook(pub Py<PyAny>);

impl GradHook for PyPostAccumulateHook {
    fn call(&self, leaf: &Tensor) -> crate::Result<Option<Tensor>> {
        Python::attach(|py| {
            let t = wrap(py, leaf.clone()).map_err(external)?;
            let r = self.0.bind(py).call1((t,)).map_err(external)?;
            if !r.is_none() {
                return Err(crate::Error::runtime(
                    "Tensor post accumulate grad hooks should return None.",
                ));
            }
            Ok(None)
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn stage(&self) -> LeafHookStage {
        LeafHookStage::PostAccumulate
    }
}

/// `AccumulateGrad.register_prehook`'s callable: `hook((grad,))` before
/// `.grad` is written, after the leaf's tensor hooks; may return a
/// replacement `(grad,)`.
pub struct PyAccumulatePreHook(pub PyNodePreHook);

impl GradHook for PyAccumulatePreHook {
    fn call(&self, grad: &Tensor) -> crate::Result<Option<Tensor>> {
        let outs: Grads = smallvec::smallvec![Some(grad.clone())];
        let new = self.0.call(&outs)?;
        Ok(new.and_then(|mut g| g.pop().flatten()))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn stage(&self) -> LeafHookStage {
        LeafHookStage::NodePre
    }
}

/// `AccumulateGrad.register_hook`'s callable: `hook((), (grad,))` after
/// `.grad` was written; it has no gradient inputs to replace.
pub struct PyAccumulatePostHook(pub PyNodePostHook);

impl GradHook for PyAccumulatePostHook {
    fn call(&self, grad: &Tensor) -> crate::Result<Option<Tensor>> {
        let outs: Grads = smallvec::smallvec![Some(grad.clone())];
        self.0.call(&Grads::new(), &outs)?;
        Ok(None)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn stage(&self) -> LeafHookStage {
        LeafHookStage::NodePost
    }
}

/// A `saved_tensors_hooks(pack_hook, unpack_hook)` pair.
struct PySavedHooks {
    pack: Py<PyAny>,
    unpack: Py<PyAny>,
}

/// What `pack_hook` returned, with the `unpack_hook` that turns it back.
pub struct PyPacked {
    pub obj: Py<PyAny>,
    unpack: Py<PyAny>,
}

impl SavedHooks for PySavedHooks {
    fn pack(&self, t: &Tensor) -> crate::Result<Arc<dyn Packed>> {
        Python::attach(|py| {
            let x = wrap(py, t.clone()).map_err(external)?;
            let obj = self.pack.bind(py).call1((x,)).map_err(external)?;
            Ok(Arc::new(PyPacked {
                obj: obj.unbind(),
                unpack: self.unpack.clone_ref(py),
            }) as Arc<dyn Packed>)
        })
    }
}

impl Packed for PyPacked {
    fn unpack(&self) -> crate::Result<Tensor> {
        Python::attach(|py| {
            let r = self
                .unpack
                .bind(py)
                .call1((self.obj.clone_ref(py),))
                .map_err(external)?;
            match r.cast::<PyTensor>() {
                Ok(t) => Ok(t.get().t.clone()),
                Err(_) => Err(crate::Error::type_error(format!(
                    "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}",
                    type_name(&r)
                ))),
            }
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub(crate) fn check_callable(f: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    if !f.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be callable, got {}",
            type_name(f)
        )));
    }
    Ok(())
}

/// `saved_tensors_hooks.__enter__`: pushes a pack/unpack pair on this
/// thread's stack; tensors saved from now on go through the innermost pair.
#[pyfunction]
fn _push_saved_tensors_hooks(
    pack_hook: Bound<'_, PyAny>,
    unpack_hook: Bound<'_, PyAny>,
) -> PyResult<()> {
    check_callable(&pack_hook, "pack_hook")?;
    check_callable(&unpack_hook, "unpack_hook")?;
    push_saved_hooks(Arc::new(PySavedHooks {
        pack: pack_hook.unbind(),
        unpack: unpack_hook.unbind(),
    }));
    Ok(())
}

/// `saved_tensors_hooks.__exit__`: pops the innermost pair.
#[pyfunction]
fn _pop_saved_tensors_hooks() -> PyResult<()> {
    match pop_saved_hooks() {
        Some(_) => Ok(()),
        None => Err(PyRuntimeError::new_err(
            "no saved tensors hooks to pop on this thread",
        )),
    }
}

/// PyTorch's names for what a node saved: inputs as `self`, `other`,
/// `input2`, ... (by which input they are), outputs as `result` (`result0`,
/// `result1`, ... when several).
fn saved_names(node: &NodeRef, slots: &[Option<SavedSlot>]) -> Vec<Option<String>> {
    let n_out = slots.iter().flatten().filter(|s| s.is_output).count();
    let mut used = vec![false; node.edges.len().max(slots.len())];
    let mut out_k = 0;
    let mut names = vec![None; slots.len()];
    let pos_name = |j: usize| match j {
        0 => "self".to_string(),
        1 => "other".to_string(),
        j => format!("input{j}"),
    };
    // Identity matches first, so `x * y` names both right even if only `y` was saved.
    for (i, s) in slots.iter().enumerate() {
        let Some(s) = s else { continue };
        if s.is_output {
            names[i] = Some(if n_out == 1 {
                "result".to_string()
            } else {
                format!("result{out_k}")
            });
            out_k += 1;
            continue;
        }
        let Some(t) = &s.raw else { continue };
        let j = node.edges.iter().enumerate().position(|(j, e)| {
            !used[j]
                && match e {
                    Edge::Leaf(l) => l.same(t),
                    Edge::Node(n, nr) => {
                        t.grad_fn().is_some_and(|(m, mr)| m.ptr_eq(n) && mr == *nr)
                    }
                    Edge::None => false,
                }
        });
        if let Some(j) = j {
            used[j] = true;
            names[i] = Some(pos_name(j));
        }
    }
    for (i, s) in slots.iter().enumerate() {
        if s.is_none() || names[i].is_some() {
            continue;
        }
        let j = used.iter().position(|u| !u).unwrap_or(used.len());
        if j < used.len() {
            used[j] = true;
        }
        names[i] = Some(pos_name(j));
    }
    names
}

fn freed_err() -> PyErr {
    PyRuntimeError::new_err(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.",
    )
}

/// `grad_fn._raw_saved_<name>`: one saved slot, on which a pack/unpack pair
/// can be registered (`register_hooks`).
#[pyclass(name = "SavedTensor", module = "ferrograd.autograd.graph", frozen)]
pub struct PySavedTensor {
    node: NodeRef,
    index: usize,
}

#[pymethods]
impl PySavedTensor {
    /// Packs this saved tensor now with `pack_hook`; backward (and
    /// `_saved_<name>`) reads it through `unpack_hook`. One pair per tensor.
    fn register_hooks(
        &self,
        py: Python<'_>,
        pack_hook: Bound<'_, PyAny>,
        unpack_hook: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        check_callable(&pack_hook, "pack_hook")?;
        check_callable(&unpack_hook, "unpack_hook")?;
        let hooks = PySavedHooks {
            pack: pack_hook.unbind(),
            unpack: unpack_hook.unbind(),
        };
        let _ = py;
        enter_py("register_hooks", || {
            self.node.pack_saved_at(self.index, &hooks)
        })
    }

    fn __repr__(&self) -> String {
        format!("<SavedTensor of {}>", self.node.name())
    }
}

#[pymethods]
impl PyNode {
    /// Registers `fn(grad_outputs) -> tuple | None`, called before this node
    /// runs (after the tensor hooks of its outputs); a returned tuple
    /// replaces the gradients. Returns a removable handle.
    fn register_prehook(&self, r#fn: Bound<'_, PyAny>) -> PyResult<RemovableHandle> {
        check_callable(&r#fn, "hook")?;
        no_hooks_in_capture();
        let id = next_hook_id();
        self.node
            .add_node_pre_hook(id, Arc::new(PyNodePreHook(r#fn.unbind())));
        Ok(RemovableHandle::on_graph_node(id, self.node.clone()))
    }

    /// Registers `fn(grad_inputs, grad_outputs) -> tuple | None`, called
    /// after this node ran; a returned tuple replaces `grad_inputs`. Returns
    /// a removable handle.
    fn register_hook(&self, r#fn: Bound<'_, PyAny>) -> PyResult<RemovableHandle> {
        check_callable(&r#fn, "hook")?;
        no_hooks_in_capture();
        let id = next_hook_id();
        self.node
            .add_node_post_hook(id, Arc::new(PyNodePostHook(r#fn.unbind())));
        Ok(RemovableHandle::on_graph_node(id, self.node.clone()))
    }

    /// A dict for the user's own data, the same object for as long as the node lives. A node
    /// made in anomaly mode starts with its forward stack under `"traceback_"`, as in PyTorch.
    #[getter]
    fn metadata(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let any = self.node.metadata_or_insert(|| {
            let d = PyDict::new(py);
            if let Some(frames) = self.node.anomaly.as_ref().and_then(|t| t.frames()) {
                // A failure here only leaves the entry out: the dict is still the user's.
                let _ = d.set_item("traceback_", frames);
            }
            Arc::new(d.unbind())
        });
        match any.downcast_ref::<Py<PyDict>>() {
            Some(d) => Ok(d.clone_ref(py)),
            None => Err(PyRuntimeError::new_err("node metadata is not a dict")),
        }
    }

    /// A custom Function node's saved tensors, unpacked as its backward sees them.
    #[getter]
    fn saved_tensors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        if self
            .node
            .backward
            .as_any()
            .downcast_ref::<PyFunctionBackward>()
            .is_none()
        {
            return Err(PyAttributeError::new_err(format!(
                "'{}' object has no attribute 'saved_tensors'",
                self.node.name()
            )));
        }
        let node = self.node.clone();
        let saved = enter(py, "saved_tensors", usize::MAX, || {
            Node::unpack_saved(&node)
        })?;
        let items: PyResult<Vec<Py<PyAny>>> = saved
            .into_iter()
            .map(|t| match t {
                Some(t) => wrap(py, t),
                None => Ok(py.None()),
            })
            .collect();
        PyTuple::new(py, items?)
    }

    /// Names of what `_saved_<name>` can read on this node (without the prefix).
    #[getter]
    fn _saved_names(&self) -> PyResult<Vec<String>> {
        let slots = self.node.saved_slots().ok_or_else(freed_err)?;
        Ok(saved_names(&self.node, &slots)
            .into_iter()
            .flatten()
            .collect())
    }

    /// `_saved_<name>` unpacks one saved tensor as backward would read it
    /// (running its unpack hook); `_raw_saved_<name>` gives the slot itself.
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        let (raw, key) = if let Some(k) = name.strip_prefix("_raw_saved_") {
            (true, k)
        } else if let Some(k) = name.strip_prefix("_saved_") {
            (false, k)
        } else {
            return Err(PyAttributeError::new_err(format!(
                "'{}' object has no attribute '{name}'",
                self.node.name()
            )));
        };
        let slots = self.node.saved_slots().ok_or_else(freed_err)?;
        let names = saved_names(&self.node, &slots);
        let Some(i) = names.iter().position(|n| n.as_deref() == Some(key)) else {
            return Err(PyAttributeError::new_err(format!(
                "'{}' object has no attribute '{name}'",
                self.node.name()
            )));
        };
        if raw {
            return Ok(Py::new(
                py,
                PySavedTensor {
                    node: self.node.clone(),
                    index: i,
                },
            )?
            .into_any());
        }
        let node = self.node.clone();
        match enter(py, "saved_tensors", usize::MAX, || {
            Node::unpack_saved_at(&node, i)
        })? {
            Some(t) => wrap(py, t),
            None => Ok(py.None()),
        }
    }
}

#[pymethods]
impl PyTensor {
    /// Registers `hook(tensor)`, called during backward right after this leaf's
    /// `.grad` has been accumulated (PyTorch's post-accumulate-grad hook).
    /// Returns a handle whose `remove()` unregisters it.
    fn register_post_accumulate_grad_hook(
        &self,
        hook: Bound<'_, PyAny>,
    ) -> PyResult<RemovableHandle> {
        let t = &self.t;
        if !t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        if t.try_grad_fn()?.is_some() {
            return Err(PyRuntimeError::new_err(
                "post accumulate grad hooks cannot be registered on non-leaf tensors",
            ));
        }
        check_callable(&hook, "hook")?;
        no_hooks_in_capture();
        let id = next_hook_id();
        let h: Arc<dyn GradHook> = Arc::new(PyPostAccumulateHook(hook.unbind()));
        t.meta().hooks.push((id, h));
        Ok(RemovableHandle::on_leaf(id, t.downgrade()))
    }
}

/// Reports the Python objects a node's own hooks and metadata hold, for the
/// tensor's `__traverse__` (so `y.grad_fn.register_hook(lambda *g: y)` and
/// `y.grad_fn.metadata["y"] = y` cycles are collected).
pub fn traverse_node_hooks(
    node: &NodeRef,
    visit: &pyo3::PyVisit<'_>,
) -> Result<(), pyo3::PyTraverseError> {
    node.try_visit_node_hooks(|a| {
        if let Some(h) = a.downcast_ref::<PyNodePreHook>() {
            visit.call(&h.0)
        } else if let Some(h) = a.downcast_ref::<PyNodePostHook>() {
            visit.call(&h.0)
        } else if let Some(d) = a.downcast_ref::<Py<PyDict>>() {
            visit.call(d)
        } else {
            Ok(())
        }
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySavedTensor>()?;
    m.add_function(wrap_pyfunction!(_push_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_pop_saved_tensors_hooks, m)?)?;
    Ok(())
}

/// A hook registered while a tape is captured would sit on the capture
/// call's node or tensor, not on a replay's: such a call has no replay rule.
pub(crate) fn no_hooks_in_capture() {
    if crate::compile::active() {
        crate::compile::no_rule("register_hook");
    }
}

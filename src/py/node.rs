//! Python views of graph nodes (`grad_fn`), tensor hooks and their handles.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::errors::external;
use super::tensor::{wrap, PyTensor};
use crate::autograd::{Edge, GradHook, NodeRef};
use crate::tensor::{Tensor, WeakTensor};

/// `tensor.grad_fn`: a handle on a node of the graph.
#[pyclass(name = "Node", module = "ferrograd.autograd.graph", frozen)]
pub struct PyNode {
    pub node: NodeRef,
}

/// The node that accumulates into a leaf's `.grad`.
#[pyclass(name = "AccumulateGrad", module = "ferrograd.autograd.graph", frozen)]
pub struct PyAccumulateGrad {
    pub(crate) leaf: Tensor,
}

pub fn grad_fn_object(py: Python<'_>, t: &Tensor) -> PyResult<Option<Py<PyAny>>> {
    match t.try_grad_fn()? {
        None => Ok(None),
        Some((node, _)) => Ok(Some(Py::new(py, PyNode { node })?.into_any())),
    }
}

fn edge_object(py: Python<'_>, e: &Edge) -> PyResult<(Py<PyAny>, u32)> {
    Ok(match e {
        Edge::None => (py.None(), 0),
        Edge::Node(n, nr) => (Py::new(py, PyNode { node: n.clone() })?.into_any(), *nr),
        Edge::Leaf(t) => (
            Py::new(py, PyAccumulateGrad { leaf: t.clone() })?.into_any(),
            0,
        ),
    })
}

#[pymethods]
impl PyNode {
    fn name(&self) -> String {
        self.node.name().into_owned()
    }

    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items: PyResult<Vec<_>> = self.node.edges.iter().map(|e| edge_object(py, e)).collect();
        PyTuple::new(py, items?)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> String {
        format!(
            "<{} object at {:#x}>",
            slf.get().node.name(),
            slf.as_ptr() as usize
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyNode>()
            .map(|o| o.get().node.ptr_eq(&self.node))
            .unwrap_or(false)
    }

    fn __hash__(&self) -> u64 {
        self.node.index() as u64 ^ (self.node.seq << 20)
    }
}

#[pymethods]
impl PyAccumulateGrad {
    fn name(&self) -> &'static str {
        "AccumulateGrad"
    }

    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, self.leaf.clone())
    }

    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, Vec::<Py<PyAny>>::new())
    }

    fn __repr__(slf: &Bound<'_, Self>) -> String {
        format!("<AccumulateGrad object at {:#x}>", slf.as_ptr() as usize)
    }

    /// Registers `hook(grad_outputs)`, called with `(grad,)` before the
    /// leaf's `.grad` is written and after its tensor hooks; it may return a
    /// replacement `(grad,)`. Returns a handle whose `remove()` unregisters it.
    fn register_prehook(&self, hook: Bound<'_, PyAny>) -> PyResult<RemovableHandle> {
        super::node_hooks::no_hooks_in_capture();
        let h = super::node_hooks::PyNodePreHook(callable(hook)?);
        Ok(self.push_hook(Arc::new(super::node_hooks::PyAccumulatePreHook(h))))
    }

    /// Registers `hook(grad_inputs, grad_outputs)`, called with `()` and
    /// `(grad,)` after the leaf's `.grad` was written (and after its
    /// post-accumulate-grad hooks); it must return None. Returns a handle
    /// whose `remove()` unregisters it.
    fn register_hook(&self, hook: Bound<'_, PyAny>) -> PyResult<RemovableHandle> {
        super::node_hooks::no_hooks_in_capture();
        let h = super::node_hooks::PyNodePostHook(callable(hook)?);
        Ok(self.push_hook(Arc::new(super::node_hooks::PyAccumulatePostHook(h))))
    }
}

impl PyAccumulateGrad {
    fn push_hook(&self, h: Arc<dyn GradHook>) -> RemovableHandle {
        let id = next_hook_id();
        self.leaf.meta().hooks.push((id, h));
        RemovableHandle::on_leaf(id, self.leaf.downgrade())
    }
}

fn callable(hook: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    super::node_hooks::check_callable(&hook, "hook")?;
    Ok(hook.unbind())
}

static HOOK_IDS: AtomicU64 = AtomicU64::new(1);

pub fn next_hook_id() -> u64 {
    HOOK_IDS.fetch_add(1, Ordering::Relaxed)
}

/// A Python callable used as a gradient hook; runs with the GIL taken.
pub struct PyHook(pub Py<PyAny>);

impl GradHook for PyHook {
    fn call(&self, grad: &Tensor) -> crate::Result<Option<Tensor>> {
        Python::attach(|py| {
            let g = wrap(py, grad.clone()).map_err(external)?;
            let hook = self.0.bind(py);
            let r = hook.call1((g,)).map_err(external)?;
            if r.is_none() {
                return Ok(None);
            }
            let new = match r.cast::<PyTensor>() {
                Ok(t) => t.get().t.clone(),
                Err(_) => {
                    let tname = r
                        .get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default();
                    return Err(crate::Error::type_error(format!(
                        "expected Variable, but hook returned '{tname}'"
                    )));
                }
            };
            // PyTorch's check_variable_result: a hook may replace the values of
            // a gradient, never its dtype or shape.
            let name = hook
                .getattr("__name__")
                .ok()
                .and_then(|n| n.extract::<String>().ok())
                .unwrap_or_else(|| "<unknown>".to_string());
            if new.dtype() != grad.dtype() {
                return Err(crate::Error::runtime(format!(
                    "hook '{name}' has changed the type of value (was CPU{}Type got CPU{}Type)",
                    grad.dtype().scalar_name(),
                    new.dtype().scalar_name()
                )));
            }
            if new.shape() != grad.shape() {
                return Err(crate::Error::runtime(format!(
                    "hook '{name}' has changed the size of value"
                )));
            }
            Ok(Some(new))
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Where the hook lives. Handles hold the tensor weakly, so a kept handle
/// does not keep a graph alive; a non-leaf's hook is found through its grad_fn.
enum HookSite {
    Node(WeakTensor),
    Leaf(WeakTensor),
    /// `Node.register_hook`/`register_prehook`: the node itself (held
    /// strongly, as the `grad_fn` object the hook was registered through is).
    GraphNode(NodeRef),
}

/// What `register_hook` returns: `handle.remove()` unregisters the hook.
#[pyclass(module = "ferrograd.utils.hooks", frozen)]
pub struct RemovableHandle {
    id: u64,
    site: HookSite,
}

impl RemovableHandle {
    pub fn on_node(id: u64, t: WeakTensor) -> Self {
        RemovableHandle {
            id,
            site: HookSite::Node(t),
        }
    }
    pub fn on_leaf(id: u64, t: WeakTensor) -> Self {
        RemovableHandle {
            id,
            site: HookSite::Leaf(t),
        }
    }
    pub fn on_graph_node(id: u64, n: NodeRef) -> Self {
        RemovableHandle {
            id,
            site: HookSite::GraphNode(n),
        }
    }
}

#[pymethods]
impl RemovableHandle {
    fn remove(&self) {
        match &self.site {
            HookSite::Node(w) => {
                if let Some((n, _)) = w.upgrade().and_then(|t| t.grad_fn()) {
                    n.remove_hook(self.id);
                }
            }
            HookSite::Leaf(w) => {
                if let Some(t) = w.upgrade() {
                    // Dropped after the lock: dropping a Python hook may run code.
                    let removed: Vec<_> = {
                        let mut m = t.meta();
                        let (gone, kept) = std::mem::take(&mut m.hooks)
                            .into_iter()
                            .partition(|(i, _)| *i == self.id);
                        m.hooks = kept;
                        gone
                    };
                    drop(removed);
                }
            }
            HookSite::GraphNode(n) => {
                n.remove_hook(self.id);
            }
        }
    }

    fn __enter__<'py>(slf: &Bound<'py, Self>) -> Bound<'py, Self> {
        slf.clone()
    }

    fn __exit__(&self, _a: &Bound<'_, PyAny>, _b: &Bound<'_, PyAny>, _c: &Bound<'_, PyAny>) {
        self.remove();
    }
}

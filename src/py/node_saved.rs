//! What a graph node holds for its backward, for graph pictures and memory
//! summaries (`ferrograd.viz`, `autograd.graph.saved_tensors_summary`).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::node::{PyAccumulateGrad, PyNode};
use super::tensor::wrap;

#[pymethods]
impl PyNode {
    /// The tensors this node saved for its backward, as stored (a saved output
    /// comes without its `grad_fn`). Raises PyTorch's "backward through the
    /// graph a second time" error once they were freed.
    #[getter]
    fn _saved_tensors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let saved = self.node.saved_tensors().ok_or_else(|| {
            PyRuntimeError::new_err(
                "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.",
            )
        })?;
        let objs: PyResult<Vec<_>> = saved.into_iter().map(|t| wrap(py, t)).collect();
        PyTuple::new(py, objs?)
    }

    /// Whether the saved tensors were freed (after a backward without `retain_graph`).
    #[getter]
    fn _saved_released(&self) -> bool {
        self.node.is_released()
    }

    /// Shapes of the node's outputs, as the engine checks incoming gradients against.
    #[getter]
    fn _output_shapes(&self) -> Vec<Vec<usize>> {
        self.node.outputs.iter().map(|m| m.shape.to_vec()).collect()
    }
}

/// One leaf has one `AccumulateGrad`: wrappers made by separate
/// `next_functions` calls compare equal, so graph walks visit a leaf once.
#[pymethods]
impl PyAccumulateGrad {
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyAccumulateGrad>()
            .map(|o| o.get().leaf.same(&self.leaf))
            .unwrap_or(false)
    }

    fn __hash__(&self) -> u64 {
        self.leaf.id() as u64
    }
}

//! `Tensor`'s shape methods: views (`view`, `transpose`, `permute`, ...),
//! `reshape`, and splitting and rearranging (`split`, `flip`, `repeat`, ...).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::{tensor_tuple, wrap, PyTensor};
use crate::ops;
use crate::py::convert::{int_arg, parse_size, seq_of_ints};
use crate::py::dtype::opt_dtype;

#[pymethods]
impl PyTensor {
    /// Returns a view with a new shape over the same memory (one size may be -1); fails when
    /// the strides do not allow it (use `reshape`).
    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        // `view(dtype)`: only the same dtype is supported (a no-op view).
        if shape.len() == 1 {
            let arg = shape.get_item(0)?;
            if !arg.is_instance_of::<pyo3::types::PyInt>()
                && !arg.is_instance_of::<PyTuple>()
                && !arg.is_instance_of::<PyList>()
            {
                if let Ok(Some(d)) = opt_dtype(Some(&arg)) {
                    if d != self.t.dtype() {
                        return Err(PyRuntimeError::new_err(
                            "view(dtype) with a different element size is not supported",
                        ));
                    }
                    return wrap(py, self.t.clone());
                }
            }
        }
        let dims = parse_size(shape, None)?;
        crate::py::capture::run_op(py, self.t.numel(), "view", &[&self.t], &[], move |t, _| {
            ops::view(t[0], &dims)
        })
    }

    /// Returns the tensor with a new shape (one size may be -1): a view when possible, else a
    /// copy.
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let dims = parse_size(shape, None)?;
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "reshape_i",
            &[&self.t],
            &[],
            move |t, _| ops::reshape_i(t[0], &dims),
        )
    }

    /// Returns a view of the tensor with the shape of `other`.
    fn view_as(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let dims: Vec<i64> = other.get().t.shape().iter().map(|&d| d as i64).collect();
        crate::py::capture::run_op(py, self.t.numel(), "view", &[&self.t], &[], move |t, _| {
            ops::view(t[0], &dims)
        })
    }

    /// Returns the tensor reshaped to the shape of `other`.
    fn reshape_as(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let s: Vec<i64> = other.get().t.shape().iter().map(|&d| d as i64).collect();
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "reshape_i",
            &[&self.t],
            &[],
            move |t, _| ops::reshape_i(t[0], &s),
        )
    }

    /// Returns a view with size-1 dimensions repeated to the given sizes (-1 keeps a size)
    /// without copying.
    #[pyo3(signature = (*sizes))]
    fn expand(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let dims = parse_size(sizes, None)?;
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "broadcast_to",
            &[&self.t],
            &[],
            move |t, _| ops::broadcast_to(t[0], &dims),
        )
    }

    /// Returns a view of the tensor expanded to the shape of `other`.
    fn expand_as(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let s = other.get().t.shape();
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "expand_view",
            &[&self.t],
            &[],
            move |t, _| ops::expand_view(t[0], &s),
        )
    }

    /// Returns a view with dimensions `dim0` and `dim1` swapped.
    #[pyo3(signature = (dim0, dim1))]
    fn transpose(&self, py: Python<'_>, dim0: i64, dim1: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "transpose",
            &[&self.t],
            &[],
            move |t, _| ops::transpose(t[0], dim0, dim1),
        )
    }

    /// Returns the transpose of a tensor of at most 2 dimensions, as a view.
    fn t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(py, self.t.numel(), "t", &[&self.t], &[], move |t, _| {
            ops::t(t[0])
        })
    }

    /// The tensor with its dimensions reversed, as a view.
    #[getter(T)]
    fn big_t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let n = self.t.ndim() as i64;
        let dims: Vec<i64> = (0..n).rev().collect();
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "permute",
            &[&self.t],
            &[],
            move |t, _| ops::permute(t[0], &dims),
        )
    }

    /// The last two dimensions swapped, as a view (for matrices and batches of them).
    #[getter(mT)]
    fn m_t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.t.ndim() < 2 {
            return Err(PyRuntimeError::new_err(
                "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.",
            ));
        }
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "transpose",
            &[&self.t],
            &[],
            move |t, _| ops::transpose(t[0], -2, -1),
        )
    }

    /// Returns a view with the dimensions reordered as `dims`.
    #[pyo3(signature = (*dims))]
    fn permute(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let d = parse_size(dims, None)?;
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "permute",
            &[&self.t],
            &[],
            move |t, _| ops::permute(t[0], &d),
        )
    }

    /// Returns a view with a dimension of size 1 inserted at `dim`.
    fn unsqueeze(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "unsqueeze",
            &[&self.t],
            &[],
            move |t, _| ops::unsqueeze(t[0], dim),
        )
    }

    /// Returns a view without the dimensions of size 1 (or only `dim`, if it has size 1).
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, py: Python<'_>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "squeeze",
            &[&self.t],
            &[],
            move |t, _| ops::squeeze(t[0], dim),
        )
    }

    /// Returns the tensor with dimensions `start_dim` to `end_dim` merged into one (a view when
    /// possible).
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: i64, end_dim: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "flatten",
            &[&self.t],
            &[],
            move |t, _| ops::flatten(t[0], start_dim, end_dim),
        )
    }

    /// Returns the view of the slice at `index` along `dim`, without that dimension.
    fn select(&self, py: Python<'_>, dim: i64, index: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "select",
            &[&self.t],
            &[],
            move |t, _| ops::select(t[0], dim, index),
        )
    }

    /// Returns the tensor with dimension `dim` split into `sizes` (one may be -1).
    fn unflatten(&self, py: Python<'_>, dim: i64, sizes: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let s = seq_of_ints(sizes)?;
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "unflatten",
            &[&self.t],
            &[],
            move |t, _| ops::unflatten(t[0], dim, &s),
        )
    }

    /// Returns a view of the tensor broadcast to `size`.
    fn broadcast_to(&self, py: Python<'_>, size: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let s = seq_of_ints(size)?;
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "broadcast_to",
            &[&self.t],
            &[],
            move |t, _| ops::broadcast_to(t[0], &s),
        )
    }

    /// Returns the tensor tiled `sizes` times along each dimension (a copy).
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let s = parse_size(sizes, None)?;
        // The result is the larger: the input times every repeat count.
        let out = s
            .iter()
            .fold(self.t.numel(), |n, &r| n.saturating_mul(r.max(0) as usize));
        crate::py::capture::run_op(py, out, "repeat", &[&self.t], &[], move |t, _| {
            ops::repeat(t[0], &s)
        })
    }

    /// Splits the tensor along `dim` into views of `split_size` elements (the last may be
    /// shorter) or of the given section sizes.
    #[pyo3(signature = (split_size_or_sections, dim=0))]
    fn split(
        &self,
        py: Python<'_>,
        split_size_or_sections: &Bound<'_, PyAny>,
        dim: i64,
    ) -> PyResult<Py<PyAny>> {
        let parts = if split_size_or_sections.is_instance_of::<pyo3::types::PyInt>() {
            let n = int_arg(split_size_or_sections)?;
            crate::py::capture::run_multi(
                py,
                self.t.numel(),
                "split",
                &[&self.t],
                &[],
                move |t, _| ops::split(t[0], n, dim),
            )?
        } else {
            let s = seq_of_ints(split_size_or_sections)?;
            crate::py::capture::run_multi(
                py,
                self.t.numel(),
                "split",
                &[&self.t],
                &[],
                move |t, _| ops::split_with_sizes(t[0], &s, dim),
            )?
        };
        tensor_tuple(py, parts)
    }

    /// Splits the tensor along `dim` into at most `chunks` views of equal size (the last may be
    /// shorter).
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk(&self, py: Python<'_>, chunks: i64, dim: i64) -> PyResult<Py<PyAny>> {
        tensor_tuple(
            py,
            crate::py::capture::run_multi(
                py,
                self.t.numel(),
                "chunk",
                &[&self.t],
                &[],
                move |t, _| ops::chunk(t[0], chunks, dim),
            )?,
        )
    }

    /// Returns the slices along `dim` as a tuple of views, without that dimension.
    #[pyo3(signature = (dim=0))]
    fn unbind(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyAny>> {
        tensor_tuple(
            py,
            crate::py::capture::run_multi(
                py,
                self.t.numel(),
                "unbind",
                &[&self.t],
                &[],
                move |t, _| ops::unbind(t[0], dim),
            )?,
        )
    }

    /// Returns a copy with the order of the elements reversed along `dims`.
    #[pyo3(signature = (*dims))]
    fn flip(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let d = parse_size(dims, None)?;
        crate::py::capture::run_op(py, self.t.numel(), "flip", &[&self.t], &[], move |t, _| {
            ops::flip(t[0], &d)
        })
    }

    /// Returns the view of `length` elements from `start` along `dim`.
    fn narrow(&self, py: Python<'_>, dim: i64, start: i64, length: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "narrow",
            &[&self.t],
            &[],
            move |t, _| ops::narrow(t[0], dim, start, length),
        )
    }

    /// Returns a view with dimension `source` moved to position `destination`.
    fn movedim(&self, py: Python<'_>, source: i64, destination: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "movedim",
            &[&self.t],
            &[],
            move |t, _| ops::movedim(t[0], source, destination),
        )
    }

    /// Returns the view of the diagonal at `offset` of the planes spanned by `dim1` and `dim2`,
    /// as the last dimension.
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(&self, py: Python<'_>, offset: i64, dim1: i64, dim2: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "diagonal",
            &[&self.t],
            &[],
            move |t, _| ops::diagonal(t[0], offset, dim1, dim2),
        )
    }

    /// Returns a view of every window of `size` elements, `step` apart, along
    /// `dimension`: that dimension counts the windows and a new last dimension of
    /// `size` walks one.
    fn unfold(&self, py: Python<'_>, dimension: i64, size: i64, step: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "unfold",
            &[&self.t],
            &[],
            move |t, _| ops::unfold_windows(t[0], dimension, size, step),
        )
    }

    /// Alias of `transpose`: a view with dimensions `axis0` and `axis1` swapped.
    fn swapaxes(&self, py: Python<'_>, axis0: i64, axis1: i64) -> PyResult<Py<PyAny>> {
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "transpose",
            &[&self.t],
            &[],
            move |t, _| ops::transpose(t[0], axis0, axis1),
        )
    }
}

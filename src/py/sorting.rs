//! Bindings of sorting and selection: `sort`, `argsort`, `msort`, `topk`,
//! `kthvalue`, `median`, `nanmedian`, as `Tensor` methods and functions.

use pyo3::prelude::*;

use super::capture::{run, run_op};
use super::dispatch::tensor_arg;
use super::tensor::{return_pair, PyTensor};
use crate::ops;
use crate::tensor::Tensor;

fn sort_pair(py: Python<'_>, t: &Tensor, dim: i64, descending: bool) -> PyResult<Py<PyAny>> {
    let (v, i) = run(py, t.numel(), "sort", &[t], &[], move |t, _| {
        ops::sort(t[0], dim, descending)
    })?;
    return_pair(py, "sort", v, i)
}

fn topk_pair(py: Python<'_>, t: &Tensor, k: i64, dim: i64, largest: bool) -> PyResult<Py<PyAny>> {
    let (v, i) = run(py, t.numel(), "topk", &[t], &[], move |t, _| {
        ops::topk(t[0], k, dim, largest)
    })?;
    return_pair(py, "topk", v, i)
}

fn kth_pair(py: Python<'_>, t: &Tensor, k: i64, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
    let (v, i) = run(py, t.numel(), "kthvalue", &[t], &[], move |t, _| {
        ops::kthvalue(t[0], k, dim, keepdim)
    })?;
    return_pair(py, "kthvalue", v, i)
}

fn median_any(
    py: Python<'_>,
    t: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    ignore_nan: bool,
) -> PyResult<Py<PyAny>> {
    match dim {
        None => run_op(py, t.numel(), "median", &[t], &[], move |t, _| {
            ops::median_all(t[0], ignore_nan)
        }),
        Some(d) => {
            let (v, i) = run(py, t.numel(), "median", &[t], &[], move |t, _| {
                ops::median_dim(t[0], d, keepdim, ignore_nan)
            })?;
            return_pair(py, if ignore_nan { "nanmedian" } else { "median" }, v, i)
        }
    }
}

#[pymethods]
impl PyTensor {
    /// Sorts the elements along `dim` (stable: equal elements keep their order;
    /// NaN sorts as the largest value). Returns `(values, indices)`.
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false))]
    fn sort(
        &self,
        py: Python<'_>,
        dim: i64,
        descending: bool,
        stable: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = stable;
        sort_pair(py, &self.t, dim, descending)
    }

    /// The indices that sort the tensor along `dim` (see `sort`).
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false))]
    fn argsort(
        &self,
        py: Python<'_>,
        dim: i64,
        descending: bool,
        stable: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = stable;
        run_op(
            py,
            self.t.numel(),
            "argsort",
            &[&self.t],
            &[],
            move |t, _| ops::argsort(t[0], dim, descending),
        )
    }

    /// The elements sorted along the first dimension (`sort(0).values`).
    fn msort(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run_op(py, self.t.numel(), "msort", &[&self.t], &[], |t, _| {
            Ok(ops::sort(t[0], 0, false)?.0)
        })
    }

    /// The `k` largest (or, with `largest=False`, smallest) elements along
    /// `dim`, in order. Returns `(values, indices)`.
    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true))]
    fn topk(
        &self,
        py: Python<'_>,
        k: i64,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = sorted;
        topk_pair(py, &self.t, k, dim, largest)
    }

    /// The `k`-th smallest element along `dim` (1-based) and its index.
    #[pyo3(signature = (k, dim=-1, keepdim=false))]
    fn kthvalue(&self, py: Python<'_>, k: i64, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
        kth_pair(py, &self.t, k, dim, keepdim)
    }

    /// The lower median of all elements, or `(values, indices)` along `dim`.
    /// A NaN in a row makes its median NaN (see `nanmedian`).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn median(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
        median_any(py, &self.t, dim, keepdim, false)
    }

    /// `median` ignoring NaN values.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn nanmedian(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
        median_any(py, &self.t, dim, keepdim, true)
    }
}

/// Sorts `input` along `dim`; see `Tensor.sort`.
#[pyfunction]
#[pyo3(signature = (input, dim=-1, descending=false, *, stable=false))]
fn sort(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    dim: i64,
    descending: bool,
    stable: bool,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "sort", (input, dim, descending, stable), {
        let input = tensor_arg(input, "sort", "input", 1)?;
        let t = &input.get().t;
        let _ = stable;
        sort_pair(py, t, dim, descending)
    })
}

/// The indices that sort `input` along `dim`; see `Tensor.argsort`.
#[pyfunction]
#[pyo3(signature = (input, dim=-1, descending=false, *, stable=false))]
fn argsort(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    dim: i64,
    descending: bool,
    stable: bool,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "argsort", (input, dim, descending, stable), {
        let input = tensor_arg(input, "argsort", "input", 1)?;
        input.get().argsort(py, dim, descending, stable)
    })
}

/// `input` sorted along its first dimension.
#[pyfunction]
fn msort(py: Python<'_>, input: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    dispatching!(py, "msort", (input,), {
        let input = tensor_arg(input, "msort", "input", 1)?;
        input.get().msort(py)
    })
}

/// The `k` largest (or smallest) elements of `input` along `dim`; see `Tensor.topk`.
#[pyfunction]
#[pyo3(signature = (input, k, dim=-1, largest=true, sorted=true))]
fn topk(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    k: i64,
    dim: i64,
    largest: bool,
    sorted: bool,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "topk", (input, k, dim, largest, sorted), {
        let input = tensor_arg(input, "topk", "input", 1)?;
        let t = &input.get().t;
        let _ = sorted;
        topk_pair(py, t, k, dim, largest)
    })
}

/// The `k`-th smallest element of `input` along `dim`; see `Tensor.kthvalue`.
#[pyfunction]
#[pyo3(signature = (input, k, dim=-1, keepdim=false))]
fn kthvalue(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    k: i64,
    dim: i64,
    keepdim: bool,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "kthvalue", (input, k, dim, keepdim), {
        let input = tensor_arg(input, "kthvalue", "input", 1)?;
        let t = &input.get().t;
        kth_pair(py, t, k, dim, keepdim)
    })
}

/// The lower median of `input`, or `(values, indices)` along `dim`.
#[pyfunction]
#[pyo3(signature = (input, dim=None, keepdim=false))]
fn median(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    dim: Option<i64>,
    keepdim: bool,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "median", (input, dim, keepdim), {
        let input = tensor_arg(input, "median", "input", 1)?;
        let t = &input.get().t;
        median_any(py, t, dim, keepdim, false)
    })
}

/// `median` ignoring NaN values.
#[pyfunction]
#[pyo3(signature = (input, dim=None, keepdim=false))]
fn nanmedian(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    dim: Option<i64>,
    keepdim: bool,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "nanmedian", (input, dim, keepdim), {
        let input = tensor_arg(input, "nanmedian", "input", 1)?;
        let t = &input.get().t;
        median_any(py, t, dim, keepdim, true)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sort, m)?)?;
    m.add_function(wrap_pyfunction!(argsort, m)?)?;
    m.add_function(wrap_pyfunction!(msort, m)?)?;
    m.add_function(wrap_pyfunction!(topk, m)?)?;
    m.add_function(wrap_pyfunction!(kthvalue, m)?)?;
    m.add_function(wrap_pyfunction!(median, m)?)?;
    m.add_function(wrap_pyfunction!(nanmedian, m)?)?;
    Ok(())
}

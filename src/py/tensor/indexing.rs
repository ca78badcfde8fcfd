//! `Tensor` indexing: `t[key]`, `t[key] = value`, and the index ops
//! (`gather`, `scatter`, `masked_fill`, `nonzero`, ...).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::{run, tensor_tuple, wrap, PyTensor};
use crate::autograd;
use crate::ops;
use crate::py::convert::{index_items, operand, to_tensor_like, Operand};
use crate::py::errors::{enter, work};
use crate::tensor::Tensor;

#[pymethods]
impl PyTensor {
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let items = index_items(key)?;
        // Index tensors are inputs of the entry, not constants of its rule.
        let tens: Vec<Tensor> = items
            .iter()
            .filter_map(|i| match i {
                ops::IndexItem::Tensor(x) => Some(x.clone()),
                _ => None,
            })
            .collect();
        let mut ins: Vec<&Tensor> = vec![&self.t];
        ins.extend(tens.iter());
        crate::py::capture::run_op(py, self.t.numel(), "index", &ins, &[], move |t, _| {
            if t.len() == 1 {
                return ops::index(t[0], &items);
            }
            let mut k = 0;
            let its: Vec<ops::IndexItem> = items
                .iter()
                .map(|i| match i {
                    ops::IndexItem::Tensor(_) => {
                        k += 1;
                        ops::IndexItem::Tensor(t[k].clone())
                    }
                    other => other.clone(),
                })
                .collect();
            ops::index(t[0], &its)
        })
    }

    /// Returns the elements of the tensor at `index` along `dim`: `out[i][j] =
    /// self[index[i][j]][j]` for dim 0.
    fn gather(&self, py: Python<'_>, dim: i64, index: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let (a, idx) = (&self.t, &index.get().t);
        run(py, work(&[a, idx]), || ops::gather(a, dim, idx))
    }

    /// Returns a copy with the elements of `src` added at `index` along `dim` (repeated indices
    /// add up).
    fn scatter_add(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyTensor>,
        src: &Bound<'_, PyTensor>,
    ) -> PyResult<Py<PyAny>> {
        let (a, idx, src) = (&self.t, &index.get().t, &src.get().t);
        run(py, work(&[a, idx, src]), || {
            ops::scatter_add(a, dim, idx, src)
        })
    }

    /// Returns a copy with the elements of `src` (or the number `value`) written at `index`
    /// along `dim`.
    #[pyo3(signature = (dim, index, src=None, *, value=None))]
    fn scatter(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyTensor>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let idx = &index.get().t;
        let given = src.or(value).ok_or_else(|| {
            PyTypeError::new_err("scatter() missing required argument 'src' or 'value'")
        })?;
        match operand(given) {
            Some(Operand::Tensor(s)) => run(py, work(&[&self.t, idx, &s]), || {
                ops::scatter(&self.t, dim, idx, &s)
            }),
            Some(Operand::Scalar(v)) => run(py, work(&[&self.t, idx]), || {
                ops::scatter_value(&self.t, dim, idx, v)
            }),
            None => Err(PyTypeError::new_err(
                "scatter(): src must be a Tensor or a number",
            )),
        }
    }

    /// Returns the slices at the positions in the 1-D `index` along `dim` (a copy).
    fn index_select(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyTensor>,
    ) -> PyResult<Py<PyAny>> {
        let (a, idx) = (&self.t, &index.get().t);
        run(py, work(&[a, idx]), || ops::index_select(a, dim, idx))
    }

    /// Returns a copy with `value` where the bool `mask` is True (broadcast).
    fn masked_fill(
        &self,
        py: Python<'_>,
        mask: &Bound<'_, PyTensor>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let m = &mask.get().t;
        match operand(value) {
            Some(Operand::Tensor(v)) => crate::py::capture::run_op(
                py,
                self.t.numel(),
                "masked_fill",
                &[&self.t, m, &v],
                &[],
                move |t, _| ops::masked_fill(t[0], t[1], t[2]),
            ),
            Some(Operand::Scalar(s)) => run(py, self.t.numel(), || {
                ops::masked_fill_scalar(&self.t, m, s)
            }),
            None => Err(PyTypeError::new_err(
                "masked_fill(): value must be a number or a 0-d Tensor",
            )),
        }
    }

    /// Writes `value` where the bool `mask` is True in place and returns the tensor.
    fn masked_fill_<'py>(
        slf: &Bound<'py, Self>,
        mask: &Bound<'py, PyTensor>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("masked_fill_");
        let a = &slf.get().t;
        let m = &mask.get().t;
        let v = match operand(value) {
            Some(Operand::Tensor(v)) => v,
            Some(Operand::Scalar(s)) => Tensor::scalar_of(s.to_f64(), a.dtype()),
            None => {
                return Err(PyTypeError::new_err(
                    "masked_fill_(): value must be a number or a 0-d Tensor",
                ))
            }
        };
        enter(slf.py(), a.numel(), || {
            ops::apply_inplace(a, || ops::masked_fill(a, m, &v))
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Returns the indices of the nonzero elements, one row per element (a tuple of index
    /// tensors with `as_tuple=True`).
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        let nz = enter(py, self.t.numel(), || Ok(ops::nonzero(&self.t)))?;
        if !as_tuple {
            return wrap(py, nz);
        }
        // A 0-d input counts as one element of a 1-D tensor here, as in PyTorch, so the
        // tuple always has at least one index tensor.
        let cols = enter(py, nz.numel(), || {
            if self.t.ndim() == 0 {
                let count = nz.shape().first().copied().unwrap_or(0);
                return Ok(vec![Tensor::from_vec(
                    vec![0i64; count],
                    smallvec::smallvec![count],
                )]);
            }
            Ok(ops::unbind(&nz, 1)?.iter().map(ops::clone_data).collect())
        })?;
        tensor_tuple(py, cols)
    }

    /// Returns the elements where the bool `mask` is True, as a 1-D tensor.
    fn masked_select(&self, py: Python<'_>, mask: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let m = &mask.get().t;
        crate::py::capture::run_op(
            py,
            self.t.numel(),
            "masked_select",
            &[&self.t, m],
            &[],
            move |t, _| ops::masked_select(t[0], t[1]),
        )
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let _op = crate::tensor::write_op("__setitem__");
        let items = index_items(key)?;
        let t = &self.t;
        let v = match operand(value) {
            Some(Operand::Tensor(v)) => v,
            Some(Operand::Scalar(s)) => Tensor::scalar_of(s.to_f64(), t.dtype()),
            None => to_tensor_like(value, Some(t))
                .map_err(|e| crate::py::dispatch::inplace_err(key.py(), e))?,
        };
        enter(key.py(), work(&[t, &v]), || {
            let basic = items
                .iter()
                .all(|i| !matches!(i, ops::IndexItem::Tensor(_)));
            if basic {
                // As in PyTorch, the write goes into a view (so the refusals
                // are those for views: "a view of a leaf Variable ...").
                let target = ops::index(t, &items)?;
                ops::check_inplace(&target)?;
                if !autograd::needs_record(&[t, &v]) {
                    // Nothing to record: write straight through the view.
                    return ops::assign(&target, &v);
                }
                if t.dtype().is_float() {
                    // Recorded as `CopySlices` on the base.
                    return ops::assign_tracked(t, &target, &v);
                }
            }
            ops::apply_inplace(t, || ops::index_put(t, &items, &v))
        })
    }
}

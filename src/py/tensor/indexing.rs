//! `Tensor` indexing: `t[key]`, `t[key] = value`, and the index ops
//! (`gather`, `scatter`, `masked_fill`, `nonzero`, ...).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::PyTensor;
use crate::autograd;
use crate::ops;
use crate::py::capture::{run_inplace, run_op, run_tuple};
use crate::py::convert::{index_items, operand, to_tensor_like, Operand};
use crate::py::errors::work;
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
        run_op(py, self.t.numel(), "index", &ins, &[], move |t, _| {
            if t.len() == 1 {
                return ops::index(t[0], &items);
            }
            ops::index(t[0], &with_index_tensors(&items, &t[1..]))
        })
    }

    /// Returns the elements of the tensor at `index` along `dim`: `out[i][j] =
    /// self[index[i][j]][j]` for dim 0.
    fn gather(&self, py: Python<'_>, dim: i64, index: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let (a, idx) = (&self.t, &index.get().t);
        run_op(
            py,
            work(&[a, idx]),
            "gather",
            &[a, idx],
            &[],
            move |t, _| ops::gather(t[0], dim, t[1]),
        )
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
        run_op(
            py,
            work(&[a, idx, src]),
            "scatter_add",
            &[a, idx, src],
            &[],
            move |t, _| ops::scatter_add(t[0], dim, t[1], t[2]),
        )
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
            Some(Operand::Tensor(s)) => {
                let ins = [&self.t, idx, &s];
                run_op(py, work(&ins), "scatter", &ins, &[], move |t, _| {
                    ops::scatter(t[0], dim, t[1], t[2])
                })
            }
            Some(Operand::Scalar(v)) => {
                let ins = [&self.t, idx];
                run_op(py, work(&ins), "scatter", &ins, &[], move |t, _| {
                    ops::scatter_value(t[0], dim, t[1], v)
                })
            }
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
        run_op(
            py,
            work(&[a, idx]),
            "index_select",
            &[a, idx],
            &[],
            move |t, _| ops::index_select(t[0], dim, t[1]),
        )
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
            Some(Operand::Tensor(v)) => run_op(
                py,
                self.t.numel(),
                "masked_fill",
                &[&self.t, m, &v],
                &[],
                move |t, _| ops::masked_fill(t[0], t[1], t[2]),
            ),
            Some(Operand::Scalar(s)) => {
                let si = crate::py::capture::scalar_in(value, s);
                run_op(
                    py,
                    self.t.numel(),
                    "masked_fill",
                    &[&self.t, m],
                    &[si],
                    |t, s| ops::masked_fill_scalar(t[0], t[1], s[0]),
                )
            }
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
            Some(Operand::Scalar(s)) => {
                let v = Tensor::scalar_of(s.to_f64(), a.dtype());
                crate::py::capture::note_number_tensor(value, &v);
                v
            }
            None => {
                return Err(PyTypeError::new_err(
                    "masked_fill_(): value must be a number or a 0-d Tensor",
                ))
            }
        };
        run_inplace(
            slf.py(),
            a.numel(),
            "masked_fill_",
            &[a, m, &v],
            &[],
            |t, _| ops::apply_inplace(t[0], || ops::masked_fill(t[0], t[1], t[2])),
        )?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Returns the indices of the nonzero elements, one row per element (a tuple of index
    /// tensors with `as_tuple=True`).
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        if !as_tuple {
            return run_op(py, self.t.numel(), "nonzero", &[&self.t], &[], |t, _| {
                Ok(ops::nonzero(t[0]))
            });
        }
        run_tuple(py, self.t.numel(), "nonzero", &[&self.t], &[], |t, _| {
            let nz = ops::nonzero(t[0]);
            // A 0-d input counts as one element of a 1-D tensor here, as in PyTorch, so
            // the tuple always has at least one index tensor.
            if t[0].ndim() == 0 {
                let count = nz.shape().first().copied().unwrap_or(0);
                return Ok(vec![Tensor::from_vec(
                    vec![0i64; count],
                    smallvec::smallvec![count],
                )]);
            }
            Ok(ops::unbind(&nz, 1)?.iter().map(ops::clone_data).collect())
        })
    }

    /// Returns the elements where the bool `mask` is True, as a 1-D tensor.
    fn masked_select(&self, py: Python<'_>, mask: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
        let m = &mask.get().t;
        run_op(
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
            Some(Operand::Scalar(s)) => {
                let v = Tensor::scalar_of(s.to_f64(), t.dtype());
                crate::py::capture::note_number_tensor(value, &v);
                v
            }
            None => to_tensor_like(value, Some(t))
                .map_err(|e| crate::py::dispatch::inplace_err(key.py(), e))?,
        };
        // Index tensors are inputs after the target and the value.
        let tens: Vec<Tensor> = items
            .iter()
            .filter_map(|i| match i {
                ops::IndexItem::Tensor(x) => Some(x.clone()),
                _ => None,
            })
            .collect();
        let mut ins: Vec<&Tensor> = vec![t, &v];
        ins.extend(tens.iter());
        let basic = tens.is_empty();
        run_inplace(
            key.py(),
            work(&[t, &v]),
            "__setitem__",
            &ins,
            &[],
            move |ts, _| {
                let (t, v) = (ts[0], ts[1]);
                if basic {
                    // As in PyTorch, the write goes into a view (so the refusals
                    // are those for views: "a view of a leaf Variable ...").
                    let target = ops::index(t, &items)?;
                    ops::check_inplace(&target)?;
                    if !autograd::needs_record(&[t, v]) {
                        // Nothing to record: write straight through the view.
                        return ops::assign(&target, v);
                    }
                    if t.dtype().is_float() {
                        // Recorded as `CopySlices` on the base.
                        return ops::assign_tracked(t, &target, v);
                    }
                    return ops::apply_inplace(t, || ops::index_put(t, &items, v, false));
                }
                let items = with_index_tensors(&items, &ts[2..]);
                if let Some(mask) = fill_mask(t, &items, v)? {
                    // `t[mask] = number`: a masked fill, as PyTorch does (one
                    // pass over `t`, `MaskedFillBackward0`, a 0-d value of any dtype).
                    return ops::apply_inplace(t, || ops::masked_fill(t, &mask, v));
                }
                ops::index_put_(t, &items, v, false)
            },
        )
    }
}

/// For a key that is one boolean mask over `t`'s leading dimensions and a
/// 0-d value, the mask shaped to broadcast against `t`.
fn fill_mask(t: &Tensor, items: &[ops::IndexItem], v: &Tensor) -> crate::Result<Option<Tensor>> {
    let [ops::IndexItem::Tensor(m)] = items else {
        return Ok(None);
    };
    let (ms, ts) = (m.shape(), t.shape());
    if m.dtype() != crate::tensor::DType::Bool
        || v.ndim() != 0
        || ms.is_empty()
        || ms.len() > ts.len()
        || ms[..] != ts[..ms.len()]
    {
        return Ok(None);
    }
    let mut shape = ms.clone();
    shape.resize(ts.len(), 1);
    ops::reshape(m, &shape).map(Some)
}

/// `items` with its index tensors replaced, in order, by `tensors` (the
/// replay's values of those inputs).
fn with_index_tensors(items: &[ops::IndexItem], tensors: &[&Tensor]) -> Vec<ops::IndexItem> {
    let mut k = 0;
    items
        .iter()
        .map(|i| match i {
            ops::IndexItem::Tensor(_) => {
                k += 1;
                ops::IndexItem::Tensor(tensors[k - 1].clone())
            }
            other => other.clone(),
        })
        .collect()
}

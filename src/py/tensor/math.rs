//! `Tensor` methods with options: rounding and clamping, closeness,
//! `where`, and the reductions (`sum`, `var`, `max`, `softmax`, ...).

use pyo3::prelude::*;

use super::{return_pair, PyTensor};
use crate::ops;
use crate::py::capture::{run, run_inplace, run_op, Opt};
use crate::py::convert::{
    bound_arg, dims_arg, int_arg, norm_ord, seq_of_ints, tensor_bounds, to_tensor_like, var_args,
};
use crate::py::dtype::opt_dtype;
use crate::py::errors::{read, work};
use crate::tensor::Tensor;

#[pymethods]
impl PyTensor {
    /// Returns the elements rounded to `decimals` decimal places, halves to even; its gradient
    /// is zero.
    #[pyo3(signature = (decimals=0))]
    fn round(&self, py: Python<'_>, decimals: i64) -> PyResult<Py<PyAny>> {
        run_op(py, self.t.numel(), "round", &[&self.t], &[], move |t, _| {
            ops::round(t[0], decimals)
        })
    }

    /// Returns the elements limited to [min, max]; either bound may be None, a number or a
    /// tensor.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (lo, hi) = (bound_arg(min, &self.t)?, bound_arg(max, &self.t)?);
        let tb = tensor_bounds(min, max);
        let (ins, opt) = Opt::inputs(&[&self.t], &[lo.as_ref(), hi.as_ref()]);
        run_op(py, self.t.numel(), "clamp", &ins, &[], move |t, _| {
            ops::clamp(t[0], opt.get(t, 0), opt.get(t, 1), tb)
        })
    }

    /// Alias of `clamp`: the elements limited to [min, max].
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.clamp(py, min, max)
    }

    /// Limits the elements to [min, max] in place and returns the tensor.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: &Bound<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("clamp_");
        let a = &slf.get().t;
        let (lo, hi) = (bound_arg(min, a)?, bound_arg(max, a)?);
        let tb = tensor_bounds(min, max);
        let (ins, opt) = Opt::inputs(&[a], &[lo.as_ref(), hi.as_ref()]);
        run_inplace(slf.py(), a.numel(), "clamp_", &ins, &[], move |t, _| {
            ops::apply_inplace_map(t[0], &t[1..], || {
                ops::clamp(t[0], opt.get(t, 0), opt.get(t, 1), tb)
            })
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Elementwise closeness `|self - other| <= atol + rtol * |other|`, a bool tensor (NaNs
    /// equal only with `equal_nan`).
    #[pyo3(signature = (other, rtol=1e-5, atol=1e-8, equal_nan=false))]
    fn isclose(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(other, Some(&self.t))?;
        run_op(
            py,
            work(&[&self.t, &b]),
            "isclose",
            &[&self.t, &b],
            &[],
            move |t, _| ops::isclose(t[0], t[1], rtol, atol, equal_nan),
        )
    }

    /// True when every element is close to `other` (see `isclose`).
    #[pyo3(signature = (other, rtol=1e-5, atol=1e-8, equal_nan=false))]
    fn allclose(
        &self,
        other: &Bound<'_, PyAny>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<bool> {
        let b = to_tensor_like(other, Some(&self.t))?;
        read(other.py(), "allclose", work(&[&self.t, &b]), || {
            ops::allclose(&self.t, &b, rtol, atol, equal_nan)
        })
    }

    /// Returns `self` where `condition` is True and `other` elsewhere (broadcast).
    #[pyo3(name = "where")]
    fn where_method(
        &self,
        py: Python<'_>,
        condition: &Bound<'_, PyTensor>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let y = to_tensor_like(other, Some(&self.t))?;
        let c = &condition.get().t;
        run_op(
            py,
            work(&[c, &self.t, &y]),
            "where",
            &[c, &self.t, &y],
            &[],
            |t, _| ops::where_(t[0], t[1], t[2]),
        )
    }

    /// Returns the sum of the elements, over all of them or over the dimension(s) `dim` (kept
    /// as size 1 with `keepdim`); `dtype` converts first.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        let dt = opt_dtype(dtype)?;
        run_op(py, self.t.numel(), "sum", &[&self.t], &[], move |t, _| {
            let x = match dt {
                Some(d) => ops::to_dtype(t[0], d)?,
                None => t[0].clone(),
            };
            ops::sum(&x, dims.as_deref(), keepdim)
        })
    }

    /// Returns the mean of the elements, over all of them or over the dimension(s) `dim` (kept
    /// as size 1 with `keepdim`); `dtype` converts first.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        let dt = opt_dtype(dtype)?;
        run_op(py, self.t.numel(), "mean", &[&self.t], &[], move |t, _| {
            let x = match dt {
                Some(d) => ops::to_dtype(t[0], d)?,
                None => t[0].clone(),
            };
            ops::mean(&x, dims.as_deref(), keepdim)
        })
    }

    /// Returns the product of the elements, over all of them or over the dimension(s) `dim`
    /// (kept as size 1 with `keepdim`); `dtype` converts first.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn prod(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        let dt = opt_dtype(dtype)?;
        let a = &self.t;
        autocast!(if dt.is_some() { "" } else { "prod" }, a); // an explicit dtype exempts
        run_op(py, a.numel(), "prod", &[a], &[], move |t, _| {
            let x = match dt {
                Some(d) => ops::to_dtype(t[0], d)?,
                None => t[0].clone(),
            };
            ops::prod(&x, dims.as_deref(), keepdim)
        })
    }

    /// Returns the variance over `dim` (all elements by default), dividing by N - correction
    /// (Bessel's correction 1 unless `unbiased=False` or `correction=` says otherwise).
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn var(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let (dims, corr) = var_args(dim, unbiased, correction)?;
        run_op(py, self.t.numel(), "var", &[&self.t], &[], move |t, _| {
            ops::var(t[0], dims.as_deref(), corr, keepdim)
        })
    }

    /// Returns the standard deviation over `dim` (all elements by default), dividing by N -
    /// correction (1 unless `unbiased=False` or `correction=` says otherwise).
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn std(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let (dims, corr) = var_args(dim, unbiased, correction)?;
        run_op(py, self.t.numel(), "std", &[&self.t], &[], move |t, _| {
            ops::std(t[0], dims.as_deref(), corr, keepdim)
        })
    }

    /// `max()`, `max(dim, keepdim)` -> (values, indices), or `max(other)`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn max(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        extreme(py, &self.t, dim, keepdim, true)
    }

    /// `min()`: the smallest element; `min(dim, keepdim)`: the (values, indices) of the
    /// smallest along `dim`; `min(other)`: the elementwise minimum.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn min(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        extreme(py, &self.t, dim, keepdim, false)
    }

    /// Returns the largest elements over the dimension(s) `dim` (all by default); the gradient
    /// is shared evenly between ties.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        run_op(py, self.t.numel(), "amax", &[&self.t], &[], move |t, _| {
            ops::amax(t[0], dims.as_deref(), keepdim)
        })
    }

    /// Returns the smallest elements over the dimension(s) `dim` (all by default); the gradient
    /// is shared evenly between ties.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        run_op(py, self.t.numel(), "amin", &[&self.t], &[], move |t, _| {
            ops::amin(t[0], dims.as_deref(), keepdim)
        })
    }

    /// Returns the index of the largest element, in the flattened tensor or along `dim` (the
    /// first one on ties).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
        run_op(
            py,
            self.t.numel(),
            "argmax",
            &[&self.t],
            &[],
            move |t, _| ops::argmax(t[0], dim, keepdim),
        )
    }

    /// Returns the index of the smallest element, in the flattened tensor or along `dim` (the
    /// first one on ties).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
        run_op(
            py,
            self.t.numel(),
            "argmin",
            &[&self.t],
            &[],
            move |t, _| ops::argmin(t[0], dim, keepdim),
        )
    }

    /// Returns the vector p-norm (2 by default, `"fro"` is 2, `inf` the largest magnitude) over
    /// `dim` or all elements.
    #[pyo3(signature = (p=None, dim=None, keepdim=false, dtype=None))]
    fn norm(
        &self,
        py: Python<'_>,
        p: Option<&Bound<'_, PyAny>>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let ord = norm_ord(p)?;
        let dims = dims_arg(dim)?;
        let dt = opt_dtype(dtype)?;
        run_op(py, self.t.numel(), "norm", &[&self.t], &[], move |t, _| {
            let x = match dt {
                Some(d) => ops::to_dtype(t[0], d)?,
                None => t[0].clone(),
            };
            ops::vector_norm(&x, ord, dims.as_deref(), keepdim)
        })
    }

    /// Returns log(sum(exp(x))) over the dimension(s) `dim`, computed stably.
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let dims = seq_of_ints(dim)?;
        run_op(
            py,
            self.t.numel(),
            "logsumexp",
            &[&self.t],
            &[],
            move |t, _| ops::logsumexp(t[0], Some(&dims), keepdim),
        )
    }

    /// Returns the cumulative sums along `dim`; `dtype` converts first.
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dt = opt_dtype(dtype)?;
        run_op(
            py,
            self.t.numel(),
            "cumsum",
            &[&self.t],
            &[],
            move |t, _| {
                let x = match dt {
                    Some(d) => ops::to_dtype(t[0], d)?,
                    None => t[0].clone(),
                };
                ops::cumsum(&x, dim)
            },
        )
    }

    /// True (as a bool tensor) where every element is nonzero, over all elements or the
    /// dimension(s) `dim`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        match dims_arg(dim)? {
            None => run_op(py, self.t.numel(), "all", &[&self.t], &[], move |t, _| {
                ops::all(t[0])
            }),
            Some(d) => run_op(py, self.t.numel(), "all", &[&self.t], &[], move |t, _| {
                ops::all_dims(t[0], Some(&d), keepdim)
            }),
        }
    }

    /// True (as a bool tensor) where some element is nonzero, over all elements or the
    /// dimension(s) `dim`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        match dims_arg(dim)? {
            None => run_op(py, self.t.numel(), "any", &[&self.t], &[], move |t, _| {
                ops::any(t[0])
            }),
            Some(d) => run_op(py, self.t.numel(), "any", &[&self.t], &[], move |t, _| {
                ops::any_dims(t[0], Some(&d), keepdim)
            }),
        }
    }

    /// Returns exp(x) / sum(exp(x)) along `dim`, computed stably; `dtype` converts first.
    #[pyo3(signature = (dim, *, dtype=None))]
    fn softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dt = opt_dtype(dtype)?;
        run_op(
            py,
            self.t.numel(),
            "softmax",
            &[&self.t],
            &[],
            move |t, _| ops::softmax(t[0], dim, dt),
        )
    }

    /// Returns log(softmax(x)) along `dim`, computed stably; `dtype` converts first.
    #[pyo3(signature = (dim, *, dtype=None))]
    fn log_softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dt = opt_dtype(dtype)?;
        run_op(
            py,
            self.t.numel(),
            "log_softmax",
            &[&self.t],
            &[],
            move |t, _| ops::log_softmax(t[0], dim, dt),
        )
    }
}

/// `max`/`min` overloads: whole tensor, along a dimension, or elementwise.
pub fn extreme(
    py: Python<'_>,
    t: &Tensor,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    is_max: bool,
) -> PyResult<Py<PyAny>> {
    let dim = dim.filter(|d| !d.is_none());
    let Some(d) = dim else {
        let name = if is_max { "max" } else { "min" };
        return run_op(py, t.numel(), name, &[t], &[], move |t, _| {
            if is_max {
                ops::max_all(t[0])
            } else {
                ops::min_all(t[0])
            }
        });
    };
    if let Ok(other) = d.cast::<PyTensor>() {
        let o = &other.get().t;
        // Named as the elementwise ops the tape's passes know.
        let name = if is_max { "maximum" } else { "minimum" };
        return run_op(py, work(&[t, o]), name, &[t, o], &[], move |t, _| {
            if is_max {
                ops::maximum(t[0], t[1])
            } else {
                ops::minimum(t[0], t[1])
            }
        });
    }
    let d = int_arg(d)?;
    let name = if is_max { "max_dim" } else { "min_dim" };
    let (v, i) = run(py, t.numel(), name, &[t], &[], move |t, _| {
        if is_max {
            ops::max_dim(t[0], d, keepdim)
        } else {
            ops::min_dim(t[0], d, keepdim)
        }
    })?;
    return_pair(py, if is_max { "max" } else { "min" }, v, i)
}

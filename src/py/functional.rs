//! Module functions that are not table lines: `add`/`sub` (with `alpha`),
//! `pow`'s three overloads, `where`, the functions that forward to the Tensor
//! method of the same name, and joining (`cat`, `stack`, `einsum`, ...).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::capture::{run_op, run_tuple, scalar_in};
use super::convert::{lhs, operand, tensor_list, to_tensor_like, Operand};
use super::dispatch::{dispatchable, tensor_arg};
use super::errors::work;
use super::tensor::{add_impl, sub_impl, PyTensor};
use crate::ops;
use crate::tensor::{Shape, Tensor};

/// Returns `input + alpha * other` elementwise (broadcast; either may be a number).
#[pyfunction]
#[pyo3(name = "add", signature = (input, other, *, alpha=None))]
fn add_fn(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "add", (input, other, alpha), {
        add_impl(py, &lhs(input, other)?, other, alpha)
    })
}

/// Returns `input - alpha * other` elementwise (broadcast; either may be a number).
#[pyfunction]
#[pyo3(name = "sub", signature = (input, other, *, alpha=None))]
fn sub_fn(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "sub", (input, other, alpha), {
        sub_impl(py, &lhs(input, other)?, other, alpha)
    })
}

/// `pow(tensor, tensor)` (`PowBackward1`), `pow(tensor, number)`
/// (`PowBackward0`) and `pow(number, tensor)` (`PowBackward2`), as PyTorch's
/// three overloads.
#[pyfunction]
#[pyo3(name = "pow")]
fn pow_fn(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    exponent: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "pow", (input, exponent), {
        match (operand(input), operand(exponent)) {
            (Some(Operand::Tensor(a)), Some(Operand::Scalar(e))) => {
                let si = scalar_in(exponent, e);
                run_op(py, a.numel(), "pow", &[&a], &[si], |t, s| {
                    ops::pow_scalar(t[0], s[0])
                })
            }
            (Some(Operand::Scalar(s)), Some(Operand::Tensor(e))) => {
                let si = scalar_in(input, s);
                run_op(py, e.numel(), "rpow", &[&e], &[si], |t, s| {
                    ops::rpow_scalar(t[0], s[0])
                })
            }
            _ => {
                let a = lhs(input, exponent)?;
                let b = to_tensor_like(exponent, Some(&a))?;
                run_op(py, work(&[&a, &b]), "pow", &[&a, &b], &[], |t, _| {
                    ops::pow(t[0], t[1])
                })
            }
        }
    })
}

/// Returns `input` where `condition` is True and `other` elsewhere (broadcast; `input` or
/// `other` may be a number).
#[pyfunction]
#[pyo3(name = "where")]
fn where_fn(
    py: Python<'_>,
    condition: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "where", (condition, input, other), {
        let c = &tensor_arg(condition, "where", "condition", 1)?.get().t;
        let x = lhs(input, other)?;
        let y = to_tensor_like(other, Some(&x))?;
        run_op(
            py,
            work(&[c, &x, &y]),
            "where",
            &[c, &x, &y],
            &[],
            |t, _| ops::where_(t[0], t[1], t[2]),
        )
    })
}

/// `lerp` in one pass (`weight` a tensor or a number); `ferrograd.lerp`
/// calls it for float32/float64 tensors of one dtype.
#[pyfunction]
fn _lerp(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    end: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let x = &tensor_arg(input, "lerp", "input", 1)?.get().t;
    let e = &tensor_arg(end, "lerp", "end", 2)?.get().t;
    if let Ok(w) = weight.cast::<PyTensor>() {
        let w = &w.get().t;
        return run_op(py, work(&[x, e, w]), "lerp", &[x, e, w], &[], |t, _| {
            ops::lerp_tensor(t[0], t[1], t[2])
        });
    }
    let w: f64 = weight.extract()?;
    run_op(py, work(&[x, e]), "lerp", &[x, e], &[], move |t, _| {
        ops::lerp_scalar(t[0], t[1], w)
    })
}

/// `addcmul` (`div` false) or `addcdiv` in one pass; `ferrograd.addcmul`
/// and `ferrograd.addcdiv` call it for float32/float64 tensors of one dtype.
#[pyfunction]
fn _addc(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
    value: f64,
    div: bool,
) -> PyResult<Py<PyAny>> {
    let name = if div { "addcdiv" } else { "addcmul" };
    let x = &tensor_arg(input, name, "input", 1)?.get().t;
    let a = &tensor_arg(tensor1, name, "tensor1", 2)?.get().t;
    let b = &tensor_arg(tensor2, name, "tensor2", 3)?.get().t;
    run_op(py, work(&[x, a, b]), name, &[x, a, b], &[], move |t, _| {
        if div {
            ops::addcdiv(t[0], t[1], t[2], value)
        } else {
            ops::addcmul(t[0], t[1], t[2], value)
        }
    })
}

/// Module functions whose signature is the Tensor method's with `input`
/// first: they call the method, so both spellings share one parser.
macro_rules! method_fn {
    ($pyname:literal, $fname:ident, $doc:literal) => {
        #[doc = concat!("`", $pyname, "(input, ...)` is `input.", $pyname, "(...)`: ", $doc)]
        #[pyfunction]
        #[pyo3(name = $pyname, signature = (input, *args, **kwargs))]
        fn $fname<'py>(
            input: &Bound<'py, PyAny>,
            args: &Bound<'py, PyTuple>,
            kwargs: Option<&Bound<'py, PyDict>>,
        ) -> PyResult<Bound<'py, PyAny>> {
            // A dispatchable type implements the method itself (the protocol's
            // handler would only forward to it).
            if input.cast::<PyTensor>().is_err() && !dispatchable(input) {
                tensor_arg(input, $pyname, "input", 1)?;
            }
            input.call_method($pyname, args, kwargs)
        }
    };
}

method_fn!(
    "round",
    round_fn,
    "returns the elements rounded to `decimals` decimal places, halves to even; its gradient is zero."
);
method_fn!(
    "clamp",
    clamp_fn,
    "returns the elements limited to [min, max]; either bound may be None, a number or a tensor."
);
method_fn!(
    "clip",
    clip_fn,
    "alias of `clamp`: the elements limited to [min, max]."
);
method_fn!(
    "isclose",
    isclose_fn,
    "elementwise closeness `|self - other| <= atol + rtol * |other|`, a bool tensor (NaNs equal only with `equal_nan`)."
);
method_fn!(
    "allclose",
    allclose_fn,
    "true when every element is close to `other` (see `isclose`)."
);
method_fn!(
    "prod",
    prod_fn,
    "returns the product of the elements, over all of them or over the dimension(s) `dim` (kept as size 1 with `keepdim`); `dtype` converts first."
);
method_fn!(
    "var",
    var_fn,
    "returns the variance over `dim` (all elements by default), dividing by N - correction (Bessel's correction 1 unless `unbiased=False` or `correction=` says otherwise)."
);
method_fn!(
    "std",
    std_fn,
    "returns the standard deviation over `dim` (all elements by default), dividing by N - correction (1 unless `unbiased=False` or `correction=` says otherwise)."
);
method_fn!(
    "max",
    max_fn,
    "`max()`: the largest element; `max(dim, keepdim)`: the (values, indices) of the largest along `dim`; `max(other)`: the elementwise maximum."
);
method_fn!(
    "min",
    min_fn,
    "`min()`: the smallest element; `min(dim, keepdim)`: the (values, indices) of the smallest along `dim`; `min(other)`: the elementwise minimum."
);
method_fn!(
    "amax",
    amax_fn,
    "returns the largest elements over the dimension(s) `dim` (all by default); the gradient is shared evenly between ties."
);
method_fn!(
    "amin",
    amin_fn,
    "returns the smallest elements over the dimension(s) `dim` (all by default); the gradient is shared evenly between ties."
);
method_fn!(
    "argmax",
    argmax_fn,
    "returns the index of the largest element, in the flattened tensor or along `dim` (the first one on ties)."
);
method_fn!(
    "argmin",
    argmin_fn,
    "returns the index of the smallest element, in the flattened tensor or along `dim` (the first one on ties)."
);
method_fn!(
    "logsumexp",
    logsumexp_fn,
    "returns log(sum(exp(x))) over the dimension(s) `dim`, computed stably."
);
method_fn!(
    "cumsum",
    cumsum_fn,
    "returns the cumulative sums along `dim`; `dtype` converts first."
);
method_fn!(
    "softmax",
    softmax_fn,
    "returns exp(x) / sum(exp(x)) along `dim`, computed stably; `dtype` converts first."
);
method_fn!(
    "log_softmax",
    log_softmax_fn,
    "returns log(softmax(x)) along `dim`, computed stably; `dtype` converts first."
);
method_fn!(
    "unflatten",
    unflatten_fn,
    "returns the tensor with dimension `dim` split into `sizes` (one may be -1)."
);
method_fn!(
    "broadcast_to",
    broadcast_to_fn,
    "returns a view of the tensor broadcast to `size`."
);
method_fn!(
    "flip",
    flip_fn,
    "returns a copy with the order of the elements reversed along `dims`."
);
method_fn!(
    "narrow",
    narrow_fn,
    "returns the view of `length` elements from `start` along `dim`."
);
method_fn!(
    "movedim",
    movedim_fn,
    "returns a view with dimension `source` moved to position `destination`."
);
method_fn!(
    "diagonal",
    diagonal_fn,
    "returns the view of the diagonal at `offset` of the planes spanned by `dim1` and `dim2`, as the last dimension."
);
method_fn!(
    "swapaxes",
    swapaxes_fn,
    "alias of `transpose`: a view with dimensions `axis0` and `axis1` swapped."
);
method_fn!(
    "permute",
    permute_fn,
    "returns a view with the dimensions reordered as `dims`."
);
method_fn!(
    "split",
    split_fn,
    "splits the tensor along `dim` into views of `split_size` elements (the last may be shorter) or of the given section sizes."
);
method_fn!(
    "chunk",
    chunk_fn,
    "splits the tensor along `dim` into at most `chunks` views of equal size (the last may be shorter)."
);
method_fn!(
    "unbind",
    unbind_fn,
    "returns the slices along `dim` as a tuple of views, without that dimension."
);
method_fn!(
    "gather",
    gather_fn,
    "returns the elements of the tensor at `index` along `dim`: `out[i][j] = self[index[i][j]][j]` for dim 0."
);
method_fn!(
    "scatter_add",
    scatter_add_fn,
    "returns a copy with the elements of `src` added at `index` along `dim` (repeated indices add up)."
);
method_fn!(
    "scatter",
    scatter_fn,
    "returns a copy with the elements of `src` (or the number `value`) written at `index` along `dim`."
);
method_fn!(
    "index_select",
    index_select_fn,
    "returns the slices at the positions in the 1-D `index` along `dim` (a copy)."
);
method_fn!(
    "masked_fill",
    masked_fill_fn,
    "returns a copy with `value` where the bool `mask` is True (broadcast)."
);
method_fn!(
    "masked_select",
    masked_select_fn,
    "returns the elements where the bool `mask` is True, as a 1-D tensor."
);
method_fn!(
    "nonzero",
    nonzero_fn,
    "returns the indices of the nonzero elements, one row per element (a tuple of index tensors with `as_tuple=True`)."
);

/// Joins `tensors` along the existing dimension `dim`; the other sizes must match and the
/// dtypes promote.
#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn cat(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
    dispatching!(py, "cat", (tensors, dim), {
        let ts = tensor_list(tensors)?;
        autocast!("cat", ts);
        let work = ts.iter().map(|t| t.numel()).sum();
        let refs: Vec<&Tensor> = ts.iter().collect();
        run_op(py, work, "cat", &refs, &[], move |t, _| {
            let v: Vec<Tensor> = t.iter().map(|x| (*x).clone()).collect();
            ops::cat(&v, dim)
        })
    })
}

/// Joins `tensors` of the same shape along a new dimension `dim`.
#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn stack(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
    dispatching!(py, "stack", (tensors, dim), {
        let ts = tensor_list(tensors)?;
        autocast!("stack", ts);
        let work = ts.iter().map(|t| t.numel()).sum();
        let refs: Vec<&Tensor> = ts.iter().collect();
        run_op(py, work, "stack", &refs, &[], move |t, _| {
            let v: Vec<Tensor> = t.iter().map(|x| (*x).clone()).collect();
            ops::stack(&v, dim)
        })
    })
}

/// `einsum("ij,jk->ik", a, b)` or `einsum("ij,jk->ik", [a, b])`.
#[pyfunction]
#[pyo3(signature = (equation, *operands))]
fn einsum(py: Python<'_>, equation: &str, operands: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    dispatching!(py, "einsum", (equation, operands), {
        let ts = if operands.len() == 1 && operands.get_item(0)?.cast::<PyTensor>().is_err() {
            tensor_list(&operands.get_item(0)?)?
        } else {
            tensor_list(operands.as_any())?
        };
        let n = ts.iter().map(|t| t.numel()).max().unwrap_or(0);
        let refs: Vec<&Tensor> = ts.iter().collect();
        let equation = equation.to_string();
        run_op(py, n, "einsum", &refs, &[], move |t, _| {
            let v: Vec<Tensor> = t.iter().map(|x| (*x).clone()).collect();
            ops::einsum(&equation, &v)
        })
    })
}

/// Returns views of `tensors` broadcast to one common shape.
#[pyfunction]
#[pyo3(signature = (*tensors))]
fn broadcast_tensors(py: Python<'_>, tensors: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    let ts = match tensor_list(tensors.as_any()) {
        Err(e) if e.is_instance_of::<crate::py::dispatch::DispatchNeeded>(py) => {
            // The arguments are the variadic tuple itself.
            return crate::py::dispatch::dispatch(py, "broadcast_tensors", tensors.clone());
        }
        r => r?,
    };
    let n = ts.iter().map(|t| t.numel()).max().unwrap_or(0);
    let refs: Vec<&Tensor> = ts.iter().collect();
    run_tuple(py, n, "broadcast_tensors", &refs, &[], |ts, _| {
        let mut shape = Shape::new();
        for t in ts {
            shape = crate::tensor::broadcast_shapes(&shape, &t.shape())?;
        }
        ts.iter()
            .map(|t| ops::expand(t, &shape))
            .collect::<crate::Result<Vec<_>>>()
    })
}

/// Adds these functions to `ferrograd._C`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(add_fn, m)?)?;
    m.add_function(wrap_pyfunction!(sub_fn, m)?)?;
    m.add_function(wrap_pyfunction!(pow_fn, m)?)?;
    m.add_function(wrap_pyfunction!(where_fn, m)?)?;
    m.add_function(wrap_pyfunction!(_lerp, m)?)?;
    m.add_function(wrap_pyfunction!(_addc, m)?)?;
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(einsum, m)?)?;
    m.add_function(wrap_pyfunction!(broadcast_tensors, m)?)?;
    m.add_function(wrap_pyfunction!(round_fn, m)?)?;
    m.add_function(wrap_pyfunction!(clamp_fn, m)?)?;
    m.add_function(wrap_pyfunction!(clip_fn, m)?)?;
    m.add_function(wrap_pyfunction!(isclose_fn, m)?)?;
    m.add_function(wrap_pyfunction!(allclose_fn, m)?)?;
    m.add_function(wrap_pyfunction!(prod_fn, m)?)?;
    m.add_function(wrap_pyfunction!(var_fn, m)?)?;
    m.add_function(wrap_pyfunction!(std_fn, m)?)?;
    m.add_function(wrap_pyfunction!(max_fn, m)?)?;
    m.add_function(wrap_pyfunction!(min_fn, m)?)?;
    m.add_function(wrap_pyfunction!(amax_fn, m)?)?;
    m.add_function(wrap_pyfunction!(amin_fn, m)?)?;
    m.add_function(wrap_pyfunction!(argmax_fn, m)?)?;
    m.add_function(wrap_pyfunction!(argmin_fn, m)?)?;
    m.add_function(wrap_pyfunction!(logsumexp_fn, m)?)?;
    m.add_function(wrap_pyfunction!(cumsum_fn, m)?)?;
    m.add_function(wrap_pyfunction!(softmax_fn, m)?)?;
    m.add_function(wrap_pyfunction!(log_softmax_fn, m)?)?;
    m.add_function(wrap_pyfunction!(unflatten_fn, m)?)?;
    m.add_function(wrap_pyfunction!(broadcast_to_fn, m)?)?;
    m.add_function(wrap_pyfunction!(flip_fn, m)?)?;
    m.add_function(wrap_pyfunction!(narrow_fn, m)?)?;
    m.add_function(wrap_pyfunction!(movedim_fn, m)?)?;
    m.add_function(wrap_pyfunction!(diagonal_fn, m)?)?;
    m.add_function(wrap_pyfunction!(swapaxes_fn, m)?)?;
    m.add_function(wrap_pyfunction!(permute_fn, m)?)?;
    m.add_function(wrap_pyfunction!(split_fn, m)?)?;
    m.add_function(wrap_pyfunction!(chunk_fn, m)?)?;
    m.add_function(wrap_pyfunction!(unbind_fn, m)?)?;
    m.add_function(wrap_pyfunction!(gather_fn, m)?)?;
    m.add_function(wrap_pyfunction!(scatter_add_fn, m)?)?;
    m.add_function(wrap_pyfunction!(scatter_fn, m)?)?;
    m.add_function(wrap_pyfunction!(index_select_fn, m)?)?;
    m.add_function(wrap_pyfunction!(masked_fill_fn, m)?)?;
    m.add_function(wrap_pyfunction!(masked_select_fn, m)?)?;
    m.add_function(wrap_pyfunction!(nonzero_fn, m)?)?;
    Ok(())
}

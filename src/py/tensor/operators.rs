//! `Tensor`'s Python operators (`+`, `@`, `==`, `+=`, ...), the methods
//! that share their number-or-tensor handling (`add`, `mul`, `eq`, ...), and
//! the in-place writes (`add_`, `copy_`, `fill_`, ...).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;

use super::PyTensor;
use crate::ops::{self, Scalar};
use crate::py::capture;
use crate::py::convert::{as_scalar, operand, scalar_from_any, to_tensor_like, Operand};
use crate::py::errors::{product_work, read, work};
use crate::tensor::Tensor;

type TT = fn(&Tensor, &Tensor) -> crate::Result<Tensor>;
type TS = fn(&Tensor, Scalar) -> crate::Result<Tensor>;

fn work2(a: &Tensor, b: &Tensor) -> usize {
    work(&[a, b])
}

/// `a <op> other` where `other` is a tensor or a Python number.
fn binop(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    tt: TT,
    ts: TS,
    name: &'static str,
) -> PyResult<Py<PyAny>> {
    // The other tensor is borrowed from its Python object, not cloned: a
    // handle clone and drop are two atomic operations on every call.
    if let Ok(o) = other.cast::<PyTensor>() {
        let b = &o.get().t;
        return capture::run_op(py, work2(a, b), name, &[a, b], &[], move |t, _| {
            tt(t[0], t[1])
        });
    }
    match operand(other) {
        Some(Operand::Tensor(b)) => {
            capture::run_op(py, work2(a, &b), name, &[a, &b], &[], move |t, _| {
                tt(t[0], t[1])
            })
        }
        Some(Operand::Scalar(s)) => {
            let si = capture::scalar_in(other, s);
            capture::run_op(py, a.numel(), name, &[a], &[si], move |t, s| ts(t[0], s[0]))
        }
        None => Ok(py.NotImplemented()),
    }
}

/// `a.<op>(other)`: as `binop`, but an operand that is not a tensor or a
/// number is converted (or raises, or asks for `__ferrograd_function__`
/// dispatch) instead of returning `NotImplemented` to the caller.
fn named_binop(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    tt: TT,
    ts: TS,
    name: &'static str,
) -> PyResult<Py<PyAny>> {
    let b = match operand(other) {
        Some(Operand::Scalar(s)) => {
            let si = capture::scalar_in(other, s);
            return capture::run_op(py, a.numel(), name, &[a], &[si], move |t, s| ts(t[0], s[0]));
        }
        Some(Operand::Tensor(b)) => b,
        None => to_tensor_like(other, Some(a))?,
    };
    capture::run_op(py, work2(a, &b), name, &[a, &b], &[], move |t, _| {
        tt(t[0], t[1])
    })
}

/// `other <op> a` for a Python number `other`.
fn rbinop(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    tt: TT,
    ts: TS,
    name: &'static str,
) -> PyResult<Py<PyAny>> {
    match operand(other) {
        Some(Operand::Tensor(b)) => {
            capture::run_op(py, work2(a, &b), name, &[&b, a], &[], move |t, _| {
                tt(t[0], t[1])
            })
        }
        Some(Operand::Scalar(s)) => {
            let si = capture::scalar_in(other, s);
            capture::run_op(py, a.numel(), name, &[a], &[si], move |t, s| ts(t[0], s[0]))
        }
        None => Ok(py.NotImplemented()),
    }
}

/// `a <op>= other`: computes out of place, then commits into `a`.
fn ibinop(
    slf: &Bound<'_, PyTensor>,
    other: &Bound<'_, PyAny>,
    tt: TT,
    name: &'static str,
) -> PyResult<Py<PyAny>> {
    ibinop_with(slf, other, tt, None, name)
}

/// `ibinop`, trying first the one-pass untracked update for `fast`.
fn ibinop_with(
    slf: &Bound<'_, PyTensor>,
    other: &Bound<'_, PyAny>,
    tt: TT,
    fast: Option<ops::InplaceOp>,
    name: &'static str,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let a = &slf.get().t;
    let b = to_tensor_like(other, Some(a)).map_err(|e| crate::py::dispatch::inplace_err(py, e))?;
    capture::run_inplace(py, work2(a, &b), name, &[a, &b], &[], move |t, _| {
        let (a, b) = (t[0], t[1]);
        ops::check_inplace(a)?;
        if let Some(op) = fast {
            if ops::try_update_in_place(a, b, op)? {
                return Ok(());
            }
        }
        ops::apply_inplace(a, || tt(a, b))
    })?;
    Ok(slf.clone().into_any().unbind())
}

/// `a + alpha * other` (`add` and `Tensor.add`).
pub(crate) fn add_impl(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let b = to_tensor_like(other, Some(a))?;
    let alpha = match alpha {
        Some(al) if !al.is_none() => {
            Some(as_scalar(al).ok_or_else(|| PyTypeError::new_err("alpha must be a number"))?)
        }
        _ => None,
    };
    // With `alpha` the op is not a plain sum: its own name keeps the tape's
    // description of it (`crate::compile::Desc`) exact.
    let name = if alpha.is_some() { "add_alpha" } else { "add" };
    capture::run_op(
        py,
        work2(a, &b),
        name,
        &[a, &b],
        &[],
        move |t, _| match alpha {
            Some(s) => ops::add_alpha(t[0], t[1], s),
            None => ops::add(t[0], t[1]),
        },
    )
}

/// `a - alpha * other` (`sub` and `Tensor.sub`).
pub(crate) fn sub_impl(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let b = to_tensor_like(other, Some(a))?;
    let alpha = match alpha {
        Some(al) if !al.is_none() => {
            Some(as_scalar(al).ok_or_else(|| PyTypeError::new_err("alpha must be a number"))?)
        }
        _ => None,
    };
    let name = if alpha.is_some() { "sub_alpha" } else { "sub" };
    capture::run_op(
        py,
        work2(a, &b),
        name,
        &[a, &b],
        &[],
        move |t, _| match alpha {
            Some(s) => {
                ops::sub_check(t[0], t[1])?;
                ops::sub(t[0], &ops::mul(t[1], &s.wrap(t[1]))?)
            }
            None => ops::sub(t[0], t[1]),
        },
    )
}

#[pymethods]
impl PyTensor {
    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::add, ops::add_scalar, "add")
    }

    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::add, ops::add_scalar, "radd")
    }

    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::sub, ops::sub_scalar, "sub")
    }

    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::sub, ops::rsub_scalar, "rsub")
    }

    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::mul, ops::mul_scalar, "mul")
    }

    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::mul, ops::mul_scalar, "rmul")
    }

    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::div, ops::div_scalar, "div")
    }

    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::div, ops::rdiv_scalar, "rdiv")
    }

    fn __pow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _m: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::pow, ops::pow_scalar, "pow")
    }

    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _m: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::pow, ops::rpow_scalar, "rpow")
    }

    fn __matmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match operand(o) {
            Some(Operand::Tensor(b)) => {
                let a = &self.t;
                autocast!("matmul", a, b);
                capture::run_op(py, product_work(a, &b), "matmul", &[a, &b], &[], |t, _| {
                    ops::matmul(t[0], t[1])
                })
            }
            _ => Ok(py.NotImplemented()),
        }
    }

    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match operand(o) {
            Some(Operand::Tensor(b)) => {
                let a = &self.t;
                autocast!("matmul", a, b);
                capture::run_op(py, product_work(&b, a), "matmul", &[&b, a], &[], |t, _| {
                    ops::matmul(t[0], t[1])
                })
            }
            _ => Ok(py.NotImplemented()),
        }
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        capture::run_op(py, self.t.numel(), "neg", &[&self.t], &[], |t, _| {
            ops::neg(t[0])
        })
    }

    fn __pos__<'py>(slf: &Bound<'py, Self>) -> Bound<'py, Self> {
        slf.clone()
    }

    fn __abs__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        capture::run_op(py, self.t.numel(), "abs", &[&self.t], &[], |t, _| {
            ops::abs(t[0])
        })
    }

    fn __invert__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        capture::run_op(
            py,
            self.t.numel(),
            "bitwise_not",
            &[&self.t],
            &[],
            |t, _| ops::bitwise_not(t[0]),
        )
    }

    fn __and__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(o, Some(&self.t))?;
        capture::run_op(
            py,
            work2(&self.t, &b),
            "bitwise_and",
            &[&self.t, &b],
            &[],
            |t, _| ops::bitwise_and(t[0], t[1]),
        )
    }

    fn __or__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(o, Some(&self.t))?;
        capture::run_op(
            py,
            work2(&self.t, &b),
            "bitwise_or",
            &[&self.t, &b],
            &[],
            |t, _| ops::bitwise_or(t[0], t[1]),
        )
    }

    fn __xor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = to_tensor_like(o, Some(&self.t))?;
        capture::run_op(
            py,
            work2(&self.t, &b),
            "bitwise_xor",
            &[&self.t, &b],
            &[],
            |t, _| ops::bitwise_xor(t[0], t[1]),
        )
    }

    fn __iadd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let _op = crate::tensor::write_op("add_");
        ibinop_with(slf, o, ops::add, Some(ops::InplaceOp::Add), "add_").map(drop)
    }

    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let _op = crate::tensor::write_op("sub_");
        ibinop_with(slf, o, ops::sub, Some(ops::InplaceOp::Sub), "sub_").map(drop)
    }

    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let _op = crate::tensor::write_op("mul_");
        ibinop_with(slf, o, ops::mul, Some(ops::InplaceOp::Mul), "mul_").map(drop)
    }

    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let _op = crate::tensor::write_op("div_");
        ibinop_with(slf, o, ops::div, Some(ops::InplaceOp::Div), "div_").map(drop)
    }

    fn __richcmp__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let Some(other) = operand(o) else {
            return Ok(py.NotImplemented());
        };
        let b = match other {
            Operand::Tensor(b) => b,
            Operand::Scalar(s) => {
                let b = s.wrap(&self.t);
                capture::note_number_tensor(o, &b);
                b
            }
        };
        let f: TT = match op {
            CompareOp::Eq => ops::eq,
            CompareOp::Ne => ops::ne,
            CompareOp::Lt => ops::lt,
            CompareOp::Le => ops::le,
            CompareOp::Gt => ops::gt,
            CompareOp::Ge => ops::ge,
        };
        capture::run_op(
            py,
            work2(&self.t, &b),
            "compare",
            &[&self.t, &b],
            &[],
            move |t, _| f(t[0], t[1]),
        )
    }

    /// Adds `alpha * other` to the tensor in place and returns it.
    #[pyo3(signature = (other, *, alpha=None))]
    fn add_<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("add_");
        match alpha {
            None => ibinop_with(slf, other, ops::add, Some(ops::InplaceOp::Add), "add_"),
            Some(al) => {
                let a = &slf.get().t;
                let s = scalar_from_any(al)?;
                let b = to_tensor_like(other, Some(a))?;
                capture::run_inplace(
                    slf.py(),
                    work2(a, &b),
                    "add_",
                    &[a, &b],
                    &[],
                    move |t, _| ops::apply_inplace(t[0], || ops::add_alpha(t[0], t[1], s)),
                )?;
                Ok(slf.clone().into_any().unbind())
            }
        }
    }

    /// Subtracts `other` from the tensor in place and returns it.
    fn sub_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("sub_");
        ibinop_with(slf, other, ops::sub, Some(ops::InplaceOp::Sub), "sub_")
    }

    /// Multiplies the tensor by `other` in place and returns it.
    fn mul_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("mul_");
        ibinop_with(slf, other, ops::mul, Some(ops::InplaceOp::Mul), "mul_")
    }

    /// Divides the tensor by `other` in place and returns it.
    fn div_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("div_");
        ibinop_with(slf, other, ops::div, Some(ops::InplaceOp::Div), "div_")
    }

    /// Raises the tensor to the power `other` in place and returns it.
    fn pow_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("pow_");
        if let Some(Operand::Scalar(e)) = operand(other) {
            // A number exponent is PyTorch's `pow_.Scalar` (`PowBackward0`).
            let a = &slf.get().t;
            capture::run_inplace(slf.py(), a.numel(), "pow_", &[a], &[], move |t, _| {
                ops::apply_inplace_map(t[0], &[], || ops::pow_scalar(t[0], e))
            })?;
            return Ok(slf.clone().into_any().unbind());
        }
        ibinop(slf, other, ops::pow, "pow_")
    }

    /// Copies the values of `src` (broadcast, converted to this dtype) into the tensor in place
    /// and returns it.
    fn copy_(slf: &Bound<'_, Self>, src: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("copy_");
        ibinop(slf, src, ops::copy_value, "copy_")
    }

    /// Fills the tensor with zeros in place and returns it.
    fn zero_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("zero_");
        let a = &slf.get().t;
        capture::run_inplace(slf.py(), a.numel(), "zero_", &[a], &[], |t, _| {
            ops::zero_(t[0])
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// OneFlow's spelling of `zero_`, used by its tutorials.
    fn zeros_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Self::zero_(slf)
    }

    /// Fills the tensor with `value` in place and returns it.
    fn fill_(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _op = crate::tensor::write_op("fill_");
        let v = scalar_from_any(value)?.to_f64();
        let a = &slf.get().t;
        let si = capture::scalar_in(value, crate::ops::Scalar::Float(v));
        capture::run_inplace(slf.py(), a.numel(), "fill_", &[a], &[si], |t, s| {
            ops::fill_(t[0], s[0].to_f64())
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Fills the tensor in place with samples from the normal distribution N(mean, std^2) and
    /// returns it.
    #[pyo3(signature = (mean=0.0, std=1.0, *, generator=None))]
    fn normal_(
        slf: &Bound<'_, Self>,
        mean: f64,
        std: f64,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let gen = super::super::random::gen_arg(generator, "normal_")?;
        let _op = crate::tensor::write_op("normal_");
        let t = &slf.get().t;
        capture::run_inplace(slf.py(), t.numel(), "normal_", &[t], &[], move |t, _| {
            ops::normal_with(t[0], mean, std, gen.as_ref())
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Fills the tensor in place with samples from the uniform distribution on [a, b) and
    /// returns it.
    #[pyo3(signature = (a=0.0, b=1.0, *, generator=None))]
    fn uniform_(
        slf: &Bound<'_, Self>,
        a: f64,
        b: f64,
        generator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let gen = super::super::random::gen_arg(generator, "uniform_")?;
        let _op = crate::tensor::write_op("uniform_");
        let t = &slf.get().t;
        capture::run_inplace(slf.py(), t.numel(), "uniform_", &[t], &[], move |t, _| {
            ops::uniform_with(t[0], a, b, gen.as_ref())
        })?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Returns `self + alpha * other` (broadcast; `other` may be a number).
    #[pyo3(signature = (other, *, alpha=None))]
    fn add(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        dispatching!(py, "add", (slf, other, alpha), {
            add_impl(py, &slf.get().t, other, alpha)
        })
    }

    /// Returns `self - alpha * other` (broadcast; `other` may be a number).
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        dispatching!(py, "sub", (slf, other, alpha), {
            sub_impl(py, &slf.get().t, other, alpha)
        })
    }

    /// Returns `self * other` elementwise (broadcast; `other` may be a number).
    fn mul(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        dispatching!(py, "mul", (slf, other), {
            named_binop(py, &slf.get().t, other, ops::mul, ops::mul_scalar, "mul")
        })
    }

    /// Returns `self / other` elementwise, true division (broadcast; `other` may be a number).
    fn div(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        dispatching!(py, "div", (slf, other), {
            named_binop(py, &slf.get().t, other, ops::div, ops::div_scalar, "div")
        })
    }

    /// Returns `self ** exponent` elementwise (broadcast; `exponent` may be a number).
    fn pow(slf: &Bound<'_, Self>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        dispatching!(py, "pow", (slf, exponent), {
            named_binop(py, &slf.get().t, exponent, ops::pow, ops::pow_scalar, "pow")
        })
    }

    /// Elementwise `self == other`, a bool tensor.
    fn eq(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Eq)
    }

    /// Elementwise `self != other`, a bool tensor.
    fn ne(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Ne)
    }

    /// Elementwise `self < other`, a bool tensor.
    fn lt(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Lt)
    }

    /// Elementwise `self <= other`, a bool tensor.
    fn le(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Le)
    }

    /// Elementwise `self > other`, a bool tensor.
    fn gt(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Gt)
    }

    /// Elementwise `self >= other`, a bool tensor.
    fn ge(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__richcmp__(py, o, CompareOp::Ge)
    }

    /// True when `other` has the same shape and the same values.
    fn equal(&self, other: &Bound<'_, PyTensor>) -> PyResult<bool> {
        let b = &other.get().t;
        if self.t.shape() != b.shape() {
            return Ok(false);
        }
        let same = read(other.py(), "equal", work2(&self.t, b), || {
            ops::eq(&self.t, b).and_then(|e| ops::all(&e))
        })?;
        Ok(same.item()? != 0.0)
    }
}

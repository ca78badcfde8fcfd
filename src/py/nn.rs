//! `nn.functional` bindings: activations with options, `dropout`, `linear`
//! and the losses (one recorded node each, see `ops/loss.rs`).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use super::capture;
use super::convert::{opt_tensor, to_tensor_like};
use super::dispatch::tensor_arg;
use super::functions::t_of;
use super::tensor::PyTensor;
use crate::ops;

/// The mean squared error between `input` and `target`, reduced by `reduction` ("mean", "sum"
/// or "none").
#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean"))]
fn mse_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "mse_loss", (input, target, reduction), {
        let a = &tensor_arg(input, "mse_loss", "input", 1)?.get().t;
        let b = to_tensor_like(target, Some(a))?;
        autocast!("mse_loss", a, b);
        let r = ops::Reduction::parse(reduction)?;
        capture::run_op(py, a.numel(), "mse_loss", &[a, &b], &[], move |t, _| {
            ops::mse_loss(t[0], t[1], r)
        })
    })
}

/// Clamps the elements of `input` to [min_val, max_val].
/// `pdist`'s kernel: the `p`-norm distance of every pair of rows
/// (`nn.functional.pdist` checks the arguments with PyTorch's wording).
#[pyfunction]
#[pyo3(signature = (input, p))]
fn _pdist(py: Python<'_>, input: &Bound<'_, PyAny>, p: f64) -> PyResult<Py<PyAny>> {
    let x = &tensor_arg(input, "pdist", "input", 1)?.get().t;
    let work = x
        .numel()
        .saturating_mul(x.shape().first().copied().unwrap_or(0));
    capture::run_op(py, work, "pdist", &[x], &[], move |t, _| {
        ops::pdist(t[0], p)
    })
}

#[pyfunction]
#[pyo3(signature = (input, min_val=-1.0, max_val=1.0))]
fn hardtanh(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    min_val: f64,
    max_val: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "hardtanh", (input, min_val, max_val), {
        let a = &tensor_arg(input, "hardtanh", "input", 1)?.get().t;
        capture::run_op(py, a.numel(), "hardtanh", &[a], &[], move |t, _| {
            ops::hardtanh(t[0], min_val, max_val)
        })
    })
}

/// Applies max(x, 0) + negative_slope * min(x, 0) to each element of `input`.
#[pyfunction]
#[pyo3(signature = (input, negative_slope=0.01))]
fn leaky_relu(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    negative_slope: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "leaky_relu", (input, negative_slope), {
        let a = &tensor_arg(input, "leaky_relu", "input", 1)?.get().t;
        capture::run_op(py, a.numel(), "leaky_relu", &[a], &[], move |t, _| {
            ops::leaky_relu(t[0], negative_slope)
        })
    })
}

/// `leaky_relu_(input, negative_slope)`: in place, recorded with a rule on
/// the result (PyTorch's `LeakyReluBackward1`).
#[pyfunction]
#[pyo3(signature = (input, negative_slope=0.01))]
fn leaky_relu_<'py>(
    input: &Bound<'py, PyTensor>,
    negative_slope: f64,
) -> PyResult<Bound<'py, PyTensor>> {
    let _op = crate::tensor::write_op("leaky_relu_");
    let a = t_of(input);
    capture::run_inplace(
        input.py(),
        a.numel(),
        "leaky_relu_",
        &[a],
        &[],
        move |t, _| {
            ops::apply_inplace_map(t[0], &[], || ops::leaky_relu_result(t[0], negative_slope))
        },
    )?;
    Ok(input.clone())
}

/// `elu_(input, alpha)`: in place, recorded as PyTorch's `EluBackward1`.
#[pyfunction]
#[pyo3(signature = (input, alpha=1.0))]
fn elu_<'py>(input: &Bound<'py, PyTensor>, alpha: f64) -> PyResult<Bound<'py, PyTensor>> {
    let _op = crate::tensor::write_op("elu_");
    let a = t_of(input);
    capture::run_inplace(input.py(), a.numel(), "elu_", &[a], &[], move |t, _| {
        ops::apply_inplace_map(t[0], &[], || ops::elu_result(t[0], alpha))
    })?;
    Ok(input.clone())
}

/// Applies the exponential linear unit: scale * x above zero, scale * alpha * (exp(input_scale
/// * x) - 1) below (selu and celu are its special cases).
#[pyfunction]
#[pyo3(signature = (input, alpha=1.0, scale=1.0, input_scale=1.0))]
fn elu(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    alpha: f64,
    scale: f64,
    input_scale: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "elu", (input, alpha, scale, input_scale), {
        let a = &tensor_arg(input, "elu", "input", 1)?.get().t;
        capture::run_op(py, a.numel(), "elu", &[a], &[], move |t, _| {
            ops::elu(t[0], alpha, scale, input_scale)
        })
    })
}

/// A one-input activation with no options, bound as `_C.<name>(input)`.
macro_rules! activation0 {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[pyfunction]
        fn $name(py: Python<'_>, input: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
            dispatching!(py, stringify!($name), (input,), {
                let a = &tensor_arg(input, stringify!($name), "input", 1)?.get().t;
                capture::run_op(py, a.numel(), stringify!($name), &[a], &[], |t, _| {
                    ops::$name(t[0])
                })
            })
        }
    };
}

activation0!(
    /// Applies x * tanh(softplus(x)).
    mish
);
activation0!(
    /// Applies log(sigmoid(x)) without overflow.
    logsigmoid
);
activation0!(
    /// Applies x * relu6(x + 3) / 6.
    hardswish
);
activation0!(
    /// Applies x / (1 + |x|).
    softsign
);
activation0!(
    /// Applies relu6(x + 3) / 6.
    hardsigmoid
);

/// Zeroes the elements of `input` in [-lambd, lambd].
#[pyfunction]
#[pyo3(signature = (input, lambd=0.5))]
fn hardshrink(py: Python<'_>, input: &Bound<'_, PyAny>, lambd: f64) -> PyResult<Py<PyAny>> {
    dispatching!(py, "hardshrink", (input, lambd), {
        let a = &tensor_arg(input, "hardshrink", "input", 1)?.get().t;
        capture::run_op(py, a.numel(), "hardshrink", &[a], &[], move |t, _| {
            ops::hardshrink(t[0], lambd)
        })
    })
}

/// Shrinks `input` towards 0 by `lambd`, zeroing [-lambd, lambd].
#[pyfunction]
#[pyo3(signature = (input, lambd=0.5))]
fn softshrink(py: Python<'_>, input: &Bound<'_, PyAny>, lambd: f64) -> PyResult<Py<PyAny>> {
    dispatching!(py, "softshrink", (input, lambd), {
        let a = &tensor_arg(input, "softshrink", "input", 1)?.get().t;
        capture::run_op(py, a.numel(), "softshrink", &[a], &[], move |t, _| {
            ops::softshrink(t[0], lambd)
        })
    })
}

/// Replaces the elements of `input` that are at most `threshold` by `value`.
#[pyfunction]
fn threshold(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    threshold: f64,
    value: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "threshold", (input, threshold, value), {
        let a = &tensor_arg(input, "threshold", "input", 1)?.get().t;
        capture::run_op(py, a.numel(), "threshold", &[a], &[], move |t, _| {
            ops::threshold(t[0], threshold, value)
        })
    })
}

/// Applies the Gaussian error linear unit x * Phi(x) (`approximate="tanh"`: its tanh
/// approximation).
#[pyfunction]
#[pyo3(signature = (input, approximate="none"))]
fn gelu(py: Python<'_>, input: &Bound<'_, PyAny>, approximate: &str) -> PyResult<Py<PyAny>> {
    dispatching!(py, "gelu", (input, approximate), {
        let tanh = match approximate {
            "none" => false,
            "tanh" => true,
            other => {
                return Err(PyRuntimeError::new_err(format!(
                    "approximate argument must be either none or tanh, got {other}"
                )))
            }
        };
        let a = &tensor_arg(input, "gelu", "input", 1)?.get().t;
        capture::run_op(py, a.numel(), "gelu", &[a], &[], move |t, _| {
            ops::gelu(t[0], tanh)
        })
    })
}

/// Applies log(1 + exp(beta * x)) / beta to each element, linear above `threshold`.
#[pyfunction]
#[pyo3(signature = (input, beta=1.0, threshold=20.0))]
fn softplus(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    beta: f64,
    threshold: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "softplus", (input, beta, threshold), {
        let a = &tensor_arg(input, "softplus", "input", 1)?.get().t;
        capture::run_op(py, a.numel(), "softplus", &[a], &[], move |t, _| {
            ops::softplus(t[0], beta, threshold)
        })
    })
}

/// Zeroes each element of `input` with probability `p` and scales the rest by 1 / (1 - p) when
/// `training`; returns `input` unchanged otherwise.
#[pyfunction]
#[pyo3(signature = (input, p=0.5, training=true))]
fn dropout(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    p: f64,
    training: bool,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "dropout", (input, p, training), {
        let a = &tensor_arg(input, "dropout", "input", 1)?.get().t;
        capture::run_op(py, a.numel(), "dropout", &[a], &[], move |t, _| {
            ops::dropout(t[0], p, training)
        })
    })
}

/// Returns `input @ weight.T + bias` (bias optional), recorded as PyTorch's addmm/mm nodes.
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None))]
fn linear(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "linear", (input, weight, bias), {
        let (x, w) = (
            &tensor_arg(input, "linear", "input", 1)?.get().t,
            &tensor_arg(weight, "linear", "weight", 2)?.get().t,
        );
        let b = opt_tensor(bias)?;
        autocast!("linear", x, w, b);
        let work = x
            .numel()
            .saturating_mul(w.shape().first().copied().unwrap_or(1));
        let mut ins = vec![x, w];
        ins.extend(b.as_ref());
        capture::run_op(py, work, "linear", &ins, &[], |t, _| {
            ops::linear(t[0], t[1], t.get(2).copied())
        })
    })
}

/// The mean absolute error between `input` and `target`, reduced by `reduction`.
#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean"))]
fn l1_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "l1_loss", (input, target, reduction), {
        let a = &tensor_arg(input, "l1_loss", "input", 1)?.get().t;
        let b = to_tensor_like(target, Some(a))?;
        autocast!("l1_loss", a, b);
        let r = ops::Reduction::parse(reduction)?;
        capture::run_op(py, a.numel(), "l1_loss", &[a, &b], &[], move |t, _| {
            ops::l1_loss(t[0], t[1], r)
        })
    })
}

/// The smooth L1 loss: quadratic for errors below `beta`, linear above, reduced by `reduction`.
#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean", beta=1.0))]
fn smooth_l1_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
    beta: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "smooth_l1_loss", (input, target, reduction, beta), {
        let a = &tensor_arg(input, "smooth_l1_loss", "input", 1)?.get().t;
        let b = to_tensor_like(target, Some(a))?;
        let r = ops::Reduction::parse(reduction)?;
        capture::run_op(
            py,
            a.numel(),
            "smooth_l1_loss",
            &[a, &b],
            &[],
            move |t, _| ops::smooth_l1_loss(t[0], t[1], r, beta),
        )
    })
}

/// The Huber loss: quadratic for errors below `delta`, linear above (delta times smooth L1),
/// reduced by `reduction`.
#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean", delta=1.0))]
fn huber_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
    delta: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(py, "huber_loss", (input, target, reduction, delta), {
        let a = &tensor_arg(input, "huber_loss", "input", 1)?.get().t;
        let b = to_tensor_like(target, Some(a))?;
        autocast!("huber_loss", a, b);
        let r = ops::Reduction::parse(reduction)?;
        capture::run_op(py, a.numel(), "huber_loss", &[a, &b], &[], move |t, _| {
            ops::huber_loss(t[0], t[1], r, delta)
        })
    })
}

/// Binary cross entropy between probabilities `input` and `target`, optionally weighted,
/// reduced by `reduction`.
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, reduction="mean"))]
fn binary_cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    reduction: &str,
) -> PyResult<Py<PyAny>> {
    dispatching!(
        py,
        "binary_cross_entropy",
        (input, target, weight, reduction),
        {
            let a = &tensor_arg(input, "binary_cross_entropy", "input", 1)?
                .get()
                .t;
            let b = to_tensor_like(target, Some(a))?;
            let w = opt_tensor(weight)?;
            autocast!("binary_cross_entropy", a, b, w);
            let r = ops::Reduction::parse(reduction)?;
            let mut ins = vec![a, &b];
            ins.extend(w.as_ref());
            capture::run_op(
                py,
                a.numel(),
                "binary_cross_entropy",
                &ins,
                &[],
                move |t, _| ops::binary_cross_entropy(t[0], t[1], t.get(2).copied(), r),
            )
        }
    )
}

/// Binary cross entropy of sigmoid(`input`) and `target`, computed stably from the logits;
/// `pos_weight` weighs the positive term.
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, reduction="mean", pos_weight=None))]
fn binary_cross_entropy_with_logits(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    reduction: &str,
    pos_weight: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    dispatching!(
        py,
        "binary_cross_entropy_with_logits",
        (input, target, weight, reduction, pos_weight),
        {
            let a = &tensor_arg(input, "binary_cross_entropy_with_logits", "input", 1)?
                .get()
                .t;
            let b = to_tensor_like(target, Some(a))?;
            let (w, pw) = (opt_tensor(weight)?, opt_tensor(pos_weight)?);
            autocast!("binary_cross_entropy_with_logits", a, b, w, pw);
            let r = ops::Reduction::parse(reduction)?;
            let (ins, opt) = capture::Opt::inputs(&[a, &b], &[w.as_ref(), pw.as_ref()]);
            capture::run_op(
                py,
                a.numel(),
                "binary_cross_entropy_with_logits",
                &ins,
                &[],
                move |t, _| {
                    ops::binary_cross_entropy_with_logits(
                        t[0],
                        t[1],
                        opt.get(t, 0),
                        opt.get(t, 1),
                        r,
                    )
                },
            )
        }
    )
}

/// The negative log likelihood loss of log-probabilities `input` (N x C) at the classes
/// `target`, optionally weighted per class, skipping `ignore_index`.
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, ignore_index=-100, reduction="mean"))]
fn nll_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduction: &str,
) -> PyResult<Py<PyAny>> {
    dispatching!(
        py,
        "nll_loss",
        (input, target, weight, ignore_index, reduction),
        {
            let (a, t) = (
                &tensor_arg(input, "nll_loss", "input", 1)?.get().t,
                &tensor_arg(target, "nll_loss", "target", 2)?.get().t,
            );
            let w = opt_tensor(weight)?;
            autocast!("nll_loss", a, t, w);
            let r = ops::Reduction::parse(reduction)?;
            let mut ins = vec![a, t];
            ins.extend(w.as_ref());
            capture::run_op(py, a.numel(), "nll_loss", &ins, &[], move |t, _| {
                ops::nll_loss(t[0], t[1], t.get(2).copied(), ignore_index, r)
            })
        }
    )
}

/// Cross entropy of the logits `input` and the classes `target`: log_softmax then nll_loss,
/// with optional class weights and label smoothing.
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0))]
fn cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduction: &str,
    label_smoothing: f64,
) -> PyResult<Py<PyAny>> {
    dispatching!(
        py,
        "cross_entropy",
        (
            input,
            target,
            weight,
            ignore_index,
            reduction,
            label_smoothing
        ),
        {
            let (a, t) = (
                &tensor_arg(input, "cross_entropy", "input", 1)?.get().t,
                &tensor_arg(target, "cross_entropy", "target", 2)?.get().t,
            );
            let w = opt_tensor(weight)?;
            autocast!("cross_entropy", a, t, w);
            let r = ops::Reduction::parse(reduction)?;
            let mut ins = vec![a, t];
            ins.extend(w.as_ref());
            capture::run_op(py, a.numel(), "cross_entropy", &ins, &[], move |t, _| {
                ops::cross_entropy(
                    t[0],
                    t[1],
                    t.get(2).copied(),
                    ignore_index,
                    r,
                    label_smoothing,
                )
            })
        }
    )
}

/// Adds the `nn.functional` bindings to `ferrograd._C`.
/// `multi_margin_loss` of `nframe` rows of `dim` scores (the Python layer checks the
/// arguments and passes the sizes); `keep_rows`: `reduction='none'` keeps one loss per row.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (input, target, p, margin, weight, reduction, nframe, dim, keep_rows))]
fn _multi_margin_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    p: i64,
    margin: f64,
    weight: Option<&Bound<'_, PyTensor>>,
    reduction: &str,
    nframe: usize,
    dim: usize,
    keep_rows: bool,
) -> PyResult<Py<PyAny>> {
    let (x, y) = (t_of(input), t_of(target));
    let w = weight.map(|w| t_of(w).clone());
    let r = ops::Reduction::parse(reduction)?;
    let (ins, opt) = capture::Opt::inputs(&[x, y], &[w.as_ref()]);
    capture::run_op(
        py,
        x.numel(),
        "multi_margin_loss",
        &ins,
        &[],
        move |t, _| {
            ops::multi_margin_loss(
                t[0],
                t[1],
                p,
                margin,
                opt.get(t, 0),
                r,
                nframe,
                dim,
                keep_rows,
            )
        },
    )
}

/// `multilabel_margin_loss` of `nframe` rows of `dim` scores (checked and sized by the
/// Python layer, as `_multi_margin_loss`).
#[pyfunction]
#[pyo3(signature = (input, target, reduction, nframe, dim, keep_rows))]
fn _multilabel_margin_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    reduction: &str,
    nframe: usize,
    dim: usize,
    keep_rows: bool,
) -> PyResult<Py<PyAny>> {
    let (x, y) = (t_of(input), t_of(target));
    let r = ops::Reduction::parse(reduction)?;
    capture::run_op(
        py,
        x.numel(),
        "multilabel_margin_loss",
        &[x, y],
        &[],
        move |t, _| ops::multilabel_margin_loss(t[0], t[1], r, nframe, dim, keep_rows),
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mse_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_pdist, m)?)?;
    m.add_function(wrap_pyfunction!(hardtanh, m)?)?;
    m.add_function(wrap_pyfunction!(leaky_relu, m)?)?;
    m.add_function(wrap_pyfunction!(leaky_relu_, m)?)?;
    m.add_function(wrap_pyfunction!(elu_, m)?)?;
    m.add_function(wrap_pyfunction!(elu, m)?)?;
    m.add_function(wrap_pyfunction!(mish, m)?)?;
    m.add_function(wrap_pyfunction!(logsigmoid, m)?)?;
    m.add_function(wrap_pyfunction!(hardswish, m)?)?;
    m.add_function(wrap_pyfunction!(softsign, m)?)?;
    m.add_function(wrap_pyfunction!(hardsigmoid, m)?)?;
    m.add_function(wrap_pyfunction!(hardshrink, m)?)?;
    m.add_function(wrap_pyfunction!(softshrink, m)?)?;
    m.add_function(wrap_pyfunction!(threshold, m)?)?;
    m.add_function(wrap_pyfunction!(gelu, m)?)?;
    m.add_function(wrap_pyfunction!(softplus, m)?)?;
    m.add_function(wrap_pyfunction!(dropout, m)?)?;
    m.add_function(wrap_pyfunction!(linear, m)?)?;
    m.add_function(wrap_pyfunction!(l1_loss, m)?)?;
    m.add_function(wrap_pyfunction!(smooth_l1_loss, m)?)?;
    m.add_function(wrap_pyfunction!(huber_loss, m)?)?;
    m.add_function(wrap_pyfunction!(binary_cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(binary_cross_entropy_with_logits, m)?)?;
    m.add_function(wrap_pyfunction!(nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(_multi_margin_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_multilabel_margin_loss, m)?)?;
    Ok(())
}

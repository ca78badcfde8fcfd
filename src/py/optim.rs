//! `_C._foreach_optim`: one call per parameter group and step.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::errors::enter;
use super::tensor::PyTensor;
use crate::kernels::optim::Rule;
use crate::tensor::Tensor;

fn num(h: &Bound<'_, PyDict>, key: &str) -> PyResult<f64> {
    match h.get_item(key)? {
        Some(v) => v.extract::<f64>(),
        None => Err(PyValueError::new_err(format!(
            "missing hyper-parameter '{key}'"
        ))),
    }
}

fn flag(h: &Bound<'_, PyDict>, key: &str) -> PyResult<bool> {
    match h.get_item(key)? {
        Some(v) => v.is_truthy(),
        None => Ok(false),
    }
}

fn rule(name: &str, h: &Bound<'_, PyDict>) -> PyResult<Rule> {
    Ok(match name {
        "sgd" => Rule::Sgd {
            lr: num(h, "lr")?,
            weight_decay: num(h, "weight_decay")?,
            momentum: num(h, "momentum")?,
            dampening: num(h, "dampening")?,
            nesterov: flag(h, "nesterov")?,
            maximize: flag(h, "maximize")?,
        },
        "adam" => Rule::Adam {
            weight_decay: num(h, "weight_decay")?,
            decay: num(h, "decay")?,
            decoupled: flag(h, "decoupled")?,
            beta1: num(h, "beta1")?,
            beta2: num(h, "beta2")?,
            eps: num(h, "eps")?,
            amsgrad: flag(h, "amsgrad")?,
            maximize: flag(h, "maximize")?,
        },
        "adagrad" => Rule::Adagrad {
            weight_decay: num(h, "weight_decay")?,
            eps: num(h, "eps")?,
            maximize: flag(h, "maximize")?,
        },
        "rmsprop" => Rule::RmsProp {
            lr: num(h, "lr")?,
            weight_decay: num(h, "weight_decay")?,
            alpha: num(h, "alpha")?,
            eps: num(h, "eps")?,
            momentum: num(h, "momentum")?,
            centered: flag(h, "centered")?,
            maximize: flag(h, "maximize")?,
        },
        "adamax" => Rule::Adamax {
            weight_decay: num(h, "weight_decay")?,
            beta1: num(h, "beta1")?,
            beta2: num(h, "beta2")?,
            eps: num(h, "eps")?,
            maximize: flag(h, "maximize")?,
        },
        "nadam" | "radam" => {
            let (weight_decay, decay, decoupled) = (
                num(h, "weight_decay")?,
                num(h, "decay")?,
                flag(h, "decoupled")?,
            );
            let (beta1, beta2, eps, maximize) = (
                num(h, "beta1")?,
                num(h, "beta2")?,
                num(h, "eps")?,
                flag(h, "maximize")?,
            );
            if name == "nadam" {
                Rule::NAdam {
                    weight_decay,
                    decay,
                    decoupled,
                    beta1,
                    beta2,
                    eps,
                    maximize,
                }
            } else {
                Rule::RAdam {
                    weight_decay,
                    decay,
                    decoupled,
                    beta1,
                    beta2,
                    eps,
                    maximize,
                }
            }
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown optimizer rule '{other}'"
            )))
        }
    })
}

/// Updates every row `[param, grad, *states]` in place with `rule`'s fused
/// kernel; `per_tensor[i]` holds up to three scalars of row `i`.
#[pyfunction]
fn _foreach_optim(
    py: Python<'_>,
    rule_name: &str,
    tensors: Vec<Vec<Bound<'_, PyTensor>>>,
    hyper: &Bound<'_, PyDict>,
    per_tensor: Vec<Vec<f64>>,
) -> PyResult<()> {
    let _op = crate::tensor::write_op("an optimizer step");
    let r = rule(rule_name, hyper)?;
    let rows: Vec<Vec<Tensor>> = tensors
        .iter()
        .map(|row| row.iter().map(|t| t.get().t.clone()).collect())
        .collect();
    let mut per = Vec::with_capacity(per_tensor.len());
    for v in &per_tensor {
        if v.len() > 3 {
            return Err(PyValueError::new_err("at most three scalars per tensor"));
        }
        let mut a = [0.0; 3];
        a[..v.len()].copy_from_slice(v);
        per.push(a);
    }
    let work: usize = rows
        .iter()
        .map(|r| r.first().map_or(0, |t| t.numel()))
        .sum();
    // Replayed as part of the optimizer's `step`, which the tape calls.
    enter(py, "_foreach_optim", work, || {
        crate::ops::optim::foreach_step(&r, &rows, &per)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_foreach_optim, m)?)
}

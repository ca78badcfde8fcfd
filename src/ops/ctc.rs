//! `ctc_loss`'s native forward and its first-order backward side by side
//! (`kernels::ctc`, float64 inside). Neither makes an autograd node:
//! `ferrograd.nn._functional.ctc` makes one, whose backward runs the
//! composite recursion instead when a graph of the backward is wanted, so
//! higher derivatives stay exact.

use crate::error::{Error, Result};
use crate::kernels::ctc::{self, Block, Sample};
use crate::tensor::{DType, Shape, Tensor};

/// The checked geometry of `log_probs` `(T, N, C)` against the labels and
/// frame counts of its `N` samples.
fn block_of(lp: &Tensor, labels: &[Vec<i64>], frames: &[usize], blank: usize) -> Result<Block> {
    let shape = lp.shape();
    if shape.len() != 3 || !lp.dtype().is_float() {
        return Err(Error::runtime(
            "ctc_loss expects floating-point log_probs of shape (T, N, C)",
        ));
    }
    let (t, n, c) = (shape[0], shape[1], shape[2]);
    if labels.len() != n || frames.len() != n {
        return Err(Error::runtime(
            "ctc_loss: one label sequence and one input length per sample",
        ));
    }
    if blank >= c {
        return Err(Error::runtime("blank must be in label range"));
    }
    if let Some(&f) = frames.iter().find(|&&f| f > t) {
        return Err(Error::runtime(format!(
            "Expected input_lengths to have value at most {t}, but got value {f}"
        )));
    }
    for &lab in labels.iter().flatten() {
        if lab < 0 || lab as usize >= c || lab as usize == blank {
            return Err(Error::runtime(format!(
                "target label {lab} is out of range or is the blank"
            )));
        }
    }
    Ok(Block {
        batch: n,
        classes: c,
        blank,
    })
}

fn samples<'a>(labels: &'a [Vec<i64>], frames: &[usize]) -> Vec<Sample<'a>> {
    labels
        .iter()
        .zip(frames)
        .map(|(l, &f)| Sample {
            labels: l,
            frames: f,
        })
        .collect()
}

/// `[nll, alpha, logp]`: each sample's loss `-log p` in `log_probs`'s dtype
/// (0 instead of `inf` where no alignment exists, with `zero_infinity`),
/// and what the backward reads: the samples' alpha tables end to end and
/// `log p`, both float64.
pub fn ctc_forward(
    lp: &Tensor,
    labels: &[Vec<i64>],
    frames: &[usize],
    blank: usize,
    zero_infinity: bool,
) -> Result<Vec<Tensor>> {
    let b = block_of(lp, labels, frames, blank)?;
    let x = lp.to_vec::<f64>();
    let (tables, logp) = ctc::forward(&x, b, &samples(labels, frames));
    let nll: Vec<f64> = logp
        .iter()
        .map(|&l| {
            if zero_infinity && l == f64::NEG_INFINITY {
                0.0
            } else {
                -l
            }
        })
        .collect();
    let n = nll.len();
    let len = tables.len();
    Ok(vec![
        super::cast_data(&Tensor::from_vec(nll, Shape::from_slice(&[n])), lp.dtype()),
        Tensor::from_vec(tables, Shape::from_slice(&[len])),
        Tensor::from_vec(logp, Shape::from_slice(&[n])),
    ])
}

/// The gradient of `sum_n grad[n] * nll[n]` with respect to `log_probs`
/// (the exact derivative; zero for a sample with no alignment or no
/// frames), in `log_probs`'s dtype, from [`ctc_forward`]'s `alpha` and `logp`.
pub fn ctc_backward(
    lp: &Tensor,
    grad: &Tensor,
    alpha: &Tensor,
    logp: &Tensor,
    labels: &[Vec<i64>],
    frames: &[usize],
    blank: usize,
) -> Result<Tensor> {
    let b = block_of(lp, labels, frames, blank)?;
    let samples = samples(labels, frames);
    let (_, total) = ctc::table_starts(&samples);
    if grad.numel() != b.batch
        || logp.numel() != b.batch
        || alpha.numel() != total
        || alpha.dtype() != DType::F64
        || logp.dtype() != DType::F64
    {
        return Err(Error::runtime(
            "ctc_loss backward: saved values do not match the inputs",
        ));
    }
    // The saved tables are read in place (they are float64 and, as saved, contiguous).
    let alpha = alpha.contiguous_data();
    let av = alpha.view();
    let tables = av
        .as_slice::<f64>()
        .ok_or_else(|| Error::runtime("ctc_loss backward: saved values do not match the inputs"))?;
    // The loss is -log p: each sample's log p is scaled by minus its gradient.
    let scale: Vec<f64> = grad.to_vec::<f64>().into_iter().map(|g| -g).collect();
    let x = lp.to_vec::<f64>();
    let g = ctc::backward(&x, b, &samples, tables, &logp.to_vec::<f64>(), &scale);
    Ok(super::cast_data(
        &Tensor::from_vec(g, lp.shape()),
        lp.dtype(),
    ))
}

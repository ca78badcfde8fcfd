//! Loss functions with fused forward and backward rules.

use smallvec::smallvec;

use super::{mean, mul, mul_f64, neg, sub, sum};
use crate::autograd::{needs_record, record, GradModeGuard};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{fmt_shape, Tensor};

/// How a loss combines per-element values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reduction {
    None,
    Mean,
    Sum,
}

impl Reduction {
    pub fn parse(s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(Error::value(format!(
                "{other} is not a valid value for reduction"
            ))),
        }
    }
}

/// Mean squared error (`MseLossBackward0`).
pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    let (si, st) = (input.shape(), target.shape());
    if si != st {
        // PyTorch warns and broadcasts; broadcasting still has to succeed.
        crate::tensor::broadcast_shapes(&si, &st).map_err(|_| {
            Error::runtime(format!(
                "mse_loss: input shape {} and target shape {} do not broadcast",
                fmt_shape(&si),
                fmt_shape(&st)
            ))
        })?;
    }
    let out = {
        let _g = GradModeGuard::new(false);
        let d = sub(input, target)?;
        let sq = mul(&d, &d)?;
        match reduction {
            Reduction::None => sq,
            Reduction::Mean => mean(&sq, None, false)?,
            Reduction::Sum => sum(&sq, None, false)?,
        }
    };
    if needs_record(&[input, target]) {
        record(
            "MseLossBackward0",
            &[input, target],
            &out,
            saved![input, target],
            move |c| {
                let (x, y) = (c.saved(0)?, c.saved(1)?);
                let d = sub(x, y)?;
                let scale = match reduction {
                    Reduction::Mean => 2.0 / d.numel().max(1) as f64,
                    _ => 2.0,
                };
                let gi = mul(&mul_f64(&d, scale)?, c.grad()?)?;
                let gt = if c.needs(1) { Some(neg(&gi)?) } else { None };
                Ok(smallvec![c.needs(0).then_some(gi), gt])
            },
        );
    }
    Ok(out)
}

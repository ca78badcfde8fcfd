//! Aliases with a backward rule of their own: `positive`, `clamp_min`,
//! `clamp_max`.

use smallvec::smallvec;

use super::super::{apply_share, compare, share, where_};
use super::zero_like_dt;
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{DType, Tensor};

// ----- aliases with a rule of their own ----------------------------------------------

/// `+x`: the tensor itself, as PyTorch's `positive` (refused for bool).
pub(crate) fn positive(a: &Tensor) -> Result<Tensor> {
    if a.dtype() == DType::Bool {
        return Err(Error::runtime(
            "The `+` operator, on a bool tensor is not supported.",
        ));
    }
    Ok(a.clone())
}

/// `clamp(x, min=bound)` (`is_min`) or `clamp(x, max=bound)`, recorded under
/// PyTorch's names: `ClampMinBackward0`/`ClampMaxBackward0` for a bound given
/// as a number (`number`), whose gradient reaches `x` strictly inside the
/// bound (not at a tie, not at a NaN), and `ClampMinBackward1`/
/// `ClampMaxBackward1` for a tensor bound, whose rule is `maximum`'s (or
/// `minimum`'s): ties split in halves, a NaN passes to both.
fn clamp_bound(x: &Tensor, bound: &Tensor, is_min: bool, number: bool) -> Result<Tensor> {
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let (xd, bd) = (x.detach(), bound.detach());
        if is_min {
            super::super::clamp(&xd, Some(&bd), None, true)?
        } else {
            super::super::clamp(&xd, None, Some(&bd), true)?
        }
    };
    if out.dtype().is_float() && needs_record(&[x, bound]) {
        let name = match (is_min, number) {
            (true, true) => "ClampMinBackward0",
            (false, true) => "ClampMaxBackward0",
            (true, false) => "ClampMinBackward1",
            (false, false) => "ClampMaxBackward1",
        };
        let loses: fn(&Tensor, &Tensor) -> Result<Tensor> =
            if is_min { compare::lt } else { compare::gt };
        record(name, &[x, bound], &out, saved![x, bound], move |c| {
            let (x, b, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let z = zero_like_dt(g);
            if number {
                let inside = if is_min {
                    compare::gt(x, b)?
                } else {
                    compare::lt(x, b)?
                };
                return Ok(smallvec![Some(where_(&inside, g, &z)?), None]);
            }
            let gx = if c.needs(0) {
                Some(apply_share(g, &share(x, b, loses, g.dtype())?)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(apply_share(g, &share(b, x, loses, g.dtype())?)?)
            } else {
                None
            };
            Ok(smallvec![gx, gb])
        });
    }
    Ok(out)
}

/// `clamp_min(x, min)`: `number` when `min` was given as a Python number.
pub(crate) fn clamp_min(x: &Tensor, min: &Tensor, number: bool) -> Result<Tensor> {
    clamp_bound(x, min, true, number)
}

/// `clamp_max(x, max)`: `number` when `max` was given as a Python number.
pub(crate) fn clamp_max(x: &Tensor, max: &Tensor, number: bool) -> Result<Tensor> {
    clamp_bound(x, max, false, number)
}

//! Aliases with a backward rule of their own: `positive`, `clamp_min`,
//! `clamp_max`.

use smallvec::smallvec;

use super::super::{compare, where_};
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

/// `clamp(x, min=bound)` (`is_min`) or `clamp(x, max=bound)` with a tensor
/// bound, recorded as PyTorch's `ClampMinBackward1`/`ClampMaxBackward1`: the
/// gradient reaches `x` where it is inside the bound (ties included) and the
/// bound elsewhere.
fn clamp_bound(x: &Tensor, bound: &Tensor, is_min: bool) -> Result<Tensor> {
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
        let name = if is_min {
            "ClampMinBackward1"
        } else {
            "ClampMaxBackward1"
        };
        record(name, &[x, bound], &out, saved![x, bound], move |c| {
            let (x, b, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let inside = if is_min {
                compare::ge(x, b)?
            } else {
                compare::le(x, b)?
            };
            let z = zero_like_dt(g);
            let gx = if c.needs(0) {
                Some(where_(&inside, g, &z)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(where_(&inside, &z, g)?)
            } else {
                None
            };
            Ok(smallvec![gx, gb])
        });
    }
    Ok(out)
}

pub(crate) fn clamp_min(x: &Tensor, min: &Tensor) -> Result<Tensor> {
    clamp_bound(x, min, true)
}

pub(crate) fn clamp_max(x: &Tensor, max: &Tensor) -> Result<Tensor> {
    clamp_bound(x, max, false)
}

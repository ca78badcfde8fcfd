//! `maximum`, `minimum` and `clamp`: piecewise-linear, so each backward rule
//! is the incoming gradient times a constant mask, which keeps it
//! differentiable to any order.

use smallvec::smallvec;

use super::arith::map2;
use super::{cast_data, compare, mul, result_type, where_};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::elementwise::binary;
use crate::saved;
use crate::tensor::{broadcast_shapes, Arith, Tensor};

type Compare = fn(&Tensor, &Tensor) -> Result<Tensor>;

/// The share of the gradient `a` gets from `maximum(a, b)` (or `minimum`
/// with the comparisons swapped): all of it where it wins, half on a tie (PyTorch's rule).
fn share(a: &Tensor, b: &Tensor, loses: Compare, dt: crate::tensor::DType) -> Result<Tensor> {
    let tie = compare::eq(a, b)?;
    let lost = loses(a, b)?;
    let one = Tensor::scalar_of(1.0, dt);
    let w = where_(&lost, &Tensor::scalar_of(0.0, dt), &one)?;
    where_(&tie, &Tensor::scalar_of(0.5, dt), &w)
}

fn extreme(a: &Tensor, b: &Tensor, name: &'static str, is_max: bool) -> Result<Tensor> {
    let dt = result_type(a, b);
    let out = crate::dispatch!(dt, T => {
        if is_max {
            map2!(a, b, dt, T, |x, y| x.max_of(y))
        } else {
            map2!(a, b, dt, T, |x, y| x.min_of(y))
        }
    });
    if needs_record(&[a, b]) {
        record(name, &[a, b], &out, saved![a, b], move |c| {
            let (a, b, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
            let (la, lb): (Compare, Compare) = if is_max {
                (compare::lt, compare::gt)
            } else {
                (compare::gt, compare::lt)
            };
            let ga = if c.needs(0) {
                Some(mul(g, &share(a, b, la, g.dtype())?)?)
            } else {
                None
            };
            let gb = if c.needs(1) {
                Some(mul(g, &share(a, b, lb, g.dtype())?)?)
            } else {
                None
            };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

/// Elementwise maximum; NaN propagates.
pub fn maximum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    extreme(a, b, "MaximumBackward0", true)
}

/// Elementwise minimum; NaN propagates.
pub fn minimum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    extreme(a, b, "MinimumBackward0", false)
}

/// `clamp(x, min, max)`. The gradient reaches `x` where `min <= x <= max`
/// (PyTorch's convention at the boundaries) and a tensor bound where it won.
pub fn clamp(x: &Tensor, lo: Option<&Tensor>, hi: Option<&Tensor>) -> Result<Tensor> {
    if lo.is_none() && hi.is_none() {
        return Err(Error::runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    if x.dtype() == crate::tensor::DType::Bool {
        return Err(Error::runtime("\"clamp_cpu\" not implemented for 'Bool'"));
    }
    let mut out = x.clone();
    if let Some(lo) = lo {
        let below = compare::lt(&out, lo)?;
        out = where_(&below, lo, &out)?;
    }
    if let Some(hi) = hi {
        let above = compare::gt(&out, hi)?;
        out = where_(&above, hi, &out)?;
    }
    if out.same(x) {
        return super::clone(x);
    }
    Ok(out)
}

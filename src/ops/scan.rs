//! Scans beside `cumsum` (which lives with the shape ops): `cumprod` and
//! `cummax`/`cummin`, and `nansum`, each with its backward rule next to its
//! forward. The kernels work on a contiguous `[outer, n, inner]` block
//! (`kernels::scan`), so a scan over a leading dimension streams whole rows
//! instead of transposing.

use smallvec::smallvec;

use super::{cast_data, clone, cumsum, div, expand, flip, mul, reshape, scatter_add, sum};
use crate::autograd::{needs_record, record, GradModeGuard, SavedTensor};
use crate::error::Result;
use crate::kernels::scan as k;
use crate::saved;
use crate::tensor::{wrap_dim, DType, Shape, Tensor};

/// `(outer, n, inner)` of `shape` around dimension `d`.
fn split(shape: &[usize], d: usize) -> (usize, usize, usize) {
    (
        shape[..d].iter().product(),
        shape[d],
        shape[d + 1..].iter().product(),
    )
}

/// `cumprod(t, dim)` after the Python layer's `dtype=` conversion; integer
/// and bool inputs multiply in int64, float32 in float64 and float16/bfloat16
/// in float32 (each prefix rounded once).
///
/// The backward rule is PyTorch's for inputs without zeros: the reversed
/// cumulative sum of `grad * out`, divided by the input. It is written in
/// differentiable ops, so gradients of gradients follow. When a product is
/// zero (a zero input, or underflow) the division loses terms, and its second
/// order is unstable for tiny inputs, so the Python layer calls this only when
/// no gradient is recorded (the rule serves forward-mode tangents) and runs
/// its log-depth product scan otherwise.
pub(crate) fn cumprod(t: &Tensor, dim: i64) -> Result<Tensor> {
    let shape = t.shape();
    let d = wrap_dim(dim, shape.len())?;
    if shape.is_empty() || t.numel() == 0 {
        // Nothing to scan (the sizes beside a zero one may be huge).
        return clone(t);
    }
    // float32 multiplies in float64, each prefix rounded once, as PyTorch's
    // CPU scan accumulates: more exact, and a running product that shrinks
    // stays clear of float32's subnormals, where every multiply would take a
    // slow microcode assist.
    let acc = match t.dtype() {
        DType::F32 => DType::F64,
        dt if dt.is_float() => dt.compute(),
        _ => DType::I64,
    };
    let src = cast_data(t, acc).contiguous_data();
    let (outer, n, inner) = split(&shape, d);
    let v = src.view();
    let out = crate::dispatch!(v.dtype(), T => {
        let data = v.as_slice::<T>().unwrap_or(&[]);
        Tensor::from_vec(k::cumprod(data, outer, n, inner), shape.clone())
    });
    // Integer inputs give int64, as PyTorch's (and `cumsum`'s) do.
    let out = if t.dtype().is_float() {
        super::back_to(out, t.dtype())
    } else {
        out
    };
    if needs_record(&[t]) {
        record(
            "CumprodBackward0",
            &[t],
            &out,
            saved![t, Some(SavedTensor::output(&out, 0))],
            move |c| {
                let (x, out) = (c.saved(0)?, c.saved(1)?);
                let dd = [d as i64];
                let g = mul(c.grad()?, out)?;
                let rev = flip(&cumsum(&flip(&g, &dd)?, d as i64)?, &dd)?;
                Ok(smallvec![Some(div(&rev, x)?)])
            },
        );
    }
    Ok(out)
}

/// `cummax(t, dim)` (or `cummin`): the running extreme and the index it came
/// from, with PyTorch's ties (an equal value moves the index forward) and
/// NaNs (a NaN wins and stays; the index follows each later NaN). The
/// gradient goes to the element each value came from (`gather`'s adjoint, so
/// it is differentiable again).
pub(crate) fn cum_extreme(t: &Tensor, dim: i64, is_max: bool) -> Result<(Tensor, Tensor)> {
    let shape = t.shape();
    let d = wrap_dim(dim, shape.len())?;
    if shape.is_empty() {
        return Ok((clone(t)?, Tensor::scalar(0i64)));
    }
    if t.numel() == 0 {
        return Ok((clone(t)?, Tensor::zeros(shape, DType::I64)));
    }
    let src = t.contiguous_data();
    let (outer, n, inner) = split(&shape, d);
    let v = src.view();
    let (values, idx) = crate::dispatch!(v.dtype(), T => {
        let data = v.as_slice::<T>().unwrap_or(&[]);
        let (vals, ix) = k::cum_extreme(data, outer, n, inner, is_max);
        (Tensor::from_vec(vals, shape.clone()), Tensor::from_vec(ix, shape.clone()))
    });
    if needs_record(&[t]) {
        let name = if is_max {
            "CummaxBackward0"
        } else {
            "CumminBackward0"
        };
        let in_shape: Shape = shape.clone();
        record(name, &[t], &values, saved![&idx], move |c| {
            let zeros = Tensor::zeros(in_shape.clone(), c.grad()?.dtype());
            Ok(smallvec![Some(scatter_add(
                &zeros,
                d as i64,
                c.saved(0)?,
                c.grad()?
            )?)])
        });
    }
    Ok((values, idx))
}

/// `nansum(t, dims, keepdim)`: the sum with NaN counted as zero. The NaNs are
/// zeroed in one pass over a contiguous copy and the copy summed by `sum`'s
/// kernels; the gradient passes where the input is not NaN.
pub(crate) fn nansum(t: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    if !t.dtype().is_float() {
        return sum(t, dims, keepdim);
    }
    let zeroed = {
        let src = cast_data(t, t.dtype().compute()).contiguous_data();
        let v = src.view();
        crate::dispatch_float!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            Tensor::from_vec(zero_nans(data), v.shape.clone())
        })
    };
    // float16/bfloat16 were zeroed in float32 and are summed there, rounded once.
    let out = {
        let _g = GradModeGuard::new(false);
        super::back_to(sum(&zeroed, dims, keepdim)?, t.dtype())
    };
    if needs_record(&[t]) {
        let shape = t.shape();
        let keep_shape = {
            let mask = super::reduce_mask(shape.len(), dims)?;
            super::reduce_shape(&shape, &mask, true)
        };
        record("NansumBackward0", &[t], &out, saved![t], move |c| {
            let g = reshape(c.grad()?, &keep_shape)?;
            // A constant 0/1 mask: NaN positions had no effect on the sum.
            let keep = {
                let _g = GradModeGuard::new(false);
                let nan = super::isnan(&c.saved(0)?.detach())?;
                cast_data(&super::logical_not(&nan)?, g.dtype())
            };
            Ok(smallvec![Some(mul(&expand(&g, &shape)?, &keep)?)])
        });
    }
    Ok(out)
}

#[allow(clippy::eq_op)]
fn zero_nans<T: crate::tensor::Element>(data: &[T]) -> Vec<T> {
    let mut out = crate::error::alloc_vec(data.len());
    out.extend(data.iter().map(|&x| if x != x { T::zero() } else { x }));
    out
}

//! Scans beside `cumsum` (which lives with the shape ops): `cumprod` and
//! `cummax`/`cummin`, and `nansum`, each with its backward rule next to its
//! forward. The kernels work on a contiguous `[outer, n, inner]` block
//! (`kernels::scan`), so a scan over a leading dimension streams whole rows
//! instead of transposing.

use smallvec::smallvec;

use super::{cast_data, clone, expand, flip, mul, reshape, scatter_add_zeros, sum};
use crate::autograd::{is_grad_enabled, needs_record, record, GradModeGuard, SavedTensor};
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
/// The backward rule is exact where inputs are zero and divides by nothing:
/// the gradient of `x[k]` is `out[k-1] * r[k]` with the reversed linear scan
/// `r[k] = g[k] + x[k+1] * r[k+1]`, one Rust pass per row (linear time).
/// When the gradient is itself recorded (`create_graph`), the same scan runs
/// as log2(n) doubling steps of recorded multiplications and additions, so
/// every higher order comes from the product rule.
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
    let (outer, n, inner) = split(&shape, d);
    let out = if t.dtype() == DType::F32 {
        let src = t.contiguous_data();
        let v = src.view();
        let data = v.as_slice::<f32>().unwrap_or(&[]);
        Tensor::from_vec(k::cumprod_f32(data, outer, n, inner), shape.clone())
    } else {
        let src = cast_data(t, acc).contiguous_data();
        let v = src.view();
        let out = crate::dispatch!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            Tensor::from_vec(k::cumprod(data, outer, n, inner), shape.clone())
        });
        // Integer inputs give int64, as PyTorch's (and `cumsum`'s) do.
        if t.dtype().is_float() {
            super::back_to(out, t.dtype())
        } else {
            out
        }
    };
    if needs_record(&[t]) {
        record(
            "CumprodBackward0",
            &[t],
            &out,
            saved![t, Some(SavedTensor::output(&out, 0))],
            move |c| {
                let (x, out, g) = (c.saved(0)?, c.saved(1)?, c.grad()?);
                let gx = if is_grad_enabled() {
                    cumprod_backward_recorded(x, out, g, d)?
                } else {
                    cumprod_backward_kernel(x, out, g, d)?
                };
                Ok(smallvec![Some(gx)])
            },
        );
    }
    Ok(out)
}

/// The gradient of `cumprod` along `d` in one unrecorded pass per row.
fn cumprod_backward_kernel(x: &Tensor, out: &Tensor, g: &Tensor, d: usize) -> Result<Tensor> {
    let shape = x.shape();
    let (outer, n, inner) = split(&shape, d);
    let dt = g.dtype();
    let cdt = dt.compute();
    let (xs, os, gs) = (
        cast_data(x, cdt).contiguous_data(),
        cast_data(out, cdt).contiguous_data(),
        cast_data(&expand(g, &shape)?, cdt).contiguous_data(),
    );
    let (xv, ov, gv) = (xs.view(), os.view(), gs.view());
    let gx = crate::dispatch_float!(cdt, T => {
        let (xd, od, gd) = (
            xv.as_slice::<T>().unwrap_or(&[]),
            ov.as_slice::<T>().unwrap_or(&[]),
            gv.as_slice::<T>().unwrap_or(&[]),
        );
        Tensor::from_vec(k::cumprod_backward(xd, od, gd, outer, n, inner), shape.clone())
    });
    Ok(super::back_to(gx, dt))
}

/// [`cumprod_backward_kernel`]'s rule in recorded ops: the reversed scan
/// `r[k] = g[k] + x[k+1] r[k+1]` as log2(n) doubling steps over affine maps
/// (`(a, b)` composed with the map `s` places on: `b += a * b'`, `a *= a'`),
/// then `out[k-1] * r[k]`. No division, so zeros stay exact at every order.
fn cumprod_backward_recorded(x: &Tensor, out: &Tensor, g: &Tensor, d: usize) -> Result<Tensor> {
    let shape = x.shape();
    let n = shape[d];
    let di = d as i64;
    let dd = [di];
    // `t` moved `k` places up along `d`, the first `k` filled with `fill`.
    let shift = |t: &Tensor, k: usize, fill: f64| -> Result<Tensor> {
        let mut s = t.shape();
        s[d] = k.min(n);
        let pad = Tensor::full(s, fill, t.dtype());
        if k >= n {
            return Ok(pad);
        }
        super::cat(&[pad, super::narrow(t, di, 0, (n - k) as i64)?], di)
    };
    // Reversed, the scan runs forward: `r'[k] = g'[k] + x'[k-1] r'[k-1]`.
    let g = expand(g, &shape)?;
    let mut b = flip(&g, &dd)?;
    let mut a = shift(&flip(x, &dd)?, 1, 0.0)?;
    let mut s = 1;
    while s < n {
        b = super::add(&b, &mul(&a, &shift(&b, s, 0.0)?)?)?;
        if 2 * s < n {
            a = mul(&a, &shift(&a, s, 0.0)?)?;
        }
        s *= 2;
    }
    let r = flip(&b, &dd)?;
    mul(&shift(out, 1, 1.0)?, &r)
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
            Ok(smallvec![Some(scatter_add_zeros(
                &in_shape,
                d as i64,
                c.saved(0)?,
                c.grad()?
            )?)])
        });
    }
    Ok((values, idx))
}

/// `nansum(t, dims, keepdim)`: the sum with NaN counted as zero, in one pass
/// (`sum`'s kernels and order, each element read through a select that
/// turns NaN into zero); the gradient passes where the input is not NaN.
pub(crate) fn nansum(t: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    if !t.dtype().is_float() {
        return sum(t, dims, keepdim);
    }
    let out = {
        use crate::kernels::reduce::{sum_all_with, sum_dims_with, NanZero};
        // float16/bfloat16 are summed in float32, rounded once.
        let src = cast_data(t, t.dtype().compute());
        let shape = src.shape();
        let mask = super::reduce_mask(shape.len(), dims)?;
        let keep = super::reduce_shape(&shape, &mask, true);
        let v = src.view();
        let kept = crate::dispatch_float!(v.dtype(), T => {
            if mask.iter().all(|&m| m) {
                let s: T = sum_all_with::<T, _>(&v, NanZero);
                Tensor::from_vec(vec![s], keep)
            } else {
                Tensor::from_vec(sum_dims_with::<T, _>(&v, &mask, NanZero), keep)
            }
        });
        let kept = if keepdim {
            kept
        } else {
            kept.reshape_data(super::reduce_shape(&shape, &mask, false))
        };
        super::back_to(kept, t.dtype())
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

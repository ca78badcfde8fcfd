//! Softmax, log_softmax and softmin's core: one fused pass forward and
//! backward when nothing records, and rules written in ops on the saved
//! output (so they differentiate again) when something does.

use smallvec::{smallvec, SmallVec};

use super::{amax, cast_data, div, exp, log, mul, sub, sum, where_};
use crate::autograd::{needs_record, record, GradModeGuard, SavedTensor};
use crate::error::{Error, Result};
use crate::kernels;
use crate::saved;
use crate::tensor::{wrap_dim, DType, Tensor};

/// `log(sum(exp(x)))` along `dim`, kept, from a constant shift.
fn shifted(x: &Tensor, d: i64) -> Result<Tensor> {
    let _g = GradModeGuard::new(false);
    let x = x.detach();
    if x.numel() == 0 {
        return Ok(x);
    }
    let m = amax(&x, Some(&[d]), true)?;
    let inf = super::isinf(&m)?;
    let m = where_(&inf, &Tensor::scalar_of(0.0, m.dtype()), &m)?;
    sub(&x, &m)
}

fn softmax_input(x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<(Tensor, i64)> {
    // A `dtype` that is not floating is refused like an input that is not.
    let dt = dtype.unwrap_or(x.dtype());
    if !dt.is_float() {
        return Err(Error::runtime(format!(
            "\"softmax_lastdim_kernel_impl\" not implemented for '{}'",
            dt.scalar_name()
        )));
    }
    let x = match dtype {
        Some(dt) => super::to_dtype(x, dt)?,
        None => x.clone(),
    };
    let d = wrap_dim(dim, x.ndim())?;
    let d = if x.ndim() == 0 { 0 } else { d as i64 };
    Ok((x, d))
}

/// The `[outer, n, inner]` layout of a reduction along `d`.
fn rows_along(shape: &[usize], d: usize) -> kernels::softmax::Rows {
    kernels::softmax::Rows {
        outer: shape[..d].iter().product(),
        n: shape[d],
        inner: shape[d + 1..].iter().product(),
    }
}

/// Softmax or log-softmax along `d` in one fused pass, for a float tensor
/// with at least one dimension.
fn fused_softmax(x: &Tensor, d: usize, log: bool) -> Result<Tensor> {
    let dt = x.dtype();
    let x = super::compute_contig(&x.detach());
    let shape = x.shape();
    let r = rows_along(&shape, d);
    Ok(crate::dispatch_float_compute!(dt, T => {
        let v = x.view();
        let data = v.as_slice::<T>().unwrap_or(&[]);
        Tensor::from_vec(kernels::softmax::softmax(data, r, log), shape.clone())
    }))
}

/// The gradient of softmax/log-softmax along `d` in one pass, for when
/// nothing records it.
fn fused_softmax_backward(g: &Tensor, y: &Tensor, d: usize, log: bool) -> Result<Tensor> {
    let shape = y.shape();
    let dt = y.dtype();
    let g = super::compute_contig(&super::expand(&cast_data(g, dt), &shape)?);
    let y = super::compute_contig(y);
    let r = rows_along(&shape, d);
    Ok(crate::dispatch_float_compute!(dt, T => {
        let (vg, vy) = (g.view(), y.view());
        let (gs, ys) = (vg.as_slice::<T>().unwrap_or(&[]), vy.as_slice::<T>().unwrap_or(&[]));
        Tensor::from_vec(kernels::softmax::softmax_backward(gs, ys, r, log), shape.clone())
    }))
}

/// `softmax(x, dim)`; backward `y * (g - sum(g * y))`.
pub fn softmax(x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let (x, d) = softmax_input(x, dim, dtype)?;
    let fused = x.ndim() > 0 && x.numel() > 0;
    let out = if fused {
        fused_softmax(&x, d as usize, false)?
    } else if x.numel() == 0 {
        // No elements: no row sums (which, kept beside a huge size, would
        // not fit: `[2**62, 0]` along its empty dimension).
        Tensor::zeros(x.shape(), x.dtype())
    } else {
        let _g = GradModeGuard::new(false);
        let e = exp(&shifted(&x, d)?)?;
        let dims: SmallVec<[i64; 1]> = smallvec![d];
        div(
            &e,
            &sum(&e, Some(&dims[..]).filter(|_| x.ndim() > 0), x.ndim() > 0)?,
        )?
    };
    if needs_record(&[&x]) {
        let nd = x.ndim();
        record(
            "SoftmaxBackward0",
            &[&x],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            move |c| {
                let (y, g) = (c.saved(0)?, c.grad()?);
                if y.numel() == 0 {
                    return Ok(smallvec![Some(Tensor::zeros(y.shape(), g.dtype()))]);
                }
                if fused && !crate::autograd::is_grad_enabled() {
                    return Ok(smallvec![Some(fused_softmax_backward(
                        g, y, d as usize, false
                    )?)]);
                }
                let gy = mul(g, y)?;
                let s = if nd == 0 {
                    gy.clone()
                } else {
                    sum(&gy, Some(&[d]), true)?
                };
                Ok(smallvec![Some(mul(y, &sub(g, &s)?)?)])
            },
        );
    }
    Ok(out)
}

/// `log_softmax(x, dim)`; backward `g - exp(y) * sum(g)`.
pub fn log_softmax(x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let (x, d) = softmax_input(x, dim, dtype)?;
    let fused = x.ndim() > 0 && x.numel() > 0;
    let out = if fused {
        fused_softmax(&x, d as usize, true)?
    } else {
        let _g = GradModeGuard::new(false);
        let z = shifted(&x, d)?;
        let lse = if x.ndim() == 0 {
            log(&exp(&z)?)?
        } else {
            log(&sum(&exp(&z)?, Some(&[d]), true)?)?
        };
        sub(&z, &lse)?
    };
    if needs_record(&[&x]) {
        let nd = x.ndim();
        record(
            "LogSoftmaxBackward0",
            &[&x],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            move |c| {
                let (y, g) = (c.saved(0)?, c.grad()?);
                if fused && !crate::autograd::is_grad_enabled() {
                    return Ok(smallvec![Some(fused_softmax_backward(
                        g, y, d as usize, true
                    )?)]);
                }
                let s = if nd == 0 {
                    g.clone()
                } else {
                    sum(g, Some(&[d]), true)?
                };
                Ok(smallvec![Some(sub(g, &mul(&exp(y)?, &s)?)?)])
            },
        );
    }
    Ok(out)
}

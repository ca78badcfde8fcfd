//! Sign and fractional parts: `frac`, `sgn`, `signbit` and `nan_to_num`.

use smallvec::smallvec;

use super::super::{map1, where_};
use super::{zero_like_dt, NO_INT};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{DType, Tensor};

// ----- sign and fractional parts -----------------------------------------------------

/// `x - trunc(x)`; its gradient is the incoming one.
pub(crate) fn frac(a: &Tensor) -> Result<Tensor> {
    if !a.dtype().is_float() {
        return Err(Error::runtime(format!(
            "\"frac_cpu\" not implemented for '{}'",
            a.dtype().scalar_name()
        )));
    }
    let out = ffn!(a, |x| x - x.trunc())?;
    if needs_record(&[a]) {
        record("FracBackward0", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(c.grad()?.clone())])
        });
    }
    Ok(out)
}

/// `sign` under PyTorch's name for the complex-aware version; for real
/// inputs it is the sign, with a zero gradient.
pub(crate) fn sgn(a: &Tensor) -> Result<Tensor> {
    let out = {
        let _s = crate::autograd::GradModeGuard::new(false);
        super::super::sign(&a.detach())?
    };
    if needs_record(&[a]) {
        // PyTorch's real `sgn` gradient is a zero tensor whatever the
        // incoming gradient holds (inf and NaN included).
        record("SgnBackward0", &[a], &out, saved![], |c| {
            let g = c.grad()?;
            Ok(smallvec![Some(crate::ops::layout::zero_grad_like(g))])
        });
    }
    Ok(out)
}

/// Whether the sign bit is set (True for -0.0), a bool tensor.
pub(crate) fn signbit(a: &Tensor) -> Result<Tensor> {
    let v = a.view();
    let shape = v.shape.clone();
    use crate::kernels::elementwise::unary_kept as unary;
    let (out, strides) = match v.dtype() {
        DType::F32 => unary::<f32, bool>(
            &v,
            #[inline(always)]
            |x| x.is_sign_negative(),
        ),
        DType::F64 => unary::<f64, bool>(
            &v,
            #[inline(always)]
            |x| x.is_sign_negative(),
        ),
        DType::F16 => unary::<half::f16, bool>(
            &v,
            #[inline(always)]
            |x| x.is_sign_negative(),
        ),
        DType::BF16 => unary::<half::bf16, bool>(
            &v,
            #[inline(always)]
            |x| x.is_sign_negative(),
        ),
        DType::Bool | DType::U8 => (
            crate::error::filled_vec(v.numel(), false),
            crate::tensor::contiguous_strides(&shape),
        ),
        DType::I8 => unary::<i8, bool>(
            &v,
            #[inline(always)]
            |x| x < 0,
        ),
        DType::I16 => unary::<i16, bool>(
            &v,
            #[inline(always)]
            |x| x < 0,
        ),
        DType::I32 => unary::<i32, bool>(
            &v,
            #[inline(always)]
            |x| x < 0,
        ),
        DType::I64 => unary::<i64, bool>(
            &v,
            #[inline(always)]
            |x| x < 0,
        ),
    };
    Ok(crate::ops::layout::laid_out(out, shape, strides))
}

/// NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default
/// the dtype's largest and lowest finite values); integers are copied. The
/// gradient passes where the input is finite, as PyTorch's.
pub(crate) fn nan_to_num(
    a: &Tensor,
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    let dt = a.dtype();
    let out = match dt {
        DType::F32 | DType::F16 | DType::BF16 => {
            // The defaults are the largest and lowest finite values of the
            // tensor's own dtype.
            let (hi, lo) = match dt {
                DType::F16 => (half::f16::MAX.to_f32(), half::f16::MIN.to_f32()),
                DType::BF16 => (half::bf16::MAX.to_f32(), half::bf16::MIN.to_f32()),
                _ => (f32::MAX, f32::MIN),
            };
            let (n, p, m) = (
                nan as f32,
                posinf.map_or(hi, |v| v as f32),
                neginf.map_or(lo, |v| v as f32),
            );
            map1(
                a,
                dt,
                #[inline(always)]
                move |x: f32| {
                    if x.is_nan() {
                        n
                    } else if x == f32::INFINITY {
                        p
                    } else if x == f32::NEG_INFINITY {
                        m
                    } else {
                        x
                    }
                },
                #[inline(always)]
                |x: f64| x,
                NO_INT,
            )?
        }
        DType::F64 => {
            let (p, m) = (posinf.unwrap_or(f64::MAX), neginf.unwrap_or(f64::MIN));
            map1(
                a,
                DType::F64,
                #[inline(always)]
                |x: f32| x,
                #[inline(always)]
                move |x: f64| {
                    if x.is_nan() {
                        nan
                    } else if x == f64::INFINITY {
                        p
                    } else if x == f64::NEG_INFINITY {
                        m
                    } else {
                        x
                    }
                },
                NO_INT,
            )?
        }
        _ => super::super::clone_data(a),
    };
    if needs_record(&[a]) {
        record("NanToNumBackward0", &[a], &out, saved![a], |c| {
            let g = c.grad()?;
            let finite = super::super::isfinite(c.saved(0)?)?;
            Ok(smallvec![Some(where_(&finite, g, &zero_like_dt(g))?)])
        });
    }
    Ok(out)
}

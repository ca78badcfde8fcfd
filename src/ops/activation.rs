//! Activations and (log-)softmax. Composites get their rules from the ops
//! they are built of; softmax and log_softmax have their own rules, written
//! in ops on the saved output so they differentiate again.

use smallvec::{smallvec, SmallVec};

use super::{
    add_scalar, amax, cast_data, compare, div, exp, log, log1p, mul, mul_f64, neg, sub, sum,
    where_, Scalar,
};
use crate::autograd::{needs_record, record, GradModeGuard, SavedTensor};
use crate::error::{Error, Result};
use crate::kernels;
use crate::saved;
use crate::tensor::{wrap_dim, DType, Tensor};

fn float_input(x: &Tensor, op: &str) -> Result<()> {
    if !x.dtype().is_float() {
        return Err(Error::runtime(format!(
            "\"{op}\" not implemented for '{}'",
            x.dtype().scalar_name()
        )));
    }
    Ok(())
}

/// Records `out = f(x)` for a pointwise activation whose gradient is
/// `rule(g, x)`, written in differentiable ops so it differentiates again.
fn pointwise(
    name: &'static str,
    x: &Tensor,
    out: Tensor,
    rule: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> Tensor {
    if needs_record(&[x]) {
        record(name, &[x], &out, saved![x], move |c| {
            Ok(smallvec![Some(rule(c.grad()?, c.saved(0)?)?)])
        });
    }
    out
}

fn positive(x: &Tensor) -> Result<Tensor> {
    compare::gt(x, &Tensor::scalar_of(0.0, x.dtype()))
}

/// `x <= 0`: false at a NaN, which therefore takes the positive branch of
/// `elu` (value and gradient), as PyTorch's kernels do.
fn not_positive(x: &Tensor) -> Result<Tensor> {
    compare::le(x, &Tensor::scalar_of(0.0, x.dtype()))
}

/// `x` where positive, `slope * x` elsewhere (so the gradient at 0 is `slope`, as in PyTorch).
pub(crate) fn leaky_relu(x: &Tensor, slope: f64) -> Result<Tensor> {
    float_input(x, "leaky_relu_cpu")?;
    let out = {
        let _g = GradModeGuard::new(false);
        where_(&positive(x)?, x, &mul_f64(x, slope)?)?
    };
    Ok(pointwise("LeakyReluBackward0", x, out, move |g, x| {
        where_(&positive(x)?, g, &mul_f64(g, slope)?)
    }))
}

/// Records `out = f(x)` for an activation applied in place, whose gradient
/// is `rule(g, out)`: the input is overwritten, so the rule reads the result
/// (saved as an output; the in-place machinery re-points it at the input).
fn pointwise_on_result(
    name: &'static str,
    x: &Tensor,
    out: Tensor,
    rule: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> Tensor {
    if needs_record(&[x]) {
        let saved_out = SavedTensor::output(&out, 0);
        record(name, &[x], &out, saved![Some(saved_out)], move |c| {
            Ok(smallvec![Some(rule(c.grad()?, c.saved(0)?)?)])
        });
    }
    out
}

/// The value `leaky_relu_(x, slope)` writes, recorded as PyTorch's
/// `LeakyReluBackward1` (a rule on the result).
pub(crate) fn leaky_relu_result(x: &Tensor, slope: f64) -> Result<Tensor> {
    float_input(x, "leaky_relu_cpu")?;
    let out = {
        let _g = GradModeGuard::new(false);
        leaky_relu(x, slope)?
    };
    Ok(pointwise_on_result(
        "LeakyReluBackward1",
        x,
        out,
        move |g, y| {
            // With a negative slope the result's sign no longer tells the input's.
            if slope < 0.0 {
                return Err(Error::runtime("In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation with negative slope"));
            }
            where_(&positive(y)?, g, &mul_f64(g, slope)?)
        },
    ))
}

/// The value `elu_(x, alpha)` writes, recorded as PyTorch's `EluBackward1`:
/// below zero the slope `alpha * exp(x)` is `result + alpha`.
pub(crate) fn elu_result(x: &Tensor, alpha: f64) -> Result<Tensor> {
    float_input(x, "elu_cpu")?;
    let out = {
        let _g = GradModeGuard::new(false);
        elu(x, alpha)?
    };
    Ok(pointwise_on_result("EluBackward1", x, out, move |g, y| {
        if alpha < 0.0 {
            return Err(Error::runtime("In-place elu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead."));
        }
        let slope = add_scalar(y, Scalar::Float(alpha))?;
        where_(&not_positive(y)?, &mul(g, &slope)?, g)
    }))
}

/// `elu(x, alpha)`: `x` where positive, `alpha * (exp(x) - 1)` elsewhere.
pub(crate) fn elu(x: &Tensor, alpha: f64) -> Result<Tensor> {
    float_input(x, "elu_cpu")?;
    // exp of min(x, 0) keeps the unused branch finite for large x; the
    // slope at 0 is alpha, as in PyTorch.
    let zero = Tensor::scalar_of(0.0, x.dtype());
    let out = {
        let _g = GradModeGuard::new(false);
        let neg_part = super::clamp(x, None, Some(&zero), false)?;
        where_(
            &not_positive(x)?,
            &mul_f64(&super::expm1(&neg_part)?, alpha)?,
            x,
        )?
    };
    Ok(pointwise("EluBackward0", x, out, move |g, x| {
        let zero = Tensor::scalar_of(0.0, x.dtype());
        let neg_part = super::clamp(x, None, Some(&zero), false)?;
        let slope = mul_f64(&exp(&neg_part)?, alpha)?;
        where_(&not_positive(x)?, &mul(g, &slope)?, g)
    }))
}

/// `hardtanh(x, min, max)` (and `relu6`): `x` clamped; as in PyTorch the
/// gradient passes only strictly inside `(min, max)`, and at a NaN.
pub(crate) fn hardtanh(x: &Tensor, lo: f64, hi: f64) -> Result<Tensor> {
    float_input(x, "hardtanh")?;
    let (l, h) = (
        Tensor::scalar_of(lo, x.dtype()),
        Tensor::scalar_of(hi, x.dtype()),
    );
    let out = {
        let _g = GradModeGuard::new(false);
        super::clamp(x, Some(&l), Some(&h), false)?
    };
    Ok(pointwise("HardtanhBackward0", x, out, move |g, x| {
        // Zero where `x <= min` or `x >= max`: a NaN passes its gradient on.
        let off = super::logical_or(&compare::le(x, &l)?, &compare::ge(x, &h)?)?;
        where_(&off, &Tensor::scalar_of(0.0, g.dtype()), g)
    }))
}

/// `gelu(x)`: exact (`x * Phi(x)`) or the tanh approximation.
pub(crate) fn gelu(x: &Tensor, tanh_approx: bool) -> Result<Tensor> {
    float_input(x, "GeluKernelImpl")?;
    let out = {
        let _g = GradModeGuard::new(false);
        let inner = if tanh_approx {
            super::tanh(&gelu_tanh_arg(x)?)?
        } else {
            super::erf(&mul_f64(x, std::f64::consts::FRAC_1_SQRT_2)?)?
        };
        mul(&mul_f64(x, 0.5)?, &add_scalar(&inner, Scalar::Int(1))?)?
    };
    Ok(pointwise("GeluBackward0", x, out, move |g, x| {
        let slope = if tanh_approx {
            // d/dx [x/2 (1 + tanh u)] = (1 + tanh u)/2 + x/2 (1 - tanh^2 u) u',
            // u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
            let t = super::tanh(&gelu_tanh_arg(x)?)?;
            let left = mul_f64(&add_scalar(&t, Scalar::Int(1))?, 0.5)?;
            let sech2 = super::rsub_scalar(&mul(&t, &t)?, Scalar::Int(1))?;
            let du = mul_f64(
                &add_scalar(&mul_f64(&mul(x, x)?, 3.0 * GELU_KAPPA)?, Scalar::Int(1))?,
                GELU_BETA,
            )?;
            super::add(&left, &mul(&mul_f64(x, 0.5)?, &mul(&sech2, &du)?)?)?
        } else {
            // Phi(x) + x phi(x)
            let cdf = mul_f64(
                &add_scalar(
                    &super::erf(&mul_f64(x, std::f64::consts::FRAC_1_SQRT_2)?)?,
                    Scalar::Int(1),
                )?,
                0.5,
            )?;
            let pdf = mul_f64(
                &exp(&mul_f64(&mul(x, x)?, -0.5)?)?,
                1.0 / (2.0 * std::f64::consts::PI).sqrt(),
            )?;
            super::add(&cdf, &mul(x, &pdf)?)?
        };
        mul(g, &slope)
    }))
}

const GELU_KAPPA: f64 = 0.044715;
/// sqrt(2 / pi)
const GELU_BETA: f64 = 0.797_884_560_802_865_4;

/// `sqrt(2/pi) * (x + 0.044715 x^3)`
fn gelu_tanh_arg(x: &Tensor) -> Result<Tensor> {
    let x3 = mul(&mul(x, x)?, x)?;
    mul_f64(&super::add(x, &mul_f64(&x3, GELU_KAPPA)?)?, GELU_BETA)
}

/// `silu(x) = x * sigmoid(x)`; gradient `s * (1 + x * (1 - s))`, `s = sigmoid(x)`.
pub(crate) fn silu(x: &Tensor) -> Result<Tensor> {
    float_input(x, "silu")?;
    let out = {
        let _g = GradModeGuard::new(false);
        mul(x, &super::sigmoid(x)?)?
    };
    Ok(pointwise("SiluBackward0", x, out, |g, x| {
        let s = super::sigmoid(x)?;
        let one_minus = super::rsub_scalar(&s, Scalar::Int(1))?;
        let slope = mul(&s, &add_scalar(&mul(x, &one_minus)?, Scalar::Int(1))?)?;
        mul(g, &slope)
    }))
}

/// `softplus(x) = log(1 + exp(beta x)) / beta`, linear above `threshold`.
/// Each branch only ever sees arguments where `exp` cannot overflow, and
/// both are smooth, so the gradient is exact everywhere (0.5 at 0).
pub(crate) fn softplus(x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    float_input(x, "softplus")?;
    let out = {
        let _g = GradModeGuard::new(false);
        let z = mul_f64(x, beta)?;
        let zero = Tensor::scalar_of(0.0, z.dtype());
        let pos = compare::gt(&z, &zero)?;
        // z > 0: z + log1p(exp(-z));  z <= 0: log1p(exp(z))
        let zp = super::clamp(&z, Some(&zero), None, false)?;
        let zn = super::clamp(&z, None, Some(&zero), false)?;
        let upper = super::add(&zp, &log1p(&exp(&neg(&zp)?)?)?)?;
        let lower = log1p(&exp(&zn)?)?;
        let smooth = mul_f64(&where_(&pos, &upper, &lower)?, 1.0 / beta)?;
        let linear = compare::gt(&z, &Tensor::scalar_of(threshold, z.dtype()))?;
        where_(&linear, x, &smooth)?
    };
    Ok(pointwise("SoftplusBackward0", x, out, move |g, x| {
        // sigmoid(beta x) in the smooth part, 1 in the linear one.
        let z = mul_f64(x, beta)?;
        let linear = compare::gt(&z, &Tensor::scalar_of(threshold, z.dtype()))?;
        where_(&linear, g, &mul(g, &super::sigmoid(&z)?)?)
    }))
}

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

/// `dropout(x, p, training)`: zeroes elements with probability `p` and
/// scales the rest by `1 / (1 - p)`; the identity when not training.
pub(crate) fn dropout(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) || p.is_nan() {
        return Err(Error::value(format!(
            "dropout probability has to be between 0 and 1, but got {p}"
        )));
    }
    if !training || p == 0.0 {
        return Ok(x.clone());
    }
    float_input(x, "dropout")?;
    let shape = x.shape();
    if p == 1.0 {
        return mul_f64(x, 0.0);
    }
    // As PyTorch's CPU `_dropout`: a noise tensor of the input's dtype
    // filled by `bernoulli_(1 - p)`, then divided by `1 - p`.
    let q = 1.0 - p;
    let noise = crate::random::with_gen(None, |g| {
        crate::random::bernoulli_scalar(g, shape, x.dtype(), q)
    })?;
    // `noise.div_(1 - p)` divides in the noise's dtype: the kept value is
    // 1 / (1 - p) rounded once in float32 for a float32 input.
    let scale = if x.dtype() == crate::tensor::DType::F32 {
        (1.0 / q as f32) as f64
    } else {
        1.0 / q
    };
    let mask = mul_f64(&noise, scale)?;
    mul(x, &mask)
}

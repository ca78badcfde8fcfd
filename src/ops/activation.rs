//! Pointwise activations and dropout. Each pointwise activation is one pass
//! over its input (float16/bfloat16 computed in float32 and rounded once),
//! with its gradient rule written twice: in recorded ops, so it
//! differentiates again, and as one fused pass for when nothing records
//! the backward. (Softmax and log_softmax live in `ops::softmax`.)

use smallvec::smallvec;

use super::{
    add_scalar, can_fuse, compare, exp, fused_grad, map1, mul, mul_f64, neg, where_, Scalar,
};
use crate::autograd::{needs_record, record, GradModeGuard, SavedTensor};
use crate::error::{Error, Result};
use crate::kernels::math::{exp_f32, tanh_f32};
use crate::kernels::vmath::{erf_f32, expm1_f32, log1p_f32};
use crate::saved;
use crate::tensor::{DType, Tensor};

fn float_input(x: &Tensor, op: &str) -> Result<()> {
    if !x.dtype().is_float() {
        return Err(Error::runtime(format!(
            "\"{op}\" not implemented for '{}'",
            x.dtype().scalar_name()
        )));
    }
    Ok(())
}

/// `f` over every element of a float tensor, in one pass.
fn act1(
    x: &Tensor,
    f32f: impl Fn(f32) -> f32 + Sync,
    f64f: impl Fn(f64) -> f64 + Sync,
) -> Result<Tensor> {
    map1(x, x.dtype(), f32f, f64f, None::<fn(i64) -> i64>)
}

/// Records `out = f(x)` for a pointwise activation whose gradient is
/// `rule(g, x)` in recorded ops, or `d32`/`d64(g, x)` in one pass when
/// nothing records the backward.
fn pointwise(
    name: &'static str,
    x: &Tensor,
    out: Tensor,
    rule: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static,
    d32: impl Fn(f32, f32) -> f32 + Copy + Send + Sync + 'static,
    d64: impl Fn(f64, f64) -> f64 + Copy + Send + Sync + 'static,
) -> Tensor {
    if needs_record(&[x]) {
        record(name, &[x], &out, saved![x], move |c| {
            let (g, x) = (c.grad()?, c.saved(0)?);
            if can_fuse(g, x) {
                return Ok(smallvec![Some(fused_grad(g, x, d32, d64)?)]);
            }
            Ok(smallvec![Some(rule(g, x)?)])
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
    let s32 = slope as f32;
    let out = act1(
        x,
        #[inline(always)]
        move |x| if x > 0.0 { x } else { x * s32 },
        #[inline(always)]
        move |x| if x > 0.0 { x } else { x * slope },
    )?;
    Ok(pointwise(
        "LeakyReluBackward0",
        x,
        out,
        move |g, x| where_(&positive(x)?, g, &mul_f64(g, slope)?),
        #[inline(always)]
        move |g, x| if x > 0.0 { g } else { g * s32 },
        #[inline(always)]
        move |g, x| if x > 0.0 { g } else { g * slope },
    ))
}

/// Records `out = f(x)` for an activation applied in place, whose gradient
/// is `rule(g, out)` (or `d32`/`d64(g, out)` in one pass): the input is
/// overwritten, so the rule reads the result (saved as an output; the
/// in-place machinery re-points it at the input).
fn pointwise_on_result(
    name: &'static str,
    x: &Tensor,
    out: Tensor,
    rule: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static,
    d32: impl Fn(f32, f32) -> f32 + Copy + Send + Sync + 'static,
    d64: impl Fn(f64, f64) -> f64 + Copy + Send + Sync + 'static,
) -> Tensor {
    if needs_record(&[x]) {
        let saved_out = SavedTensor::output(&out, 0);
        record(name, &[x], &out, saved![Some(saved_out)], move |c| {
            let (g, y) = (c.grad()?, c.saved(0)?);
            // The rule raises for unsupported settings; let it speak first.
            let r = rule(g, y);
            if r.is_ok() && can_fuse(g, y) {
                return Ok(smallvec![Some(fused_grad(g, y, d32, d64)?)]);
            }
            Ok(smallvec![Some(r?)])
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
    let s32 = slope as f32;
    Ok(pointwise_on_result(
        "LeakyReluBackward1",
        x,
        out,
        move |g, y| {
            // With a negative slope the result's sign no longer tells the input's.
            if slope < 0.0 {
                return Err(Error::runtime("In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation with negative slope"));
            }
            if can_fuse(g, y) {
                // The fused form follows; skip building the recorded one.
                return Ok(g.clone());
            }
            where_(&positive(y)?, g, &mul_f64(g, slope)?)
        },
        #[inline(always)]
        move |g, y| if y > 0.0 { g } else { g * s32 },
        #[inline(always)]
        move |g, y| if y > 0.0 { g } else { g * slope },
    ))
}

/// The value `elu_(x, alpha)` writes, recorded as PyTorch's `EluBackward1`:
/// below zero the slope `alpha * exp(x)` is `result + alpha`.
pub(crate) fn elu_result(x: &Tensor, alpha: f64) -> Result<Tensor> {
    float_input(x, "elu_cpu")?;
    let out = {
        let _g = GradModeGuard::new(false);
        elu(x, alpha, 1.0, 1.0)?
    };
    let a32 = alpha as f32;
    Ok(pointwise_on_result(
        "EluBackward1",
        x,
        out,
        move |g, y| {
            if alpha < 0.0 {
                return Err(Error::runtime("In-place elu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead."));
            }
            if can_fuse(g, y) {
                return Ok(g.clone());
            }
            let slope = add_scalar(y, Scalar::Float(alpha))?;
            where_(&not_positive(y)?, &mul(g, &slope)?, g)
        },
        #[inline(always)]
        move |g, y| if y <= 0.0 { g * (y + a32) } else { g },
        #[inline(always)]
        move |g, y| if y <= 0.0 { g * (y + alpha) } else { g },
    ))
}

/// PyTorch's `elu(x, alpha, scale, input_scale)`: `scale * x` where
/// positive, `scale * alpha * (exp(input_scale * x) - 1)` elsewhere; `selu`
/// and `celu` are its special cases. The slope at 0 is the negative side's,
/// as in PyTorch.
pub(crate) fn elu(x: &Tensor, alpha: f64, scale: f64, input_scale: f64) -> Result<Tensor> {
    float_input(x, "elu_cpu")?;
    let neg_coef = alpha * scale;
    // The gradient's factor below zero: alpha * scale * input_scale.
    let neg_slope = neg_coef * input_scale;
    let (sc, isc, nc, ns) = (
        scale as f32,
        input_scale as f32,
        neg_coef as f32,
        neg_slope as f32,
    );
    let plain = scale == 1.0 && input_scale == 1.0;
    let out = if plain {
        // As `where(x <= 0, expm1(x) * alpha, x)` computes it: a NaN takes
        // the positive branch, as in PyTorch's kernel.
        act1(
            x,
            #[inline(always)]
            move |x| if x <= 0.0 { expm1_f32(x) * nc } else { x },
            #[inline(always)]
            move |x| if x <= 0.0 { x.exp_m1() * neg_coef } else { x },
        )?
    } else {
        act1(
            x,
            #[inline(always)]
            move |x| {
                if x <= 0.0 {
                    expm1_f32(x * isc) * nc
                } else {
                    x * sc
                }
            },
            #[inline(always)]
            move |x| {
                if x <= 0.0 {
                    (x * input_scale).exp_m1() * neg_coef
                } else {
                    x * scale
                }
            },
        )?
    };
    Ok(pointwise(
        "EluBackward0",
        x,
        out,
        move |g, x| {
            // exp of min(x, 0) keeps the unused side finite for large x.
            let zero = Tensor::scalar_of(0.0, x.dtype());
            let neg_part = super::clamp(x, None, Some(&zero), false)?;
            let neg_part = if input_scale == 1.0 {
                neg_part
            } else {
                mul_f64(&neg_part, input_scale)?
            };
            let slope = mul_f64(&exp(&neg_part)?, neg_slope)?;
            let pos = if scale == 1.0 {
                g.clone()
            } else {
                mul_f64(g, scale)?
            };
            where_(&not_positive(x)?, &mul(g, &slope)?, &pos)
        },
        // A NaN input takes the positive side (its gradient is `g * scale`).
        #[inline(always)]
        move |g, x| {
            if x <= 0.0 {
                g * (exp_f32(if plain { x } else { x * isc }) * ns)
            } else if plain {
                g
            } else {
                g * sc
            }
        },
        #[inline(always)]
        move |g, x| {
            if x <= 0.0 {
                g * ((if plain { x } else { x * input_scale }).exp() * neg_slope)
            } else if plain {
                g
            } else {
                g * scale
            }
        },
    ))
}

/// `hardtanh(x, min, max)` (and `relu6`): `x` clamped (NaN kept); as in
/// PyTorch the gradient passes only strictly inside `(min, max)`, and at a NaN.
pub(crate) fn hardtanh(x: &Tensor, lo: f64, hi: f64) -> Result<Tensor> {
    float_input(x, "hardtanh")?;
    let (l, h) = (
        Tensor::scalar_of(lo, x.dtype()),
        Tensor::scalar_of(hi, x.dtype()),
    );
    // The bounds as the tensor's dtype holds them.
    let (lo, hi) = (l.item()?, h.item()?);
    let (l32, h32) = (lo as f32, hi as f32);
    let out = act1(
        x,
        #[inline(always)]
        move |x| {
            let y = if x < l32 { l32 } else { x };
            if y > h32 {
                h32
            } else {
                y
            }
        },
        #[inline(always)]
        move |x| {
            let y = if x < lo { lo } else { x };
            if y > hi {
                hi
            } else {
                y
            }
        },
    )?;
    Ok(pointwise(
        "HardtanhBackward0",
        x,
        out,
        move |g, x| {
            // Zero where `x <= min` or `x >= max`: a NaN passes its gradient on.
            let off = super::logical_or(&compare::le(x, &l)?, &compare::ge(x, &h)?)?;
            where_(&off, &Tensor::scalar_of(0.0, g.dtype()), g)
        },
        #[inline(always)]
        move |g, x| if x <= l32 || x >= h32 { 0.0 } else { g },
        #[inline(always)]
        move |g, x| if x <= lo || x >= hi { 0.0 } else { g },
    ))
}

const GELU_KAPPA: f64 = 0.044715;
/// sqrt(2 / pi)
const GELU_BETA: f64 = 0.797_884_560_802_865_4;
/// 1 / sqrt(2 pi)
const GELU_NORM: f64 = 0.398_942_280_401_432_7;

/// `gelu(x)`: exact (`x * Phi(x)`) or the tanh approximation, in one pass
/// that rounds as the composite `x/2 * (1 + erf(x / sqrt 2))` (or its tanh
/// form) does in the input's dtype, so the fused programs agree with it.
pub(crate) fn gelu(x: &Tensor, tanh_approx: bool) -> Result<Tensor> {
    use std::f64::consts::FRAC_1_SQRT_2 as C;
    float_input(x, "GeluKernelImpl")?;
    let (c32, k32, b32) = (C as f32, GELU_KAPPA as f32, GELU_BETA as f32);
    let k3_32 = (3.0 * GELU_KAPPA) as f32;
    let n32 = GELU_NORM as f32;
    let out = if tanh_approx {
        act1(
            x,
            #[inline(always)]
            move |x| {
                let t = tanh_f32((x + ((x * x) * x) * k32) * b32);
                (x * 0.5) * (t + 1.0)
            },
            #[inline(always)]
            |x| {
                let t = ((x + ((x * x) * x) * GELU_KAPPA) * GELU_BETA).tanh();
                (x * 0.5) * (t + 1.0)
            },
        )?
    } else {
        act1(
            x,
            #[inline(always)]
            move |x| (x * 0.5) * (erf_f32(x * c32) + 1.0),
            #[inline(always)]
            |x| (x * 0.5) * (libm::erf(x * C) + 1.0),
        )?
    };
    let rule = move |g: &Tensor, x: &Tensor| {
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
                &add_scalar(&super::erf(&mul_f64(x, C)?)?, Scalar::Int(1))?,
                0.5,
            )?;
            let pdf = mul_f64(&exp(&mul_f64(&mul(x, x)?, -0.5)?)?, GELU_NORM)?;
            super::add(&cdf, &mul(x, &pdf)?)?
        };
        mul(g, &slope)
    };
    // The one-pass forms round as the rule's ops do.
    Ok(if tanh_approx {
        pointwise(
            "GeluBackward0",
            x,
            out,
            rule,
            #[inline(always)]
            move |g, x| {
                let t = tanh_f32((x + ((x * x) * x) * k32) * b32);
                let left = (t + 1.0) * 0.5;
                let sech2 = 1.0 - (t * t);
                let du = (((x * x) * k3_32) + 1.0) * b32;
                g * (left + ((x * 0.5) * (sech2 * du)))
            },
            #[inline(always)]
            |g, x| {
                let t = ((x + ((x * x) * x) * GELU_KAPPA) * GELU_BETA).tanh();
                let left = (t + 1.0) * 0.5;
                let sech2 = 1.0 - (t * t);
                let du = (((x * x) * (3.0 * GELU_KAPPA)) + 1.0) * GELU_BETA;
                g * (left + ((x * 0.5) * (sech2 * du)))
            },
        )
    } else {
        pointwise(
            "GeluBackward0",
            x,
            out,
            rule,
            #[inline(always)]
            move |g, x| {
                let cdf = (erf_f32(x * c32) + 1.0) * 0.5;
                let pdf = exp_f32((x * x) * -0.5) * n32;
                g * (cdf + (x * pdf))
            },
            #[inline(always)]
            |g, x| {
                let cdf = (libm::erf(x * C) + 1.0) * 0.5;
                let pdf = ((x * x) * -0.5).exp() * GELU_NORM;
                g * (cdf + (x * pdf))
            },
        )
    })
}

/// `sqrt(2/pi) * (x + 0.044715 x^3)`
fn gelu_tanh_arg(x: &Tensor) -> Result<Tensor> {
    let x3 = mul(&mul(x, x)?, x)?;
    mul_f64(&super::add(x, &mul_f64(&x3, GELU_KAPPA)?)?, GELU_BETA)
}

#[inline(always)]
fn sigmoid32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

#[inline(always)]
fn sigmoid64(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `silu(x) = x * sigmoid(x)`; gradient `s * (1 + x * (1 - s))`, `s = sigmoid(x)`.
pub(crate) fn silu(x: &Tensor) -> Result<Tensor> {
    float_input(x, "silu")?;
    let out = act1(
        x,
        #[inline(always)]
        |x| x * sigmoid32(x),
        #[inline(always)]
        |x| x * sigmoid64(x),
    )?;
    Ok(pointwise(
        "SiluBackward0",
        x,
        out,
        |g, x| {
            let s = super::sigmoid(x)?;
            let one_minus = super::rsub_scalar(&s, Scalar::Int(1))?;
            let slope = mul(&s, &add_scalar(&mul(x, &one_minus)?, Scalar::Int(1))?)?;
            mul(g, &slope)
        },
        #[inline(always)]
        |g, x| {
            let s = sigmoid32(x);
            g * (s * ((x * (1.0 - s)) + 1.0))
        },
        #[inline(always)]
        |g, x| {
            let s = sigmoid64(x);
            g * (s * ((x * (1.0 - s)) + 1.0))
        },
    ))
}

/// `log(1 + exp(z))` as `max(z, 0) + log1p(exp(-|z|))`, which never overflows.
#[inline(always)]
fn softplus32(z: f32) -> f32 {
    let m = if z > 0.0 { z } else { 0.0 };
    m + log1p_f32(exp_f32(-z.abs()))
}

#[inline(always)]
fn softplus64(z: f64) -> f64 {
    let m = if z > 0.0 { z } else { 0.0 };
    m + (-z.abs()).exp().ln_1p()
}

/// `softplus(x) = log(1 + exp(beta x)) / beta`, linear above `threshold`;
/// the gradient is `sigmoid(beta x)` in the smooth part (0.5 at 0), 1 in
/// the linear one.
pub(crate) fn softplus(x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    float_input(x, "softplus")?;
    let (b32, t32, ib32) = (beta as f32, threshold as f32, (1.0 / beta) as f32);
    let out = act1(
        x,
        #[inline(always)]
        move |x| {
            let z = x * b32;
            let s = softplus32(z) * ib32;
            if z > t32 {
                x
            } else {
                s
            }
        },
        #[inline(always)]
        move |x| {
            let z = x * beta;
            let s = softplus64(z) * (1.0 / beta);
            if z > threshold {
                x
            } else {
                s
            }
        },
    )?;
    Ok(pointwise(
        "SoftplusBackward0",
        x,
        out,
        move |g, x| {
            let z = mul_f64(x, beta)?;
            let linear = compare::gt(&z, &Tensor::scalar_of(threshold, z.dtype()))?;
            where_(&linear, g, &mul(g, &super::sigmoid(&z)?)?)
        },
        #[inline(always)]
        move |g, x| {
            let z = x * b32;
            if z > t32 {
                g
            } else {
                g * sigmoid32(z)
            }
        },
        #[inline(always)]
        move |g, x| {
            let z = x * beta;
            if z > threshold {
                g
            } else {
                g * sigmoid64(z)
            }
        },
    ))
}

/// `mish(x) = x * tanh(softplus(x))` in one pass (softplus with PyTorch's
/// module defaults, beta 1 and threshold 20); gradient
/// `t + x * sigmoid(x) * (1 - t^2)`, `t = tanh(softplus(x))`.
pub(crate) fn mish(x: &Tensor) -> Result<Tensor> {
    float_input(x, "mish")?;
    #[inline(always)]
    fn sp32(x: f32) -> f32 {
        if x > 20.0 {
            x
        } else {
            softplus32(x)
        }
    }
    fn sp64(x: f64) -> f64 {
        if x > 20.0 {
            x
        } else {
            softplus64(x)
        }
    }
    let out = act1(
        x,
        #[inline(always)]
        |x| x * tanh_f32(sp32(x)),
        #[inline(always)]
        |x| x * sp64(x).tanh(),
    )?;
    Ok(pointwise(
        "MishBackward0",
        x,
        out,
        |g, x| {
            let t = super::tanh(&softplus(x, 1.0, 20.0)?)?;
            let s = super::sigmoid(x)?;
            let sech2 = super::rsub_scalar(&mul(&t, &t)?, Scalar::Int(1))?;
            mul(g, &super::add(&t, &mul(&mul(x, &s)?, &sech2)?)?)
        },
        #[inline(always)]
        |g, x| {
            let t = tanh_f32(sp32(x));
            g * (t + (x * sigmoid32(x)) * (1.0 - t * t))
        },
        #[inline(always)]
        |g, x| {
            let t = sp64(x).tanh();
            g * (t + (x * sigmoid64(x)) * (1.0 - t * t))
        },
    ))
}

/// `logsigmoid(x) = min(x, 0) - log1p(exp(-|x|))`; gradient `sigmoid(-x)`.
pub(crate) fn logsigmoid(x: &Tensor) -> Result<Tensor> {
    float_input(x, "log_sigmoid_forward")?;
    let out = act1(
        x,
        #[inline(always)]
        |x| {
            let m = if x < 0.0 { x } else { 0.0 };
            m - log1p_f32(exp_f32(-x.abs()))
        },
        #[inline(always)]
        |x| {
            let m = if x < 0.0 { x } else { 0.0 };
            m - (-x.abs()).exp().ln_1p()
        },
    )?;
    // sigmoid(-x) from z = exp(-|x|): z / (1 + z) for x > 0, 1 / (1 + z) else.
    Ok(pointwise(
        "LogSigmoidBackward0",
        x,
        out,
        |g, x| mul(g, &super::sigmoid(&neg(x)?)?),
        #[inline(always)]
        |g, x| {
            let z = exp_f32(-x.abs());
            g * (if x > 0.0 { z } else { 1.0 } / (1.0 + z))
        },
        #[inline(always)]
        |g, x| {
            let z = (-x.abs()).exp();
            g * (if x > 0.0 { z } else { 1.0 } / (1.0 + z))
        },
    ))
}

/// `relu6(x + 3) / 6`, NaN kept.
#[inline(always)]
fn hs_gate32(x: f32) -> f32 {
    let y = x + 3.0;
    let y = if y < 0.0 { 0.0 } else { y };
    (if y > 6.0 { 6.0 } else { y }) / 6.0
}

#[inline(always)]
fn hs_gate64(x: f64) -> f64 {
    let y = x + 3.0;
    let y = if y < 0.0 { 0.0 } else { y };
    (if y > 6.0 { 6.0 } else { y }) / 6.0
}

/// `softsign(x) = x / (1 + |x|)`. float32 and float64 run one pass that
/// rounds exactly where PyTorch's composition `x / (x.abs() + 1)` does (the
/// sum, then the quotient), so the values agree bit for bit; other dtypes
/// (integers divide to float, half precision rounds after each step) take
/// that composition. The gradient is `g / (1 + |x|)^2`, divided twice so
/// that a huge `|x|` gives 0 rather than overflowing.
pub(crate) fn softsign(x: &Tensor) -> Result<Tensor> {
    if !matches!(x.dtype(), DType::F32 | DType::F64) {
        return super::div(x, &add_scalar(&super::abs(x)?, Scalar::Int(1))?);
    }
    let out = act1(
        x,
        #[inline(always)]
        |x| x / (x.abs() + 1.0),
        #[inline(always)]
        |x| x / (x.abs() + 1.0),
    )?;
    Ok(pointwise(
        "SoftsignBackward0",
        x,
        out,
        |g, x| {
            let a = add_scalar(&super::abs(x)?, Scalar::Int(1))?;
            super::div(&super::div(g, &a)?, &a)
        },
        #[inline(always)]
        |g, x| {
            let a = x.abs() + 1.0;
            g / a / a
        },
        #[inline(always)]
        |g, x| {
            let a = x.abs() + 1.0;
            g / a / a
        },
    ))
}

/// `hardswish(x) = x * relu6(x + 3) / 6`; gradient 0 up to -3, 1 from 3 on,
/// `x / 3 + 1/2` strictly between, and 1 at a NaN (PyTorch's rule).
pub(crate) fn hardswish(x: &Tensor) -> Result<Tensor> {
    float_input(x, "hardswish_cpu")?;
    // The identity above 3, where PyTorch's `x * 6 / 6` overflows near the
    // largest float.
    let out = act1(
        x,
        #[inline(always)]
        |x| {
            let y = x + 3.0;
            let y = if y < 0.0 { 0.0 } else { y };
            if x > 3.0 {
                x
            } else {
                x * y.min(6.0) / 6.0
            }
        },
        #[inline(always)]
        |x| {
            let y = x + 3.0;
            let y = if y < 0.0 { 0.0 } else { y };
            if x > 3.0 {
                x
            } else {
                x * y.min(6.0) / 6.0
            }
        },
    )?;
    Ok(pointwise(
        "HardswishBackward0",
        x,
        out,
        |g, x| {
            let dt = x.dtype();
            let mid = add_scalar(
                &super::div_scalar(x, Scalar::Float(3.0))?,
                Scalar::Float(0.5),
            )?;
            let inner = where_(
                &compare::lt(x, &Tensor::scalar_of(3.0, dt))?,
                &mul(g, &mid)?,
                g,
            )?;
            where_(
                &compare::le(x, &Tensor::scalar_of(-3.0, dt))?,
                &Tensor::scalar_of(0.0, g.dtype()),
                &inner,
            )
        },
        #[inline(always)]
        |g, x| {
            let mid = g * (x / 3.0 + 0.5);
            if x <= -3.0 {
                0.0
            } else if x < 3.0 {
                mid
            } else {
                g
            }
        },
        #[inline(always)]
        |g, x| {
            let mid = g * (x / 3.0 + 0.5);
            if x <= -3.0 {
                0.0
            } else if x < 3.0 {
                mid
            } else {
                g
            }
        },
    ))
}

/// `hardsigmoid(x) = relu6(x + 3) / 6`; gradient 1/6 strictly inside (-3, 3).
pub(crate) fn hardsigmoid(x: &Tensor) -> Result<Tensor> {
    float_input(x, "hardsigmoid_cpu")?;
    let out = act1(x, hs_gate32, hs_gate64)?;
    Ok(pointwise(
        "HardsigmoidBackward0",
        x,
        out,
        |g, x| {
            let dt = x.dtype();
            let inside = super::logical_and(
                &compare::gt(x, &Tensor::scalar_of(-3.0, dt))?,
                &compare::lt(x, &Tensor::scalar_of(3.0, dt))?,
            )?;
            where_(
                &inside,
                &super::div_scalar(g, Scalar::Float(6.0))?,
                &Tensor::scalar_of(0.0, g.dtype()),
            )
        },
        #[inline(always)]
        |g, x| if x > -3.0 && x < 3.0 { g / 6.0 } else { 0.0 },
        #[inline(always)]
        |g, x| if x > -3.0 && x < 3.0 { g / 6.0 } else { 0.0 },
    ))
}

/// The recorded rule of the shrink activations: `g` outside
/// `[-lambd, lambd]`, 0 inside (and `g` for NaN, as PyTorch's).
fn shrink_rule(lambd: f64) -> impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static {
    move |g, x| {
        let dt = x.dtype();
        let inside = super::logical_and(
            &compare::ge(x, &Tensor::scalar_of(-lambd, dt))?,
            &compare::le(x, &Tensor::scalar_of(lambd, dt))?,
        )?;
        where_(&inside, &Tensor::scalar_of(0.0, g.dtype()), g)
    }
}

/// `hardshrink(x) = x` outside `[-lambd, lambd]`, 0 inside (NaN kept).
pub(crate) fn hardshrink(x: &Tensor, lambd: f64) -> Result<Tensor> {
    float_input(x, "hardshrink_cpu")?;
    let l32 = lambd as f32;
    let out = act1(
        x,
        #[inline(always)]
        move |x| if x >= -l32 && x <= l32 { 0.0 } else { x },
        #[inline(always)]
        move |x| if x >= -lambd && x <= lambd { 0.0 } else { x },
    )?;
    Ok(pointwise(
        "HardshrinkBackward0",
        x,
        out,
        shrink_rule(lambd),
        #[inline(always)]
        move |g, x| if x >= -l32 && x <= l32 { 0.0 } else { g },
        #[inline(always)]
        move |g, x| if x >= -lambd && x <= lambd { 0.0 } else { g },
    ))
}

/// `softshrink(x)`: `x - lambd` above `lambd`, `x + lambd` below `-lambd`,
/// 0 between (NaN kept).
pub(crate) fn softshrink(x: &Tensor, lambd: f64) -> Result<Tensor> {
    if lambd < 0.0 {
        return Err(Error::runtime(format!(
            "lambda must be greater or equal to 0, but found to be {lambd}."
        )));
    }
    float_input(x, "softshrink_cpu")?;
    let l32 = lambd as f32;
    let out = act1(
        x,
        #[inline(always)]
        move |x| {
            if x > l32 {
                x - l32
            } else if x < -l32 {
                x + l32
            } else {
                x * 0.0
            }
        },
        #[inline(always)]
        move |x| {
            if x > lambd {
                x - lambd
            } else if x < -lambd {
                x + lambd
            } else {
                x * 0.0
            }
        },
    )?;
    Ok(pointwise(
        "SoftshrinkBackward0",
        x,
        out,
        shrink_rule(lambd),
        #[inline(always)]
        move |g, x| if x >= -l32 && x <= l32 { 0.0 } else { g },
        #[inline(always)]
        move |g, x| if x >= -lambd && x <= lambd { 0.0 } else { g },
    ))
}

/// `threshold(x, threshold, value)`: `value` where `x <= threshold`, else
/// `x` (NaN kept); the gradient passes where `x > threshold`.
pub(crate) fn threshold(x: &Tensor, th: f64, value: f64) -> Result<Tensor> {
    if x.dtype() == DType::Bool {
        return Err(Error::runtime(
            "\"threshold_cpu\" not implemented for 'Bool'",
        ));
    }
    let dt = x.dtype();
    // The two numbers as the tensor's dtype holds them.
    let (t, v) = (
        Tensor::scalar_of(th, dt).item()?,
        Tensor::scalar_of(value, dt).item()?,
    );
    let (t32, v32) = (t as f32, v as f32);
    let (ti, vi) = (t as i64, v as i64);
    let out = map1(
        x,
        dt,
        #[inline(always)]
        move |x| if x <= t32 { v32 } else { x },
        #[inline(always)]
        move |x| if x <= t { v } else { x },
        Some(move |x: i64| if x <= ti { vi } else { x }),
    )?;
    if !dt.is_float() {
        return Ok(out);
    }
    Ok(pointwise(
        "ThresholdBackward0",
        x,
        out,
        move |g, x| {
            where_(
                &compare::le(x, &Tensor::scalar_of(t, x.dtype()))?,
                &Tensor::scalar_of(0.0, g.dtype()),
                g,
            )
        },
        #[inline(always)]
        move |g, x| if x <= t32 { 0.0 } else { g },
        #[inline(always)]
        move |g, x| if x <= t { 0.0 } else { g },
    ))
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

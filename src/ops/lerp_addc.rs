//! `lerp`, `addcmul` and `addcdiv`: three-operand elementwise ops computed
//! in one pass over float32 or float64 operands of one dtype, as PyTorch runs
//! each as one kernel (a composition of `sub`, `mul`, `add` and `where` reads
//! and writes the whole tensor two to five times). Each element is rounded
//! as the composition rounds it, so the values are the same bits; the
//! backward rules are PyTorch's, fused into one pass per gradient when no
//! graph of the backward is being recorded.

use smallvec::smallvec;

use super::{div, mul, mul_scalar, neg, rsub_scalar, sub, Scalar};
use crate::autograd::{is_grad_enabled, needs_record, record, tracked};
use crate::error::{Error, Result};
use crate::kernels::elementwise::{binary_kept, ternary_kept};
use crate::saved;
use crate::tensor::{broadcast_shapes, DType, Element, Float, Shape, Tensor};

use super::layout::laid_out;

/// The common dtype of the operands: float32 or float64, the same for all.
fn one_float_dtype(name: &str, ts: &[&Tensor]) -> Result<DType> {
    let dt = ts[0].dtype();
    if !matches!(dt, DType::F32 | DType::F64) || ts.iter().any(|t| t.dtype() != dt) {
        return Err(Error::runtime(format!(
            "{name}: the fused kernel takes float32 or float64 operands of one dtype"
        )));
    }
    Ok(dt)
}

/// `f(x, a, b)` over the operands broadcast to `shape`, laid out as PyTorch
/// lays out the result; written over `x` itself when `x` is the destination
/// of the in-place form (`x.addcmul_(a, b)`, see `unary::zip3_claimed`).
fn ternary_map<T: Element>(
    x: &Tensor,
    a: &Tensor,
    b: &Tensor,
    shape: &Shape,
    f: impl Fn(T, T, T) -> T + Sync + Copy,
) -> Tensor {
    // By value (a copy): see `unary::map1` on `&F` as the kernel's function.
    if let Some(out) = super::unary::zip3_claimed::<T>(x, a, b, f) {
        return out;
    }
    let (vx, va, vb) = (x.view(), a.view(), b.view());
    let (data, st) = ternary_kept::<T, T>(&vx, &va, &vb, shape, f);
    laid_out(data, shape.clone(), st)
}

/// [`ternary_map`] for two operands.
fn binary_map<T: Element>(
    x: &Tensor,
    a: &Tensor,
    shape: &Shape,
    f: impl Fn(T, T) -> T + Sync + Copy,
) -> Tensor {
    if let Some(out) = super::unary::zip_claimed::<T>(x, a, f) {
        return out;
    }
    let (vx, va) = (x.view(), a.view());
    let (data, st) = binary_kept::<T, T>(&vx, &va, shape, f);
    laid_out(data, shape.clone(), st)
}

/// PyTorch's two-sided interpolation: from `x` for a weight below one half
/// in magnitude, from `e` otherwise, so the ends are exact.
#[inline(always)]
fn lerp_elem<T: Float>(x: T, e: T, w: T) -> T {
    let d = e - x;
    let near = x + w * d;
    let far = e - d * (<T as Element>::one() - w);
    if w.abs() < T::from_f64(0.5) {
        near
    } else {
        far
    }
}

/// `g * (1 - w)`, `g * w` as one binary pass each when nothing records the
/// backward; otherwise with the differentiable ops.
fn times_one_minus(g: &Tensor, w: &Tensor, dt: DType) -> Result<Tensor> {
    if is_grad_enabled() || g.dtype() != dt {
        return mul(g, &rsub_scalar(w, Scalar::Float(1.0))?);
    }
    let shape = broadcast_shapes(&g.shape(), &w.shape())?;
    let (vg, vw) = (g.view(), w.view());
    Ok(crate::dispatch_float!(dt, T => {
        let (data, st) = binary_kept::<T, T>(&vg, &vw, &shape, #[inline(always)] |g: T, w: T| g * (<T as Element>::one() - w));
        laid_out(data, shape.clone(), st)
    }))
}

/// `lerp(input, end, weight)` for a tensor `weight`.
pub(crate) fn lerp_tensor(input: &Tensor, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let dt = one_float_dtype("lerp", &[input, end, weight])?;
    // The composition's order: `end - input`, then `weight * diff`.
    let shape = broadcast_shapes(&end.shape(), &input.shape())?;
    let shape = broadcast_shapes(&weight.shape(), &shape)?;
    let out = crate::dispatch_float!(dt, T => {
        ternary_map::<T>(input, end, weight, &shape, #[inline(always)] |x: T, e: T, w: T| lerp_elem(x, e, w))
    });
    if needs_record(&[input, end, weight]) {
        let ends = tracked(input) || tracked(end);
        let tw = tracked(weight);
        record(
            "LerpBackward1",
            &[input, end, weight],
            &out,
            saved![
                tw.then_some(input),
                tw.then_some(end),
                ends.then_some(weight)
            ],
            move |c| {
                let g = c.grad()?;
                let gi = if c.needs(0) {
                    Some(times_one_minus(g, c.saved(2)?, dt)?)
                } else {
                    None
                };
                let ge = if c.needs(1) {
                    Some(mul(g, c.saved(2)?)?)
                } else {
                    None
                };
                let gw = if c.needs(2) {
                    let (x, e) = (c.saved(0)?, c.saved(1)?);
                    Some(if is_grad_enabled() || g.dtype() != dt {
                        mul(g, &sub(e, x)?)?
                    } else {
                        let shape = out_shape3(g, e, x)?;
                        let (vg, ve, vx) = (g.view(), e.view(), x.view());
                        crate::dispatch_float!(dt, T => {
                            let (data, st) = ternary_kept::<T, T>(&vg, &ve, &vx, &shape, #[inline(always)] |g: T, e: T, x: T| g * (e - x));
                            laid_out(data, shape.clone(), st)
                        })
                    })
                } else {
                    None
                };
                Ok(smallvec![gi, ge, gw])
            },
        );
    }
    Ok(out)
}

/// `lerp(input, end, weight)` for a number `weight`: the weight and one
/// minus it are taken in the tensors' dtype (a float32 number for float32),
/// the side chosen on the number itself, as PyTorch does.
pub(crate) fn lerp_scalar(input: &Tensor, end: &Tensor, weight: f64) -> Result<Tensor> {
    let dt = one_float_dtype("lerp", &[input, end])?;
    let shape = broadcast_shapes(&end.shape(), &input.shape())?;
    let near = weight.abs() < 0.5;
    let out = crate::dispatch_float!(dt, T => {
        let w = T::from_f64(weight);
        let om = <T as Element>::one() - w;
        if near {
            binary_map::<T>(input, end, &shape, #[inline(always)] move |x: T, e: T| x + w * (e - x))
        } else {
            binary_map::<T>(input, end, &shape, #[inline(always)] move |x: T, e: T| e - (e - x) * om)
        }
    });
    if needs_record(&[input, end]) {
        record("LerpBackward0", &[input, end], &out, saved![], move |c| {
            let g = c.grad()?;
            let gi = if c.needs(0) {
                Some(mul_scalar(g, Scalar::Float(1.0 - weight))?)
            } else {
                None
            };
            let ge = if c.needs(1) {
                Some(mul_scalar(g, Scalar::Float(weight))?)
            } else {
                None
            };
            Ok(smallvec![gi, ge])
        });
    }
    Ok(out)
}

fn out_shape3(a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Shape> {
    broadcast_shapes(&broadcast_shapes(&a.shape(), &b.shape())?, &c.shape())
}

/// Which quotient-or-product [`addc`] adds.
#[derive(Clone, Copy, PartialEq)]
enum Addc {
    Mul,
    Div,
}

/// `input + value * (t1 * t2)` or `input + value * (t1 / t2)`, the product
/// (quotient) rounded, then scaled (unless `value` is one), then added.
fn addc(kind: Addc, input: &Tensor, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
    let name = if kind == Addc::Mul {
        "addcmul"
    } else {
        "addcdiv"
    };
    let dt = one_float_dtype(name, &[input, t1, t2])?;
    let shape = broadcast_shapes(&t1.shape(), &t2.shape())?;
    let shape = broadcast_shapes(&input.shape(), &shape)?;
    let scaled = value != 1.0;
    let out = crate::dispatch_float!(dt, T => {
        let v = T::from_f64(value);
        match (kind, scaled) {
            (Addc::Mul, false) => ternary_map::<T>(input, t1, t2, &shape, #[inline(always)] |x: T, a: T, b: T| x + a * b),
            (Addc::Mul, true) => ternary_map::<T>(input, t1, t2, &shape, #[inline(always)] move |x: T, a: T, b: T| x + v * (a * b)),
            (Addc::Div, false) => ternary_map::<T>(input, t1, t2, &shape, #[inline(always)] |x: T, a: T, b: T| x + a / b),
            (Addc::Div, true) => ternary_map::<T>(input, t1, t2, &shape, #[inline(always)] move |x: T, a: T, b: T| x + v * (a / b)),
        }
    });
    if needs_record(&[input, t1, t2]) {
        let (r1, r2) = (tracked(t1), tracked(t2));
        let (save1, save2) = match kind {
            Addc::Mul => (r2, r1),
            Addc::Div => (r2, r1 || r2),
        };
        let node = if kind == Addc::Mul {
            "AddcmulBackward0"
        } else {
            "AddcdivBackward0"
        };
        record(
            node,
            &[input, t1, t2],
            &out,
            saved![save1.then_some(t1), save2.then_some(t2)],
            move |c| {
                let g = c.grad()?;
                let gi = c.needs(0).then(|| g.clone());
                let fused = !is_grad_enabled() && g.dtype() == dt;
                // `g * value`, the gradient of the scaled product (quotient).
                let gv = || -> Result<Tensor> {
                    if scaled {
                        mul_scalar(g, Scalar::Float(value))
                    } else {
                        Ok(g.clone())
                    }
                };
                let g1 = if c.needs(1) {
                    let b = c.saved(1)?;
                    Some(if fused {
                        let shape = broadcast_shapes(&g.shape(), &b.shape())?;
                        let (vg, vb) = (g.view(), b.view());
                        crate::dispatch_float!(dt, T => {
                            let v = T::from_f64(value);
                            let (data, st) = match kind {
                                Addc::Mul => binary_kept::<T, T>(&vg, &vb, &shape, #[inline(always)] move |g: T, b: T| (if scaled { g * v } else { g }) * b),
                                Addc::Div => binary_kept::<T, T>(&vg, &vb, &shape, #[inline(always)] move |g: T, b: T| (if scaled { g * v } else { g }) / b),
                            };
                            laid_out(data, shape.clone(), st)
                        })
                    } else if kind == Addc::Mul {
                        mul(&gv()?, b)?
                    } else {
                        div(&gv()?, b)?
                    })
                } else {
                    None
                };
                let g2 = if c.needs(2) {
                    let a = c.saved(0)?;
                    Some(if !fused {
                        match kind {
                            Addc::Mul => mul(&gv()?, a)?,
                            // -g * a / b^2, in the order division's rule uses.
                            Addc::Div => {
                                let b = c.saved(1)?;
                                neg(&div(&mul(&gv()?, &div(a, b)?)?, b)?)?
                            }
                        }
                    } else if kind == Addc::Mul {
                        let shape = broadcast_shapes(&g.shape(), &a.shape())?;
                        let (vg, va) = (g.view(), a.view());
                        crate::dispatch_float!(dt, T => {
                            let v = T::from_f64(value);
                            let (data, st) = binary_kept::<T, T>(&vg, &va, &shape, #[inline(always)] move |g: T, a: T| (if scaled { g * v } else { g }) * a);
                            laid_out(data, shape.clone(), st)
                        })
                    } else {
                        let b = c.saved(1)?;
                        let shape = out_shape3(g, a, b)?;
                        let (vg, va, vb) = (g.view(), a.view(), b.view());
                        crate::dispatch_float!(dt, T => {
                            let v = T::from_f64(value);
                            let (data, st) = ternary_kept::<T, T>(&vg, &va, &vb, &shape, #[inline(always)] move |g: T, a: T, b: T| -(((if scaled { g * v } else { g }) * (a / b)) / b));
                            laid_out(data, shape.clone(), st)
                        })
                    })
                } else {
                    None
                };
                Ok(smallvec![gi, g1, g2])
            },
        );
    }
    Ok(out)
}

/// `input + value * tensor1 * tensor2`.
pub(crate) fn addcmul(input: &Tensor, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
    addc(Addc::Mul, input, t1, t2, value)
}

/// `input + value * tensor1 / tensor2`.
pub(crate) fn addcdiv(input: &Tensor, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
    addc(Addc::Div, input, t1, t2, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f32], shape: &[usize]) -> Tensor {
        Tensor::from_vec(v.to_vec(), Shape::from_slice(shape))
    }

    #[test]
    fn fused_values_are_the_compositions_bits() {
        let n = 4099;
        let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let e: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos() * 1e3).collect();
        let w: Vec<f32> = (0..n).map(|i| (i as f32 * 0.07).sin()).collect();
        let (tx, te, tw) = (t(&x, &[n]), t(&e, &[n]), t(&w, &[n]));
        let got = lerp_tensor(&tx, &te, &tw).unwrap().to_vec::<f32>();
        for i in 0..n {
            let d = e[i] - x[i];
            let want = if w[i].abs() < 0.5 {
                x[i] + w[i] * d
            } else {
                e[i] - d * (1.0 - w[i])
            };
            assert_eq!(got[i].to_bits(), want.to_bits(), "{i}");
        }
        let got = addcdiv(&tx, &te, &tw, 0.3).unwrap().to_vec::<f32>();
        for i in 0..n {
            let want = x[i] + 0.3f32 * (e[i] / w[i]);
            assert_eq!(got[i].to_bits(), want.to_bits(), "{i}");
        }
        // A broadcast row and a one-element operand.
        let row = t(&w[..7], &[1, 7]);
        let one = t(&[2.5], &[]);
        let m = t(&x[..21], &[3, 7]);
        let got = addcmul(&m, &row, &one, 1.0).unwrap().to_vec::<f32>();
        for r in 0..3 {
            for k in 0..7 {
                assert_eq!(got[r * 7 + k], x[r * 7 + k] + w[k] * 2.5);
            }
        }
    }
}

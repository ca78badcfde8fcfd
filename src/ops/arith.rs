//! `+ - * / **` and negation, with broadcasting and type promotion.

use smallvec::smallvec;

use super::{cast_data, result_type, Scalar};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::elementwise::binary;
use crate::saved;
use crate::tensor::{broadcast_shapes, Arith, DType, Element, Float, Tensor};

/// Applies `$body` elementwise to `a` and `b` (cast to `$dt`), broadcasting.
macro_rules! map2 {
    ($a:expr, $b:expr, $dt:expr, $T:ident, |$x:ident, $y:ident| $body:expr) => {{
        let (a, b): (&Tensor, &Tensor) = ($a, $b);
        // `x.op_(y)` writes over `x` itself (see `apply_inplace_map`).
        let claimed = $crate::ops::unary::zip_claimed::<$T>(
            a,
            b,
            #[inline(always)]
            |$x: $T, $y: $T| $body,
        );
        match claimed {
            Some(out) => out,
            None => $crate::ops::with_cast_kept(a, $dt, |va| {
                $crate::ops::with_cast_kept(b, $dt, |vb| -> Result<Tensor> {
                    let out_shape = broadcast_shapes(&va.shape, &vb.shape)?;
                    let (data, strides) = $crate::kernels::elementwise::binary_kept::<$T, $T>(
                        va,
                        vb,
                        &out_shape,
                        #[inline(always)]
                        |$x: $T, $y: $T| $body,
                    );
                    Ok($crate::ops::layout::laid_out(data, out_shape, strides))
                })
            })?,
        }
    }};
}
pub(crate) use map2;

fn arith_dtype(a: &Tensor, b: &Tensor) -> DType {
    result_type(a, b)
}

/// `a` and `b` as float16/bfloat16 `+`/`-` reads them: in the result dtype
/// (a float32 number is rounded to it first, as PyTorch's add kernel does;
/// `*` and `/` keep a number in float32 instead). Handles to the same
/// tensors for every other dtype.
fn rounded_operands(a: &Tensor, b: &Tensor, dt: DType) -> (Tensor, Tensor) {
    if dt.is_low_precision() {
        (cast_data(a, dt), cast_data(b, dt))
    } else {
        (a.clone(), b.clone())
    }
}

/// `a <op> s` for a Python number that leaves a floating `a`'s dtype as it
/// is (`y * 0.5`, the common case): one pass over `a`, with no 0-d tensor
/// made for the number and nothing saved for backward. `None` when promotion
/// applies and the general path must run.
macro_rules! scalar_op {
    ($a:expr, $s:expr, $name:literal, |$x:ident, $c:ident| $body:expr, |$g:ident| $grad:expr) => {{
        let (a, s): (&Tensor, Scalar) = ($a, $s);
        let dt = a.dtype();
        if !matches!(dt, DType::F32 | DType::F64) || s.result_type(dt) != dt {
            None
        } else {
            let v = a.view();
            let out = crate::dispatch_float!(dt, T => {
                let $c = T::from_f64(s.to_f64());
                let (data, strides) =
                    crate::kernels::elementwise::unary_kept::<T, T>(&v, #[inline(always)] move |$x: T| $body);
                crate::ops::layout::laid_out(data, v.shape.clone(), strides)
            });
            if needs_record(&[a]) {
                crate::autograd::record_with_scalar($name, a, dt, &out, move |ctx| {
                    let $g = ctx.grad()?;
                    Ok(smallvec![Some($grad), None])
                });
            }
            Some(out)
        }
    }};
}

// ----- add -------------------------------------------------------------------

pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dt = arith_dtype(a, b);
    let (a, b) = &rounded_operands(a, b, dt);
    let out = crate::dispatch_compute!(dt, T => map2!(a, b, dt, T, |x, y| x.add(y)));
    if needs_record(&[a, b]) {
        record("AddBackward0", &[a, b], &out, saved![], |c| {
            let g = c.grad()?;
            Ok(smallvec![Some(g.clone()), Some(g.clone())])
        });
    }
    Ok(out)
}

pub(crate) fn add_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    match scalar_op!(a, s, "AddBackward0", |x, c| x.add(c), |g| g.clone()) {
        Some(out) => Ok(out),
        None => add(a, &s.wrap(a)),
    }
}

/// `a + alpha * b`, as `torch.add(a, b, alpha=...)`.
pub(crate) fn add_alpha(a: &Tensor, b: &Tensor, alpha: Scalar) -> Result<Tensor> {
    if alpha.to_f64() == 1.0 {
        return add(a, b);
    }
    add(a, &mul(b, &alpha.wrap(b))?)
}

// ----- sub -------------------------------------------------------------------

/// PyTorch's `sub_check`: subtraction refuses bool operands.
pub(crate) fn sub_check(a: &Tensor, b: &Tensor) -> Result<()> {
    let (ba, bb) = (a.dtype() == DType::Bool, b.dtype() == DType::Bool);
    if ba && bb {
        return Err(Error::runtime(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
        ));
    }
    if ba || bb {
        return Err(Error::runtime(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    Ok(())
}

pub(crate) fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    sub_check(a, b)?;
    let dt = arith_dtype(a, b);
    let (a, b) = &rounded_operands(a, b, dt);
    let out = crate::dispatch_compute!(dt, T => map2!(a, b, dt, T, |x, y| x.sub(y)));
    if needs_record(&[a, b]) {
        record("SubBackward0", &[a, b], &out, saved![], |c| {
            let g = c.grad()?;
            let gb = if c.needs(1) { Some(neg(g)?) } else { None };
            Ok(smallvec![Some(g.clone()), gb])
        });
    }
    Ok(out)
}

/// `s - a` for a Python number `s`.
pub(crate) fn rsub_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    let w = s.wrap(a);
    sub_check(&w, a)?;
    let dt = arith_dtype(&w, a);
    let out = crate::dispatch_compute!(dt, T => map2!(&w, a, dt, T, |x, y| x.sub(y)));
    if needs_record(&[a]) {
        record("RsubBackward1", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(neg(c.grad()?)?)])
        });
    }
    Ok(out)
}

// ----- mul -------------------------------------------------------------------

pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dt = arith_dtype(a, b);
    let out = crate::dispatch_compute!(dt, T => map2!(a, b, dt, T, |x, y| x.mul(y)));
    if needs_record(&[a, b]) {
        // Save each operand only if the other one needs its gradient.
        let (ra, rb) = (crate::autograd::tracked(a), crate::autograd::tracked(b));
        record(
            "MulBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), ra.then_some(b)],
            |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) {
                    Some(mul(g, c.saved(1)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(mul(g, c.saved(0)?)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

pub(crate) fn mul_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    match scalar_op!(a, s, "MulBackward0", |x, c| x.mul(c), |g| mul_scalar(g, s)?) {
        Some(out) => Ok(out),
        None => mul(a, &s.wrap_opmath(a)),
    }
}

/// `a - s` for a Python number `s`.
pub(crate) fn sub_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    match scalar_op!(a, s, "SubBackward0", |x, c| x.sub(c), |g| g.clone()) {
        Some(out) => Ok(out),
        None => sub(a, &s.wrap(a)),
    }
}

pub(crate) fn mul_f64(a: &Tensor, s: f64) -> Result<Tensor> {
    mul(a, &Scalar::Float(s).wrap_opmath(a))
}

/// `a * s` as PyTorch's own C++ composites compute it (`mul(Tensor, Scalar)`),
/// recorded as `MulBackward1`; from Python, `a * 2.0` is `MulBackward0`.
pub(crate) fn mul_scalar1(a: &Tensor, s: f64) -> Result<Tensor> {
    let s = Scalar::Float(s);
    match scalar_op!(a, s, "MulBackward1", |x, c| x.mul(c), |g| mul_scalar(g, s)?) {
        Some(out) => Ok(out),
        None => mul(a, &s.wrap_opmath(a)),
    }
}

/// `a / s` as PyTorch's own C++ composites compute it (`div(Tensor, Scalar)`),
/// recorded as `DivBackward1`.
pub(crate) fn div_scalar1(a: &Tensor, s: f64) -> Result<Tensor> {
    let s = Scalar::Float(s);
    match scalar_op!(a, s, "DivBackward1", |x, c| x / c, |g| div_scalar(g, s)?) {
        Some(out) => Ok(out),
        None => div(a, &s.wrap_opmath(a)),
    }
}

// ----- div -------------------------------------------------------------------

pub(crate) fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dt = arith_dtype(a, b).to_float();
    let out = crate::dispatch_float_compute!(dt, T => map2!(a, b, dt, T, |x, y| x / y));
    if needs_record(&[a, b]) {
        let rb = crate::autograd::tracked(b);
        record(
            "DivBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), Some(b)],
            |c| {
                let g = c.grad()?;
                let b = c.saved(1)?;
                let ga = if c.needs(0) { Some(div(g, b)?) } else { None };
                let gb = if c.needs(1) {
                    // -g * a / b^2, in an order that stays finite where a/b is.
                    Some(neg(&div(&mul(g, &div(c.saved(0)?, b)?)?, b)?)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

pub(crate) fn div_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    match scalar_op!(a, s, "DivBackward0", |x, c| x / c, |g| div_scalar(g, s)?) {
        Some(out) => Ok(out),
        None => div(a, &s.wrap_opmath(a)),
    }
}

/// `s / a` for a Python number `s`. PyTorch's `Tensor.__rtruediv__` is
/// `a.reciprocal() * s`, so the graph (and `grad_fn`, `MulBackward0`) is that.
pub(crate) fn rdiv_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    let r = super::unary::reciprocal(a)?;
    mul_scalar(&r, s)
}

// ----- neg -------------------------------------------------------------------

pub(crate) fn neg(a: &Tensor) -> Result<Tensor> {
    let dt = a.dtype();
    if dt == DType::Bool {
        return Err(Error::runtime(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    let out = super::unary::map1(
        a,
        dt,
        #[inline(always)]
        |x: f32| -x,
        #[inline(always)]
        |x: f64| -x,
        Some(|x: i64| x.wrapping_neg()),
    )?;
    if needs_record(&[a]) {
        record("NegBackward0", &[a], &out, saved![], |c| {
            Ok(smallvec![Some(neg(c.grad()?)?)])
        });
    }
    Ok(out)
}

// ----- pow -------------------------------------------------------------------

/// `x ** e` for a Python number `e`: the forms PyTorch uses for the common
/// exponents, `sqrt` and `1 / sqrt` included (so `(-inf) ** 0.5` is NaN and
/// `(-0.0) ** -0.5` is -inf there, where `pow` gives inf).
#[inline(always)]
fn powf_special<T: Float>(x: T, e: T) -> T {
    let one = <T as Element>::one();
    let half = one / (one + one);
    if e == half {
        x.sqrt()
    } else if e == -half {
        one / x.sqrt()
    } else {
        powf_exact(x, e)
    }
}

/// `x ** e` for a tensor exponent: C's `pow`, with the exact products for
/// the small integer exponents (equal to it up to rounding of `x * x * x`);
/// float32 in lanes ([`Float::pow_fast`]).
#[inline(always)]
fn powf_exact<T: Float>(x: T, e: T) -> T {
    x.pow_fast(e)
}

fn int_pow(x: i64, e: i64) -> i64 {
    if e < 0 {
        // 1 and -1 are the only bases with a nonzero result (0 ** -1 is 0 too,
        // as in PyTorch); a number exponent below zero is refused by the caller.
        return match x {
            1 => 1,
            -1 => {
                if e % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    x.wrapping_pow(e.min(u32::MAX as i64) as u32)
}

/// `a ** e` for a Python number `e`.
pub(crate) fn pow_scalar(a: &Tensor, e: Scalar) -> Result<Tensor> {
    let dt = e.result_type(a.dtype());
    let out = match dt {
        d if !d.is_float() => {
            let ei = e.to_f64() as i64;
            if ei < 0 {
                return Err(Error::runtime(
                    "Integers to negative integer powers are not allowed.",
                ));
            }
            // In the tensor's own type first (a bool tensor counts as int64).
            let keep = super::convert::preserving_format;
            let a = keep(&keep(a, dt), DType::I64);
            let v = a.view();
            let (r, strides) = crate::kernels::elementwise::unary_kept::<i64, i64>(
                &v,
                #[inline(always)]
                |x| int_pow(x, ei),
            );
            super::back_to(super::layout::laid_out(r, v.shape.clone(), strides), dt)
        }
        _ => {
            let ef = e.to_f64();
            crate::dispatch_float_compute!(dt, T => {
                let a = super::convert::preserving_format(a, dt);
                let v = a.view();
                let et = T::from_f64(ef);
                // The exponent's form chosen once, outside the loop: each is its own
                // loop, so `x ** 2` is a multiply per lane, not a pow with a select.
                let one = <T as Element>::one();
                match ef {
                    2.0 => pow_map::<T>(&a, &v, #[inline(always)] |x| x * x),
                    3.0 => pow_map::<T>(&a, &v, #[inline(always)] |x| x * x * x),
                    1.0 => pow_map::<T>(&a, &v, #[inline(always)] |x| x),
                    -1.0 => pow_map::<T>(&a, &v, #[inline(always)] |x| one / x),
                    0.5 | -0.5 => pow_map::<T>(&a, &v, #[inline(always)] |x| powf_special(x, et)),
                    _ => pow_map::<T>(&a, &v, #[inline(always)] |x| x.pow_fast(et)),
                }
            })
        }
    };
    if needs_record(&[a]) {
        let ef = e.to_f64();
        record("PowBackward0", &[a], &out, saved![a], move |c| {
            let g = c.grad()?;
            if ef == 0.0 {
                return Ok(smallvec![Some(mul_f64(g, 0.0)?)]);
            }
            let x = c.saved(0)?;
            // g * e * x^(e-1)
            let d = mul_f64(&pow_scalar(x, Scalar::Float(ef - 1.0))?, ef)?;
            Ok(smallvec![Some(mul(g, &d)?)])
        });
    }
    Ok(out)
}

/// One form of `x ** e` over `a` (its view `v`), laid out as `a` is; in
/// place when `a` is the destination of `x.pow_(e)` (see `map_claimed`).
fn pow_map<T: Element>(
    a: &Tensor,
    v: &crate::tensor::View,
    f: impl Fn(T) -> T + Sync + Copy,
) -> Tensor {
    // By value (a copy): see `unary::map1` on `&F` as the kernel's function.
    if let Some(out) = super::unary::map_claimed::<T>(a, f) {
        return out;
    }
    let (r, strides) = crate::kernels::elementwise::unary_kept::<T, T>(v, f);
    super::layout::laid_out(r, v.shape.clone(), strides)
}

/// `a ** b` for two tensors (also `s ** a` once `s` is wrapped).
pub(crate) fn pow(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dt = arith_dtype(a, b);
    let out = match dt {
        // A negative exponent in a tensor is no error (only a number is):
        // the result is 1 / x ** -e truncated, as PyTorch computes it.
        d if !d.is_float() => {
            let (a, b) = (cast_data(a, dt), cast_data(b, dt));
            super::back_to(map2!(&a, &b, DType::I64, i64, |x, y| int_pow(x, y)), dt)
        }
        _ => crate::dispatch_float_compute!(dt, T => map2!(a, b, dt, T, |x, y| powf_exact(x, y))),
    };
    if needs_record(&[a, b]) {
        let rb = crate::autograd::tracked(b);
        record(
            "PowBackward1",
            &[a, b],
            &out,
            saved![
                a,
                b,
                rb.then(|| crate::autograd::SavedTensor::output(&out, 0))
            ],
            |c| {
                let g = c.grad()?;
                let (a, b) = (c.saved(0)?, c.saved(1)?);
                if fuse_pow_grads(g, a, b) {
                    let ga = if c.needs(0) {
                        Some(pow_grad_base(g, a, b)?)
                    } else {
                        None
                    };
                    let gb = if c.needs(1) {
                        Some(pow_grad_exponent(g, a, c.saved(2)?)?)
                    } else {
                        None
                    };
                    return Ok(smallvec![ga, gb]);
                }
                let ga = if c.needs(0) {
                    // g * b * a^(b-1), taken as 0 where b == 0 makes it NaN (at
                    // a = 0 or NaN: 0 * inf, 0 * NaN), as PyTorch's mask does; where
                    // it is already 0 the product stays, so it differentiates again.
                    let e = sub(b, &Tensor::scalar_of(1.0, b.dtype()))?;
                    let raw = mul(g, &mul(b, &pow(a, &e)?)?)?;
                    let zero_b = super::compare::eq(b, &Tensor::scalar_of(0.0, b.dtype()))?;
                    let undefined = super::compare::logical_and(&zero_b, &super::isnan(&raw)?)?;
                    Some(super::where_(
                        &undefined,
                        &Tensor::scalar_of(0.0, raw.dtype()),
                        &raw,
                    )?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    // g * a^b * log(a), taken as 0 where a == 0 and b >= 0 (PyTorch's convention).
                    let out = c.saved(2)?;
                    let raw = mul(g, &mul(out, &super::unary::log(a)?)?)?;
                    let zero_a = super::compare::eq(a, &Tensor::scalar_of(0.0, a.dtype()))?;
                    let nonneg_b = super::compare::ge(b, &Tensor::scalar_of(0.0, b.dtype()))?;
                    let mask = super::compare::logical_and(&zero_a, &nonneg_b)?;
                    Some(super::where_(
                        &mask,
                        &Tensor::scalar_of(0.0, raw.dtype()),
                        &raw,
                    )?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// Whether `PowBackward1` may take its one-pass forms: nothing records the
/// backward and the gradient and both operands are float32 or float64 of
/// one dtype (the saved result has it too).
fn fuse_pow_grads(g: &Tensor, a: &Tensor, b: &Tensor) -> bool {
    let dt = g.dtype();
    !crate::autograd::is_grad_enabled()
        && matches!(dt, DType::F32 | DType::F64)
        && a.dtype() == dt
        && b.dtype() == dt
}

/// `g * (b * a^(b-1))`, 0 where `b == 0` makes it NaN: the recorded rule's
/// operations in its order (so its values) in one pass, where the rule
/// streams the operands through eight.
fn pow_grad_base(g: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(&broadcast_shapes(&g.shape(), &a.shape())?, &b.shape())?;
    let (vg, va, vb) = (g.view(), a.view(), b.view());
    Ok(crate::dispatch_float!(g.dtype(), T => {
        let (one, zero) = (<T as Element>::one(), <T as Element>::zero());
        let (data, strides) = crate::kernels::elementwise::ternary_kept::<T, T>(
            &vg,
            &va,
            &vb,
            &shape,
            #[inline(always)]
            |g: T, x: T, y: T| {
                let raw = g * (y * powf_exact(x, y - one));
                if y == zero && raw.is_nan() {
                    zero
                } else {
                    raw
                }
            },
        );
        super::layout::laid_out(data, shape.clone(), strides)
    }))
}

/// `g * (out * ln a)`, 0 where `a == 0` and `b >= 0`, in one pass. At
/// `a == 0` the result `out = 0 ** b` is finite exactly when `b >= 0` (0 or
/// 1; inf below 0, NaN for NaN), so the saved result stands in for `b`.
fn pow_grad_exponent(g: &Tensor, a: &Tensor, out: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(&broadcast_shapes(&g.shape(), &a.shape())?, &out.shape())?;
    let (vg, va, vo) = (g.view(), a.view(), out.view());
    Ok(crate::dispatch_float!(g.dtype(), T => {
        let zero = <T as Element>::zero();
        let (data, strides) = crate::kernels::elementwise::ternary_kept::<T, T>(
            &vg,
            &va,
            &vo,
            &shape,
            #[inline(always)]
            |g: T, x: T, o: T| {
                let raw = g * (o * x.ln_fast());
                if x == zero && o.is_finite() {
                    zero
                } else {
                    raw
                }
            },
        );
        super::layout::laid_out(data, shape.clone(), strides)
    }))
}

/// `s ** a` for a Python number `s` (PyTorch's `pow.Scalar`, `PowBackward2`):
/// only the exponent gets a gradient, `g * s**a * log(s)`, taken as 0 where
/// `s == 0` and `a >= 0`.
pub(crate) fn rpow_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    let w = s.wrap(a);
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        pow(&w, a)?
    };
    if needs_record(&[a]) {
        let base = s.to_f64();
        record(
            "PowBackward2",
            &[a],
            &out,
            saved![
                (base == 0.0).then_some(a),
                Some(crate::autograd::SavedTensor::output(&out, 0))
            ],
            move |c| {
                let g = c.grad()?;
                let out = c.saved(1)?;
                let raw = mul(g, &mul_f64(out, base.ln())?)?;
                if base != 0.0 {
                    return Ok(smallvec![Some(raw)]);
                }
                let e = c.saved(0)?;
                let nonneg = super::compare::ge(e, &Tensor::scalar_of(0.0, e.dtype()))?;
                Ok(smallvec![Some(super::where_(
                    &nonneg,
                    &Tensor::scalar_of(0.0, raw.dtype()),
                    &raw,
                )?)])
            },
        );
    }
    Ok(out)
}

/// Elementwise `where(cond, x, y)`; gradients flow to the chosen side.
pub(crate) fn where_(cond: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    where_named("WhereBackward0", cond, x, y)
}

/// `where_` recorded under the name of the op it implements (`masked_fill`).
pub(crate) fn where_named(
    name: &'static str,
    cond: &Tensor,
    x: &Tensor,
    y: &Tensor,
) -> Result<Tensor> {
    where_laid(name, cond, x, y, &[0, 1, 2], false)
}

/// `where_named` whose result is laid out after the operands listed in
/// `decide` (0 the condition, 1 `x`, 2 `y`; PyTorch's `where` follows them in
/// order), or row-major when `row_major` (PyTorch's `masked_fill` fills a
/// contiguous clone of its input): then computed in the operands' layout
/// and copied through the blocked transpose.
pub(crate) fn where_laid(
    name: &'static str,
    cond: &Tensor,
    x: &Tensor,
    y: &Tensor,
    decide: &[usize],
    row_major: bool,
) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return Err(Error::runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            cond.dtype().scalar_name()
        )));
    }
    let dt = result_type(x, y);
    let shape = broadcast_shapes(&broadcast_shapes(&cond.shape(), &x.shape())?, &y.shape())?;
    let (x2, y2) = (
        super::convert::preserving_format(x, dt),
        super::convert::preserving_format(y, dt),
    );
    let c = super::expand(cond, &shape)?;
    let out = crate::dispatch!(dt, T => {
        let (vx, vy) = (x2.view(), y2.view());
        let vc = c.view();
        match crate::kernels::elementwise::permuted([&vc, &vx, &vy], &shape, decide) {
            Some(([pc, px, py], pshape, strides)) => {
                let picked: Vec<T> = where_kernel::<T>(&pc, &px, &py, &pshape);
                super::layout::laid_out(picked, shape.clone(), strides)
            }
            None => Tensor::from_vec(where_kernel::<T>(&vc, &vx, &vy, &shape), shape.clone()),
        }
    });
    let out = if row_major && !out.is_contiguous() {
        out.contiguous_data()
    } else {
        out
    };
    if needs_record(&[x, y]) {
        record(name, &[x, y], &out, saved![cond], |c| {
            let g = c.grad()?;
            let m = c.saved(0)?;
            let zero = Tensor::scalar_of(0.0, g.dtype());
            let gx = if c.needs(0) {
                Some(where_(m, g, &zero)?)
            } else {
                None
            };
            let gy = if c.needs(1) {
                Some(where_(m, &zero, g)?)
            } else {
                None
            };
            Ok(smallvec![gx, gy])
        });
    }
    Ok(out)
}

fn where_kernel<T: Element>(
    c: &crate::tensor::View,
    x: &crate::tensor::View,
    y: &crate::tensor::View,
    shape: &[usize],
) -> Vec<T> {
    // A contiguous mask of the result's shape and values that are each
    // contiguous in it or one element (`masked_fill`): one pass.
    if c.shape[..] == *shape {
        if let (Some(m), Some(a), Some(b)) = (c.as_slice::<bool>(), side(x, shape), side(y, shape))
        {
            return match (a, b) {
                (Side::All(a), Side::All(b)) => {
                    let (a, b) = (&a[..m.len()], &b[..m.len()]);
                    pick(m, |i| a[i], |i| b[i])
                }
                (Side::One(a), Side::All(b)) => {
                    let b = &b[..m.len()];
                    pick(m, |_| a, |i| b[i])
                }
                (Side::All(a), Side::One(b)) => {
                    let a = &a[..m.len()];
                    pick(m, |i| a[i], |_| b)
                }
                (Side::One(a), Side::One(b)) => pick(m, |_| a, |_| b),
            };
        }
    }
    // Two passes keep this on the shared binary kernel: pick x where true, y elsewhere.
    let cx: Vec<T> = binary::<T, T>(
        x,
        y,
        shape,
        #[inline(always)]
        |a, _| a,
    );
    let cy: Vec<T> = binary::<T, T>(
        x,
        y,
        shape,
        #[inline(always)]
        |_, b| b,
    );
    let mask: Vec<bool> = crate::kernels::copy::gather::<bool>(c);
    mask.iter()
        .zip(cx.iter().zip(cy.iter()))
        .map(|(&m, (&a, &b))| if m { a } else { b })
        .collect()
}

/// A `where` operand read in one pass: every element, or one repeated.
enum Side<'a, T> {
    All(&'a [T]),
    One(T),
}

fn side<'a, T: Element>(v: &'a crate::tensor::View, shape: &[usize]) -> Option<Side<'a, T>> {
    if v.numel() == 1 && v.storage.dtype() == T::DTYPE {
        // SAFETY: the view holds one element of dtype `T`.
        return Some(Side::One(unsafe { *v.ptr::<T>() }));
    }
    if v.shape[..] != *shape {
        return None;
    }
    v.as_slice::<T>().map(Side::All)
}

fn pick<T: Element>(m: &[bool], a: impl Fn(usize) -> T, b: impl Fn(usize) -> T) -> Vec<T> {
    let mut out = crate::error::filled_vec(m.len(), T::zero());
    pick_into(m, a, b, &mut out);
    out
}

/// Both sides read, then one kept: a select (a blend once vectorised), not a
/// branch, which a random mask would mispredict half the time.
#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn pick_into<T: Element, A: Fn(usize) -> T, B: Fn(usize) -> T>(
    m: &[bool],
    a: A,
    b: B,
    out: &mut [T],
) {
    for (i, (o, &c)) in out.iter_mut().zip(m).enumerate() {
        let (x, y) = (a(i), b(i));
        *o = if c { x } else { y };
    }
}

//! Elementwise functions of one tensor; each backward sits under its forward.

use smallvec::smallvec;

use super::{cast_data, mul, mul_f64, neg, with_cast_kept, Scalar};
use crate::autograd::{needs_record, record, SavedTensor};
use crate::error::{Error, Result};
use crate::kernels::elementwise::{binary_kept, map_in_place, unary_kept};
use crate::kernels::vmath as vm;
use crate::saved;
use crate::tensor::{DType, Tensor};

/// Applies a float function (or an integer one where given) to every element,
/// producing `dt`. Integer and bool inputs go through float32 unless `int_f`
/// is given (then through int64, narrowed back to an integer `dt` with
/// wrapping); float16/bfloat16 are computed in float32 and rounded once.
pub(crate) fn map1(
    a: &Tensor,
    dt: DType,
    f32f: impl Fn(f32) -> f32 + Sync,
    f64f: impl Fn(f64) -> f64 + Sync,
    int_f: Option<impl Fn(i64) -> i64 + Sync>,
) -> Result<Tensor> {
    // The kernel lays the result out as the input is (see `kernels::elementwise::permuted`).
    fn typed<T: crate::tensor::Element>(
        (data, strides): (Vec<T>, crate::tensor::Strides),
        v: &crate::tensor::View,
    ) -> Tensor {
        super::layout::laid_out(data, v.shape.clone(), strides)
    }
    // In place (see `apply_inplace_map`): the map is applied to the
    // destination's own memory, which is then the result.
    // The functions are moved in, not passed by reference: a `&F` taken as
    // the kernel's function type left some (`atan`'s `mul_add`s) as calls
    // compiled without the loop's instruction set, 40x slower.
    let direct = match dt {
        DType::F32 | DType::F64 => true,
        DType::I64 => int_f.is_some(),
        _ => false,
    };
    if direct && dt == a.dtype() {
        if let Some(v) = super::inplace::claim_map_target(a) {
            let n = v.numel();
            if n > 0 {
                // SAFETY: the claimed view is the destination's `n` elements
                // of `dt` as one dense run, which nothing else reads or
                // writes while the in-place op runs.
                unsafe {
                    match (dt, int_f) {
                        (DType::F64, _) => {
                            map_in_place(std::slice::from_raw_parts_mut(v.ptr::<f64>(), n), f64f)
                        }
                        (DType::F32, _) => {
                            map_in_place(std::slice::from_raw_parts_mut(v.ptr::<f32>(), n), f32f)
                        }
                        (_, Some(f)) => {
                            map_in_place(std::slice::from_raw_parts_mut(v.ptr::<i64>(), n), f)
                        }
                        _ => {}
                    }
                }
            }
            return Ok(a.clone());
        }
    }
    let out = match (dt, int_f) {
        (DType::F64, _) => {
            with_cast_kept(a, DType::F64, |v| typed(unary_kept::<f64, f64>(v, f64f), v))
        }
        (DType::F32 | DType::F16 | DType::BF16, _) | (_, None) => {
            with_cast_kept(a, DType::F32, |v| typed(unary_kept::<f32, f32>(v, f32f), v))
        }
        (_, Some(f)) => with_cast_kept(a, DType::I64, |v| typed(unary_kept::<i64, i64>(v, f), v)),
    };
    Ok(if dt.is_low_precision() || dt.is_int() {
        super::back_to(out, dt)
    } else {
        out
    })
}

/// `f` mapped over `a`'s own memory when `a` is the destination of the
/// `apply_inplace_map` under way (see `claim_map_target`), of `T`: `a`,
/// now holding the result. None otherwise, with nothing written.
pub(crate) fn map_claimed<T: crate::tensor::Element>(
    a: &Tensor,
    f: impl Fn(T) -> T + Sync,
) -> Option<Tensor> {
    if a.dtype() != T::DTYPE {
        return None;
    }
    let v = super::inplace::claim_map_target(a)?;
    let n = v.numel();
    if n > 0 {
        // SAFETY: the claimed view is the destination's `n` elements of `T`
        // as one dense run, which nothing else reads or writes meanwhile.
        map_in_place(
            unsafe { std::slice::from_raw_parts_mut(v.ptr::<T>(), n) },
            f,
        );
    }
    Some(a.clone())
}

/// `f(a, b, c)` written over `a`'s own memory, as [`map_claimed`] maps it,
/// when `b` and `c` are `T` tensors of `a`'s shape laid out as `a` is (or
/// all contiguous) that record nothing: `x.addcmul_(y, z)`. A `b` or `c` in
/// `a`'s memory must be `a` itself (each element is read before it is
/// written). None otherwise, with nothing written.
pub(crate) fn zip3_claimed<T: crate::tensor::Element>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    f: impl Fn(T, T, T) -> T + Sync,
) -> Option<Tensor> {
    let others = [b, c];
    if !super::inplace::map_target_set()
        || a.dtype() != T::DTYPE
        || needs_record(&others)
        || crate::autograd::forward::any_tangent(&others)
        || !others.iter().all(|o| same_walk(a, o))
    {
        return None;
    }
    let (vb, vc) = (walk_of(b)?, walk_of(c)?);
    let v = super::inplace::claim_map_target(a)?;
    let n = v.numel();
    if n > 0 {
        // SAFETY: the claimed view is the destination's `n` elements of `T`
        // as one dense run; `b` and `c` are `n` elements each in the same
        // order, in other memory or in exactly this one (`same_walk`).
        unsafe {
            let (sb, sc) = (
                std::slice::from_raw_parts(vb.ptr::<T>() as *const T, n),
                std::slice::from_raw_parts(vc.ptr::<T>() as *const T, n),
            );
            crate::kernels::elementwise::update2(
                std::slice::from_raw_parts_mut(v.ptr::<T>(), n),
                sb,
                sc,
                f,
            );
        }
    }
    Some(a.clone())
}

/// `f(a, b)` over `a`'s own memory: [`zip3_claimed`] for two operands, or
/// [`map_claimed`] when `b` is one element (a number), taken as `T` as the
/// out-of-place form converts it.
pub(crate) fn zip_claimed<T: crate::tensor::Element>(
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(T, T) -> T + Sync,
) -> Option<Tensor> {
    if !super::inplace::map_target_set() || a.dtype() != T::DTYPE {
        return None;
    }
    if b.numel() == 1 && b.ndim() <= a.ndim() && b.dtype() != DType::Bool {
        if needs_record(&[b]) || crate::autograd::forward::any_tangent(&[b]) {
            return None;
        }
        let y = cast_data(b, T::DTYPE).to_vec::<T>().first().copied()?;
        // Inlined into the kernel's loop, whose instruction set the `mul_add`s
        // of `f` need (`tools/check_fma_calls.py`).
        return map_claimed::<T>(
            a,
            #[inline(always)]
            move |x| f(x, y),
        );
    }
    zip3_claimed::<T>(
        a,
        b,
        b,
        #[inline(always)]
        move |x, y, _| f(x, y),
    )
}

/// Whether `o` is a tensor of `a`'s dtype, shape and element order in
/// memory: both contiguous, or the same strides over a dense run; in
/// `a`'s memory only as exactly `a`.
fn same_walk(a: &Tensor, o: &Tensor) -> bool {
    let (av, ov) = (a.view(), o.view());
    if ov.dtype() != av.dtype() || ov.shape != av.shape {
        return false;
    }
    if std::sync::Arc::ptr_eq(&av.storage, &ov.storage)
        && (ov.offset != av.offset || ov.strides != av.strides)
    {
        return false;
    }
    (av.is_contiguous() && ov.is_contiguous()) || ov.strides == av.strides
}

/// `t`'s elements as one dense run in memory order (contiguous, or a dense
/// permutation), or None.
fn walk_of(t: &Tensor) -> Option<crate::tensor::View> {
    let v = t.view();
    if v.is_contiguous() {
        return Some(v.clone());
    }
    super::layout::memory_order(t).map(|(flat, ..)| flat.view().clone())
}

const NO_INT: Option<fn(i64) -> i64> = None;

/// A float-valued elementwise function with its own float32 form (a
/// `kernels::vmath` function that vectorises) and float64 form.
macro_rules! float_fn2 {
    ($a:expr, $f32:expr, $f64:expr) => {
        map1($a, $a.dtype().to_float(), $f32, $f64, NO_INT)
    };
}

/// A float-valued elementwise function.
macro_rules! float_fn {
    ($a:expr, |$x:ident| $body:expr) => {
        map1(
            $a,
            $a.dtype().to_float(),
            #[inline(always)]
            |$x: f32| $body,
            #[inline(always)]
            |$x: f64| $body,
            NO_INT,
        )
    };
}

pub fn exp(a: &Tensor) -> Result<Tensor> {
    // float32 uses a vectorisable form; float64 keeps libm's.
    let out = map1(
        a,
        a.dtype().to_float(),
        crate::kernels::math::exp_f32,
        #[inline(always)]
        |x: f64| x.exp(),
        NO_INT,
    )?;
    if needs_record(&[a]) {
        record(
            "ExpBackward0",
            &[a],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            |c| Ok(smallvec![Some(mul(c.grad()?, c.saved(0)?)?)]),
        );
    }
    Ok(out)
}

pub(crate) fn log(a: &Tensor) -> Result<Tensor> {
    let out = float_fn2!(a, vm::log_f32, f64::ln)?;
    if needs_record(&[a]) {
        record("LogBackward0", &[a], &out, saved![a], |c| {
            let (g, x) = (c.grad()?, c.saved(0)?);
            if can_fuse(g, x) {
                return Ok(smallvec![Some(fused_grad(
                    g,
                    x,
                    #[inline(always)]
                    |g, x| g / x,
                    #[inline(always)]
                    |g, x| g / x
                )?)]);
            }
            Ok(smallvec![Some(super::div(g, x)?)])
        });
    }
    Ok(out)
}

/// `sin`/`cos`: float32 through `kernels::trig_f32` (a contiguous input in
/// parallel blocks with its slice form), float64 through libm.
pub(crate) fn trig(
    a: &Tensor,
    slice: fn(&mut [f32], &[f32]),
    each: impl Fn(f32) -> f32 + Sync,
    f64f: impl Fn(f64) -> f64 + Sync,
) -> Result<Tensor> {
    if a.dtype() == DType::F32 {
        // In place (`x.sin_()`, see `apply_inplace_map`).
        if let Some(v) = super::inplace::claim_map_target(a) {
            let n = v.numel();
            if n > 0 {
                // SAFETY: the claimed view is the destination's `n` float32
                // elements as one dense run, which nothing else touches.
                let d = unsafe { std::slice::from_raw_parts_mut(v.ptr::<f32>(), n) };
                crate::kernels::elementwise::slices_in_place(d, slice);
            }
            return Ok(a.clone());
        }
        let v = a.view();
        // A dense permuted input runs over its memory in order, its result laid out as it is.
        let (p, strides) = match crate::kernels::elementwise::permuted([&v], &v.shape, &[0]) {
            Some(([p], _, st)) => (p, st),
            None => (v.clone(), crate::tensor::contiguous_strides(&v.shape)),
        };
        if let Some(src) = p.as_slice::<f32>() {
            let n = src.len();
            let mut out: Vec<f32> = crate::error::filled_vec(n, 0.0);
            let dst = crate::kernels::SendPtr(out.as_mut_ptr());
            crate::kernels::parallel::run(n, |threads| {
                let chunk = n.div_ceil(threads.max(1) * 4).max(crate::kernels::GRAIN);
                crate::kernels::parallel::tasks(n.div_ceil(chunk.max(1)), |c| {
                    let (lo, hi) = (c * chunk, ((c + 1) * chunk).min(n));
                    // SAFETY: each task writes its own range of `out`.
                    let d = unsafe { std::slice::from_raw_parts_mut(dst.get().add(lo), hi - lo) };
                    slice(d, &src[lo..hi]);
                });
            });
            let shape = v.shape.clone();
            return Ok(super::layout::laid_out(out, shape, strides));
        }
    }
    map1(a, a.dtype().to_float(), each, f64f, NO_INT)
}

pub(crate) fn sin(a: &Tensor) -> Result<Tensor> {
    use crate::kernels::trig_f32 as t;
    let out = trig(
        a,
        t::sin_slice,
        t::sin_f32,
        #[inline(always)]
        |x: f64| x.sin(),
    )?;
    if needs_record(&[a]) {
        record("SinBackward0", &[a], &out, saved![a], |c| {
            Ok(smallvec![Some(mul(c.grad()?, &cos(c.saved(0)?)?)?)])
        });
    }
    Ok(out)
}

pub(crate) fn cos(a: &Tensor) -> Result<Tensor> {
    use crate::kernels::trig_f32 as t;
    let out = trig(
        a,
        t::cos_slice,
        t::cos_f32,
        #[inline(always)]
        |x: f64| x.cos(),
    )?;
    if needs_record(&[a]) {
        record("CosBackward0", &[a], &out, saved![a], |c| {
            Ok(smallvec![Some(mul(c.grad()?, &neg(&sin(c.saved(0)?)?)?)?)])
        });
    }
    Ok(out)
}

pub fn tanh(a: &Tensor) -> Result<Tensor> {
    // float32 uses a vectorisable rational form; float64 keeps libm's.
    let out = map1(
        a,
        a.dtype().to_float(),
        crate::kernels::math::tanh_f32,
        #[inline(always)]
        |x: f64| x.tanh(),
        NO_INT,
    )?;
    if needs_record(&[a]) {
        record(
            "TanhBackward0",
            &[a],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            |c| {
                let y = c.saved(0)?;
                let g = c.grad()?;
                if crate::autograd::is_grad_enabled() {
                    // 1 - y^2 in ops, so the rule itself is differentiable.
                    let d = super::rsub_scalar(&mul(y, y)?, Scalar::Int(1))?;
                    return Ok(smallvec![Some(mul(g, &d)?)]);
                }
                Ok(smallvec![Some(fused_tanh_backward(g, y)?)])
            },
        );
    }
    Ok(out)
}

/// `f(g, s)` over the broadcast of a gradient `g` and a saved float tensor
/// `s` in one pass: the backward rules' form when nothing records them
/// (the recorded form would stream the tensors once per op). float16 and
/// bfloat16 compute in float32 and round once.
pub(crate) fn fused_grad(
    g: &Tensor,
    s: &Tensor,
    f32f: impl Fn(f32, f32) -> f32 + Sync,
    f64f: impl Fn(f64, f64) -> f64 + Sync,
) -> Result<Tensor> {
    let dt = s.dtype();
    let shape = crate::tensor::broadcast_shapes(&g.shape(), &s.shape())?;
    if dt == DType::F64 {
        let (g, s) = (cast_data(g, DType::F64), cast_data(s, DType::F64));
        let (vg, vs) = (g.view(), s.view());
        let (out, strides) = binary_kept::<f64, f64>(&vg, &vs, &shape, f64f);
        return Ok(super::layout::laid_out(out, shape.clone(), strides));
    }
    let (g, s) = (cast_data(g, DType::F32), cast_data(s, DType::F32));
    let out = {
        let (vg, vs) = (g.view(), s.view());
        let (out, strides) = binary_kept::<f32, f32>(&vg, &vs, &shape, f32f);
        super::layout::laid_out(out, shape.clone(), strides)
    };
    Ok(super::back_to(out, dt))
}

/// Whether a backward rule may take its one-pass form: nothing records it
/// and the gradient has the saved float tensor's dtype.
pub(crate) fn can_fuse(g: &Tensor, s: &Tensor) -> bool {
    !crate::autograd::is_grad_enabled() && s.dtype().is_float() && g.dtype() == s.dtype()
}

/// 0 where `y <= 0`, else `g` (so a NaN result passes its gradient on, as
/// PyTorch's `threshold_backward` does), in one pass when nothing records it.
fn fused_relu_backward(g: &Tensor, y: &Tensor) -> Result<Tensor> {
    let dt = y.dtype();
    let shape = crate::tensor::broadcast_shapes(&g.shape(), &y.shape())?;
    let (g, y) = (&cast_data(g, dt.compute()), &cast_data(y, dt.compute()));
    Ok(crate::dispatch_float_compute!(dt, T => {
        let (vg, vy) = (g.view(), y.view());
        let zero = <T as crate::tensor::Element>::zero();
        {
            let (data, strides) = binary_kept::<T, T>(&vg, &vy, &shape, #[inline(always)] |g, y| if y <= zero { zero } else { g });
            super::layout::laid_out(data, shape.clone(), strides)
        }
    }))
}

/// `g * (1 - y^2)` in one pass when nothing records it.
fn fused_tanh_backward(g: &Tensor, y: &Tensor) -> Result<Tensor> {
    let dt = y.dtype();
    let shape = crate::tensor::broadcast_shapes(&g.shape(), &y.shape())?;
    let (g, y) = (cast_data(g, dt.compute()), cast_data(y, dt.compute()));
    Ok(crate::dispatch_float_compute!(dt, T => {
        let (vg, vy) = (g.view(), y.view());
        {
            let (data, strides) = binary_kept::<T, T>(&vg, &vy, &shape, #[inline(always)] |g, y| g * (<T as crate::tensor::Element>::one() - y * y));
            super::layout::laid_out(data, shape.clone(), strides)
        }
    }))
}

/// `g * y * (1 - y)` in one pass when nothing records it.
fn fused_sigmoid_backward(g: &Tensor, y: &Tensor) -> Result<Tensor> {
    let dt = y.dtype();
    let shape = crate::tensor::broadcast_shapes(&g.shape(), &y.shape())?;
    let (g, y) = (cast_data(g, dt.compute()), cast_data(y, dt.compute()));
    Ok(crate::dispatch_float_compute!(dt, T => {
        let (vg, vy) = (g.view(), y.view());
        {
            let (data, strides) = binary_kept::<T, T>(&vg, &vy, &shape, #[inline(always)] |g, y| g * (y * (<T as crate::tensor::Element>::one() - y)));
            super::layout::laid_out(data, shape.clone(), strides)
        }
    }))
}

pub(crate) fn sigmoid(a: &Tensor) -> Result<Tensor> {
    let out = map1(
        a,
        a.dtype().to_float(),
        #[inline(always)]
        |x: f32| 1.0 / (1.0 + crate::kernels::math::exp_f32(-x)),
        #[inline(always)]
        |x: f64| 1.0 / (1.0 + (-x).exp()),
        NO_INT,
    )?;
    if needs_record(&[a]) {
        record(
            "SigmoidBackward0",
            &[a],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            |c| {
                let y = c.saved(0)?;
                if !crate::autograd::is_grad_enabled() {
                    return Ok(smallvec![Some(fused_sigmoid_backward(c.grad()?, y)?)]);
                }
                // y * (1 - y)
                let d = mul(y, &super::rsub_scalar(y, Scalar::Int(1))?)?;
                Ok(smallvec![Some(mul(c.grad()?, &d)?)])
            },
        );
    }
    Ok(out)
}

pub(crate) fn relu(a: &Tensor) -> Result<Tensor> {
    if a.dtype() == DType::Bool {
        return Err(Error::runtime("\"relu\" not implemented for 'Bool'"));
    }
    // `x < 0 ? 0 : x`, PyTorch's `clamp_min(x, 0)`: NaN and -0.0 pass
    // through unchanged, and the select still vectorises.
    let out = map1(
        a,
        a.dtype(),
        #[inline(always)]
        |x: f32| if x < 0.0 { 0.0 } else { x },
        #[inline(always)]
        |x: f64| if x < 0.0 { 0.0 } else { x },
        Some(|x: i64| x.max(0)),
    )?;
    if needs_record(&[a]) {
        record(
            "ReluBackward0",
            &[a],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            |c| {
                // relu'(0) = 0, and a NaN result passes the gradient, as in PyTorch.
                let y = c.saved(0)?;
                let g = c.grad()?;
                if !crate::autograd::is_grad_enabled()
                    && y.dtype().is_float()
                    && g.dtype() == y.dtype()
                {
                    return Ok(smallvec![Some(fused_relu_backward(g, y)?)]);
                }
                // A select, not a product: a NaN or infinite gradient is
                // still stopped where the result is 0.
                let zero = Tensor::scalar_of(0.0, y.dtype());
                let off = super::compare::le(y, &zero)?;
                Ok(smallvec![Some(super::where_(
                    &off,
                    &Tensor::scalar_of(0.0, g.dtype()),
                    g
                )?)])
            },
        );
    }
    Ok(out)
}

pub(crate) fn sqrt(a: &Tensor) -> Result<Tensor> {
    let out = float_fn!(a, |x| x.sqrt())?;
    if needs_record(&[a]) {
        record(
            "SqrtBackward0",
            &[a],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            |c| {
                // g / (2 sqrt(x))
                let y = c.saved(0)?;
                Ok(smallvec![Some(super::div(c.grad()?, &mul_f64(y, 2.0)?)?)])
            },
        );
    }
    Ok(out)
}

pub(crate) fn abs(a: &Tensor) -> Result<Tensor> {
    let out = match a.dtype() {
        DType::Bool => a.contiguous_data(),
        dt => map1(
            a,
            dt,
            #[inline(always)]
            |x: f32| x.abs(),
            #[inline(always)]
            |x: f64| x.abs(),
            Some(|x: i64| x.wrapping_abs()),
        )?,
    };
    if needs_record(&[a]) {
        record("AbsBackward0", &[a], &out, saved![a], |c| {
            Ok(smallvec![Some(mul(c.grad()?, &sign(c.saved(0)?)?)?)])
        });
    }
    Ok(out)
}

/// -1, 0 or 1; its gradient is zero everywhere.
/// `(x > 0) - (x < 0)`, as PyTorch computes it: 0 (positive) for both zeros
/// and for NaN.
pub(crate) fn sign(a: &Tensor) -> Result<Tensor> {
    let sgn32 = |x: f32| ((x > 0.0) as i32 - (x < 0.0) as i32) as f32;
    let sgn64 = |x: f64| ((x > 0.0) as i32 - (x < 0.0) as i32) as f64;
    let out = match a.dtype() {
        DType::Bool => a.contiguous_data(),
        dt => map1(a, dt, sgn32, sgn64, Some(|x: i64| x.signum()))?,
    };
    if needs_record(&[a]) {
        // Zeros, not `0 * grad`: PyTorch's gradient is `zeros_like(grad)`,
        // 0 also where the incoming gradient is inf or NaN.
        record("SignBackward0", &[a], &out, saved![], |c| {
            let g = c.grad()?;
            Ok(smallvec![Some(crate::ops::layout::zero_grad_like(g))])
        });
    }
    Ok(out)
}

pub(crate) fn expm1(a: &Tensor) -> Result<Tensor> {
    let out = float_fn2!(
        a,
        vm::expm1_f32,
        #[inline(always)]
        |x: f64| x.exp_m1()
    )?;
    if needs_record(&[a]) {
        record(
            "Expm1Backward0",
            &[a],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            |c| {
                let (g, y) = (c.grad()?, c.saved(0)?);
                if can_fuse(g, y) {
                    let out = fused_grad(
                        g,
                        y,
                        #[inline(always)]
                        |g, y| g * (y + 1.0),
                        #[inline(always)]
                        |g, y| g * (y + 1.0),
                    )?;
                    return Ok(smallvec![Some(out)]);
                }
                let y1 = super::add_scalar(y, Scalar::Int(1))?;
                Ok(smallvec![Some(mul(g, &y1)?)])
            },
        );
    }
    Ok(out)
}

pub(crate) fn log1p(a: &Tensor) -> Result<Tensor> {
    let out = float_fn2!(
        a,
        vm::log1p_f32,
        #[inline(always)]
        |x: f64| x.ln_1p()
    )?;
    if needs_record(&[a]) {
        record("Log1PBackward0", &[a], &out, saved![a], |c| {
            let (g, x) = (c.grad()?, c.saved(0)?);
            if can_fuse(g, x) {
                let out = fused_grad(
                    g,
                    x,
                    #[inline(always)]
                    |g, x| g / (x + 1.0),
                    #[inline(always)]
                    |g, x| g / (x + 1.0),
                )?;
                return Ok(smallvec![Some(out)]);
            }
            let x1 = super::add_scalar(x, Scalar::Int(1))?;
            Ok(smallvec![Some(super::div(g, &x1)?)])
        });
    }
    Ok(out)
}

pub(crate) fn log2(a: &Tensor) -> Result<Tensor> {
    let out = float_fn2!(
        a,
        vm::log2_f32,
        #[inline(always)]
        |x: f64| x.log2()
    )?;
    if needs_record(&[a]) {
        record("Log2Backward0", &[a], &out, saved![a], |c| {
            const LN2: f64 = std::f64::consts::LN_2;
            let (g, x) = (c.grad()?, c.saved(0)?);
            if can_fuse(g, x) {
                let out = fused_grad(
                    g,
                    x,
                    #[inline(always)]
                    |g, x| g / (x * LN2 as f32),
                    #[inline(always)]
                    |g, x| g / (x * LN2),
                )?;
                return Ok(smallvec![Some(out)]);
            }
            let d = mul_f64(x, LN2)?;
            Ok(smallvec![Some(super::div(g, &d)?)])
        });
    }
    Ok(out)
}

pub(crate) fn rsqrt(a: &Tensor) -> Result<Tensor> {
    let out = float_fn!(a, |x| 1.0 / x.sqrt())?;
    if needs_record(&[a]) {
        record(
            "RsqrtBackward0",
            &[a],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            |c| {
                // d/dx x^(-1/2) = -y^3 / 2
                let (g, y) = (c.grad()?, c.saved(0)?);
                if can_fuse(g, y) {
                    let out = fused_grad(
                        g,
                        y,
                        #[inline(always)]
                        |g, y| g * (y * y * y * -0.5),
                        #[inline(always)]
                        |g, y| g * (y * y * y * -0.5),
                    )?;
                    return Ok(smallvec![Some(out)]);
                }
                let d = mul_f64(&mul(&mul(y, y)?, y)?, -0.5)?;
                Ok(smallvec![Some(mul(g, &d)?)])
            },
        );
    }
    Ok(out)
}

pub(crate) fn tan(a: &Tensor) -> Result<Tensor> {
    use crate::kernels::trig_f32 as t;
    let out = trig(
        a,
        t::tan_slice,
        t::tan_f32,
        #[inline(always)]
        |x: f64| x.tan(),
    )?;
    if needs_record(&[a]) {
        record(
            "TanBackward0",
            &[a],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            |c| {
                let (g, y) = (c.grad()?, c.saved(0)?);
                if can_fuse(g, y) {
                    let out = fused_grad(
                        g,
                        y,
                        #[inline(always)]
                        |g, y| g * (y * y + 1.0),
                        #[inline(always)]
                        |g, y| g * (y * y + 1.0),
                    )?;
                    return Ok(smallvec![Some(out)]);
                }
                let d = super::add_scalar(&mul(y, y)?, Scalar::Int(1))?;
                Ok(smallvec![Some(mul(g, &d)?)])
            },
        );
    }
    Ok(out)
}

pub(crate) fn reciprocal(a: &Tensor) -> Result<Tensor> {
    let out = float_fn!(a, |x| 1.0 / x)?;
    if needs_record(&[a]) {
        record(
            "ReciprocalBackward0",
            &[a],
            &out,
            saved![Some(SavedTensor::output(&out, 0))],
            |c| {
                let y = c.saved(0)?;
                Ok(smallvec![Some(neg(&mul(c.grad()?, &mul(y, y)?)?)?)])
            },
        );
    }
    Ok(out)
}

/// `a * a`, keeping integer dtypes as PyTorch does.
pub(crate) fn square(a: &Tensor) -> Result<Tensor> {
    super::pow_scalar(a, Scalar::Int(2))
}

/// The Gauss error function; its derivative is `2/sqrt(pi) * exp(-x^2)`.
pub(crate) fn erf(a: &Tensor) -> Result<Tensor> {
    let out = float_fn2!(
        a,
        vm::erf_f32,
        #[inline(always)]
        |x: f64| libm::erf(x)
    )?;
    if needs_record(&[a]) {
        record("ErfBackward0", &[a], &out, saved![a], |c| {
            const K: f64 = std::f64::consts::FRAC_2_SQRT_PI;
            let (g, x) = (c.grad()?, c.saved(0)?);
            if can_fuse(g, x) {
                let out = fused_grad(
                    g,
                    x,
                    #[inline(always)]
                    |g, x| g * (crate::kernels::math::exp_f32(-(x * x)) * K as f32),
                    #[inline(always)]
                    |g, x| g * ((-(x * x)).exp() * K),
                )?;
                return Ok(smallvec![Some(out)]);
            }
            let e = exp(&neg(&mul(x, x)?)?)?;
            let d = mul_f64(&e, std::f64::consts::FRAC_2_SQRT_PI)?;
            Ok(smallvec![Some(mul(c.grad()?, &d)?)])
        });
    }
    Ok(out)
}

/// A rounding function: integer inputs pass through, the gradient is zero.
/// The functions are closures, so each compiles into the loop (one
/// `vroundps` on AVX), never a call per element.
fn rounding(
    a: &Tensor,
    name: &'static str,
    f32f: impl Fn(f32) -> f32 + Sync,
    f64f: impl Fn(f64) -> f64 + Sync,
) -> Result<Tensor> {
    let out = if a.dtype().is_float() {
        // `a` itself only when the map was written over it in place.
        map1(a, a.dtype(), f32f, f64f, NO_INT)?
    } else {
        let c = a.contiguous_data();
        if c.same(a) {
            super::clone_data(a)
        } else {
            c
        }
    };
    if needs_record(&[a]) {
        // PyTorch's gradient of a rounding is `zeros_like(grad)` (0 also
        // for an inf or NaN incoming gradient): a zeroed block, no pass.
        record(name, &[a], &out, saved![], |c| {
            let g = c.grad()?;
            Ok(smallvec![Some(crate::ops::layout::zero_grad_like(g))])
        });
    }
    Ok(out)
}

pub(crate) fn floor(a: &Tensor) -> Result<Tensor> {
    rounding(
        a,
        "FloorBackward0",
        #[inline(always)]
        |x: f32| x.floor(),
        #[inline(always)]
        |x: f64| x.floor(),
    )
}

pub(crate) fn ceil(a: &Tensor) -> Result<Tensor> {
    rounding(
        a,
        "CeilBackward0",
        #[inline(always)]
        |x: f32| x.ceil(),
        #[inline(always)]
        |x: f64| x.ceil(),
    )
}

pub(crate) fn trunc(a: &Tensor) -> Result<Tensor> {
    rounding(
        a,
        "TruncBackward0",
        #[inline(always)]
        |x: f32| x.trunc(),
        #[inline(always)]
        |x: f64| x.trunc(),
    )
}

/// Rounds half to even, as `torch.round` does; `decimals` scales first.
pub(crate) fn round(a: &Tensor, decimals: i64) -> Result<Tensor> {
    if decimals == 0 {
        return rounding(
            a,
            "RoundBackward0",
            #[inline(always)]
            |x: f32| x.round_ties_even(),
            #[inline(always)]
            |x: f64| x.round_ties_even(),
        );
    }
    if !a.dtype().is_float() {
        return Err(Error::runtime(
            "round_decimals not implemented for integer tensors",
        ));
    }
    let scale = 10f64.powi(decimals.clamp(-308, 308) as i32);
    let scaled = {
        let _g = crate::autograd::GradModeGuard::new(false);
        super::div_scalar(&round(&mul_f64(a, scale)?, 0)?, Scalar::Float(scale))?
    };
    if needs_record(&[a]) {
        record("RoundBackward1", &[a], &scaled, saved![], |c| {
            let g = c.grad()?;
            Ok(smallvec![Some(crate::ops::layout::zero_grad_like(g))])
        });
    }
    Ok(scaled)
}

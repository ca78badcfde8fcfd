//! The static replay's elementwise fast path and its buffer pool (the
//! memory plan of `static_backward.rs`).
//!
//! An op on small tensors spends most of its time outside its arithmetic:
//! dtype promotion, broadcasting checks, a new buffer, a new tensor. On the
//! static path the tape already knows each entry's op (`Desc`), so
//! an elementwise entry whose operands are contiguous, of one float dtype
//! and one shape runs as a plain loop written into a buffer taken from the
//! pool, and its VJP likewise. Each loop computes, element by element, the
//! very expression the op's kernel or node rule computes (same functions,
//! same order of operations), so results stay bit-for-bit those of eager
//! execution. Entries that do not qualify take the general path.
//!
//! The pool holds the tensors of slots that died during this replay and
//! that nothing else references (`Tensor::is_exclusive`): a later result of
//! the same dtype and shape is written into one of them instead of a new
//! allocation. Outputs are never released into it, so tensors returned by a
//! call are never written by a later one.

use smallvec::{smallvec, SmallVec};

use super::{Desc, Ew};
use crate::ops::Scalar;
use crate::tensor::{DType, Element, Float, Shape, Tensor};

/// Dead exclusive tensors, reused for results of the same dtype and shape.
pub(super) struct Pool {
    bufs: Vec<(DType, Shape, Tensor)>,
}

const POOL_MAX: usize = 64;

impl Pool {
    pub(super) fn new() -> Pool {
        Pool {
            bufs: Vec::with_capacity(16),
        }
    }

    #[inline]
    pub(super) fn put(&mut self, t: Tensor) {
        if self.bufs.len() < POOL_MAX && t.is_exclusive() {
            let (dt, shape) = {
                let v = t.view();
                (v.dtype(), v.shape.clone())
            };
            self.bufs.push((dt, shape, t));
        }
    }

    pub(super) fn take(&mut self, dt: DType, shape: &[usize]) -> Tensor {
        for i in (0..self.bufs.len()).rev() {
            let (d, s, _) = &self.bufs[i];
            if *d == dt && s.as_slice() == shape {
                return self.bufs.swap_remove(i).2;
            }
        }
        Tensor::zeros(Shape::from_slice(shape), dt)
    }
}

/// `tanh`, `sin`, `cos` and `log` as `ops::unary` computes them per dtype.
trait Act: Float {
    fn ln_k(self) -> Self;
    fn tanh_k(self) -> Self;
    fn sin_k(self) -> Self;
    fn cos_k(self) -> Self;
}

impl Act for f32 {
    #[inline(always)]
    fn ln_k(self) -> f32 {
        crate::kernels::vmath::log_f32(self)
    }
    #[inline(always)]
    fn tanh_k(self) -> f32 {
        crate::kernels::math::tanh_f32(self)
    }
    #[inline(always)]
    fn sin_k(self) -> f32 {
        crate::kernels::trig_f32::sin_f32(self)
    }
    #[inline(always)]
    fn cos_k(self) -> f32 {
        crate::kernels::trig_f32::cos_f32(self)
    }
}

impl Act for f64 {
    #[inline(always)]
    fn ln_k(self) -> f64 {
        self.ln()
    }
    #[inline(always)]
    fn tanh_k(self) -> f64 {
        self.tanh()
    }
    #[inline(always)]
    fn sin_k(self) -> f64 {
        self.sin()
    }
    #[inline(always)]
    fn cos_k(self) -> f64 {
        self.cos()
    }
}

/// A contiguous tensor's elements of type `T`, and its shape, read under
/// one lock of its view.
#[inline]
fn opnd<T: Element>(t: &Tensor) -> Option<(&[T], Shape)> {
    let v = t.view();
    let s = v.as_slice::<T>()?;
    // SAFETY: the slice points into the storage, which `t` keeps alive and
    // which does not move; the guard only protects the view's metadata.
    Some((
        unsafe { std::slice::from_raw_parts(s.as_ptr(), s.len()) },
        v.shape.clone(),
    ))
}

/// [`opnd`] for an operand that must have `shape`.
#[inline]
fn elems_like<'t, T: Element>(t: &'t Tensor, shape: &[usize]) -> Option<&'t [T]> {
    let v = t.view();
    if v.shape.as_slice() != shape {
        return None;
    }
    let s = v.as_slice::<T>()?;
    // SAFETY: as in `opnd`.
    Some(unsafe { std::slice::from_raw_parts(s.as_ptr(), s.len()) })
}

/// A fresh (pooled or new) tensor of `shape` filled by `f`.
#[inline]
fn fill<T: Element>(pool: &mut Pool, shape: &[usize], f: impl FnOnce(&mut [T])) -> Tensor {
    let t = pool.take(T::DTYPE, shape);
    {
        let v = t.view();
        // SAFETY: `t` is new or was exclusive when pooled: nothing else
        // reads or writes its buffer, which is contiguous from offset 0.
        let out = unsafe { std::slice::from_raw_parts_mut(v.ptr::<T>(), v.numel()) };
        f(out);
    }
    t
}

/// The forward of an elementwise entry, or `None` when it must take the
/// general path.
pub(super) fn forward(
    desc: Desc,
    ins: &[&Tensor],
    s: Option<Scalar>,
    pool: &mut Pool,
) -> Option<Tensor> {
    let dt = ins.first()?.dtype();
    match dt {
        DType::F32 => forward_t::<f32>(desc, ins, s, pool),
        DType::F64 => forward_t::<f64>(desc, ins, s, pool),
        _ => None,
    }
}

fn forward_t<T: Act>(
    desc: Desc,
    ins: &[&Tensor],
    s: Option<Scalar>,
    pool: &mut Pool,
) -> Option<Tensor> {
    let (xs, shape) = opnd::<T>(ins[0])?;
    match desc {
        Desc::Unary(e) if ins.len() == 1 => {
            let f: fn(T) -> T = match e {
                Ew::Neg => |x: T| -x,
                Ew::Exp => |x: T| x.exp_fast(),
                Ew::Log => |x: T| x.ln_k(),
                Ew::Sin => |x: T| x.sin_k(),
                Ew::Cos => |x: T| x.cos_k(),
                Ew::Tanh => |x: T| x.tanh_k(),
                Ew::Sigmoid => {
                    |x: T| <T as Element>::one() / (<T as Element>::one() + (-x).exp_fast())
                }
                Ew::Relu => |x: T| {
                    if x > <T as Element>::zero() {
                        x
                    } else {
                        <T as Element>::zero()
                    }
                },
                Ew::Sqrt => |x: T| x.sqrt(),
                _ => return None,
            };
            Some(fill::<T>(pool, &shape, |o| {
                for (o, &x) in o.iter_mut().zip(xs) {
                    *o = f(x);
                }
            }))
        }
        Desc::Binary(e) if ins.len() == 2 => {
            let f: fn(T, T) -> T = match e {
                Ew::Add => |x, y| x + y,
                Ew::Sub => |x, y| x - y,
                Ew::Mul => |x, y| x * y,
                Ew::Div => |x, y| x / y,
                _ => return None,
            };
            let ys = elems_like::<T>(ins[1], &shape)?;
            Some(fill::<T>(pool, &shape, |o| {
                for ((o, &x), &y) in o.iter_mut().zip(xs).zip(ys) {
                    *o = f(x, y);
                }
            }))
        }
        Desc::ScalarRhs(e) if ins.len() == 1 => {
            let s = s?;
            // `scalar_op!`'s condition for its one-pass form.
            if s.result_type(T::DTYPE) != T::DTYPE {
                return None;
            }
            let c = T::from_f64(s.to_f64());
            let f: fn(T, T) -> T = match e {
                Ew::Add => |x, c| x + c,
                Ew::Sub => |x, c| x - c,
                Ew::Mul => |x, c| x * c,
                Ew::Div => |x, c| x / c,
                _ => return None,
            };
            Some(fill::<T>(pool, &shape, |o| {
                for (o, &x) in o.iter_mut().zip(xs) {
                    *o = f(x, c);
                }
            }))
        }
        _ => None,
    }
}

/// `prev + g` (the engine's accumulation), written into `prev` when nothing
/// else holds it; `Err(prev)` when the general `ops::add` must run.
pub(super) fn accumulate(prev: Tensor, g: &Tensor, pool: &mut Pool) -> Result<Tensor, Tensor> {
    fn go<T: Float>(prev: Tensor, g: &Tensor, pool: &mut Pool) -> Result<Tensor, Tensor> {
        let Some((xs, shape)) = opnd::<T>(&prev) else {
            return Err(prev);
        };
        let Some(ys) = elems_like::<T>(g, &shape) else {
            return Err(prev);
        };
        if prev.is_exclusive() {
            // SAFETY: exclusive: no other handle reads or writes it; the
            // pointer comes from its view (not from the shared `xs`, which
            // must not be written through), covering its whole buffer.
            let o = unsafe { std::slice::from_raw_parts_mut(prev.view().ptr::<T>(), xs.len()) };
            for (o, &y) in o.iter_mut().zip(ys) {
                *o += y;
            }
            return Ok(prev);
        }
        Ok(fill::<T>(pool, &shape, |o| {
            for ((o, &x), &y) in o.iter_mut().zip(xs).zip(ys) {
                *o = x + y;
            }
        }))
    }
    // A weight's gradient through `linear`'s `w.t()` arrives as the
    // transpose of a contiguous matrix, at every step of an unrolled loop:
    // such gradients are added in the transposed domain, where both are
    // contiguous (each element is still `prev + g`), and the sum is kept as
    // the transpose of a pooled buffer.
    if is_transposed(&prev) && is_transposed(g) && prev.shape() == g.shape() {
        if let (Ok(pt), Ok(gt)) = (crate::ops::t(&prev), crate::ops::t(g)) {
            if let Ok(sum) = accumulate(pt, &gt, pool) {
                if let Ok(t) = crate::ops::t(&sum) {
                    let base = prev.base().cloned();
                    drop(prev);
                    if let Some(b) = base {
                        pool.put(b);
                    }
                    return Ok(t);
                }
            }
        }
        return Err(prev);
    }
    match prev.dtype() {
        DType::F32 => go::<f32>(prev, g, pool),
        DType::F64 => go::<f64>(prev, g, pool),
        _ => Err(prev),
    }
}

/// Whether `t` is a 2-D view laid out as the transpose of a contiguous
/// matrix.
fn is_transposed(t: &Tensor) -> bool {
    let v = t.view();
    v.shape.len() == 2 && v.shape[0] > 1 && v.strides.as_slice() == [1, v.shape[0]]
}

/// The VJP of an elementwise entry recorded as one node named `node`, from
/// the gradient `g` of its output `out`: the gradients for the node's
/// inputs, or `None` when the node's own rule must run.
#[allow(clippy::too_many_arguments)]
pub(super) fn vjp(
    desc: Desc,
    node: &str,
    g: &Tensor,
    ins: &[Option<&Tensor>],
    out: Option<&Tensor>,
    s: Option<Scalar>,
    needs: &[bool],
    pool: &mut Pool,
) -> Option<SmallVec<[Option<Tensor>; 2]>> {
    match g.dtype() {
        DType::F32 => vjp_t::<f32>(desc, node, g, ins, out, s, needs, pool),
        DType::F64 => vjp_t::<f64>(desc, node, g, ins, out, s, needs, pool),
        _ => None,
    }
}

#[allow(clippy::too_many_arguments)]
fn vjp_t<T: Act>(
    desc: Desc,
    node: &str,
    g: &Tensor,
    ins: &[Option<&Tensor>],
    out: Option<&Tensor>,
    s: Option<Scalar>,
    needs: &[bool],
    pool: &mut Pool,
) -> Option<SmallVec<[Option<Tensor>; 2]>> {
    let (gs, shape) = opnd::<T>(g)?;
    let in0 = || ins.first().copied().flatten();
    let in1 = || ins.get(1).copied().flatten();
    // `g (op) v` elementwise over one saved operand.
    fn with<T: Float>(
        pool: &mut Pool,
        shape: &[usize],
        gs: &[T],
        t: &Tensor,
        f: fn(T, T) -> T,
    ) -> Option<Tensor> {
        let vs = elems_like::<T>(t, shape)?;
        Some(fill::<T>(pool, shape, |o| {
            for ((o, &g), &v) in o.iter_mut().zip(gs).zip(vs) {
                *o = f(g, v);
            }
        }))
    }
    Some(match (desc, node) {
        // ExpBackward0: mul(g, y).
        (Desc::Unary(Ew::Exp), "ExpBackward0") => {
            smallvec![Some(with(pool, &shape, gs, out?, |g, y| g * y)?)]
        }
        // LogBackward0: div(g, x).
        (Desc::Unary(Ew::Log), "LogBackward0") => {
            smallvec![Some(with(pool, &shape, gs, in0()?, |g, x| g / x)?)]
        }
        // SinBackward0: mul(g, cos(x)).
        (Desc::Unary(Ew::Sin), "SinBackward0") => {
            smallvec![Some(with(pool, &shape, gs, in0()?, |g, x| g * x.cos_k())?)]
        }
        // CosBackward0: mul(g, neg(sin(x))).
        (Desc::Unary(Ew::Cos), "CosBackward0") => {
            smallvec![Some(
                with(pool, &shape, gs, in0()?, |g, x| g * -(x.sin_k()))?
            )]
        }
        // TanhBackward0 without a graph: g * (1 - y * y).
        (Desc::Unary(Ew::Tanh), "TanhBackward0") => {
            smallvec![Some(with(pool, &shape, gs, out?, |g, y| g
                * (<T as Element>::one() - y * y))?)]
        }
        // SigmoidBackward0 without a graph: g * (y * (1 - y)).
        (Desc::Unary(Ew::Sigmoid), "SigmoidBackward0") => {
            smallvec![Some(with(pool, &shape, gs, out?, |g, y| g
                * (y * (<T as Element>::one() - y)))?)]
        }
        // ReluBackward0 without a graph: g where y > 0, else 0.
        (Desc::Unary(Ew::Relu), "ReluBackward0") => {
            smallvec![Some(with(pool, &shape, gs, out?, |g, y| {
                if y > <T as Element>::zero() {
                    g
                } else {
                    <T as Element>::zero()
                }
            })?)]
        }
        // SqrtBackward0: div(g, mul(y, 2)).
        (Desc::Unary(Ew::Sqrt), "SqrtBackward0") => {
            smallvec![Some(
                with(pool, &shape, gs, out?, |g, y| g / (y * T::from_f64(2.0)))?
            )]
        }
        // NegBackward0: neg(g).
        (Desc::Unary(Ew::Neg), "NegBackward0") => {
            smallvec![Some(fill::<T>(pool, &shape, |o| {
                o.iter_mut().zip(gs).for_each(|(o, &g)| *o = -g)
            }))]
        }
        // MulBackward0 on two tensors: mul(g, b), mul(g, a).
        (Desc::Binary(Ew::Mul), "MulBackward0") => {
            let ga = if needs[0] {
                Some(with(pool, &shape, gs, in1()?, |g, b| g * b)?)
            } else {
                None
            };
            let gb = if needs[1] {
                Some(with(pool, &shape, gs, in0()?, |g, a| g * a)?)
            } else {
                None
            };
            smallvec![ga, gb]
        }
        // SubBackward0 on two tensors: g, neg(g).
        (Desc::Binary(Ew::Sub), "SubBackward0") => {
            let gb = if needs[1] {
                Some(fill::<T>(pool, &shape, |o| {
                    o.iter_mut().zip(gs).for_each(|(o, &g)| *o = -g)
                }))
            } else {
                None
            };
            smallvec![Some(g.clone()), gb]
        }
        // DivBackward0 on two tensors: div(g, b), neg(div(mul(g, div(a, b)), b)).
        (Desc::Binary(Ew::Div), "DivBackward0") => {
            let b = in1()?;
            let ga = if needs[0] {
                Some(with(pool, &shape, gs, b, |g, b| g / b)?)
            } else {
                None
            };
            let gb = if needs[1] {
                let (xs, ys) = (
                    elems_like::<T>(in0()?, &shape)?,
                    elems_like::<T>(b, &shape)?,
                );
                Some(fill::<T>(pool, &shape, |o| {
                    for (((o, &g), &x), &y) in o.iter_mut().zip(gs).zip(xs).zip(ys) {
                        *o = -((g * (x / y)) / y);
                    }
                }))
            } else {
                None
            };
            smallvec![ga, gb]
        }
        // `scalar_op!`'s rules: mul_scalar(g, s), div_scalar(g, s).
        (Desc::ScalarRhs(Ew::Mul), "MulBackward0") | (Desc::ScalarRhs(Ew::Div), "DivBackward0") => {
            let s = s?;
            if s.result_type(g.dtype()) != g.dtype() {
                return None;
            }
            let c = T::from_f64(s.to_f64());
            let div = matches!(desc, Desc::ScalarRhs(Ew::Div));
            smallvec![
                Some(fill::<T>(pool, &shape, |o| {
                    if div {
                        o.iter_mut().zip(gs).for_each(|(o, &g)| *o = g / c)
                    } else {
                        o.iter_mut().zip(gs).for_each(|(o, &g)| *o = g * c)
                    }
                })),
                None
            ]
        }
        _ => return None,
    })
}

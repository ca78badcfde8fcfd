//! Division that keeps integer dtypes (`remainder`, `fmod`, `floor_divide`),
//! with `heaviside` and `float_power`.

use smallvec::smallvec;

use super::super::arith::map2;
use super::super::{back_to, cast_data, div, floor, mul, neg, result_type, trunc, wide, with_cast};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::elementwise::{binary_kept, permuted};
use crate::kernels::vmath as vm;
use crate::saved;
use crate::tensor::{broadcast_shapes, DType, Tensor, View};

// ----- integer-preserving division ---------------------------------------------------

/// PyTorch raises "ZeroDivisionError" (as a RuntimeError) for an integer
/// division by zero.
fn check_int_divisor(b: &Tensor) -> Result<()> {
    if cast_data(b, DType::I64).to_vec::<i64>().contains(&0) {
        return Err(Error::runtime("ZeroDivisionError"));
    }
    Ok(())
}

/// Applies an integer or a float kernel of `a` and `b` (promoted), refusing
/// bool operands and integer division by zero. float32 takes `f32_fast`
/// (built on [`vm::fmod_f32`], vector code) when every quotient allows it,
/// else `f32f` (C's `fmodf` per element). The kernels are generic, not
/// function pointers, so each compiles into the vectorised loops.
fn divlike(
    a: &Tensor,
    b: &Tensor,
    op: &str,
    int_f: impl Fn(i64, i64) -> i64 + Sync + Copy,
    f32_fast: impl Fn(f32, f32) -> f32 + Sync + Copy,
    f32f: impl Fn(f32, f32) -> f32 + Sync + Copy,
    f64f: impl Fn(f64, f64) -> f64 + Sync + Copy,
) -> Result<Tensor> {
    let dt = result_type(a, b);
    // Integer operands take the result's type first (a Python number wraps
    // into int8 as PyTorch converts it), then compute in int64.
    let (a, b) = if dt.is_int() {
        (cast_data(a, dt), cast_data(b, dt))
    } else {
        (a.clone(), b.clone())
    };
    let (a, b) = (&a, &b);
    let cdt = wide(dt);
    Ok(back_to(
        match cdt {
            DType::I64 => {
                check_int_divisor(b)?;
                map2!(a, b, cdt, i64, |x, y| int_f(x, y))
            }
            DType::F32 if fmod_in_one_step(a, b)? => map2!(a, b, cdt, f32, |x, y| f32_fast(x, y)),
            DType::F32 => map2!(a, b, cdt, f32, |x, y| f32f(x, y)),
            DType::F64 => map2!(a, b, cdt, f64, |x, y| f64f(x, y)),
            _ => {
                return Err(Error::runtime(format!(
                    "\"{op}_cpu\" not implemented for 'Bool'"
                )))
            }
        },
        dt,
    ))
}

/// Whether [`vm::fmod_f32`] is exact for every pair of `a` and `b` (as
/// float32, broadcast): one cheap pass that saves a C call per element.
fn fmod_in_one_step(a: &Tensor, b: &Tensor) -> Result<bool> {
    with_cast(a, DType::F32, |va| {
        with_cast(b, DType::F32, |vb| {
            let shape = broadcast_shapes(&va.shape, &vb.shape)?;
            // Only whether any pair is hard matters, not where: operands
            // dense in the result's order (a transpose of both included)
            // are read as flat slices, one operand of one element broadcast.
            let (pa, pb) = match permuted([va, vb], &shape, &[0, 1]) {
                Some(([pa, pb], _, _)) => (pa, pb),
                None => (va.clone(), vb.clone()),
            };
            let n: usize = shape.iter().product();
            fn dense(v: &View, n: usize) -> Option<&[f32]> {
                v.as_slice::<f32>().filter(|s| s.len() == n || s.len() == 1)
            }
            if let (Some(sa), Some(sb)) = (dense(&pa, n), dense(&pb, n)) {
                let mut hard = false;
                if sa.len() == n {
                    vm::any_pair(sa, sb, &mut hard, &vm::fmod_needs_libm);
                } else {
                    let flipped = |y: f32, x: f32| vm::fmod_needs_libm(x, y);
                    vm::any_pair(sb, sa, &mut hard, &flipped);
                }
                return Ok(!hard);
            }
            let (hard, _) = binary_kept::<f32, bool>(va, vb, &shape, vm::fmod_needs_libm);
            Ok(!hard.contains(&true))
        })
    })
}

/// C's `fmod` through `%` (a C library call per element).
#[inline(always)]
fn rem32(x: f32, y: f32) -> f32 {
    x % y
}

#[inline(always)]
fn rem64(x: f64, y: f64) -> f64 {
    x % y
}

/// Python's float `%` from C's `fmod` (`$fmod`).
macro_rules! float_rem {
    ($x:expr, $y:expr, $fmod:path) => {{
        let (x, y) = ($x, $y);
        let r = $fmod(x, y);
        if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
            r + y
        } else {
            r
        }
    }};
}

/// Python's float floor division (`float.__floordiv__`'s algorithm), which
/// PyTorch's `div(rounding_mode='floor')` follows.
macro_rules! float_floordiv {
    ($x:expr, $y:expr, $fmod:path) => {{
        let (x, y) = ($x, $y);
        if y == 0.0 {
            x / y
        } else {
            let m = $fmod(x, y);
            let mut d = (x - m) / y;
            if m != 0.0 && ((y < 0.0) != (m < 0.0)) {
                d -= 1.0;
            }
            if d != 0.0 {
                let f = d.floor();
                if d - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            } else {
                (x / y) * 0.0
            }
        }
    }};
}

/// Python's `%`: the result has the divisor's sign. The gradient w.r.t. the
/// divisor is `-grad * floor(a / b)`.
pub(crate) fn remainder(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = divlike(
        a,
        b,
        "remainder",
        #[inline(always)]
        |x, y| {
            let r = x.wrapping_rem(y);
            if r != 0 && ((r < 0) != (y < 0)) {
                r + y
            } else {
                r
            }
        },
        #[inline(always)]
        |x, y| float_rem!(x, y, vm::fmod_f32),
        #[inline(always)]
        |x, y| float_rem!(x, y, rem32),
        #[inline(always)]
        |x, y| float_rem!(x, y, rem64),
    )?;
    divlike_record(a, b, &out, "RemainderBackward1", floor);
    Ok(out)
}

/// C's `fmod`: the result has the dividend's sign. The gradient w.r.t. the
/// divisor is `-grad * trunc(a / b)`.
pub(crate) fn fmod(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = divlike(
        a,
        b,
        "fmod",
        #[inline(always)]
        |x, y| x.wrapping_rem(y),
        vm::fmod_f32,
        rem32,
        rem64,
    )?;
    divlike_record(a, b, &out, "FmodBackward1", trunc);
    Ok(out)
}

fn divlike_record(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    name: &'static str,
    round: fn(&Tensor) -> Result<Tensor>,
) {
    if out.dtype().is_float() && needs_record(&[a, b]) {
        let rb = crate::autograd::tracked(b);
        record(
            name,
            &[a, b],
            out,
            saved![rb.then_some(a), rb.then_some(b)],
            move |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) { Some(g.clone()) } else { None };
                let gb = if c.needs(1) {
                    let q = round(&div(c.saved(0)?, c.saved(1)?)?)?;
                    Some(neg(&mul(g, &q)?)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
}

/// Division rounded toward negative infinity, keeping integer dtypes (as
/// `div(rounding_mode='floor')`); not differentiable, as in PyTorch.
pub(crate) fn floor_divide(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    divlike(
        &a.detach(),
        &b.detach(),
        "floor_divide",
        #[inline(always)]
        |x, y| {
            let q = x.wrapping_div(y);
            if x.wrapping_rem(y) != 0 && ((x < 0) != (y < 0)) {
                q - 1
            } else {
                q
            }
        },
        #[inline(always)]
        |x, y| float_floordiv!(x, y, vm::fmod_f32),
        #[inline(always)]
        |x, y| float_floordiv!(x, y, rem32),
        #[inline(always)]
        |x, y| float_floordiv!(x, y, rem64),
    )
}

/// The Heaviside step: 0 below zero, 1 above, `values` at zero (NaN stays
/// NaN). Not differentiable, as in PyTorch.
pub(crate) fn heaviside(a: &Tensor, values: &Tensor) -> Result<Tensor> {
    if a.dtype() != values.dtype() {
        return Err(Error::runtime(
            "heaviside is not yet implemented for tensors with different dtypes.",
        ));
    }
    let out_dt = a.dtype();
    let dt = wide(out_dt);
    let (a, v) = (a.detach(), values.detach());
    Ok(back_to(
        match dt {
            DType::Bool => map2!(&a, &v, dt, bool, |x, y| if !x { y } else { x }),
            DType::I64 => map2!(&a, &v, dt, i64, |x, y| match x {
                0 => y,
                x if x < 0 => 0,
                _ => 1,
            }),
            // `x == 0 ? v : (x > 0)`, PyTorch's kernel: 0 for a NaN `x`.
            DType::F32 => map2!(&a, &v, dt, f32, |x, y| if x == 0.0 {
                y
            } else if x > 0.0 {
                1.0
            } else {
                0.0
            }),
            DType::F64 => map2!(&a, &v, dt, f64, |x, y| if x == 0.0 {
                y
            } else if x > 0.0 {
                1.0
            } else {
                0.0
            }),
            other => unreachable!("wide() gave {other}"),
        },
        out_dt,
    ))
}

/// `pow` computed in float64 (both operands converted first, as PyTorch's
/// composite does, so the graph is `ToCopyBackward0` then `PowBackward1`).
pub(crate) fn float_power(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let a = super::super::to_dtype(a, DType::F64)?;
    let b = super::super::to_dtype(b, DType::F64)?;
    super::super::pow(&a, &b)
}

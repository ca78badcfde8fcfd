//! Elementwise math functions beyond the basic ones in `unary.rs`/`arith.rs`:
//! inverse trigonometric and hyperbolic functions, `log10`/`exp2`, the special
//! functions (`erfc`, `erfinv`, `lgamma`, `digamma`, `polygamma`), and the
//! binary ones (`atan2`, `hypot`, `logaddexp`, `xlogy`, `remainder`, `fmod`,
//! `fmax`, ...). Each backward sits under its forward, written in recorded
//! ops so that every order differentiates.
//!
//! One submodule per family: `trig` (trigonometric and hyperbolic),
//! `special` (exponentials, logarithms and special functions), `sign` (sign
//! and fractional parts), `binary`, `division` (integer-preserving division)
//! and `aliases`; this module holds the helpers they share.

use smallvec::smallvec;

use super::{add_scalar, mul, neg, Scalar};
use crate::autograd::{needs_record, record, SavedTensor};
use crate::error::Result;
use crate::saved;
use crate::tensor::Tensor;

const NO_INT: Option<fn(i64) -> i64> = None;

/// A float-valued function of one tensor (integers and bools promote).
macro_rules! ffn {
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

/// A float-valued function of two broadcast tensors (integers promote).
macro_rules! fbin {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {{
        let (a, b): (&Tensor, &Tensor) = ($a, $b);
        let dt = result_type(a, b).to_float();
        if dt == DType::F64 {
            map2!(a, b, DType::F64, f64, |$x, $y| $body)
        } else {
            // float16/bfloat16 in float32, rounded once.
            $crate::ops::back_to(map2!(a, b, DType::F32, f32, |$x, $y| $body), dt)
        }
    }};
}

/// [`fbin`] with separate float32 and float64 bodies.
macro_rules! fbin2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $f32:expr, $f64:expr) => {{
        let (a, b): (&Tensor, &Tensor) = ($a, $b);
        let dt = result_type(a, b).to_float();
        if dt == DType::F64 {
            map2!(a, b, DType::F64, f64, |$x, $y| $f64)
        } else {
            $crate::ops::back_to(map2!(a, b, DType::F32, f32, |$x, $y| $f32), dt)
        }
    }};
}

/// Records `name` for a unary op whose gradient is `grad * d(s)`, `s` the
/// saved input (or the output, when `from_out`).
fn rec1(
    a: &Tensor,
    out: &Tensor,
    name: &'static str,
    from_out: bool,
    d: fn(&Tensor) -> Result<Tensor>,
) {
    if needs_record(&[a]) {
        let s = if from_out {
            SavedTensor::output(out, 0)
        } else {
            SavedTensor::input(a)
        };
        record(name, &[a], out, saved![Some(s)], move |c| {
            Ok(smallvec![Some(mul(c.grad()?, &d(c.saved(0)?)?)?)])
        });
    }
}

/// [`rec1`] with the rule's one-pass forms `g * d(s)` for float32 and
/// float64, used when nothing records the backward.
fn rec1f(
    a: &Tensor,
    out: &Tensor,
    name: &'static str,
    from_out: bool,
    d: fn(&Tensor) -> Result<Tensor>,
    d32: impl Fn(f32) -> f32 + Copy + Send + Sync + 'static,
    d64: impl Fn(f64) -> f64 + Copy + Send + Sync + 'static,
) {
    if needs_record(&[a]) {
        let s = if from_out {
            SavedTensor::output(out, 0)
        } else {
            SavedTensor::input(a)
        };
        record(name, &[a], out, saved![Some(s)], move |c| {
            let (g, s) = (c.grad()?, c.saved(0)?);
            if super::can_fuse(g, s) {
                let r = super::fused_grad(
                    g,
                    s,
                    #[inline(always)]
                    move |g, s| g * d32(s),
                    #[inline(always)]
                    move |g, s| g * d64(s),
                )?;
                return Ok(smallvec![Some(r)]);
            }
            Ok(smallvec![Some(mul(g, &d(s)?)?)])
        });
    }
}

/// A float-valued function of one tensor with its own float32 form.
macro_rules! ffn2 {
    // The float32 function goes in through an inlined closure: a bare function
    // item passed as the kernel can stay an out-of-line call per element (with a
    // software `fma` inside) instead of being vectorised into the loop.
    ($a:expr, $f32:expr, $f64:expr) => {
        map1(
            $a,
            $a.dtype().to_float(),
            #[inline(always)]
            |x: f32| ($f32)(x),
            $f64,
            NO_INT,
        )
    };
}

fn sq(x: &Tensor) -> Result<Tensor> {
    mul(x, x)
}

/// `1 - x^2`.
fn one_minus_sq(x: &Tensor) -> Result<Tensor> {
    add_scalar(&neg(&sq(x)?)?, Scalar::Int(1))
}

fn zero_like_dt(t: &Tensor) -> Tensor {
    Tensor::scalar_of(0.0, t.dtype())
}

mod aliases;
mod binary;
mod division;
mod sign;
mod special;
mod trig;

pub(crate) use aliases::*;
pub(crate) use binary::*;
pub(crate) use division::*;
pub(crate) use sign::*;
pub(crate) use special::*;
pub(crate) use trig::*;

//! Differentiable operations. Each op computes its forward result with a
//! kernel and, when an input requires grad, records its backward rule right
//! next to it. Backward rules are written with these same ops, so running
//! them in grad mode (`create_graph=True`) records the backward pass too and
//! gradients of gradients need no extra code.

mod activation;
mod arith;
pub mod attention;
mod clamp;
mod compare;
mod conv;
mod conv3d;
mod convert;
mod ctc;
mod diagonal;
mod distance;
pub mod dtypes;
mod einsum;
mod embedding;
mod extrema;
mod gather;
mod grid_sample;
mod householder;
mod index;
mod index_put;
pub(crate) mod inplace;
pub(crate) mod layout;
mod lerp_addc;
mod loss;
mod lstsq;
mod margin_loss;
mod mathfns;
mod nll;
mod norm;
pub mod optim;
mod pool;
mod pool3d;
mod products;
mod reduce;
pub mod rnn;
mod scan;
mod shape;
mod shape_ops;
mod softmax;
mod sort;
pub(crate) mod strided;
mod unary;
mod unfold_view;

pub(crate) use activation::*;
pub(crate) use arith::*;
pub(crate) use clamp::*;
pub(crate) use compare::*;
pub(crate) use diagonal::*;
pub(crate) use distance::pdist;
pub(crate) use einsum::*;
pub(crate) use extrema::*;
pub(crate) use gather::*;
pub(crate) use householder::*;
pub(crate) use index::*;
pub(crate) use index_put::{index_put, index_put_};
pub(crate) use inplace::*;
pub(crate) use lerp_addc::*;
pub(crate) use loss::*;
pub(crate) use lstsq::*;
pub(crate) use margin_loss::*;
pub(crate) use mathfns::*;
pub(crate) use nll::*;
pub(crate) use products::*;
pub(crate) use reduce::*;
pub(crate) use scan::*;
pub(crate) use shape::*;
pub(crate) use shape_ops::*;
pub(crate) use unary::*;
pub(crate) use unfold_view::*;

// New layer ops stay public for their criterion benches.
pub use conv::*;
pub use conv3d::conv3d;
pub use ctc::{ctc_backward, ctc_forward};
pub use embedding::*;
pub use grid_sample::{grid_sample_backward, grid_sample_forward};
pub use norm::*;
pub use pool::*;
pub use pool3d::*;
pub use sort::*;

// What benches/kernels.rs measures: the rest of the ops are crate-private, so
// rustc reports any that nothing uses.
pub use arith::{add, mul};
pub use convert::to_dtype;
pub use extrema::amax;
pub use products::{matmul, mm};
pub use reduce::sum;
pub use shape::{clone_data, transpose};
pub use softmax::{log_softmax, softmax};
pub use unary::{exp, tanh};

use crate::tensor::{DType, Element, Tensor, View};

/// A Python number on one side of an arithmetic op.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub(crate) fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// The dtype of `tensor <op> scalar` (PyTorch: a Python number never
    /// widens a tensor within its category, but lifts it to a higher one).
    pub(crate) fn result_type(self, t: DType) -> DType {
        match self {
            Scalar::Bool(_) => t,
            Scalar::Int(_) => {
                if t == DType::Bool {
                    DType::I64
                } else {
                    t
                }
            }
            Scalar::Float(_) => t.to_float(),
        }
    }

    /// A 0-d tensor of the dtype this scalar takes next to `t`.
    pub(crate) fn wrap(self, t: &Tensor) -> Tensor {
        let dt = self.result_type(t.dtype());
        // An integer next to a narrow integer tensor keeps its value as an
        // int64 0-d tensor (the result dtype is the same): comparisons see
        // 300 (`int8_tensor < 300` holds), arithmetic wraps it as PyTorch's.
        if let (Scalar::Int(i), true) = (self, dt.is_int() && t.ndim() > 0) {
            return Tensor::scalar(i);
        }
        self.tensor_of(dt)
    }

    /// Like [`wrap`](Self::wrap), but next to a float16/bfloat16 tensor the
    /// number stays a float32 (PyTorch's `*` and `/` compute with the
    /// number unrounded, in the kernel's float32 "opmath" type); the result
    /// dtype is unchanged, a 0-d operand being of the same category.
    pub(crate) fn wrap_opmath(self, t: &Tensor) -> Tensor {
        let dt = self.result_type(t.dtype());
        // (A 0-d `t` would be promoted by a float32 0-d operand.)
        if dt.is_low_precision() && t.ndim() > 0 {
            self.tensor_of(DType::F32)
        } else {
            self.wrap(t)
        }
    }

    /// A 0-d tensor of `dt` holding this number, an integer converted as an
    /// int64 tensor's `.to(dt)` would (exactly, wrapping into narrower types).
    pub(crate) fn tensor_of(self, dt: DType) -> Tensor {
        match self {
            Scalar::Int(i) => {
                crate::dispatch!(dt, T => Tensor::scalar(<T as Element>::from_i64(i)))
            }
            _ => Tensor::scalar_of(self.to_f64(), dt),
        }
    }
}

/// The dtype a kernel written for bool/int64/float32/float64 computes `dt`
/// in: float16/bfloat16 in float32 (rounded once on the way out, as
/// PyTorch's CPU kernels do), the narrow integers in int64 (narrowed back
/// with wrapping, which gives the same values as computing natively: Python
/// numbers keep their value until the result wraps, as in PyTorch).
#[inline]
pub(crate) fn wide(dt: DType) -> DType {
    match dt {
        DType::F16 | DType::BF16 => DType::F32,
        DType::U8 | DType::I8 | DType::I16 | DType::I32 => DType::I64,
        d => d,
    }
}

/// A result computed in [`wide`]`(dt)` brought back to `dt` (a no-op when it
/// already is).
#[inline]
pub(crate) fn back_to(out: Tensor, dt: DType) -> Tensor {
    if out.dtype() == dt {
        out
    } else {
        // A result laid out after its operands keeps that layout.
        convert::preserving_format(&out, dt)
    }
}

/// Like [`crate::dispatch!`], but float16/bfloat16 run the body with `$T`
/// = f32 and `$dt` rebound to float32; the body's tensor is then rounded
/// once to the low-precision dtype. The other dtypes run natively.
#[macro_export]
macro_rules! dispatch_compute {
    ($dt:ident, $T:ident => $body:expr) => {
        match $dt {
            $crate::tensor::DType::F16 | $crate::tensor::DType::BF16 => {
                let orig = $dt;
                let out: $crate::tensor::Tensor = {
                    #[allow(unused_variables)]
                    let $dt = $crate::tensor::DType::F32;
                    type $T = f32;
                    $body
                };
                $crate::ops::back_to(out, orig)
            }
            _ => $crate::dispatch_native!($dt, $T => $body),
        }
    };
}

/// [`crate::dispatch_float!`] that also takes float16/bfloat16, computed as
/// [`crate::dispatch_compute!`] computes them (the body must read its
/// operands through `with_cast`/`cast_data` to `$dt`, and give a tensor).
#[macro_export]
macro_rules! dispatch_float_compute {
    ($dt:ident, $T:ident => $body:expr) => {
        match $dt {
            $crate::tensor::DType::F16 | $crate::tensor::DType::BF16 => {
                let orig = $dt;
                let out: $crate::tensor::Tensor = {
                    #[allow(unused_variables)]
                    let $dt = $crate::tensor::DType::F32;
                    type $T = f32;
                    $body
                };
                $crate::ops::back_to(out, orig)
            }
            _ => $crate::dispatch_float!($dt, $T => $body),
        }
    };
    // A dtype given as an expression: the body reads its operands in `$T`
    // (through [`compute_contig`]) without naming the dtype.
    ($dt:expr, $T:ident => $body:expr) => {{
        let orig: $crate::tensor::DType = $dt;
        match orig {
            $crate::tensor::DType::F16 | $crate::tensor::DType::BF16 => {
                type $T = f32;
                let out: $crate::tensor::Tensor = $body;
                $crate::ops::back_to(out, orig)
            }
            _ => $crate::dispatch_float!(orig, $T => $body),
        }
    }};
}

/// `t` laid out contiguously in its compute dtype (float32 for
/// float16/bfloat16, [`DType::compute`]): what a float kernel reads.
pub(crate) fn compute_contig(t: &Tensor) -> Tensor {
    if t.dtype().is_low_precision() {
        cast_data(t, DType::F32)
    } else {
        t.contiguous_data()
    }
}

/// bool < integer < floating point, for promotion and in-place cast checks.
pub(crate) fn category_of(d: DType) -> u8 {
    d.category()
}

/// The dtype of `a <op> b` for tensors: a zero-dimensional operand only
/// matters when it is of a higher category than a dimensioned one.
pub(crate) fn result_type(a: &Tensor, b: &Tensor) -> DType {
    let (da, db) = (a.dtype(), b.dtype());
    if da == db {
        return da;
    }
    let (za, zb) = (a.ndim() == 0, b.ndim() == 0);
    if za == zb {
        return da.promote(db);
    }
    let (dim, zero) = if za { (db, da) } else { (da, db) };
    if category_of(zero) > category_of(dim) {
        zero
    } else {
        dim
    }
}

/// `t` converted to `dtype` without recording (a no-op if it already is).
/// Runs `f` on `t`'s view read as `dtype`: `t`'s own view when it has that
/// dtype (one read lock, no handle cloned: the common case, on every
/// elementwise call), else the view of a converted copy.
#[inline]
pub(crate) fn with_cast<R>(t: &Tensor, dtype: DType, f: impl FnOnce(&View) -> R) -> R {
    {
        let v = t.view();
        if v.dtype() == dtype {
            return f(&v);
        }
    }
    let c = cast_data(t, dtype);
    let v = c.view();
    f(&v)
}

/// [`with_cast`] whose conversion keeps a dense input's layout, for the
/// elementwise kernels (they take any layout and lay their result out after
/// their operands', so a transposed input stays a flat pass).
pub(crate) fn with_cast_kept<R>(t: &Tensor, dtype: DType, f: impl FnOnce(&View) -> R) -> R {
    {
        let v = t.view();
        if v.dtype() == dtype {
            return f(&v);
        }
    }
    let c = convert::preserving_format(t, dtype);
    let v = c.view();
    f(&v)
}

pub(crate) fn cast_data(t: &Tensor, dtype: DType) -> Tensor {
    if t.dtype() == dtype {
        return t.clone();
    }
    let v = t.view();
    let shape = v.shape.clone();
    if let Some(out) = crate::kernels::convert::fast_cast(&v, dtype) {
        return out;
    }
    crate::dispatch!(v.dtype(), S => {
        crate::dispatch!(dtype, D => {
            let out: Vec<D> = crate::kernels::elementwise::unary::<S, D>(&v, crate::kernels::convert::cast::<S, D>);
            Tensor::from_vec(out, shape)
        })
    })
}

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
mod convert;
mod diagonal;
mod einsum;
mod embedding;
mod extrema;
mod gather;
mod index;
pub(crate) mod inplace;
mod linalg;
mod loss;
mod mathfns;
mod nll;
mod norm;
pub mod optim;
mod pool;
mod reduce;
pub mod rnn;
mod shape;
mod shape_ops;
mod sort;
pub(crate) mod strided;
mod unary;
mod unfold_view;

pub(crate) use activation::*;
pub(crate) use arith::*;
pub(crate) use clamp::*;
pub(crate) use compare::*;
pub(crate) use convert::*;
pub(crate) use diagonal::*;
pub(crate) use einsum::*;
pub(crate) use extrema::*;
pub(crate) use gather::*;
pub(crate) use index::*;
pub(crate) use inplace::*;
pub(crate) use linalg::*;
pub(crate) use loss::*;
pub(crate) use mathfns::*;
pub(crate) use nll::*;
pub(crate) use reduce::*;
pub(crate) use shape::*;
pub(crate) use shape_ops::*;
pub(crate) use unary::*;
pub(crate) use unfold_view::*;

// New layer ops stay public for their criterion benches.
pub use conv::*;
pub use embedding::*;
pub use norm::*;
pub use pool::*;
pub use sort::*;

// What benches/kernels.rs measures: the rest of the ops are crate-private, so
// rustc reports any that nothing uses.
pub use activation::{log_softmax, softmax};
pub use arith::{add, mul};
pub use extrema::amax;
pub use linalg::{matmul, mm};
pub use reduce::sum;
pub use shape::transpose;
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
        match (self, dt) {
            (Scalar::Int(i), DType::I64) => Tensor::scalar(i),
            _ => Tensor::scalar_of(self.to_f64(), dt),
        }
    }
}

/// bool < integer < floating point, for promotion and in-place cast checks.
pub(crate) fn category_of(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        DType::I64 => 1,
        DType::F32 | DType::F64 => 2,
    }
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

pub(crate) fn cast_data(t: &Tensor, dtype: DType) -> Tensor {
    if t.dtype() == dtype {
        return t.clone();
    }
    let v = t.view();
    let shape = v.shape.clone();
    crate::dispatch!(v.dtype(), S => {
        crate::dispatch!(dtype, D => {
            let out: Vec<D> = crate::kernels::elementwise::unary::<S, D>(&v, |x| D::from_f64(x.to_f64()));
            Tensor::from_vec(out, shape)
        })
    })
}

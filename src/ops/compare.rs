//! Comparisons and logical ops: bool results, never differentiable.

use super::arith::map2;
use super::{cast_data, result_type};
use crate::error::Result;
use crate::kernels::elementwise::binary;
use crate::tensor::{broadcast_shapes, DType, Tensor};

macro_rules! compare_op {
    ($name:ident, $op:tt) => {
        pub fn $name(a: &Tensor, b: &Tensor) -> Result<Tensor> {
            let dt = result_type(a, b);
            let out_shape = broadcast_shapes(&a.shape(), &b.shape())?;
            let (a, b) = (cast_data(a, dt), cast_data(b, dt));
            let (va, vb) = (a.view(), b.view());
            Ok(crate::dispatch!(dt, T => Tensor::from_vec(
                binary::<T, bool>(&va, &vb, &out_shape, |x: T, y: T| x $op y),
                out_shape.clone(),
            )))
        }
    };
}

compare_op!(eq, ==);
compare_op!(ne, !=);
compare_op!(lt, <);
compare_op!(le, <=);
compare_op!(gt, >);
compare_op!(ge, >=);

pub fn logical_and(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = (to_bool(a), to_bool(b));
    Ok(map2!(&a, &b, DType::Bool, bool, |x, y| x & y))
}

pub fn logical_or(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = (to_bool(a), to_bool(b));
    Ok(map2!(&a, &b, DType::Bool, bool, |x, y| x | y))
}

pub fn logical_not(a: &Tensor) -> Result<Tensor> {
    let a = to_bool(a);
    let v = a.view();
    Ok(Tensor::from_vec(
        crate::kernels::elementwise::unary::<bool, bool>(&v, |x| !x),
        v.shape.clone(),
    ))
}

fn to_bool(t: &Tensor) -> Tensor {
    cast_data(t, DType::Bool)
}

/// Whether every element is nonzero (a 0-d bool tensor).
pub fn all(a: &Tensor) -> Result<Tensor> {
    let v = to_bool(a).to_vec::<bool>();
    Ok(Tensor::scalar(v.iter().all(|&x| x)))
}

/// Whether any element is nonzero (a 0-d bool tensor).
pub fn any(a: &Tensor) -> Result<Tensor> {
    let v = to_bool(a).to_vec::<bool>();
    Ok(Tensor::scalar(v.iter().any(|&x| x)))
}

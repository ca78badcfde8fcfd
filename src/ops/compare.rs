//! Comparisons and logical ops: bool results, never differentiable.

use super::arith::map2;
use super::convert::preserving_format as cast_data;
use super::layout::laid_out;
use super::result_type;
use super::unary::map_claimed;
use crate::error::Result;
use crate::kernels::elementwise::{binary_kept, unary_kept};
use crate::tensor::{broadcast_shapes, DType, Tensor};

macro_rules! compare_op {
    ($name:ident, $op:tt) => {
        pub fn $name(a: &Tensor, b: &Tensor) -> Result<Tensor> {
            if let Some(out) = compare_in_place(
                a,
                b,
                #[inline(always)]
                |x: f32, y: f32| x $op y,
                #[inline(always)]
                |x: f64, y: f64| x $op y,
            ) {
                return Ok(out);
            }
            // Integers compare by value in int64 (`int8_tensor < 300` holds,
            // as in PyTorch); floats in the result dtype, a Python number
            // rounded to it first.
            let dt = match result_type(a, b) {
                d if d.is_int() => DType::I64,
                d => d,
            };
            let out_shape = broadcast_shapes(&a.shape(), &b.shape())?;
            let (a, b) = (cast_data(a, dt), cast_data(b, dt));
            let (va, vb) = (a.view(), b.view());
            Ok(crate::dispatch!(dt, T => {
                let (data, strides) =
                    binary_kept::<T, bool>(&va, &vb, &out_shape, #[inline(always)] |x: T, y: T| x $op y);
                laid_out(data, out_shape.clone(), strides)
            }))
        }
    };
}

/// `x.ge_(y)` and the other in-place comparisons with one number (see
/// `apply_inplace_map`): 1 or 0 written over the destination `a`'s own
/// memory, with no bool result to make and convert. None unless `a` is that
/// destination, a float tensor that the comparison's dtype is.
fn compare_in_place(
    a: &Tensor,
    b: &Tensor,
    f32f: impl Fn(f32, f32) -> bool + Sync,
    f64f: impl Fn(f64, f64) -> bool + Sync,
) -> Option<Tensor> {
    let dt = a.dtype();
    if !matches!(dt, DType::F32 | DType::F64) || b.numel() != 1 || result_type(a, b) != dt {
        return None;
    }
    // The number rounded to the dtype first, as the out-of-place form does.
    let y = cast_data(&cast_data(b, dt), DType::F64)
        .to_vec::<f64>()
        .first()
        .copied()?;
    if dt == DType::F32 {
        let y = y as f32;
        map_claimed::<f32>(
            a,
            #[inline(always)]
            move |x| if f32f(x, y) { 1.0 } else { 0.0 },
        )
    } else {
        map_claimed::<f64>(
            a,
            #[inline(always)]
            move |x| if f64f(x, y) { 1.0 } else { 0.0 },
        )
    }
}

compare_op!(eq, ==);
compare_op!(ne, !=);
compare_op!(lt, <);
compare_op!(le, <=);
compare_op!(gt, >);
compare_op!(ge, >=);

pub(crate) fn logical_and(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = (to_bool(a), to_bool(b));
    Ok(map2!(&a, &b, DType::Bool, bool, |x, y| x & y))
}

pub(crate) fn logical_or(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = (to_bool(a), to_bool(b));
    Ok(map2!(&a, &b, DType::Bool, bool, |x, y| x | y))
}

pub(crate) fn logical_not(a: &Tensor) -> Result<Tensor> {
    let a = to_bool(a);
    let v = a.view();
    let (data, strides) = unary_kept::<bool, bool>(
        &v,
        #[inline(always)]
        |x| !x,
    );
    Ok(laid_out(data, v.shape.clone(), strides))
}

fn to_bool(t: &Tensor) -> Tensor {
    cast_data(t, DType::Bool)
}

/// Whether every element is nonzero (a 0-d bool tensor).
pub(crate) fn all(a: &Tensor) -> Result<Tensor> {
    Ok(Tensor::scalar(nonzero_scan(a, true)))
}

/// Whether any element is nonzero (a 0-d bool tensor).
pub(crate) fn any(a: &Tensor) -> Result<Tensor> {
    Ok(Tensor::scalar(nonzero_scan(a, false)))
}

/// `all` (`want_all`) or `any` of the elements' truth, read where they lie: no
/// bool copy is made, and the order does not matter, so a permuted input is
/// read as its memory.
fn nonzero_scan(a: &Tensor, want_all: bool) -> bool {
    if let Some((flat, _, _)) = super::layout::memory_order(a) {
        return nonzero_scan(&flat, want_all);
    }
    let v = a.view();
    let direct =
        crate::dispatch!(v.dtype(), T => v.as_slice::<T>().map(|d| scan_nonzero(d, want_all)));
    direct.unwrap_or_else(|| {
        let b = to_bool(a).to_vec::<bool>();
        scan_nonzero(&b, want_all)
    })
}

/// The scan of [`nonzero_scan`] over a slice: a lane-wise AND (OR) over each
/// block, which vectorises, and one early-exit branch per block rather than
/// per element. NaN is nonzero and -0.0 is zero, as in PyTorch.
fn scan_nonzero<T: Copy + PartialEq + Default>(data: &[T], want_all: bool) -> bool {
    let zero = T::default();
    for block in data.chunks(1024) {
        if want_all {
            if !block.iter().fold(true, |acc, &x| acc & (x != zero)) {
                return false;
            }
        } else if block.iter().fold(false, |acc, &x| acc | (x != zero)) {
            return true;
        }
    }
    want_all
}

pub(crate) fn logical_xor(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = (to_bool(a), to_bool(b));
    Ok(map2!(&a, &b, DType::Bool, bool, |x, y| x ^ y))
}

/// A bool-valued test of each element; integers and bools are always finite.
/// The tests are generic (each its own function type), not `fn` pointers, so
/// they inline into the vectorised loop: a pointer call per element is ten
/// times slower than comparing a vector of lanes and packing them to bytes.
fn float_test(
    a: &Tensor,
    int_value: bool,
    f32f: impl Fn(f32) -> bool + Sync + Copy,
    f64f: impl Fn(f64) -> bool + Sync + Copy,
) -> Tensor {
    let v = a.view();
    let shape = v.shape.clone();
    let (out, strides) = match v.dtype() {
        DType::F32 => unary_kept::<f32, bool>(&v, f32f),
        DType::F64 => unary_kept::<f64, bool>(&v, f64f),
        DType::F16 => unary_kept::<crate::tensor::f16, bool>(
            &v,
            #[inline(always)]
            |x| f32f(x.to_f32()),
        ),
        DType::BF16 => unary_kept::<crate::tensor::bf16, bool>(
            &v,
            #[inline(always)]
            |x| f32f(x.to_f32()),
        ),
        _ => (
            vec![int_value; v.numel()],
            crate::tensor::contiguous_strides(&shape),
        ),
    };
    laid_out(out, shape, strides)
}

pub(crate) fn isnan(a: &Tensor) -> Result<Tensor> {
    Ok(float_test(a, false, f32::is_nan, f64::is_nan))
}

pub(crate) fn isinf(a: &Tensor) -> Result<Tensor> {
    Ok(float_test(a, false, f32::is_infinite, f64::is_infinite))
}

pub(crate) fn isfinite(a: &Tensor) -> Result<Tensor> {
    Ok(float_test(a, true, f32::is_finite, f64::is_finite))
}

/// `|a - b| <= atol + rtol * |b|`, with equal infinities close and NaNs
/// close to each other only under `equal_nan`.
pub(crate) fn isclose(
    a: &Tensor,
    b: &Tensor,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> Result<Tensor> {
    if a.dtype() != b.dtype() {
        return Err(crate::error::Error::runtime(format!(
            "{} did not match {}",
            a.dtype().scalar_name(),
            b.dtype().scalar_name()
        )));
    }
    if rtol < 0.0 || atol < 0.0 {
        return Err(crate::error::Error::runtime(format!(
            "rtol must be greater than or equal to zero, but got {rtol}; atol must be greater than or equal to zero, but got {atol}"
        )));
    }
    let out_shape = broadcast_shapes(&a.shape(), &b.shape())?;
    let dt = a.dtype();
    let close = move |x: f64, y: f64| {
        if x == y {
            return true;
        }
        if x.is_nan() || y.is_nan() {
            return equal_nan && x.is_nan() && y.is_nan();
        }
        if x.is_infinite() || y.is_infinite() {
            return false;
        }
        (x - y).abs() <= atol + rtol * y.abs()
    };
    let (va, vb) = (a.view(), b.view());
    Ok(crate::dispatch!(dt, T => {
        let (data, strides) = binary_kept::<T, bool>(&va, &vb, &out_shape, #[inline(always)] |x: T, y: T| close(crate::tensor::Element::to_f64(x), crate::tensor::Element::to_f64(y)));
        laid_out(data, out_shape.clone(), strides)
    }))
}

/// Whether every element pair is close (`allclose`).
pub(crate) fn allclose(
    a: &Tensor,
    b: &Tensor,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> Result<bool> {
    Ok(isclose(a, b, rtol, atol, equal_nan)?
        .to_vec::<bool>()
        .iter()
        .all(|&x| x))
}

/// `all`/`any` over chosen dimensions (bool results).
pub(crate) fn all_dims(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    // all(x) == !any(!x), and any is a sum of flags that is positive.
    let n = super::logical_not(a)?;
    let s = super::sum(&n, dims, keepdim)?;
    eq(&s, &Tensor::scalar(0i64))
}

pub(crate) fn any_dims(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    let s = super::sum(&to_bool(a), dims, keepdim)?;
    gt(&s, &Tensor::scalar(0i64))
}

/// Which bitwise op [`bitwise`] applies.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bitwise {
    And,
    Or,
    Xor,
}

/// `a & b`, `a | b`, `a ^ b` on integers (two's complement, in the promoted
/// type) and bools (logical); floats refuse with PyTorch's words.
pub(crate) fn bitwise(a: &Tensor, b: &Tensor, op: Bitwise) -> Result<Tensor> {
    let dt = result_type(a, b);
    let kernel = match op {
        Bitwise::And => "bitwise_and_cpu",
        Bitwise::Or => "bitwise_or_cpu",
        Bitwise::Xor => "bitwise_xor_cpu",
    };
    super::dtypes::Dtypes::Integral.check(kernel, dt)?;
    if dt == DType::Bool {
        return match op {
            Bitwise::And => logical_and(a, b),
            Bitwise::Or => logical_or(a, b),
            Bitwise::Xor => logical_xor(a, b),
        };
    }
    // In the result type (a Python number wraps into it), read in place: a
    // narrow type's bits are the low bits of the int64 result.
    let (a, b) = (cast_data(a, dt), cast_data(b, dt));
    match dt {
        DType::U8 => bitwise_in::<u8>(&a, &b, dt, op),
        DType::I8 => bitwise_in::<i8>(&a, &b, dt, op),
        DType::I16 => bitwise_in::<i16>(&a, &b, dt, op),
        DType::I32 => bitwise_in::<i32>(&a, &b, dt, op),
        _ => bitwise_in::<i64>(&a, &b, DType::I64, op),
    }
}

fn bitwise_in<T>(a: &Tensor, b: &Tensor, dt: DType, op: Bitwise) -> Result<Tensor>
where
    T: crate::tensor::Element
        + std::ops::BitAnd<Output = T>
        + std::ops::BitOr<Output = T>
        + std::ops::BitXor<Output = T>,
{
    Ok(match op {
        Bitwise::And => map2!(a, b, dt, T, |x, y| x & y),
        Bitwise::Or => map2!(a, b, dt, T, |x, y| x | y),
        Bitwise::Xor => map2!(a, b, dt, T, |x, y| x ^ y),
    })
}

pub(crate) fn bitwise_and(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    bitwise(a, b, Bitwise::And)
}

pub(crate) fn bitwise_or(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    bitwise(a, b, Bitwise::Or)
}

pub(crate) fn bitwise_xor(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    bitwise(a, b, Bitwise::Xor)
}

/// `~a`: bitwise not of an integer tensor, logical not of a bool one.
pub(crate) fn bitwise_not(a: &Tensor) -> Result<Tensor> {
    let dt = a.dtype();
    super::dtypes::Dtypes::Integral.check("bitwise_not_cpu", dt)?;
    if dt == DType::Bool {
        return logical_not(a);
    }
    // In place in the input's own type (the low bits of the int64 result).
    let v = a.view();
    fn not<T: crate::tensor::Element + std::ops::Not<Output = T>>(
        v: &crate::tensor::View,
    ) -> Tensor {
        let (data, strides) = unary_kept::<T, T>(
            v,
            #[inline(always)]
            |x| !x,
        );
        laid_out(data, v.shape.clone(), strides)
    }
    Ok(match dt {
        DType::U8 => not::<u8>(&v),
        DType::I8 => not::<i8>(&v),
        DType::I16 => not::<i16>(&v),
        DType::I32 => not::<i32>(&v),
        _ => not::<i64>(&v),
    })
}

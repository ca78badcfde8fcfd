//! The op table: every regular op's Python surface, one line each (see
//! `table.rs` for the syntax and what each line expands to). Adding a unary
//! op is the op in `src/ops/`, one line here, `python tools/gen_stub.py` and
//! test rows. Irregular bindings (overloads, optional arguments, several
//! results) are written by hand in `tensor/` and the topic files.

use pyo3::prelude::*;

use super::convert::{lhs, to_tensor_like};
use super::errors::{product_work, work};
use super::tensor::PyTensor;
use crate::ops;

op_table! {
    // kind     name(arg)          surfaces                                 op                    docstring
    unary       neg()              [method function inplace(neg_)]        = ops::neg,            "Returns a new tensor with the negative of the elements of `input`.";
    unary       exp()              [method function inplace(exp_)]        = ops::exp,            "Returns a new tensor with the exponential of the elements of `input`: e raised to each element.";
    unary       log()              [method function inplace(log_)]        = ops::log,            "Returns a new tensor with the natural logarithm of the elements of `input` (NaN below zero, -inf at zero).";
    unary       sin()              [method function inplace(sin_)]        = ops::sin,            "Returns a new tensor with the sine of the elements of `input` (in radians).";
    unary       cos()              [method function inplace(cos_)]        = ops::cos,            "Returns a new tensor with the cosine of the elements of `input` (in radians).";
    unary       tanh()             [method function inplace(tanh_)]       = ops::tanh,           "Returns a new tensor with the hyperbolic tangent of the elements of `input`.";
    unary       sigmoid()          [method function inplace(sigmoid_)]    = ops::sigmoid,        "Returns a new tensor with the logistic sigmoid 1 / (1 + exp(-x)) of the elements of `input`.";
    unary       relu()             [method function inplace(relu_)]       = ops::relu,           "Returns a new tensor with the rectified linear unit max(x, 0) of the elements of `input`.";
    unary       sqrt()             [method function inplace(sqrt_)]       = ops::sqrt,           "Returns a new tensor with the square root of the elements of `input` (NaN below zero).";
    unary       abs()              [method function inplace(abs_)]        = ops::abs,            "Returns a new tensor with the absolute value of the elements of `input`.";
    unary       sign()             [method function inplace(sign_)]       = ops::sign,           "Returns a new tensor with the sign (-1, 0 or 1) of the elements of `input`.";
    unary       logical_not()      [method function inplace(logical_not_)] = ops::logical_not,    "Returns a new bool tensor that is True where `input` is zero (or False) and False elsewhere.";
    unary       expm1()            [method function inplace(expm1_)]      = ops::expm1,          "Returns a new tensor with exp(x) - 1 of the elements of `input`, accurate for small x.";
    unary       log1p()            [method function inplace(log1p_)]      = ops::log1p,          "Returns a new tensor with log(1 + x) of the elements of `input`, accurate for small x.";
    unary       log2()             [method function inplace(log2_)]       = ops::log2,           "Returns a new tensor with the base-2 logarithm of the elements of `input`.";
    unary       rsqrt()            [method function inplace(rsqrt_)]      = ops::rsqrt,          "Returns a new tensor with the reciprocal of the square root of the elements of `input`.";
    unary       tan()              [method function inplace(tan_)]        = ops::tan,            "Returns a new tensor with the tangent of the elements of `input` (in radians).";
    unary       reciprocal()       [method function inplace(reciprocal_)] = ops::reciprocal,     "Returns a new tensor with 1 / x of the elements of `input` (integers give floats).";
    unary       square()           [method function inplace(square_)]     = ops::square,         "Returns a new tensor with the square of the elements of `input`.";
    unary       erf()              [method function inplace(erf_)]        = ops::erf,            "Returns a new tensor with the Gauss error function of the elements of `input`.";
    unary       floor()            [method function inplace(floor_)]      = ops::floor,          "Returns a new tensor with the largest integer not above each element of `input`; its gradient is zero.";
    unary       ceil()             [method function inplace(ceil_)]       = ops::ceil,           "Returns a new tensor with the smallest integer not below each element of `input`; its gradient is zero.";
    unary       trunc()            [method function inplace(trunc_)]      = ops::trunc,          "Returns a new tensor with the elements of `input` rounded toward zero; its gradient is zero.";
    unary       isnan()            [method function]                      = ops::isnan,          "Returns a new bool tensor that is True where `input` is NaN.";
    unary       isinf()            [method function]                      = ops::isinf,          "Returns a new bool tensor that is True where `input` is positive or negative infinity.";
    unary       isfinite()         [method function]                      = ops::isfinite,       "Returns a new bool tensor that is True where `input` is neither infinite nor NaN.";
    unary       silu()             [function]                             = ops::silu,           "Applies the sigmoid linear unit x * sigmoid(x) to each element of `input`.";
    unary       trace()            [method function]                      = ops::trace,          "Returns the sum of the main diagonal of the 2-D tensor `input`, as a 0-d tensor.";
    unary       clone()            [method function]                      = ops::clone,          "Returns a copy of `input` in new memory; the copy stays in the graph (CloneBackward0).";
    unary       all()              [function]                             = ops::all,            "Returns a 0-d bool tensor that is True when every element of `input` is nonzero.";
    unary       any()              [function]                             = ops::any,            "Returns a 0-d bool tensor that is True when some element of `input` is nonzero.";

    product     matmul(other)      [method function]                      = ops::matmul,         "Matrix product of two tensors, following PyTorch's rules: dot product, matrix-vector, matrix-matrix, or a broadcast batched product.";
    product     mm(other)          [method function]                      = ops::mm,             "Matrix product of the 2-D tensors `input` (n x m) and `other` (m x p), an n x p tensor.";
    binary      mv(vec)            [method function]                      = ops::mv,             "Product of the matrix `input` (n x m) and the vector `vec` (m), a vector of n elements.";
    binary      dot(other)         [method function]                      = ops::dot,            "Dot product of two 1-D tensors of the same length, as a 0-d tensor.";
    product     bmm(other)         [method function]                      = ops::bmm,            "Batched matrix product of the 3-D tensors `input` (b x n x m) and `other` (b x m x p).";
    product     outer(other)       [method function]                      = ops::outer,          "Outer product of the 1-D tensors `input` (n) and `other` (m), an n x m tensor.";
    binary      maximum(other)     [method function]                      = ops::maximum,        "Elementwise maximum of `input` and `other` (broadcast; NaN if either is NaN).";
    binary      minimum(other)     [method function]                      = ops::minimum,        "Elementwise minimum of `input` and `other` (broadcast; NaN if either is NaN).";
    binary_like logical_and(other) [method function]                      = ops::logical_and,    "Elementwise logical AND of `input` and `other` (nonzero is True), a bool tensor.";
    binary_like logical_or(other)  [method function]                      = ops::logical_or,     "Elementwise logical OR of `input` and `other` (nonzero is True), a bool tensor.";
    binary_like logical_xor(other) [method function]                      = ops::logical_xor,    "Elementwise logical XOR of `input` and `other` (nonzero is True), a bool tensor.";
    binary      mul(other)         [function]                             = ops::mul,            "Multiplies `input` by `other` elementwise (broadcast; either may be a number).";
    binary      div(other)         [function]                             = ops::div,            "Divides `input` by `other` elementwise, true division (broadcast; either may be a number).";
    binary      eq(other)          [function]                             = ops::eq,             "Elementwise `input == other`, a bool tensor (broadcast; either may be a number).";
    binary      ne(other)          [function]                             = ops::ne,             "Elementwise `input != other`, a bool tensor (broadcast; either may be a number).";
    binary      lt(other)          [function]                             = ops::lt,             "Elementwise `input < other`, a bool tensor (broadcast; either may be a number).";
    binary      le(other)          [function]                             = ops::le,             "Elementwise `input <= other`, a bool tensor (broadcast; either may be a number).";
    binary      gt(other)          [function]                             = ops::gt,             "Elementwise `input > other`, a bool tensor (broadcast; either may be a number).";
    binary      ge(other)          [function]                             = ops::ge,             "Elementwise `input >= other`, a bool tensor (broadcast; either may be a number).";
}

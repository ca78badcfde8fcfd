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

    // ----- elementwise math functions and PyTorch's aliases (mathops) -----
    unary       acos()             [method function inplace(acos_)]       = ops::acos,          "Returns a new tensor with the arccosine (in radians) of the elements of `input`.";
    unary       arccos()           [method function inplace(arccos_)]     = ops::acos,          "Alias of `acos`: the arccosine (in radians) of the elements of `input`.";
    unary       asin()             [method function inplace(asin_)]       = ops::asin,          "Returns a new tensor with the arcsine (in radians) of the elements of `input`.";
    unary       arcsin()           [method function inplace(arcsin_)]     = ops::asin,          "Alias of `asin`: the arcsine (in radians) of the elements of `input`.";
    unary       atan()             [method function inplace(atan_)]       = ops::atan,          "Returns a new tensor with the arctangent (in radians) of the elements of `input`.";
    unary       arctan()           [method function inplace(arctan_)]     = ops::atan,          "Alias of `atan`: the arctangent (in radians) of the elements of `input`.";
    unary       sinh()             [method function inplace(sinh_)]       = ops::sinh,          "Returns a new tensor with the hyperbolic sine of the elements of `input`.";
    unary       cosh()             [method function inplace(cosh_)]       = ops::cosh,          "Returns a new tensor with the hyperbolic cosine of the elements of `input`.";
    unary       asinh()            [method function inplace(asinh_)]      = ops::asinh,         "Returns a new tensor with the inverse hyperbolic sine of the elements of `input`.";
    unary       arcsinh()          [method function inplace(arcsinh_)]    = ops::asinh,         "Alias of `asinh`: the inverse hyperbolic sine of the elements of `input`.";
    unary       acosh()            [method function inplace(acosh_)]      = ops::acosh,         "Returns a new tensor with the inverse hyperbolic cosine of the elements of `input` (NaN below 1).";
    unary       arccosh()          [method function inplace(arccosh_)]    = ops::acosh,         "Alias of `acosh`: the inverse hyperbolic cosine of the elements of `input`.";
    unary       atanh()            [method function inplace(atanh_)]      = ops::atanh,         "Returns a new tensor with the inverse hyperbolic tangent of the elements of `input` (NaN outside [-1, 1]).";
    unary       arctanh()          [method function inplace(arctanh_)]    = ops::atanh,         "Alias of `atanh`: the inverse hyperbolic tangent of the elements of `input`.";
    unary       log10()            [method function inplace(log10_)]      = ops::log10,         "Returns a new tensor with the base-10 logarithm of the elements of `input`.";
    unary       exp2()             [method function inplace(exp2_)]       = ops::exp2,          "Returns a new tensor with 2 raised to the elements of `input`.";
    unary       erfc()             [method function inplace(erfc_)]       = ops::erfc,          "Returns a new tensor with the complementary error function 1 - erf(x) of the elements of `input`.";
    unary       erfinv()           [method function inplace(erfinv_)]     = ops::erfinv,        "Returns a new tensor with the inverse error function of the elements of `input` (defined on [-1, 1]).";
    unary       lgamma()           [method function inplace(lgamma_)]     = ops::lgamma,        "Returns a new tensor with the natural logarithm of the absolute gamma function of the elements of `input`.";
    unary       digamma()          [method function inplace(digamma_)]    = ops::digamma,       "Returns a new tensor with the digamma function (the derivative of lgamma) of the elements of `input`.";
    unary       deg2rad()          [method function inplace(deg2rad_)]    = ops::deg2rad,       "Returns a new tensor with the elements of `input` converted from degrees to radians.";
    unary       rad2deg()          [method function inplace(rad2deg_)]    = ops::rad2deg,       "Returns a new tensor with the elements of `input` converted from radians to degrees.";
    unary       sinc()             [method function inplace(sinc_)]       = ops::sinc,          "Returns a new tensor with the normalized sinc sin(pi x) / (pi x) of the elements of `input` (1 at 0).";
    unary       frac()             [method function inplace(frac_)]       = ops::frac,          "Returns a new tensor with the fractional part x - trunc(x) of the elements of `input` (floating point only).";
    unary       fix()              [method function inplace(fix_)]        = ops::trunc,         "Alias of `trunc`: the elements of `input` rounded toward zero.";
    unary       sgn()              [method function inplace(sgn_)]        = ops::sgn,           "Returns a new tensor with the sign of the elements of `input` (for real inputs the same as `sign`).";
    unary       signbit()          [method function]                      = ops::signbit,       "Returns a new bool tensor that is True where the sign bit of `input` is set (including -0.0).";
    unary       logit()            [method function inplace(logit_)]      = ops::logit,         "Returns a new tensor with the logit log(x / (1 - x)) of the elements of `input`.";
    unary       negative()         [method function inplace(negative_)]   = ops::neg,           "Alias of `neg`: the negative of the elements of `input`.";
    unary       absolute()         [method function inplace(absolute_)]   = ops::abs,           "Alias of `abs`: the absolute value of the elements of `input`.";
    binary_like atan2(other)       [method function]                      = ops::atan2,         "Elementwise arctangent of `input / other`, choosing the quadrant by both signs (broadcast; either may be a number).";
    binary_like arctan2(other)     [method function]                      = ops::atan2,         "Alias of `atan2`: the elementwise arctangent of `input / other` with the quadrant from both signs.";
    binary_like hypot(other)       [method function]                      = ops::hypot,         "Elementwise sqrt(input^2 + other^2) without undue overflow (broadcast; either may be a number).";
    binary_like logaddexp(other)   [method function]                      = ops::logaddexp,     "Elementwise log(exp(input) + exp(other)), computed without overflow (broadcast).";
    binary_like logaddexp2(other)  [method function]                      = ops::logaddexp2,    "Elementwise log2(2^input + 2^other), computed without overflow (broadcast).";
    binary_like xlogy(other)       [method function]                      = ops::xlogy,         "Elementwise input * log(other), 0 where input is 0 (unless other is NaN).";
    binary_like copysign(other)    [method function]                      = ops::copysign,      "Elementwise magnitude of `input` with the sign of `other` (broadcast; either may be a number).";
    binary_like fmax(other)        [method function]                      = ops::fmax,          "Elementwise maximum of `input` and `other` where a NaN loses to a number (broadcast).";
    binary_like fmin(other)        [method function]                      = ops::fmin,          "Elementwise minimum of `input` and `other` where a NaN loses to a number (broadcast).";
    binary_like remainder(other)   [method function]                      = ops::remainder,     "Elementwise remainder of `input / other` with the sign of `other`, as Python's `%` (integer dtypes kept).";
    binary_like fmod(other)        [method function]                      = ops::fmod,          "Elementwise C-style remainder of `input / other` with the sign of `input` (integer dtypes kept).";
    binary_like floor_divide(other) [method function]                      = ops::floor_divide,  "Elementwise `input / other` rounded toward negative infinity (integer dtypes kept; not differentiable).";
    binary_like heaviside(values)  [method function]                      = ops::heaviside,     "Elementwise Heaviside step of `input`: 0 below zero, 1 above, `values` at zero (same dtypes).";
    binary_like float_power(exponent) [method function]                      = ops::float_power,   "Elementwise `input ** exponent` computed and returned in float64.";
    binary_like divide(other)      [method function]                      = ops::div,           "Alias of `div`: `input / other` elementwise, true division (broadcast).";
    binary_like true_divide(other) [method function]                      = ops::div,           "Alias of `div`: `input / other` elementwise, true division (broadcast).";
    binary_like multiply(other)    [method function]                      = ops::mul,           "Alias of `mul`: `input * other` elementwise (broadcast).";
    binary_like greater(other)     [method function]                      = ops::gt,            "Alias of `gt`: elementwise `input > other`, a bool tensor.";
    binary_like greater_equal(other) [method function]                      = ops::ge,            "Alias of `ge`: elementwise `input >= other`, a bool tensor.";
    binary_like less(other)        [method function]                      = ops::lt,            "Alias of `lt`: elementwise `input < other`, a bool tensor.";
    binary_like less_equal(other)  [method function]                      = ops::le,            "Alias of `le`: elementwise `input <= other`, a bool tensor.";
    binary_like not_equal(other)   [method function]                      = ops::ne,            "Alias of `ne`: elementwise `input != other`, a bool tensor.";
    unary       positive()         [method function]                      = ops::positive,       "Returns `input` itself (the unary `+`; refused for bool tensors).";
    binary_like subtract(other)    [method function]                      = ops::sub,            "Alias of `sub` without `alpha`: `input - other` elementwise (broadcast).";
}

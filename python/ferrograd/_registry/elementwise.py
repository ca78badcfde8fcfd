"""Elementwise ops: unary math, binary arithmetic and math, comparisons and
logical ops. Each declaration is one call; the helpers below fill in what
every member of a kind shares (the table binding, the broadcasting sample,
the node traits of an elementwise rule)."""

from __future__ import annotations

import dataclasses

import numpy as np

from . import _refs
from .schema import (
    ABOVE1,
    ALL,
    AWAY0,
    DIAGONAL,
    ELEMENTWISE_NODE,
    EW,
    EW_INPLACE,
    F_FUNCTION,
    FLOATING_PROMOTES,
    FUNCTION,
    INPLACE,
    INTEGRAL,
    METHOD,
    NUMERIC,
    OPEN01,
    POSITIVE,
    REAL,
    SELF_ADJOINT,
    UNIT,
    Op,
    Sample,
    T,
    away,
    binary,
    ints,
    unary,
)

OPS: list[Op] = []

#: The traits of an elementwise node whose rule keeps a number of the call
#: (a slope, a bound): a compiled replay may pass a new number, so its
#: static VJP would be stale.
EW_WITH_NUMBER = (DIAGONAL, SELF_ADJOINT)


def _u(
    name,
    doc,
    ref,
    node,
    *,
    domain=REAL,
    aliases=(),
    inplace=True,
    fusion=None,
    dtypes=FLOATING_PROMOTES,
    core=None,
    surfaces=None,
    traits=ELEMENTWISE_NODE,
    tol=(1e-5, 1e-6),
    refuse=None,
    sample=None,
):
    """A unary op of the table (``sample``: other than one tensor in ``domain``)."""
    surf = surfaces or (FUNCTION, METHOD, *((INPLACE,) if inplace else ()))
    OPS.append(
        Op(
            name,
            "unary",
            doc,
            surfaces=surf,
            aliases=aliases,
            impl=f"table:unary:{core or 'ops::' + name}",
            signature="(input: Tensor) -> Tensor",
            dtypes=dtypes,
            nodes={node: traits} if node else {},
            differentiable=node is not None,
            forward="rule" if node and SELF_ADJOINT in traits else "derived",
            batching=EW,
            fusion=fusion,
            sample=sample or unary(domain),
            ref=ref,
            tol=tol,
            refuse=refuse or {},
        )
    )


def _b(
    name,
    doc,
    ref,
    nodes,
    *,
    arg="other",
    a=REAL,
    b=REAL,
    aliases=(),
    kind="binary_like",
    fusion=None,
    dtypes=FLOATING_PROMOTES,
    core=None,
    surfaces=(FUNCTION, METHOD),
    table=None,
    tol=(1e-5, 1e-6),
    refuse=None,
    separate=0.0,
    sample=None,
):
    """A binary op of the table: ``nodes`` maps node names to traits."""
    OPS.append(
        Op(
            name,
            "binary",
            doc,
            surfaces=surfaces,
            aliases=aliases,
            table=table,
            impl=f"table:{kind}:{core or 'ops::' + name}",
            signature=f"(input: _TensorLike, {arg}: _TensorLike) -> Tensor",
            dtypes=dtypes,
            nodes=nodes,
            differentiable=bool(nodes),
            forward="rule" if any(SELF_ADJOINT in t for t in nodes.values()) else "derived",
            batching=EW,
            fusion=fusion,
            sample=sample or binary(a, b, separate=separate),
            ref=ref,
            tol=tol,
            refuse=refuse or {},
        )
    )


def _node(name, traits=ELEMENTWISE_NODE):
    return {name: traits}


# ----- unary math ----------------------------------------------------------------------------

#: The steps of floor, ceil, trunc and frac in the default domain [-2, 2].
_INTEGERS = away(-2.0, -1.0, 0.0, 1.0, 2.0)

_u("neg", "Returns a new tensor with the negative of the elements of `input`.", np.negative,
   "NegBackward0", aliases=("negative",), fusion="Neg", dtypes=NUMERIC)
_u("exp", "Returns a new tensor with the exponential of the elements of `input`: e raised to each element.",
   np.exp, "ExpBackward0", fusion="Exp")
_u("log", "Returns a new tensor with the natural logarithm of the elements of `input` (NaN below zero, -inf at zero).",
   np.log, "LogBackward0", domain=POSITIVE, fusion="Log")
_u("sin", "Returns a new tensor with the sine of the elements of `input` (in radians).", np.sin,
   "SinBackward0", fusion="Sin")
_u("cos", "Returns a new tensor with the cosine of the elements of `input` (in radians).", np.cos,
   "CosBackward0", fusion="Cos")
_u("tanh", "Returns a new tensor with the hyperbolic tangent of the elements of `input`.", np.tanh,
   "TanhBackward0", fusion="Tanh",
   surfaces=(FUNCTION, METHOD, INPLACE, F_FUNCTION))
_u("sigmoid", "Returns a new tensor with the logistic sigmoid 1 / (1 + exp(-x)) of the elements of `input`.",
   _refs.sigmoid, "SigmoidBackward0", fusion="Sigmoid",
   surfaces=(FUNCTION, METHOD, INPLACE, F_FUNCTION))
_u("relu", "Returns a new tensor with the rectified linear unit max(x, 0) of the elements of `input`.",
   _refs.relu, "ReluBackward0", domain=AWAY0, fusion="Relu", dtypes=NUMERIC,
   surfaces=(FUNCTION, METHOD, INPLACE, F_FUNCTION))
_u("sqrt", "Returns a new tensor with the square root of the elements of `input` (NaN below zero).",
   np.sqrt, "SqrtBackward0", domain=POSITIVE, fusion="Sqrt")
_u("abs", "Returns a new tensor with the absolute value of the elements of `input`.", np.abs,
   "AbsBackward0", domain=AWAY0, aliases=("absolute",), fusion="Abs", dtypes=NUMERIC)
_u("sign", "Returns a new tensor with the sign (-1, 0 or 1) of the elements of `input`.", np.sign,
   "SignBackward0", domain=AWAY0, dtypes=ALL)
_u("logical_not", "Returns a new bool tensor that is True where `input` is zero (or False) and False elsewhere.",
   np.logical_not, None, dtypes=ALL)
_u("expm1", "Returns a new tensor with exp(x) - 1 of the elements of `input`, accurate for small x.",
   np.expm1, "Expm1Backward0", fusion="Expm1")
_u("log1p", "Returns a new tensor with log(1 + x) of the elements of `input`, accurate for small x.",
   np.log1p, "Log1PBackward0", domain=POSITIVE, fusion="Log1p")
_u("log2", "Returns a new tensor with the base-2 logarithm of the elements of `input`.", np.log2,
   "Log2Backward0", domain=POSITIVE, fusion="Log2")
_u("rsqrt", "Returns a new tensor with the reciprocal of the square root of the elements of `input`.",
   _refs.rsqrt, "RsqrtBackward0", domain=POSITIVE, fusion="Rsqrt")
_u("tan", "Returns a new tensor with the tangent of the elements of `input` (in radians).", np.tan,
   "TanBackward0", domain=UNIT, fusion="Tan")
_u("reciprocal", "Returns a new tensor with 1 / x of the elements of `input` (integers give floats).",
   np.reciprocal, "ReciprocalBackward0", domain=AWAY0, fusion="Reciprocal")
_u("square", "Returns a new tensor with the square of the elements of `input`.", np.square,
   "PowBackward0", fusion="Square", dtypes=NUMERIC)
_u("erf", "Returns a new tensor with the Gauss error function of the elements of `input`.", _refs.erf,
   "ErfBackward0")
_u("floor", "Returns a new tensor with the largest integer not above each element of `input`; its gradient is zero.",
   np.floor, "FloorBackward0", domain=_INTEGERS, dtypes=NUMERIC)
_u("ceil", "Returns a new tensor with the smallest integer not below each element of `input`; its gradient is zero.",
   np.ceil, "CeilBackward0", domain=_INTEGERS, dtypes=NUMERIC)
_u("trunc", "Returns a new tensor with the elements of `input` rounded toward zero; its gradient is zero.",
   np.trunc, "TruncBackward0", domain=_INTEGERS, aliases=("fix",), dtypes=NUMERIC)
_u("isnan", "Returns a new bool tensor that is True where `input` is NaN.", np.isnan, None, inplace=False,
   dtypes=ALL)
_u("isinf", "Returns a new bool tensor that is True where `input` is positive or negative infinity.",
   np.isinf, None, inplace=False, dtypes=ALL)
_u("isfinite", "Returns a new bool tensor that is True where `input` is neither infinite nor NaN.",
   np.isfinite, None, inplace=False, dtypes=ALL)
_u("silu", "Applies the sigmoid linear unit x * sigmoid(x) to each element of `input`.", _refs.silu,
   "SiluBackward0", surfaces=(FUNCTION, F_FUNCTION), fusion="Silu")
_u("acos", "Returns a new tensor with the arccosine (in radians) of the elements of `input`.", np.arccos,
   "AcosBackward0", domain=UNIT, aliases=("arccos",))
_u("asin", "Returns a new tensor with the arcsine (in radians) of the elements of `input`.", np.arcsin,
   "AsinBackward0", domain=UNIT, aliases=("arcsin",))
_u("atan", "Returns a new tensor with the arctangent (in radians) of the elements of `input`.", np.arctan,
   "AtanBackward0", aliases=("arctan",))
_u("sinh", "Returns a new tensor with the hyperbolic sine of the elements of `input`.", np.sinh,
   "SinhBackward0")
_u("cosh", "Returns a new tensor with the hyperbolic cosine of the elements of `input`.", np.cosh,
   "CoshBackward0")
_u("asinh", "Returns a new tensor with the inverse hyperbolic sine of the elements of `input`.", np.arcsinh,
   "AsinhBackward0", aliases=("arcsinh",))
_u("acosh", "Returns a new tensor with the inverse hyperbolic cosine of the elements of `input` (NaN below 1).",
   np.arccosh, "AcoshBackward0", domain=ABOVE1, aliases=("arccosh",))
_u("atanh", "Returns a new tensor with the inverse hyperbolic tangent of the elements of `input` (NaN outside [-1, 1]).",
   np.arctanh, "AtanhBackward0", domain=UNIT, aliases=("arctanh",))
_u("log10", "Returns a new tensor with the base-10 logarithm of the elements of `input`.", np.log10,
   "Log10Backward0", domain=POSITIVE)
_u("exp2", "Returns a new tensor with 2 raised to the elements of `input`.", np.exp2, "Exp2Backward0")
_u("erfc", "Returns a new tensor with the complementary error function 1 - erf(x) of the elements of `input`.",
   _refs.erfc, "ErfcBackward0")
_u("erfinv", "Returns a new tensor with the inverse error function of the elements of `input` (defined on [-1, 1]).",
   _refs.erfinv, "ErfinvBackward0", domain=UNIT, tol=(1e-4, 1e-5))
_u("lgamma", "Returns a new tensor with the natural logarithm of the absolute gamma function of the elements of `input`.",
   _refs.lgamma, "LgammaBackward0", domain=POSITIVE, tol=(1e-4, 1e-5))
_u("digamma", "Returns a new tensor with the digamma function (the derivative of lgamma) of the elements of `input`.",
   _refs.digamma, "DigammaBackward0", domain=POSITIVE, tol=(1e-4, 1e-5))
_u("i0", "Returns a new tensor with the modified Bessel function of the first kind of order 0 of the elements of `input`.",
   np.i0, "I0Backward0", tol=(1e-4, 1e-5))
# ferrograd.special's Bessel and normal-distribution functions: one binding each,
# named as PyTorch's private `special_*` ops, which `ferrograd.special` re-exports.
_u("special_i0e", "The exponentially scaled modified Bessel function exp(-abs(x)) I0(x) of the elements of `input` (`special.i0e`).",
   _refs.i0e, "SpecialI0EBackward0", domain=AWAY0, surfaces=(FUNCTION,), traits=(DIAGONAL, SELF_ADJOINT), tol=(1e-4, 1e-5))
_u("special_i1", "The modified Bessel function of the first kind of order 1 of the elements of `input` (`special.i1`).",
   _refs.i1, "SpecialI1Backward0", surfaces=(FUNCTION,), traits=(DIAGONAL, SELF_ADJOINT), tol=(1e-4, 1e-5))
_u("special_i1e", "The exponentially scaled modified Bessel function exp(-abs(x)) I1(x) of the elements of `input` (`special.i1e`).",
   _refs.i1e, "SpecialI1EBackward0", domain=AWAY0, surfaces=(FUNCTION,), traits=(DIAGONAL, SELF_ADJOINT), tol=(1e-4, 1e-5))
_u("special_ndtri", "The inverse of the standard normal distribution function of the elements of `input` (`special.ndtri`).",
   _refs.ndtri, "SpecialNdtriBackward0", domain=OPEN01, surfaces=(FUNCTION,), tol=(1e-4, 1e-5))
_u("special_erfcx", "The scaled complementary error function exp(x^2) erfc(x) of the elements of `input` (`special.erfcx`).",
   _refs.erfcx, "SpecialErfcxBackward0", surfaces=(FUNCTION,), traits=(DIAGONAL, SELF_ADJOINT), tol=(1e-4, 1e-5))
_u("special_log_ndtr", "The logarithm of the standard normal distribution function of the elements of `input`, without underflow (`special.log_ndtr`).",
   _refs.log_ndtr, "SpecialLogNdtrBackward0", surfaces=(FUNCTION,), traits=(DIAGONAL, SELF_ADJOINT), tol=(1e-4, 1e-5))
_u("deg2rad", "Returns a new tensor with the elements of `input` converted from degrees to radians.",
   _refs.deg2rad, "Deg2RadBackward0")
_u("rad2deg", "Returns a new tensor with the elements of `input` converted from radians to degrees.",
   _refs.rad2deg, "Rad2DegBackward0")
_u("sinc", "Returns a new tensor with the normalized sinc sin(pi x) / (pi x) of the elements of `input` (1 at 0).",
   _refs.sinc, "SincBackward0", domain=AWAY0)
_u("frac", "Returns a new tensor with the fractional part x - trunc(x) of the elements of `input` (floating point only).",
   _refs.frac, "FracBackward0", domain=_INTEGERS)
_u("sgn", "Returns a new tensor with the sign of the elements of `input` (for real inputs the same as `sign`).",
   np.sign, "SgnBackward0", domain=AWAY0, dtypes=ALL)
_u("signbit", "Returns a new bool tensor that is True where the sign bit of `input` is set (including -0.0).",
   np.signbit, None, inplace=False, dtypes=NUMERIC)
_u("logit", "Returns a new tensor with the logit log(x / (1 - x)) of the elements of `input`.", _refs.logit,
   "LogitBackward0", domain=OPEN01)
_u("positive", "Returns `input` itself (the unary `+`; refused for bool tensors).", np.positive, None,
   inplace=False, dtypes=NUMERIC)

# ----- binary arithmetic and math -------------------------------------------------------------

_b("mul", "Multiplies `input` by `other` elementwise (broadcast; either may be a number).", np.multiply,
   {**_node("MulBackward0"), **_node("MulBackward1")},
   surfaces=(FUNCTION, METHOD, INPLACE), table=(FUNCTION,), aliases=(("multiply", (FUNCTION, METHOD)),),
   fusion="Mul", dtypes=ALL)
_b("div", "Divides `input` by `other` elementwise, true division (broadcast; either may be a number).",
   np.true_divide, {**_node("DivBackward0"), **_node("DivBackward1")},
   b=AWAY0, surfaces=(FUNCTION, METHOD, INPLACE), table=(FUNCTION,),
   aliases=(("divide", (FUNCTION, METHOD)), ("true_divide", (FUNCTION, METHOD))), fusion="Div")
_b("maximum", "Elementwise maximum of `input` and `other` (broadcast; NaN if either is NaN).", np.maximum,
   _node("MaximumBackward0", EW_WITH_NUMBER), kind="binary", fusion="Maximum", dtypes=ALL, separate=0.1)
_b("minimum", "Elementwise minimum of `input` and `other` (broadcast; NaN if either is NaN).", np.minimum,
   _node("MinimumBackward0", EW_WITH_NUMBER), kind="binary", fusion="Minimum", dtypes=ALL, separate=0.1)
_b("atan2", "Elementwise arctangent of `input / other`, choosing the quadrant by both signs (broadcast; either may be a number).",
   np.arctan2, _node("Atan2Backward0"), b=POSITIVE, aliases=(("arctan2", (FUNCTION, METHOD)),), surfaces=(FUNCTION, METHOD, INPLACE))
_b("hypot", "Elementwise sqrt(input^2 + other^2) without undue overflow (broadcast; either may be a number).",
   np.hypot, _node("HypotBackward0"), a=AWAY0, b=AWAY0, surfaces=(FUNCTION, METHOD, INPLACE))
_b("logaddexp", "Elementwise log(exp(input) + exp(other)), computed without overflow (broadcast).",
   np.logaddexp, _node("LogaddexpBackward0"), surfaces=(FUNCTION, METHOD, INPLACE))
_b("logaddexp2", "Elementwise log2(2^input + 2^other), computed without overflow (broadcast).",
   _refs.logaddexp2, _node("Logaddexp2Backward0"))
_b("xlogy", "Elementwise input * log(other), 0 where input is 0 (unless other is NaN).", _refs.xlogy,
   _node("XlogyBackward0"), b=POSITIVE, surfaces=(FUNCTION, METHOD, INPLACE))
_b("copysign", "Elementwise magnitude of `input` with the sign of `other` (broadcast; either may be a number).",
   np.copysign, _node("CopysignBackward0"), a=AWAY0, b=AWAY0, surfaces=(FUNCTION, METHOD, INPLACE))
_b("fmax", "Elementwise maximum of `input` and `other` where a NaN loses to a number (broadcast).", np.fmax,
   _node("FmaxBackward0"), dtypes=ALL, separate=0.1)
_b("fmin", "Elementwise minimum of `input` and `other` where a NaN loses to a number (broadcast).", np.fmin,
   _node("FminBackward0"), dtypes=ALL, separate=0.1)
_b("remainder", "Elementwise remainder of `input / other` with the sign of `other`, as Python's `%` (integer dtypes kept).",
   _refs.remainder, _node("RemainderBackward1", EW_WITH_NUMBER), a=OPEN01, b=ABOVE1, dtypes=NUMERIC, surfaces=(FUNCTION, METHOD, INPLACE))
_b("fmod", "Elementwise C-style remainder of `input / other` with the sign of `input` (integer dtypes kept).",
   np.fmod, _node("FmodBackward1", EW_WITH_NUMBER), a=OPEN01, b=ABOVE1, dtypes=NUMERIC, surfaces=(FUNCTION, METHOD, INPLACE))
_b("floor_divide", "Elementwise `input / other` rounded toward negative infinity (integer dtypes kept; not differentiable).",
   _refs.floor_divide, {}, b=POSITIVE, dtypes=NUMERIC, surfaces=(FUNCTION, METHOD, INPLACE))
_b("heaviside", "Elementwise Heaviside step of `input`: 0 below zero, 1 above, `values` at zero (same dtypes).",
   np.heaviside, {}, arg="values", dtypes=NUMERIC)
_b("float_power", "Elementwise `input ** exponent` computed and returned in float64.", _refs.float_power,
   _node("PowBackward1"), arg="exponent", a=POSITIVE, dtypes=NUMERIC, surfaces=(FUNCTION, METHOD, INPLACE))
_b("subtract", "Alias of `sub` without `alpha`: `input - other` elementwise (broadcast).", np.subtract,
   {}, core="ops::sub", dtypes=NUMERIC)
# Bound by hand (`py/mathops.rs`): a number bound and a tensor bound record different
# nodes with different gradient rules, as in PyTorch.
for _name, _ref, _arg, _nodes in (
    ("clamp_min", _refs.clamp_min, "min", ("ClampMinBackward0", "ClampMinBackward1")),
    ("clamp_max", _refs.clamp_max, "max", ("ClampMaxBackward0", "ClampMaxBackward1")),
):
    _which = "max(input, min)" if _arg == "min" else "min(input, max)"
    _b(_name, f"Elementwise `{_which}` with the gradient rule of `clamp(input, {_arg}={_arg})`.",
       _ref, {n: EW_WITH_NUMBER for n in _nodes}, arg=_arg, dtypes=NUMERIC, separate=0.1,
       surfaces=(FUNCTION, METHOD, INPLACE))
    OPS[-1] = dataclasses.replace(OPS[-1], impl="native")

# ----- comparisons and logic ------------------------------------------------------------------

for _name, _ref, _sym, _aliases in (
    ("eq", np.equal, "==", ()),
    ("ne", np.not_equal, "!=", ("not_equal",)),
    ("lt", np.less, "<", ("less",)),
    ("le", np.less_equal, "<=", ("less_equal",)),
    ("gt", np.greater, ">", ("greater",)),
    ("ge", np.greater_equal, ">=", ("greater_equal",)),
):
    _b(_name, f"Elementwise `input {_sym} other`, a bool tensor (broadcast; either may be a number).",
       _ref, {}, surfaces=(FUNCTION, METHOD, INPLACE), table=(FUNCTION,),
       aliases=tuple((a, (FUNCTION, METHOD)) for a in _aliases), dtypes=ALL)
for _name, _ref, _word in (
    ("logical_and", np.logical_and, "AND"),
    ("logical_or", np.logical_or, "OR"),
    ("logical_xor", np.logical_xor, "XOR"),
):
    _b(_name, f"Elementwise logical {_word} of `input` and `other` (nonzero is True), a bool tensor.",
       _ref, {}, dtypes=ALL, surfaces=(FUNCTION, METHOD, INPLACE))

# ----- bitwise ops: integers and bool only, never differentiable ---------------------------

#: Integer operands: floats are refused by these ops, as by PyTorch's.
_INT = T(domain=ints(-8, 8), grad=False, dtype="int64")

_u("bitwise_not", "Elementwise bitwise NOT of an integer tensor, logical NOT of a bool one (`~`); floats are refused.",
   np.invert, None, inplace=False, dtypes=INTEGRAL, sample=Sample("ew", (_INT,)))
for _name, _ref, _sym, _word in (
    ("bitwise_and", np.bitwise_and, "&", "AND"),
    ("bitwise_or", np.bitwise_or, "|", "OR"),
    ("bitwise_xor", np.bitwise_xor, "^", "XOR"),
):
    _b(_name, f"Elementwise bitwise {_word} of integer or bool tensors (`{_sym}`); floats are refused, as in PyTorch.",
       _ref, {}, dtypes=INTEGRAL, sample=Sample("ew", (_INT, _INT)))

# ----- incomplete gamma and Hurwitz zeta: a gradient for the second argument only ---------

for _name, _ref, _node_name, _doc in (
    ("igamma", _refs.igamma, "IgammaBackward0",
     "The regularised lower incomplete gamma function P(input, other) (`special.gammainc`; broadcast)."),
    ("igammac", _refs.igammac, "IgammacBackward0",
     "The regularised upper incomplete gamma function Q(input, other) = 1 - P (`special.gammaincc`; broadcast)."),
    ("special_zeta", _refs.zeta, "SpecialZetaBackward0",
     "The Hurwitz zeta function sum_k (other + k)^-input, elementwise (`special.zeta`; broadcast)."),
):
    _b(_name, _doc, _ref, _node(_node_name, ()), tol=(1e-4, 1e-5),
       surfaces=(FUNCTION,) if _name.startswith("special_") else (FUNCTION, METHOD),
       sample=Sample("ew", (T(domain=ABOVE1, grad=False), T(domain=POSITIVE))))

del _name, _ref, _sym, _aliases, _word, _node_name, _doc
_ = EW_INPLACE  # the batching kind of every in-place form above

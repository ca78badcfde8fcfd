"""Arithmetic with options (``alpha``, scalar operands, conditions, bounds),
bound by hand in ``src/py/tensor/operators.rs`` and ``src/py/functional.rs``:
add, sub, pow, where, clamp, lerp, the fused multiply-adds, rounding,
``nan_to_num``, ``masked_fill`` and dtype conversion."""

from __future__ import annotations

import sys

import numpy as np

from .elementwise import EW_WITH_NUMBER
from .schema import (
    ALL,
    AWAY0,
    DIAGONAL,
    ELEMENTWISE_NODE,
    EW,
    FUNCTION,
    INPLACE,
    METHOD,
    NUMERIC,
    POSITIVE,
    REAL,
    SELF_ADJOINT,
    Domain,
    Op,
    Sample,
    T,
    away,
    binary,
    fixed,
    unary,
)

OPS: list[Op] = []
EWN = ELEMENTWISE_NODE


def _to_named_dtype(fn, x, dtype, **k):
    """Calls ``to`` with the dtype named ``dtype`` in the library of ``x`` (PyTorch's
    ``Tensor.to`` reads a string as a device), for the benchmark's comparison."""
    return fn(x, getattr(sys.modules[type(x).__module__.split(".")[0]], dtype), **k)


def _o(name, doc, ref, nodes, sample, *, surfaces=(FUNCTION, METHOD, INPLACE), dtypes=NUMERIC, **kw):
    OPS.append(
        Op(name, "arith", doc, surfaces=surfaces, dtypes=dtypes, nodes=nodes, batching=EW,
           forward="rule", sample=sample, ref=ref, **kw)
    )


_o("add", "Adds `other`, scaled by `alpha`, to `input` elementwise (broadcast; either may be a number).",
   lambda a, b, alpha=1: a + alpha * b, {"AddBackward0": EWN},
   binary(), fusion="Add", dtypes=ALL)
_o("sub", "Subtracts `other`, scaled by `alpha`, from `input` elementwise (broadcast; either may be a number).",
   lambda a, b, alpha=1: a - alpha * b, {"SubBackward0": EWN, "RsubBackward1": EWN},
   binary(), fusion="Sub")
_o("pow", "Raises `input` to the power `exponent` elementwise (broadcast; either may be a number).",
   np.power, {"PowBackward0": EWN, "PowBackward1": EWN, "PowBackward2": EWN},
   binary(POSITIVE, REAL), fusion="Pow")
_o("where", "Elementwise `input` where `condition` is True, else `other` (all three broadcast).",
   np.where, {"WhereBackward0": EWN},
   Sample("ew", (T(dtype="bool"), T(), T())), surfaces=(FUNCTION, METHOD), dtypes=ALL)
_o("clamp", "Clamps every element of `input` into `[min, max]` (either bound may be None, a number or a tensor).",
   lambda x, min=None, max=None: np.clip(x, min, max),
   {"ClampBackward0": EW_WITH_NUMBER, "ClampBackward1": EW_WITH_NUMBER},
   Sample("ew", (T(domain=away(-0.5, 0.5)),), {"min": -0.5, "max": 0.5}), aliases=("clip",))
_o("lerp", "Linear interpolation `input + weight * (end - input)` elementwise (broadcast).",
   lambda a, b, w: a + w * (b - a), {"LerpBackward0": EWN, "LerpBackward1": EWN},
   Sample("ew", (T(), T(), 0.3)))
_o("addcmul", "`input + value * tensor1 * tensor2` elementwise (broadcast).",
   lambda a, b, c, value=1: a + value * b * c, {"AddcmulBackward0": EWN}, Sample("ew", (T(), T(), T()), {"value": 0.5}))
_o("addcdiv", "`input + value * tensor1 / tensor2` elementwise (broadcast).",
   lambda a, b, c, value=1: a + value * b / c, {"AddcdivBackward0": EWN}, Sample("ew", (T(), T(), T(domain=AWAY0)), {"value": 0.5}))
_o("round", "Rounds each element of `input` to the nearest integer (halves to even), or to `decimals` places.",
   np.round, {"RoundBackward0": EWN, "RoundBackward1": EWN}, unary(away(-1.5, -0.5, 0.5, 1.5)))
_o("nan_to_num", "Replaces NaN, positive and negative infinity in `input` by `nan`, `posinf` and `neginf` "
   "(by default 0 and the dtype's largest and smallest finite values).",
   np.nan_to_num, {"NanToNumBackward0": EWN}, unary(), dtypes=ALL)
_o("masked_fill", "`input` with the elements where `mask` is True replaced by `value`.",
   lambda x, m, v: np.where(m, v, x), {"MaskedFillBackward0": EW_WITH_NUMBER},
   Sample("ew", (T(), T(dtype="bool", grad=False), 0.5), self_full=True), surfaces=(FUNCTION, METHOD, INPLACE), dtypes=ALL)
_o("to", "`input` converted to another dtype (or itself when nothing changes).",
   lambda x, dtype: x.astype(np.float64), {"ToCopyBackward0": (DIAGONAL, SELF_ADJOINT)},
   fixed(T((2, 3)), "float64"), surfaces=(METHOD,), dtypes=ALL,
   bench=Sample("fixed", (T((1024, 1024)), "float64"), call=_to_named_dtype))

# ----- dtype conversions ---------------------------------------------------------------------

# float's result is float32, which float64 finite differences (eps 1e-6) can
# resolve only where its spacing is far below eps: at |x| <= 1e-6 the rounding
# error of a difference quotient is about 1e-7, so a wrong gradient still shows.
_CONVERSION_DOMAIN = {"float": Domain(-1e-6, 1e-6)}
for _name, _np_dtype in (("float", np.float32), ("double", np.float64), ("long", np.int64),
                         ("bool", np.bool_)):
    OPS.append(Op(_name, "conversion", f"`input` converted to {np.dtype(_np_dtype).name} "
                  "(itself when it already is).", surfaces=(METHOD,), dtypes=ALL,
                  differentiable=_np_dtype in (np.float32, np.float64), batching=EW,
                  sample=fixed(T((2, 3), domain=_CONVERSION_DOMAIN.get(_name, REAL))),
                  bench=fixed(T((1024, 1024))),
                  ref=(lambda t: lambda x: x.astype(t))(_np_dtype)))
OPS.append(Op("type_as", "conversion", "`input` converted to the dtype of `other`.",
              surfaces=(METHOD,), dtypes=ALL, batching=EW,
              sample=fixed(T((2, 3)), T((1,), grad=False, dtype="float64")),
              bench=fixed(T((1024, 1024)), T((1,), grad=False, dtype="float64")),
              ref=lambda x, o: x.astype(o.dtype)))

"""Reductions and scans."""

from __future__ import annotations

import numpy as np

from . import _refs
from .schema import (
    ALL,
    AWAY0,
    CUSTOM,
    FP32,
    FUNCTION,
    INPLACE,
    METHOD,
    NUMERIC,
    REDUCTION,
    STATIC_VJP,
    Op,
    Sample,
    T,
    fixed,
    reduce,
    unary,
)

OPS: list[Op] = []

OPS.append(Op(
    "trace", "reduction",
    "Returns the sum of the main diagonal of the 2-D tensor `input`, as a 0-d tensor.",
    impl="table:unary:ops::trace", signature="(input: Tensor) -> Tensor", dtypes=NUMERIC,
    nodes={"TraceBackward0": ()}, batching=CUSTOM, batching_rule="trace",
    sample=fixed(T((3, 4))), ref=_refs.trace, autocast=FP32, bench=fixed(T((1024, 1024))),
))
OPS.append(Op(
    "all", "reduction",
    "Returns a 0-d bool tensor that is True when every element of `input` is nonzero.",
    surfaces=(FUNCTION, METHOD), table=(FUNCTION,), impl="table:unary:ops::all",
    signature="(input: Tensor) -> Tensor", dtypes=ALL, differentiable=False,
    batching=CUSTOM, batching_rule="all", sample=unary(), ref=_refs.all_,
))
OPS.append(Op(
    "any", "reduction",
    "Returns a 0-d bool tensor that is True when some element of `input` is nonzero.",
    surfaces=(FUNCTION, METHOD), table=(FUNCTION,), impl="table:unary:ops::any",
    signature="(input: Tensor) -> Tensor", dtypes=ALL, differentiable=False,
    batching=CUSTOM, batching_rule="any", sample=unary(), ref=_refs.any_,
))
OPS.append(Op(
    "clone", "copy",
    "Returns a copy of `input` in new memory; the copy stays in the graph (CloneBackward0).",
    impl="table:unary:ops::clone", signature="(input: Tensor) -> Tensor", dtypes=ALL,
    nodes={"CloneBackward0": ("diagonal", "self_adjoint", STATIC_VJP)}, forward="rule",
    sample=unary(), ref=lambda x: x.copy(),
))


def _r(name, doc, ref, nodes, sample=None, *, surfaces=(FUNCTION, METHOD), dtypes=NUMERIC, **kw):
    OPS.append(Op(name, "reduction", doc, surfaces=surfaces, dtypes=dtypes, nodes=nodes,
                  batching=REDUCTION, sample=sample or reduce(), ref=ref, **kw))


def _np_reduce(fn):
    def ref(x, dim=None, keepdim=False, **kw):
        return np.asarray(fn(x, axis=dim, keepdims=keepdim, **kw))

    return ref


_r("sum", "Sums the elements of `input`, over `dim` when given.", _np_reduce(np.sum),
   {"SumBackward0": (STATIC_VJP,), "SumBackward1": (STATIC_VJP,)}, dtypes=ALL)
_r("mean", "Mean of the elements of `input`, over `dim` when given.", _np_reduce(np.mean),
   {"MeanBackward0": (STATIC_VJP,), "MeanBackward1": (STATIC_VJP,)}, sample=reduce(empty=False))
_r("prod", "Product of the elements of `input`, over `dim` when given.",
   lambda x, dim=None, keepdim=False: np.asarray(np.prod(x, axis=dim, keepdims=keepdim)),
   {"ProdBackward0": (), "ProdBackward1": ()}, sample=reduce(AWAY0), autocast=FP32)
# Ties are kinks: there the shared gradient is a subgradient that finite differences do
# not see (they give each of k tied elements 1/2, not 1/k), so the samples keep values apart.
_r("amax", "Maximum of `input` over `dim` (the gradient is shared among ties).", _np_reduce(np.max),
   {"AmaxBackward0": ()}, sample=reduce(empty=False, unique=0.01), dtypes=ALL)
_r("amin", "Minimum of `input` over `dim` (the gradient is shared among ties).", _np_reduce(np.min),
   {"AminBackward0": ()}, sample=reduce(empty=False, unique=0.01), dtypes=ALL)
_r("logsumexp", "log(sum(exp(input))) over `dim`, computed without overflow.", _refs.logsumexp,
   {"LogsumexpBackward0": ()}, sample=reduce(empty=False))
_r("var", "Variance of `input` over `dim` (Bessel's correction by default).",
   lambda x, dim=None, keepdim=False: np.asarray(np.var(x, axis=dim, ddof=1, keepdims=keepdim)),
   # Two elements per reduction at least: with one, Bessel's correction divides by zero.
   {"VarBackward0": ()}, sample=Sample("reduce", (T(),), dim=True, keepdim=True, empty=False,
                                       min_rank=1, min_side=2), tol=(1e-4, 1e-6))
_r("std", "Standard deviation of `input` over `dim` (Bessel's correction by default).",
   lambda x, dim=None, keepdim=False: np.asarray(np.std(x, axis=dim, ddof=1, keepdims=keepdim)),
   # As var, and distinct values: at zero variance the square root has a kink.
   {"StdBackward0": ()}, sample=Sample("reduce", (T(),), dim=True, keepdim=True, empty=False,
                                       min_rank=1, min_side=2, unique=0.01), tol=(1e-4, 1e-6))
_r("cumsum", "Cumulative sum of `input` along `dim`.",
   lambda x, dim: np.cumsum(x, axis=dim), {"CumsumBackward0": ()},
   sample=Sample("reduce", (T(),), dim=True, keepdim=False), dtypes=ALL,
   surfaces=(FUNCTION, METHOD, INPLACE))


def _values(fn, *a, **k):
    """Calls the op and keeps its values (a tuple result is values, indices)."""
    out = fn(*a, **k)
    return out[0] if isinstance(out, tuple) else out


_r("max", "Maximum of `input` (over `dim`: values and indices; with a tensor: elementwise).",
   lambda x, dim=None, keepdim=False: np.asarray(np.max(x, axis=dim, keepdims=keepdim)),
   {"MaxBackward0": (), "MaxBackward1": ()}, sample=Sample("reduce", (T(),), dim=True, keepdim=True,
   empty=False, min_rank=1, call=_values, unique=0.01), dtypes=ALL)
_r("min", "Minimum of `input` (over `dim`: values and indices; with a tensor: elementwise).",
   lambda x, dim=None, keepdim=False: np.asarray(np.min(x, axis=dim, keepdims=keepdim)),
   {"MinBackward0": (), "MinBackward1": ()}, sample=Sample("reduce", (T(),), dim=True, keepdim=True,
   empty=False, min_rank=1, call=_values, unique=0.01), dtypes=ALL)
_r("argmax", "Index of the maximum of `input` (flattened, or over `dim`).",
   lambda x, dim=None, keepdim=False: np.asarray(np.argmax(x, axis=dim, keepdims=keepdim)), {},
   sample=Sample("reduce", (T(),), dim=True, keepdim=True, empty=False, min_rank=1),
   differentiable=False, dtypes=ALL)
_r("argmin", "Index of the minimum of `input` (flattened, or over `dim`).",
   lambda x, dim=None, keepdim=False: np.asarray(np.argmin(x, axis=dim, keepdims=keepdim)), {},
   sample=Sample("reduce", (T(),), dim=True, keepdim=True, empty=False, min_rank=1),
   differentiable=False, dtypes=ALL)
_r("sort", "`input` sorted along `dim` (values and the indices they came from).",
   lambda x, dim=-1: np.sort(x, axis=dim), {"SortBackward0": ()},
   sample=Sample("reduce", (T(),), dim=True, keepdim=False, min_rank=1, call=_values, unique=0.01), dtypes=ALL)
_r("argsort", "The indices that sort `input` along `dim`.",
   lambda x, dim=-1: np.argsort(x, axis=dim, kind="stable"), {},
   sample=Sample("reduce", (T(),), dim=True, keepdim=False, min_rank=1), differentiable=False, dtypes=ALL)
_r("cumprod", "Cumulative product of `input` along `dim`.", lambda x, dim: np.cumprod(x, axis=dim), {},
   sample=Sample("reduce", (T(domain=AWAY0),), dim=True, keepdim=False),
   surfaces=(FUNCTION, METHOD, INPLACE))
_r("nansum", "Sum of `input` treating NaN as zero.", _np_reduce(np.nansum), {})
_r("logcumsumexp", "log(cumsum(exp(input))) along `dim`, without overflow.",
   lambda x, dim: np.logaddexp.accumulate(x, axis=dim), {},
   sample=Sample("reduce", (T(),), dim=True, keepdim=False))

"""Shape rules of reductions (``sum``, ``mean``, ``std``, ``norm``, ``topk``,
``sort``, ...): the input's shape without (or keeping as 1) the reduced
dimensions."""

from __future__ import annotations

import builtins

from . import _RULES, _any_requires_grad, _is_tensorish, _like_result, _norm_dim, _run, _stand_in
from .pointwise import _broadcast_rule, _method_or_fn


def _dims_arg(args, kwargs, pos=0):
    if "dim" in kwargs:
        return kwargs["dim"]
    if len(args) > pos:
        return args[pos]
    return None


def _reduced_shape(shape, dim, keepdim):
    nd = len(shape)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return (1,) * nd if keepdim else ()
    dims = [dim] if isinstance(dim, int) else list(dim)
    ds = {_norm_dim(d, nd) for d in dims}
    if keepdim:
        return tuple(1 if i in ds else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in ds)


def _reduction(name, dim_pos=0, keepdim_pos=1):
    def rule(x, *args, **kwargs):
        if args and _is_tensorish(args[0]) or _is_tensorish(kwargs.get("other")):
            # max(a, b) / min(a, b): elementwise.
            return _broadcast_rule("maximum" if name == "max" else "minimum")(x, *args, **kwargs)
        dim = _dims_arg(args, kwargs, dim_pos)
        if isinstance(dim, str):
            dim = None
        keepdim = kwargs.get("keepdim", args[keepdim_pos] if len(args) > keepdim_pos else False)
        if not isinstance(keepdim, bool):
            keepdim = False
        return _run(_method_or_fn(name), (x, *args), kwargs, _reduced_shape(x.shape, dim, keepdim))

    return rule


for _n in ("sum mean nansum nanmean prod amax amin argmax argmin all any logsumexp "
           "count_nonzero max min median nanmedian mode").split():  # fmt: skip
    _RULES[_n] = _reduction(_n)


def _std_var(name):
    def rule(x, *args, **kwargs):
        # std(dim, unbiased, keepdim) or std(dim, correction=..., keepdim=...)
        dim = _dims_arg(args, kwargs)
        if isinstance(dim, bool):
            dim = None
        keepdim = kwargs.get("keepdim", False)
        if len(args) >= 3 and isinstance(args[2], bool):
            keepdim = args[2]
        return _run(_method_or_fn(name), (x, *args), kwargs, _reduced_shape(x.shape, dim, keepdim))

    return rule


for _n in ("std var std_mean var_mean").split():
    _RULES[_n] = _std_var(_n)


def _norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    real = _stand_in(x).norm(p, dim, keepdim, dtype=dtype) if dtype else _stand_in(x).norm(
        p, dim, keepdim
    )
    return _like_result(real, _reduced_shape(x.shape, dim, keepdim), _any_requires_grad((x,)))


_RULES["norm"] = _norm


def _topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    d = _norm_dim(dim, x.dim())
    if k > (x.shape[d] if x.dim() else 1):
        raise RuntimeError("selected index k out of range")
    shape = list(x.shape)
    if shape:
        shape[d] = k
    real = _stand_in(x).topk(builtins.min(k, 1), dim, largest, sorted)
    return _like_result(real, tuple(shape), _any_requires_grad((x,)))


_RULES["topk"] = _topk


def _sort(name):
    def rule(x, *args, **kwargs):
        real = getattr(_stand_in(x), name)(*args, **kwargs)
        return _like_result(real, tuple(x.shape), _any_requires_grad((x,)))

    return rule


for _n in ("sort", "argsort", "msort"):
    _RULES[_n] = _sort(_n)

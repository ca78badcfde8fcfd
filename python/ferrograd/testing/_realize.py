"""Concrete inputs from the registry's sample specs without hypothesis: NumPy
arrays of a chosen size, for the per-op benchmark (``benches/ops.py``) and
for quick looks at an op. ``small`` is about 16 elements per tensor,
``large`` about a million (a 1024 x 1024 matrix)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._registry.schema import Domain, Sample, T

SIZES = {"small": (16,), "large": (1024, 1024)}


@dataclass
class Case:
    """One benchmark case of an op: arrays and values to call it with."""

    label: str
    args: list
    kwargs: dict
    grad: list


def _fill(rng, shape, dom: Domain, dtype=None, unique=False):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dom.integer or dtype == "int64":
        lo, hi = (int(dom.lo), int(dom.hi)) if dom.integer else (0, 3)
        return rng.integers(lo, hi, size=shape, dtype=np.int64)
    if unique:
        n = int(np.prod(shape))
        return (dom.lo + (dom.hi - dom.lo) * (rng.permutation(n) + 0.5) / max(n, 1)).reshape(shape)
    x = rng.uniform(dom.lo, dom.hi, size=shape)
    for k in dom.kinks:
        near = np.abs(x - k) < dom.away
        x[near] = k + np.where(x[near] >= k, dom.away, -dom.away)
    return x


def _build(sample: Sample, rng, shape, kwargs) -> tuple:
    args, grad = [], []
    first = True
    for a in sample.args:
        if isinstance(a, T):
            s = a.shape if a.shape is not None else shape
            args.append(_fill(rng, s, a.domain, a.dtype, unique=sample.unique and first and a.dtype is None))
            grad.append(a.grad and a.dtype is None)
            first = first and a.dtype is not None
        elif isinstance(a, tuple) and any(isinstance(e, T) for e in a):
            # A tuple of index tensors (index_put's `indices`).
            args.append(tuple(_fill(rng, e.shape if e.shape is not None else shape, e.domain, e.dtype)
                              if isinstance(e, T) else e for e in a))
            grad.append(False)
        else:
            args.append(a)
            grad.append(False)
    if sample.separate and len(args) > 1 and isinstance(args[1], np.ndarray):
        a0, a1 = args[0], args[1]
        if a1.dtype.kind == "f":
            close = np.abs(np.broadcast_to(a0, np.broadcast_shapes(a0.shape, a1.shape)) - a1) < sample.separate
            if a1.shape == a0.shape:
                args[1] = np.where(close, a1 + 2 * sample.separate, a1)
    return args, dict(kwargs), grad


def cases(op, size: str, rng=None) -> list:
    """The benchmark cases of ``op`` at ``size`` (``"small"``/``"large"``):
    elementwise ops on one shape; reductions over each dimension and over
    all; fixed samples as declared (``Op.bench`` for the large size). An op
    with no case at a size gets none (the benchmark reports it)."""
    rng = rng or np.random.default_rng(0)
    sample = op.sample
    if size == "large" and op.bench is not None:
        sample = op.bench
    if sample is None:
        return []
    shape = SIZES[size]
    out = []
    if sample.kind == "ew":
        args, kwargs, grad = _build(sample, rng, shape, sample.kwargs)
        out.append(Case("x".join(map(str, shape)), args, kwargs, grad))
    elif sample.kind == "reduce":
        dims = [None] if not sample.dim else list(range(len(shape)))
        for d in dims:
            kw = dict(sample.kwargs)
            if d is not None:
                kw["dim"] = d
            args, kwargs, grad = _build(sample, rng, shape, kw)
            label = "x".join(map(str, shape)) + ("" if d is None else f" dim={d}")
            out.append(Case(label, args, kwargs, grad))
    elif sample.kind == "fixed":
        if size == "large" and op.bench is None:
            return []
        args, kwargs, grad = _build(sample, rng, (), sample.kwargs)
        shapes = [a.shape for a in args if isinstance(a, np.ndarray)]
        out.append(Case(",".join("x".join(map(str, s)) for s in shapes), args, kwargs, grad))
    return out


def entry_point(lib, op, name=None, seed=True):
    """The callable users reach ``op`` by in ``lib`` (ferrograd, or torch for
    comparison): the ``nn.functional`` function when there is one (its
    signature is the documented one: ``torch.embedding`` takes its arguments
    in another order), else the module function, the ``linalg`` function,
    or the method. An in-place op (``copy_``, ``F.relu_``) is called on a
    copy of its first argument, as PyTorch's OpInfo tests call in-place
    variants, so a leaf that requires grad can be its input. The
    sample's ``call`` (unpacking a tuple result, say) wraps it."""
    name = name or op.name
    special = getattr(lib, "special", None)
    if op.has("F") and hasattr(lib.nn.functional, name):
        fn = getattr(lib.nn.functional, name)
    elif op.has("function") and hasattr(lib, name):
        fn = getattr(lib, name)
    elif (op.has("function") and name.startswith("special_")
          and hasattr(special, name[len("special_"):])):
        # PyTorch spells `special_i1e` only as `torch.special.i1e`.
        fn = getattr(special, name[len("special_"):])
    elif op.has("linalg") and hasattr(lib.linalg, name):
        fn = getattr(lib.linalg, name)
    else:

        def fn(x, *args, **kwargs):
            return getattr(x, name)(*args, **kwargs)

    if name.endswith("_"):
        inplace = fn

        def fn(x, *args, **kwargs):
            return inplace(x.clone(), *args, **kwargs)

    call = op.sample.call if op.sample is not None else None
    if call is not None:
        inner = fn

        def fn(*a, **k):
            return call(inner, *a, **k)

    if seed and op.sample is not None and op.sample.seeded:
        drawn = fn

        def fn(*a, **k):
            lib.manual_seed(0)
            return drawn(*a, **k)

    return fn

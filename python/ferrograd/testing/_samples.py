"""Hypothesis strategies for the registry's sample specs (``_registry.schema.Sample``):
a drawn call is the op's arguments as NumPy arrays (float64 for the floating
dtype under test) and plain values, which the coverage test and the per-op
benchmark turn into tensors of the dtype they want. Needs ``hypothesis``."""

from __future__ import annotations

from dataclasses import dataclass

import hypothesis
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .._registry.schema import Domain, Sample, T


@dataclass
class Call:
    """One drawn call: ``args``/``kwargs`` hold NumPy arrays where the op takes
    tensors (``grad`` marks which positional arrays the checks differentiate)."""

    args: list
    kwargs: dict
    grad: list  # per positional arg: True for a differentiable tensor input

    def tensors(self, fg, dtype, requires_grad=False):
        """``(args, kwargs)`` with arrays made tensors: floating arrays in
        ``dtype`` (differentiable ones with ``requires_grad``), others in the
        dtype they were drawn in."""

        def conv(a, g):
            if isinstance(a, tuple) and any(isinstance(e, np.ndarray) for e in a):
                return tuple(conv(e, False) for e in a)
            if not isinstance(a, np.ndarray):
                return a
            if a.dtype.kind == "f":
                return fg.tensor(a, dtype=dtype, requires_grad=requires_grad and g)
            return fg.from_numpy(a.copy())

        args = [conv(a, g) for a, g in zip(self.args, self.grad)]
        kwargs = {k: conv(v, False) for k, v in self.kwargs.items()}
        return args, kwargs


def _values(shape, dom: Domain, np_dtype=None):
    """Arrays of ``shape`` with elements in ``dom``."""
    if dom.integer:
        return hnp.arrays(
            np_dtype or np.int64, shape, elements=st.integers(int(dom.lo), int(dom.hi) - 1)
        )
    if np_dtype is np.bool_:
        return hnp.arrays(np.bool_, shape, elements=st.booleans())
    elements = st.floats(dom.lo, dom.hi, allow_nan=False, allow_infinity=False, width=64)
    if dom.kinks:
        elements = elements.filter(lambda v: all(abs(v - k) >= dom.away for k in dom.kinks))
    return hnp.arrays(np.float64, shape, elements=elements)


def _np_dtype(name):
    return {"int64": np.int64, "bool": np.bool_, "float64": np.float64, None: None}[name]


def _tensor_arg(spec: T, shape):
    shape = spec.shape if spec.shape is not None else shape
    dt = _np_dtype(spec.dtype)
    if dt is np.bool_:
        return hnp.arrays(np.bool_, shape, elements=st.booleans())
    dom = spec.domain if not (dt is np.int64 and not spec.domain.integer) else Domain(0, 3, integer=True)
    return _values(shape, dom, dt)


def _constrain(sample: Sample, args) -> None:
    """Rejects draws that put a kink of the op under a finite difference."""
    ts = [a for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    if sample.separate and len(ts) >= 2:
        hypothesis.assume(np.all(np.abs(ts[0] - ts[1]) >= sample.separate))
    for k in sample.diff_kinks if len(ts) >= 2 else ():
        hypothesis.assume(np.all(np.abs(np.abs(ts[0] - ts[1]) - k) >= 0.05))


@st.composite
def calls(draw, sample: Sample):
    """A strategy of :class:`Call` for ``sample``."""
    tensor_specs = [a for a in sample.args if isinstance(a, T)]
    min_side = sample.min_side if sample.min_side is not None else (0 if sample.empty else 1)
    free = [a for a in tensor_specs if a.shape is None]
    kwargs = dict(sample.kwargs)
    if sample.kind == "ew":
        bs = draw(
            hnp.mutually_broadcastable_shapes(
                num_shapes=max(len(free), 1),
                min_dims=sample.min_rank,
                max_dims=sample.max_rank,
                min_side=min_side,
                max_side=3,
            )
        )
        shapes = list(bs.input_shapes)
        if sample.self_full and shapes:
            shapes[0] = bs.result_shape
        shapes = iter(shapes)
    elif sample.kind == "reduce":
        shape = draw(
            hnp.array_shapes(
                min_dims=max(sample.min_rank, 1 if sample.dim else 0),
                max_dims=sample.max_rank,
                min_side=min_side,
                max_side=3,
            )
        )
        shapes = iter([shape] * max(len(free), 1))
        if sample.dim:
            kwargs["dim"] = draw(st.integers(-len(shape), len(shape) - 1))
        if sample.keepdim:
            kwargs["keepdim"] = draw(st.booleans())
    elif sample.kind == "fixed":
        shapes = iter([()] * len(free))
    else:
        raise ValueError(f"unknown sample kind {sample.kind!r}")
    args, grad = [], []
    first = True
    for a in sample.args:
        if isinstance(a, T):
            shape = next(shapes) if a.shape is None else a.shape
            if sample.unique and first and a.dtype is None:
                # Distinct values, evenly spread over the domain in a drawn order.
                n = int(np.prod(shape))
                order = np.array(draw(st.permutations(range(n))), dtype=np.float64)
                lo, hi = a.domain.lo, a.domain.hi
                args.append((lo + (hi - lo) * (order + 0.5) / max(n, 1)).reshape(shape))
                first = False
                grad.append(a.grad)
                continue
            first = first and a.dtype is not None
            args.append(draw(_tensor_arg(a, shape)))
            grad.append(a.grad and a.dtype is None)
        elif isinstance(a, tuple) and any(isinstance(e, T) for e in a):
            # A tuple of index tensors (index_put's `indices`), never differentiated.
            args.append(tuple(draw(_tensor_arg(e, e.shape)) if isinstance(e, T) else e for e in a))
            grad.append(False)
        else:
            args.append(a)
            grad.append(False)
    _constrain(sample, args)
    return Call(args, kwargs, grad)


@st.composite
def values_like(draw, call: Call, sample: Sample):
    """A :class:`Call` with the same shapes and non-floating arguments as
    ``call`` and new floating values from the same domains (a second sample
    of a batch, or a later call of a compiled function)."""
    specs = list(sample.args)
    args = []
    for a, spec in zip(call.args, specs):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and isinstance(spec, T):
            args.append(draw(_values(a.shape, spec.domain)))
        else:
            args.append(a)
    _constrain(sample, args)
    return Call(args, dict(call.kwargs), list(call.grad))

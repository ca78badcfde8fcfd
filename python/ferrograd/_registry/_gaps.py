"""Gaps the coverage matrix found in ops declared elsewhere, kept in one place so
they are easy to see and to close.

``REFUSE``: features an op does not support; using them raises the error
named in the reason (these join the op's ``refuse``). ``DEFECTS``: cells that
fail and are not fixed yet, with what is known; the matrix still runs them as
expected failures and docs/coverage.md lists them as open.
"""

from __future__ import annotations

import dataclasses

from .schema import COMPILE, GRAD, GRADGRAD, JVP, VMAP, VMAP_INPLACE  # noqa: F401 - kinds entries use

_NO_INPLACE_RULE = ("vmap has no batching rule for the in-place form: it raises \"there is no "
                    "batching rule for Tensor.{name}_\"")

REFUSE: dict = {
    **{n: {COMPILE: "its output's shape depends on its input's values (a graph break in "
                    "torch.compile): the capture fails naming the op"}
       for n in ("unique", "unique_consecutive", "bincount")},
}

DEFECTS: dict = {
}


def apply(op):
    """``op`` with the gaps listed for it."""
    refuse, defects = REFUSE.get(op.name), dict(DEFECTS.get(op.name, {}))
    for feature, kind in UNANALYSED.get(op.name, {}).items():
        defects.setdefault(feature, f"fails with {kind}; not analysed yet")
    if not refuse and not defects:
        return op
    return dataclasses.replace(op, refuse={**op.refuse, **(refuse or {})},
                               defects={**op.defects, **(defects or {})})

#: Cells that failed when the matrix first ran over every op, not analysed yet: each
#: runs as an expected failure and is listed on docs/coverage.md until it is fixed and
#: removed here (the exception type it raised is noted).
UNANALYSED: dict = {}

#: Ops whose result's size follows their input's values: vmap refuses them by name.
_VALUE_SIZED = ("the result's size depends on the values, which differ per sample (PyTorch "
                "refuses too)")
REFUSE.setdefault("bincount", {})[VMAP] = _VALUE_SIZED
REFUSE.setdefault("argwhere", {})[VMAP] = _VALUE_SIZED

#: A NumPy round trip has no per-sample array to hand over: Tensor.numpy() of a batched
#: tensor refuses, naming numpy() and from_numpy.
REFUSE.setdefault("from_numpy", {})[VMAP] = (
    "its argument is a NumPy array, which holds one sample: numpy() of a batched tensor refuses")

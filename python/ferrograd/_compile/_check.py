"""``check=True``: run a replay and the eager function from the same state
and compare everything they write, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.grad_mode import no_grad


def _state_tensors(constants: list, inputs: list, optimizers: list) -> list:
    seen: dict[int, Any] = {}
    for t in list(constants) + list(inputs):
        seen.setdefault(id(t), t)
    for opt in optimizers:
        for st in opt.state.values():
            for v in st.values():
                if hasattr(v, "detach") and hasattr(v, "shape"):
                    seen.setdefault(id(v), v)
    return list(seen.values())


def snapshot(constants: list, inputs: list, optimizers: list) -> list:
    """Copies of every tensor a step may write (values and ``.grad``)."""
    out = []
    for t in _state_tensors(constants, inputs, optimizers):
        g = t.grad if t.is_leaf else None
        out.append((t, t.detach().clone(), g, None if g is None else g.detach().clone()))
    return out


def restore(snap: list) -> None:
    """Writes a snapshot's values back into the same tensor objects."""
    with no_grad():
        for t, v, g, gv in snap:
            t.detach().copy_(v)
            if t.is_leaf:
                if g is None:
                    t.grad = None
                else:
                    g.detach().copy_(gv)
                    t.grad = g


def _same(a: Any, b: Any) -> bool:
    x, y = a.detach().numpy(force=True), b.detach().numpy(force=True)
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)


def compare(name: str, outs: list, eager_outs: list, after_replay: list, after_eager: list) -> None:
    """Raises when the replay and the eager run differ anywhere."""
    if len(outs) != len(eager_outs):
        raise RuntimeError(f"ferrograd.compile(check=True): {name} returned {len(eager_outs)} tensors eagerly, {len(outs)} replayed")
    for i, (a, b) in enumerate(zip(outs, eager_outs)):
        if not _same(a, b):
            raise RuntimeError(f"ferrograd.compile(check=True): output {i} of {name} differs between replay and eager")
    for (t, v, _, gv), (_, v2, _, gv2) in zip(after_replay, after_eager):
        if not _same(v, v2):
            raise RuntimeError(f"ferrograd.compile(check=True): {name} left a tensor of shape {tuple(t.shape)} different after replay and eager")
        if (gv is None) != (gv2 is None) or (gv is not None and not _same(gv, gv2)):
            raise RuntimeError(f"ferrograd.compile(check=True): {name} left a .grad of shape {tuple(t.shape)} different after replay and eager")

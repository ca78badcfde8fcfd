"""The first step of every collective: the ranks exchange what they are about to do and
any argument error, so every rank raises the same error instead of hanging."""

from __future__ import annotations

from .distributed_c10d import _watched


def _meta(t):
    from .. import _C

    if not isinstance(t, _C.Tensor):
        return None
    return (tuple(t.shape), str(t.dtype))


def _local(check):
    """Runs this rank's argument checks; the error they raise, as (class name, message),
    is exchanged with the other ranks instead of raised here, so every rank raises it
    rather than one raising while the others wait for it in the collective."""
    try:
        check()
    except (TypeError, ValueError, IndexError) as e:
        return (type(e).__name__, str(e))
    return None


_ERRORS = {"TypeError": TypeError, "ValueError": ValueError, "IndexError": IndexError}


def _agree(w, what, t, problem=None, same=()):
    """The first step of every collective: the ranks exchange what they are about to do
    (the collective, the tensor's shape and dtype, arguments that must match such as
    ``src`` or ``op``, as ``same``: a tuple of (name, value) pairs, and any argument
    error), so a mismatch or a bad argument on one rank raises the same error on every
    rank instead of hanging or exchanging garbage."""
    mine = (what, _meta(t), same, problem)
    first = w.take()
    with _watched(what, first):
        notes = w.comm.allgather(mine)
    if problem is None and all(n == mine for n in notes):
        return
    for r, (_, _, _, prob) in enumerate(notes):
        if prob is not None:
            cls = _ERRORS.get(prob[0], RuntimeError)
            raise cls(f"{what}: rank {r}: {prob[1]}")
    if any(n[0] != what for n in notes):
        detail = ", ".join(f"rank {r} called {n[0]}" for r, n in enumerate(notes))
        raise RuntimeError(
            f"collective mismatch: {detail}; every rank must call the same collectives in "
            "the same order"
        )
    if any(n[1] != notes[0][1] for n in notes):
        detail = ", ".join(
            f"rank {r}: {tuple(n[1][0])} {n[1][1]}" for r, n in enumerate(notes)
        )
        raise RuntimeError(
            f"{what}: tensors must have the same shape and dtype on every rank, got {detail}"
        )
    for i, (k, _) in enumerate(same):
        values = [n[2][i][1] if i < len(n[2]) else None for n in notes]
        if any(x != values[0] for x in values):
            detail = ", ".join(f"rank {r}: {x!r}" for r, x in enumerate(values))
            raise RuntimeError(f"{what}: every rank must pass the same {k}, got {detail}")

"""In-place forms of ops written in Python: the value is computed out of place
and written into ``input``.

On a ``Tensor`` the write is the core's (``_C._apply_inplace``: version
counter, graph, compile's capture). Under ``vmap`` ``input`` is a batched
value; the out-of-place value goes through the batching rules and is copied
in, as PyTorch batches the in-place forms of its composite ops."""

from __future__ import annotations

from . import _C


def _batched(x):
    return not isinstance(x, _C.Tensor) and hasattr(type(x), "__ferrograd_function__")


def apply_inplace(input, compute, name=None, direct=False):
    """``compute()`` written into ``input``; returns ``input``. ``name`` is the
    in-place op's name (``"relu_"``) for errors. ``direct`` says ``compute`` is
    one elementwise op of ``input`` alone (``relu``), which may then map
    ``input``'s memory in place when nothing is recorded."""
    if _batched(input):
        from .func._methods import write_inplace

        return write_inplace(input, compute(), name or "an in-place op")
    if not isinstance(input, _C.Tensor):
        return _C._apply_inplace(input, compute, name, direct)

    def checked():
        out = compute()
        if _batched(out):
            # A batched value written into an unbatched tensor: PyTorch's vmap error.
            from .func._batched import inplace_error

            raise inplace_error(name or "an in-place op")
        return out

    return _C._apply_inplace(input, checked, name, direct)

"""``ferrograd.autograd.graph``: walking a backward graph and what it holds in memory.

``grad_fn`` objects (``Node``) and ``AccumulateGrad`` live in the Rust engine;
this module gives the read-only views of a graph that tools need:
:func:`walk` visits every node once (iteratively, so graphs of a million nodes
are fine) and :func:`saved_tensors_summary` answers the question PyTorch users
ask about memory (pytorch #91692): which nodes keep which saved tensors alive,
and how many bytes that is.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .. import _C

Node = type(_C.ones(1, requires_grad=True).exp().grad_fn)
AccumulateGrad = type((_C.ones(1, requires_grad=True) * 1).grad_fn.next_functions[0][0])

__all__ = [
    "Node",
    "AccumulateGrad",
    "walk",
    "saved_tensors_summary",
    "SavedTensorsSummary",
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
]


def _roots(tensors):
    if isinstance(tensors, _C.Tensor):
        tensors = (tensors,)
    roots = []
    for t in tensors:
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"expected a Tensor or a sequence of Tensors, got {type(t).__name__}")
        fn = t.grad_fn
        if fn is not None:
            roots.append(fn)
    return roots


def walk(tensors):
    """Yields every node reachable from the ``grad_fn`` of ``tensors`` once,
    outputs first (a breadth-first order), ``AccumulateGrad`` nodes included."""
    seen = set()
    queue = list(_roots(tensors))
    for fn in queue:
        seen.add(fn)
    i = 0
    while i < len(queue):
        fn = queue[i]
        i += 1
        yield fn
        for nxt, _ in fn.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)


def _storage_key(t):
    # Two saved tensors viewing one buffer hold its memory once.
    return t.data_ptr() - t.storage_offset() * t.dtype.itemsize


def _nbytes(t):
    return t.numel() * t.dtype.itemsize


@dataclass
class SavedTensorsSummary:
    """Bytes held by saved tensors, per node (``rows``: name, count, bytes, shapes).

    ``total_bytes`` adds every saved tensor's own size; ``unique_bytes`` counts
    each underlying buffer once (a tensor saved by several nodes, or an input
    saved alongside a view of it, is one allocation).
    """

    rows: list = field(default_factory=list)
    total_bytes: int = 0
    unique_bytes: int = 0
    nodes: int = 0
    released_nodes: int = 0

    def by_op(self):
        """Bytes per node name, largest first."""
        acc = {}
        for name, _count, nbytes, _shapes in self.rows:
            acc[name] = acc.get(name, 0) + nbytes
        return sorted(acc.items(), key=lambda kv: -kv[1])

    def __str__(self):
        lines = [
            f"saved tensors of {self.nodes} nodes: {_human(self.total_bytes)} "
            f"({_human(self.unique_bytes)} in distinct buffers)"
        ]
        if self.released_nodes:
            lines.append(f"{self.released_nodes} nodes already freed their saved tensors")
        width = max((len(n) for n, *_ in self.rows), default=4)
        for name, count, nbytes, shapes in sorted(self.rows, key=lambda r: -r[2])[:20]:
            shown = ", ".join(str(list(s)) for s in shapes[:3]) + (
                " ..." if len(shapes) > 3 else ""
            )
            lines.append(f"  {name:<{width}}  {count:>2} saved  {_human(nbytes):>10}  {shown}")
        if len(self.rows) > 20:
            lines.append(f"  ... {len(self.rows) - 20} more nodes")
        return "\n".join(lines)

    __repr__ = __str__


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def saved_tensors_summary(tensors):
    """What the graph behind ``tensors`` keeps alive for its backward.

    Walks every node reachable from the tensors' ``grad_fn`` and sums the bytes
    of the tensors each one saved. Nodes whose saved tensors were already freed
    (after a ``backward()`` without ``retain_graph``) count as holding nothing.
    """
    summary = SavedTensorsSummary()
    seen_storage = {}
    for fn in walk(tensors):
        if not isinstance(fn, Node):
            continue
        summary.nodes += 1
        if fn._saved_released:
            summary.released_nodes += 1
            continue
        saved = fn._saved_tensors
        if not saved:
            continue
        nbytes = 0
        for t in saved:
            size = _nbytes(t)
            nbytes += size
            key = _storage_key(t)
            seen_storage[key] = max(seen_storage.get(key, 0), size)
        summary.rows.append((fn.name(), len(saved), nbytes, [tuple(t.shape) for t in saved]))
        summary.total_bytes += nbytes
    summary.unique_bytes = sum(seen_storage.values())
    return summary


# ---- saved-tensor hooks -----------------------------------------------------------

# Per thread, as the hook stack itself (kept in Rust): the message that
# entering ``saved_tensors_hooks`` raises while disabled, or None.
_disabled = threading.local()


class saved_tensors_hooks:
    """Context manager that sets a pair of pack / unpack hooks for saved tensors.

    Every tensor an op saves for backward inside the context is passed to
    ``pack_hook(tensor)`` once, when it is saved; the node keeps whatever that
    returns. When backward (or ``grad_fn._saved_<name>``) needs the tensor,
    ``unpack_hook(packed)`` is called and must return a tensor with the same
    content. Hooks are thread-local and the innermost pair wins; tensors
    saved by ops inside a pack hook are stored as they are. Entering raises
    while :class:`disable_saved_tensors_hooks` is active.
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        msg = getattr(_disabled, "message", None)
        if msg is not None:
            raise RuntimeError(msg)
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        _C._pop_saved_tensors_hooks()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are copied to CPU memory when saved and brought back to
    their device when backward reads them (PyTorch's ``save_on_cpu``).

    ferrograd tensors always live on the CPU, so this makes a copy at save time
    and hands it back at unpack time: the graph then holds no reference to the
    original tensor's memory. ``pin_memory`` and ``device_type`` are accepted
    for compatibility and have no effect.
    """

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.detach().clone())

        def unpack_from_cpu(packed):
            _device, tensor = packed
            return tensor

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Context manager (and decorator) under which entering
    :class:`saved_tensors_hooks` raises ``RuntimeError(error_message)``, for
    code whose saved tensors must not be packed. Hooks already active keep
    applying, as in PyTorch; the previous state is restored on exit."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self._prev = getattr(_disabled, "message", None)
        _disabled.message = self.error_message
        return self

    def __exit__(self, *exc):
        _disabled.message = self._prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)

        return wrapper

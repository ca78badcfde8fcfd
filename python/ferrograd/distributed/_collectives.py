"""The collectives (``barrier``, ``all_reduce``, ``broadcast``, the gathers, scatters and
reduce-scatters) and the translation of ``ReduceOp`` to MPI's operations."""

from __future__ import annotations

import numpy as np

from ._agreement import _agree, _local, _meta
from ._buffers import _Buf, _check_tensor, _np
from ._work import _run
from .distributed_c10d import ReduceOp, _check_group, _mpi


def _bool_as_bytes(arr, op):
    """MPI defines no MIN/MAX on C bool: reduce bools as bytes, SUM as logical or and
    PRODUCT as logical and (as PyTorch's NCCL backend does)."""
    if arr is None or arr.dtype != np.bool_:
        return arr, op
    op = {ReduceOp.SUM: ReduceOp.MAX, ReduceOp.PRODUCT: ReduceOp.MIN}.get(op, op)
    return arr.view(np.uint8), op


_OPS = {
    ReduceOp.SUM: "SUM",
    ReduceOp.AVG: "SUM",
    ReduceOp.PRODUCT: "PROD",
    ReduceOp.MIN: "MIN",
    ReduceOp.MAX: "MAX",
}


def _check_op(op, t):
    if op not in _OPS:
        raise ValueError(f"unknown reduce op {op!r}; use ferrograd.distributed.ReduceOp")
    if op == ReduceOp.AVG and not t.is_floating_point():
        raise ValueError("ReduceOp.AVG is only supported for floating-point tensors")


def _mpi_op(op):
    return getattr(_mpi(), _OPS[op])


def _collective(w, what, async_op, method, *args, finish=None, **kwargs):
    """Runs MPI's ``method`` (``Allreduce``, ``Bcast``, ...) on the group's communicator,
    as its nonblocking ``I`` form (``Iallreduce``, ...) under ``async_op``."""
    blocking = getattr(w.comm, method)
    nonblocking = getattr(w.comm, "I" + method[0].lower() + method[1:])
    return _run(
        w,
        what,
        async_op,
        lambda: nonblocking(*args, **kwargs),
        lambda: blocking(*args, **kwargs),
        finish,
    )


def _reduced(b, op, w):
    """The finish of a reduction into buffer ``b``: AVG is MPI's SUM divided by the size."""

    def finish():
        if op == ReduceOp.AVG:
            b.arr /= w.size
        b.written()

    return finish


def _unstack(stacked, tensors):
    """The finish of a gather: row r of ``stacked`` into ``tensors[r]``."""

    def finish():
        if stacked is not None:
            for r, o in enumerate(tensors):
                ob = _Buf(o)
                ob.arr[...] = stacked[r]
                ob.written()

    return finish


def barrier(group=None, async_op=False, device_ids=None):
    """Blocks until every rank reached it."""
    w = _check_group(group)
    return _collective(w, "barrier", async_op, "Barrier")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` over every rank in place (``op``: SUM, AVG, PRODUCT, MIN, MAX);
    every rank ends with the result. Shapes, dtypes and ``op`` are checked to agree
    first."""
    w = _check_group(group)

    def check():
        _check_tensor(tensor)
        _check_op(op, tensor)

    _agree(w, "all_reduce", tensor, _local(check), (("op", op),))
    MPI = _mpi()
    b = _Buf(tensor)
    arr, bop = _bool_as_bytes(b.arr, op)
    return _collective(
        w, "all_reduce", async_op, "Allreduce", MPI.IN_PLACE, arr, op=_mpi_op(bop),
        finish=_reduced(b, op, w),
    )  # fmt: skip


def _check_rank(r, w, what):
    if not isinstance(r, int) or not 0 <= r < w.size:
        raise ValueError(f"Invalid {what} rank {r} for a group of size {w.size}")


def broadcast(tensor, src=0, group=None, async_op=False, group_src=None):
    """Copies rank ``src``'s ``tensor`` into ``tensor`` on every other rank."""
    w = _check_group(group)
    if group_src is not None:
        src = group_src

    def check():
        _check_tensor(tensor)
        _check_rank(src, w, "src")

    _agree(w, "broadcast", tensor, _local(check), (("src", src),))
    b = _Buf(tensor)
    finish = b.written if w.rank != src else None
    return _collective(w, "broadcast", async_op, "Bcast", b.arr, root=src, finish=finish)


def _gather_buffer(w, t):
    return np.empty((w.size, *tuple(t.shape)), dtype=_np(t).dtype)


def _check_list(lst, w, name, like, what):
    """``lst`` must be a list of world-size tensors with ``like``'s shape and dtype."""
    if not isinstance(lst, (list, tuple)) or len(lst) != w.size:
        got = f"{len(lst)}" if isinstance(lst, (list, tuple)) else type(lst).__name__
        raise ValueError(
            f"{name} must be a list of {w.size} tensors (the world size), got {got}"
        )
    for o in lst:
        _check_tensor(o, f"{name} element")
        if _meta(o) != _meta(like):
            raise ValueError(
                f"{what}: every tensor in {name} must have the shape and dtype "
                f"{_meta(like)[0]} {_meta(like)[1]}, got {_meta(o)[0]} {_meta(o)[1]}"
            )


def _check_root_list(lst, root, role, w, name, like, what):
    """The ``root`` rank of a gather (``role`` ``"dst"``) or scatter (``"src"``) passes the
    list of world-size tensors; the other ranks pass none."""
    _check_rank(root, w, role)
    if w.rank == root:
        _check_list(lst, w, name, like, what)
    elif lst:
        where = {"dst": "destination", "src": "source"}[role]
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{where} ranks.")


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fills ``tensor_list[r]`` with rank r's ``tensor``, on every rank."""
    w = _check_group(group)

    def check():
        _check_tensor(tensor)
        _check_list(tensor_list, w, "tensor_list", tensor, "all_gather")

    _agree(w, "all_gather", tensor, _local(check))
    src = np.ascontiguousarray(_np(tensor))
    out = _gather_buffer(w, tensor)
    return _collective(
        w, "all_gather", async_op, "Allgather", src, out, finish=_unstack(out, tensor_list)
    )


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Writes every rank's ``input_tensor``, in rank order, into ``output_tensor`` (of
    world_size times the input's elements: stacked or concatenated along dim 0)."""
    w = _check_group(group)

    def check():
        _check_tensor(output_tensor, "output_tensor")
        _check_tensor(input_tensor, "input_tensor")
        if output_tensor.dtype != input_tensor.dtype:
            raise ValueError(
                "all_gather_into_tensor: output and input must have the same dtype"
            )
        if output_tensor.numel() != w.size * input_tensor.numel():
            raise ValueError(
                "output tensor size must be equal to world_size times input tensor size"
            )

    _agree(w, "all_gather_into_tensor", input_tensor, _local(check))
    src = np.ascontiguousarray(_np(input_tensor))
    ob = _Buf(output_tensor)
    return _collective(
        w, "all_gather_into_tensor", async_op, "Allgather", src, ob.arr, finish=ob.written
    )


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """Reduces ``input`` (world_size times ``output``'s elements) over ranks and leaves
    the r-th block of the result in rank r's ``output``."""
    w = _check_group(group)

    def check():
        _check_tensor(output, "output")
        _check_tensor(input, "input")
        if output.dtype != input.dtype:
            raise ValueError("reduce_scatter_tensor: output and input must have the same dtype")
        if input.numel() != w.size * output.numel():
            raise ValueError(
                "input tensor must be the same size as output size times world size"
            )
        _check_op(op, input)

    _agree(w, "reduce_scatter_tensor", input, _local(check), (("op", op),))
    src = np.ascontiguousarray(_np(input))
    return _reduce_scatter_block(w, "reduce_scatter_tensor", async_op, src, output, op)


def _reduce_scatter_block(w, what, async_op, src, output, op):
    """Reduces the world-size blocks of array ``src`` over ranks, block r into rank r's
    ``output``."""
    ob = _Buf(output)
    send, bop = _bool_as_bytes(src, op)
    recv, _ = _bool_as_bytes(ob.arr, op)
    return _collective(
        w, what, async_op, "Reduce_scatter_block", send, recv, op=_mpi_op(bop),
        finish=_reduced(ob, op, w),
    )  # fmt: skip


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input_list[r]`` over ranks into rank r's ``output``."""
    w = _check_group(group)

    def check():
        _check_tensor(output, "output")
        _check_list(input_list, w, "input_list", output, "reduce_scatter")
        _check_op(op, output)

    _agree(w, "reduce_scatter", output, _local(check), (("op", op),))
    src = np.stack([np.asarray(_np(t)) for t in input_list])
    return _reduce_scatter_block(w, "reduce_scatter", async_op, src, output, op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Collects every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (others pass
    ``None``)."""
    w = _check_group(group)

    def check():
        _check_tensor(tensor)
        _check_root_list(gather_list, dst, "dst", w, "gather_list", tensor, "gather")

    _agree(w, "gather", tensor, _local(check), (("dst", dst),))
    src = np.ascontiguousarray(_np(tensor))
    out = _gather_buffer(w, tensor) if w.rank == dst else None
    return _collective(
        w, "gather", async_op, "Gather", src, out, root=dst, finish=_unstack(out, gather_list)
    )


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Sends ``scatter_list[r]`` from rank ``src`` into rank r's ``tensor``."""
    w = _check_group(group)

    def check():
        _check_tensor(tensor)
        _check_root_list(scatter_list, src, "src", w, "scatter_list", tensor, "scatter")

    _agree(w, "scatter", tensor, _local(check), (("src", src),))
    send = (
        np.stack([np.asarray(_np(t)) for t in scatter_list])
        if w.rank == src
        else None
    )
    ob = _Buf(tensor)
    return _collective(w, "scatter", async_op, "Scatter", send, ob.arr, root=src, finish=ob.written)

"""The process group and the collectives of ``ferrograd.distributed``, over MPI (mpi4py).

Tensors travel as their own memory: a contiguous tensor's ``numpy()`` view is handed to
mpi4py's buffer (upper-case) methods, which release the GIL while MPI works; a
non-contiguous tensor goes through one contiguous staging copy and is written back. Every
write into a tensor bumps its version counter (through an in-place op on an empty view of
it), so a tensor saved for backward and then overwritten by a collective is caught by
autograd exactly as an in-place op would be.

mpi4py is imported lazily: ``import ferrograd`` never needs it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from datetime import timedelta

import numpy as np

from ..autograd.grad_mode import no_grad

__all__ = [
    "ReduceOp",
    "Work",
    "GroupMember",
    "is_available",
    "is_mpi_available",
    "is_initialized",
    "init_process_group",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "get_backend",
    "barrier",
    "all_reduce",
    "broadcast",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "gather",
    "scatter",
]

# PyTorch's default for every backend but NCCL.
default_pg_timeout = timedelta(minutes=30)

_INSTALL_HINT = (
    "ferrograd.distributed needs MPI through mpi4py: install it with "
    "`pip install 'ferrograd[distributed]'` (or `pip install mpi4py mpich`), "
    "or use your cluster's MPI with `pip install mpi4py`"
)


class ReduceOp:
    """Reduction operations of ``all_reduce`` and ``reduce_scatter`` (``ReduceOp.SUM``...)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


class _World:
    """The default process group: a duplicate of MPI's COMM_WORLD (so user MPI traffic on
    COMM_WORLD never matches ours), plus what init_process_group was given."""

    def __init__(self, comm, timeout):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.watchdog = _Watchdog(timeout.total_seconds())


class _Watchdog:
    """A thread that aborts the job when this process has waited in one collective for
    longer than the group's timeout. MPI collectives cannot time out or be cancelled, and
    a rank that is stuck, or that called another collective, leaves its peers blocked: the
    peers' watchdogs end the job with a message instead (as NCCL's watchdog does). The
    blocked MPI call has released the GIL, so the thread can run."""

    def __init__(self, timeout_s):
        self.timeout_s = timeout_s
        # (what, start, limit) while a collective waits, else None; one tuple, so the
        # thread never reads half an update.
        self.current = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, name="ferrograd.distributed watchdog", daemon=True
        )
        self._thread.start()

    def _watch(self):
        period = max(0.01, min(1.0, self.timeout_s / 10))
        delay = period
        while not self._stop.wait(delay):
            cur = self.current
            delay = period
            if cur is not None:
                left = cur[1] + cur[2] - time.monotonic()
                if left < 0:
                    _timed_out(cur[0], time.monotonic() - cur[1], cur[2])
                # Wake when it is due: a Work.wait timeout may be shorter than the period.
                delay = min(period, left + 0.005)

    def stop(self):
        self._stop.set()
        self._thread.join()


def _timed_out(what, waited_s, limit_s):
    try:
        rank = _mpi().COMM_WORLD.Get_rank()
        sys.stderr.write(
            f"[ferrograd.distributed] rank {rank}: {what} ran for {waited_s * 1000:.0f} "
            f"milliseconds before timing out (timeout {timedelta(seconds=limit_s)}): another "
            "rank stopped, is stuck, or called a different collective; aborting all ranks\n"
        )
        sys.stderr.flush()
    finally:
        _abort_job()


@contextmanager
def _watched(what, timeout=None):
    """Times the blocking MPI calls inside against the group's timeout (or ``timeout``,
    a timedelta); nested uses are timed by the outermost."""
    w = _world
    dog = w.watchdog if w is not None else None
    if dog is None or dog.current is not None:
        yield
        return
    limit = dog.timeout_s if timeout is None else timeout.total_seconds()
    dog.current = (what, time.monotonic(), limit)
    try:
        yield
    finally:
        dog.current = None


def _check_valid_timeout(timeout):
    if not isinstance(timeout, timedelta):
        raise TypeError(
            f"Expected timeout argument to be of type datetime.timedelta, got {timeout}"
        )


class GroupMember:
    """``GroupMember.WORLD`` names the default group (only it is supported)."""

    WORLD = None
    NON_GROUP_MEMBER = -100


_world: _World | None = None
_prev_excepthook = None


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError(_INSTALL_HINT) from e
    return MPI


def is_available():
    """Whether distributed training can run here: mpi4py (and so an MPI library) imports."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_mpi_available():
    """Whether the MPI backend is available (the only backend ferrograd has)."""
    return is_available()


def is_initialized():
    """Whether ``init_process_group`` has been called (and not destroyed since)."""
    return _world is not None


def _group():
    if _world is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        )
    return _world


def _check_group(group):
    w = _group()
    if group is not None and group is not GroupMember.WORLD and group is not w:
        raise ValueError("only the default process group (group=None) is supported")
    return w


def _launcher_env():
    """Rank and size set by an MPI launcher (MPICH/Hydra, Open MPI, PMIx, Slurm)."""
    for r, s in (
        ("PMI_RANK", "PMI_SIZE"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMIX_RANK", "PMIX_SIZE"),
        ("SLURM_PROCID", "SLURM_NTASKS"),
    ):
        if r in os.environ and s in os.environ:
            return int(os.environ[r]), int(os.environ[s]), r
    return None


def _abort_job():
    """Takes the whole job down after this rank reported why: MPI_Abort makes mpiexec kill
    every rank and exit non-zero."""
    try:
        # mpiexec relays each rank's output through a pipe; MPI_Abort right after the
        # write can tear the job down before the message is relayed (an empty stderr).
        time.sleep(0.5)
    finally:
        try:
            _mpi().COMM_WORLD.Abort(1)
        except Exception:  # noqa: BLE001 - nothing left to do but exit
            os._exit(1)


def _abort_excepthook(exc_type, exc, tb):
    # An uncaught exception on one rank would leave the others blocked forever in their
    # next collective. Print it, then take the whole job down: MPI_Abort makes mpiexec
    # kill every rank and exit non-zero.
    try:
        # The group may be gone: a `finally: destroy_process_group()` runs before this.
        rank = _world.rank if _world is not None else _mpi().COMM_WORLD.Get_rank()
        sys.stderr.write(f"[ferrograd.distributed] rank {rank} raised; aborting all ranks\n")
        traceback.print_exception(exc_type, exc, tb)
        sys.stderr.flush()
    finally:
        _abort_job()


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size=-1,
    rank=-1,
    store=None,
    group_name="",
    pg_options=None,
    device_id=None,
):
    """Joins this process to the default group, run by MPI: start the processes with
    ``mpiexec -n N`` or ``python -m ferrograd.distributed.run -n N``. ``rank`` and
    ``world_size`` (or torchrun's ``RANK``/``WORLD_SIZE`` variables when no MPI launcher set
    its own) are checked against what MPI reports. It also installs a ``sys.excepthook``
    that aborts every rank when one raises, so the others fail instead of hanging.
    ``timeout`` (a ``datetime.timedelta``, 30 minutes by default) bounds every wait in a
    collective: a rank blocked longer, because a peer is stuck or called another
    collective, prints which collective timed out and aborts every rank."""
    global _world, _prev_excepthook
    if timeout is None:
        timeout = default_pg_timeout
    _check_valid_timeout(timeout)
    if backend is None:
        backend = "mpi"
    if str(backend).lower() != "mpi":
        raise ValueError(
            f"Invalid backend: '{backend}'; ferrograd.distributed supports only 'mpi'"
        )
    if init_method not in (None, "env://", "mpi://"):
        raise ValueError(f"init_method {init_method!r} is not supported by the MPI backend")
    if store is not None:
        raise ValueError("the MPI backend does not use a store")
    if _world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    MPI = _mpi()
    world = MPI.COMM_WORLD
    mpi_rank, mpi_size = world.Get_rank(), world.Get_size()

    def check(what, given, source):
        if given is None or int(given) < 0:
            return
        mine = mpi_rank if what == "rank" else mpi_size
        if int(given) != mine:
            raise RuntimeError(
                f"{source} gives {what} {int(given)} but MPI reports {what} {mine} "
                f"(world size {mpi_size}); start the processes with "
                f"`python -m ferrograd.distributed.run -n N script.py` or `mpiexec -n N`"
            )

    check("rank", rank, "init_process_group(rank=...)")
    check("world_size", world_size, "init_process_group(world_size=...)")
    if _launcher_env() is None:
        # torchrun-style variables only count where no MPI launcher set its own.
        check("rank", os.environ.get("RANK"), "the RANK environment variable")
        check("world_size", os.environ.get("WORLD_SIZE"), "the WORLD_SIZE environment variable")

    _world = _World(world.Dup(), timeout)
    if sys.excepthook is not _abort_excepthook:
        # Still ours when an earlier group was destroyed while an exception unwound.
        _prev_excepthook = sys.excepthook
    sys.excepthook = _abort_excepthook


def destroy_process_group(group=None):
    """Leaves the default group and restores the previous ``sys.excepthook``, except
    when called while an exception unwinds (from the ``finally:`` clause of a ``try``
    around the training): that rank is failing and its peers may be blocked in a
    collective, so the hook stays and the uncaught exception still aborts every rank."""
    global _world, _prev_excepthook
    w = _check_group(group)
    _world = None
    w.watchdog.stop()
    if sys.exc_info()[0] is not None:
        # Freeing is collective, and the peers are not coming: leave it to MPI_Abort.
        return
    w.comm.Free()
    if sys.excepthook is _abort_excepthook:
        sys.excepthook = _prev_excepthook or sys.__excepthook__
    _prev_excepthook = None


def get_rank(group=None):
    """This process's rank in the group, from 0."""
    return _check_group(group).rank


def get_world_size(group=None):
    """The number of processes in the group."""
    return _check_group(group).size


def get_backend(group=None):
    """The group's backend: always ``"mpi"``."""
    _check_group(group)
    return "mpi"


# ---- tensors as MPI buffers ----------------------------------------------------------


def _check_tensor(t, name="tensor"):
    from .. import _C

    if not isinstance(t, _C.Tensor):
        raise TypeError(f"{name} must be a Tensor, but got {type(t).__name__}")


def _low_precision(t):
    return str(t.dtype).rsplit(".", 1)[-1] in ("float16", "bfloat16")


def _np(t):
    """``t``'s values as a NumPy array: its memory, or for float16/bfloat16 (which MPI has
    no type for, and NumPy no bfloat16) a float32 copy, exact for either."""
    d = t.detach()
    return d.float().numpy() if _low_precision(t) else d.numpy()


class _Buf:
    """A contiguous NumPy array over a tensor's memory (or a staging copy when the tensor
    is not contiguous, or float16/bfloat16: staged as float32, so a sum is done in float32
    and rounded once) and how to finish a write into the tensor."""

    def __init__(self, t):
        self.t = t
        self.staged = _low_precision(t)
        self.view = _np(t)
        if self.view.flags.c_contiguous and not self.staged:
            self.arr = self.view
        else:
            self.arr = np.ascontiguousarray(self.view)

    def written(self):
        if self.staged:
            from .. import _C

            with no_grad():
                self.t.detach().copy_(_C.from_numpy(self.arr))
            return
        if self.arr is not self.view:
            self.view[...] = self.arr
        _bump_version(self.t)


def _bump_version(t):
    # The data changed under autograd's feet; an in-place op on an empty view of the
    # tensor bumps its (shared) version counter without touching a byte.
    with no_grad():
        t.detach().reshape(-1)[:0].zero_()


def _meta(t):
    return (tuple(t.shape), str(t.dtype))


def _check_same(w, t, what):
    """Exchanges (shape, dtype) so a mismatch raises the same error on every rank
    instead of hanging or exchanging garbage."""
    with _watched(what):
        metas = w.comm.allgather(_meta(t))
    if any(m != metas[0] for m in metas):
        detail = ", ".join(f"rank {r}: {tuple(s)} {d}" for r, (s, d) in enumerate(metas))
        raise RuntimeError(
            f"{what}: tensors must have the same shape and dtype on every rank, got {detail}"
        )


def _bool_as_bytes(arr, op):
    """MPI defines no MIN/MAX on C bool: reduce bools as bytes, SUM as logical or and
    PRODUCT as logical and (as PyTorch's NCCL backend does)."""
    if arr is None or arr.dtype != np.bool_:
        return arr, op
    op = {ReduceOp.SUM: ReduceOp.MAX, ReduceOp.PRODUCT: ReduceOp.MIN}.get(op, op)
    return arr.view(np.uint8), op


def _mpi_op(op, dtype=None):
    MPI = _mpi()
    table = {
        ReduceOp.SUM: MPI.SUM,
        ReduceOp.AVG: MPI.SUM,
        ReduceOp.PRODUCT: MPI.PROD,
        ReduceOp.MIN: MPI.MIN,
        ReduceOp.MAX: MPI.MAX,
    }
    if op not in table:
        raise ValueError(f"unknown reduce op {op!r}; use ferrograd.distributed.ReduceOp")
    if op == ReduceOp.AVG and dtype is not None and not np.issubdtype(dtype, np.floating):
        raise ValueError("ReduceOp.AVG is only supported for floating-point tensors")
    return table[op]


class Work:
    """A collective in flight (``async_op=True``): ``wait()`` blocks until it finished and
    its result is in the tensors; ``is_completed()`` polls."""

    def __init__(self, what, requests, finish):
        self._what = what
        self._requests = list(requests)
        self._finish = finish
        self._done = False

    def is_completed(self):
        """Whether the collective finished; finishing writes its result."""
        if self._done:
            return True
        MPI = _mpi()
        if self._requests and not MPI.Request.Testall(self._requests):
            return False
        self._complete()
        return True

    def wait(self, timeout=None):
        """Blocks until the collective finished (the GIL is released meanwhile). Waiting
        longer than ``timeout`` (a ``datetime.timedelta``; the group's by default) aborts
        every rank, as a blocking collective that times out does."""
        if timeout is not None:
            _check_valid_timeout(timeout)
        if not self._done:
            if self._requests:
                with _watched(self._what, timeout):
                    _mpi().Request.Waitall(self._requests)
            self._complete()
        return True

    def _complete(self):
        self._done = True
        if self._finish is not None:
            f, self._finish = self._finish, None
            f()

    def result(self):
        """The tensors the collective wrote (empty: results are in place)."""
        return []


def _run(what, async_op, start_nb, start_blocking, finish):
    if async_op:
        return Work(what, [start_nb()], finish)
    with _watched(what):
        start_blocking()
    if finish is not None:
        finish()
    return None


# ---- collectives ----------------------------------------------------------------------


def barrier(group=None, async_op=False, device_ids=None):
    """Blocks until every rank reached it."""
    w = _check_group(group)
    return _run("barrier", async_op, w.comm.Ibarrier, w.comm.Barrier, None)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` over every rank in place (``op``: SUM, AVG, PRODUCT, MIN, MAX);
    every rank ends with the result. Shapes and dtypes are checked to agree first."""
    w = _check_group(group)
    _check_tensor(tensor)
    _check_same(w, tensor, "all_reduce")
    MPI = _mpi()
    b = _Buf(tensor)
    mop = _mpi_op(op, b.arr.dtype)
    arr, bop = _bool_as_bytes(b.arr, op)
    mop = _mpi_op(bop)

    def finish():
        if op == ReduceOp.AVG:
            b.arr /= w.size
        b.written()

    return _run(
        "all_reduce",
        async_op,
        lambda: w.comm.Iallreduce(MPI.IN_PLACE, arr, op=mop),
        lambda: w.comm.Allreduce(MPI.IN_PLACE, arr, op=mop),
        finish,
    )


def broadcast(tensor, src=0, group=None, async_op=False, group_src=None):
    """Copies rank ``src``'s ``tensor`` into ``tensor`` on every other rank."""
    w = _check_group(group)
    if group_src is not None:
        src = group_src
    _check_tensor(tensor)
    if not 0 <= src < w.size:
        raise ValueError(f"Invalid src rank {src} for a group of size {w.size}")
    _check_same(w, tensor, "broadcast")
    b = _Buf(tensor)
    finish = b.written if w.rank != src else None
    return _run(
        "broadcast",
        async_op,
        lambda: w.comm.Ibcast(b.arr, root=src),
        lambda: w.comm.Bcast(b.arr, root=src),
        finish,
    )


def _gather_buffer(w, t):
    return np.empty((w.size, *tuple(t.shape)), dtype=_np(t).dtype)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fills ``tensor_list[r]`` with rank r's ``tensor``, on every rank."""
    w = _check_group(group)
    _check_tensor(tensor)
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != w.size:
        raise ValueError(f"tensor_list must be a list of {w.size} tensors (the world size)")
    for o in tensor_list:
        _check_tensor(o, "tensor_list element")
        if _meta(o) != _meta(tensor):
            raise ValueError(
                "all_gather: every tensor in tensor_list must have the input's shape and dtype"
            )
    _check_same(w, tensor, "all_gather")
    src = np.ascontiguousarray(_np(tensor))
    out = _gather_buffer(w, tensor)

    def finish():
        for r, o in enumerate(tensor_list):
            ob = _Buf(o)
            ob.arr[...] = out[r]
            ob.written()

    return _run(
        "all_gather",
        async_op,
        lambda: w.comm.Iallgather(src, out),
        lambda: w.comm.Allgather(src, out),
        finish,
    )


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Writes every rank's ``input_tensor``, in rank order, into ``output_tensor`` (of
    world_size times the input's elements: stacked or concatenated along dim 0)."""
    w = _check_group(group)
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    if output_tensor.dtype != input_tensor.dtype:
        raise ValueError("all_gather_into_tensor: output and input must have the same dtype")
    if output_tensor.numel() != w.size * input_tensor.numel():
        raise ValueError(
            "output tensor size must be equal to world_size times input tensor size"
        )
    _check_same(w, input_tensor, "all_gather_into_tensor")
    src = np.ascontiguousarray(_np(input_tensor))
    ob = _Buf(output_tensor)
    return _run(
        "all_gather_into_tensor",
        async_op,
        lambda: w.comm.Iallgather(src, ob.arr),
        lambda: w.comm.Allgather(src, ob.arr),
        ob.written,
    )


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """Reduces ``input`` (world_size times ``output``'s elements) over ranks and leaves
    the r-th block of the result in rank r's ``output``."""
    w = _check_group(group)
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    if output.dtype != input.dtype:
        raise ValueError("reduce_scatter_tensor: output and input must have the same dtype")
    if input.numel() != w.size * output.numel():
        raise ValueError(
            "input tensor must be the same size as output size times world size"
        )
    _check_same(w, input, "reduce_scatter_tensor")
    src = np.ascontiguousarray(_np(input))
    ob = _Buf(output)
    _mpi_op(op, src.dtype)
    send, bop = _bool_as_bytes(src, op)
    recv, _ = _bool_as_bytes(ob.arr, op)
    mop = _mpi_op(bop)

    def finish():
        if op == ReduceOp.AVG:
            ob.arr /= w.size
        ob.written()

    return _run(
        "reduce_scatter_tensor",
        async_op,
        lambda: w.comm.Ireduce_scatter_block(send, recv, op=mop),
        lambda: w.comm.Reduce_scatter_block(send, recv, op=mop),
        finish,
    )


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input_list[r]`` over ranks into rank r's ``output``."""
    w = _check_group(group)
    _check_tensor(output, "output")
    if not isinstance(input_list, (list, tuple)) or len(input_list) != w.size:
        raise ValueError(f"input_list must be a list of {w.size} tensors (the world size)")
    for t in input_list:
        _check_tensor(t, "input_list element")
        if _meta(t) != _meta(output):
            raise ValueError(
                "reduce_scatter: every tensor in input_list must have the output's shape and dtype"
            )
    _check_same(w, output, "reduce_scatter")
    src = np.stack([np.asarray(_np(t)) for t in input_list])
    ob = _Buf(output)
    _mpi_op(op, src.dtype)
    send, bop = _bool_as_bytes(src, op)
    recv, _ = _bool_as_bytes(ob.arr, op)
    mop = _mpi_op(bop)

    def finish():
        if op == ReduceOp.AVG:
            ob.arr /= w.size
        ob.written()

    return _run(
        "reduce_scatter",
        async_op,
        lambda: w.comm.Ireduce_scatter_block(send, recv, op=mop),
        lambda: w.comm.Reduce_scatter_block(send, recv, op=mop),
        finish,
    )


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Collects every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (others pass
    ``None``)."""
    w = _check_group(group)
    _check_tensor(tensor)
    if not 0 <= dst < w.size:
        raise ValueError(f"Invalid dst rank {dst} for a group of size {w.size}")
    if w.rank == dst:
        if not isinstance(gather_list, (list, tuple)) or len(gather_list) != w.size:
            raise ValueError(f"gather_list must be a list of {w.size} tensors on the dst rank")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    _check_same(w, tensor, "gather")
    src = np.ascontiguousarray(_np(tensor))
    out = _gather_buffer(w, tensor) if w.rank == dst else None

    def finish():
        if out is not None:
            for r, o in enumerate(gather_list):
                ob = _Buf(o)
                ob.arr[...] = out[r]
                ob.written()

    return _run(
        "gather",
        async_op,
        lambda: w.comm.Igather(src, out, root=dst),
        lambda: w.comm.Gather(src, out, root=dst),
        finish,
    )


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Sends ``scatter_list[r]`` from rank ``src`` into rank r's ``tensor``."""
    w = _check_group(group)
    _check_tensor(tensor)
    if not 0 <= src < w.size:
        raise ValueError(f"Invalid src rank {src} for a group of size {w.size}")
    if w.rank == src:
        if not isinstance(scatter_list, (list, tuple)) or len(scatter_list) != w.size:
            raise ValueError(f"scatter_list must be a list of {w.size} tensors on the src rank")
        for t in scatter_list:
            if _meta(t) != _meta(tensor):
                raise ValueError("scatter: every tensor in scatter_list must match tensor")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    _check_same(w, tensor, "scatter")
    send = (
        np.stack([np.asarray(_np(t)) for t in scatter_list])
        if w.rank == src
        else None
    )
    ob = _Buf(tensor)
    return _run(
        "scatter",
        async_op,
        lambda: w.comm.Iscatter(send, ob.arr, root=src),
        lambda: w.comm.Scatter(send, ob.arr, root=src),
        ob.written,
    )

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

import atexit
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
    """The default process group: a duplicate of MPI's COMM_WORLD for the collectives (so
    user MPI traffic on COMM_WORLD never matches ours), a second one for the liveness
    messages the watchdogs exchange, and what init_process_group was given."""

    def __init__(self, comm, ctl, timeout, generation):
        self.comm = comm
        self.ctl = ctl
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.generation = generation
        # Collectives this process has entered on ``comm``: every rank enters the same
        # sequence, so a count names one collective on every rank.
        self.seq = 0
        self.watchdog = _Watchdog(self, timeout.total_seconds())

    def take(self, n=1):
        """Numbers the next ``n`` collectives on ``comm``; returns the first."""
        first = self.seq
        self.seq += n
        return first


# Liveness messages on the control communicator: one tag, tiny pickled tuples.
_TAG_STATE = 71
# A wait longer than this is told to the peers (so they can compare it with theirs).
_LONG_WAIT_S = 1.0
# Every rank blocked in a different collective for this long is a deadlock.
_CONFIRM_S = 1.0
# How often the watchdog looks (at most; less often when the group timeout is short).
_TICK_S = 0.25
_generation = 0


class _Watchdog:
    """A thread that ends the job, with a message naming the ranks involved, when this
    process waits in a collective that cannot complete. MPI collectives cannot time out
    or be cancelled, and the blocked MPI call has released the GIL, so the thread runs
    meanwhile; it wakes four times a second and costs nothing measurable.

    It aborts when

    * the wait lasted longer than the group's timeout (a peer is stuck), as NCCL's
      watchdog does;
    * a peer left the group (``destroy_process_group``, or its process exited) before
      entering the collective this rank waits in: it will never come;
    * a peer waits in a different collective under the same sequence number, or every
      rank has been blocked for a second in collectives that are not the same one:
      the ranks called different collectives and will wait for each other forever.

    The peers' states travel as small messages on a communicator of their own: a rank
    tells the others when one of its waits has lasted a second (and when it ended),
    and when it leaves. A normal step, whose waits are short, sends nothing. This
    needs ``MPI_THREAD_MULTIPLE`` (mpi4py's default); without it only the timeout
    applies."""

    def __init__(self, world, timeout_s):
        self.world = world
        self.timeout_s = timeout_s
        # (what, start, limit, first, last) while a collective waits, else None; one
        # tuple, so the thread never reads half an update. first..last are the
        # sequence numbers of the collectives the wait needs.
        self.current = None
        # Each peer's last state: ("wait", first, last, what), ("idle",) or
        # ("left", collectives_entered, how).
        self.peers = {}
        self._told = None  # the wait the peers were last told of
        self._deadlock = None  # (snapshot, since) of an all-blocked mismatch
        self.talk = False
        if world.size > 1:
            MPI = _mpi()
            self.talk = MPI.Query_thread() == MPI.THREAD_MULTIPLE
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, name="ferrograd.distributed watchdog", daemon=True
        )
        self._thread.start()

    def _watch(self):
        period = max(0.01, min(_TICK_S, self.timeout_s / 10))
        delay = period
        while not self._stop.wait(delay):
            delay = period
            cur = self.current
            if cur is not None:
                what, start, limit, _, _ = cur
                now = time.monotonic()
                left = start + limit - now
                if left < 0:
                    _timed_out(what, now - start, limit)
                # Wake when it is due: a Work.wait timeout may be shorter than the period.
                delay = min(period, left + 0.005)
            if self.talk:
                try:
                    self._exchange(cur)
                except Exception:  # noqa: BLE001 - the timeout still guards the job
                    self.talk = False

    def _exchange(self, cur):
        self._receive()
        if cur is None:
            if self._told is not None:
                self._tell(("idle",))
                self._told = None
            self._deadlock = None
            return
        what, start, _, first, last = cur
        now = time.monotonic()
        long_wait = now - start >= _LONG_WAIT_S
        if long_wait and self._told is not cur:
            self._tell(("wait", first, last, what))
            self._told = cur
        elif self._told is not None and self._told is not cur:
            # The wait the peers know of is over; this one is still short.
            self._tell(("idle",))
            self._told = None
        me = self.world.rank
        for r, st in sorted(self.peers.items()):
            if st[0] == "left" and st[1] <= last:
                _peer_failed(
                    f"{what} cannot complete: rank {r} {st[2]} after {st[1]} collectives, "
                    f"and this wait needs collective {last + 1}, which rank {r} never entered"
                    + _UNEVEN_HINT
                )
            if st[0] == "wait" and st[1] <= last and first <= st[2] and st[3] != what:
                _peer_failed(
                    f"collective mismatch: this rank waits in {what} (collective "
                    f"{_span(first, last)}) while rank {r} waits in {st[3]} (collective "
                    f"{_span(st[1], st[2])}); every rank must call the same collectives in "
                    "the same order" + _UNEVEN_HINT
                )
        waiting = {r: st for r, st in self.peers.items() if st[0] == "wait"}
        if not long_wait or len(waiting) < self.world.size - 1:
            self._deadlock = None
            return
        states = dict(waiting)
        states[me] = ("wait", first, last, what)
        snapshot = tuple(sorted((r, st[1:]) for r, st in states.items()))
        if all(st[1:] == (first, last, what) for st in states.values()):
            self._deadlock = None
            return
        if self._deadlock is None or self._deadlock[0] != snapshot:
            self._deadlock = (snapshot, now)
        elif now - self._deadlock[1] >= _CONFIRM_S:
            detail = "; ".join(
                f"rank {r}: {st[3]} (collective {_span(st[1], st[2])})"
                for r, st in sorted(states.items())
            )
            _peer_failed(
                "every rank is blocked, in collectives that do not match: " + detail
                + _UNEVEN_HINT
            )

    def _tell(self, state):
        w = self.world
        msg = (w.generation, *state)
        for r in range(w.size):
            if r != w.rank:
                w.ctl.send(msg, dest=r, tag=_TAG_STATE)

    def _receive(self):
        MPI = _mpi()
        w = self.world
        status = MPI.Status()
        while w.ctl.iprobe(source=MPI.ANY_SOURCE, tag=_TAG_STATE, status=status):
            src = status.Get_source()
            msg = w.ctl.recv(source=src, tag=_TAG_STATE)
            # A message of an earlier group of this process (a freed communicator's
            # context can be reused by a later one) is not about this group.
            if isinstance(msg, tuple) and msg and msg[0] == w.generation:
                if self.peers.get(src, ("",))[0] != "left":
                    self.peers[src] = msg[1:]

    def stop(self):
        self._stop.set()
        self._thread.join()

    def leave(self, how):
        """Stops the thread and tells the peers this rank has left the group after the
        collectives it entered, so a peer waiting for a later one fails at once."""
        self.stop()
        if self.talk:
            try:
                self._tell(("left", self.world.seq, how))
            except Exception:  # noqa: BLE001 - leaving must not fail
                pass


_UNEVEN_HINT = (
    " (if the ranks have different numbers of batches, wrap the training loop in "
    "`with ddp.join():`)"
)


def _span(first, last):
    return f"{first + 1}" if first == last else f"{first + 1}-{last + 1}"


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


def _peer_failed(message):
    try:
        rank = _mpi().COMM_WORLD.Get_rank()
        sys.stderr.write(f"[ferrograd.distributed] rank {rank}: {message}; aborting all ranks\n")
        sys.stderr.flush()
    finally:
        _abort_job()


@contextmanager
def _watched(what, first, last=None, timeout=None):
    """Watches the blocking MPI calls inside: a wait for collectives ``first..last``
    (sequence numbers from ``_World.take``) named ``what``, timed against the group's
    timeout (or ``timeout``, a timedelta) and checked against the peers' states; nested
    uses are watched by the outermost."""
    w = _world
    dog = w.watchdog if w is not None else None
    if dog is None or dog.current is not None:
        yield
        return
    limit = dog.timeout_s if timeout is None else timeout.total_seconds()
    dog.current = (what, time.monotonic(), limit, first, first if last is None else last)
    try:
        yield
    finally:
        dog.current = None


def _blocking(what, call, *args, **kwargs):
    """One blocking collective on the group: numbered, then run under the watchdog."""
    w = _group()
    first = w.take()
    with _watched(what, first):
        return call(*args, **kwargs)


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
# A group destroyed while an exception unwound: if the process then exits without the
# excepthook aborting the job (SystemExit), its peers are still told it left.
_unwound: _World | None = None
_prev_excepthook = None
_atexit_registered = False


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
    global _world, _prev_excepthook, _generation, _unwound, _atexit_registered
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

    _generation += 1
    _unwound = None
    _world = _World(world.Dup(), world.Dup(), timeout, _generation)
    if not _atexit_registered:
        # Registered after mpi4py's import, so it runs before MPI is finalized.
        atexit.register(_leave_at_exit)
        _atexit_registered = True
    if sys.excepthook is not _abort_excepthook:
        # Still ours when an earlier group was destroyed while an exception unwound.
        _prev_excepthook = sys.excepthook
    sys.excepthook = _abort_excepthook


def destroy_process_group(group=None):
    """Leaves the default group and restores the previous ``sys.excepthook``, except
    when called while an exception unwinds (from the ``finally:`` clause of a ``try``
    around the training): that rank is failing and its peers may be blocked in a
    collective, so the hook stays and the uncaught exception still aborts every rank."""
    global _world, _prev_excepthook, _unwound
    w = _check_group(group)
    _world = None
    if sys.exc_info()[0] is not None:
        # Freeing is collective, and the peers are not coming: leave it to MPI_Abort
        # (the excepthook's, which also prints the traceback first). Only if the
        # process exits without it (SystemExit) are the peers told at exit.
        w.watchdog.stop()
        _unwound = w
        return
    w.watchdog.leave("called destroy_process_group()")
    w.comm.Free()
    w.ctl.Free()
    if sys.excepthook is _abort_excepthook:
        sys.excepthook = _prev_excepthook or sys.__excepthook__
    _prev_excepthook = None


def _leave_at_exit():
    # A rank that exits while its peers wait for it in a collective (sys.exit after an
    # error, a loop that ended early) tells them, so they fail within a second.
    w = _world or _unwound
    if w is not None:
        w.watchdog.leave("exited")


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


class Work:
    """A collective in flight (``async_op=True``): ``wait()`` blocks until it finished and
    its result is in the tensors; ``is_completed()`` polls."""

    def __init__(self, what, requests, finish, first=0):
        self._what = what
        self._requests = list(requests)
        self._finish = finish
        self._done = False
        self._first = first

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
                with _watched(self._what, self._first, timeout=timeout):
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


def _run(w, what, async_op, start_nb, start_blocking, finish):
    first = w.take()
    if async_op:
        return Work(what, [start_nb()], finish, first)
    with _watched(what, first):
        start_blocking()
    if finish is not None:
        finish()
    return None


# ---- collectives ----------------------------------------------------------------------


def barrier(group=None, async_op=False, device_ids=None):
    """Blocks until every rank reached it."""
    w = _check_group(group)
    return _run(w, "barrier", async_op, w.comm.Ibarrier, w.comm.Barrier, None)


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
    mop = _mpi_op(bop)

    def finish():
        if op == ReduceOp.AVG:
            b.arr /= w.size
        b.written()

    return _run(
        w,
        "all_reduce",
        async_op,
        lambda: w.comm.Iallreduce(MPI.IN_PLACE, arr, op=mop),
        lambda: w.comm.Allreduce(MPI.IN_PLACE, arr, op=mop),
        finish,
    )


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
    return _run(
        w,
        "broadcast",
        async_op,
        lambda: w.comm.Ibcast(b.arr, root=src),
        lambda: w.comm.Bcast(b.arr, root=src),
        finish,
    )


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


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fills ``tensor_list[r]`` with rank r's ``tensor``, on every rank."""
    w = _check_group(group)

    def check():
        _check_tensor(tensor)
        _check_list(tensor_list, w, "tensor_list", tensor, "all_gather")

    _agree(w, "all_gather", tensor, _local(check))
    src = np.ascontiguousarray(_np(tensor))
    out = _gather_buffer(w, tensor)

    def finish():
        for r, o in enumerate(tensor_list):
            ob = _Buf(o)
            ob.arr[...] = out[r]
            ob.written()

    return _run(
        w,
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
    return _run(
        w,
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
    ob = _Buf(output)
    send, bop = _bool_as_bytes(src, op)
    recv, _ = _bool_as_bytes(ob.arr, op)
    mop = _mpi_op(bop)

    def finish():
        if op == ReduceOp.AVG:
            ob.arr /= w.size
        ob.written()

    return _run(
        w,
        "reduce_scatter_tensor",
        async_op,
        lambda: w.comm.Ireduce_scatter_block(send, recv, op=mop),
        lambda: w.comm.Reduce_scatter_block(send, recv, op=mop),
        finish,
    )


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input_list[r]`` over ranks into rank r's ``output``."""
    w = _check_group(group)

    def check():
        _check_tensor(output, "output")
        _check_list(input_list, w, "input_list", output, "reduce_scatter")
        _check_op(op, output)

    _agree(w, "reduce_scatter", output, _local(check), (("op", op),))
    src = np.stack([np.asarray(_np(t)) for t in input_list])
    ob = _Buf(output)
    send, bop = _bool_as_bytes(src, op)
    recv, _ = _bool_as_bytes(ob.arr, op)
    mop = _mpi_op(bop)

    def finish():
        if op == ReduceOp.AVG:
            ob.arr /= w.size
        ob.written()

    return _run(
        w,
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

    def check():
        _check_tensor(tensor)
        _check_rank(dst, w, "dst")
        if w.rank == dst:
            _check_list(gather_list, w, "gather_list", tensor, "gather")
        elif gather_list:
            raise ValueError(
                "Argument ``gather_list`` must NOT be specified on non-destination ranks."
            )

    _agree(w, "gather", tensor, _local(check), (("dst", dst),))
    src = np.ascontiguousarray(_np(tensor))
    out = _gather_buffer(w, tensor) if w.rank == dst else None

    def finish():
        if out is not None:
            for r, o in enumerate(gather_list):
                ob = _Buf(o)
                ob.arr[...] = out[r]
                ob.written()

    return _run(
        w,
        "gather",
        async_op,
        lambda: w.comm.Igather(src, out, root=dst),
        lambda: w.comm.Gather(src, out, root=dst),
        finish,
    )


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Sends ``scatter_list[r]`` from rank ``src`` into rank r's ``tensor``."""
    w = _check_group(group)

    def check():
        _check_tensor(tensor)
        _check_rank(src, w, "src")
        if w.rank == src:
            _check_list(scatter_list, w, "scatter_list", tensor, "scatter")
        elif scatter_list:
            raise ValueError(
                "Argument ``scatter_list`` must NOT be specified on non-source ranks."
            )

    _agree(w, "scatter", tensor, _local(check), (("src", src),))
    send = (
        np.stack([np.asarray(_np(t)) for t in scatter_list])
        if w.rank == src
        else None
    )
    ob = _Buf(tensor)
    return _run(
        w,
        "scatter",
        async_op,
        lambda: w.comm.Iscatter(send, ob.arr, root=src),
        lambda: w.comm.Scatter(send, ob.arr, root=src),
        ob.written,
    )

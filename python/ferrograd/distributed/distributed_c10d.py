"""The process group of ``ferrograd.distributed``, over MPI (mpi4py): its state,
``init_process_group`` and ``destroy_process_group``, the job-wide abort, and the waits
on the group that the watchdog (``_watchdog.py``) times. Tensors as MPI buffers
(``_buffers.py``), the ranks' agreement on a collective's arguments (``_agreement.py``),
``Work`` (``_work.py``) and the collectives (``_collectives.py``) live beside it; this
module re-exports the names PyTorch has in ``torch.distributed.distributed_c10d``.

mpi4py is imported lazily: ``import ferrograd`` never needs it.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
import traceback
from contextlib import contextmanager
from datetime import timedelta

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


_generation = 0


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


# The watchdog, Work and the collectives import the group state above, so they come
# after it.
from ._collectives import (  # noqa: E402
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    barrier,
    broadcast,
    gather,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from ._watchdog import _Watchdog  # noqa: E402
from ._work import Work  # noqa: E402

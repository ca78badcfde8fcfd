"""The watchdog: a thread per process that ends the job, naming the collective and the
ranks, when a wait on the group cannot complete (a timeout, a peer that left, a peer in
another collective, every rank blocked in different ones); the liveness messages it
exchanges with its peers."""

from __future__ import annotations

import sys
import threading
import time
from datetime import timedelta

from .distributed_c10d import _abort_job, _mpi

# Liveness messages on the control communicator: one tag, tiny pickled tuples.
_TAG_STATE = 71
# A wait longer than this is told to the peers (so they can compare it with theirs).
_LONG_WAIT_S = 1.0
# Every rank blocked in a different collective for this long is a deadlock.
_CONFIRM_S = 1.0
# How often the watchdog looks (at most; less often when the group timeout is short).
_TICK_S = 0.25


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

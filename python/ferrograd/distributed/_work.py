"""``Work``, a collective in flight (``async_op=True``), and how a collective is started
blocking or not."""

from __future__ import annotations

from .distributed_c10d import _check_valid_timeout, _mpi, _watched


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

"""Anomaly detection, as ``torch.autograd.anomaly_mode``.

The mode is a per-thread flag in Rust. While it is on, every graph node
keeps the Python stack of the forward call that made it, every in-place
write keeps its stack next to the tensor's version counter, and the engine
checks each node's gradients for NaN; an error in a node's backward is
preceded by a warning showing where that node was made.
"""

from __future__ import annotations

import functools
import warnings

from .. import _C

__all__ = [
    "detect_anomaly",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "set_anomaly_enabled",
    "set_detect_anomaly",
]


def is_anomaly_enabled() -> bool:
    """Returns True while anomaly detection is enabled on this thread."""
    return _C.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Returns True when anomaly detection also checks every backward node's
    gradients for NaN."""
    return _C.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turns anomaly detection on or off on this thread (``torch.set_anomaly_enabled``)."""
    _C.set_anomaly_enabled(bool(enabled), bool(check_nan))


class detect_anomaly:
    """Context manager (and decorator) that enables anomaly detection for
    autograd. Every node records the stack of the forward call that created
    it; when a backward node fails, a warning shows that stack, and with
    ``check_nan=True`` a node whose gradient contains NaN raises
    ``RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th
    output.`` The "modified by an inplace operation" error also shows where
    the offending in-place write ran. This slows every op down; use it only
    while debugging."""

    def __init__(self, check_nan=True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn(
            "Anomaly Detection has been enabled. "
            "This mode will increase the runtime "
            "and should only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, func):
        """Runs ``func`` with anomaly detection enabled (decorator form)."""
        check_nan = self.check_nan

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            prev = is_anomaly_enabled()
            prev_check_nan = is_anomaly_check_nan_enabled()
            set_anomaly_enabled(True, check_nan)
            try:
                return func(*args, **kwargs)
            finally:
                set_anomaly_enabled(prev, prev_check_nan)

        return wrapper


class set_detect_anomaly:
    """Turns anomaly detection on or off (``mode``), immediately when called
    as a function, or for a ``with`` block, restoring the previous setting
    on exit. ``check_nan`` chooses whether backward nodes' gradients are
    checked for NaN. See :class:`detect_anomaly`."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)

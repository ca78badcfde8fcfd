"""Knobs of ``ferrograd.compile`` (read at each call)."""

#: Most tapes one compiled function keeps (one per distinct guard set, as
#: ``torch._dynamo.config.cache_size_limit``). When a call would record one
#: more, a ``RuntimeWarning`` names the guard that keeps failing and the call
#: runs eagerly.
cache_size_limit: int = 8

#: With ``check=True``, how many replays are compared with an eager run.
check_calls: int = 2

__all__ = ["cache_size_limit", "check_calls"]

"""Settings of ``ferrograd.compile``, under ``torch._dynamo``'s names so code
that tunes them ports (``ferrograd._dynamo.config.cache_size_limit``)."""

from . import config

__all__ = ["config", "reset"]


def reset() -> None:
    """Forgets every compiled function's tapes (as ``torch._dynamo.reset``);
    the next call of each records again."""
    from .._compile import _reset_all

    _reset_all()

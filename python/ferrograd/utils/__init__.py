"""``ferrograd.utils``: data loading (``ferrograd.utils.data``) and activation
checkpointing (``ferrograd.utils.checkpoint``)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]

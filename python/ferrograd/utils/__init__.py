"""``ferrograd.utils``: data loading (``ferrograd.utils.data``)."""

from . import data

__all__ = ["data"]

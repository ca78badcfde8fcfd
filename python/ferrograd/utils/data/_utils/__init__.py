"""Helpers of ``DataLoader``: collation and the worker processes."""

from . import collate, worker

__all__ = ["collate", "worker"]

"""``ferrograd.cpu``: the CPU device module PyTorch scripts reach for
(``torch.cpu.amp``, ``torch.cpu.is_available()``)."""

from __future__ import annotations

from . import amp

__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]


def is_available() -> bool:
    """Always True."""
    return True


def device_count() -> int:
    """1: the CPU counts as one device, as in PyTorch."""
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU ops finish before they return."""

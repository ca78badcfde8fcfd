"""``ferrograd.cuda``: what a CPU-only PyTorch build answers.

Code written for GPUs checks ``cuda.is_available()`` and seeds every device;
here there is none, so the checks say so and the seeding functions do
nothing, as they do in a PyTorch build without CUDA.
"""

from __future__ import annotations

__all__ = [
    "device_count",
    "empty_cache",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "synchronize",
    "current_device",
]


def is_available():
    """Always ``False``: ferrograd has no CUDA support."""
    return False


def device_count():
    """Always ``0``."""
    return 0


def is_initialized():
    return False


def manual_seed(seed):
    """Does nothing (no CUDA device to seed), as PyTorch without CUDA."""
    int(seed)


def manual_seed_all(seed):
    """Does nothing (no CUDA device to seed), as PyTorch without CUDA."""
    int(seed)


def seed():
    """Does nothing, as PyTorch without CUDA."""


def seed_all():
    """Does nothing, as PyTorch without CUDA."""


def empty_cache():
    """Does nothing: there is no CUDA memory cache."""


def synchronize(device=None):
    raise RuntimeError("ferrograd has no CUDA support: there is no CUDA device to synchronize")


def current_device():
    raise RuntimeError("ferrograd has no CUDA support: there is no current CUDA device")

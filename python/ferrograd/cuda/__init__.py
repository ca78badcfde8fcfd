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
    "get_device_name",
    "get_device_properties",
    "get_device_capability",
    "set_device",
    "is_bf16_supported",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "memory_stats",
    "memory_summary",
    "mem_get_info",
    "ipc_collect",
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


def _no_device(what):
    return RuntimeError(f"ferrograd has no CUDA support: there is no CUDA device to {what}")


def get_device_name(device=None):
    """Raises: there is no CUDA device to name (as PyTorch without a GPU)."""
    raise _no_device("name")


def get_device_properties(device=None):
    """Raises: there is no CUDA device (as PyTorch without a GPU)."""
    raise _no_device("describe")


def get_device_capability(device=None):
    """Raises: there is no CUDA device (as PyTorch without a GPU)."""
    raise _no_device("describe")


def set_device(device):
    """Raises: there is no CUDA device to select (as PyTorch without a GPU)."""
    raise _no_device("select")


def mem_get_info(device=None):
    """Raises: there is no CUDA memory to measure (as PyTorch without a GPU)."""
    raise _no_device("measure")


def is_bf16_supported(including_emulation=True):
    """Always ``False``: there is no CUDA device."""
    return False


def memory_allocated(device=None):
    """Always ``0``: no CUDA memory is ever allocated (PyTorch without a GPU says the same)."""
    return 0


def max_memory_allocated(device=None):
    """Always ``0`` (see ``memory_allocated``)."""
    return 0


def memory_reserved(device=None):
    """Always ``0`` (see ``memory_allocated``)."""
    return 0


def max_memory_reserved(device=None):
    """Always ``0`` (see ``memory_allocated``)."""
    return 0


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device=None):
    """Does nothing: there are no CUDA memory statistics."""


def reset_max_memory_allocated(device=None):
    """Does nothing: there are no CUDA memory statistics."""


def reset_max_memory_cached(device=None):
    """Does nothing: there are no CUDA memory statistics."""


def memory_stats(device=None):
    """An empty dict: there are no CUDA memory statistics."""
    return {}


def memory_summary(device=None, abbreviated=False):
    """A one-line summary saying there is no CUDA memory."""
    return "ferrograd has no CUDA support: no CUDA memory is allocated.\n"


def ipc_collect():
    """Does nothing: there is no CUDA IPC memory."""


from . import amp  # noqa: E402, F401  (autocast and GradScaler's deprecated CUDA spellings)

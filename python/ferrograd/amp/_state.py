"""The thread-local autocast state by device, as ``ferrograd.is_autocast_enabled``
and friends expose it. CPU autocast lives in the core (each thread has its
own); the other device types PyTorch knows keep a per-thread flag and dtype
here, which no op reads: ferrograd has no such device, so a region there
casts nothing."""

from __future__ import annotations

import threading

from .. import _C

#: The device types ``autocast`` accepts (PyTorch's list); only "cpu" casts.
DEVICE_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
    "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)

class _Other(threading.local):
    def __init__(self):
        self.enabled: dict = {}
        self.dtype: dict = {}


_other = _Other()


def check_device(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    base = device_type.split(":")[0]
    if base not in DEVICE_TYPES:
        raise RuntimeError(
            "Expected one of " + ", ".join(DEVICE_TYPES)
            + f" device type at start of device string: {device_type}"
        )
    return base


def is_enabled(device_type) -> bool:
    d = check_device(device_type)
    if d == "cpu":
        return _C._autocast_cpu_enabled()
    return _other.enabled.get(d, False)


def set_enabled(device_type, enabled: bool) -> None:
    d = check_device(device_type)
    if d == "cpu":
        _C._set_autocast_cpu_enabled(bool(enabled))
    else:
        _other.enabled[d] = bool(enabled)


def get_dtype(device_type):
    import ferrograd

    d = check_device(device_type)
    if d == "cpu":
        return _C._autocast_cpu_dtype()
    return _other.dtype.get(d, ferrograd.float16)


def set_dtype(device_type, dtype) -> None:
    d = check_device(device_type)
    if d == "cpu":
        _C._set_autocast_cpu_dtype(dtype)
    else:
        _other.dtype[d] = dtype


# ----- the public functions (``ferrograd.is_autocast_enabled``, ...) -------------------------


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (no
    argument: ``"cuda"``, as in PyTorch)."""
    return is_enabled("cuda" if device_type is None else device_type)


def set_autocast_enabled(device_type: str | bool, enabled: bool | None = None) -> None:
    """Switches autocast for ``device_type`` on or off in this thread
    (``set_autocast_enabled(flag)`` alone means CUDA, as in PyTorch)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    set_enabled(device_type, enabled)


def get_autocast_dtype(device_type: str) -> _C.dtype:
    """The dtype autocast casts to for ``device_type`` in this thread
    (bfloat16 for "cpu" unless set, float16 for the others)."""
    return get_dtype(device_type)


def set_autocast_dtype(device_type: str, dtype: _C.dtype) -> None:
    """Sets the dtype autocast casts to for ``device_type`` in this thread."""
    set_dtype(device_type, dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether regions cache the low-precision copies of weights."""
    return _C._autocast_cache_enabled()


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Switches the weight cast cache of this thread's regions on or off."""
    _C._set_autocast_cache_enabled(bool(enabled))


def clear_autocast_cache() -> None:
    """Drops this thread's cached casts (each outermost region does on exit)."""
    _C._clear_autocast_cache()


def autocast_increment_nesting() -> int:
    """Counts one more open region in this thread; returns the new depth."""
    return _C._autocast_increment_nesting()


def autocast_decrement_nesting() -> int:
    """Counts one region less; returns the new depth (0: the cache may go)."""
    return _C._autocast_decrement_nesting()


def is_autocast_cpu_enabled() -> bool:
    """Deprecated spelling of ``is_autocast_enabled("cpu")``."""
    import warnings

    warnings.warn(
        "torch.is_autocast_cpu_enabled() is deprecated. Please use "
        "torch.is_autocast_enabled('cpu') instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    return is_enabled("cpu")


def get_autocast_cpu_dtype() -> _C.dtype:
    """Deprecated spelling of ``get_autocast_dtype("cpu")``."""
    import warnings

    warnings.warn(
        "torch.get_autocast_cpu_dtype() is deprecated. Please use "
        "torch.get_autocast_dtype('cpu') instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    return get_dtype("cpu")


__all__ = [
    "autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache",
    "get_autocast_cpu_dtype", "get_autocast_dtype", "is_autocast_cache_enabled",
    "is_autocast_cpu_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
    "set_autocast_dtype", "set_autocast_enabled",
]
PUBLIC = __all__

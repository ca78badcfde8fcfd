"""``autocast``: a context manager and decorator that switches mixed
precision on (or off) for the ops of a region, in this thread."""

from __future__ import annotations

import functools
import warnings
from typing import Any

from .. import _C
from . import _state

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]


def is_autocast_available(device_type: str) -> bool:
    """Whether ``device_type`` names a device type autocast accepts."""
    return _state.check_device(device_type) in _state.DEVICE_TYPES


def _cuda_available() -> bool:
    from .. import cuda

    return cuda.is_available()


class autocast:
    """Runs the ops of a region in mixed precision.

    Inside ``with ferrograd.autocast("cpu", dtype=ferrograd.bfloat16):``,
    the ops PyTorch lists as lower-precision (``mm``, ``matmul``, ``linear``,
    the convolutions, ``scaled_dot_product_attention``, ...) cast their
    floating inputs to ``dtype``; the ops it lists as float32 (losses, linear
    algebra, ...) cast float16/bfloat16 inputs to float32; ``cat``, ``stack``
    and ``index_copy`` cast to their widest floating input. float64 and
    integer tensors are never cast. The casts are recorded, so backward runs
    each op in the dtype its forward used and a float32 leaf gets a float32
    gradient. Regions nest; ``enabled=False`` switches autocast off inside an
    enclosing region. With ``cache_enabled``, the lower-precision copy of a
    float32 leaf that requires grad (a weight) is made once per outermost
    region. Also a decorator: ``@ferrograd.autocast("cpu")``.

    ``device_type="cuda"`` is accepted: ferrograd has no CUDA device, so an
    enabled region warns and disables itself, as PyTorch does without CUDA.
    """

    def __init__(
        self,
        device_type: str,
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ):
        self.device = _state.check_device(device_type)
        self.fast_dtype = _state.get_dtype(self.device) if dtype is None else dtype
        self._cache_enabled = (
            _C._autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        )
        if enabled:
            import ferrograd

            if self.device == "cuda":
                if not _cuda_available():
                    warnings.warn(
                        "CUDA is not available or torch_xla is imported. Disabling autocast.",
                        stacklevel=2,
                    )
                    enabled = False
            elif self.fast_dtype not in (ferrograd.bfloat16, ferrograd.float16):
                name = self.device.upper()
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling "
                    f"autocast.\n{name} Autocast only supports dtypes of ferrograd.bfloat16, "
                    "ferrograd.float16 currently.",
                    stacklevel=2,
                )
                enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = _C._autocast_cache_enabled()
        self.prev = _state.is_enabled(self.device)
        self.prev_fastdtype = _state.get_dtype(self.device)
        _state.set_enabled(self.device, self._enabled)
        _state.set_dtype(self.device, self.fast_dtype)
        _C._autocast_increment_nesting()
        _C._set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        # The cache lives until the outermost region exits.
        if _C._autocast_decrement_nesting() == 0:
            _C._clear_autocast_cache()
        _state.set_enabled(self.device, self.prev)
        _state.set_dtype(self.device, self.prev_fastdtype)
        _C._set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with ferrograd.autocast(device_type=...):\n"
                "        output = model(input)"
            )

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast

    def __repr__(self):
        return (
            f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
            f"enabled={self._enabled}, cache_enabled={self._cache_enabled})"
        )


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for a custom ``autograd.Function``'s ``forward``: with
    ``cast_inputs`` (a floating dtype), inside an autocast region, floating
    tensor arguments are cast to it and the forward runs with autocast off;
    the backward decorated with :func:`custom_bwd` then runs under the
    autocast state the forward saw."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    device = _state.check_device(device_type)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = _state.get_dtype(device)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = _state.is_enabled(device)
            return fwd(*args, **kwargs)
        autocast_context = _state.is_enabled(device)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device, enabled=False):
                return fwd(*_cast(args, cast_inputs), **_cast(kwargs, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for a custom ``autograd.Function``'s ``backward``: runs it
    under the autocast state (on or off, and dtype) its forward saw."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    device = _state.check_device(device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


def _cast(value, dtype):
    from .. import Tensor

    if isinstance(value, Tensor):
        floating = value.is_floating_point() and value.dtype is not _float64()
        return value.to(dtype) if floating else value
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _float64():
    import ferrograd

    return ferrograd.float64

"""``ferrograd.cuda.amp``: PyTorch's deprecated CUDA spellings of
``ferrograd.amp``. ferrograd has no CUDA device, so an enabled ``autocast``
or ``GradScaler`` here warns and disables itself; ``enabled=False`` (the
common way scripts switch AMP off) is a silent no-op apart from PyTorch's
deprecation warning."""

from __future__ import annotations

import functools
import warnings

from ...amp import autocast_mode as _mode
from ...amp import grad_scaler as _scaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


class autocast(_mode.autocast):
    """``ferrograd.amp.autocast("cuda", ...)`` (deprecated spelling)."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        import ferrograd

        warnings.warn(
            "`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", enabled=enabled,
                         dtype=ferrograd.float16 if dtype is None else dtype,
                         cache_enabled=cache_enabled)


class GradScaler(_scaler.GradScaler):
    """``ferrograd.amp.GradScaler("cuda", ...)`` (deprecated spelling)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn(
            "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``ferrograd.amp.custom_fwd(device_type="cuda")`` (deprecated spelling)."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return _mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``ferrograd.amp.custom_bwd(device_type="cuda")`` (deprecated spelling)."""
    return _mode.custom_bwd(bwd, device_type="cuda")

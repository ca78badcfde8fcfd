"""``ferrograd.cpu.amp``: PyTorch's deprecated CPU spellings of
``ferrograd.amp.autocast("cpu", ...)`` and ``GradScaler("cpu", ...)``."""

from __future__ import annotations

import warnings

from ...amp import autocast_mode as _mode
from ...amp import grad_scaler as _scaler

__all__ = ["GradScaler", "autocast"]


class autocast(_mode.autocast):
    """``ferrograd.amp.autocast("cpu", ...)`` (deprecated spelling)."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        import ferrograd

        warnings.warn(
            "`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", enabled=enabled,
                         dtype=ferrograd.bfloat16 if dtype is None else dtype,
                         cache_enabled=cache_enabled)


class GradScaler(_scaler.GradScaler):
    """``ferrograd.amp.GradScaler("cpu", ...)`` (deprecated spelling)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn(
            "`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)

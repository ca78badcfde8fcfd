"""``GradScaler``: dynamic loss scaling for float16 training.

A float16 gradient below 2**-24 flushes to zero. The scaler multiplies the
loss by a large factor before backward, so gradients are scaled by it too,
divides them back (``unscale_``) before the optimizer reads them, skips the
step when a gradient overflowed to inf or NaN, and adapts the factor:
halved after an overflow, doubled after ``growth_interval`` clean steps.
The state dict has PyTorch's keys.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum
from typing import Any

import numpy as np

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict:
    return {"stage": OptState.READY, "found_inf": None}


_FIX = (
    "This may indicate your script did not use scaler.scale(loss or outputs) earlier in "
    "the iteration."
)


class GradScaler:
    """Scales losses and unscales gradients so float16 gradients keep their
    small values (see the module docstring).

    ``enabled=False`` makes every method a no-op (``scale`` returns its
    argument, ``step`` just calls ``optimizer.step()``), so one script serves
    both precisions. As in PyTorch, ``device`` defaults to ``"cuda"``: with
    no CUDA device an enabled scaler warns and disables itself; use
    ``GradScaler("cpu")``.
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled:
            from .. import cuda

            if not cuda.is_available():
                warnings.warn(
                    "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                    "Disabling.",
                    stacklevel=2,
                )
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = float(init_scale)
            self._scale = None  # a float32 0-d tensor, made by the first scale()
            self._growth_factor = float(growth_factor)
            self._backoff_factor = float(backoff_factor)
            self._growth_interval = int(growth_interval)
            self._init_growth_tracker = 0
            self._growth_tracker = None  # consecutive steps without inf/NaN
            self._per_optimizer_states = defaultdict(_fresh_state)

    # ----- scaling -------------------------------------------------------------------------

    def _lazy_init(self) -> None:
        import ferrograd

        self._scale = ferrograd.full((), self._init_scale, dtype=ferrograd.float32)
        self._growth_tracker = self._init_growth_tracker

    def _check(self, funcname: str):
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + _FIX)
        return self._scale

    def scale(self, outputs):
        """``outputs`` (a tensor, or an iterable of them, nested) times the scale."""
        if not self._enabled:
            return outputs
        from .. import Tensor

        if self._scale is None:
            self._lazy_init()

        def apply(val):
            if isinstance(val, Tensor):
                return val * self._scale
            if isinstance(val, (list, tuple)):
                return type(val)(apply(v) for v in val)
            if hasattr(val, "__iter__"):
                return map(apply, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale: float, allow_fp16: bool) -> bool:
        import ferrograd

        found_inf = False
        with ferrograd.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, ferrograd.Tensor):
                        raise AssertionError(f"expected Tensor but got {type(param)}")
                    if param.grad is None:
                        continue
                    g = param.grad
                    if (not allow_fp16) and g.dtype == ferrograd.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if inv_scale != 1.0:
                        g.mul_(inv_scale)
                    if not found_inf and not bool(ferrograd.isfinite(g).all()):
                        found_inf = True
        return found_inf

    def unscale_(self, optimizer) -> None:
        """Divides ``optimizer``'s gradients by the scale in place, and notes
        whether any is inf or NaN. At most once per optimizer between
        ``update()`` calls (before clipping, say); ``step`` does it if not."""
        if not self._enabled:
            return
        self._check("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # The reciprocal in float64, rounded to float32, as PyTorch computes it.
        inv_scale = float(np.float32(1.0 / float(self._scale.item())))
        state["found_inf"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args: Any, **kwargs: Any):
        """Unscales the gradients if ``unscale_`` was not called, then runs
        ``optimizer.step(*args, **kwargs)`` unless a gradient is inf or NaN
        (the step is skipped and ``None`` returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not state["found_inf"]:
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Sets the scale for the next iteration: ``new_scale`` if given,
        else the scale times ``backoff_factor`` if any optimizer saw inf/NaN
        this iteration, times ``growth_factor`` after ``growth_interval``
        clean iterations in a row, unchanged otherwise."""
        if not self._enabled:
            return
        self._check("update")
        from .. import Tensor

        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = (
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                    "torch.FloatTensor with requires_grad=False."
                )
                if not isinstance(new_scale, Tensor) or new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()))
        else:
            found = [
                s["found_inf"]
                for s in self._per_optimizer_states.values()
                if s["found_inf"] is not None
            ]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            scale = float(self._scale.item())
            if any(found):
                scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = scale * self._growth_factor
                    # PyTorch keeps the scale when growing it would overflow float32.
                    with np.errstate(over="ignore"):
                        finite = bool(np.isfinite(np.float32(grown)))
                    if finite:
                        scale = grown
                    self._growth_tracker = 0
            self._scale.fill_(scale)
        self._per_optimizer_states = defaultdict(_fresh_state)

    # ----- accessors and state -------------------------------------------------------------

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``
        and ``_growth_tracker`` (PyTorch's keys); empty when disabled."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved "
                "from a disabled instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = int(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError(
                    "A GradScaler instance may only be pickled at the beginning "
                    "of an iteration, or at the end after scaler.update()."
                )
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_state)


"""Weight averaging (``optim.swa_utils``): ``AveragedModel`` for stochastic
weight averaging and exponential moving averages, and the ``SWALR``
scheduler, as in PyTorch."""

from __future__ import annotations

import math
import warnings
from copy import deepcopy
from typing import Any, Callable, Literal

from .. import _C
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _format_param
from .optimizer import Optimizer

__all__ = [
    "AveragedModel",
    "SWALR",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
]


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """In-place exponential moving average over lists of tensors:
    ``ema = lerp(ema, current, 1 - decay)``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema_params, current_params, num_averaged):
        w = 1 - decay
        for e, c in zip(ema_params, current_params):
            e.copy_(e + w * (c - e) if w < 0.5 else c - (c - e) * (1 - w))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """In-place running mean over lists of tensors: ``avg += (current - avg) / (n + 1)``."""

    def swa_update(averaged_params, current_params, num_averaged):
        n = float(num_averaged.item() if hasattr(num_averaged, "item") else num_averaged)
        for a, c in zip(averaged_params, current_params):
            a.copy_(a + (c - a) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``decay * ema + (1 - decay) * current`` for one tensor."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """``avg + (current - avg) / (n + 1)`` for one tensor."""

    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _buffers(module: Module) -> list:
    found = []
    for m in [module, *_submodules(module)]:
        found.extend(b for b in getattr(m, "_buffers", {}).values() if b is not None)
    return found


def _submodules(module: Module) -> list:
    out = []
    for child in getattr(module, "_modules", {}).values():
        if child is not None:
            out.append(child)
            out.extend(_submodules(child))
    return out


class AveragedModel(Module):
    """Keeps an averaged copy of ``model``: by default the running mean of the
    parameters passed to ``update_parameters`` (SWA); ``avg_fn`` /
    ``multi_avg_fn`` (e.g. ``get_ema_multi_avg_fn(0.999)``) choose another
    average. The first update copies the parameters. ``use_buffers`` averages
    the buffers too; otherwise they are copied."""

    def __init__(self, model: Module, device: Any = None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        self.register_buffer("n_averaged", _C.tensor(0))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Folds ``model``'s current parameters into the average."""
        own = list(self.module.parameters())
        theirs = list(model.parameters())
        if self.use_buffers:
            own += _buffers(self.module)
            theirs += _buffers(model)
        with no_grad():
            averaged = [p.detach() for p in own]
            current = [p.detach() for p in theirs]
            n = int(self.n_averaged.item())
            if n == 0:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.avg_fn is not None:
                for a, c in zip(averaged, current):
                    a.copy_(self.avg_fn(a, c, self.n_averaged))
            else:
                (self.multi_avg_fn or get_swa_multi_avg_fn())(averaged, current, self.n_averaged)
            if not self.use_buffers:
                for a, c in zip(_buffers(self.module), _buffers(model)):
                    a.detach().copy_(c.detach())
            self.n_averaged.add_(1)


class SWALR(LRScheduler):
    """Anneals each group's lr to ``swa_lr`` over ``anneal_epochs`` epochs
    (cosine or linear), then keeps it constant, as PyTorch's ``SWALR``."""

    def __init__(self, optimizer: Optimizer, swa_lr: float, anneal_epochs: int = 10,
                 anneal_strategy: Literal["cos", "linear"] = "cos", last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
                    for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)



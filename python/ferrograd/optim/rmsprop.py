"""RMSprop (``optim.RMSprop``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from ._common import _bump, _check_lr, _closure, _full_like, _step_tensor, _to_scalar
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop as PyTorch's: ``v = alpha * v + (1 - alpha) * g * g``; with
    ``centered`` the running mean ``ga = lerp(ga, g, 1 - alpha)`` is
    subtracted (``sqrt(v - ga * ga)``); ``avg = sqrt(...) + eps``; with
    ``momentum`` ``b = momentum * b + g / avg`` and ``p -= lr * b``, else
    ``p -= lr * g / avg``."""

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        for group in self.param_groups:
            self._check_unsupported(group)
            momentum, centered = float(group["momentum"]), bool(group["centered"])
            rows, per = [], []
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _full_like(p, 0.0)
                    if momentum > 0:
                        state["momentum_buffer"] = _full_like(p, 0.0)
                    if centered:
                        state["grad_avg"] = _full_like(p, 0.0)
                _bump(state)
                row = [p, g, state["square_avg"]]
                if momentum > 0:
                    row.append(state["momentum_buffer"])
                if centered:
                    row.append(state["grad_avg"])
                rows.append(row)
                per.append([])
            hyper = {
                "lr": _to_scalar(group["lr"]),
                "weight_decay": float(group["weight_decay"]),
                "alpha": float(group["alpha"]),
                "eps": float(group["eps"]),
                "momentum": momentum,
                "centered": centered,
                "maximize": bool(group["maximize"]),
            }
            self._run("rmsprop", rows, hyper, per)
        return loss

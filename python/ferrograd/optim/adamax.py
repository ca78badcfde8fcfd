"""Adamax, Adam with the infinity norm (``optim.Adamax``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from ._common import _check_adam_args, _closure, _stepped, _to_scalar
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax as PyTorch's: ``m = lerp(m, g, 1 - beta1)``,
    ``u = max(beta2 * u, |g| + eps)``, ``p -= lr / (1 - beta1^t) * m / u``."""

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _check_adam_args(lr, eps, betas, weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        for group in self.param_groups:
            self._check_unsupported(group)
            beta1, beta2 = (float(b) for b in group["betas"])
            lr = _to_scalar(group["lr"])
            rows, per = [], []
            for p, g, state, step in _stepped(self, group, ("exp_avg", "exp_inf")):
                rows.append([p, g, state["exp_avg"], state["exp_inf"]])
                per.append([(lr / (1 - beta1**step)) * -1])
            hyper = {
                "weight_decay": float(group["weight_decay"]),
                "beta1": beta1,
                "beta2": beta2,
                "eps": float(group["eps"]),
                "maximize": bool(group["maximize"]),
            }
            self._run("adamax", rows, hyper, per)
        return loss

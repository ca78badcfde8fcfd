"""Adamax, Adam with the infinity norm (``optim.Adamax``)."""

from __future__ import annotations

from typing import Any, Callable

from ._common import _bump, _check_betas, _check_lr, _closure, _full_like, _step_tensor, _to_scalar
from .optimizer import Optimizer

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax as PyTorch's: ``m = lerp(m, g, 1 - beta1)``,
    ``u = max(beta2 * u, |g| + eps)``, ``p -= lr / (1 - beta1^t) * m / u``."""

    def __init__(
        self,
        params: Any,
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
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
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

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        for group in self.param_groups:
            self._check_unsupported(group)
            beta1, beta2 = (float(b) for b in group["betas"])
            lr = _to_scalar(group["lr"])
            rows, per = [], []
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _full_like(p, 0.0)
                    state["exp_inf"] = _full_like(p, 0.0)
                step = _bump(state)
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

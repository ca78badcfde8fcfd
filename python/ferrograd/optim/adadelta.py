"""Adadelta (``optim.Adadelta``)."""

from __future__ import annotations

from typing import Any, Callable

from ..autograd.grad_mode import no_grad
from ._common import _check_lr, _closure, _stepped, _to_scalar
from .optimizer import Optimizer

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012) as PyTorch's: with ``g`` the gradient (negated
    when ``maximize``, plus ``weight_decay * p``),
    ``v = rho * v + (1 - rho) * g * g``,
    ``delta = sqrt(u + eps) / sqrt(v + eps) * g``,
    ``u = rho * u + (1 - rho) * delta * delta``, ``p -= lr * delta``.

    Args:
        params: the parameters (or dicts defining parameter groups).
        lr: the coefficient that scales ``delta`` (default 1.0).
        rho: the decay of the running averages (default 0.9).
        eps: added inside the square roots (default 1e-6).
        weight_decay: L2 penalty (default 0).
        foreach, capturable, differentiable: accepted for PyTorch's
            signature; the update is the same per-parameter loop either way
            (``capturable``/``differentiable`` set to True raise at ``step``).
        maximize: ascend the objective instead (default False).

    State per parameter: ``step``, ``square_avg`` (``v``), ``acc_delta`` (``u``).
    """

    def __init__(
        self,
        params: Any,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        with no_grad():
            for group in self.param_groups:
                self._check_unsupported(group)
                lr = _to_scalar(group["lr"])
                rho, eps = float(group["rho"]), float(group["eps"])
                weight_decay, maximize = float(group["weight_decay"]), bool(group["maximize"])
                for p, g, state, _ in _stepped(self, group, ("square_avg", "acc_delta")):
                    if maximize:
                        g = -g
                    if weight_decay != 0:
                        g = g.add(p, alpha=weight_decay)
                    square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                    square_avg.mul_(rho).addcmul_(g, g, value=1 - rho)
                    std = square_avg.add(eps).sqrt_()
                    delta = acc_delta.add(eps).sqrt_()
                    delta.div_(std).mul_(g)
                    acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                    p.add_(delta, alpha=-lr)
        return loss

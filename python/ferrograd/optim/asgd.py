"""Averaged stochastic gradient descent (``optim.ASGD``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from ..autograd.grad_mode import no_grad
from ._common import (
    _bump,
    _check_lr,
    _check_steps,
    _closure,
    _full_like,
    _refuse,
    _step_tensor,
    _to_scalar,
)
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """Averaged SGD (Polyak and Juditsky, 1992) as PyTorch's: with ``g`` the
    gradient (negated when ``maximize``, plus ``weight_decay * p``) and the
    step size ``eta`` of the previous step, ``p = p * (1 - lambd * eta) - eta * g``;
    the average ``ax`` copies ``p`` while ``mu == 1`` and then moves
    ``ax += mu * (p - ax)``; after the update ``eta = lr / (1 + lambd * lr * t)^alpha``
    and ``mu = 1 / max(1, t - t0)``. ``eta`` and ``mu`` are float32 scalar
    tensors, as in PyTorch.

    Args:
        params: the parameters (or dicts defining parameter groups).
        lr: the learning rate (default 1e-2).
        lambd: the decay term (default 1e-4).
        alpha: the power of the ``eta`` update (default 0.75).
        t0: the step at which averaging starts (default 1e6).
        weight_decay: L2 penalty (default 0).
        foreach, differentiable, capturable: accepted for PyTorch's signature
            (``capturable``/``differentiable`` set to True raise at ``step``).
        maximize: ascend the objective instead (default False).

    State per parameter: ``step``, ``eta``, ``mu``, ``ax`` (the average).
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _check_lr(lr)
        if not 0.0 <= lambd:
            raise ValueError(f"Invalid lambd value: {lambd}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
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
            params, grads, axs, mus, etas, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["eta"] = _step_tensor(_to_scalar(group["lr"]))
                    state["mu"] = _step_tensor(1.0)
                    state["ax"] = _full_like(p, 0.0)
                params.append(p)
                grads.append(p.grad)
                axs.append(state["ax"])
                mus.append(state["mu"])
                etas.append(state["eta"])
                steps.append(state["step"])
            asgd(params, grads, axs, mus, etas, steps, maximize=group["maximize"],
                 lambd=group["lambd"], lr=group["lr"], t0=group["t0"], alpha=group["alpha"],
                 weight_decay=group["weight_decay"])
        return loss


def asgd(
    params: list[Any], grads: list[Any], axs: list[Any], mus: list[Any], etas: list[Any],
    state_steps: list[Any], foreach: bool | None = None, maximize: bool = False,
    differentiable: bool = False, capturable: bool = False, has_complex: bool = False, *,
    lambd: float, lr: float, t0: float, alpha: float, weight_decay: float,
) -> None:
    """ASGD's update (``optim.ASGD``'s step) over lists of tensors; adds one
    to each ``state_steps`` tensor and moves ``etas`` and ``mus``."""
    _check_steps(state_steps)
    _refuse(differentiable, capturable)
    lr = _to_scalar(lr)
    with no_grad():
        for p, g, ax, mu, eta, step_t in zip(params, grads, axs, mus, etas, state_steps):
            if maximize:
                g = -g
            step = _bump({"step": step_t})
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            eta_value = float(eta.item())
            p.mul_(1 - lambd * eta_value)
            p.add_(g, alpha=-eta_value)
            if mu.item() != 1:
                ax.add_(p.sub(ax).mul_(mu))
            else:
                ax.copy_(p)
            # Through a new scalar tensor, as PyTorch does: the value is rounded
            # to the scalar dtype even if the state was cast to float64.
            eta.copy_(_step_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
            mu.copy_(_step_tensor(1 / max(1, step - t0)))

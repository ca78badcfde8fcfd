"""Adadelta (``optim.Adadelta``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from ..autograd.grad_mode import no_grad
from ._common import (
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

__all__ = ["Adadelta", "adadelta"]


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
        params: ParamsT,
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

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        for group in self.param_groups:
            self._check_unsupported(group)
            params, grads, square_avgs, acc_deltas, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _full_like(p, 0.0)
                    state["acc_delta"] = _full_like(p, 0.0)
                params.append(p)
                grads.append(p.grad)
                square_avgs.append(state["square_avg"])
                acc_deltas.append(state["acc_delta"])
                steps.append(state["step"])
            adadelta(params, grads, square_avgs, acc_deltas, steps, lr=group["lr"],
                     rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
                     maximize=group["maximize"])
        return loss


def adadelta(
    params: list[Any], grads: list[Any], square_avgs: list[Any], acc_deltas: list[Any],
    state_steps: list[Any], capturable: bool = False, foreach: bool | None = None,
    differentiable: bool = False, has_complex: bool = False, *, lr: float, rho: float,
    eps: float, weight_decay: float, maximize: bool,
) -> None:
    """Adadelta's update (``optim.Adadelta``'s step) over lists of tensors;
    adds one to each ``state_steps`` tensor."""
    _check_steps(state_steps)
    _refuse(differentiable, capturable)
    lr = _to_scalar(lr)
    with no_grad():
        for p, g, square_avg, acc_delta, step in zip(
            params, grads, square_avgs, acc_deltas, state_steps
        ):
            step.add_(1)
            if maximize:
                g = -g
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            square_avg.mul_(rho).addcmul_(g, g, value=1 - rho)
            std = square_avg.add(eps).sqrt_()
            delta = acc_delta.add(eps).sqrt_()
            delta.div_(std).mul_(g)
            acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            p.add_(delta, alpha=-lr)

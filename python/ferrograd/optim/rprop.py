"""Resilient backpropagation (``optim.Rprop``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from .. import _C
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

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """Rprop (Riedmiller and Braun, 1993) as PyTorch's: each element keeps its
    own step size, multiplied by ``etaplus`` where the gradient kept its sign
    since the previous step, by ``etaminus`` where it flipped (and 1 where
    either is zero), then clamped to ``step_sizes``; where the sign flipped
    the gradient is taken as zero for this step. The parameter moves by
    ``-sign(g) * step_size`` and the (zeroed) gradient is kept as ``prev``.

    Args:
        params: the parameters (or dicts defining parameter groups).
        lr: the initial step size of every element (default 1e-2).
        etas: ``(etaminus, etaplus)``, with ``0 < etaminus < 1 < etaplus``
            (default (0.5, 1.2)).
        step_sizes: ``(min, max)`` step sizes (default (1e-6, 50)).
        capturable, foreach, differentiable: accepted for PyTorch's signature
            (``capturable``/``differentiable`` set to True raise at ``step``).
        maximize: ascend the objective instead (default False).

    State per parameter: ``step``, ``prev``, ``step_size``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
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
            params, grads, prevs, step_sizes, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["prev"] = _full_like(p, 0.0)
                    state["step_size"] = _full_like(p, _to_scalar(group["lr"]))
                params.append(p)
                grads.append(p.grad)
                prevs.append(state["prev"])
                step_sizes.append(state["step_size"])
                steps.append(state["step"])
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            rprop(params, grads, prevs, step_sizes, steps, maximize=group["maximize"],
                  step_size_min=step_size_min, step_size_max=step_size_max,
                  etaminus=etaminus, etaplus=etaplus)
        return loss


def rprop(
    params: list[Any], grads: list[Any], prevs: list[Any], step_sizes: list[Any],
    state_steps: list[Any], foreach: bool | None = None, capturable: bool = False,
    maximize: bool = False, differentiable: bool = False, has_complex: bool = False, *,
    step_size_min: float, step_size_max: float, etaminus: float, etaplus: float,
) -> None:
    """Rprop's update (``optim.Rprop``'s step) over lists of tensors; adds one
    to each ``state_steps`` tensor."""
    _check_steps(state_steps)
    _refuse(differentiable, capturable)
    etaminus, etaplus = float(etaminus), float(etaplus)
    lo, hi = float(step_size_min), float(step_size_max)
    with no_grad():
        for g, prev, step_size, step, p in zip(grads, prevs, step_sizes, state_steps, params):
            if maximize:
                g = -g
            step.add_(1)
            sign = g.mul(prev).sign()
            # Masks of the signs before any is replaced (a NaN product matches
            # none of them and stays NaN, as in PyTorch).
            grew, flipped, zero = sign.gt(0), sign.lt(0), sign.eq(0)
            factor = _C.where(grew, etaplus, sign)
            factor = _C.where(flipped, etaminus, factor)
            factor = _C.where(zero, 1.0, factor)
            step_size.mul_(factor).clamp_(lo, hi)
            g = _C.where(flipped, 0.0, g)
            p.addcmul_(g.sign(), step_size, value=-1)
            prev.copy_(g)

"""Adagrad (``optim.Adagrad``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from ._common import _bump, _check_lr, _closure, _full_like, _step_tensor, _to_scalar
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad as PyTorch's: ``clr = lr / (1 + (t - 1) * lr_decay)``,
    ``s += g * g``, ``p -= clr * g / (sqrt(s) + eps)``. The state (a sum
    starting at ``initial_accumulator_value``) is created for every
    parameter at construction, as in PyTorch."""

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}"
            )
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor()
                state["sum"] = _full_like(p, float(group["initial_accumulator_value"]))

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        for group in self.param_groups:
            self._check_unsupported(group)
            lr, lr_decay = _to_scalar(group["lr"]), float(group["lr_decay"])
            rows, per = [], []
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    # A group added after construction.
                    state["step"] = _step_tensor()
                    state["sum"] = _full_like(p, float(group["initial_accumulator_value"]))
                step = _bump(state)
                rows.append([p, g, state["sum"]])
                per.append([-lr / (1 + (step - 1) * lr_decay)])
            hyper = {
                "weight_decay": float(group["weight_decay"]),
                "eps": float(group["eps"]),
                "maximize": bool(group["maximize"]),
            }
            self._run("adagrad", rows, hyper, per)
        return loss

"""Stochastic gradient descent with momentum (``optim.SGD``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from ._common import _check_lr, _closure, _full_like, _to_scalar
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum, as
    PyTorch's ``SGD``: ``g = grad + weight_decay * p``; with momentum
    ``b = momentum * b + (1 - dampening) * g`` (the first step takes ``g``
    itself) and ``g = g + momentum * b`` (Nesterov) or ``g = b``; then
    ``p -= lr * g`` (``+=`` with ``maximize``). Each group is updated by one
    fused call into the native kernels."""

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        for group in self.param_groups:
            self._check_unsupported(group)
            momentum = group["momentum"]
            rows, per = [], []
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                row = [p, g]
                first = 0.0
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = _full_like(p, 0.0)
                        state["momentum_buffer"] = buf
                        first = 1.0
                    row.append(buf)
                rows.append(row)
                per.append([first])
            hyper = {
                "lr": _to_scalar(group["lr"]),
                "weight_decay": float(group["weight_decay"]),
                "momentum": float(momentum),
                "dampening": float(group["dampening"]),
                "nesterov": bool(group["nesterov"]),
                "maximize": bool(group["maximize"]),
            }
            self._run("sgd", rows, hyper, per)
        return loss

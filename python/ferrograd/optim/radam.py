"""RAdam, rectified Adam (``optim.RAdam``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from ._common import _check_adam_args, _closure, _stepped, _to_scalar
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (Liu et al.) as PyTorch's: moments as in Adam; while the
    variance's degrees of freedom ``rho_t`` are at most 5 the step is plain
    momentum ``p -= lr * m / (1 - beta1^t)``, afterwards it is rectified,
    ``p -= lr * m / (1 - beta1^t) * r_t * sqrt(1 - beta2^t) / (sqrt(v) + eps)``."""

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_adam_args(lr, eps, betas, weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    _group_defaults = {
        "foreach": None,
        "maximize": False,
        "differentiable": False,
        "decoupled_weight_decay": False,
        "capturable": False,
    }

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
            rho_inf = 2 / (1 - beta2) - 1
            rows, per = [], []
            for p, g, state, step in _stepped(self, group, ("exp_avg", "exp_avg_sq")):
                rho_t = rho_inf - 2 * step * (beta2**step) / (1 - beta2**step)
                if rho_t > 5:
                    rect = (
                        (rho_t - 4) * (rho_t - 2) * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                    ) ** 0.5
                else:
                    rect = 0
                unrectified = 0 if rect > 0 else 1.0
                bc1 = 1 - beta1**step
                rows.append([p, g, state["exp_avg"], state["exp_avg_sq"]])
                per.append(
                    [
                        ((1 - beta2**step) ** 0.5) * (lr * rect / bc1) * -1,
                        (lr * unrectified / bc1) * -1,
                    ]
                )
            wd = float(group["weight_decay"])
            hyper = {
                "weight_decay": wd,
                "decay": 1 - lr * wd,
                "decoupled": bool(group["decoupled_weight_decay"]),
                "beta1": beta1,
                "beta2": beta2,
                "eps": float(group["eps"]),
                "maximize": bool(group["maximize"]),
            }
            self._run("radam", rows, hyper, per)
        return loss

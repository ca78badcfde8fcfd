"""NAdam, Adam with Nesterov momentum (``optim.NAdam``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from ._common import _check_adam_args, _closure, _stepped, _to_scalar
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (Dozat) as PyTorch's: momentum schedule
    ``mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))`` with its running
    product kept as a float32 scalar state ('mu_product'), moments as in Adam,
    and ``p -= lr * (1 - mu_t) / (1 - prod mu) * g / d
    + lr * mu_{t+1} / (1 - prod mu * mu_{t+1}) * m / d`` with
    ``d = sqrt(v) / sqrt(1 - beta2^t) + eps``."""

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_adam_args(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    _group_defaults = {
        "maximize": False,
        "foreach": None,
        "capturable": False,
        "differentiable": False,
        "decoupled_weight_decay": False,
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
            md = float(group["momentum_decay"])
            rows, per = [], []
            moments = ("exp_avg", "exp_avg_sq")
            for p, g, state, step in _stepped(self, group, moments, (("mu_product", 1.0),)):
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
                mu_product = state["mu_product"]
                mu_product.mul_(mu)
                mp = float(mu_product.item())
                rows.append([p, g, state["exp_avg"], state["exp_avg_sq"]])
                per.append(
                    [
                        (1 - beta2**step) ** 0.5,
                        (lr * (1.0 - mu) / (1.0 - mp)) * -1,
                        (lr * mu_next / (1.0 - mp * mu_next)) * -1,
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
            self._run("nadam", rows, hyper, per)
        return loss

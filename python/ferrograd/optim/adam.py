"""Adam and its decoupled-weight-decay form (``optim.Adam``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from ._common import _check_adam_args, _closure, _step_tensor, _stepped, _to_scalar
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam (Kingma & Ba) as PyTorch's ``Adam``: ``m = lerp(m, g, 1 - beta1)``,
    ``v = beta2 * v + (1 - beta2) * g * g``, then
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``;
    ``amsgrad`` uses the running maximum of ``v``; ``weight_decay`` adds
    ``weight_decay * p`` to the gradient, or with ``decoupled_weight_decay``
    scales ``p`` by ``1 - lr * weight_decay`` first (AdamW). The 'step' state
    is a float32 scalar tensor, as in PyTorch."""

    _decoupled_default = False

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        _check_adam_args(lr, eps, betas, weight_decay)
        betas = (_to_scalar(betas[0]), _to_scalar(betas[1]))
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", self._decoupled_default)
            group.setdefault("fused", None)
            for p in group["params"]:
                s = self.state.get(p, {})
                if s and not hasattr(s["step"], "item"):
                    s["step"] = _step_tensor(float(s["step"]))

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        for group in self.param_groups:
            self._check_unsupported(group)
            beta1, beta2 = (_to_scalar(b) for b in group["betas"])
            lr = _to_scalar(group["lr"])
            amsgrad = bool(group["amsgrad"])
            rows, per = [], []
            buffers = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
            for p, g, state, step in _stepped(self, group, buffers):
                row = [p, g, state["exp_avg"], state["exp_avg_sq"]]
                if amsgrad:
                    row.append(state["max_exp_avg_sq"])
                rows.append(row)
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                per.append([(lr / bias_correction1) * -1, bias_correction2**0.5])
            wd = float(group["weight_decay"])
            hyper = {
                "weight_decay": wd,
                "decay": 1 - lr * wd,
                "decoupled": bool(group["decoupled_weight_decay"]),
                "beta1": beta1,
                "beta2": beta2,
                "eps": float(group["eps"]),
                "amsgrad": amsgrad,
                "maximize": bool(group["maximize"]),
            }
            self._run("adam", rows, hyper, per)
        return loss

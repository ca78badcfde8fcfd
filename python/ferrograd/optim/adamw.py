"""Adam with decoupled weight decay (``optim.AdamW``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .adam import Adam

if TYPE_CHECKING:
    from .._typing import ParamsT

__all__ = ["AdamW"]


class AdamW(Adam):
    """AdamW (Loshchilov & Hutter): Adam whose weight decay scales the
    parameter by ``1 - lr * weight_decay`` before the update instead of
    adding to the gradient; ``weight_decay`` defaults to 1e-2."""

    _decoupled_default = True

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

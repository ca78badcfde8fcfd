"""Muon, momentum orthogonalized by Newton-Schulz (``optim.Muon``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, overload

from .. import _C
from ..autograd.grad_mode import no_grad
from ._common import _closure, _full_like, _lerp_, _to_scalar
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["Muon", "muon"]

_EPS = 1e-7
_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
_NS_STEPS = 5


def _orthogonalize(g: Any, coefficients: tuple[float, float, float], steps: int, eps: float) -> Any:
    """The quintic Newton-Schulz iteration PyTorch uses, in bfloat16 as PyTorch
    runs it (every product rounded once): ``X = G / max(|G|, eps)`` (on the
    wide side), then ``steps`` times ``A = X X^T``, ``X = a X + (b A + c A A) X``."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if g.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    x = g.to(dtype=_C.bfloat16, copy=True)
    tall = g.size(0) > g.size(1)
    if tall:
        x = x.T
    x.div_(x.norm().clamp(min=eps))
    for _ in range(steps):
        # PyTorch's bfloat16 mm/addmm accumulate in float32 and round once at the
        # end; the same products in float32, rounded where PyTorch rounds.
        xf = x.float()
        gram = (xf @ xf.T).to(_C.bfloat16).float()
        poly = (gram * b + (gram @ gram) * c).to(_C.bfloat16).float()
        x = (xf * a + poly @ xf).to(_C.bfloat16)
    return x.T if tall else x


def _adjusted_lr(lr: float, how: str | None, shape: Any) -> float:
    rows, cols = shape[:2]
    if how is None or how == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if how == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    if how == "spectral_unclamped":
        return lr * math.sqrt(rows / cols)
    return lr


class Muon(Optimizer):
    """Muon as PyTorch's, for 2-D parameters: ``B = lerp(B, g, 1 - momentum)``;
    the update ``O`` is the Newton-Schulz orthogonalization (in bfloat16) of
    ``lerp(g, B, momentum)`` with ``nesterov``, else of ``B``;
    ``p *= 1 - lr * weight_decay`` and ``p -= lr' * O``, where ``lr'`` scales
    ``lr`` by the shape ``(A, B)``: ``sqrt(max(1, A / B))`` ("original", the
    default), ``0.2 * sqrt(max(A, B))`` ("match_rms_adamw") or ``sqrt(A / B)``
    ("spectral_unclamped").

    Args:
        params: 2-D parameters (or dicts defining parameter groups); biases and
            embeddings belong in another optimizer such as AdamW.
        lr: the learning rate (default 1e-3).
        weight_decay: decoupled weight decay (default 0.1).
        momentum: the momentum factor (default 0.95).
        nesterov: Nesterov momentum (default True).
        ns_coefficients: ``(a, b, c)`` of the iteration (default
            (3.4445, -4.775, 2.0315)).
        eps: the floor of the norm the gradient is divided by (default 1e-7).
        ns_steps: iterations, fewer than 100 (default 5).
        adjust_lr_fn: None, "original", "match_rms_adamw" or "spectral_unclamped".

    State per parameter: ``momentum_buffer``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = _NS_COEFFICIENTS,
        eps: float = _EPS,
        ns_steps: int = _NS_STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in (
            "original",
            "match_rms_adamw",
            "spectral_unclamped",
        ):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.size()}"
                    )

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        for group in self.param_groups:
            params, grads, bufs = [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = _full_like(p.grad, 0.0)
                params.append(p)
                grads.append(p.grad)
                bufs.append(state["momentum_buffer"])
            muon(params, grads, bufs, lr=group["lr"], weight_decay=group["weight_decay"],
                 momentum=group["momentum"], nesterov=group["nesterov"],
                 ns_coefficients=group["ns_coefficients"], ns_steps=group["ns_steps"],
                 eps=group["eps"], adjust_lr_fn=group["adjust_lr_fn"], has_complex=False)
        return loss


def muon(
    params: list[Any], grads: list[Any], muon_momentum_bufs: list[Any], *,
    foreach: bool | None = None, lr: float, weight_decay: float, momentum: float,
    nesterov: bool, ns_coefficients: tuple[float, float, float], ns_steps: int, eps: float,
    adjust_lr_fn: str | None, has_complex: bool,
) -> None:
    """Muon's update (``optim.Muon``'s step) over lists of 2-D tensors."""
    lr = _to_scalar(lr)
    with no_grad():
        for p, g, buf in zip(params, grads, muon_momentum_bufs):
            if g.dim() != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            _lerp_(buf, g, 1 - momentum)
            if nesterov:
                update = g.clone()
                _lerp_(update, buf, momentum)
            else:
                update = buf
            update = _orthogonalize(update, tuple(ns_coefficients), int(ns_steps), float(eps))
            p.mul_(1 - lr * weight_decay)
            p.add_(update, alpha=-_adjusted_lr(lr, adjust_lr_fn, p.shape))

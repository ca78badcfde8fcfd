"""Adafactor (``optim.Adafactor``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from .. import _C
from .._dtype_info import finfo
from ..autograd.grad_mode import no_grad
from ._common import (
    _bump,
    _check_steps,
    _closure,
    _full_like,
    _lerp_,
    _step_tensor,
    _to_scalar,
)
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["Adafactor", "adafactor"]


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern, 2018) with PyTorch's choices. At step
    ``t`` with ``g`` the gradient (negated when ``maximize``):
    ``beta2 = 1 - t ** beta2_decay``, ``rho = min(lr, 1 / sqrt(t))``,
    ``alpha = max(eps2, RMS(p)) * rho``; decoupled decay
    ``p *= 1 - lr * weight_decay``. A parameter of two or more dimensions
    keeps factored second moments over its last two: the row and column
    means of ``g * g`` (``row_var``, ``col_var``) move by
    ``lerp(., mean, 1 - beta2)`` and the estimate is
    ``row_var @ col_var / max(mean(row_var), eps1)``; a vector or scalar
    keeps the full ``variance``. The update
    ``u = g / sqrt(max(estimate, eps1**2))`` is scaled down by
    ``max(1, RMS(u) / d)`` and ``p -= alpha * u``.

    Args:
        params: the parameters (or dicts defining parameter groups).
        lr: the largest relative step size ``rho`` and the weight-decay
            coefficient (default 1e-2).
        beta2_decay: the power of ``t`` in ``1 - beta2`` (default -0.8).
        eps: ``(eps1, eps2)``; ``eps1`` None means the machine epsilon of the
            parameter's dtype (default (None, 1e-3)).
        d: the clipping threshold of the update's RMS (default 1.0).
        weight_decay: decoupled weight-decay coefficient (default 0.0).
        foreach: accepted for PyTorch's signature.
        maximize: ascend the objective instead (default False).

    State per parameter: ``step``, then ``row_var`` and ``col_var`` (shaped
    like the parameter with a 1 in its last, resp. second-to-last,
    dimension) for two or more dimensions, else ``variance``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None}

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure(closure)
        for group in self.param_groups:
            params, grads, row_vars, col_vars, variances, steps = [], [], [], [], [], []
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    if g.dim() > 1:
                        state["row_var"] = _C.zeros(*g.shape[:-1], 1, dtype=g.dtype)
                        state["col_var"] = _C.zeros(*g.shape[:-2], 1, g.shape[-1], dtype=g.dtype)
                    else:
                        state["variance"] = _full_like(g, 0.0)
                params.append(p)
                grads.append(g)
                row_vars.append(state.get("row_var"))
                col_vars.append(state.get("col_var"))
                variances.append(state.get("variance"))
                steps.append(state["step"])
            eps1, eps2 = group["eps"]
            adafactor(params, grads, row_vars, col_vars, variances, steps, d=group["d"],
                      lr=group["lr"], beta2_decay=group["beta2_decay"],
                      weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2,
                      maximize=group["maximize"])
        return loss


def adafactor(
    params: list[Any], grads: list[Any], row_vars: list[Any], col_vars: list[Any],
    variances: list[Any], state_steps: list[Any], foreach: bool | None = None,
    grad_scale: Any = None, found_inf: Any = None, has_complex: bool = False, *, d: float,
    lr: float, beta2_decay: float, weight_decay: float, eps1: float | None, eps2: float,
    maximize: bool,
) -> None:
    """Adafactor's update (``optim.Adafactor``'s step) over lists of tensors
    (``row_vars``/``col_vars`` for parameters of two or more dimensions,
    ``variances`` for the others, None elsewhere); adds one to each
    ``state_steps`` tensor."""
    from .. import linalg  # ferrograd.linalg imports after optim

    _check_steps(state_steps)
    if grad_scale is not None or found_inf is not None:
        raise RuntimeError("Grad scaling should occur outside of optimizer.step()")
    lr, eps2, d = _to_scalar(lr), float(eps2), float(d)
    with no_grad():
        for p, g, row_var, col_var, variance, step in zip(
            params, grads, row_vars, col_vars, variances, state_steps
        ):
            if maximize:
                g = -g
            if eps1 is None:
                # As in PyTorch, the first parameter's dtype fixes it for the rest of the call.
                eps1 = finfo(p.dtype).eps
            t = _bump({"step": step})
            one_minus_beta2 = t**beta2_decay
            rho = min(lr, 1 / (t**0.5))
            alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho
            if weight_decay != 0:
                p.mul_(1 - lr * weight_decay)
            if g.dim() > 1:
                # The mean of g * g along a dimension, as a squared norm over its length.
                row_mean = linalg.vector_norm(g, dim=-1, keepdim=True).square_().div_(g.size(-1))
                _lerp_(row_var, row_mean, one_minus_beta2)
                col_mean = linalg.vector_norm(g, dim=-2, keepdim=True).square_().div_(g.size(-2))
                _lerp_(col_var, col_mean, one_minus_beta2)
                estimate = row_var @ col_var
                estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
            else:
                _lerp_(variance, g * g, one_minus_beta2)
                estimate = variance.clone()
            update = estimate.clamp_(min=eps1 * eps1).rsqrt_()
            update.mul_(g)
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            p.add_(update, alpha=-alpha / denom)

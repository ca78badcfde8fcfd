"""Shared pieces of the optimizers: scalar hyper-parameters, state
allocation and the closure call."""

from __future__ import annotations

from typing import Any, Callable

from .. import _C
from .._C import Tensor
from ..autograd.grad_mode import enable_grad


def _to_scalar(x: Any) -> float:
    """A hyper-parameter given as a number or a one-element tensor, as a float."""
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        return float(x.item())
    return float(x)


def _check_lr(lr: Any) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= _to_scalar(lr):
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_betas(betas: Any) -> None:
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_adam_args(lr: Any, eps: float, betas: Any, weight_decay: float) -> None:
    """The argument checks the Adam family shares, with PyTorch's messages."""
    _check_lr(lr)
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    _check_betas(betas)
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _stepped(optimizer: Any, group: dict[str, Any], buffers: tuple[str, ...], scalars: tuple[tuple[str, float], ...] = ()):
    """Yields ``(p, grad, state, step)`` for the group's parameters that have
    a gradient. A parameter's first step creates its state in PyTorch's key
    order: the 'step' counter, the float32 ``scalars``, then zero
    ``buffers`` shaped like it; every step bumps the counter first."""
    for p in group["params"]:
        g = p.grad
        if g is None:
            continue
        state = optimizer.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            for name, value in scalars:
                state[name] = _step_tensor(value)
            for name in buffers:
                state[name] = _full_like(p, 0.0)
        yield p, g, state, _bump(state)


def _full_like(p: Tensor, value: float) -> Tensor:
    """A new contiguous state buffer shaped and typed like ``p``."""
    return _C._like(p, "full", value, None, False)


def _step_tensor(value: float = 0.0) -> Tensor:
    """The 'step' counter: a float32 scalar tensor, as PyTorch keeps it."""
    return _C.tensor(value)


def _closure(closure: Callable[[], Any] | None) -> Any:
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _bump(state: dict[str, Any]) -> float:
    """Adds one to the state's step counter and returns the new count."""
    step = state["step"]
    step.add_(1)
    return float(step.item())


def _lerp_(a: Any, b: Any, w: float) -> None:
    """``a.lerp_(b, w)`` in PyTorch's two-sided form, exact at both ends
    (``Tensor.lerp_`` computes ``a + w * (b - a)`` for every weight, which at
    ``w`` near 1 loses the low bits of a small ``b`` next to a large ``a``):
    Adafactor's weight is 1 on its first step, Muon's nesterov weight 0.95."""
    if abs(w) < 0.5:
        a.lerp_(b, w)
    else:
        a.copy_(b.sub(b.sub(a).mul_(1 - w)))


def _check_steps(state_steps: list[Any]) -> None:
    """The functional forms take the step counters as tensors, as PyTorch's do."""
    if not all(hasattr(t, "add_") for t in state_steps):
        raise RuntimeError(
            "API has changed, `state_steps` argument must contain a list of singleton tensors"
        )


def _refuse(differentiable: bool = False, capturable: bool = False) -> None:
    """Refuses the flags ferrograd cannot honour, with the optimizers' messages."""
    from .optimizer import Optimizer

    Optimizer._check_unsupported({"differentiable": differentiable, "capturable": capturable})

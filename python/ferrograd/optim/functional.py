"""The optimizers' update rules as functions over lists of tensors
(``torch.optim.functional``), with PyTorch's signatures.

Each function takes the parameters, their gradients and their state
tensors as parallel lists (what an optimizer's ``state`` holds for them) and
updates parameters and state in place, exactly as the optimizer's ``step``
would for one group. Like PyTorch's, the functions that keep a step count
add one to each ``state_steps`` tensor themselves."""

from __future__ import annotations

from typing import Any

from ._common import _check_steps, _full_like, _refuse, _to_scalar
from .adadelta import adadelta
from .adafactor import adafactor
from .asgd import asgd
from .muon import muon
from .optimizer import Optimizer
from .rprop import rprop

__all__ = [
    "adadelta",
    "adafactor",
    "adagrad",
    "adam",
    "adamax",
    "adamw",
    "asgd",
    "muon",
    "nadam",
    "radam",
    "rmsprop",
    "rprop",
    "sgd",
    "sparse_adam",
]


def _bump_all(state_steps: list[Any]) -> list[float]:
    out = []
    for t in state_steps:
        t.add_(1)
        out.append(float(t.item()))
    return out


def _refuse_scaling(grad_scale: Any, found_inf: Any) -> None:
    if grad_scale is not None or found_inf is not None:
        raise RuntimeError("grad_scale and found_inf are only used by fused optimizers on CUDA")


# ----- the fused rules ----------------------------------------------------------------


def adam(
    params: list[Any], grads: list[Any], exp_avgs: list[Any], exp_avg_sqs: list[Any],
    max_exp_avg_sqs: list[Any], state_steps: list[Any], foreach: bool | None = None,
    capturable: bool = False, differentiable: bool = False, fused: bool | None = None,
    grad_scale: Any = None, found_inf: Any = None, has_complex: bool = False,
    decoupled_weight_decay: bool = False, *, amsgrad: bool, beta1: float, beta2: float,
    lr: float, weight_decay: float, eps: float, maximize: bool,
) -> None:
    """Adam's update (``optim.Adam``'s step) over lists of tensors."""
    _check_steps(state_steps)
    _refuse(differentiable, capturable)
    _refuse_scaling(grad_scale, found_inf)
    beta1, beta2, lr = _to_scalar(beta1), _to_scalar(beta2), _to_scalar(lr)
    rows, per = [], []
    for i, step in enumerate(_bump_all(state_steps)):
        row = [params[i], grads[i], exp_avgs[i], exp_avg_sqs[i]]
        if amsgrad:
            row.append(max_exp_avg_sqs[i])
        rows.append(row)
        per.append([(lr / (1 - beta1**step)) * -1, (1 - beta2**step) ** 0.5])
    hyper = {
        "weight_decay": float(weight_decay),
        "decay": 1 - lr * weight_decay,
        "decoupled": bool(decoupled_weight_decay),
        "beta1": beta1,
        "beta2": beta2,
        "eps": float(eps),
        "amsgrad": bool(amsgrad),
        "maximize": bool(maximize),
    }
    Optimizer._run("adam", rows, hyper, per)


def adamw(
    params: list[Any], grads: list[Any], exp_avgs: list[Any], exp_avg_sqs: list[Any],
    max_exp_avg_sqs: list[Any], state_steps: list[Any], foreach: bool | None = None,
    capturable: bool = False, differentiable: bool = False, fused: bool | None = None,
    grad_scale: Any = None, found_inf: Any = None, has_complex: bool = False, *,
    amsgrad: bool, beta1: float, beta2: float, lr: float, weight_decay: float, eps: float,
    maximize: bool,
) -> None:
    """AdamW's update: Adam with decoupled weight decay."""
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach,
         capturable, differentiable, fused, grad_scale, found_inf, has_complex, True,
         amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay,
         eps=eps, maximize=maximize)


def adamax(
    params: list[Any], grads: list[Any], exp_avgs: list[Any], exp_infs: list[Any],
    state_steps: list[Any], foreach: bool | None = None, maximize: bool = False,
    differentiable: bool = False, capturable: bool = False, has_complex: bool = False, *,
    eps: float, beta1: float, beta2: float, lr: float, weight_decay: float,
) -> None:
    """Adamax's update (``optim.Adamax``'s step) over lists of tensors."""
    _check_steps(state_steps)
    _refuse(differentiable, capturable)
    lr = _to_scalar(lr)
    rows = [[p, g, m, u] for p, g, m, u in zip(params, grads, exp_avgs, exp_infs)]
    per = [[(lr / (1 - beta1**step)) * -1] for step in _bump_all(state_steps)]
    hyper = {"weight_decay": float(weight_decay), "beta1": float(beta1), "beta2": float(beta2),
             "eps": float(eps), "maximize": bool(maximize)}
    Optimizer._run("adamax", rows, hyper, per)


def adagrad(
    params: list[Any], grads: list[Any], state_sums: list[Any], state_steps: list[Any],
    fused: bool | None = None, grad_scale: Any = None, found_inf: Any = None,
    has_sparse_grad: bool = False, foreach: bool | None = None, differentiable: bool = False,
    has_complex: bool = False, *, lr: float, weight_decay: float, lr_decay: float, eps: float,
    maximize: bool,
) -> None:
    """Adagrad's update (``optim.Adagrad``'s step) over lists of tensors."""
    _check_steps(state_steps)
    _refuse(differentiable)
    _refuse_scaling(grad_scale, found_inf)
    lr = _to_scalar(lr)
    rows = [[p, g, s] for p, g, s in zip(params, grads, state_sums)]
    per = [[-lr / (1 + (step - 1) * lr_decay)] for step in _bump_all(state_steps)]
    hyper = {"weight_decay": float(weight_decay), "eps": float(eps), "maximize": bool(maximize)}
    Optimizer._run("adagrad", rows, hyper, per)


def nadam(
    params: list[Any], grads: list[Any], exp_avgs: list[Any], exp_avg_sqs: list[Any],
    mu_products: list[Any], state_steps: list[Any], decoupled_weight_decay: bool = False,
    foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
    has_complex: bool = False, maximize: bool = False, *, beta1: float, beta2: float,
    lr: float, weight_decay: float, momentum_decay: float, eps: float,
) -> None:
    """NAdam's update (``optim.NAdam``'s step) over lists of tensors."""
    _check_steps(state_steps)
    _refuse(differentiable, capturable)
    lr = _to_scalar(lr)
    rows, per = [], []
    for i, step in enumerate(_bump_all(state_steps)):
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_products[i].mul_(mu)
        mp = float(mu_products[i].item())
        rows.append([params[i], grads[i], exp_avgs[i], exp_avg_sqs[i]])
        per.append([(1 - beta2**step) ** 0.5, (lr * (1.0 - mu) / (1.0 - mp)) * -1,
                    (lr * mu_next / (1.0 - mp * mu_next)) * -1])
    hyper = {"weight_decay": float(weight_decay), "decay": 1 - lr * weight_decay,
             "decoupled": bool(decoupled_weight_decay), "beta1": float(beta1),
             "beta2": float(beta2), "eps": float(eps), "maximize": bool(maximize)}
    Optimizer._run("nadam", rows, hyper, per)


def radam(
    params: list[Any], grads: list[Any], exp_avgs: list[Any], exp_avg_sqs: list[Any],
    state_steps: list[Any], decoupled_weight_decay: bool = False, foreach: bool | None = None,
    differentiable: bool = False, capturable: bool = False, has_complex: bool = False,
    maximize: bool = False, *, beta1: float, beta2: float, lr: float, weight_decay: float,
    eps: float,
) -> None:
    """RAdam's update (``optim.RAdam``'s step) over lists of tensors."""
    _check_steps(state_steps)
    _refuse(differentiable, capturable)
    lr = _to_scalar(lr)
    rho_inf = 2 / (1 - beta2) - 1
    rows, per = [], []
    for i, step in enumerate(_bump_all(state_steps)):
        rho_t = rho_inf - 2 * step * (beta2**step) / (1 - beta2**step)
        if rho_t > 5:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        else:
            rect = 0
        unrectified = 0 if rect > 0 else 1.0
        bc1 = 1 - beta1**step
        rows.append([params[i], grads[i], exp_avgs[i], exp_avg_sqs[i]])
        per.append([((1 - beta2**step) ** 0.5) * (lr * rect / bc1) * -1,
                    (lr * unrectified / bc1) * -1])
    hyper = {"weight_decay": float(weight_decay), "decay": 1 - lr * weight_decay,
             "decoupled": bool(decoupled_weight_decay), "beta1": float(beta1),
             "beta2": float(beta2), "eps": float(eps), "maximize": bool(maximize)}
    Optimizer._run("radam", rows, hyper, per)


def rmsprop(
    params: list[Any], grads: list[Any], square_avgs: list[Any], grad_avgs: list[Any],
    momentum_buffer_list: list[Any], state_steps: list[Any], foreach: bool | None = None,
    maximize: bool = False, differentiable: bool = False, capturable: bool = False,
    has_complex: bool = False, *, lr: float, alpha: float, eps: float, weight_decay: float,
    momentum: float, centered: bool,
) -> None:
    """RMSprop's update (``optim.RMSprop``'s step) over lists of tensors
    (``momentum_buffer_list`` is used when ``momentum > 0``, ``grad_avgs``
    when ``centered``)."""
    _check_steps(state_steps)
    _refuse(differentiable, capturable)
    _bump_all(state_steps)
    rows = []
    for i, (p, g, v) in enumerate(zip(params, grads, square_avgs)):
        row = [p, g, v]
        if momentum > 0:
            row.append(momentum_buffer_list[i])
        if centered:
            row.append(grad_avgs[i])
        rows.append(row)
    hyper = {"lr": _to_scalar(lr), "weight_decay": float(weight_decay), "alpha": float(alpha),
             "eps": float(eps), "momentum": float(momentum), "centered": bool(centered),
             "maximize": bool(maximize)}
    Optimizer._run("rmsprop", rows, hyper, [[] for _ in rows])


def sgd(
    params: list[Any], d_p_list: list[Any], momentum_buffer_list: list[Any],
    has_sparse_grad: bool = False, foreach: bool | None = None, fused: bool | None = None,
    grad_scale: Any = None, found_inf: Any = None, *, weight_decay: float, momentum: float,
    lr: float, dampening: float, nesterov: bool, maximize: bool,
) -> None:
    """SGD's update (``optim.SGD``'s step) over lists of tensors. With
    momentum, a ``None`` entry of ``momentum_buffer_list`` is a first step:
    its new buffer (the gradient) is put in the list."""
    _refuse_scaling(grad_scale, found_inf)
    rows, per = [], []
    for i, (p, g) in enumerate(zip(params, d_p_list)):
        row = [p, g]
        first = 0.0
        if momentum != 0:
            if momentum_buffer_list[i] is None:
                momentum_buffer_list[i] = _full_like(p, 0.0)
                first = 1.0
            row.append(momentum_buffer_list[i])
        rows.append(row)
        per.append([first])
    hyper = {"lr": _to_scalar(lr), "weight_decay": float(weight_decay),
             "momentum": float(momentum), "dampening": float(dampening),
             "nesterov": bool(nesterov), "maximize": bool(maximize)}
    Optimizer._run("sgd", rows, hyper, per)


def sparse_adam(
    params: list[Any], grads: list[Any], exp_avgs: list[Any], exp_avg_sqs: list[Any],
    state_steps: list[int], *, eps: float, beta1: float, beta2: float, lr: float,
    maximize: bool,
) -> None:
    """SparseAdam's update, for sparse gradients: every ferrograd gradient is
    dense, so any gradient is refused with PyTorch's message."""
    if grads:
        raise RuntimeError(
            "SparseAdam does not support dense gradients, please consider Adam instead"
        )

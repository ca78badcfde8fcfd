"""``ferrograd.autograd``: the entry points to the Rust backward engine."""

from __future__ import annotations

from .. import _C
from . import anomaly_mode as anomaly_mode
from . import forward_ad as forward_ad
from . import functional as functional
from . import graph as graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck


def _as_list(x):
    if x is None:
        return None
    if isinstance(x, _C.Tensor):
        return [x]
    if not isinstance(x, (list, tuple)) and hasattr(type(x), "__ferrograd_function__"):
        # A batched value inside vmap: gradients there come from func.grad/vjp.
        raise RuntimeError(
            "vmap: It looks like you're calling .backward() or autograd.grad() on a Tensor "
            "inside of vmap; this is not supported. Use ferrograd.func.grad / vjp inside of "
            "vmap instead."
        )
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates into ``.grad`` the gradients of ``tensors`` with respect to
    the graph's leaves (or only ``inputs``)."""
    tensors = _as_list(tensors)
    inputs = _as_list(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _as_list(grad_tensors) if grad_tensors is not None else None
    _C._run_backward(tensors, grads, retain_graph, create_graph, inputs, True)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """Returns the gradients of ``outputs`` with respect to ``inputs``,
    leaving every ``.grad`` untouched.

    With ``is_grads_batched=True`` the first dimension of every ``grad_outputs``
    entry is a batch of cotangents: all of them run through the graph in one
    engine call (which keeps the graph between rows) and each result gets the same
    leading batch dimension."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    allow_unused = bool(allow_unused) or materialize_grads
    outputs = _as_list(outputs)
    inputs_list = _as_list(inputs)
    grads = _as_list(grad_outputs) if grad_outputs is not None else None
    if is_grads_batched:
        if grads is None or any(g is None for g in grads):
            raise RuntimeError(
                "autograd.grad with is_grads_batched=True needs a batched tensor in "
                "grad_outputs for every output."
            )
        return _C._run_backward_batched(
            outputs, grads, retain_graph, create_graph, inputs_list, allow_unused,
            materialize_grads,
        )
    return _C._run_backward(
        outputs,
        grads,
        retain_graph,
        create_graph,
        inputs_list,
        False,
        allow_unused,
        materialize_grads,
    )


__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
]

"""``ferrograd.autograd``: the entry points to the Rust backward engine."""

from __future__ import annotations

from .. import _C
from . import anomaly_mode as anomaly_mode
from . import forward_ad as forward_ad
from . import functional as functional
from . import graph as graph
from . import profiler as profiler
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .variable import Variable


def _batched(x):
    # A vmap BatchedTensor (any type that asks for __ferrograd_function__ dispatch).
    return not isinstance(x, _C.Tensor) and hasattr(type(x), "__ferrograd_function__")


def _as_list(x):
    if x is None:
        return None
    if isinstance(x, _C.Tensor) or _batched(x):
        return [x]
    return list(x)


def _any_batched(*lists):
    return any(_batched(x) for xs in lists if xs is not None for x in xs)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates into ``.grad`` the gradients of ``tensors`` with respect to
    the graph's leaves (or only ``inputs``)."""
    tensors = _as_list(tensors)
    inputs = _as_list(inputs)
    if _any_batched(tensors, inputs, _as_list(grad_tensors)):
        from ..func._batched import BACKWARD_ERROR

        raise RuntimeError(BACKWARD_ERROR)
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
    if _any_batched(outputs, inputs_list):
        raise RuntimeError(
            "vmap: It looks like you're calling autograd.grad() on a Tensor computed inside of "
            "vmap; this is not supported. Use ferrograd.func.grad / vjp inside of vmap "
            "instead."
        )
    if _any_batched(grads) and not is_grads_batched:
        return _grad_of_batched_cotangents(
            outputs, inputs_list, grads, retain_graph, create_graph, allow_unused,
            materialize_grads,
        )
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


def _grad_of_batched_cotangents(outputs, inputs, grads, retain_graph, create_graph,
                                allow_unused, materialize_grads):
    # Unbatched outputs and inputs with cotangents batched by vmap: every
    # sample's cotangent runs through the graph in one batched engine call
    # (is_grads_batched), and each gradient gets the batch dimensions back.
    from ..func._batched import from_physical, levels, to_physical

    if any(g is None for g in grads) or len(grads) != len(outputs):
        raise RuntimeError(
            "autograd.grad inside vmap with batched grad_outputs needs a grad_output for every "
            "output."
        )
    lvls = list(levels())
    sizes = [lv.size for lv in lvls]
    n = 1
    for s in sizes:
        n *= s
    phys = [to_physical(g, lvls).reshape(n, *o.shape) for g, o in zip(grads, outputs)]
    res = _C._run_backward_batched(
        outputs, phys, retain_graph, create_graph, inputs, allow_unused, materialize_grads,
    )
    return tuple(
        None if r is None else from_physical(r.reshape(*sizes, *r.shape[1:]), lvls) for r in res
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
    "Variable",
]

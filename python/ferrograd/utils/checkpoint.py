"""Activation checkpointing, as ``torch.utils.checkpoint``.

``checkpoint(fn, *args)`` keeps only ``fn``'s inputs for backward and runs
``fn`` again during backward, under the random state it had in forward, to
get what its backward needs.

The non-reentrant variant (``use_reentrant=False``, recommended) runs ``fn``
in grad mode, then hands its graph to ``_C._checkpoint_node``, which finds
the edges by which that graph reaches everything outside it (the inputs,
parameters ``fn`` closes over, any other tensor that requires grad), makes
them the edges of one node and drops the graph with everything it saved. The
node's backward reruns ``fn`` and backpropagates through the new graph only,
so ``autograd.grad``, inputs that do not require grad, and ``create_graph``
(double backward) all work. The reentrant variant follows PyTorch's
``CheckpointFunction``: forward under ``no_grad``, backward reruns ``fn`` on
detached inputs and calls ``autograd.backward`` inside the outer backward.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

from .. import _C
from ..autograd import backward as _autograd_backward
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from ..random import get_rng_state, set_rng_state

__all__ = [
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "checkpoint",
    "checkpoint_sequential",
    "detach_variable",
]

_DEFAULT_DETERMINISM_MODE = "default"
_DETERMINISM_MODES = ("default", "none")


class CheckpointError(RuntimeError):
    """Raised when the recomputation in backward did not do the same work as
    the forward pass (different saved tensors, or tensors the forward did
    not use)."""


def detach_variable(inputs):
    """Returns ``inputs`` (a tuple) with each tensor replaced by a detached
    copy that requires grad as the original did."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            "Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}"
        )
    out = []
    for inp in inputs:
        if not isinstance(inp, _C.Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    """Warns when no tensor in ``inputs`` requires grad (the reentrant
    checkpoint then gives no gradients)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, _C.Tensor)):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None",
            stacklevel=2,
        )


@contextlib.contextmanager
def _forward_rng(state):
    """Runs a block under the random state ``state`` (when given) and puts
    the surrounding state back afterwards."""
    if state is None:
        yield
        return
    outer = get_rng_state()
    set_rng_state(state)
    try:
        yield
    finally:
        set_rng_state(outer)


class CheckpointFunction(Function):
    """The reentrant checkpoint (``use_reentrant=True``): forward under
    ``no_grad`` saving only the inputs; backward reruns the function on
    detached inputs and backpropagates through it with ``autograd.backward``,
    which accumulates into the parameters directly. Supports only
    ``.backward()`` without ``inputs``."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        """Runs ``run_function(*args)`` without recording a graph."""
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, _C.Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        """Reruns the function and backpropagates ``args`` through it."""
        if not _C._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, ferrograd.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        state = ctx.fwd_cpu_state if ctx.preserve_rng_state else None
        with _forward_rng(state):
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, _C.Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if isinstance(outputs[i], _C.Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        _autograd_backward(outputs_with_grad, args_with_grad)
        grads = tuple(
            inp.grad if isinstance(inp, _C.Tensor) else None for inp in detached_inputs
        )
        return (None, None) + grads


def _flatten(out):
    """The function's result as a list of items, and how to rebuild it."""
    if isinstance(out, _C.Tensor):
        return [out], lambda items: items[0]
    if isinstance(out, (tuple, list)):
        kind = type(out)
        if kind in (tuple, list):
            return list(out), kind
        # A named tuple (``return_types``) is rebuilt field by field.
        return list(out), lambda items: kind(*items)
    return [out], lambda items: items[0]


def _checkpoint_without_reentrant(function, args, kwargs, preserve_rng_state,
                                  determinism_check, debug):
    if determinism_check not in _DETERMINISM_MODES:
        raise ValueError(
            f"determinism_check should be one of {list(_DETERMINISM_MODES)}, "
            f"but got {determinism_check}"
        )
    if not _C.is_grad_enabled():
        # Nothing is recorded, so there is nothing to drop or recompute.
        return function(*args, **kwargs)
    tensor_indices = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
    tensor_inputs = [args[i] for i in tensor_indices]
    # The other arguments and kwargs stay with the recomputation; the tensor
    # arguments are saved by the node (version-checked, freed after backward).
    others = [None if isinstance(a, _C.Tensor) else a for a in args]
    state = get_rng_state() if preserve_rng_state else None

    mark = _C._current_seq()
    out = function(*args, **kwargs)
    items, rebuild = _flatten(out)

    def recompute(saved):
        full = list(others)
        for i, t in zip(tensor_indices, saved):
            full[i] = t
        with _forward_rng(state), enable_grad():
            again = function(*full, **kwargs)
        return _flatten(again)[0]

    new_items = _C._checkpoint_node(
        items, tensor_inputs, mark, recompute, CheckpointError,
        determinism_check == "default", bool(debug),
    )
    return rebuild(list(new_items))


class _CheckpointWrapper:
    """``checkpoint(use_reentrant=...)(fn)``: ``fn`` with checkpointing on every call."""

    def __init__(self, function, **checkpoint_kwargs):
        self.function = function
        self.checkpoint_kwargs = checkpoint_kwargs
        functools.update_wrapper(self, function, updated=())

    def __call__(self, *args, **kwargs):
        return _checkpoint_impl(self.function, args, kwargs, **self.checkpoint_kwargs)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        get = getattr(self.function, "__get__", None)
        if get is None:
            return self
        return type(self)(get(instance, owner), **self.checkpoint_kwargs)


def checkpoint(function=None, *args, use_reentrant=None, preserve_rng_state=True,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, **kwargs):
    """Runs ``function(*args, **kwargs)`` saving only its inputs for
    backward; backward runs ``function`` again (under the same random state
    when ``preserve_rng_state``, so dropout masks match) to get the values
    its gradients need, trading compute for memory. Pass ``use_reentrant``
    explicitly (a warning says so otherwise, and ``True`` is assumed, as in
    PyTorch); ``use_reentrant=False`` is recommended: it works with
    ``autograd.grad``, keyword arguments, inputs that do not require grad and
    ``create_graph=True``, and checks (``determinism_check="default"``) that
    the recomputation saved tensors of the same shapes and dtypes. Called
    without a function, returns a decorator."""
    if function is None and not args:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        return functools.partial(
            _CheckpointWrapper,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve_rng_state,
            determinism_check=determinism_check,
            debug=debug,
        )
    return _checkpoint_impl(
        function, args, kwargs,
        use_reentrant=use_reentrant,
        preserve_rng_state=preserve_rng_state,
        determinism_check=determinism_check,
        debug=debug,
    )


def _checkpoint_impl(function, args, kwargs, *, use_reentrant=None, preserve_rng_state=True,
                     determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False):
    if use_reentrant is None:
        warnings.warn(
            "ferrograd.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=3,
        )
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if debug is not False:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(
        function, args, kwargs, preserve_rng_state, determinism_check, debug
    )


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs ``functions`` (an ``nn.Sequential`` or a list of modules or
    functions) in order on ``input``, split into ``segments`` chunks of which
    all but the last are checkpointed, so only each chunk's input is kept for
    backward. ``preserve_rng_state`` may be passed as a keyword. Pass
    ``use_reentrant`` explicitly (``False`` is recommended)."""
    if use_reentrant is None:
        warnings.warn(
            "ferrograd.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    from ..nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            use_reentrant=use_reentrant, preserve_rng_state=preserve
        )(run_function(start, end, functions))(input)
    return run_function(end + 1, len(functions) - 1, functions)(input)

"""Custom differentiable operations: subclass ``Function``, write ``forward``
and ``backward`` as static methods, call ``MyFn.apply(...)``.

The forward runs here in Python with grad mode off; ``_C._function_node``
then records one graph node whose backward rule calls ``MyFn.backward`` from
the Rust engine (taking the GIL only for that call).
"""

from __future__ import annotations

import functools

from .. import _C, _dispatch
from .grad_mode import no_grad

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``.

    Saved tensors move into the graph node when ``apply`` returns, so the node
    (not this object) owns them: they are version-checked when unpacked and
    freed with the graph.
    """

    def __init__(self):
        self._to_save = ()
        self._unpacked = None
        self._released = False
        self._dirty = ()
        self._non_differentiable = ()
        self._materialize_grads = True
        self._saved_for_forward = ()
        self._saved_tangents = ()
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors

    @property
    def saved_tensors(self):
        if self._unpacked is not None:
            if self._saved_tangents and _C._current_dual_level() >= 0 and (
                _C._is_fwd_grad_enabled()
            ):
                return _with_saved_tangents(self._unpacked, self._saved_tangents)
            return self._unpacked
        if self._released:
            raise RuntimeError(_FREED)
        return tuple(self._to_save)

    def save_for_forward(self, *tensors):
        """Saves tensors for ``jvp`` (read there as ``ctx.saved_tensors``)."""
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError("save_for_forward expects all arguments to be tensors; but got "
                                f"{type(t).__name__}")
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self._materialize_grads = bool(value)


class FunctionMeta(type):
    """Gives each Function subclass the name its nodes report (``ExpBackward``)."""

    def __init__(cls, name, bases, attrs):
        cls._backward_name = name + "Backward"
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class for custom autograd operations."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode rule: given one tangent per ``forward`` input (``None``
        for non-tensors and tensors without one), returns one per output."""
        raise NotImplementedError(
            "You must implement the jvp function for custom "
            "autograd.Function to use it with forward mode AD."
        )

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. "
            "Please use new-style autograd function with static forward method."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        if _dispatch.has_protocol(*args, *kwargs.values()) and not _dispatch.is_batched(
            *args, *kwargs.values()
        ):
            # A meta tensor or a jit.trace value: its type runs (or records) the call.
            return _dispatch.dispatch(cls.apply, args, kwargs)
        if _C._capture_active():
            # Recorded for ferrograd.compile as one call that each replay makes again (a
            # new forward, a new ctx and node), with the replay's tensors as arguments.
            return _C._capture_pyop(f"{cls.__name__}.apply", cls.apply, args, kwargs)
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(
            isinstance(a, _C.Tensor) and a.requires_grad for a in args
        )
        separate_setup = cls.setup_context is not Function.setup_context
        tangents = _input_tangents(args)
        # The forward sees no tangents (as in PyTorch): `jvp` gives the outputs'.
        prev_fw = _C._is_fwd_grad_enabled()
        _C._set_fwd_grad_enabled(False)
        try:
            with no_grad():
                if separate_setup:
                    output = cls.forward(*args, **kwargs)
                    cls.setup_context(ctx, args, output)
                else:
                    output = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_fwd_grad_enabled(prev_fw)

        is_tuple = isinstance(output, tuple)
        outputs = list(output) if is_tuple else [output]
        if not (_C.is_grad_enabled() and any(ctx.needs_input_grad)):
            if tangents is not None:
                output = _with_tangents(cls, ctx, args, output, tangents)
            return output

        result = _C._function_node(
            ctx,
            cls.backward,
            cls._backward_name,
            args,
            outputs,
            list(ctx._dirty),
            list(ctx._non_differentiable),
            list(ctx._to_save),
            ctx._materialize_grads,
        )
        result = tuple(result) if is_tuple else result[0]
        if tangents is not None:
            result = _with_tangents(cls, ctx, args, result, tangents, saved=ctx._to_save)
            ctx._saved_tangents = _saved_output_tangents(ctx._to_save, outputs, result, is_tuple)
        # The node owns the saved tensors now; the ctx keeps no reference (nor to
        # the outputs it was told about, which the node's ctx would keep alive).
        ctx._to_save = ()
        ctx._dirty = ctx._non_differentiable = ctx._saved_for_forward = ()
        return result


def _saved_output_tangents(saved, outputs, result, is_tuple):
    """The forward-mode tangent of each saved tensor that is an output (None
    for the others): the node unpacks a saved output without it, and a
    backward differentiated in forward mode (``jacfwd(jacrev(f))``, so
    ``hessian``) needs it."""
    res = list(result) if is_tuple else [result]
    out = []
    for s in saved:
        k = next((i for i, o in enumerate(outputs) if s is not None and o is s), None)
        t = _C._fw_tangent(res[k]) if k is not None and isinstance(res[k], _C.Tensor) else None
        out.append(t)
    return tuple(out) if any(t is not None for t in out) else ()


def _with_saved_tangents(unpacked, tangents):
    for t, tg in zip(unpacked, tangents):
        if tg is not None and t is not None and _C._fw_tangent(t) is None:
            _C._fw_set_tangent(t, tg)
    return unpacked


def _zeros_like(t):
    import ferrograd

    return ferrograd.zeros_like(t)


def _input_tangents(args):
    """The tangents of ``args`` when forward AD is on and one has one, else ``None``."""
    if _C._current_dual_level() < 0 or not _C._is_fwd_grad_enabled():
        return None
    tangents = [_C._fw_tangent(a) if isinstance(a, _C.Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return None
    return tangents


def _jvp_from_backward(cls, ctx, args, outputs, tangents, saved):
    """ferrograd's own Functions have differentiable backwards: their JVP is
    ``d/du sum_i <backward(u)_i, t_i>`` for a dummy cotangent ``u``."""
    from . import grad as _grad
    from .grad_mode import enable_grad

    prev = _C._is_fwd_grad_enabled()
    # The tangents are differentiable only where something they depend on requires
    # grad (a jvp of plain tensors gives plain tangents, as PyTorch's).
    create_graph = _C.is_grad_enabled() and any(
        isinstance(a, _C.Tensor) and a.requires_grad for a in (*args, *tangents))
    _C._set_fwd_grad_enabled(False)
    try:
        with enable_grad():
            us = [_zeros_like(o).requires_grad_() if isinstance(o, _C.Tensor)
                  and o.is_floating_point() else None for o in outputs]
            unpacked, ctx._unpacked = ctx._unpacked, tuple(saved)
            needs = ctx.needs_input_grad
            ctx.needs_input_grad = tuple(
                bool(n) or t is not None for n, t in zip(needs, tangents))
            try:
                grads = cls.backward(ctx, *us)
            finally:
                ctx._unpacked = unpacked
                ctx.needs_input_grad = needs
            grads = grads if isinstance(grads, tuple) else (grads,)
            total = None
            for g, t in zip(grads, tangents):
                if g is None or t is None:
                    continue
                term = (g * t).sum()
                total = term if total is None else total + term
            live = [u for u in us if u is not None]
            if total is None or not total.requires_grad:
                return [None for _ in outputs]
            res = list(_grad(total, live, create_graph=create_graph, allow_unused=True))
    finally:
        _C._set_fwd_grad_enabled(prev)
    return [res.pop(0) if u is not None else None for u in us]


def _with_tangents(cls, ctx, args, output, tangents, saved=None):
    """Runs ``cls.jvp`` (or the generic rule for ferrograd's own Functions)
    and attaches the tangents it returns to the outputs."""
    is_tuple = isinstance(output, tuple)
    outputs = list(output) if is_tuple else [output]
    own = cls.jvp is Function.jvp and cls.__module__.startswith("ferrograd.")
    if own:
        out_tangents = _jvp_from_backward(
            cls, ctx, args, outputs, tangents, ctx._to_save if saved is None else saved)
    else:
        prev_unpacked = ctx._unpacked
        ctx._unpacked = tuple(ctx._saved_for_forward)
        prev = _C._is_fwd_grad_enabled()
        _C._set_fwd_grad_enabled(False)
        try:
            out_tangents = cls.jvp(ctx, *tangents)
        finally:
            _C._set_fwd_grad_enabled(prev)
            ctx._unpacked = prev_unpacked
        if not isinstance(out_tangents, tuple):
            out_tangents = (out_tangents,)
        if len(out_tangents) != len(outputs):
            raise RuntimeError(
                f"{cls.__name__}.jvp returned an incorrect number of tangents "
                f"(expected {len(outputs)}, got {len(out_tangents)})"
            )
    fixed = []
    for o, t in zip(outputs, out_tangents):
        if isinstance(o, _C.Tensor) and o.is_floating_point() and t is not None:
            if _C._fw_tangent(o) is not None:
                # An input returned as is: give the caller a fresh alias.
                o = o.detach()
            _C._fw_set_tangent(o, t)
        fixed.append(o)
    return tuple(fixed) if is_tuple else fixed[0]


_TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"


class _OnceDifferentiableError(Function):
    """Passes gradients through, and refuses to be differentiated itself."""

    @staticmethod
    def forward(ctx, *grads):
        return tuple(g.clone() if isinstance(g, _C.Tensor) else g for g in grads)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(_TWICE)


def once_differentiable(fn):
    """Marks a ``backward`` as not differentiable: it runs without recording,
    and differentiating its result again raises a clear error."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _C.is_grad_enabled():
            return outputs
        requires = any(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        if not requires:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        tensors = [o for o in outs if isinstance(o, _C.Tensor)]
        if not tensors:
            return outputs
        # Route the results through a node that raises when differentiated;
        # its inputs are the incoming gradients that require grad.
        anchors = [a for a in args if isinstance(a, _C.Tensor) and a.requires_grad]
        wrapped = _OnceDifferentiableError.apply(*tensors, *anchors)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        it = iter(wrapped[: len(tensors)])
        fixed = tuple(next(it) if isinstance(o, _C.Tensor) else o for o in outs)
        return fixed[0] if single else fixed

    return wrapper

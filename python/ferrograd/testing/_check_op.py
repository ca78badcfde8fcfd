"""``check_op``: property-test an op's derivatives against finite differences."""

from __future__ import annotations

import numpy as np

from ..autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["check_op"]


def _is_floating(v):
    import ferrograd as fg

    if isinstance(v, fg.Tensor):
        return v.dtype in (fg.float32, fg.float64)
    return isinstance(v, np.ndarray) and v.dtype.kind == "f"


def _prepare(values):
    """Floating tensors and arrays become float64 leaves; if none of the drawn tensors
    requires grad, all floating ones do (so ``tensors()`` works as drawn)."""
    import ferrograd as fg

    floating = [_is_floating(v) for v in values]
    any_requires_grad = any(
        f and isinstance(v, fg.Tensor) and v.requires_grad for f, v in zip(floating, values)
    )
    out = []
    for f, v in zip(floating, values):
        if f:
            arr = np.array(v.detach().numpy() if isinstance(v, fg.Tensor) else v, dtype=np.float64)
            rg = (not any_requires_grad) or (isinstance(v, fg.Tensor) and v.requires_grad)
            out.append(fg.tensor(arr, dtype=fg.float64, requires_grad=rg))
        elif isinstance(v, np.ndarray):
            out.append(fg.tensor(v))
        else:
            out.append(v)
    return tuple(out)


def _describe(inputs):
    import ferrograd as fg

    parts = []
    for k, v in enumerate(inputs):
        if isinstance(v, fg.Tensor):
            values = np.array2string(np.asarray(v.detach().numpy()), precision=6, threshold=20)
            parts.append(f"  input {k}: shape {tuple(v.shape)}, {v.dtype}, values {values}")
        else:
            parts.append(f"  input {k}: {v!r}")
    return "\n".join(parts)


def _op_label(fn):
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type):  # a custom Function's apply
        return f"{owner.__name__}.{fn.__name__}"
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def check_op(fn, *strategies, args=None, order=2, max_examples=None, eps=1e-6, atol=1e-5,
             rtol=1e-3, fast_mode=False, check_batched_grad=False, check_forward_ad=False):
    """Property-test ``fn``'s gradients against finite differences on drawn inputs.

    Each strategy in ``strategies`` draws one positional argument of ``fn`` (use
    :mod:`ferrograd.testing.strategies`, e.g. ``differentiable_points(op)``); or pass
    ``args=``, a strategy drawing the whole tuple of arguments (for inputs that
    depend on each other, such as broadcastable shapes). Floating inputs are
    checked in float64: with ``order=1`` by :func:`gradcheck`, with ``order=2``
    (the default) also by :func:`gradgradcheck`. Hypothesis draws ``max_examples``
    examples (default: the active profile's) and shrinks a failure to a small
    one; the raised :class:`GradcheckError` names the order that failed, the
    inputs, and both Jacobians with the worst entry. Returns True.
    ``fn`` may be a composite or a custom ``autograd.Function``'s ``apply``.
    ``check_batched_grad=True`` also compares ``is_grads_batched`` backward with
    one backward per row; ``check_forward_ad=True`` also checks forward-mode
    tangents (gradcheck's ``check_forward_ad``) and, with ``order=2``,
    forward-over-reverse second derivatives (``check_fwd_over_rev``); it needs a
    forward rule for every op ``fn`` uses (a custom Function's ``jvp``).
    """
    try:
        import hypothesis
        from hypothesis import HealthCheck
        from hypothesis import strategies as st
    except ImportError as e:
        raise ImportError(
            "ferrograd.testing.check_op needs the 'hypothesis' package; install it with "
            "`pip install hypothesis` (or `pip install ferrograd[testing]`)."
        ) from e
    if order not in (1, 2):
        raise ValueError(f"check_op: order must be 1 or 2, got {order}")
    if bool(strategies) == (args is not None):
        raise TypeError(
            "check_op: pass one strategy per argument of fn, or args= (a strategy "
            "drawing the tuple of arguments), not both or neither"
        )
    drawn = st.tuples(*strategies) if strategies else args.map(tuple)
    name = _op_label(fn)
    parent = hypothesis.settings.default
    config = hypothesis.settings(
        parent,
        max_examples=max_examples if max_examples is not None else parent.max_examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    checks = [("first", gradcheck, {"fast_mode": fast_mode,
                                    "check_batched_grad": check_batched_grad,
                                    "check_forward_ad": check_forward_ad})]
    if order == 2:
        checks.append(("second", gradgradcheck, {"check_fwd_over_rev": check_forward_ad}))

    @config
    @hypothesis.given(drawn)
    def prop(values):
        inputs = _prepare(values)
        for what, check, extra in checks:
            try:
                check(fn, inputs, eps=eps, atol=atol, rtol=rtol, **extra)
            except GradcheckError as e:
                raise GradcheckError(
                    f"check_op: the {what} derivatives of {name} disagree with finite "
                    f"differences ({check.__name__}) at\n{_describe(inputs)}\n{e}"
                ) from None

    prop()
    return True

"""Finite-difference checks of analytical gradients, mirroring ``torch.autograd``.

``gradcheck`` compares the Jacobian that backward computes (one vector-Jacobian
product per output element) with a central-difference estimate. ferrograd has no
item assignment, so instead of perturbing inputs in place every evaluation gets
fresh input tensors built from a perturbed NumPy copy.

Differences from PyTorch, all deliberate:

* Only float64 inputs with ``requires_grad=True`` are checked; other inputs that
  require grad are skipped with a ``UserWarning`` (finite differences in single
  precision are too noisy to say anything).
* As in PyTorch, outputs that do not require grad are ignored, unless none does:
  then their numerical Jacobian must be zero. Input and output indices in error
  messages are positions in the full ``inputs`` tuple and ``func``'s full output.
* ``fast_mode=True`` is implemented as in PyTorch: for each (output, input) pair it
  compares the scalars ``v^T J_num u`` and ``v^T J_an u`` for seeded random unit
  vectors ``u``, ``v``. Unlike PyTorch it does not re-run the slow mode on failure.
* ferrograd has no "undefined" gradients; ``check_undefined_grad=True`` checks the
  closest analogue: all-zero output gradients must give zero (or no) input gradients.
* ``gen_non_contig_grad_outputs`` is accepted for compatibility and ignored.
* Beyond PyTorch, every backward run is checked for writes into its inputs and
  its grad_outputs (a custom ``Function.backward`` that modifies a tensor in
  place corrupts whatever else uses it), and a Jacobian mismatch names the worst
  entry next to both Jacobians.
* ``check_forward_ad=True`` compares the tangents of
  ``ferrograd.autograd.forward_ad`` with the numerical Jacobian's columns.
  ``check_batched_grad=True`` compares
  ``autograd.grad(..., is_grads_batched=True)`` with one backward per cotangent.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]

# Fixed so fast-mode projections and default grad_outputs, hence pass/fail, are reproducible.
_SEED = 0


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree."""


def _fg():
    # Imported at call time: the package may import this module while it is still
    # initialising, and validation scripts swap the backend by patching this function.
    import ferrograd

    return ferrograd


def _is_tensor(x):
    return hasattr(x, "requires_grad") and hasattr(x, "detach")


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _to_numpy(t):
    # .numpy() may share memory with the tensor; the copy keeps callers free to mutate.
    return np.array(t.detach().numpy(), dtype=np.float64)


def _tensor_outputs(out):
    """(position, tensor) for every tensor that ``func`` returned."""
    return [(k, o) for k, o in enumerate(_as_tuple(out)) if _is_tensor(o)]


def _checked_inputs(inputs):
    """Positions of the inputs to check: float64 tensors that require grad."""
    fg = _fg()
    differentiable = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if not differentiable:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, "
            "but none of them have requires_grad=True."
        )
    checked = []
    for i in differentiable:
        if inputs[i].dtype == fg.float64:
            checked.append(i)
        else:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating "
                "point tensor; gradcheck does not check it.",
                UserWarning,
                stacklevel=4,
            )
    if not checked:
        raise ValueError("gradcheck found no float64 input with requires_grad=True to check.")
    return checked


def _unit_random(rng, n):
    # Non-negative entries (as PyTorch draws them) keep sum(u) > 0 for the atol scaling.
    x = rng.random(n)
    norm = np.linalg.norm(x)
    return x / norm if norm > 0 else x


# --- numerical side -------------------------------------------------------------------


def _eval_perturbed(func, inputs, i, arr, grad_mode):
    fg = _fg()
    args = list(inputs)
    # requires_grad=True like the original leaf, since func may branch on it or
    # (in gradgradcheck) differentiate with respect to it.
    args[i] = fg.tensor(arr, dtype=fg.float64, requires_grad=True)
    no_grad = getattr(fg, "no_grad", contextlib.nullcontext)
    with contextlib.nullcontext() if grad_mode else no_grad():
        out = func(*args)
    return {k: _to_numpy(o).reshape(-1) for k, o in _tensor_outputs(out)}


def _central_difference(func, inputs, i, direction, eps, grad_mode):
    """(f(x_i + eps*d) - f(x_i - eps*d)) / (2 eps), flattened, for each tensor output."""
    base = _to_numpy(inputs[i])
    plus = _eval_perturbed(func, inputs, i, base + eps * direction, grad_mode)
    minus = _eval_perturbed(func, inputs, i, base - eps * direction, grad_mode)
    return {k: (plus[k] - minus[k]) / (2 * eps) for k in plus}


def _numerical_jacobian(func, inputs, checked, out_sizes, eps, grad_mode):
    """{(input, output): J} with J[j, l] = d out_l / d in_j, PyTorch's layout."""
    jac = {}
    for i in checked:
        shape, n = tuple(inputs[i].shape), inputs[i].numel()
        for k, m in out_sizes.items():
            jac[i, k] = np.zeros((n, m))
        for j in range(n):
            d = np.zeros(n)
            d[j] = 1.0
            diffs = _central_difference(func, inputs, i, d.reshape(shape), eps, grad_mode)
            for k in out_sizes:
                jac[i, k][j] = diffs[k]
    return jac


# --- analytical side ------------------------------------------------------------------


def _snapshot(t):
    return getattr(t, "_version", None), _to_numpy(t)


def _check_unmodified(what, before, t):
    version, values = before
    now_version, now_values = _snapshot(t)
    if version != now_version or not np.array_equal(values, now_values, equal_nan=True):
        raise GradcheckError(
            f"Backward modified {what} in place (its "
            + ("version counter went from "
               f"{version} to {now_version}" if version != now_version else "values changed")
            + "). A backward must not write into the tensors it receives or saved; "
            "compute a new tensor instead (e.g. grad_output * 2, not grad_output.mul_(2))."
        )


def _vjp(out, inputs, checked, v):
    """{input: flattened v^T d out / d input}; inputs the graph does not reach get zeros."""
    fg = _fg()
    cotangent = fg.tensor(v.reshape(tuple(out.shape)), dtype=out.dtype)
    before_inputs = {i: _snapshot(inputs[i]) for i in checked}
    before_cotangent = _snapshot(cotangent)
    grads = fg.autograd.grad(
        (out,),
        tuple(inputs[i] for i in checked),
        grad_outputs=(cotangent,),
        retain_graph=True,
        allow_unused=True,
    )
    for i in checked:
        _check_unmodified(f"input {i}", before_inputs[i], inputs[i])
    _check_unmodified("its grad_output", before_cotangent, cotangent)
    res = {}
    for i, g in zip(checked, grads):
        if g is None:
            res[i] = np.zeros(inputs[i].numel())
            continue
        if tuple(g.shape) != tuple(inputs[i].shape):
            raise GradcheckError(
                f"Gradient has shape mismatch for input {i}: expected "
                f"{tuple(inputs[i].shape)}, got {tuple(g.shape)}"
            )
        res[i] = _to_numpy(g).reshape(-1)
    return res


def _vjp_twice(out, inputs, checked, v):
    """The vjp plus the largest difference from a repeat, to catch nondeterministic backward."""
    first = _vjp(out, inputs, checked, v)
    second = _vjp(out, inputs, checked, v)
    drift = max(np.max(np.abs(first[i] - second[i]), initial=0.0) for i in checked)
    return first, drift


def _reentrancy_error(drift, nondet_tol):
    return GradcheckError(
        "Backward is not reentrant, i.e., running backward with same input and "
        "grad_output multiple times gives different values, although analytical "
        f"gradient matches numerical gradient (max difference {drift}). "
        f"The tolerance for nondeterminism was {nondet_tol}."
    )


def _mismatch(k, i, numerical, analytical, note="", atol=None, rtol=None):
    worst = ""
    n, a = np.asarray(numerical, dtype=np.float64), np.asarray(analytical, dtype=np.float64)
    if n.ndim == 2 and n.size:
        diff = np.abs(a - n)
        if atol is not None:
            # Rank by how far past its own tolerance each entry is.
            diff = diff - (atol + rtol * np.abs(n))
        j, m = np.unravel_index(int(np.nanargmax(np.where(np.isnan(diff), np.inf, diff))), n.shape)
        worst = (
            f"The worst entry is d output[{m}] / d input[{j}] (flat indices): "
            f"numerical {float(n[j, m])!r}, analytical {float(a[j, m])!r}, "
            f"difference {float(abs(a[j, m] - n[j, m]))!r}.\n"
        )
    return GradcheckError(
        f"Jacobian mismatch for output {k} with respect to input {i},\n"
        f"numerical:{numerical}\nanalytical:{analytical}\n{worst}{note}"
    )


# --- the two modes --------------------------------------------------------------------


def _differentiable_outputs(func, inputs, checked, eps, grad_mode):
    """The (position, tensor) outputs to compare: those that require grad, as in PyTorch.

    With none, every output is constant as far as autograd knows, so the numerical
    Jacobian must be exactly zero; then there is nothing left to compare.
    """
    outputs = _tensor_outputs(func(*inputs))
    diff = [(k, o) for k, o in outputs if o.requires_grad]
    if not diff:
        sizes = {k: o.numel() for k, o in outputs}
        numerical = _numerical_jacobian(func, inputs, checked, sizes, eps, grad_mode)
        for (i, k), n in numerical.items():
            if np.any(n != 0):
                raise GradcheckError(
                    f"Numerical gradient for function expected to be zero: output {k} does "
                    f"not require grad but depends on input {i},\nnumerical:{n}"
                )
    return diff


def _slow_check(func, inputs, checked, eps, atol, rtol, nondet_tol, grad_mode):
    outputs = _differentiable_outputs(func, inputs, checked, eps, grad_mode)
    analytical, drift = {}, 0.0
    for k, o in outputs:
        m = o.numel()
        for i in checked:
            analytical[i, k] = np.zeros((inputs[i].numel(), m))
        for col in range(m):
            v = np.zeros(m)
            v[col] = 1.0
            row, d = _vjp_twice(o, inputs, checked, v)
            drift = max(drift, d)
            for i in checked:
                analytical[i, k][:, col] = row[i]

    sizes = {k: o.numel() for k, o in outputs}
    numerical = _numerical_jacobian(func, inputs, checked, sizes, eps, grad_mode)
    for k, _ in outputs:
        for i in checked:
            a, n = analytical[i, k], numerical[i, k]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise _mismatch(k, i, n, a, atol=atol, rtol=rtol)
    if drift > nondet_tol:
        raise _reentrancy_error(drift, nondet_tol)


def _fast_check(func, inputs, checked, eps, atol, rtol, nondet_tol, grad_mode):
    rng = np.random.default_rng(_SEED)
    outputs = _differentiable_outputs(func, inputs, checked, eps, grad_mode)
    u = {i: _unit_random(rng, inputs[i].numel()) for i in checked}
    v = {k: _unit_random(rng, o.numel()) for k, o in outputs}

    analytical, drift = {}, 0.0
    for k, o in outputs:
        row, d = _vjp_twice(o, inputs, checked, v[k])
        drift = max(drift, d)
        for i in checked:
            analytical[i, k] = float(row[i] @ u[i])

    numerical = {}
    for i in checked:
        direction = u[i].reshape(tuple(inputs[i].shape))
        jvp = _central_difference(func, inputs, i, direction, eps, grad_mode)
        for k, _ in outputs:
            numerical[i, k] = float(v[k] @ jvp[k])

    note = (
        "\nThe above quantities are v^T J u for random unit vectors u, v (fast mode); "
        "rerun with fast_mode=False to see the full Jacobians."
    )
    for k, _ in outputs:
        for i in checked:
            a, n = analytical[i, k], numerical[i, k]
            # The slow mode's elementwise bound atol, pushed through v^T (.) u,
            # becomes atol * sum(u) * sum(v).
            tol = atol * u[i].sum() * v[k].sum() + rtol * abs(n)
            if not abs(a - n) <= tol:
                raise _mismatch(k, i, n, a, note)
    if drift > nondet_tol:
        raise _reentrancy_error(drift, nondet_tol)


def _check_undefined_grad(func, inputs, checked):
    fg = _fg()
    outputs = [o for _, o in _tensor_outputs(func(*inputs)) if o.requires_grad]
    if not outputs:
        return
    grads = fg.autograd.grad(
        tuple(outputs),
        tuple(inputs[i] for i in checked),
        grad_outputs=tuple(fg.zeros_like(o) for o in outputs),
        retain_graph=True,
        allow_unused=True,
    )
    for i, g in zip(checked, grads):
        if g is not None and np.any(_to_numpy(g) != 0):
            raise GradcheckError(
                f"Expected backward to give a zero gradient for input {i} when all "
                f"output gradients are zero, got:\n{_to_numpy(g)}"
            )


def _forward_ad():
    from . import forward_ad

    return forward_ad


def _check_forward_ad(func, inputs, checked, eps, atol, rtol, grad_mode):
    """Forward-mode Jacobian columns (one dual evaluation per input element) against
    the same central differences the backward check uses."""
    fg = _fg()
    fwad = _forward_ad()
    outputs = _tensor_outputs(func(*inputs))
    sizes = {k: o.numel() for k, o in outputs if o.dtype in (fg.float32, fg.float64)}
    numerical = _numerical_jacobian(func, inputs, checked, sizes, eps, grad_mode)
    for i in checked:
        n_in, shape = inputs[i].numel(), tuple(inputs[i].shape)
        forward = {k: np.zeros((n_in, m)) for k, m in sizes.items()}
        for j in range(n_in):
            tangent = np.zeros(n_in)
            tangent[j] = 1.0
            with fwad.dual_level():
                args = list(inputs)
                args[i] = fwad.make_dual(
                    inputs[i].detach(), fg.tensor(tangent.reshape(shape), dtype=inputs[i].dtype)
                )
                outs = dict(_tensor_outputs(func(*args)))
                for k in sizes:
                    t = fwad.unpack_dual(outs[k]).tangent
                    if t is not None:
                        forward[k][j] = _to_numpy(t).reshape(-1)
        for k in sizes:
            a, n = forward[k], numerical[i, k]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise _mismatch(
                    k, i, n, a, "\n(forward mode: analytical is the tangent of the output)",
                    atol=atol, rtol=rtol,
                )


def _check_batched_grad(func, inputs, checked, atol, rtol):
    """``is_grads_batched=True`` must give, row by row, what single backwards give."""
    fg = _fg()
    rng = np.random.default_rng(_SEED + 1)
    outputs = [(k, o) for k, o in _tensor_outputs(func(*inputs)) if o.requires_grad]
    targets = tuple(inputs[i] for i in checked)
    for k, o in outputs:
        batch = rng.uniform(-1.0, 1.0, (3,) + tuple(o.shape))
        cot = fg.tensor(batch, dtype=o.dtype)
        try:
            got = fg.autograd.grad(
                (o,), targets, (cot,), retain_graph=True, allow_unused=True,
                is_grads_batched=True,
            )
        except RuntimeError as e:
            raise GradcheckError(
                f"While computing batched gradients for output {k}, got: {e}"
            ) from e
        for b in range(3):
            single = _vjp(o, inputs, checked, batch[b].reshape(-1))
            for i, g in zip(checked, got):
                row = np.zeros(inputs[i].numel()) if g is None else _to_numpy(g[b]).reshape(-1)
                if not np.allclose(row, single[i], rtol=rtol, atol=atol):
                    raise GradcheckError(
                        f"For output {k} and input {i}, batched grad (row {b}) does not match "
                        f"the grad of one backward:\nbatched:{row}\nsingle:{single[i]}"
                    )


def _run(
    func,
    inputs,
    *,
    eps,
    atol,
    rtol,
    raise_exception,
    nondet_tol,
    check_undefined_grad,
    fast_mode,
    grad_mode,
    check_forward_ad=False,
    check_backward_ad=True,
    check_batched_grad=False,
):
    if not check_backward_ad and (check_batched_grad or check_undefined_grad):
        raise ValueError(
            "Setting check_batched_grad=True or check_undefined_grad=True requires "
            "check_backward_ad to be True"
        )
    if not (check_forward_ad or check_backward_ad):
        raise ValueError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    checked = _checked_inputs(inputs)
    check = _fast_check if fast_mode else _slow_check
    try:
        if check_backward_ad:
            check(func, inputs, checked, eps, atol, rtol, nondet_tol, grad_mode)
            if check_undefined_grad:
                _check_undefined_grad(func, inputs, checked)
            if check_batched_grad:
                _check_batched_grad(func, inputs, checked, atol, rtol)
        if check_forward_ad:
            _check_forward_ad(func, inputs, checked, eps, atol, rtol, grad_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=False,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_batched_forward_grad=False,
    check_forward_ad=False,
    check_backward_ad=True,
    fast_mode=False,
    masked=None,
):
    """Check ``func``'s analytical gradients against central finite differences.

    ``inputs`` is a tensor or a tuple of arguments; float64 tensors with
    ``requires_grad=True`` are checked. ``func`` returns a tensor or a tuple. An
    entry passes when ``|analytical - numerical| <= atol + rtol * |numerical|``.
    Returns True, or on failure raises :class:`GradcheckError` (returns False if
    ``raise_exception=False``). Backward is run twice per row; results differing by
    more than ``nondet_tol`` also fail, and so does a backward that writes into its
    inputs or grad_outputs. Numerical evaluations run under ``no_grad``.
    ``check_forward_ad`` also checks forward-mode tangents (needs
    ``ferrograd.autograd.forward_ad``), ``check_backward_ad=False`` skips the
    backward checks, ``check_batched_grad`` checks ``is_grads_batched`` backward.
    ``check_grad_dtypes``, ``check_batched_forward_grad`` and ``masked`` are accepted
    for PyTorch compatibility and ignored.
    """
    del check_grad_dtypes, check_batched_forward_grad, masked
    return _run(
        func,
        _as_tuple(inputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        fast_mode=fast_mode,
        grad_mode=False,
        check_forward_ad=check_forward_ad,
        check_backward_ad=check_backward_ad,
        check_batched_grad=check_batched_grad,
    )


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    gen_non_contig_grad_outputs=False,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_fwd_over_rev=False,
    check_rev_over_rev=True,
    fast_mode=False,
    masked=False,
):
    """Check second derivatives: gradcheck the vector-Jacobian product of ``func``.

    The checked function maps ``(*inputs, *grad_outputs)`` to the gradients of
    ``func``'s differentiable outputs (with ``grad_outputs`` as cotangents) with
    respect to the inputs that require grad, computed with ``create_graph=True``.
    Without ``grad_outputs``, seeded random ones in [-1, 1) that require grad are used.
    ``fast_mode``, ``nondet_tol`` and ``check_batched_grad`` apply to that check as
    in :func:`gradcheck`; ``check_fwd_over_rev=True`` needs forward-mode AD.
    ``check_undefined_grad``, ``check_grad_dtypes`` and ``masked`` are accepted for
    PyTorch compatibility and ignored.
    """
    del check_undefined_grad, check_grad_dtypes, masked
    if check_fwd_over_rev:
        _forward_ad()
    fg = _fg()
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(_SEED)
        outs = [o for _, o in _tensor_outputs(func(*inputs)) if o.requires_grad]
        grad_outputs = tuple(
            fg.tensor(
                np.asarray(rng.uniform(-1.0, 1.0, tuple(o.shape))),
                dtype=o.dtype,
                requires_grad=True,
            )
            for o in outs
        )
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_inputs = len(inputs)
    diff = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]

    def vjp(*args):
        # The forward-mode check passes detached dual tensors; differentiating
        # through them needs requires_grad back on (as PyTorch's gradgradcheck does).
        args = tuple(
            a.requires_grad_() if (i in diff or i >= n_inputs) and _is_tensor(a)
            and not a.requires_grad else a
            for i, a in enumerate(args)
        )
        xs, cotangents = args[:n_inputs], args[n_inputs:]
        outs = [o for _, o in _tensor_outputs(func(*xs)) if o.requires_grad]
        grads = fg.autograd.grad(
            tuple(outs),
            tuple(xs[i] for i in diff),
            grad_outputs=tuple(cotangents),
            create_graph=True,
            allow_unused=True,
        )
        return tuple(g for g in grads if g is not None)

    # grad_mode=True: vjp itself differentiates, which no_grad would forbid.
    return _run(
        vjp,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=False,
        fast_mode=fast_mode,
        grad_mode=True,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        check_batched_grad=check_batched_grad,
    )

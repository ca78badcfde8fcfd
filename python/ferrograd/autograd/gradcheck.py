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


def _vjp(out, inputs, checked, v):
    """{input: flattened v^T d out / d input}; inputs the graph does not reach get zeros."""
    fg = _fg()
    cotangent = fg.tensor(v.reshape(tuple(out.shape)), dtype=out.dtype)
    grads = fg.autograd.grad(
        (out,),
        tuple(inputs[i] for i in checked),
        grad_outputs=(cotangent,),
        retain_graph=True,
        allow_unused=True,
    )
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


def _mismatch(k, i, numerical, analytical, note=""):
    return GradcheckError(
        f"Jacobian mismatch for output {k} with respect to input {i},\n"
        f"numerical:{numerical}\nanalytical:{analytical}\n{note}"
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
                raise _mismatch(k, i, n, a)
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
):
    checked = _checked_inputs(inputs)
    check = _fast_check if fast_mode else _slow_check
    try:
        check(func, inputs, checked, eps, atol, rtol, nondet_tol, grad_mode)
        if check_undefined_grad:
            _check_undefined_grad(func, inputs, checked)
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
    fast_mode=False,
):
    """Check ``func``'s analytical gradients against central finite differences.

    ``inputs`` is a tensor or a tuple of arguments; float64 tensors with
    ``requires_grad=True`` are checked. ``func`` returns a tensor or a tuple. An
    entry passes when ``|analytical - numerical| <= atol + rtol * |numerical|``.
    Returns True, or on failure raises :class:`GradcheckError` (returns False if
    ``raise_exception=False``). Backward is run twice per row; results differing by
    more than ``nondet_tol`` also fail. Numerical evaluations run under ``no_grad``.
    """
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
):
    """Check second derivatives: gradcheck the vector-Jacobian product of ``func``.

    The checked function maps ``(*inputs, *grad_outputs)`` to the gradients of
    ``func``'s differentiable outputs (with ``grad_outputs`` as cotangents) with
    respect to the inputs that require grad, computed with ``create_graph=True``.
    Without ``grad_outputs``, seeded random ones in [-1, 1) that require grad are used.
    """
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
        nondet_tol=0.0,
        check_undefined_grad=False,
        fast_mode=False,
        grad_mode=True,
    )

"""Forward-mode transforms: ``jvp``, ``linearize``, ``jacfwd`` and
``hessian`` (``jacfwd(jacrev(f))``, forward over reverse).

Tangents ride on the physical tensors as ``autograd.forward_ad`` dual
tensors. ``jacfwd`` adds a batching level over the Jacobian's columns whose
tangents are the identity, so ``func`` runs once for all of them. In a
build without ``forward_ad``, ``jvp`` differentiates the vector-Jacobian
product instead (two backward passes) and ``jacfwd`` is ``jacrev``.
"""

from __future__ import annotations

import functools

from .. import _C
from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad
from ._batched import (
    from_physical,
    is_tensorlike,
    levels,
    push_level,
    running_transform,
    to_physical,
)
from ._pytree import tree_flatten, tree_unflatten
from ._reverse import _replace, check_argnums, jacrev, make_leaves

__all__ = ["jvp", "linearize", "jacfwd", "hessian"]


def _fwad():
    """``autograd.forward_ad``, or None in a build without forward mode."""
    try:
        from ..autograd import forward_ad
    except ImportError:
        return None
    return forward_ad


def _dual(fw, primal, tangent):
    # A dual made from a view keeps its tangent only on itself: views taken
    # from it look the tangent up on the view's base, which has none. So the
    # primal is copied out of a view first (an expanded input always is one).
    if primal._base is not None:
        primal = primal.clone()
    return fw.make_dual(primal, tangent)


def _jvp_by_double_vjp(func, flat_p, spec, flat_t, lvls, has_aux):
    """``jvp`` without forward mode: ``u -> J^T u`` is linear in ``u``, so
    differentiating ``<J^T u, v>`` with respect to ``u`` gives ``J v`` (two
    backward passes instead of one forward pass)."""
    with enable_grad():
        leaves, seen, keep = make_leaves(flat_p, lvls, "jvp")
        out = func(*tree_unflatten(seen, spec))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(
                    "jvp(f, primals, tangents): output of function f should be a tuple: "
                    "(output, aux) if has_aux is True"
                )
            out, aux = out
        flat_out, out_spec = tree_flatten(out)
        for o in flat_out:
            if not is_tensorlike(o):
                raise RuntimeError(
                    "jvp(f, primals, tangents): Expected f(*primals) to return only tensors, "
                    f"got unsupported type {type(o)}"
                )
        po = [to_physical(o, lvls) for o in flat_out]
        us = [_C.zeros(*p.shape, dtype=p.dtype).requires_grad_() for p in po]
        pairs = [(p, u) for p, u in zip(po, us) if p.requires_grad]
        if pairs:
            vjps = _autograd_grad(
                [p for p, _ in pairs],
                leaves,
                grad_outputs=[u for _, u in pairs],
                create_graph=True,
                allow_unused=True,
            )
        else:
            vjps = [None] * len(leaves)
        used = [(g, to_physical(t, lvls)) for g, t in zip(vjps, flat_t) if g is not None]
        if used:
            tans = _autograd_grad(
                [g for g, _ in used],
                us,
                grad_outputs=[t for _, t in used],
                create_graph=keep,
                allow_unused=True,
            )
        else:
            tans = [None] * len(us)
    prim = [from_physical(p if keep else p.detach(), lvls) for p in po]
    tang = [
        from_physical(_C.zeros(*p.shape, dtype=p.dtype) if t is None else t, lvls)
        for p, t in zip(po, tans)
    ]
    res = (tree_unflatten(prim, out_spec), tree_unflatten(tang, out_spec))
    return (*res, aux) if has_aux else res


def _check_tuple(x, what):
    if not isinstance(x, tuple):
        raise RuntimeError(
            f"jvp(f, primals, tangents): Expected {what} to be a tuple. E.g. it should be "
            "valid to call f(*primals)."
        )


def _tangent_of(fw, po):
    primal, tangent = fw.unpack_dual(po)
    if tangent is None:
        tangent = _C.zeros(*primal.shape, dtype=primal.dtype)
    return primal, tangent


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """Returns ``(func(*primals), J @ tangents)``: the Jacobian-vector product
    by forward-mode AD, one evaluation of ``func`` on dual tensors (with
    ``has_aux``, ``func`` returns ``(output, aux)`` and so does the result's
    first part)."""
    _check_tuple(primals, "primals")
    _check_tuple(tangents, "tangents")
    flat_p, spec = tree_flatten(primals)
    flat_t, tspec = tree_flatten(tangents)
    if spec != tspec:
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            f"structure. For example, if primals is a tuple of 3 tensors, tangents also must "
            f"be. Got primals with structure {spec} and tangents with structure {tspec}"
        )
    for p, t in zip(flat_p, flat_t):
        if not (is_tensorlike(p) and is_tensorlike(t)):
            raise RuntimeError(
                "jvp(f, primals, tangents): Expected primals and tangents to be Tensors"
            )
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                "jvp(f, primals, tangents): Expected primals and tangents to have the same "
                f"shape, got {list(p.shape)} and {list(t.shape)}"
            )
    fw = _fwad()
    lvls = list(levels())
    if fw is None:
        return _jvp_by_double_vjp(func, flat_p, spec, flat_t, lvls, has_aux)
    with fw.dual_level():
        duals = [
            from_physical(_dual(fw, to_physical(p, lvls), to_physical(t, lvls)), lvls)
            for p, t in zip(flat_p, flat_t)
        ]
        with running_transform():
            out = func(*tree_unflatten(duals, spec))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(
                    "jvp(f, primals, tangents): output of function f should be a tuple: "
                    "(output, aux) if has_aux is True"
                )
            out, aux = out
        flat_out, out_spec = tree_flatten(out)
        prim, tang = [], []
        for o in flat_out:
            if not is_tensorlike(o):
                raise RuntimeError(
                    "jvp(f, primals, tangents): Expected f(*primals) to return only tensors, "
                    f"got unsupported type {type(o)}"
                )
            p, t = _tangent_of(fw, to_physical(o, lvls))
            prim.append(from_physical(p, lvls))
            tang.append(from_physical(t, lvls))
    res = (tree_unflatten(prim, out_spec), tree_unflatten(tang, out_spec))
    return (*res, aux) if has_aux else res


def linearize(func, *primals):
    """Returns ``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the
    Jacobian-vector product at ``primals`` (each call evaluates ``func`` once
    on dual tensors)."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return out, jvp_fn


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """Returns a function computing the Jacobian of ``func`` with respect to
    the arguments ``argnums`` by forward mode: one evaluation on a batch of
    dual tensors whose tangents are the columns of the identity."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )

    if _fwad() is None:
        # A build without forward mode: the same Jacobian by reverse mode.
        return jacrev(func, argnums, has_aux=has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums, diff = check_argnums(argnums, args, "jacfwd")
        flat, spec = tree_flatten(diff)
        for x in flat:
            if not is_tensorlike(x):
                raise RuntimeError(
                    f"jacfwd: Expected all differentiated inputs to be Tensors, got {type(x)}"
                )
        lvls = list(levels())
        nlv = len(lvls)
        xshapes = [tuple(x.shape) for x in flat]
        sizes = [_numel(s) for s in xshapes]
        total = sum(sizes)
        offsets = [sum(sizes[:i]) for i in range(len(sizes))]
        fw = _fwad()
        with push_level(total, randomness) as lv:
            all_lvls = [*lvls, lv]
            with fw.dual_level():
                duals = []
                for x, s, off, xs in zip(flat, sizes, offsets, xshapes):
                    px = to_physical(x, all_lvls)
                    eye = _C.eye(total, dtype=px.dtype).narrow(1, off, s)
                    t = eye.reshape(total, *xs).expand(*px.shape)
                    duals.append(from_physical(_dual(fw, px, t), all_lvls))
                new = _replace(args, nums, isinstance(argnums, int), tree_unflatten(duals, spec))
                out = func(*new, **kwargs)
                aux = None
                if has_aux:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError(
                            "jacfwd(f, ...)(*args): output of function f should be a tuple: "
                            "(output, aux) if has_aux is True"
                        )
                    out, aux = out
                flat_out, out_spec = tree_flatten(out)
                tangents = []
                for o in flat_out:
                    if not is_tensorlike(o):
                        raise RuntimeError(
                            "jacfwd(f, ...)(*args): Expected f to return only tensors, got "
                            f"unsupported type {type(o)}"
                        )
                    tangents.append(_tangent_of(fw, to_physical(o, all_lvls))[1])
                if has_aux:
                    aux_flat, aux_spec = tree_flatten(aux)
                    aux = tree_unflatten(
                        [
                            from_physical(
                                fw.unpack_dual(to_physical(a, all_lvls))[0].select(nlv, 0), lvls
                            )
                            if is_tensorlike(a)
                            else a
                            for a in aux_flat
                        ],
                        aux_spec,
                    )
        outer = [int(s) for s in tangents[0].shape[:nlv]] if tangents else []
        results = []
        for t in tangents:
            osh = tuple(t.shape[nlv + 1 :])
            per = []
            for s, off, xs in zip(sizes, offsets, xshapes):
                cols = t.narrow(nlv, off, s).movedim(nlv, -1)
                per.append(from_physical(cols.reshape(*outer, *osh, *xs), lvls))
            results.append(tree_unflatten(per, spec))
        jac = tree_unflatten(results, out_spec)
        return (jac, aux) if has_aux else jac

    return wrapper


def hessian(func, argnums=0):
    """Returns a function computing the Hessian of the scalar function
    ``func``: ``jacfwd(jacrev(func))``, forward mode over reverse mode."""
    return jacfwd(jacrev(func, argnums), argnums)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n

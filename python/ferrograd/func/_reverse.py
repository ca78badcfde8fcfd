"""Reverse-mode transforms: ``grad``, ``grad_and_value``, ``vjp``, ``jacrev``.

Each differentiated input is made a leaf over its physical value at every
active batching level (an input unbatched at a level is expanded over it
first), so the function runs per sample and one backward pass over the
physical tensors gives every sample's gradient at once: under
``vmap(grad(f))`` that is the per-sample gradients, and ``jacrev`` adds its
own level over the rows of the Jacobian, seeded with the identity.
"""

from __future__ import annotations

import functools

from .. import _C
from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad
from ._batched import (
    forward_ad,
    from_physical,
    is_tensorlike,
    levels,
    push_level,
    running_transform,
    to_physical,
)
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jacrev"]


def check_argnums(argnums, args, name):
    """PyTorch's checks of ``argnums``; returns the selected arguments."""
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and argnums:
        nums = argnums
        for a in nums:
            if not isinstance(a, int) or isinstance(a, bool):
                raise RuntimeError(
                    f"{name}: Expected argnums to be int or tuple of ints, got {argnums}."
                )
        if len(set(nums)) != len(nums):
            raise RuntimeError(f"{name}: argnums must be unique, got {argnums}")
    else:
        raise RuntimeError(
            f"{name}: argnums must be non-empty and int or tuple of ints, got {argnums}."
        )
    for a in nums:
        if not -len(args) <= a < len(args):
            raise RuntimeError(f"Got argnums={a}, but only {len(args)} positional inputs")
    nums = tuple(a % len(args) for a in nums)
    if isinstance(argnums, int):
        return nums, args[nums[0]]
    return nums, tuple(args[a] for a in nums)


def _replace(args, nums, single, new):
    args = list(args)
    if single:
        args[nums[0]] = new
    else:
        for a, v in zip(nums, new):
            args[a] = v
    return tuple(args)


def make_leaves(flat, lvls, name):
    """Leaves over the physical values of ``flat`` at ``lvls``: an input that
    already requires grad (an outer transform differentiates it) stays in its
    graph through a view; the others are detached leaves. Returns the leaves,
    the inputs as the function sees them, and whether the result must keep a
    graph (create_graph)."""
    fw = forward_ad()
    leaves, seen, keep = [], [], fw is not None
    for x in flat:
        if not is_tensorlike(x):
            raise RuntimeError(
                f"{name}: Expected all differentiated inputs to be Tensors, got {type(x)}"
            )
        p = to_physical(x, lvls)
        if p.requires_grad:
            keep = True
            leaf = p.view_as(p)
        elif fw is not None:
            # Forward over reverse: the leaf keeps the input's tangent, so the
            # backward (run with create_graph) carries it to the gradient.
            primal, tangent = fw.unpack_dual(p)
            leaf = primal.detach().requires_grad_()
            if tangent is not None:
                # Not a view (see _forward._dual): detach() starts a new base.
                leaf = fw.make_dual(leaf, tangent)
        else:
            leaf = p.detach().requires_grad_()
        leaves.append(leaf)
        seen.append(from_physical(leaf, lvls))
    return leaves, seen, keep


def _outer_keep(outer_grad, outs, leaves):
    """Whether the outputs depend on a tensor that requires grad outside the
    transform (a model parameter the function closes over or takes as a
    non-differentiated argument): then the gradients keep their graph, so a
    backward through them reaches it, as in PyTorch (``loss(grad(u)(x))``
    trains the model inside ``u``)."""
    if not outer_grad:
        return False
    return _C._reaches_other_leaf([o for o in outs if o.requires_grad], list(leaves))


def _split_aux(out, has_aux, name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{name}(f)(*args): output of function f should be a tuple: (output, aux) if "
            "has_aux is True"
        )
    return out


def _detach_aux(aux, keep):
    # The auxiliary output leaves the transform like its value: without the
    # transform's own graph unless an outer transform differentiates it.
    if keep or aux is None:
        return aux
    flat, spec = tree_flatten(aux)
    return tree_unflatten([a.detach() if is_tensorlike(a) else a for a in flat], spec)


def _grads(outs, leaves, seeds, keep):
    pairs = [(o, s) for o, s in zip(outs, seeds) if o.requires_grad]
    if pairs:
        gs = _autograd_grad(
            [o for o, _ in pairs],
            leaves,
            grad_outputs=[s for _, s in pairs],
            retain_graph=True,
            create_graph=keep,
            allow_unused=True,
        )
    else:
        # No output depends on a differentiated input.
        gs = [None] * len(leaves)
    return [_C.zeros(*lf.shape, dtype=lf.dtype) if g is None else g for g, lf in zip(gs, leaves)]


def grad_and_value(func, argnums=0, has_aux=False):
    """Returns a function computing ``(gradient, value)`` of the scalar
    function ``func`` with respect to the arguments ``argnums`` (pytrees of
    tensors allowed); with ``has_aux``, ``func`` returns ``(output, aux)`` and
    the result is ``(gradient, (value, aux))``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums, diff = check_argnums(argnums, args, "grad_and_value")
        lvls = list(levels())
        outer_grad = _C.is_grad_enabled()
        flat, spec = tree_flatten(diff)
        with enable_grad():
            leaves, seen, keep = make_leaves(flat, lvls, "grad_and_value")
            new = _replace(args, nums, isinstance(argnums, int), tree_unflatten(seen, spec))
            with running_transform():
                res = func(*new, **kwargs)
            out, aux = _split_aux(res, has_aux, "grad_and_value")
            if not is_tensorlike(out):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                    f"{type(out)}"
                )
            if out.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                    f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                    "APIs instead?"
                )
            po = to_physical(out, lvls)
            keep = keep or _outer_keep(outer_grad, [po], leaves)
            gs = _grads([po], leaves, [_C.ones(*po.shape, dtype=po.dtype)], keep)
        g = tree_unflatten([from_physical(x, lvls) for x in gs], spec)
        value = from_physical(po if keep else po.detach(), lvls)
        aux = _detach_aux(aux, keep)
        return (g, (value, aux)) if has_aux else (g, value)

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """Returns a function computing the gradient of the scalar function
    ``func`` with respect to the arguments ``argnums``; composes with every
    other transform (``vmap(grad(f))`` gives per-sample gradients,
    ``grad(grad(f))`` second derivatives)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux=False):
    """Returns ``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the
    vector-Jacobian products with respect to every primal, as a tuple (with
    ``has_aux``, ``(output, vjp_fn, aux)``)."""
    lvls = list(levels())
    flat, spec = tree_flatten(primals)
    outer_grad = _C.is_grad_enabled()
    with enable_grad():
        leaves, seen, keep = make_leaves(flat, lvls, "vjp")
        with running_transform():
            res = func(*tree_unflatten(seen, spec))
        out, aux = _split_aux(res, has_aux, "vjp")
        flat_out, out_spec = tree_flatten(out)
        for o in flat_out:
            if not is_tensorlike(o):
                raise RuntimeError(
                    f"vjp(f, *primals): Expected f to be a function that has non-empty output "
                    f"consisting of Tensors, got {type(o)}"
                )
        po = [to_physical(o, lvls) for o in flat_out]
        keep = keep or _outer_keep(outer_grad, po, leaves)
    ids = [lv.id for lv in lvls]

    def vjp_fn(*cotangents):
        ct = cotangents[0] if len(cotangents) == 1 and not is_tensorlike(out) else cotangents
        if is_tensorlike(out):
            ct = cotangents[0] if len(cotangents) == 1 else cotangents
        flat_ct, ct_spec = tree_flatten(ct)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}"
            )
        inner = [lv.id for lv in levels()]
        if inner[: len(ids)] != ids or len(inner) != len(ids):
            raise RuntimeError(
                "vjp_fn: calling the function returned by vjp under a different vmap/jacrev "
                "level than vjp itself is not supported; call vjp inside the vmap, or use "
                "jacrev"
            )
        with enable_grad():
            seeds = [to_physical(c, lvls) for c in flat_ct]
            gs = _grads(po, leaves, seeds, keep)
        return tree_unflatten([from_physical(g, lvls) for g in gs], spec)

    result = tree_unflatten([from_physical(p if keep else p.detach(), lvls) for p in po], out_spec)
    aux = _detach_aux(aux, keep)
    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """Returns a function computing the Jacobian of ``func`` with respect to
    the arguments ``argnums`` by reverse mode: ``func`` runs once over a
    batch of the Jacobian's rows and one backward pass, seeded with the
    identity, gives all rows (``chunk_size`` rows at a time when given)."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums, diff = check_argnums(argnums, args, "jacrev")
        lvls = list(levels())
        flat, spec = tree_flatten(diff)
        nlv = len(lvls)
        outer_grad = _C.is_grad_enabled()

        def run(m):
            with push_level(m, "same") as lv:
                all_lvls = [*lvls, lv]
                with enable_grad():
                    leaves, seen, keep = make_leaves(flat, all_lvls, "jacrev")
                    new = _replace(args, nums, isinstance(argnums, int), tree_unflatten(seen, spec))
                    out, aux = _split_aux(func(*new, **kwargs), has_aux, "jacrev")
                    flat_out, out_spec = tree_flatten(out)
                    for o in flat_out:
                        if not is_tensorlike(o):
                            raise RuntimeError(
                                "jacrev(f, ...)(*args): Expected f to be a function that has "
                                f"non-empty output consisting of Tensors, got {type(o)}"
                            )
                    po = [to_physical(o, all_lvls) for o in flat_out]
                    keep = keep or _outer_keep(outer_grad, po, leaves)
                if has_aux:
                    aux = tree_unflatten(
                        [
                            from_physical(to_physical(a, all_lvls).select(nlv, 0), lvls)
                            if is_tensorlike(a)
                            else a
                            for a in tree_flatten(aux)[0]
                        ],
                        tree_flatten(aux)[1],
                    )
            return leaves, po, out_spec, aux, keep

        # A one-row run gives the output's size; for a scalar output it is the answer.
        leaves, po, out_spec, aux, keep = run(1)
        oshapes = [tuple(p.shape[nlv + 1 :]) for p in po]
        sizes = [_numel(s) for s in oshapes]
        total = sum(sizes)
        offsets = [sum(sizes[:i]) for i in range(len(sizes))]
        step = chunk_size or total
        per_input = [[] for _ in flat]
        for start in range(0, total, step):
            m = min(step, total - start)
            if total > 1:
                leaves, po, _, _, keep = run(m)
            eye = _C.eye(total, dtype=po[0].dtype).narrow(0, start, m)
            seeds = []
            with enable_grad():
                for p, s, off, osh in zip(po, sizes, offsets, oshapes):
                    seeds.append(eye.narrow(1, off, s).reshape(m, *osh).expand(*p.shape))
                gs = _grads(po, leaves, seeds, keep)
            for j, g in enumerate(gs):
                per_input[j].append(g if keep else g.detach())
        full = [g[0] if len(g) == 1 else _C.cat(g, nlv) for g in per_input]
        outer = [int(s) for s in full[0].shape[:nlv]] if full else []
        results = []
        for s, off, osh in zip(sizes, offsets, oshapes):
            per = []
            for g in full:
                xsh = tuple(g.shape[nlv + 1 :])
                per.append(from_physical(g.narrow(nlv, off, s).reshape(*outer, *osh, *xsh), lvls))
            results.append(tree_unflatten(per, spec))
        jac = tree_unflatten(results, out_spec)
        return (jac, _detach_aux(aux, keep)) if has_aux else jac

    return wrapper


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n

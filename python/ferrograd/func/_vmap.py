"""``vmap``: runs a function once on batched values (``BatchedTensor``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import _C
from ._batched import BatchedTensor, is_tensorlike, push_level, unwrap_at
from ._pytree import broadcast_to_flat, tree_flatten, tree_unflatten

__all__ = ["vmap"]


def _name(func):
    return getattr(func, "__name__", repr(func))


def _process_inputs(func, in_dims, args):
    fn = _name(func)
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(
            f"vmap({fn}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
            f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    if len(args) == 0:
        raise ValueError(
            f"vmap({fn})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
            "trying to vmap over a function with no inputs. The latter is unsupported."
        )
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_to_flat(in_dims, spec)
    if flat_dims is None:
        raise ValueError(
            f"vmap({fn}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
            f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but "
            f"inputs has structure {spec}."
        )
    for i, (arg, d) in enumerate(zip(flat_args, flat_dims)):
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(
                f"vmap({fn}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                "in_dim must be either an integer dimension or None."
            )
        if isinstance(d, int) and not is_tensorlike(arg):
            raise ValueError(
                f"vmap({fn}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, "
                "please use None as the respective in_dim"
            )
        if d is not None and (d < -arg.dim() or d >= arg.dim()):
            raise ValueError(
                f"vmap({fn}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                f"but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim "
                f"to satisfy -{arg.dim()} <= in_dim < {arg.dim()}."
            )
        if d is not None and d < 0:
            flat_dims[i] = d % arg.dim()
    sizes = [a.shape[d] for a, d in zip(flat_args, flat_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0], flat_args, flat_dims, spec


def _check_out_dims(func, out_dims):
    def ok(d):
        return d is None or (isinstance(d, int) and not isinstance(d, bool))

    leaves, _ = tree_flatten(out_dims)
    if not all(ok(d) for d in leaves):
        raise ValueError(
            f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None "
            "or a python collection of ints representing where in the outputs the vmapped "
            "dimension should appear."
        )


def _unwrap_output(func, out, lid, size, out_dim):
    fn = _name(func)
    if out_dim is None:
        if isinstance(out, BatchedTensor) and out._level == lid:
            raise ValueError(
                f"vmap({fn}, ...): `{fn}` can not return a BatchedTensor when out_dim is None"
            )
        return out
    if not is_tensorlike(out):
        raise ValueError(
            f"vmap({fn}, ...): `{fn}` must only return Tensors, got type {type(out)}. Did you "
            "mean to set out_dim= to None for output?"
        )
    v = unwrap_at(out, lid)
    if v is None:
        # Unbatched at this level: the same value for every sample.
        v = out.unsqueeze(0).expand(size, *out.shape)
    nd = v.dim()
    if out_dim < -nd or out_dim >= nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got "
            f"{out_dim})"
        )
    return v.movedim(0, out_dim) if out_dim % nd != 0 else v


def _vmap_once(func, in_dims, out_dims, randomness, args, kwargs):
    size, flat_args, flat_dims, spec = _process_inputs(func, in_dims, args)
    with push_level(size, randomness) as lv:
        batched = [
            a if d is None else BatchedTensor(a.movedim(d, 0) if d else a, lv.id)
            for a, d in zip(flat_args, flat_dims)
        ]
        out = func(*tree_unflatten(batched, spec), **kwargs)
        flat_out, out_spec = tree_flatten(out)
        if is_tensorlike(out):
            if isinstance(out_dims, int) or out_dims is None:
                flat_od = [out_dims]
            elif isinstance(out_dims, tuple) and len(out_dims) == 1:
                flat_od = list(out_dims)
            else:
                flat_od = None
        else:
            flat_od = broadcast_to_flat(out_dims, out_spec)
        if flat_od is None:
            raise ValueError(
                f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                "compatible with the structure of `outputs`. out_dims has structure "
                f"{tree_flatten(out_dims)[1]} but outputs has structure {out_spec}."
            )
        res = [_unwrap_output(func, o, lv.id, size, d) for o, d in zip(flat_out, flat_od)]
    return tree_unflatten(res, out_spec)


def _chunked(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    size, flat_args, flat_dims, spec = _process_inputs(func, in_dims, args)
    outs = []
    for start in range(0, size, chunk_size):
        n = min(chunk_size, size - start)
        chunk = [a if d is None else a.narrow(d, start, n) for a, d in zip(flat_args, flat_dims)]
        outs.append(
            _vmap_once(func, in_dims, out_dims, randomness, tree_unflatten(chunk, spec), kwargs)
        )
    if len(outs) == 1:
        return outs[0]
    flat0, out_spec = tree_flatten(outs[0])
    flat_od = (
        [out_dims] * len(flat0)
        if isinstance(out_dims, int) or out_dims is None
        else broadcast_to_flat(out_dims, out_spec)
    )
    pieces = [tree_flatten(o)[0] for o in outs]
    joined = []
    for i, d in enumerate(flat_od):
        if d is None:
            joined.append(pieces[0][i])
        else:
            joined.append(_C.cat([p[i] for p in pieces], d))
    return tree_unflatten(joined, out_spec)


def vmap(
    func: Callable[..., Any],
    in_dims: int | tuple[Any, ...] | list[Any] | None = 0,
    out_dims: int | tuple[int, ...] = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable[..., Any]:
    """Vectorizing map: ``vmap(func)`` returns a function that maps ``func``
    over dimension ``in_dims`` of its inputs, running ``func`` once on batched
    values (every op has a batching rule; one without raises an error naming
    it) and placing the batch dimension of the outputs at ``out_dims``.
    ``randomness`` is 'error', 'same' or 'different' as in ``torch.func.vmap``;
    ``chunk_size`` maps that many samples at a time."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    _check_out_dims(func, out_dims)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        if chunk_size is not None:
            return _chunked(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)
        return _vmap_once(func, in_dims, out_dims, randomness, args, kwargs)

    return wrapped

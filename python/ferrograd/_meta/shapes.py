"""Shape rules of views, joins and indexing (``view``, ``permute``,
``expand``, ``cat``, ``split``, ``__getitem__``, ...)."""

from __future__ import annotations

import builtins
import math

from .. import _C
from . import (
    _RULES,
    _any_requires_grad,
    _check_devices,
    _is_tensorish,
    _like_result,
    _norm_dim,
    _stand_in,
)


def _size_args(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _infer(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _view(x, *shape, **kwargs):
    if not shape and "size" in kwargs:
        shape = (kwargs["size"],)
    if len(shape) == 1 and isinstance(shape[0], _C.dtype):
        return x._derive(x._shape, shape[0])
    return x._derive(_infer(_size_args(shape), x.numel()))


_RULES["view"] = _RULES["reshape"] = _view
_RULES["_unsafe_view"] = _view


def _view_as(x, other):
    return x._derive(_infer(tuple(other.shape), x.numel()))


_RULES["view_as"] = _RULES["reshape_as"] = _view_as


def _flatten(x, start_dim=0, end_dim=-1):
    nd = x.dim()
    if nd == 0:
        return x._derive((1,))
    s, e = _norm_dim(start_dim, nd), _norm_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = list(x.shape)
    return x._derive(tuple(shape[:s]) + (math.prod(shape[s : e + 1]),) + tuple(shape[e + 1 :]))


_RULES["flatten"] = _flatten


def _unflatten(x, dim, sizes):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    sizes = _infer(tuple(sizes), shape[d])
    return x._derive(tuple(shape[:d]) + sizes + tuple(shape[d + 1 :]))


_RULES["unflatten"] = _unflatten


def _permute(x, *dims):
    dims = _size_args(dims)
    nd = x.dim()
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal "
            f"to len(dims) = {len(dims)}"
        )
    ds = [_norm_dim(d, nd) for d in dims]
    if len(set(ds)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return x._derive(tuple(x.shape[d] for d in ds))


_RULES["permute"] = _permute


def _transpose(x, dim0, dim1):
    nd = x.dim()
    shape = list(x.shape)
    if nd == 0:
        return x._derive(())
    a, b = _norm_dim(dim0, nd), _norm_dim(dim1, nd)
    shape[a], shape[b] = shape[b], shape[a]
    return x._derive(tuple(shape))


_RULES["transpose"] = _RULES["swapaxes"] = _RULES["swapdims"] = _transpose


def _t(x):
    if x.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.dim()}D")
    return x._derive(tuple(reversed(x.shape)))


_RULES["t"] = _t


def _movedim(x, source, destination):
    nd = x.dim()
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_norm_dim(d, nd) for d in src]
    dst = [_norm_dim(d, nd) for d in dst]
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = [o if o is not None else next(rest) for o in order]
    return x._derive(tuple(x.shape[o] for o in order))


_RULES["movedim"] = _RULES["moveaxis"] = _movedim


def _unsqueeze(x, dim):
    nd = x.dim()
    d = _norm_dim(dim, nd + 1, wrap_scalar=False)
    shape = list(x.shape)
    shape.insert(d, 1)
    return x._derive(tuple(shape))


_RULES["unsqueeze"] = _unsqueeze


def _squeeze(x, dim=None):
    shape = list(x.shape)
    if dim is None:
        return x._derive(tuple(s for s in shape if s != 1))
    dims = [dim] if isinstance(dim, int) else list(dim)
    ds = {_norm_dim(d, len(shape)) for d in dims} if shape else set()
    return x._derive(tuple(s for i, s in enumerate(shape) if not (i in ds and s == 1)))


_RULES["squeeze"] = _squeeze


def _expand(x, *sizes):
    sizes = _size_args(sizes)
    nd = x.dim()
    if len(sizes) < nd:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(x.shape)}}}, size=[{', '.join(map(str, sizes))}]): "
            "the number of sizes provided must be greater or equal to the number of dimensions "
            "in the tensor"
        )
    shape = (None,) * (len(sizes) - nd) + tuple(x.shape)
    out = []
    for i, (s, n) in enumerate(zip(shape, sizes)):
        if n == -1:
            if s is None:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            out.append(s)
        elif s is None or s == n or s == 1:
            out.append(n)
        else:
            raise RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size ({s}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(x.shape)}"
            )
    return x._derive(tuple(out))


_RULES["expand"] = _expand
_RULES["broadcast_to"] = lambda x, size: _expand(x, *size)
_RULES["expand_as"] = lambda x, other: _expand(x, *other.shape)


def _repeat(x, *sizes):
    sizes = _size_args(sizes)
    if len(sizes) < x.dim():
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
            "tensor"
        )
    shape = (1,) * (len(sizes) - x.dim()) + tuple(x.shape)
    return x._derive(tuple(s * n for s, n in zip(shape, sizes)))


_RULES["repeat"] = _repeat


def _narrow(x, dim, start, length):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    if start < 0:
        start += shape[d]
    if start < 0 or start + length > shape[d]:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({shape[d]}).")
    shape[d] = length
    return x._derive(tuple(shape))


_RULES["narrow"] = _narrow


def _select(x, dim, index):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    if not -shape[d] <= index < shape[d]:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(x.shape)} at "
            f"dimension {d}"
        )
    del shape[d]
    return x._derive(tuple(shape))


_RULES["select"] = _select


def _index_select(x, dim, index):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    if shape:
        shape[d] = index.numel()
    return x._derive(tuple(shape))


_RULES["index_select"] = _index_select


def _gather(x, dim, index, **kwargs):
    return x._derive(tuple(index.shape))


_RULES["gather"] = _gather


def _split(x, split_size_or_sections, dim=0):
    d = _norm_dim(dim, x.dim())
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] if step else [n]
        if not sizes:
            sizes = [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                f"at dimension {d}), but got split_sizes={sizes}"
            )
    out = []
    for s in sizes:
        shape = list(x.shape)
        shape[d] = s
        out.append(x._derive(tuple(shape)))
    return tuple(out)


_RULES["split"] = _split


def _chunk(x, chunks, dim=0):
    d = _norm_dim(dim, x.dim())
    n = x.shape[d]
    step = -(-n // chunks) if chunks else n
    return _split(x, step if step else 1, dim) if n else (x._derive(tuple(x.shape)),)


_RULES["chunk"] = _chunk


def _unbind(x, dim=0):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    n = shape.pop(d)
    return tuple(x._derive(tuple(shape)) for _ in range(n))


_RULES["unbind"] = _unbind


def _cat(tensors, dim=0, **kwargs):
    tensors = list(tensors)
    _check_devices(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    full = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]
    ref = full[0] if full else tensors[0]
    d = _norm_dim(dim, ref.dim())
    shape = list(ref.shape)
    total = 0
    for i, t in enumerate(full):
        if t.dim() != ref.dim():
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ref.dim()} and {t.dim()}"
            )
        for j, (a, b) in enumerate(zip(ref.shape, t.shape)):
            if j != d and a != b:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {a} but "
                    f"got size {b} for tensor number {i} in the list."
                )
        total += t.shape[d]
    if shape:
        shape[d] = total
    real = _C.cat([_stand_in(t) for t in tensors], 0)
    return _like_result(real, tuple(shape), _any_requires_grad(tensors))


_RULES["cat"] = _RULES["concat"] = _RULES["concatenate"] = _cat


def _stack(tensors, dim=0, **kwargs):
    tensors = list(tensors)
    _check_devices(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tuple(tensors[0].shape)
    for i, t in enumerate(tensors):
        if tuple(t.shape) != ref:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 and "
                f"{list(t.shape)} at entry {i}"
            )
    d = _norm_dim(dim, len(ref) + 1, wrap_scalar=False)
    shape = list(ref)
    shape.insert(d, len(tensors))
    real = _C.stack([_stand_in(t) for t in tensors], 0)
    return _like_result(real, tuple(shape), _any_requires_grad(tensors))


_RULES["stack"] = _stack


def _diagonal(x, offset=0, dim1=0, dim2=1):
    nd = x.dim()
    a, b = _norm_dim(dim1, nd), _norm_dim(dim2, nd)
    n, m = x.shape[a], x.shape[b]
    k = builtins.max(0, builtins.min(n, m - offset) if offset >= 0 else builtins.min(n + offset, m))
    shape = [s for i, s in enumerate(x.shape) if i not in (a, b)] + [k]
    return x._derive(tuple(shape))


_RULES["diagonal"] = _diagonal


def _getitem(x, index):
    if not isinstance(index, tuple):
        index = (index,)
    shape = list(x.shape)
    out = []
    pos = 0
    n_real = builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
    for item in index:
        if item is None:
            out.append(1)
        elif item is Ellipsis:
            k = len(shape) - n_real
            out.extend(shape[pos : pos + k])
            pos += k
        elif isinstance(item, bool):
            out.append(1 if item else 0)
        elif isinstance(item, int):
            if pos >= len(shape):
                raise IndexError(
                    f"too many indices for tensor of dimension {len(shape)}"
                )
            if not -shape[pos] <= item < shape[pos]:
                raise IndexError(
                    f"index {item} is out of bounds for dimension {pos} with size {shape[pos]}"
                )
            pos += 1
        elif isinstance(item, slice):
            if pos >= len(shape):
                raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
            start, stop, step = item.indices(shape[pos])
            if step <= 0:
                raise ValueError("step must be greater than zero")
            out.append(builtins.max(0, -(-(stop - start) // step)))
            pos += 1
        elif _is_tensorish(item) and not item.dtype.is_floating_point and str(item.dtype) != (
            "ferrograd.bool"
        ):
            out.extend(item.shape)
            pos += 1
        else:
            raise NotImplementedError(
                "ferrograd: indexing a meta tensor with a boolean mask has no meta "
                "implementation (the result's size depends on the data)"
            )
    out.extend(shape[pos:])
    return x._derive(tuple(out))


_RULES["__getitem__"] = _getitem

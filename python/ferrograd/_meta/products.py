"""Shape rules of matrix products (``matmul``, ``mm``, ``bmm``, ``linear``,
``addmm``, ``bilinear``, ``einsum``, ...)."""

from __future__ import annotations

import builtins
import math

from .. import _C
from . import (
    _RULES,
    MetaTensor,
    _any_requires_grad,
    _broadcast,
    _check_devices,
    _like_result,
    _run,
    _stand_in,
)


def _matmul_shape(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not sa or not sb:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {len(sa)}D and "
            f"{len(sb)}D"
        )
    if len(sa) == 1 and len(sb) == 1:
        if sa[0] != sb[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have the same "
                f"number of elements, but got {sa[0]} and {sb[0]} elements respectively"
            )
        return ()
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    if a2[-1] != b2[-2]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({math.prod(a2[:-1])}x{a2[-1]} and "
            f"{b2[-2]}x{b2[-1]})"
        )
    batch = _broadcast(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(sa) == 1:
        out = out[:-2] + out[-1:]
    if len(sb) == 1:
        out = out[:-1]
    return out


def _product(name):
    def rule(a, b, **kwargs):
        _check_devices((a, b))
        if name == "mm" and (a.dim() != 2 or b.dim() != 2):
            raise RuntimeError("self must be a matrix")
        if name == "bmm" and (a.dim() != 3 or b.dim() != 3):
            raise RuntimeError("batch1 must be a 3D tensor")
        if name == "mv" and (a.dim() != 2 or b.dim() != 1):
            raise RuntimeError("vector + matrix @ vector expected, got 1, 2, 2")
        if name == "dot" and (a.dim() != 1 or b.dim() != 1):
            raise RuntimeError(
                f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors"
            )
        if name == "bmm" and a.shape[0] != b.shape[0]:
            raise RuntimeError("batch1 and batch2 must have same number of batches")
        shape = _matmul_shape(a, b)
        real = _C.matmul(_stand_in(a), _stand_in(b))
        return _like_result(real, shape, _any_requires_grad((a, b)))

    return rule


for _n in ("matmul", "mm", "bmm", "mv", "dot", "__matmul__", "inner_no"):
    if not _n.endswith("_no"):
        _RULES[_n] = _product(_n)
_RULES["__rmatmul__"] = lambda b, a: _RULES["matmul"](a, b)


def _outer(a, b):
    real = _C.outer(_stand_in(a).reshape(1), _stand_in(b).reshape(1))
    return _like_result(real, (a.numel(), b.numel()), _any_requires_grad((a, b)))


_RULES["outer"] = _RULES["ger"] = _outer


def _linear(x, weight, bias=None):
    _check_devices((x, weight, bias) if bias is not None else (x, weight))
    in_f = weight.shape[-1] if weight.dim() else 1
    if x.dim() == 0 or x.shape[-1] != in_f:
        xs = tuple(x.shape)
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({math.prod(xs[:-1]) if xs else 1}x"
            f"{xs[-1] if xs else 1} and {in_f}x{weight.shape[0] if weight.dim() == 2 else 1})"
        )
    out = tuple(x.shape[:-1]) + ((weight.shape[0],) if weight.dim() == 2 else ())
    if bias is not None:
        _broadcast(out, tuple(bias.shape))
    args = (x, weight, bias)
    real = _C.linear(
        _C.zeros(1, 1, dtype=x.dtype), _C.zeros(1, 1, dtype=weight.dtype),
        None if bias is None else _C.zeros(1, dtype=bias.dtype),
    )  # fmt: skip
    return _like_result(real, out, _any_requires_grad(args))


_RULES["linear"] = _linear


def _addmm(inp, a, b, *, beta=1, alpha=1):
    shape = _matmul_shape(a, b)
    _broadcast(shape, tuple(inp.shape))
    return _run(_C.Tensor.add, (_stand_in_of(shape, a), inp), {}, shape)


def _stand_in_of(shape, like):
    return MetaTensor(shape, like.dtype, like.requires_grad)


_RULES["addmm"] = _RULES["addbmm_no"] = _RULES["baddbmm"] = _addmm
_RULES["addmv"] = _addmm


def _bilinear(x1, x2, weight, bias=None):
    return MetaTensor(
        tuple(x1.shape[:-1]) + (weight.shape[0],), x1.dtype,
        _any_requires_grad((x1, x2, weight, bias) if bias is not None else (x1, x2, weight)),
    )  # fmt: skip


_RULES["bilinear"] = _bilinear


def _einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands) or "..." in equation:
        raise NotImplementedError("ferrograd: this einsum has no meta implementation")
    sizes = {}
    for term, op in zip(terms, operands):
        if len(term) != op.dim():
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                f"the number of dimensions ({op.dim()}) for operand {terms.index(term)}"
            )
        for c, s in zip(term, op.shape):
            if sizes.setdefault(c, s) != s and s != 1 and sizes[c] != 1:
                raise RuntimeError(
                    "einsum(): operands do not broadcast with remapped shapes (original->remapped)"
                )
            sizes[c] = builtins.max(sizes[c], s)
    if not _:
        counts = {}
        for c in lhs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        rhs = "".join(sorted(c for c, k in counts.items() if k == 1))
    dtype = operands[0].dtype
    return MetaTensor(tuple(sizes[c] for c in rhs), dtype, _any_requires_grad(operands))


_RULES["einsum"] = _einsum

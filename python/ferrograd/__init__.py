"""ferrograd: reverse-mode autograd for dense CPU tensors, with PyTorch's API.

Tensors, kernels, the graph and the backward engine live in the Rust
extension ``ferrograd._C``; this package re-exports them under the names a
PyTorch user expects and adds the pure-Python conveniences (grad-mode
context managers, ``nn``, ``autograd.grad``).
"""

from __future__ import annotations

from . import _C
from ._C import (
    Tensor,
    abs,
    add,
    all,
    any,
    arange,
    clone,
    cos,
    div,
    dot,
    empty,
    eq,
    exp,
    eye,
    from_numpy,
    full,
    ge,
    get_num_threads,
    gt,
    is_grad_enabled,
    is_inference_mode_enabled,
    le,
    linspace,
    log,
    logical_and,
    logical_not,
    logical_or,
    lt,
    manual_seed,
    matmul,
    mm,
    mul,
    ne,
    neg,
    ones,
    pow,
    rand,
    randint,
    randn,
    relu,
    set_num_threads,
    sigmoid,
    sign,
    sin,
    sqrt,
    sub,
    tanh,
    tensor,
    where,
    zeros,
)
from ._C import bool as bool  # noqa: A001 - the dtype, as torch.bool
from ._C import dtype as dtype
from ._C import float32, float64, int64
from ._size import Size
from .autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

float = float32  # noqa: A001 - PyTorch's alias
double = float64
long = int64

__version__ = "0.1.0"

# Imported after the names above exist: these modules use them.
from . import autograd, nn  # noqa: E402


def zeros_like(input, *, dtype=None, requires_grad=False):
    return _C._like(input, "full", 0.0, dtype, requires_grad)


def ones_like(input, *, dtype=None, requires_grad=False):
    return _C._like(input, "full", 1.0, dtype, requires_grad)


def full_like(input, fill_value, *, dtype=None, requires_grad=False):
    return _C._like(input, "full", fill_value, dtype, requires_grad)


def empty_like(input, *, dtype=None, requires_grad=False):
    return _C._like(input, "full", 0.0, dtype, requires_grad)


def rand_like(input, *, dtype=None, requires_grad=False):
    return _C._like(input, "rand", 0.0, dtype, requires_grad)


def randn_like(input, *, dtype=None, requires_grad=False):
    return _C._like(input, "randn", 0.0, dtype, requires_grad)


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001
    return input.sum(dim, keepdim, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    return input.mean(dim, keepdim, dtype=dtype)


def norm(input, p="fro", dim=None, keepdim=False):
    if dim is not None or keepdim:
        raise NotImplementedError("norm over dimensions is not available yet")
    return input.norm(None if p == "fro" else p)


def reshape(input, shape):
    return input.reshape(shape)


def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)


def t(input):
    return input.t()


def squeeze(input, dim=None):
    return input.squeeze(dim)


def unsqueeze(input, dim):
    return input.unsqueeze(dim)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def numel(input):
    return input.numel()


def is_tensor(obj):
    return isinstance(obj, Tensor)


def equal(input, other):
    return input.equal(other)


__all__ = [
    "Size", "Tensor", "abs", "add", "all", "any", "arange", "autograd", "bool", "clone",
    "cos", "div", "dot", "double", "dtype", "empty", "empty_like", "enable_grad", "eq",
    "equal", "exp", "eye", "flatten", "float", "float32", "float64", "from_numpy", "full",
    "full_like", "ge", "get_num_threads", "gt", "inference_mode", "int64", "is_grad_enabled",
    "is_inference_mode_enabled", "is_tensor", "le", "linspace", "log", "logical_and",
    "logical_not", "logical_or", "long", "lt", "manual_seed", "matmul", "mean", "mm", "mul",
    "ne", "neg", "nn", "no_grad", "norm", "numel", "ones", "ones_like", "pow", "rand",
    "rand_like", "randint", "randn", "randn_like", "relu", "reshape", "set_grad_enabled",
    "set_num_threads", "sigmoid", "sign", "sin", "sqrt", "squeeze", "sub", "sum", "t", "tanh",
    "tensor", "transpose", "unsqueeze", "where", "zeros", "zeros_like",
]

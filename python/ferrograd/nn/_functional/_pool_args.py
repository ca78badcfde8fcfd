"""The argument handling every 1-, 2- and 3-d pool shares, in PyTorch's words: the
input's rank, the window's sizes, the size-1 dimension a 1-d pool (a height) or an
unbatched input (a batch) runs with, the adaptive pools' output size and the
``return_indices`` overloads type checkers see."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from ... import _C
from ._args import _check_tensor, _tuple

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..._C import Tensor
    from ..._typing import IntOrInts

_ROWS = (
    "{op}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, "
    "but got: {shape}"
)
_BATCHED = "Expected 4D (unbatched) or 5D (batched) input to {op}, but got input of size: {shape}"
_RANK = "{op}(): Expected {lo}D or {hi}D tensor, but got {shape}"

#: PyTorch's refusal of an input that is neither ``n + 1`` nor ``n + 2`` dims, per op
#: (the 2-d pools leave it to their kernels).
_RANK_ERROR = {
    **dict.fromkeys(
        ("max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d"), _ROWS
    ),
    **dict.fromkeys(("max_pool3d", "avg_pool3d"), _BATCHED),
    **dict.fromkeys(("adaptive_avg_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"), _RANK),
    "adaptive_max_pool3d": "{op}(): Expected {lo}D or {hi}D tensor, but got: {shape}",
}


def _check_input(input, n, op):
    """Refuses a non-tensor (a tensor-like one, vmap's, passes) and an input of the wrong
    rank for the ``n``-d pool ``op``."""
    if not isinstance(input, _C.Tensor) and not hasattr(type(input), "__ferrograd_function__"):
        _check_tensor(input)
    if op in _RANK_ERROR and input.dim() not in (n + 1, n + 2):
        shape = list(input.shape)
        raise RuntimeError(_RANK_ERROR[op].format(op=op, lo=n + 1, hi=n + 2, shape=shape))


def _window(n, kernel_size, stride, padding, dilation=1, op=None):
    """An ``n``-d pool's ``kernel_size``, ``stride``, ``padding`` and ``dilation`` as lists
    of ``n`` ints (one int stands for all), checked in the words of the ATen pool ``op``;
    a None stride is the kernel size, and so is an empty one for an ATen pool. With no
    ``op`` (max_unpool, which PyTorch writes in Python) they are only normalised."""
    kernel = _tuple(kernel_size, n, "kernel_size")
    if stride is None or (op is not None and not isinstance(stride, int) and len(stride) == 0):
        stride = list(kernel)
    else:
        stride = _tuple(stride, n, "stride")
    padding = _tuple(padding, n, "padding")
    dilation = _tuple(dilation, n, "dilation")
    if op == "max_pool1d":
        _check_max_pool1d(kernel[0], stride[0], padding[0], dilation[0])
    elif op is not None and n == 1:
        # PyTorch's 1-d average pool is its 2-d one over a height of 1, in its words too.
        _check_pool([1, *kernel], [1, *stride], [0, *padding], [1, *dilation], "HW")
    elif op is not None:
        _check_pool(kernel, stride, padding, dilation, "THW"[-n:])
    return kernel, stride, padding, dilation


def _check_max_pool1d(k, s, p, d):
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(
            "max_pool1d() padding should be at most half of kernel size, but got "
            f"padding={p} and kernel_size={k}"
        )
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")


def _check_pool(kernel, stride, padding, dilation, letters):
    """PyTorch's checks of a 2-d or 3-d pooling's arguments, in its order (each
    dimension's output size first, then the shape check) and words."""
    for k, s, p, d in zip(kernel, stride, padding, dilation):
        # The common valid case in one pass; any failure re-checks in PyTorch's order.
        if not (0 < k < 2**31 and 0 < s < 2**31 and 0 < d < 2**31 and 0 <= p < 2**31
                and p <= ((k - 1) * d + 1) // 2):  # fmt: skip
            break
    else:
        return
    # Its kernels take the sizes as C ints (a kernel of 2**62 would otherwise be
    # honoured, window by window).
    if any(not -(2**31) <= v < 2**31 for v in (*kernel, *stride, *padding, *dilation)):
        raise RuntimeError("value cannot be converted to type int without overflow")
    for k, s, p, d in zip(kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )

    def got(prefix, values):
        return " ".join(f"{prefix}{a}: {v}" for a, v in zip(letters, values))

    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got {got('k', kernel)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got {got('d', stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(
            f"dilation should be greater than zero, but got {got('dilation', dilation)}"
        )


def _with_dim(dim, fn, input, *args):
    """``fn(input, *args)`` run with a size-1 dimension inserted in ``input`` at ``dim``,
    which its output (or values and indices) loses again: a 1-d pool is the 2-d kernel
    over a height of 1 (``dim`` -2), an unbatched input a batch of one (``dim`` 0)."""
    out = fn(input.unsqueeze(dim), *args)
    if isinstance(out, tuple):
        values, indices = out
        return values.squeeze(dim), indices.squeeze(dim)
    return out.squeeze(dim)


def _batch_of_one(n, fn, input, *args):
    """``fn(input, *args)`` of a batched (``n + 2``-dim) input, run on an unbatched one as
    a batch of one."""
    return _with_dim(0, fn, input, *args) if input.dim() == n + 1 else fn(input, *args)


def _adaptive_size(input, output_size, n):
    if isinstance(output_size, int):
        return [int(output_size)] * n
    if output_size is None:
        output_size = [output_size] * n
    output_size = list(output_size)
    if len(output_size) != n:
        raise RuntimeError(f"output_size must be {n}, but got {len(output_size)}")
    if all(s is not None for s in output_size):
        return [int(s) for s in output_size]
    # None keeps that dimension's input size, as in PyTorch.
    shape = input.shape[-n:]
    return [shape[i] if s is None else int(s) for i, s in enumerate(output_size)]


class _MaxPool(Protocol):
    """``max_pool1d/2d/3d``: a tuple with ``return_indices=True``."""

    @overload
    def __call__(
        self,
        input: Tensor,
        kernel_size: IntOrInts,
        stride: IntOrInts | None = None,
        padding: IntOrInts = 0,
        dilation: IntOrInts = 1,
        ceil_mode: bool = False,
        return_indices: Literal[False] = False,
    ) -> Tensor: ...
    @overload
    def __call__(
        self,
        input: Tensor,
        kernel_size: IntOrInts,
        stride: IntOrInts | None = None,
        padding: IntOrInts = 0,
        dilation: IntOrInts = 1,
        ceil_mode: bool = False,
        return_indices: Literal[True] = ...,
    ) -> tuple[Tensor, Tensor]: ...
    @overload
    def __call__(
        self,
        input: Tensor,
        kernel_size: IntOrInts,
        stride: IntOrInts | None = None,
        padding: IntOrInts = 0,
        dilation: IntOrInts = 1,
        ceil_mode: bool = False,
        return_indices: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]: ...


class _AdaptiveMaxPool(Protocol):
    """``adaptive_max_pool1d/2d/3d``: a tuple with ``return_indices=True``."""

    @overload
    def __call__(
        self, input: Tensor, output_size: IntOrInts, return_indices: Literal[False] = False
    ) -> Tensor: ...
    @overload
    def __call__(
        self, input: Tensor, output_size: IntOrInts, return_indices: Literal[True] = ...
    ) -> tuple[Tensor, Tensor]: ...
    @overload
    def __call__(
        self, input: Tensor, output_size: IntOrInts, return_indices: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]: ...


def _max_pool_typed(fn: Callable[..., Any]) -> _MaxPool:
    """``fn`` itself; type checkers see its ``return_indices`` overloads."""
    return fn  # type: ignore[return-value]


def _adaptive_max_pool_typed(fn: Callable[..., Any]) -> _AdaptiveMaxPool:
    """``fn`` itself; type checkers see its ``return_indices`` overloads."""
    return fn  # type: ignore[return-value]

"""Max, average and adaptive pooling in one and two dimensions
(``max_pool1d/2d``, ``avg_pool1d/2d``, ``adaptive_avg_pool1d/2d``,
``adaptive_max_pool1d/2d`` and the ``*_with_indices`` forms).

These normalise PyTorch's arguments and call one Rust op each (a 1-d pool is
the 2-d kernel over a height of 1); kernels and backward rules live in
``src/ops/pool.rs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

from ... import _C
from ._args import _check_tensor, _tuple
from ._rowwise import _rowwise

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
]


def _stride(stride, kernel_size, n):
    if stride is None or (not isinstance(stride, int) and len(stride) == 0):
        return _tuple(kernel_size, n, "kernel_size")
    return _tuple(stride, n, "stride")


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


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool2d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 flat positions
        ``h * W_in + w`` in each input plane.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> out, idx = F.max_pool2d_with_indices(x, 2)
        >>> idx
        tensor([[[[ 5,  7],
                  [13, 15]]]])
    """
    _check_tensor(input)
    kernel = _tuple(kernel_size, 2, "kernel_size")
    stride = _stride(stride, kernel_size, 2)
    padding = _tuple(padding, 2, "padding")
    dilation = _tuple(dilation, 2, "dilation")
    _check_pool(kernel, stride, padding, dilation, "HW")
    return _C.max_pool2d_with_indices(input, kernel, stride, padding, dilation, bool(ceil_mode))


@overload
def max_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def max_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[True] = ...,
) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
def max_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """2-d max pooling: the maximum of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down (a last window
            that starts in the right padding is dropped). Default: ``False``.
        return_indices (bool): also return the flat in-plane position of each
            maximum (for :func:`max_unpool2d`). Default: ``False``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1)
          - 1) / stride[0] + 1)`` (``ceil`` with ``ceil_mode``), ``W_out`` likewise.

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.max_pool2d(x, 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
        >>> F.max_pool2d(torch.ones(1, 1, 5, 5), 2, ceil_mode=True).shape
        ferrograd.Size([1, 1, 3, 3])
    """
    out, idx = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def _check_1d(input, name):
    _check_tensor(input)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
            f"for input, but got: {list(input.shape)}"
        )


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool1d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 positions along ``L_in``.

    Example::

        >>> out, idx = F.max_pool1d_with_indices(torch.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        >>> out, idx
        (tensor([[3., 2.]]), tensor([[1, 2]]))
    """
    _check_1d(input, "max_pool1d")
    (k,) = _tuple(kernel_size, 1, "kernel_size")
    (st,) = _stride(stride, kernel_size, 1)
    (p,) = _tuple(padding, 1, "padding")
    (d,) = _tuple(dilation, 1, "dilation")
    # PyTorch's max_pool1d checks and words.
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if st <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {st}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(
            "max_pool1d() padding should be at most half of kernel size, but got "
            f"padding={p} and kernel_size={k}"
        )
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out, idx = _C.max_pool2d_with_indices(
        input.unsqueeze(-2), [1, k], [1, st], [0, p], [1, d], bool(ceil_mode)
    )
    return out.squeeze(-2), idx.squeeze(-2)


@overload
def max_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def max_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[True] = ...,
) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
def max_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """1-d max pooling: the maximum of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): also return the position of each maximum.
            Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - dilation * (kernel_size - 1) - 1)
          / stride + 1)`` (``ceil`` with ``ceil_mode``).

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> F.max_pool1d(torch.tensor([[1.0, 3.0, 2.0, 0.0, 5.0]]), 2)
        tensor([[3., 2.]])
        >>> F.max_pool1d(torch.tensor([[1.0, 3.0, 2.0, 0.0, 5.0]]), 2, ceil_mode=True)
        tensor([[3., 2., 5.]])
    """
    out, idx = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """2-d average pooling: the mean of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides, at most half the
            kernel size. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor.
            Default: ``True``.
        divisor_override (int, optional): divide every window's sum by this instead.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - kernel_size[0]) / stride[0] + 1)``
          (``ceil`` with ``ceil_mode``), ``W_out`` likewise.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.avg_pool2d(x, 2)
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
        >>> F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)[0, 0, 0]
        tensor([2.5000, 3.0000, 4.0000, 4.5000])
    """
    _check_tensor(input)
    kernel = _tuple(kernel_size, 2, "kernel_size")
    stride = _stride(stride, kernel_size, 2)
    padding = _tuple(padding, 2, "padding")
    _check_pool(kernel, stride, padding, [1, 1], "HW")
    return _C.avg_pool2d(
        input,
        kernel,
        stride,
        padding,
        bool(ceil_mode),
        bool(count_include_pad),
        None if divisor_override is None else int(divisor_override),
    )


def avg_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-d average pooling: the mean of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor.
            Default: ``True``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - kernel_size) / stride + 1)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.avg_pool1d(torch.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[2., 1.]])
    """
    _check_1d(input, "avg_pool1d")
    kernel = [1, *_tuple(kernel_size, 1, "kernel_size")]
    stride = [1, *_stride(stride, kernel_size, 1)]
    padding = [0, *_tuple(padding, 1, "padding")]
    _check_pool(kernel, stride, padding, [1, 1], "HW")
    out = _C.avg_pool2d(
        input.unsqueeze(-2),
        kernel,
        stride,
        padding,
        bool(ceil_mode),
        bool(count_include_pad),
        None,
    )
    return out.squeeze(-2)


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


def adaptive_avg_pool2d(input: Tensor, output_size: IntOrInts) -> Tensor:
    """2-d average pooling to a fixed output size, whatever the input size.

    Output cell ``i`` along a dimension averages input positions
    ``floor(i * L_in / L_out)`` to ``ceil((i + 1) * L_in / L_out) - 1``.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        output_size (int or tuple): ``(H_out, W_out)``, or one int for both; a
            ``None`` entry keeps that input size.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.adaptive_avg_pool2d(x, 1)
        tensor([[[[7.5000]]]])
        >>> F.adaptive_avg_pool2d(torch.ones(2, 3, 7, 5), (3, None)).shape
        ferrograd.Size([2, 3, 3, 5])
    """
    _check_tensor(input)
    return _C.adaptive_avg_pool2d(input, _adaptive_size(input, output_size, 2))


def adaptive_avg_pool1d(input: Tensor, output_size: IntOrInts) -> Tensor:
    """1-d average pooling to a fixed output length.

    Output cell ``i`` averages input positions ``floor(i * L_in / L_out)`` to
    ``ceil((i + 1) * L_in / L_out) - 1``.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        output_size (int): ``L_out``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.adaptive_avg_pool1d(torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]), 2)
        tensor([[2., 4.]])
    """
    _check_1d(input, "adaptive_avg_pool1d")
    size = _adaptive_size(input, output_size, 1)
    return _C.adaptive_avg_pool2d(input.unsqueeze(-2), [1, *size]).squeeze(-2)


def adaptive_max_pool2d_with_indices(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`adaptive_max_pool2d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        output_size (int or tuple): ``(H_out, W_out)``, or one int for both; a
            ``None`` entry keeps that input size.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 flat positions in each plane.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.adaptive_max_pool2d_with_indices(x, 1)
        (tensor([[[[15.]]]]), tensor([[[[15]]]]))
    """
    _check_tensor(input)
    return _C.adaptive_max_pool2d(input, _adaptive_size(input, output_size, 2))


@overload
def adaptive_max_pool2d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def adaptive_max_pool2d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: Literal[True] = ...,
) -> tuple[Tensor, Tensor]: ...
@overload
def adaptive_max_pool2d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
def adaptive_max_pool2d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """2-d max pooling to a fixed output size, whatever the input size (the windows are those
    of :func:`adaptive_avg_pool2d`).

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        output_size (int or tuple): ``(H_out, W_out)``, or one int for both; a
            ``None`` entry keeps that input size.
        return_indices (bool): also return the flat in-plane position of each
            maximum. Default: ``False``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``.

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.adaptive_max_pool2d(x, (2, 1))
        tensor([[[[ 7.],
                  [15.]]]])
    """
    out, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d_with_indices(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`adaptive_max_pool1d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        output_size (int): ``L_out``.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 positions along ``L_in``.

    Example::

        >>> F.adaptive_max_pool1d_with_indices(torch.tensor([[1.0, 3.0, 2.0, 5.0]]), 2)
        (tensor([[3., 5.]]), tensor([[1, 3]]))
    """
    _check_1d(input, "adaptive_max_pool1d")
    size = _adaptive_size(input, output_size, 1)
    out, idx = _C.adaptive_max_pool2d(input.unsqueeze(-2), [1, *size])
    return out.squeeze(-2), idx.squeeze(-2)


@overload
def adaptive_max_pool1d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def adaptive_max_pool1d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: Literal[True] = ...,
) -> tuple[Tensor, Tensor]: ...
@overload
def adaptive_max_pool1d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
def adaptive_max_pool1d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """1-d max pooling to a fixed output length.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        output_size (int): ``L_out``.
        return_indices (bool): also return the position of each maximum.
            Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``.

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> F.adaptive_max_pool1d(torch.tensor([[1.0, 3.0, 2.0, 5.0, 4.0]]), 2)
        tensor([[3., 5.]])
    """
    out, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


for _name, _rank in [
    ("max_pool1d", 3), ("max_pool1d_with_indices", 3), ("max_pool2d", 4),
    ("max_pool2d_with_indices", 4), ("avg_pool1d", 3), ("avg_pool2d", 4),
    ("adaptive_avg_pool1d", 3), ("adaptive_avg_pool2d", 4), ("adaptive_max_pool1d", 3),
    ("adaptive_max_pool1d_with_indices", 3), ("adaptive_max_pool2d", 4),
    ("adaptive_max_pool2d_with_indices", 4),
]:  # fmt: skip
    globals()[_name] = _rowwise(globals()[_name], _rank)
del _name, _rank

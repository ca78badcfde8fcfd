"""Convolution, pooling, padding, unfold/fold and interpolation (``nn.functional``).

These normalise PyTorch's arguments (an int or a tuple, ``'same'``/``'valid'``
padding, unbatched inputs) and call one Rust op each; kernels and backward
rules live in ``src/ops/conv.rs`` and ``src/ops/pool.rs``.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from ... import _C, _dispatch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._C import Tensor
    from ..._typing import FloatOrFloats, IntOrInts

__all__ = [
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
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
    "pad",
    "unfold",
    "fold",
    "interpolate",
]


def _tuple(v, n, name="argument"):
    """An int or a sequence of ``n`` ints as a list of ``n`` ints."""
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an int or a tuple of {n} ints, not bool")
    if isinstance(v, int):
        return [v] * n
    try:
        out = [int(x) for x in v]
    except TypeError:
        raise TypeError(
            f"{name} must be an int or a tuple of {n} ints, not {type(v).__name__}"
        ) from None
    if len(out) == 1:
        return out * n
    if len(out) != n:
        raise RuntimeError(f"{name} must be an int or a tuple of {n} ints, but got {tuple(out)}")
    return out


def _check_tensor(input, name="input"):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"{name} must be a Tensor, not {type(input).__name__}")


# ----- convolution ---------------------------------------------------------------------------


def _check_conv_args(weight, stride, padding, dilation, groups, sd, transposed=False,
                     output_padding=None):  # fmt: skip
    """PyTorch's argument checks of a convolution, with its words, before the kernel
    sees them (a kernel of size 0 would otherwise read nothing and return zeros)."""
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        if transposed and sd == 2:
            raise RuntimeError(
                f"dilation should be greater than zero, but got dilation_height: {dilation[0]}, "
                f"dilation_width: {dilation[1]}"
            )
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    kernel = list(weight.shape[2:])
    if any(k <= 0 for k in kernel):
        if sd == 3:
            raise RuntimeError(
                "kernel size should be greater than zero, but got: "
                f"{kernel[0]} x {kernel[1]} x {kernel[2]} (TxHxW)"
            )
        kh, kw = ([1] + kernel)[-2:]
        raise RuntimeError(
            "kernel size should be greater than zero, but got kernel_height: "
            f"{kh} kernel_width: {kw}"
        )
    if transposed:
        if weight.numel() == 0:
            raise RuntimeError(
                f"non-empty 2D or 4D weight tensor expected, but got: {list(weight.shape)}"
            )
        if output_padding is not None and any(
            op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)
        ):
            oph, opw = ([0] + list(output_padding))[-2:]
            sh, sw = ([1] + list(stride))[-2:]
            dh, dw = ([1] + list(dilation))[-2:]
            raise RuntimeError(
                "output padding must be smaller than either stride or dilation, but got "
                f"output_padding_height: {oph} output_padding_width: {opw} stride_height: {sh} "
                f"stride_width: {sw} dilation_height: {dh} dilation_width: {dw}"
            )
    elif weight.shape[0] < 1:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least 1 at dimension 0, but got "
            f"weight of size {list(weight.shape)} instead"
        )


def _conv(input, weight, bias, stride, padding, dilation, groups, sd):
    if _dispatch.has_protocol(input, weight, bias):
        if _dispatch.is_batched(input, weight, bias):
            from ...func._nn_rules import conv_rule

            return conv_rule(_conv, input, weight, bias, stride, padding, dilation, groups, sd)
        public = conv1d if sd == 1 else conv2d
        return _dispatch.dispatch(public, (input, weight, bias, stride, padding, dilation, groups))
    _check_tensor(input)
    _check_tensor(weight, "weight")
    name = f"conv{sd}d"
    if input.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"Expected {sd + 1}D (unbatched) or {sd + 2}D (batched) input to {name}, "
            f"but got input of size: {list(input.shape)}"
        )
    if weight.dim() != sd + 2:
        raise RuntimeError(
            f"Expected {sd + 2}-dimensional weight for {name}, but got weight of size "
            f"{list(weight.shape)}"
        )
    unbatched = input.dim() == sd + 1
    if unbatched:
        input = input.unsqueeze(0)
    stride = _tuple(stride, sd, "stride")
    dilation = _tuple(dilation, sd, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0] * sd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            kernel = list(weight.shape[2:])
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            padding = [t // 2 for t in total]
            extra = [t - 2 * p for t, p in zip(total, padding)]
            if any(extra):
                # An odd total padding: the extra element goes after, as in PyTorch.
                pads = []
                for e in reversed(extra):
                    pads += [0, e]
                input = _C.constant_pad_nd(input, pads, 0.0)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _tuple(padding, sd, "padding")
    _check_conv_args(weight, stride, padding, dilation, groups, sd)
    out = _C.convolution(input, weight, bias, stride, padding, dilation, False, [0] * sd, groups)
    return out.squeeze(0) if unbatched else out


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrInts = 1,
    padding: IntOrInts | str = 0,
    dilation: IntOrInts = 1,
    groups: int = 1,
) -> Tensor:
    """1-d convolution (a cross-correlation, as deep-learning libraries compute it) of
    ``input`` with the filters ``weight``.

    Args:
        input (Tensor): ``(N, C_in, L_in)`` or unbatched ``(C_in, L_in)``.
        weight (Tensor): ``(C_out, C_in / groups, kL)``.
        bias (Tensor, optional): ``(C_out,)``. Default: ``None``.
        stride (int or tuple): the step between windows, an int or a tuple of one
            int. Default: ``1``.
        padding (int, tuple or str): zeros added on both sides, an int or a tuple
            of one int; or ``'valid'`` (no padding) or ``'same'`` (the output
            has the input's size; only with ``stride=1``; an odd total padding puts
            the extra zero after). Default: ``0``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        groups (int): split the channels into this many groups, each convolved with
            its own ``C_out / groups`` filters; ``C_in`` and ``C_out`` must be divisible
            by it. Default: ``1``.

    Shape:
        - Input: ``(N, C_in, L_in)`` or ``(C_in, L_in)``.
        - Weight: ``(C_out, C_in / groups, kL)``.
        - Output: ``(N, C_out, L_out)`` or ``(C_out, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - dilation * (kL - 1) - 1) / stride + 1)``.

    Returns:
        Tensor: the convolved input.

    Example::

        >>> x = torch.ones(2, 3, 10)
        >>> w = torch.ones(4, 3, 3)
        >>> F.conv1d(x, w).shape
        ferrograd.Size([2, 4, 8])
        >>> F.conv1d(x, w, stride=2, padding=1).shape
        ferrograd.Size([2, 4, 5])
        >>> F.conv1d(x, w, padding="same").shape
        ferrograd.Size([2, 4, 10])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrInts = 1,
    padding: IntOrInts | str = 0,
    dilation: IntOrInts = 1,
    groups: int = 1,
) -> Tensor:
    """2-d convolution (a cross-correlation, as deep-learning libraries compute it) of
    ``input`` with the filters ``weight``.

    Args:
        input (Tensor): ``(N, C_in, H_in, W_in)`` or unbatched ``(C_in, H_in, W_in)``.
        weight (Tensor): ``(C_out, C_in / groups, kH, kW)``.
        bias (Tensor, optional): ``(C_out,)``. Default: ``None``.
        stride (int or tuple): the step between windows, an int or a ``(h, w)``
            tuple. Default: ``1``.
        padding (int, tuple or str): zeros added on both sides, an int or a
            ``(h, w)`` tuple; or ``'valid'`` (no padding) or ``'same'`` (the output
            has the input's size; only with ``stride=1``; an odd total padding puts
            the extra zero after). Default: ``0``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        groups (int): split the channels into this many groups, each convolved with
            its own ``C_out / groups`` filters; ``C_in`` and ``C_out`` must be divisible
            by it. Default: ``1``.

    Shape:
        - Input: ``(N, C_in, H_in, W_in)`` or ``(C_in, H_in, W_in)``.
        - Weight: ``(C_out, C_in / groups, kH, kW)``.
        - Output: ``(N, C_out, H_out, W_out)`` or ``(C_out, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - dilation[0] * (kH - 1) - 1) / stride[0] + 1)``
          and ``W_out`` likewise with index 1.

    Returns:
        Tensor: the convolved input.

    Example::

        >>> x = torch.ones(2, 3, 8, 8)
        >>> w = torch.ones(4, 3, 3, 3)
        >>> F.conv2d(x, w).shape
        ferrograd.Size([2, 4, 6, 6])
        >>> F.conv2d(x, w, stride=2, padding=1).shape
        ferrograd.Size([2, 4, 4, 4])
        >>> y = F.conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 2, 2))
        >>> y
        tensor([[[[4., 4.],
                  [4., 4.]]]])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, sd):
    if _dispatch.is_batched(input, weight, bias):
        from ...func._nn_rules import conv_rule

        def unbatched(x, w, b, stride, padding, dilation, groups, sd):
            return _conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation, sd)

        return conv_rule(unbatched, input, weight, bias, stride, padding, dilation, groups, sd,
                         name=f"conv_transpose{sd}d")
    if _dispatch.has_protocol(input, weight, bias):
        public = conv_transpose1d if sd == 1 else conv_transpose2d
        args = (input, weight, bias, stride, padding, output_padding, groups, dilation)
        return _dispatch.dispatch(public, args)
    _check_tensor(input)
    _check_tensor(weight, "weight")
    name = f"conv_transpose{sd}d"
    if input.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"Expected {sd + 1}D (unbatched) or {sd + 2}D (batched) input to {name}, "
            f"but got input of size: {list(input.shape)}"
        )
    if weight.dim() != sd + 2:
        raise RuntimeError(
            f"Expected {sd + 2}-dimensional weight for {name}, but got weight of size "
            f"{list(weight.shape)}"
        )
    unbatched = input.dim() == sd + 1
    if unbatched:
        input = input.unsqueeze(0)
    stride = _tuple(stride, sd, "stride")
    padding = _tuple(padding, sd, "padding")
    dilation = _tuple(dilation, sd, "dilation")
    output_padding = _tuple(output_padding, sd, "output_padding")
    _check_conv_args(weight, stride, padding, dilation, groups, sd, True, output_padding)
    out = _C.convolution(
        input, weight, bias, stride, padding, dilation, True, output_padding, groups
    )
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrInts = 1,
    padding: IntOrInts = 0,
    output_padding: IntOrInts = 0,
    groups: int = 1,
    dilation: IntOrInts = 1,
) -> Tensor:
    """1-d transposed convolution: the gradient of ``conv1d`` with respect to its input, used
    to upsample ("deconvolution").

    Args:
        input (Tensor): ``(N, C_in, L_in)`` or unbatched ``(C_in, L_in)``.
        weight (Tensor): ``(C_in, C_out / groups, kL)``, the layout of
            the matching ``conv1d``'s weight.
        bias (Tensor, optional): ``(C_out,)``. Default: ``None``.
        stride (int or tuple): the step of the matching convolution. Default: ``1``.
        padding (int or tuple): the padding of the matching convolution: ``padding``
            elements are trimmed from both sides of the output. Default: ``0``.
        output_padding (int or tuple): extra size added to one side of the output, to
            pick among the input sizes a strided convolution maps to the same size;
            smaller than ``stride`` or ``dilation``. Default: ``0``.
        groups (int): the number of channel groups. Default: ``1``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.

    Shape:
        - Input: ``(N, C_in, L_in)`` or ``(C_in, L_in)``.
        - Output: ``(N, C_out, L_out)`` or ``(C_out, L_out)``, where
          ``L_out = (L_in - 1) * stride - 2 * padding + dilation * (kL - 1)
          + output_padding + 1``.

    Returns:
        Tensor: the upsampled input.

    Example::

        >>> x = torch.ones(1, 2, 5)
        >>> w = torch.ones(2, 3, 3)
        >>> F.conv_transpose1d(x, w, stride=2).shape
        ferrograd.Size([1, 3, 11])
        >>> F.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1).shape
        ferrograd.Size([1, 3, 10])
    """
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1
    )


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrInts = 1,
    padding: IntOrInts = 0,
    output_padding: IntOrInts = 0,
    groups: int = 1,
    dilation: IntOrInts = 1,
) -> Tensor:
    """2-d transposed convolution: the gradient of ``conv2d`` with respect to its input, used
    to upsample ("deconvolution").

    Args:
        input (Tensor): ``(N, C_in, H_in, W_in)`` or unbatched ``(C_in, H_in, W_in)``.
        weight (Tensor): ``(C_in, C_out / groups, kH, kW)``, the layout
            of the matching ``conv2d``'s weight.
        bias (Tensor, optional): ``(C_out,)``. Default: ``None``.
        stride (int or tuple): the step of the matching convolution. Default: ``1``.
        padding (int or tuple): the padding of the matching convolution: ``padding``
            elements are trimmed from both sides of the output. Default: ``0``.
        output_padding (int or tuple): extra size added to one side of the output, to
            pick among the input sizes a strided convolution maps to the same size;
            smaller than ``stride`` or ``dilation``. Default: ``0``.
        groups (int): the number of channel groups. Default: ``1``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.

    Shape:
        - Input: ``(N, C_in, H_in, W_in)`` or ``(C_in, H_in, W_in)``.
        - Output: ``(N, C_out, H_out, W_out)`` or ``(C_out, H_out, W_out)``, where
          ``H_out = (H_in - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kH - 1)
          + output_padding[0] + 1`` and ``W_out`` likewise with index 1.

    Returns:
        Tensor: the upsampled input.

    Example::

        >>> x = torch.ones(1, 2, 3, 3)
        >>> w = torch.ones(2, 4, 3, 3)
        >>> F.conv_transpose2d(x, w, stride=2).shape
        ferrograd.Size([1, 4, 7, 7])
        >>> F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1).shape
        ferrograd.Size([1, 4, 6, 6])
    """
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2
    )


# ----- pooling -------------------------------------------------------------------------------


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
    if isinstance(output_size, int) or output_size is None:
        output_size = [output_size] * n
    output_size = list(output_size)
    if len(output_size) != n:
        raise RuntimeError(f"output_size must be {n}, but got {len(output_size)}")
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


# ----- padding -------------------------------------------------------------------------------


def _pad_index(n, before, after, mode):
    """Source positions of a padded dimension of length ``n`` (an int64 array,
    computed at once: the padded size may be large)."""
    i = np.arange(-before, n + after, dtype=np.int64)
    if mode == "reflect":
        period = 2 * (n - 1)
        if not period:
            return np.zeros_like(i)
        j = np.abs(i) % period
        return np.where(j >= n, period - j, j)
    if mode == "replicate":
        # minimum/maximum: np.clip's dispatch costs several microseconds per call.
        return np.minimum(np.maximum(i, 0), n - 1)
    return i % n  # circular


# Padded outputs from this many elements up are allocated once before their
# index arrays are built, so a size the allocator refuses fails as PyTorch's
# does (its error) instead of after building gigabytes of indices.
_PAD_PROBE = 1 << 24


def pad(
    input: Tensor,
    pad: Sequence[int],
    mode: str = "constant",
    value: float | None = None,
) -> Tensor:
    """Pads the last dimensions of ``input``.

    ``pad`` lists ``(before, after)`` pairs starting from the last dimension:
    ``(left, right)`` pads the last one, ``(left, right, top, bottom)`` the last two,
    and so on.

    Args:
        input (Tensor): the tensor to pad.
        pad (tuple of ints): the ``(before, after)`` pairs, an even number of ints.
            With ``mode='constant'`` a negative entry crops.
        mode (str): ``'constant'`` (fill with ``value``), ``'reflect'`` (mirror
            without repeating the edge), ``'replicate'`` (repeat the edge) or
            ``'circular'`` (wrap around). Default: ``'constant'``.
        value (float, optional): the fill value of ``'constant'``. Default: ``0``.

    Shape:
        - Input: ``(*, d_1, ..., d_k)``; for the non-constant modes ``k <= 3`` and the
          input has at least ``k + 1`` dimensions.
        - Output: each padded size becomes ``d + before + after``.

    Returns:
        Tensor: the padded tensor.

    Example::

        >>> x = torch.tensor([[1.0, 2.0, 3.0]])
        >>> F.pad(x, (1, 2))
        tensor([[0., 1., 2., 3., 0., 0.]])
        >>> F.pad(x, (2, 1), mode="reflect")
        tensor([[3., 2., 1., 2., 3., 2.]])
        >>> F.pad(x, (1, 1), mode="replicate")
        tensor([[1., 1., 2., 3., 3.]])
        >>> F.pad(x, (1, 1), mode="circular")
        tensor([[3., 1., 2., 3., 1.]])
    """
    _check_tensor(input)
    pad = [int(p) for p in pad]
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if mode == "constant":
        return _C.constant_pad_nd(input, pad, 0.0 if value is None else float(value))
    if mode not in ("reflect", "replicate", "circular"):
        raise RuntimeError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument.')
    npad = len(pad) // 2
    if npad > input.dim() - 1 or npad > 3:
        raise NotImplementedError(
            f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
            f"(got {input.dim()}D input and pad of length {len(pad)})"
        )
    if mode in ("reflect", "replicate") and npad > 0:
        # Negative pads crop (the positions are still read from the whole input).
        names = "DHW"[3 - npad :]
        dims = list(input.shape[input.dim() - npad :])
        outs = [n + pad[2 * (npad - 1 - k)] + pad[2 * (npad - 1 - k) + 1]
                for k, n in enumerate(dims)]  # fmt: skip
        if min(outs) < 1:
            if npad == 1:
                raise RuntimeError(
                    f"input (W: {dims[0]}) is too small. Calculated output W: {outs[0]}"
                )
            got = " ".join(f"{a}: {o}" for a, o in zip(names, outs))
            was = ", ".join(f"{a}: {n}" for a, n in zip(names, dims))
            raise RuntimeError(
                f"Calculated output {got} must be >= 1 in every dimension (input {was})"
            )
    shape = list(input.shape)
    for i in range(npad):
        dim = input.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        n = input.shape[dim]
        shape[dim] = n + before + after
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({before}, {after}) at dimension {dim} of input "
                f"{list(input.shape)}"
            )
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "circular" and min(before, after) < 0:
            raise RuntimeError(f"negative padding is not supported for mode {mode}")
        if n == 0:
            raise RuntimeError(
                f"Expected non-empty dimension {dim} of input {list(input.shape)} to pad"
            )
    if 0 in shape:
        # No elements (an empty batch), however large the padded sizes: the
        # constant padding has the same shape and gradient.
        return _C.constant_pad_nd(input, pad, 0.0)
    numel = math.prod(shape)
    if numel * input.element_size() > 2**63 - 1:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={shape}")
    if numel >= _PAD_PROBE:
        _C.empty(*shape, dtype=input.dtype)
    out = input
    for i in range(npad):
        dim = input.dim() - 1 - i
        idx = _C.tensor(_pad_index(input.shape[dim], pad[2 * i], pad[2 * i + 1], mode),
                        dtype=_C.int64)
        out = out.index_select(dim, idx)
    return out


# ----- unfold / fold -------------------------------------------------------------------------


def unfold(
    input: Tensor,
    kernel_size: IntOrInts,
    dilation: IntOrInts = 1,
    padding: IntOrInts = 0,
    stride: IntOrInts = 1,
) -> Tensor:
    """Extracts sliding local blocks of a batched image (im2col): each column of the result
    holds one ``kernel_size`` block of every channel.

    Args:
        input (Tensor): ``(N, C, H, W)`` or unbatched ``(C, H, W)``.
        kernel_size (int or tuple): the block size ``(kH, kW)``.
        dilation (int or tuple): the spacing between block elements. Default: ``1``.
        padding (int or tuple): implicit zeros on both sides. Default: ``0``.
        stride (int or tuple): the step between blocks. Default: ``1``.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: ``(N, C * kH * kW, L)`` or ``(C * kH * kW, L)``, where ``L`` is the
          number of blocks, ``L = prod over d of floor((size[d] + 2 * padding[d]
          - dilation[d] * (kernel_size[d] - 1) - 1) / stride[d] + 1)``.

    Returns:
        Tensor: the blocks as columns.

    Note:
        Only 4-d (and unbatched 3-d) inputs are supported, as in PyTorch.

    Example::

        >>> x = torch.arange(9.0).reshape(1, 1, 3, 3)
        >>> F.unfold(x, 2)
        tensor([[[0., 1., 3., 4.],
                 [1., 2., 4., 5.],
                 [3., 4., 6., 7.],
                 [4., 5., 7., 8.]]])
    """
    _check_tensor(input)
    args = _sliding_args(kernel_size, dilation, padding, stride)
    return _C.im2col(input, *args)


def _sliding_args(kernel_size, dilation, padding, stride):
    """``unfold``/``fold``'s block geometry, checked in PyTorch's order and words."""
    k = _tuple(kernel_size, 2, "kernel_size")
    d = _tuple(dilation, 2, "dilation")
    p = _tuple(padding, 2, "padding")
    s = _tuple(stride, 2, "stride")
    checks = (("kernel size", k, "kernel", 1), ("stride", s, "stride", 1),
              ("dilation", d, "dilation", 1), ("padding", p, "pad", 0))  # fmt: skip
    for what, v, word, low in checks:
        if min(v) < low:
            rule = "should be non-negative" if low == 0 else "should be greater than zero"
            raise RuntimeError(
                f"{what} {rule}, but got {word}_height: {v[0]} {word}_width: {v[1]}"
            )
    return k, d, p, s


def fold(
    input: Tensor,
    output_size: IntOrInts,
    kernel_size: IntOrInts,
    dilation: IntOrInts = 1,
    padding: IntOrInts = 0,
    stride: IntOrInts = 1,
) -> Tensor:
    """Sums sliding local blocks back into a batched image (col2im), the adjoint of
    :func:`unfold`; overlapping blocks add up.

    Args:
        input (Tensor): ``(N, C * kH * kW, L)`` or unbatched ``(C * kH * kW, L)``.
        output_size (int or tuple): the image size ``(H, W)``.
        kernel_size (int or tuple): the block size ``(kH, kW)``.
        dilation (int or tuple): the spacing between block elements. Default: ``1``.
        padding (int or tuple): implicit zeros on both sides. Default: ``0``.
        stride (int or tuple): the step between blocks. Default: ``1``.

    Shape:
        - Input: ``(N, C * kH * kW, L)`` or ``(C * kH * kW, L)``, ``L`` the number of
          blocks given by :func:`unfold`'s formula for ``output_size``.
        - Output: ``(N, C, H, W)`` or ``(C, H, W)``.

    Returns:
        Tensor: the image.

    Example::

        >>> x = torch.ones(1, 1, 3, 3)
        >>> F.fold(F.unfold(x, 2), (3, 3), 2)
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]])
    """
    _check_tensor(input)
    args = _sliding_args(kernel_size, dilation, padding, stride)
    return _C.col2im(input, _tuple(output_size, 2, "output_size"), *args)


# ----- interpolation -------------------------------------------------------------------------


def interpolate(
    input: Tensor,
    size: IntOrInts | None = None,
    scale_factor: FloatOrFloats | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resamples ``input`` to ``size``, or by ``scale_factor``, over its spatial dimensions
    (all but the first two).

    Args:
        input (Tensor): ``(N, C, L)`` or ``(N, C, H, W)``.
        size (int or tuple, optional): the output spatial size. Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the spatial size
            (exactly one of ``size`` and ``scale_factor`` is given). Default: ``None``.
        mode (str): ``'nearest'``, ``'linear'`` (3-d input) or ``'bilinear'`` (4-d
            input). Default: ``'nearest'``.
        align_corners (bool, optional): for the linear modes, map the corner pixels of
            input and output onto each other (``True``) or their corner edges
            (``False``). Must be ``None`` for ``'nearest'``. Default: ``None``
            (``False``).
        recompute_scale_factor (bool, optional): compute the source positions from the
            output size instead of the given ``scale_factor``. Default: ``None``.
        antialias (bool): not supported; must be ``False``. Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(N, C, H_in, W_in)``.
        - Output: ``(N, C, L_out)`` or ``(N, C, H_out, W_out)``, where
          ``L_out = size`` or ``floor(L_in * scale_factor)``, and likewise per dimension.

    Returns:
        Tensor: the resampled input.

    Note:
        ferrograd implements the ``'nearest'``, ``'linear'`` and ``'bilinear'`` modes
        on 3-d and 4-d inputs; ``'bicubic'``, ``'trilinear'``, ``'area'``,
        ``'nearest-exact'`` and ``antialias=True`` raise ``NotImplementedError``.

    Example::

        >>> x = torch.tensor([[[1.0, 2.0, 3.0]]])
        >>> F.interpolate(x, scale_factor=2)
        tensor([[[1., 1., 2., 2., 3., 3.]]])
        >>> F.interpolate(x, size=5, mode="linear", align_corners=True)
        tensor([[[1.0000, 1.5000, 2.0000, 2.5000, 3.0000]]])
        >>> F.interpolate(torch.ones(1, 3, 4, 4), size=(8, 6), mode="bilinear").shape
        ferrograd.Size([1, 3, 8, 6])
    """
    _check_tensor(input)
    # PyTorch's order: align_corners, then size / scale_factor, then the mode.
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    sd = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    in_size = list(input.shape[2:])
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != sd:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {in_size} and output size of {list(size)}. "
                    f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and output "
                    f"size in (o1, o2, ...,oK) format."
                )
            out_size = [int(s) for s in size]
        else:
            out_size = [int(size)] * sd
        scales = [None] * sd
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != sd:
                raise ValueError(
                    f"Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {in_size} and scale_factor of "
                    f"shape {list(scale_factor)}. Please provide input tensor in "
                    f"(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                )
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * sd
        prods = [n * s for n, s in zip(in_size, scales)]
        if not all(math.isfinite(p) and abs(p) < 2.0**63 for p in prods):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        out_size = [math.floor(p) for p in prods]
        if recompute_scale_factor:
            scales = [None] * sd
    else:
        raise ValueError("either size or scale_factor should be defined")
    if sd not in (1, 2):
        raise NotImplementedError(
            f"Input Error: Only 3D and 4D input Tensors supported (got {input.dim()}D) "
            f"for the modes: nearest | linear | bilinear (got {mode})"
        )
    if mode not in ("nearest", "linear", "bilinear"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode == "bilinear" and sd != 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but bilinear mode needs 4D input")
    if mode == "linear" and sd != 1:
        raise NotImplementedError(f"Got {input.dim()}D input, but linear mode needs 3D input")
    if min(in_size + out_size) <= 0:
        names = "HW"[2 - sd :]
        i = ", ".join(f"{a}: {n}" for a, n in zip(names, in_size))
        o = ", ".join(f"{a}: {n}" for a, n in zip(names, out_size))
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({i}) output ({o})"
        )
    return _C.upsample(input, out_size, scales, mode, bool(align_corners))


def _rowwise(fn, batched_rank):
    """``fn`` with its vmap rule: a batched input runs as one call on the
    samples' rows (``func._nn_rules.rowwise_rule``)."""

    @functools.wraps(fn)
    def wrapper(input, *args, **kwargs):
        if hasattr(type(input), "__ferrograd_function__"):
            if not _dispatch.is_batched(input):
                return _dispatch.dispatch(wrapper, (input, *args), kwargs)
            from ...func._nn_rules import rowwise_rule

            return rowwise_rule(wrapper, batched_rank, input, args, kwargs)
        return fn(input, *args, **kwargs)

    return wrapper


for _name, _rank in [
    ("max_pool1d", 3), ("max_pool1d_with_indices", 3), ("max_pool2d", 4),
    ("max_pool2d_with_indices", 4), ("avg_pool1d", 3), ("avg_pool2d", 4),
    ("adaptive_avg_pool1d", 3), ("adaptive_avg_pool2d", 4), ("adaptive_max_pool1d", 3),
    ("adaptive_max_pool1d_with_indices", 3), ("adaptive_max_pool2d", 4),
    ("adaptive_max_pool2d_with_indices", 4), ("unfold", 4), ("fold", 3),
    ("interpolate", None), ("pad", "pad"),
]:  # fmt: skip
    globals()[_name] = _rowwise(globals()[_name], _rank)
del _name, _rank

"""3-d convolution and pooling (``conv3d``, ``max_pool3d``, ``avg_pool3d``) on
the 2-d kernels.

A 3-d convolution is a sum over the kernel's depth taps of 2-d convolutions:
for tap ``i`` the input depths ``o * stride + i * dilation`` of every output
depth ``o`` are folded into the batch; the taps' slices are laid side by side
as channels (``Tensor.unfold`` over the depth) and convolved once with the
weight's taps likewise laid out, so the GEMM sums over the taps.
Max pooling pools each depth slice in 2-d (depths folded into channels),
then pools the depth windows with the same 2-d kernel (the slices' maxima
as a ``(D, H_out * W_out)`` image under a ``(kD, 1)`` window); average
pooling likewise, since PyTorch's divisor is the product of the
per-dimension window sizes. Everything is recorded ops, so
gradients of every order follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

from ... import _C, _dispatch
from ..._autocast import autocast_op as _autocast_op
from ._args import _check_tensor, _tuple
from ._rowwise import _rowwise
from .conv import _check_conv_args
from .pooling import _check_pool as _pool_checks
from .pooling import _stride

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = ["conv3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d"]


def _batched(input, name):
    _check_tensor(input)
    if input.dim() not in (4, 5):
        raise RuntimeError(
            f"Expected 4D (unbatched) or 5D (batched) input to {name}, but got input of size: "
            f"{list(input.shape)}"
        )
    return (input.unsqueeze(0), True) if input.dim() == 4 else (input, False)


@_autocast_op("conv3d")
def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrInts = 1,
    padding: IntOrInts | str = 0,
    dilation: IntOrInts = 1,
    groups: int = 1,
) -> Tensor:
    """3-d convolution (cross-correlation) of ``input`` with the filters ``weight``.

    Args:
        input (Tensor): ``(N, C_in, D_in, H_in, W_in)`` or unbatched
            ``(C_in, D_in, H_in, W_in)``.
        weight (Tensor): ``(C_out, C_in / groups, kD, kH, kW)``.
        bias (Tensor, optional): ``(C_out,)``. Default: ``None``.
        stride (int or tuple): the step between windows. Default: ``1``.
        padding (int, tuple or str): zeros added on both sides, or ``'valid'`` or
            ``'same'`` (only with ``stride=1``). Default: ``0``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        groups (int): the number of channel groups. Default: ``1``.

    Shape:
        - Input: ``(N, C_in, D_in, H_in, W_in)`` or ``(C_in, D_in, H_in, W_in)``.
        - Output: ``(N, C_out, D_out, H_out, W_out)`` or the unbatched form, where
          ``D_out = floor((D_in + 2 * padding[0] - dilation[0] * (kD - 1) - 1)
          / stride[0] + 1)``, ``H_out`` and ``W_out`` likewise.

    Returns:
        Tensor: the convolved input.

    Note:
        ferrograd computes a 3-d convolution as one 2-d convolution whose input
        channels are the kernel's depth taps' input slices side by side; the
        result is the same up to rounding, the unfolded input ``kD`` times the
        input's size.

    Example::

        >>> x = torch.ones(1, 2, 4, 5, 5)
        >>> F.conv3d(x, torch.ones(3, 2, 2, 3, 3)).shape
        ferrograd.Size([1, 3, 3, 3, 3])
        >>> F.conv3d(x, torch.ones(3, 2, 3, 3, 3), padding="same").shape
        ferrograd.Size([1, 3, 4, 5, 5])
    """
    if any(hasattr(type(t), "__ferrograd_function__") for t in (input, weight, bias)):
        if not _dispatch.is_batched(input, weight, bias):
            args = (input, weight, bias, stride, padding, dilation, groups)
            return _dispatch.dispatch(conv3d, args)
        from ...func._nn_rules import conv_rule

        def unbatched_conv(i, w, b, st, pad, dil, g, _sd):
            return conv3d(i, w, b, st, pad, dil, g)

        return conv_rule(unbatched_conv, input, weight, bias, stride, padding, dilation, groups, 3)
    x, unbatched = _batched(input, "conv3d")
    _check_tensor(weight, "weight")
    if weight.dim() != 5:
        raise RuntimeError(
            f"Expected 5-dimensional weight for conv3d, but got weight of size {list(weight.shape)}"
        )
    stride = _tuple(stride, 3, "stride")
    dilation = _tuple(dilation, 3, "dilation")
    pads = [0, 0, 0] if isinstance(padding, str) else _tuple(padding, 3, "padding")
    _check_conv_args(weight, stride, pads, dilation, groups, 3)
    out_ch, Cg, kd, kh, kw = weight.shape
    if x.shape[1] != Cg * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {Cg * groups} channels, but got {x.shape[1]} channels instead"
        )
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0, 0, 0]
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, (kd, kh, kw))]
            padding = [t // 2 for t in total]
            extra = [t - 2 * p for t, p in zip(total, padding)]
            if any(extra):
                # An odd total padding: the extra element goes after, as in PyTorch.
                x = _C.constant_pad_nd(x, [v for e in reversed(extra) for v in (0, e)], 0.0)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _tuple(padding, 3, "padding")
    if padding[0]:
        x = _C.constant_pad_nd(x, [0, 0, 0, 0, padding[0], padding[0]], 0.0)
    N, C, D, H, W = x.shape
    Do = (D - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    if Do <= 0:
        raise RuntimeError(
            f"Calculated padded input size per channel: ({D} x {H + 2 * padding[1]} x "
            f"{W + 2 * padding[2]}). Kernel size: ({dilation[0] * (kd - 1) + 1} x "
            f"{dilation[1] * (kh - 1) + 1} x {dilation[2] * (kw - 1) + 1}). Kernel size can't "
            "be greater than actual input size"
        )
    # Every depth tap's input slices side by side as channels, (group, tap, channel)
    # ordered like the weight's (C_out, kD * C_in / groups, kH, kW) reshape: the kD
    # 2-d convolutions summed become one, its sum over the taps inside the GEMM.
    span = dilation[0] * (kd - 1) + 1
    taps = x.unfold(2, span, stride[0])  # (N, C, Do, H, W, span)
    if dilation[0] > 1:
        taps = taps.index_select(5, _C.arange(0, span, dilation[0]))
    taps = taps.reshape(N, groups, Cg, Do, H, W, kd).permute(0, 3, 1, 6, 2, 4, 5)
    planes = taps.reshape(N * Do, groups * kd * Cg, H, W)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(out_ch, kd * Cg, kh, kw)
    out = _C.convolution(
        planes, w2, None, stride[1:], padding[1:], dilation[1:], False, [0, 0], groups
    )
    out = out.reshape(N, Do, out_ch, out.shape[2], out.shape[3]).permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, out_ch, 1, 1, 1)
    out = out.contiguous()
    return out.squeeze(0) if unbatched else out


def _pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's ``pooling_output_shape``."""
    num = size + 2 * p - d * (k - 1) - 1
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _check_pool(name, k, s, p, d):
    _pool_checks(k, s, p, d, "THW")


def max_pool3d_with_indices(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool3d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 flat positions
        ``d * H_in * W_in + h * W_in + w`` in each input volume.

    Example::

        >>> x = torch.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> F.max_pool3d_with_indices(x, 2)
        (tensor([[[[[7.]]]]]), tensor([[[[[7]]]]]))
    """
    """``max_pool3d`` returning ``(output, indices)``; indices are flat positions
    in each input volume (``d * H * W + h * W + w``)."""
    if _dispatch.has_protocol(input) and not _dispatch.is_batched(input):
        args = (input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
        return _dispatch.dispatch(max_pool3d_with_indices, args)
    x, unbatched = _batched(input, "max_pool3d")
    k = _tuple(kernel_size, 3, "kernel_size")
    s = _stride(stride, kernel_size, 3)
    p = _tuple(padding, 3, "padding")
    d = _tuple(dilation, 3, "dilation")
    _check_pool("max_pool3d", k, s, p, d)
    N, C, D, H, W = x.shape
    Do = _pool_out(D, k[0], s[0], p[0], d[0], ceil_mode)
    if Do <= 0:
        raise RuntimeError(
            f"Given input size: ({C}x{D}x{H}x{W}). Calculated output size is too small"
        )
    # The 3-d checks above cover the in-plane ones: the kernel directly.
    ceil_mode = bool(ceil_mode)
    planes, where = _C.max_pool2d_with_indices(
        x.reshape(N, C * D, H, W), k[1:], s[1:], p[1:], d[1:], ceil_mode
    )
    Ho, Wo = planes.shape[2], planes.shape[3]
    planes = planes.reshape(N, C, D, Ho, Wo)
    where = where.reshape(N, C, D, Ho, Wo)
    if N == 0:
        # An empty batch, however deep: no loop over its output depths.
        values = planes.narrow(2, 0, 1).expand(N, C, Do, Ho, Wo).contiguous()
        return values, _C.zeros((N, C, Do, Ho, Wo), dtype=_C.int64)
    # The depth windows pooled by the same 2-d kernel, each plane's maxima laid
    # out as a (D, Ho * Wo) image and pooled with a (kD, 1) window: the first
    # maximum in depth-first scan order, as PyTorch's kernel keeps, with its
    # padding, dilation and ceil_mode rules.
    HWo = Ho * Wo
    values, at = _C.max_pool2d_with_indices(
        planes.reshape(N, C, D, HWo), [k[0], 1], [s[0], 1], [p[0], 0], [d[0], 1], ceil_mode
    )
    at = at.reshape(N, C, Do * HWo)
    in_plane = where.reshape(N, C, D * HWo).gather(2, at)
    indices = (at // HWo) * (H * W) + in_plane
    values = values.reshape(N, C, Do, Ho, Wo)
    indices = indices.reshape(N, C, Do, Ho, Wo)
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


@overload
def max_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def max_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[True] = ...,
) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
@_autocast_op("max_pool3d")
def max_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """3-d max pooling: the maximum of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): also return the flat in-volume position of each
            maximum. Default: ``False``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or the unbatched form, where
          ``D_out = floor((D_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1)
          - 1) / stride[0] + 1)`` (``ceil`` with ``ceil_mode``), ``H_out`` and
          ``W_out`` likewise.

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> F.max_pool3d(torch.ones(1, 1, 4, 5, 6), 2).shape
        ferrograd.Size([1, 1, 2, 2, 3])
    """
    out, idx = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


@_autocast_op("avg_pool3d")
def avg_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """3-d average pooling: the mean of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor.
            Default: ``True``.
        divisor_override (int, optional): divide every window's sum by this instead.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or the unbatched form, where
          ``D_out = floor((D_in + 2 * padding[0] - kernel_size[0]) / stride[0] + 1)``,
          ``H_out`` and ``W_out`` likewise.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.avg_pool3d(torch.arange(8.0).reshape(1, 1, 2, 2, 2), 2).flatten()
        tensor([3.5000])
    """
    """3-d average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``;
    ``count_include_pad`` counts padding in the divisor, ``divisor_override``
    replaces it."""
    if _dispatch.has_protocol(input) and not _dispatch.is_batched(input):
        args = (input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        return _dispatch.dispatch(avg_pool3d, args)
    x, unbatched = _batched(input, "avg_pool3d")
    k = _tuple(kernel_size, 3, "kernel_size")
    s = _stride(stride, kernel_size, 3)
    p = _tuple(padding, 3, "padding")
    _check_pool("avg_pool3d", k, s, p, (1, 1, 1))
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    N, C, D, H, W = x.shape
    Do = _pool_out(D, k[0], s[0], p[0], 1, ceil_mode)
    if Do <= 0:
        raise RuntimeError(
            f"Given input size: ({C}x{D}x{H}x{W}). Calculated output size is too small"
        )
    # In-plane sums (divisor 1) or means; the divisor is a product of per-dimension counts.
    planes = _C.avg_pool2d(
        x.reshape(N, C * D, H, W),
        k[1:],
        s[1:],
        p[1:],
        bool(ceil_mode),
        bool(count_include_pad),
        1 if divisor_override is not None else None,
    )
    Ho, Wo = planes.shape[2], planes.shape[3]
    planes = planes.reshape(N, C, D, Ho, Wo)
    if N == 0:
        # An empty batch, however deep: no loop over its output depths.
        return planes.narrow(2, 0, 1).expand(N, C, Do, Ho, Wo).contiguous()
    # The depth windows averaged by the same 2-d kernel, the plane averages laid
    # out as a (D, Ho * Wo) image under a (kD, 1) window: the depth count is the
    # last factor of PyTorch's divisor (or the override, the in-plane pass summing).
    result = _C.avg_pool2d(
        planes.reshape(N, C, D, Ho * Wo),
        [k[0], 1],
        [s[0], 1],
        [p[0], 0],
        bool(ceil_mode),
        bool(count_include_pad),
        None if divisor_override is None else int(divisor_override),
    ).reshape(N, C, Do, Ho, Wo)
    return result.squeeze(0) if unbatched else result


max_pool3d = _rowwise(max_pool3d, 5)
max_pool3d_with_indices = _rowwise(max_pool3d_with_indices, 5)
avg_pool3d = _rowwise(avg_pool3d, 5)

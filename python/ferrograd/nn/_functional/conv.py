"""Convolution (``conv1d``, ``conv2d``, ``conv3d``) and transposed convolution
(``conv_transpose1d``, ``conv_transpose2d``).

These normalise PyTorch's arguments (an int or a tuple, ``'same'``/``'valid'``
padding, unbatched inputs) and call one Rust op each; kernels and backward
rules live in ``src/ops/conv.rs``.

A 3-d convolution runs on the 2-d kernels, as a sum over the kernel's depth
taps of 2-d convolutions: for tap ``i`` the input depths
``o * stride + i * dilation`` of every output depth ``o`` are folded into the
batch; the taps' slices are laid side by side as channels (a window view over
the depth) and convolved once with the weight's taps likewise laid out, so the
GEMM sums over the taps. ``src/ops/conv3d.rs`` does that in one call, of
recorded ops, so gradients of every order follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C, _dispatch
from ..._autocast import autocast_op as _autocast_op
from ._args import _batched, _check_tensor, _tuple

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d"]


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


def _batched_input(input, weight, name, sd):
    """PyTorch's checks of an ``sd``-d convolution's input and weight ranks; the input
    with a batch dimension, and whether it came without one."""
    _check_tensor(input)
    _check_tensor(weight, "weight")
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
    return (input.unsqueeze(0) if unbatched else input), unbatched


def _conv(input, weight, bias, stride, padding, dilation, groups, sd):
    if _dispatch.has_protocol(input, weight, bias):
        if _dispatch.is_batched(input, weight, bias):
            from ...func._nn_rules import conv_rule

            return conv_rule(_conv, input, weight, bias, stride, padding, dilation, groups, sd)
        public = conv1d if sd == 1 else conv2d
        return _dispatch.dispatch(public, (input, weight, bias, stride, padding, dilation, groups))
    input, unbatched = _batched_input(input, weight, f"conv{sd}d", sd)
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
    input, unbatched = _batched_input(input, weight, f"conv_transpose{sd}d", sd)
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
    # The taps' slices convolved as one 2-d convolution, in one native call
    # (`src/ops/conv3d.rs`).
    out = _C.conv3d(x, weight, bias, stride, padding[1:], dilation, groups)
    return out.squeeze(0) if unbatched else out

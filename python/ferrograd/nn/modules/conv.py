"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``,
``ConvTranspose2d``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ... import _C
from ...autograd.grad_mode import no_grad
from ..functional import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, pad
from .module import Module, Parameter

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._C import Tensor
    from ..._typing import DType, IntOrInts

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    """Shared parameters, initialisation and ``extra_repr`` of the convolutions,
    as PyTorch's ``_ConvNd``."""

    in_channels: int
    out_channels: int
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: str | tuple[int, ...]
    dilation: tuple[int, ...]
    transposed: bool
    output_padding: tuple[int, ...]
    groups: int
    padding_mode: str
    weight: Tensor
    bias: Tensor | None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrInts,
        stride: IntOrInts,
        padding: IntOrInts | str,
        dilation: IntOrInts,
        transposed: bool,
        output_padding: IntOrInts,
        groups: int,
        bias: bool,
        padding_mode: str,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}"
                )
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {_PADDING_MODES}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's order: (before, after) pairs from the last dimension back.
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in range(2)]
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        kw = {} if dtype is None else {"dtype": dtype}
        self.weight = Parameter(_C.empty(*shape, **kw))
        if bias:
            self.bias = Parameter(_C.empty(out_channels, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default: ``kaiming_uniform_(weight, a=sqrt(5))``, i.e. uniform in
        +-1/sqrt(fan_in), then the bias uniform in +-1/sqrt(fan_in), drawn in that order."""
        fan_in = self.weight.shape[1] * math.prod(self.weight.shape[2:])
        with no_grad():
            if self.weight.numel() > 0:
                a = math.sqrt(5)
                gain = math.sqrt(2.0 / (1 + a**2))
                bound = math.sqrt(3.0) * (gain / math.sqrt(fan_in))
                self.weight.uniform_(-bound, bound)
            if self.bias is not None and fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                self.bias.uniform_(-bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class _Conv(_ConvNd):
    _n = 2
    _fn = staticmethod(conv2d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrInts,
        stride: IntOrInts = 1,
        padding: IntOrInts | str = 0,
        dilation: IntOrInts = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        n = self._n
        super().__init__(
            in_channels,
            out_channels,
            _ntuple(kernel_size, n),
            _ntuple(stride, n),
            padding if isinstance(padding, str) else _ntuple(padding, n),
            _ntuple(dilation, n),
            False,
            _ntuple(0, n),
            groups,
            bias,
            padding_mode,
            dtype,
        )

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return self._fn(
                pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                weight,
                bias,
                self.stride,
                _ntuple(0, self._n),
                self.dilation,
                self.groups,
            )
        return self._fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """Applies a 1-d convolution (cross-correlation) with learned filters: output channel
    ``j`` is ``bias[j]`` plus the sum over the input channels of the input cross-correlated
    with ``weight[j]`` (see :func:`~ferrograd.nn.functional.conv1d`).

    Args:
        in_channels (int): ``C_in``, the input's channels.
        out_channels (int): ``C_out``, the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step between windows. Default: ``1``.
        padding (int, tuple or str): added on both sides of each spatial dimension, or
            ``'valid'`` (none) or ``'same'`` (output size = input size; ``stride=1``
            only). Default: ``0``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        groups (int): split the channels into groups convolved separately;
            ``in_channels`` and ``out_channels`` must be divisible by it.
            Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or
            ``'circular'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.

    Attributes:
        weight (Parameter): ``(out_channels, in_channels / groups, kL)``,
            initialised uniformly in ``+-1 / sqrt(fan_in)``, ``fan_in =
            in_channels / groups * prod(kernel_size)`` (PyTorch's
            ``kaiming_uniform_(a=sqrt(5))``).
        bias (Parameter or None): ``(out_channels,)``, uniform in the same range.

    Shape:
        - Input: ``(N, C_in, L_in)`` or ``(C_in, L_in)``.
        - Output: ``(N, C_out, L_out)`` or ``(C_out, L_out)``, where
          ``L_out = floor((L_in + 2 * padding[0] - dilation[0]
          * (kernel_size[0] - 1) - 1) / stride[0] + 1)``.

    Example::

        >>> conv = nn.Conv1d(3, 8, kernel_size=3, stride=2, padding=1)
        >>> conv(torch.ones(4, 3, 20)).shape
        ferrograd.Size([4, 8, 10])
        >>> conv.weight.shape
        ferrograd.Size([8, 3, 3])
    """

    _n = 1
    _fn = staticmethod(conv1d)


class Conv2d(_Conv):
    """Applies a 2-d convolution (cross-correlation) with learned filters: output channel
    ``j`` is ``bias[j]`` plus the sum over the input channels of the input cross-correlated
    with ``weight[j]`` (see :func:`~ferrograd.nn.functional.conv2d`).

    Args:
        in_channels (int): ``C_in``, the input's channels.
        out_channels (int): ``C_out``, the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step between windows. Default: ``1``.
        padding (int, tuple or str): added on both sides of each spatial dimension, or
            ``'valid'`` (none) or ``'same'`` (output size = input size; ``stride=1``
            only). Default: ``0``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        groups (int): split the channels into groups convolved separately;
            ``in_channels`` and ``out_channels`` must be divisible by it.
            Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or
            ``'circular'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.

    Attributes:
        weight (Parameter): ``(out_channels, in_channels / groups, kH, kW)``,
            initialised uniformly in ``+-1 / sqrt(fan_in)``, ``fan_in =
            in_channels / groups * prod(kernel_size)`` (PyTorch's
            ``kaiming_uniform_(a=sqrt(5))``).
        bias (Parameter or None): ``(out_channels,)``, uniform in the same range.

    Shape:
        - Input: ``(N, C_in, H_in, W_in)`` or ``(C_in, H_in, W_in)``.
        - Output: ``(N, C_out, H_out, W_out)`` or ``(C_out, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - dilation[0]
          * (kernel_size[0] - 1) - 1) / stride[0] + 1)``, the other sizes likewise.

    Example::

        >>> conv = nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1)
        >>> conv(torch.ones(4, 3, 16, 16)).shape
        ferrograd.Size([4, 8, 8, 8])
        >>> conv.weight.shape
        ferrograd.Size([8, 3, 3, 3])
    """

    _n = 2
    _fn = staticmethod(conv2d)


class Conv3d(_Conv):
    """Applies a 3-d convolution (cross-correlation) with learned filters: output channel
    ``j`` is ``bias[j]`` plus the sum over the input channels of the input cross-correlated
    with ``weight[j]`` (see :func:`~ferrograd.nn.functional.conv3d`).

    Args:
        in_channels (int): ``C_in``, the input's channels.
        out_channels (int): ``C_out``, the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step between windows. Default: ``1``.
        padding (int, tuple or str): added on both sides of each spatial dimension, or
            ``'valid'`` (none) or ``'same'`` (output size = input size; ``stride=1``
            only). Default: ``0``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        groups (int): split the channels into groups convolved separately;
            ``in_channels`` and ``out_channels`` must be divisible by it.
            Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or
            ``'circular'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.

    Attributes:
        weight (Parameter): ``(out_channels, in_channels / groups, kD, kH, kW)``,
            initialised uniformly in ``+-1 / sqrt(fan_in)``, ``fan_in =
            in_channels / groups * prod(kernel_size)`` (PyTorch's
            ``kaiming_uniform_(a=sqrt(5))``).
        bias (Parameter or None): ``(out_channels,)``, uniform in the same range.

    Shape:
        - Input: ``(N, C_in, D_in, H_in, W_in)`` or ``(C_in, D_in, H_in, W_in)``.
        - Output: ``(N, C_out, D_out, H_out, W_out)`` or ``(C_out, D_out, H_out, W_out)``, where
          ``D_out = floor((D_in + 2 * padding[0] - dilation[0]
          * (kernel_size[0] - 1) - 1) / stride[0] + 1)``, the other sizes likewise.

    Note:
        ferrograd computes it as one 2-d convolution per depth tap of the kernel,
        summed (see :func:`~ferrograd.nn.functional.conv3d`).

    Example::

        >>> conv = nn.Conv3d(3, 4, kernel_size=(2, 3, 3), padding=(0, 1, 1))
        >>> conv(torch.ones(2, 3, 6, 8, 8)).shape
        ferrograd.Size([2, 4, 5, 8, 8])
        >>> conv.weight.shape
        ferrograd.Size([4, 3, 2, 3, 3])
    """

    _n = 3
    _fn = staticmethod(conv3d)


class _ConvTranspose(_ConvNd):
    _n = 2
    _fn = staticmethod(conv_transpose2d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrInts,
        stride: IntOrInts = 1,
        padding: IntOrInts = 0,
        output_padding: IntOrInts = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: IntOrInts = 1,
        padding_mode: str = "zeros",
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        n = self._n
        super().__init__(
            in_channels,
            out_channels,
            _ntuple(kernel_size, n),
            _ntuple(stride, n),
            _ntuple(padding, n),
            _ntuple(dilation, n),
            True,
            _ntuple(output_padding, n),
            groups,
            bias,
            padding_mode,
            dtype,
        )

    def _output_padding(self, input, output_size):
        """The output padding that yields ``output_size`` (PyTorch's rule and errors)."""
        if output_size is None:
            return self.output_padding
        n = self._n
        output_size = list(output_size)
        if len(output_size) == n + 2 or len(output_size) == n + 1:
            output_size = output_size[-n:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} "
                f"or {n + 2} elements (got {len(output_size)})"
            )
        spatial = list(input.shape[-n:])
        ret = []
        for d in range(n):
            min_size = (
                (spatial[d] - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            max_size = min_size + self.stride[d] - 1
            if not (min_size <= output_size[d] <= max_size):
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{min_size} to {max_size} (for an input of {spatial})"
                )
            ret.append(output_size[d] - min_size)
        return tuple(ret)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return self._fn(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTranspose):
    """Applies a 1-d transposed convolution, the gradient of ``Conv1d`` with respect to its
    input; with ``stride > 1`` it upsamples (see
    :func:`~ferrograd.nn.functional.conv_transpose1d`).

    Its ``forward(input, output_size=None)`` accepts the wanted output size, to
    choose among the sizes a strided convolution maps to the same input size.

    Args:
        in_channels (int): ``C_in``, the input's channels.
        out_channels (int): ``C_out``, the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step of the matching convolution. Default: ``1``.
        padding (int or tuple): the padding of the matching convolution, trimmed from
            both sides of the output. Default: ``0``.
        output_padding (int or tuple): extra size added to one side of the output.
            Default: ``0``.
        groups (int): the number of channel groups. Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        padding_mode (str): only ``'zeros'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.

    Attributes:
        weight (Parameter): ``(in_channels, out_channels / groups, kL)``,
            initialised as the convolutions' weights are.
        bias (Parameter or None): ``(out_channels,)``.

    Shape:
        - Input: ``(N, C_in, L_in)`` or ``(C_in, L_in)``.
        - Output: ``(N, C_out, L_out)`` or ``(C_out, L_out)``, where
          ``L_out = (L_in - 1) * stride[0] - 2 * padding[0]
          + dilation[0] * (kernel_size[0] - 1) + output_padding[0] + 1``.

    Example::

        >>> up = nn.ConvTranspose1d(8, 3, kernel_size=3, stride=2, padding=1)
        >>> up(torch.ones(4, 8, 10)).shape
        ferrograd.Size([4, 3, 19])
        >>> up(torch.ones(4, 8, 10), output_size=[20]).shape
        ferrograd.Size([4, 3, 20])
    """

    _n = 1
    _fn = staticmethod(conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Applies a 2-d transposed convolution, the gradient of ``Conv2d`` with respect to its
    input; with ``stride > 1`` it upsamples (see
    :func:`~ferrograd.nn.functional.conv_transpose2d`).

    Its ``forward(input, output_size=None)`` accepts the wanted output size, to
    choose among the sizes a strided convolution maps to the same input size.

    Args:
        in_channels (int): ``C_in``, the input's channels.
        out_channels (int): ``C_out``, the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step of the matching convolution. Default: ``1``.
        padding (int or tuple): the padding of the matching convolution, trimmed from
            both sides of the output. Default: ``0``.
        output_padding (int or tuple): extra size added to one side of the output.
            Default: ``0``.
        groups (int): the number of channel groups. Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        padding_mode (str): only ``'zeros'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.

    Attributes:
        weight (Parameter): ``(in_channels, out_channels / groups, kH, kW)``,
            initialised as the convolutions' weights are.
        bias (Parameter or None): ``(out_channels,)``.

    Shape:
        - Input: ``(N, C_in, H_in, W_in)`` or ``(C_in, H_in, W_in)``.
        - Output: ``(N, C_out, H_out, W_out)`` or ``(C_out, H_out, W_out)``, where
          ``H_out = (H_in - 1) * stride[0] - 2 * padding[0]
          + dilation[0] * (kernel_size[0] - 1) + output_padding[0] + 1``, ``W_out`` likewise.

    Example::

        >>> up = nn.ConvTranspose2d(8, 3, kernel_size=3, stride=2, padding=1)
        >>> up(torch.ones(4, 8, 8, 8)).shape
        ferrograd.Size([4, 3, 15, 15])
        >>> up(torch.ones(4, 8, 8, 8), output_size=[16, 16]).shape
        ferrograd.Size([4, 3, 16, 16])
    """

    _n = 2
    _fn = staticmethod(conv_transpose2d)

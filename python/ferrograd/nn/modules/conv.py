"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``,
``ConvTranspose2d``."""

from __future__ import annotations

import math

from ... import _C
from ...autograd.grad_mode import no_grad
from ..functional import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, pad
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    """Shared parameters, initialisation and ``extra_repr`` of the convolutions,
    as PyTorch's ``_ConvNd``."""

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        bias,
        padding_mode,
        dtype=None,
    ):
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

    def extra_repr(self):
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
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
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

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-d convolution over ``(N, C_in, L)`` or ``(C_in, L)``; ``weight`` is
    ``(out_channels, in_channels/groups, kernel_size)``, initialised as PyTorch's."""

    _n = 1
    _fn = staticmethod(conv1d)


class Conv2d(_Conv):
    """2-d convolution over ``(N, C_in, H, W)`` or ``(C_in, H, W)``; ``weight`` is
    ``(out_channels, in_channels/groups, kH, kW)``, initialised as PyTorch's."""

    _n = 2
    _fn = staticmethod(conv2d)


class Conv3d(_Conv):
    """3-d convolution over ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``; ``weight``
    is ``(out_channels, in_channels/groups, kD, kH, kW)``, initialised as PyTorch's.
    Computed as one 2-d convolution per depth tap (``nn.functional.conv3d``)."""

    _n = 3
    _fn = staticmethod(conv3d)


class _ConvTranspose(_ConvNd):
    _n = 2
    _fn = staticmethod(conv_transpose2d)

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
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

    def forward(self, input, output_size=None):
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
    """1-d transposed convolution; ``weight`` is ``(in_channels, out_channels/groups,
    kernel_size)``, initialised as PyTorch's."""

    _n = 1
    _fn = staticmethod(conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-d transposed convolution (the gradient of ``Conv2d`` with respect to its
    input); ``weight`` is ``(in_channels, out_channels/groups, kH, kW)``."""

    _n = 2
    _fn = staticmethod(conv_transpose2d)

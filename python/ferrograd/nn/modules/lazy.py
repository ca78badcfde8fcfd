"""Lazy layers (``LazyLinear``, ``LazyConv1d/2d/3d``): parameters whose input
size is read from the first input, as PyTorch's ``LazyModuleMixin``.

Until then each is an ``UninitializedParameter``. A forward pre-hook calls
``initialize_parameters(input)``, which materialises them (the same objects, so
an optimizer built before the first call keeps working) and runs the layer's
usual ``reset_parameters``; then the hooks are removed and the module becomes
its ``cls_to_become`` (``Linear``, ``Conv2d``, ...). Loading a state dict into
a lazy layer materialises the parameters with the checkpoint's shapes."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from ...autograd.grad_mode import no_grad
from ..parameter import UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .linear import Linear

if TYPE_CHECKING:
    from ..._typing import DType, IntOrInts

__all__ = [
    "LazyModuleMixin",
    "LazyLinear",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
]


class LazyModuleMixin:
    """Mixin for modules whose parameters are shaped by their first input.

    A subclass creates :class:`~ferrograd.nn.UninitializedParameter` s and
    implements ``initialize_parameters(*inputs)``, which the first call runs (through
    a forward pre-hook) before ``forward``; then, if ``cls_to_become`` is set, the
    module's class changes to it. ``has_uninitialized_params()`` tells whether that
    has happened; ``load_state_dict`` materialises the parameters with the saved
    shapes.

    Args:
        *args: passed on to the next class's ``__init__`` (the layer the mixin is
            combined with).
        **kwargs: likewise.

    Example::

        >>> class LazyScale(nn.modules.lazy.LazyModuleMixin, nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.weight = nn.UninitializedParameter()
        ...     def initialize_parameters(self, x):
        ...         with torch.no_grad():
        ...             self.weight.materialize(x.shape[-1:])
        ...             self.weight.fill_(2.0)
        ...     def forward(self, x):
        ...         return x * self.weight
        >>> m = LazyScale()
        >>> m.has_uninitialized_params()
        True
        >>> m(torch.ones(2, 3))
        tensor([[2., 2., 2.],
                [2., 2., 2.]], grad_fn=<MulBackward0>)
        >>> m.has_uninitialized_params()
        False
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(
            self._infer_parameters, with_kwargs=True
        )

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # An uninitialized parameter is saved as itself (there is nothing to detach).
        for name, param in self._parameters.items():
            if param is not None:
                if not (is_lazy(param) or keep_vars):
                    param = param.detach()
                destination[prefix + name] = param
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def _lazy_load_hook(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None:
                input_param = state_dict[key]
                if is_lazy(param) and not is_lazy(input_param):
                    with no_grad():
                        param.materialize(input_param.shape)

    def initialize_parameters(self, *args, **kwargs):
        """Materialises the parameters from the first input (per layer)."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}"
        )

    def has_uninitialized_params(self):
        """Whether any parameter or buffer is still uninitialized."""
        return any(
            is_lazy(p) for p in itertools.chain(self._parameters.values(), self._buffers.values())
        )

    def _infer_parameters(self, module, args, kwargs=None):
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`. "
            "Run a dummy forward pass to correctly initialize the modules"
        )


class LazyLinear(LazyModuleMixin, Linear):
    """A :class:`Linear` whose ``in_features`` is the last dimension of its first input; after
    that call it is a plain ``Linear``.

    Until then ``weight`` and ``bias`` are :class:`UninitializedParameter` s; loading
    a state dict into it also gives them the saved shapes.

    Args:
        out_features (int): the size of each output sample.
        bias (bool): learn an additive bias. Default: ``True``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - Input: ``(*, in_features)``, ``in_features`` read on the first call.
        - Output: ``(*, out_features)``.

    Example::

        >>> m = nn.LazyLinear(3)
        >>> m(torch.ones(2, 5)).shape
        ferrograd.Size([2, 3])
        >>> m
        Linear(in_features=5, out_features=3, bias=True)
    """

    cls_to_become = Linear

    def __init__(
        self,
        out_features: int,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        # bias=False: no tensor is made only to be replaced below.
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self):
        """``Linear``'s initialisation, once the parameters have shapes."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Materialises ``weight`` as ``(out_features, input.shape[-1])`` and ``bias``."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    def __init__(
        self,
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
        super().__init__(
            0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, dtype=dtype
        )
        self._uninitialized_parameters(out_channels, bias, dtype)

    def _uninitialized_parameters(self, out_channels, bias, dtype):
        # The convolution's __init__ ran with no channels and no bias: placeholders
        # until the first input gives the shapes.
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self):
        """The convolution's initialisation, once the parameters have shapes."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialises ``weight`` with ``in_channels`` read from the input."""
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            with no_grad():
                self.weight.materialize(shape)
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input):
        no_batch = self._n + 1
        batch = no_batch + 1
        if input.dim() not in (no_batch, batch):
            raise RuntimeError(
                f"Expected {no_batch}D (unbatched) or {batch}D (batched) input to "
                f"{self.__class__.__name__}, but got input of size: {input.shape}"
            )
        return input.shape[1] if input.dim() == batch else input.shape[0]


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """A :class:`Conv1d` whose ``in_channels`` is read from its first input (dimension 1, or 0
    when unbatched); after that call it is a plain ``Conv1d``.

    Until then ``weight`` and ``bias`` are :class:`UninitializedParameter` s; loading
    a state dict into it also gives them the saved shapes.

    Args:
        out_channels (int): the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step between windows. Default: ``1``.
        padding (int, tuple or str): as in the eager layer. Default: ``0``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        groups (int): the number of channel groups. Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or
            ``'circular'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        As :class:`Conv1d`'s.

    Example::

        >>> m = nn.LazyConv1d(4, 3)
        >>> m(torch.ones(2, 5, 10)).shape
        ferrograd.Size([2, 4, 8])
        >>> type(m).__name__, m.in_channels, tuple(m.weight.shape)
        ('Conv1d', 5, (4, 5, 3))
    """

    cls_to_become = Conv1d


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """A :class:`Conv2d` whose ``in_channels`` is read from its first input (dimension 1, or 0
    when unbatched); after that call it is a plain ``Conv2d``.

    Until then ``weight`` and ``bias`` are :class:`UninitializedParameter` s; loading
    a state dict into it also gives them the saved shapes.

    Args:
        out_channels (int): the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step between windows. Default: ``1``.
        padding (int, tuple or str): as in the eager layer. Default: ``0``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        groups (int): the number of channel groups. Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or
            ``'circular'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        As :class:`Conv2d`'s.

    Example::

        >>> m = nn.LazyConv2d(4, 3)
        >>> m(torch.ones(2, 5, 8, 8)).shape
        ferrograd.Size([2, 4, 6, 6])
        >>> type(m).__name__, m.in_channels, tuple(m.weight.shape)
        ('Conv2d', 5, (4, 5, 3, 3))
    """

    cls_to_become = Conv2d


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """A :class:`Conv3d` whose ``in_channels`` is read from its first input (dimension 1, or 0
    when unbatched); after that call it is a plain ``Conv3d``.

    Until then ``weight`` and ``bias`` are :class:`UninitializedParameter` s; loading
    a state dict into it also gives them the saved shapes.

    Args:
        out_channels (int): the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step between windows. Default: ``1``.
        padding (int, tuple or str): as in the eager layer. Default: ``0``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        groups (int): the number of channel groups. Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or
            ``'circular'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        As :class:`Conv3d`'s.

    Example::

        >>> m = nn.LazyConv3d(4, 3)
        >>> m(torch.ones(2, 5, 4, 4, 4)).shape
        ferrograd.Size([2, 4, 2, 2, 2])
        >>> type(m).__name__, m.in_channels, tuple(m.weight.shape)
        ('Conv3d', 5, (4, 5, 3, 3, 3))
    """

    cls_to_become = Conv3d


class _LazyConvTransposeMixin(_LazyConvXdMixin):
    def __init__(
        self,
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
        # Skips _LazyConvXdMixin.__init__ (a convolution's argument order) for
        # the transposed one's; LazyModuleMixin.__init__ still installs the hooks.
        LazyModuleMixin.__init__(
            self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
            padding_mode, dtype=dtype,
        )  # fmt: skip
        self._uninitialized_parameters(out_channels, bias, dtype)


class LazyConvTranspose1d(_LazyConvTransposeMixin, ConvTranspose1d):
    """A :class:`ConvTranspose1d` whose ``in_channels`` is read from its first input (dimension
    1, or 0 when unbatched); after that call it is a plain ``ConvTranspose1d``.

    Until then ``weight`` and ``bias`` are :class:`UninitializedParameter` s; loading
    a state dict into it also gives them the saved shapes.

    Args:
        out_channels (int): the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step between windows. Default: ``1``.
        padding (int, tuple or str): as in the eager layer. Default: ``0``.
        output_padding (int or tuple): extra size on one side of the output.
            Default: ``0``.
        groups (int): the number of channel groups. Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        padding_mode (str): only ``'zeros'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        As :class:`ConvTranspose1d`'s.

    Example::

        >>> m = nn.LazyConvTranspose1d(4, 3)
        >>> m(torch.ones(2, 5, 10)).shape
        ferrograd.Size([2, 4, 12])
        >>> type(m).__name__, m.in_channels, tuple(m.weight.shape)
        ('ConvTranspose1d', 5, (5, 4, 3))
    """

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeMixin, ConvTranspose2d):
    """A :class:`ConvTranspose2d` whose ``in_channels`` is read from its first input (dimension
    1, or 0 when unbatched); after that call it is a plain ``ConvTranspose2d``.

    Until then ``weight`` and ``bias`` are :class:`UninitializedParameter` s; loading
    a state dict into it also gives them the saved shapes.

    Args:
        out_channels (int): the output's channels.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the step between windows. Default: ``1``.
        padding (int, tuple or str): as in the eager layer. Default: ``0``.
        output_padding (int or tuple): extra size on one side of the output.
            Default: ``0``.
        groups (int): the number of channel groups. Default: ``1``.
        bias (bool): learn an additive bias. Default: ``True``.
        dilation (int or tuple): the spacing between kernel elements. Default: ``1``.
        padding_mode (str): only ``'zeros'``. Default: ``'zeros'``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        As :class:`ConvTranspose2d`'s.

    Example::

        >>> m = nn.LazyConvTranspose2d(4, 3)
        >>> m(torch.ones(2, 5, 8, 8)).shape
        ferrograd.Size([2, 4, 10, 10])
        >>> type(m).__name__, m.in_channels, tuple(m.weight.shape)
        ('ConvTranspose2d', 5, (5, 4, 3, 3))
    """

    cls_to_become = ConvTranspose2d

"""``Linear``, ``Bilinear``, ``Identity``; and ``Flatten``/``Unflatten`` (in
PyTorch's ``flatten.py``), kept here with the other shape-only layers."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..._C import Tensor
    from ..._typing import DType

__all__ = ["Linear", "Bilinear", "Identity", "Flatten", "Unflatten"]


def _empty(shape, dtype):
    return _C.empty(*shape, dtype=dtype) if dtype is not None else _C.empty(*shape)


class Identity(Module):
    """A layer that returns its input unchanged (a placeholder, e.g. to remove a layer from a
    model without changing its structure).

    Args:
        *args: any arguments, ignored.
        **kwargs: any keyword arguments, ignored.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input itself.

    Example::

        >>> m = nn.Identity(54, unused="argument")
        >>> x = torch.ones(2, 3)
        >>> m(x) is x
        True
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """Affine map of the last dimension: ``y = x @ weight.T + bias``.

    Args:
        in_features (int): the size of each input sample.
        out_features (int): the size of each output sample.
        bias (bool): learn an additive bias. Default: ``True``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.

    Attributes:
        weight (Parameter): ``(out_features, in_features)``, initialised uniformly in
            ``+-1 / sqrt(in_features)`` (PyTorch's ``kaiming_uniform_(a=sqrt(5))``).
        bias (Parameter or None): ``(out_features,)``, uniform in the same range.

    Shape:
        - Input: ``(*, in_features)``, any number of leading dimensions.
        - Output: ``(*, out_features)``.

    Example::

        >>> fc = nn.Linear(20, 30)
        >>> fc(torch.ones(128, 20)).shape
        ferrograd.Size([128, 30])
        >>> fc.weight.shape, fc.bias.shape
        (ferrograd.Size([30, 20]), ferrograd.Size([30]))
        >>> float(fc.weight.abs().max()) <= 20 ** -0.5
        True
    """

    in_features: int
    out_features: int
    weight: Tensor
    bias: Tensor | None

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in_features), dtype))
        if bias:
            self.bias = Parameter(_empty((out_features,), dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Redraws ``weight`` and ``bias`` with the default initialisation."""
        # kaiming_uniform_ with a=sqrt(5) is U(-1/sqrt(in), 1/sqrt(in)).
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Bilinear(Module):
    """Bilinear map of two inputs: ``y[..., o] = x1 @ weight[o] @ x2 + bias[o]`` (see
    :func:`~ferrograd.nn.functional.bilinear`).

    Args:
        in1_features (int): the size of each first input sample.
        in2_features (int): the size of each second input sample.
        out_features (int): the size of each output sample.
        bias (bool): learn an additive bias. Default: ``True``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.

    Attributes:
        weight (Parameter): ``(out_features, in1_features, in2_features)``, uniform in
            ``+-1 / sqrt(in1_features)``.
        bias (Parameter or None): ``(out_features,)``, uniform in the same range.

    Shape:
        - Input1: ``(*, in1_features)``; input2: ``(*, in2_features)``, the same
          leading dimensions.
        - Output: ``(*, out_features)``.

    Example::

        >>> m = nn.Bilinear(20, 30, 40)
        >>> m(torch.ones(128, 20), torch.ones(128, 30)).shape
        ferrograd.Size([128, 40])
    """

    in1_features: int
    in2_features: int
    out_features: int
    weight: Tensor
    bias: Tensor | None

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in1_features, in2_features), dtype))
        if bias:
            self.bias = Parameter(_empty((out_features,), dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Redraws ``weight`` and ``bias`` with the default initialisation."""
        if self.in1_features <= 0:
            raise ValueError(
                f"in1_features must be > 0, but got (in1_features={self.in1_features})"
            )
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Flatten(Module):
    """Flattens the dimensions ``start_dim`` to ``end_dim`` into one (by default all but the
    batch dimension).

    Args:
        start_dim (int): the first dimension to flatten. Default: ``1``.
        end_dim (int): the last dimension to flatten. Default: ``-1``.

    Shape:
        - Input: ``(*, S_start, ..., S_end, *)``.
        - Output: ``(*, S_start * ... * S_end, *)``.

    Example::

        >>> nn.Flatten()(torch.ones(32, 1, 5, 5)).shape
        ferrograd.Size([32, 25])
        >>> nn.Flatten(0, 2)(torch.ones(32, 1, 5, 5)).shape
        ferrograd.Size([160, 5])
    """

    start_dim: int
    end_dim: int

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dimension ``dim`` into the shape ``unflattened_size``, the inverse of
    :class:`Flatten`.

    Args:
        dim (int): the dimension to split.
        unflattened_size (tuple of ints): its new shape; the product must equal the
            size of ``dim``, and one entry may be -1.

    Shape:
        - Input: ``(*, S_dim, *)``.
        - Output: ``(*, U_1, ..., U_n, *)`` with ``U_1 * ... * U_n = S_dim``.

    Note:
        A named dimension (``dim`` a string) needs named tensors, which ferrograd does
        not have: it raises ``NotImplementedError``.

    Example::

        >>> nn.Unflatten(1, (2, 5, 5))(torch.ones(2, 50)).shape
        ferrograd.Size([2, 2, 5, 5])
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if isinstance(dim, int):
            self._require_tuple_int(unflattened_size)
        elif isinstance(dim, str):
            raise NotImplementedError(
                "Unflatten with a named dimension needs named tensors, which ferrograd "
                "does not have"
            )
        else:
            raise TypeError("invalid argument type for dim parameter")
        self.dim = dim
        self.unflattened_size = unflattened_size

    @staticmethod
    def _require_tuple_int(input):
        if isinstance(input, (tuple, list)):
            for idx, elem in enumerate(input):
                if not isinstance(elem, int):
                    raise TypeError(
                        "unflattened_size must be tuple of ints, "
                        f"but found element of type {type(elem).__name__} at pos {idx}"
                    )
            return
        raise TypeError(
            f"unflattened_size must be a tuple of ints, but found type {type(input).__name__}"
        )

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"

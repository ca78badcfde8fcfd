"""Flattening parameters into one vector and back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..._C import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Concatenates the flattened ``parameters`` into one 1-d tensor (differentiable: gradients
    flow back to the parameters).

    Args:
        parameters (iterable of Tensors): the parameters, e.g. ``model.parameters()``.

    Returns:
        Tensor: a 1-d tensor of ``sum(p.numel())`` elements.

    Example::

        >>> model = nn.Linear(3, 2)
        >>> nn.utils.parameters_to_vector(model.parameters()).shape
        ferrograd.Size([8])
    """
    vec = [param.view(-1) for param in parameters]
    return _C.cat(vec)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """The inverse of :func:`parameters_to_vector`: each parameter becomes a view of its
    consecutive slice of ``vec`` (its ``.data`` is replaced, so the parameter objects, and
    the optimizers holding them, stay the same).

    Args:
        vec (Tensor): a 1-d tensor with at least ``sum(p.numel())`` elements.
        parameters (iterable of Tensors): the parameters to overwrite.

    Returns:
        None

    Raises:
        TypeError: if ``vec`` is not a tensor.

    Example::

        >>> model = nn.Linear(2, 1)
        >>> nn.utils.vector_to_parameters(torch.tensor([1.0, 2.0, 3.0]), model.parameters())
        >>> model.weight, model.bias
        (Parameter containing:
        tensor([[1., 2.]], requires_grad=True), Parameter containing:
        tensor([3.], requires_grad=True))
    """
    if not isinstance(vec, _C.Tensor):
        from ..modules.module import typename

        raise TypeError(f"expected ferrograd.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer : pointer + num_param].view_as(param).data
        pointer += num_param

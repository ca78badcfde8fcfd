"""Flattening parameters into one vector and back."""

from __future__ import annotations

from ... import _C

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """Concatenates the flattened ``parameters`` into one 1-D tensor (differentiable)."""
    vec = [param.view(-1) for param in parameters]
    return _C.cat(vec)


def vector_to_parameters(vec, parameters):
    """Makes each of ``parameters`` a view of its consecutive slice of ``vec``
    (its ``.data`` is replaced, so the Parameter objects stay the same)."""
    if not isinstance(vec, _C.Tensor):
        from ..modules.module import typename

        raise TypeError(f"expected ferrograd.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer : pointer + num_param].view_as(param).data
        pointer += num_param

"""``F.linear``, one Rust op, and ``F.bilinear``, composed from differentiable ops (a GEMM, a product and a
sum), so its gradients of every order come from theirs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ..._dispatch import check_tensor as _check_tensor
from ..._dispatch import is_batched as _is_batched

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = ["bilinear", "linear"]


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Bilinear map:
    ``y[..., o] = sum over i, j of input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    Args:
        input1 (Tensor): ``(*, in1_features)``.
        input2 (Tensor): ``(*, in2_features)``, the same leading dimensions.
        weight (Tensor): ``(out_features, in1_features, in2_features)``.
        bias (Tensor, optional): ``(out_features,)``. Default: ``None``.

    Shape:
        - Input1: ``(*, in1_features)``; input2: ``(*, in2_features)``.
        - Output: ``(*, out_features)``.

    Returns:
        Tensor: the bilinear form of the two inputs.

    Example::

        >>> x1, x2 = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0, 5.0]])
        >>> F.bilinear(x1, x2, torch.ones(1, 2, 3))
        tensor([[36.]])
    """
    for name, value, pos in (("input1", input1, 1), ("input2", input2, 2), ("weight", weight, 3)):
        # vmap's BatchedTensor passes: the body is ops with batching rules.
        _check_tensor("bilinear", value, name, pos, passes=_is_batched)
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D, got {weight.dim()}-D")
    if input1.dim() == 0:
        raise RuntimeError("bilinear(): input1 must be at least 1-D")
    if input1.dim() != input2.dim():
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}"
        )
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(
                "bilinear(): input batch dimensions do not match: got "
                f"{input1.shape[i]} and {input2.shape[i]}"
            )
    out, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(
            "bilinear(): input1 size does not match weight size: got "
            f"{input1.shape[-1]} but expected {in1}"
        )
    if input2.shape[-1] != in2:
        raise RuntimeError(
            "bilinear(): input2 size does not match weight size: got "
            f"{input2.shape[-1]} but expected {in2}"
        )
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out):
        got = bias.shape[0] if bias.dim() > 0 else bias.shape
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {got} but expected {out}"
        )
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # One GEMM over all outputs: (N, in1) @ (in1, out * in2) -> (N, out, in2).
    w = weight.permute(1, 0, 2).reshape(in1, out * in2)
    t = (x1 @ w).reshape(-1, out, in2)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, out)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Affine map of the last dimension: ``input @ weight.T + bias``.

    Args:
        input (Tensor): ``(*, in_features)``, any number of leading dimensions.
        weight (Tensor): ``(out_features, in_features)`` or ``(in_features,)``.
        bias (Tensor, optional): ``(out_features,)`` or ``()``. Default: ``None``.

    Shape:
        - Input: ``(*, in_features)``.
        - Output: ``(*, out_features)`` (``(*)`` for a 1-d ``weight``).

    Returns:
        Tensor: the transformed input.

    Example::

        >>> x = torch.ones(2, 3)
        >>> w = torch.arange(12.0).reshape(4, 3)
        >>> F.linear(x, w, torch.zeros(4))
        tensor([[ 3., 12., 21., 30.],
                [ 3., 12., 21., 30.]])
    """
    return _C.linear(input, weight, bias)

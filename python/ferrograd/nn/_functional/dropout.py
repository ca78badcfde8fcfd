"""Channel-wise and alpha dropout (``nn.functional.dropout1d/2d/3d``,
``alpha_dropout``, ``feature_alpha_dropout``), following ATen's
``_dropout_impl``: the noise is drawn with ``bernoulli_(1 - p)`` (one draw per
sample and channel for the feature variants), so a seeded run consumes the
generator as PyTorch does, and the result is ``input * noise`` (plus a shift
for alpha dropout), whose gradient follows from the multiplication."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

from ... import _C
from ..._dispatch import check_tensor as _check_tensor
from ..._inplace import apply_inplace
from ._args import tensor_args

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = [
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "dropout",
]

# SELU's alpha * scale: alpha dropout sets dropped units to -_ALPHA, SELU's
# negative saturation value.
_ALPHA = 1.7580993408473766


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_impl(input, p, train, inplace, feature, alpha):
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        zero = _C.zeros((), dtype=input.dtype)
        compute = lambda: input * zero  # noqa: E731
    else:
        if feature:
            if input.dim() < 2:
                raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
            like = input[(slice(None), slice(None)) + (slice(0, 1),) * (input.dim() - 2)]
        else:
            like = input
        # `empty_like` keeps a vmap batch dimension, so the draw below follows
        # vmap's randomness mode (one mask per sample, one shared, or an error).
        noise = _C._like(like, "full", 0.0, None, False)
        noise.bernoulli_(1 - p)
        if alpha:
            a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
            b = (noise - 1) * (_ALPHA * a) + _ALPHA * a * p
            noise = noise * a
            compute = lambda: input * noise + b  # noqa: E731
        else:
            noise = noise / (1 - p)
            compute = lambda: input * noise  # noqa: E731
    return apply_inplace(input, compute) if inplace else compute()


def _unbatched(input, p, training, inplace, batched):
    # PyTorch adds a batch dimension of one for an unbatched input; the noise
    # is drawn for that shape and the result has the input's shape again.
    if batched:
        return _dropout_impl(input, p, training, inplace, True, False)
    if inplace:
        _dropout_impl(input.unsqueeze(0), p, training, True, True, False)
        return input
    out = _dropout_impl(input.unsqueeze(0), p, training, False, True, False)
    return out.squeeze(0)


def _warn_unexpected_rank(n, inp_dim):
    # PyTorch's deprecation warning for dropout2d/3d on an input without the
    # n spatial dimensions, a channel dimension and an optional batch dimension.
    if inp_dim not in (n + 1, n + 2):
        warnings.warn(
            f"dropout{n}d: Received a {inp_dim}-D input to dropout{n}d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            f"and silence this warning, please use dropout instead. Note that dropout{n}d "
            f"exists to provide channel-wise dropout on inputs with {n} spatial dimensions, "
            "a channel dimension, and an optional batch dimension "
            f"(i.e. {n + 1}D or {n + 2}D inputs).",
            stacklevel=3,
        )


@tensor_args("input")
def dropout1d(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
) -> Tensor:
    """Channel dropout for inputs with 1 spatial dimension: while training, zeroes whole
    channels (one draw per sample and channel) with probability ``p`` and scales the rest by
    ``1 / (1 - p)``.

    Args:
        input (Tensor): ``(N, C, L)`` or unbatched ``(C, L)``.
        p (float): the probability of zeroing a channel, in ``[0, 1]``. Default: ``0.5``.
        training (bool): apply dropout; ``False`` is the identity. Default: ``True``.
        inplace (bool): write the result into ``input``. Default: ``False``.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``.
        - Output: the input's shape.

    Returns:
        Tensor: the input with dropped channels.

    Example::

        >>> y = F.dropout1d(torch.ones(2, 4, 3), p=0.5)
        >>> sorted(set(y.flatten().tolist()))
        [0.0, 2.0]
    """
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension "
            "(i.e. 2D or 3D inputs)."
        )
    return _unbatched(input, p, training, inplace, inp_dim == 3)


@tensor_args("input")
def dropout2d(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
) -> Tensor:
    """Channel dropout for inputs with 2 spatial dimensions: while training, zeroes whole
    channels (one draw per sample and channel) with probability ``p`` and scales the rest by
    ``1 / (1 - p)``.

    Args:
        input (Tensor): ``(N, C, H, W)``; a 3-d input is read as ``(N, C, L)`` (with
            PyTorch's warning).
        p (float): the probability of zeroing a channel, in ``[0, 1]``. Default: ``0.5``.
        training (bool): apply dropout; ``False`` is the identity. Default: ``True``.
        inplace (bool): write the result into ``input``. Default: ``False``.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(N, C, L)``.
        - Output: the input's shape.

    Returns:
        Tensor: the input with dropped channels.

    Example::

        >>> y = F.dropout2d(torch.ones(2, 4, 3, 3), p=0.5)
        >>> sorted(set(y.flatten().tolist()))
        [0.0, 2.0]
    """
    _check_p(p)
    inp_dim = input.dim()
    _warn_unexpected_rank(2, inp_dim)
    if inp_dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_impl(input, p, training, inplace, True, False)


@tensor_args("input")
def dropout3d(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
) -> Tensor:
    """Channel dropout for inputs with 3 spatial dimensions: while training, zeroes whole
    channels (one draw per sample and channel) with probability ``p`` and scales the rest by
    ``1 / (1 - p)``.

    Args:
        input (Tensor): ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``.
        p (float): the probability of zeroing a channel, in ``[0, 1]``. Default: ``0.5``.
        training (bool): apply dropout; ``False`` is the identity. Default: ``True``.
        inplace (bool): write the result into ``input``. Default: ``False``.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        - Output: the input's shape.

    Returns:
        Tensor: the input with dropped channels.

    Example::

        >>> y = F.dropout3d(torch.ones(2, 4, 2, 2, 2), p=0.5)
        >>> sorted(set(y.flatten().tolist()))
        [0.0, 2.0]
    """
    _check_p(p)
    inp_dim = input.dim()
    _warn_unexpected_rank(3, inp_dim)
    return _unbatched(input, p, training, inplace, inp_dim == 5)


@tensor_args("input")
def alpha_dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Alpha dropout, for SELU networks: while training, each element is dropped with
    probability ``p`` to SELU's negative saturation value, and an affine map keeps the mean
    and variance of a unit normal input.

    Args:
        input (Tensor): the input, of any shape.
        p (float): the probability of dropping an element, in ``[0, 1]``.
            Default: ``0.5``.
        training (bool): apply dropout. Default: ``False``.
        inplace (bool): write the result into ``input``. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> x = torch.ones(4)
        >>> F.alpha_dropout(x, 0.5) is x
        True
        >>> len(set(F.alpha_dropout(torch.zeros(1000), 0.5, training=True).tolist()))
        2
    """
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, False, True)


@tensor_args("input")
def feature_alpha_dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Alpha dropout of whole channels: as :func:`alpha_dropout`, with one draw per sample and
    channel (dimension 1).

    Args:
        input (Tensor): ``(N, C, *)``.
        p (float): the probability of dropping a channel, in ``[0, 1]``.
            Default: ``0.5``.
        training (bool): apply dropout. Default: ``False``.
        inplace (bool): write the result into ``input``. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> y = F.feature_alpha_dropout(torch.zeros(2, 3, 4), 0.5, training=True)
        >>> bool((y == y[:, :, :1]).all())
        True
    """
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, True, True)


def _inplace(input, result):
    # PyTorch's inplace=True writes into the input; out of place, then copied in.
    return input.copy_(result)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Dropout: while training, zeroes each element independently with probability ``p`` and
    scales the others by ``1 / (1 - p)``, so the expected value is unchanged.

    With ``training=False`` it returns ``input`` itself. The mask is drawn with
    ``bernoulli_(1 - p)`` from the global generator (seed it with
    ``torch.manual_seed``).

    Args:
        input (Tensor): the input, of any shape.
        p (float): the probability of zeroing an element, in ``[0, 1]``. Default: ``0.5``.
        training (bool): apply dropout; ``False`` is the identity. Default: ``True``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Raises:
        ValueError: if ``p`` is outside ``[0, 1]``.

    Note:
        PyTorch draws the mask through MKL on Intel CPUs; ferrograd always takes the
        generic mt19937 path, so a seeded mask matches PyTorch's on other CPUs.

    Example::

        >>> x = torch.ones(8)
        >>> y = F.dropout(x, p=0.5)
        >>> sorted(set(y.tolist()))
        [0.0, 2.0]
        >>> F.dropout(x, p=0.5, training=False) is x
        True
    """
    if not training:
        _check_tensor("dropout", input)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        return input
    out = _C.dropout(input, p, training)
    return _inplace(input, out) if inplace and out is not input else out

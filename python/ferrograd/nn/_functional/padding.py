"""Padding (``pad``): constant padding is one Rust op; the reflect, replicate
and circular modes gather each padded dimension's source positions."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ... import _C
from ._args import _check_tensor
from ._rowwise import _rowwise

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._C import Tensor

__all__ = ["pad"]


def _pad_index(n, before, after, mode):
    """Source positions of a padded dimension of length ``n`` (an int64 array,
    computed at once: the padded size may be large)."""
    i = np.arange(-before, n + after, dtype=np.int64)
    if mode == "reflect":
        period = 2 * (n - 1)
        if not period:
            return np.zeros_like(i)
        j = np.abs(i) % period
        return np.where(j >= n, period - j, j)
    if mode == "replicate":
        # minimum/maximum: np.clip's dispatch costs several microseconds per call.
        return np.minimum(np.maximum(i, 0), n - 1)
    return i % n  # circular


# Padded outputs from this many elements up are allocated once before their
# index arrays are built, so a size the allocator refuses fails as PyTorch's
# does (its error) instead of after building gigabytes of indices.
_PAD_PROBE = 1 << 24


def pad(
    input: Tensor,
    pad: Sequence[int],
    mode: str = "constant",
    value: float | None = None,
) -> Tensor:
    """Pads the last dimensions of ``input``.

    ``pad`` lists ``(before, after)`` pairs starting from the last dimension:
    ``(left, right)`` pads the last one, ``(left, right, top, bottom)`` the last two,
    and so on.

    Args:
        input (Tensor): the tensor to pad.
        pad (tuple of ints): the ``(before, after)`` pairs, an even number of ints.
            With ``mode='constant'`` a negative entry crops.
        mode (str): ``'constant'`` (fill with ``value``), ``'reflect'`` (mirror
            without repeating the edge), ``'replicate'`` (repeat the edge) or
            ``'circular'`` (wrap around). Default: ``'constant'``.
        value (float, optional): the fill value of ``'constant'``. Default: ``0``.

    Shape:
        - Input: ``(*, d_1, ..., d_k)``; for the non-constant modes ``k <= 3`` and the
          input has at least ``k + 1`` dimensions.
        - Output: each padded size becomes ``d + before + after``.

    Returns:
        Tensor: the padded tensor.

    Example::

        >>> x = torch.tensor([[1.0, 2.0, 3.0]])
        >>> F.pad(x, (1, 2))
        tensor([[0., 1., 2., 3., 0., 0.]])
        >>> F.pad(x, (2, 1), mode="reflect")
        tensor([[3., 2., 1., 2., 3., 2.]])
        >>> F.pad(x, (1, 1), mode="replicate")
        tensor([[1., 1., 2., 3., 3.]])
        >>> F.pad(x, (1, 1), mode="circular")
        tensor([[3., 1., 2., 3., 1.]])
    """
    _check_tensor(input)
    pad = [int(p) for p in pad]
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if mode == "constant":
        return _C.constant_pad_nd(input, pad, 0.0 if value is None else float(value))
    if mode not in ("reflect", "replicate", "circular"):
        raise RuntimeError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument.')
    npad = len(pad) // 2
    if npad > input.dim() - 1 or npad > 3:
        raise NotImplementedError(
            f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
            f"(got {input.dim()}D input and pad of length {len(pad)})"
        )
    if mode in ("reflect", "replicate") and npad > 0:
        # Negative pads crop (the positions are still read from the whole input).
        names = "DHW"[3 - npad :]
        dims = list(input.shape[input.dim() - npad :])
        outs = [n + pad[2 * (npad - 1 - k)] + pad[2 * (npad - 1 - k) + 1]
                for k, n in enumerate(dims)]  # fmt: skip
        if min(outs) < 1:
            if npad == 1:
                raise RuntimeError(
                    f"input (W: {dims[0]}) is too small. Calculated output W: {outs[0]}"
                )
            got = " ".join(f"{a}: {o}" for a, o in zip(names, outs))
            was = ", ".join(f"{a}: {n}" for a, n in zip(names, dims))
            raise RuntimeError(
                f"Calculated output {got} must be >= 1 in every dimension (input {was})"
            )
    shape = list(input.shape)
    for i in range(npad):
        dim = input.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        n = input.shape[dim]
        shape[dim] = n + before + after
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({before}, {after}) at dimension {dim} of input "
                f"{list(input.shape)}"
            )
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "circular" and min(before, after) < 0:
            raise RuntimeError(f"negative padding is not supported for mode {mode}")
        if n == 0:
            raise RuntimeError(
                f"Expected non-empty dimension {dim} of input {list(input.shape)} to pad"
            )
    if 0 in shape:
        # No elements (an empty batch), however large the padded sizes: the
        # constant padding has the same shape and gradient.
        return _C.constant_pad_nd(input, pad, 0.0)
    numel = math.prod(shape)
    if numel * input.element_size() > 2**63 - 1:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={shape}")
    if numel >= _PAD_PROBE:
        _C.empty(*shape, dtype=input.dtype)
    out = input
    for i in range(npad):
        dim = input.dim() - 1 - i
        idx = _C.tensor(_pad_index(input.shape[dim], pad[2 * i], pad[2 * i + 1], mode),
                        dtype=_C.int64)
        out = out.index_select(dim, idx)
    return out


pad = _rowwise(pad, "pad")

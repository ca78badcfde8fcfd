"""Resampling: ``interpolate`` (one Rust op per mode) and its deprecated
names ``upsample``, ``upsample_nearest`` and ``upsample_bilinear``."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

from ... import _C
from ._args import _check_tensor
from ._rowwise import _rowwise

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import FloatOrFloats, IntOrInts

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]


def interpolate(
    input: Tensor,
    size: IntOrInts | None = None,
    scale_factor: FloatOrFloats | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resamples ``input`` to ``size``, or by ``scale_factor``, over its spatial dimensions
    (all but the first two).

    Args:
        input (Tensor): ``(N, C, L)`` or ``(N, C, H, W)``.
        size (int or tuple, optional): the output spatial size. Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the spatial size
            (exactly one of ``size`` and ``scale_factor`` is given). Default: ``None``.
        mode (str): ``'nearest'``, ``'linear'`` (3-d input) or ``'bilinear'`` (4-d
            input). Default: ``'nearest'``.
        align_corners (bool, optional): for the linear modes, map the corner pixels of
            input and output onto each other (``True``) or their corner edges
            (``False``). Must be ``None`` for ``'nearest'``. Default: ``None``
            (``False``).
        recompute_scale_factor (bool, optional): compute the source positions from the
            output size instead of the given ``scale_factor``. Default: ``None``.
        antialias (bool): not supported; must be ``False``. Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(N, C, H_in, W_in)``.
        - Output: ``(N, C, L_out)`` or ``(N, C, H_out, W_out)``, where
          ``L_out = size`` or ``floor(L_in * scale_factor)``, and likewise per dimension.

    Returns:
        Tensor: the resampled input.

    Note:
        ferrograd implements the ``'nearest'``, ``'linear'`` and ``'bilinear'`` modes
        on 3-d and 4-d inputs; ``'bicubic'``, ``'trilinear'``, ``'area'``,
        ``'nearest-exact'`` and ``antialias=True`` raise ``NotImplementedError``.

    Example::

        >>> x = torch.tensor([[[1.0, 2.0, 3.0]]])
        >>> F.interpolate(x, scale_factor=2)
        tensor([[[1., 1., 2., 2., 3., 3.]]])
        >>> F.interpolate(x, size=5, mode="linear", align_corners=True)
        tensor([[[1.0000, 1.5000, 2.0000, 2.5000, 3.0000]]])
        >>> F.interpolate(torch.ones(1, 3, 4, 4), size=(8, 6), mode="bilinear").shape
        ferrograd.Size([1, 3, 8, 6])
    """
    _check_tensor(input)
    # PyTorch's order: align_corners, then size / scale_factor, then the mode.
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    sd = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    in_size = list(input.shape[2:])
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != sd:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {in_size} and output size of {list(size)}. "
                    f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and output "
                    f"size in (o1, o2, ...,oK) format."
                )
            out_size = [int(s) for s in size]
        else:
            out_size = [int(size)] * sd
        scales = [None] * sd
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != sd:
                raise ValueError(
                    f"Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {in_size} and scale_factor of "
                    f"shape {list(scale_factor)}. Please provide input tensor in "
                    f"(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                )
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * sd
        prods = [n * s for n, s in zip(in_size, scales)]
        if not all(math.isfinite(p) and abs(p) < 2.0**63 for p in prods):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        out_size = [math.floor(p) for p in prods]
        if recompute_scale_factor:
            scales = [None] * sd
    else:
        raise ValueError("either size or scale_factor should be defined")
    if sd not in (1, 2):
        raise NotImplementedError(
            f"Input Error: Only 3D and 4D input Tensors supported (got {input.dim()}D) "
            f"for the modes: nearest | linear | bilinear (got {mode})"
        )
    if mode not in ("nearest", "linear", "bilinear"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode == "bilinear" and sd != 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but bilinear mode needs 4D input")
    if mode == "linear" and sd != 1:
        raise NotImplementedError(f"Got {input.dim()}D input, but linear mode needs 3D input")
    if min(in_size + out_size) <= 0:
        names = "HW"[2 - sd :]
        i = ", ".join(f"{a}: {n}" for a, n in zip(names, in_size))
        o = ", ".join(f"{a}: {n}" for a, n in zip(names, out_size))
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({i}) output ({o})"
        )
    return _C.upsample(input, out_size, scales, mode, bool(align_corners))


interpolate = _rowwise(interpolate, None)


def upsample(
    input: Tensor,
    size: IntOrInts | None = None,
    scale_factor: FloatOrFloats | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """Deprecated name of :func:`interpolate` (it warns); use :func:`interpolate`.

    Args:
        input (Tensor): ``(N, C, L)`` or ``(N, C, H, W)``.
        size (int or tuple, optional): the output spatial size. Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
            Default: ``None``.
        mode (str): as in :func:`interpolate`. Default: ``'nearest'``.
        align_corners (bool, optional): as in :func:`interpolate`. Default: ``None``.

    Returns:
        Tensor: the resampled input.

    Example::

        >>> F.upsample(torch.tensor([[[1.0, 2.0]]]), scale_factor=2)
        tensor([[[1., 1., 2., 2.]]])
    """
    warnings.warn(
        "`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(
    input: Tensor,
    size: IntOrInts | None = None,
    scale_factor: FloatOrFloats | None = None,
) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode='nearest')`` (it warns).

    Args:
        input (Tensor): ``(N, C, L)`` or ``(N, C, H, W)``.
        size (int or tuple, optional): the output spatial size. Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
            Default: ``None``.

    Returns:
        Tensor: the resampled input.

    Example::

        >>> F.upsample_nearest(torch.tensor([[[1.0, 2.0]]]), size=4)
        tensor([[[1., 1., 2., 2.]]])
    """
    warnings.warn(
        "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(
    input: Tensor,
    size: IntOrInts | None = None,
    scale_factor: FloatOrFloats | None = None,
) -> Tensor:
    """Deprecated:
    ``interpolate(input, size, scale_factor, mode='bilinear', align_corners=True)`` (it
    warns).

    Args:
        input (Tensor): ``(N, C, H, W)``.
        size (int or tuple, optional): the output spatial size. Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
            Default: ``None``.

    Returns:
        Tensor: the resampled input.

    Example::

        >>> F.upsample_bilinear(torch.tensor([[[[0.0, 2.0]]]]), size=(1, 3))
        tensor([[[[0., 1., 2.]]]])
    """
    warnings.warn(
        "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)

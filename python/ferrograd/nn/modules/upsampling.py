"""``Upsample``: ``F.interpolate`` as a layer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import FloatOrFloats, IntOrInts

__all__ = ["Upsample"]


class Upsample(Module):
    """Resamples the spatial dimensions to ``size``, or by ``scale_factor`` (see
    :func:`~ferrograd.nn.functional.interpolate`).

    Args:
        size (int or tuple, optional): the output spatial size. Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the spatial size
            (give ``size`` or ``scale_factor``). Default: ``None``.
        mode (str): ``'nearest'``, ``'linear'`` (3-d input) or ``'bilinear'`` (4-d
            input). Default: ``'nearest'``.
        align_corners (bool, optional): for the linear modes, align the corner pixels
            of input and output. Default: ``None`` (``False``).
        recompute_scale_factor (bool, optional): compute the source positions from the
            output size instead of ``scale_factor``. Default: ``None``.

    Shape:
        - Input: ``(N, C, W_in)`` or ``(N, C, H_in, W_in)``.
        - Output: ``(N, C, W_out)`` or ``(N, C, H_out, W_out)``, where
          ``W_out = size`` or ``floor(W_in * scale_factor)``, ``H_out`` likewise.

    Note:
        ferrograd implements the ``'nearest'``, ``'linear'`` and ``'bilinear'`` modes;
        ``'bicubic'``, ``'trilinear'`` and 5-d inputs raise ``NotImplementedError``.

    Example::

        >>> up = nn.Upsample(scale_factor=2, mode="bilinear")
        >>> up(torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]]))
        tensor([[[[1.0000, 1.2500, 1.7500, 2.0000],
                  [1.5000, 1.7500, 2.2500, 2.5000],
                  [2.5000, 2.7500, 3.2500, 3.5000],
                  [3.0000, 3.2500, 3.7500, 4.0000]]]])
    """

    def __init__(
        self,
        size: IntOrInts | None = None,
        scale_factor: FloatOrFloats | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        info += f", mode={self.mode!r}"
        return info


__all__ += ["UpsamplingNearest2d", "UpsamplingBilinear2d"]


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of ``(N, C, H, W)``:
    ``Upsample(size, scale_factor, mode='nearest')``.

    Args:
        size (int or tuple, optional): the output size ``(H_out, W_out)``.
            Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the size.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)``, ``H_out = size[0]`` or
          ``floor(H_in * scale_factor)``, ``W_out`` likewise.

    Example::

        >>> nn.UpsamplingNearest2d(scale_factor=2)(torch.tensor([[[[1.0, 2.0]]]]))
        tensor([[[[1., 1., 2., 2.],
                  [1., 1., 2., 2.]]]])
    """

    def __init__(
        self,
        size: IntOrInts | None = None,
        scale_factor: FloatOrFloats | None = None,
    ) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of ``(N, C, H, W)`` with aligned corners:
    ``Upsample(size, scale_factor, mode='bilinear', align_corners=True)``.

    Args:
        size (int or tuple, optional): the output size ``(H_out, W_out)``.
            Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the size.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)``, ``H_out = size[0]`` or
          ``floor(H_in * scale_factor)``, ``W_out`` likewise.

    Example::

        >>> nn.UpsamplingBilinear2d(size=(1, 3))(torch.tensor([[[[0.0, 2.0]]]]))
        tensor([[[[0., 1., 2.]]]])
    """

    def __init__(
        self,
        size: IntOrInts | None = None,
        scale_factor: FloatOrFloats | None = None,
    ) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)

"""Batch normalisation layers: ``BatchNorm1d``, ``BatchNorm2d``, ``BatchNorm3d``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .module import Module, Parameter

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import DType

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _NormBase(Module):
    """Shared state of batch and instance norm: affine parameters and the
    ``running_mean``/``running_var``/``num_batches_tracked`` buffers."""

    num_features: int
    eps: float
    momentum: float | None
    affine: bool
    track_running_stats: bool
    weight: Tensor | None
    bias: Tensor | None
    running_mean: Tensor | None
    running_var: Tensor | None
    num_batches_tracked: Tensor | None

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: object = None,
        dtype: DType | None = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        dtype = dtype or _C.get_default_dtype()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_C.ones(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(_C.zeros(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", _C.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", _C.tensor(0, dtype=_C.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """Running statistics reset; weight 1 and bias 0."""
        self.reset_running_stats()
        if self.affine:
            with no_grad():
                self.weight.fill_(1.0)
                if self.bias is not None:
                    self.bias.zero_()

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                # A cumulative moving average: batch k weighs 1/k.
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if keep else None,
            self.running_var if keep else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over ``(N, C)`` or ``(N, C, L)``: each channel ``C`` is normalised
    with the mean and variance over the batch (and length), then scaled and shifted:
    ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    In training mode the batch's statistics are used (biased variance) and, with
    ``track_running_stats``, ``running_mean``/``running_var`` are updated as
    ``(1 - momentum) * running + momentum * batch`` (unbiased variance). In
    ``eval()`` mode the running statistics normalise the input.

    Args:
        num_features (int): ``C``, the number of channels.
        eps (float): added to the variance. Default: ``1e-5``.
        momentum (float or None): the running statistics' update factor; ``None``
            makes them a cumulative average over all batches. Default: ``0.1``.
        affine (bool): learn ``weight`` (initially 1) and ``bias`` (initially 0).
            Default: ``True``.
        track_running_stats (bool): keep running statistics; without them the batch's
            statistics are used in evaluation too. Default: ``True``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.
        bias (bool, keyword-only): learn the ``bias`` too (with ``affine``); ``False``
            leaves ``bias`` as ``None``, a scale without a shift. Default: ``True``.

    Attributes:
        weight (Parameter or None): ``(C,)``.
        bias (Parameter or None): ``(C,)``.
        running_mean (Tensor or None): ``(C,)`` buffer, initially 0.
        running_var (Tensor or None): ``(C,)`` buffer, initially 1.
        num_batches_tracked (Tensor or None): int64 count of training batches.

    Shape:
        - Input: ``(N, C)`` or ``(N, C, L)``.
        - Output: the input's shape.

    Example::

        >>> bn = nn.BatchNorm1d(3)
        >>> x = torch.arange(12.0).reshape(4, 3)
        >>> y = bn(x)
        >>> y.mean().abs() < 1e-6, bn.running_mean
        (tensor(True), tensor([0.4500, 0.5500, 0.6500]))
    """

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over ``(N, C, H, W)``: each channel ``C`` is normalised with the
    mean and variance over the batch and spatial dimensions, then scaled and shifted:
    ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    In training mode the batch's statistics are used (biased variance) and, with
    ``track_running_stats``, ``running_mean``/``running_var`` are updated as
    ``(1 - momentum) * running + momentum * batch`` (unbiased variance). In
    ``eval()`` mode the running statistics normalise the input.

    Args:
        num_features (int): ``C``, the number of channels.
        eps (float): added to the variance. Default: ``1e-5``.
        momentum (float or None): the running statistics' update factor; ``None``
            makes them a cumulative average over all batches. Default: ``0.1``.
        affine (bool): learn ``weight`` (initially 1) and ``bias`` (initially 0).
            Default: ``True``.
        track_running_stats (bool): keep running statistics; without them the batch's
            statistics are used in evaluation too. Default: ``True``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.
        bias (bool, keyword-only): learn the ``bias`` too (with ``affine``); ``False``
            leaves ``bias`` as ``None``, a scale without a shift. Default: ``True``.

    Attributes:
        weight (Parameter or None): ``(C,)``.
        bias (Parameter or None): ``(C,)``.
        running_mean (Tensor or None): ``(C,)`` buffer, initially 0.
        running_var (Tensor or None): ``(C,)`` buffer, initially 1.
        num_batches_tracked (Tensor or None): int64 count of training batches.

    Shape:
        - Input: ``(N, C, H, W)``.
        - Output: the input's shape.

    Example::

        >>> bn = nn.BatchNorm2d(3)
        >>> x = torch.arange(24.0).reshape(2, 3, 2, 2)
        >>> y = bn(x)
        >>> y.mean().abs() < 1e-6, bn.running_mean
        (tensor(True), tensor([0.7500, 1.1500, 1.5500]))
    """

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over ``(N, C, D, H, W)``: each channel ``C`` is normalised with the
    mean and variance over the batch and spatial dimensions, then scaled and shifted:
    ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    In training mode the batch's statistics are used (biased variance) and, with
    ``track_running_stats``, ``running_mean``/``running_var`` are updated as
    ``(1 - momentum) * running + momentum * batch`` (unbiased variance). In
    ``eval()`` mode the running statistics normalise the input.

    Args:
        num_features (int): ``C``, the number of channels.
        eps (float): added to the variance. Default: ``1e-5``.
        momentum (float or None): the running statistics' update factor; ``None``
            makes them a cumulative average over all batches. Default: ``0.1``.
        affine (bool): learn ``weight`` (initially 1) and ``bias`` (initially 0).
            Default: ``True``.
        track_running_stats (bool): keep running statistics; without them the batch's
            statistics are used in evaluation too. Default: ``True``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.
        bias (bool, keyword-only): learn the ``bias`` too (with ``affine``); ``False``
            leaves ``bias`` as ``None``, a scale without a shift. Default: ``True``.

    Attributes:
        weight (Parameter or None): ``(C,)``.
        bias (Parameter or None): ``(C,)``.
        running_mean (Tensor or None): ``(C,)`` buffer, initially 0.
        running_var (Tensor or None): ``(C,)`` buffer, initially 1.
        num_batches_tracked (Tensor or None): int64 count of training batches.

    Shape:
        - Input: ``(N, C, D, H, W)``.
        - Output: the input's shape.

    Example::

        >>> bn = nn.BatchNorm3d(3)
        >>> x = torch.arange(24.0).reshape(1, 3, 2, 2, 2)
        >>> y = bn(x)
        >>> y.mean().abs() < 1e-6, bn.running_mean
        (tensor(True), tensor([0.3500, 1.1500, 1.9500]))
    """

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


# ----- SyncBatchNorm -----------------------------------------------------------------------------

__all__ += ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics are reduced across a process group while training,
    as PyTorch's.

    Without an initialised process group, or in ``eval()`` mode, it is a
    ``BatchNorm`` over any ``(N, C, *)`` input. :meth:`convert_sync_batchnorm` turns
    the ``BatchNorm*d`` layers of a model into this one.

    Args:
        num_features (int): ``C``, the number of channels.
        eps (float): added to the variance. Default: ``1e-5``.
        momentum (float or None): the running statistics' update factor.
            Default: ``0.1``.
        affine (bool): learn ``weight`` and ``bias``. Default: ``True``.
        track_running_stats (bool): keep running statistics. Default: ``True``.
        process_group (optional): the group to reduce over. Default: ``None``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Note:
        PyTorch synchronises the statistics with accelerator kernels only; as there,
        training inside an initialised process group raises ``ValueError`` for CPU
        tensors (ferrograd's tensors are all on the CPU).

    Example::

        >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
        >>> model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        >>> type(model[1]).__name__, model(torch.ones(2, 3, 5, 5)).shape
        ('SyncBatchNorm', ferrograd.Size([2, 4, 3, 3]))
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: object = None,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype=dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        from ... import distributed as dist

        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        # Checked before the batch counter moves, so a refused call changes nothing.
        if bn_training and self.training and dist.is_available() and dist.is_initialized():
            raise ValueError(
                "SyncBatchNorm expected input tensor to be on GPU or XPU or MPS or privateuseone"
            )
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every ``BatchNorm*d`` in it replaced by a ``SyncBatchNorm``
        sharing its parameters and running statistics (the module itself when it
        is one)."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
            )
            if module.affine:
                with no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output

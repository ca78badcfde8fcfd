"""``DataParallel`` on a CPU-only library."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..modules.module import Module

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["DataParallel"]


class DataParallel(Module):
    """PyTorch's single-process multi-GPU wrapper; on ferrograd, which has no GPU, it calls
    ``module`` directly, as PyTorch does when no GPU is present.

    State dict keys carry the ``module.`` prefix, as PyTorch's do, so checkpoints of
    wrapped models load on either. For training over several processes use
    :class:`~ferrograd.nn.parallel.DistributedDataParallel`.

    Args:
        module (Module): the module to wrap.
        device_ids (list, optional): GPU ids; ignored (``device_ids`` is empty).
            Default: ``None``.
        output_device (optional): ignored. Default: ``None``.
        dim (int): the batch dimension PyTorch would scatter along; ignored.
            Default: ``0``.

    Example::

        >>> model = nn.DataParallel(nn.Linear(4, 2))
        >>> model(torch.ones(3, 4)).shape
        ferrograd.Size([3, 2])
        >>> list(model.state_dict()), model.device_ids
        (['module.weight', 'module.bias'], [])
    """

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[int] | None = None,
        output_device: int | None = None,
        dim: int = 0,
    ) -> None:
        super().__init__()
        self.module = module
        self.device_ids = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)

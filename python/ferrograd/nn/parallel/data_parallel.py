"""``DataParallel`` on a CPU-only library."""

from __future__ import annotations

from ..modules.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """PyTorch's single-process multi-GPU wrapper. With no GPU present PyTorch
    keeps only ``module`` (and an empty ``device_ids``) and calls it directly;
    ferrograd has no GPU, so that is all it does. State dict keys carry the
    ``module.`` prefix, as PyTorch's do."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

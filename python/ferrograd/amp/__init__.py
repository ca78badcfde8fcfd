"""Automatic mixed precision: :class:`autocast` regions, in which matrix
products and convolutions run in bfloat16 (or float16) while losses,
reductions and linear algebra stay in float32, and :class:`GradScaler`,
which scales a loss so small float16 gradients do not underflow.

The CPU op lists are PyTorch's; each op declares its policy in the op
registry (``Op.autocast``) and the core applies it where the op enters.
See ``docs/amp.md``.
"""

from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]

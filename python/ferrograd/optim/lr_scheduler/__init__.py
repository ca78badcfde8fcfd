"""Learning-rate schedulers (``ferrograd.optim.lr_scheduler``): PyTorch's
classes with the same chainable updates, closed forms, state dicts and
learning-rate sequences."""

from ._base import (
    EPOCH_DEPRECATION_WARNING,  # noqa: F401 (re-exported for other modules)
    LRScheduler,
    _enable_get_lr_call,
    _format_param,  # noqa: F401 (re-exported for other modules)
    _initial_mode,
    _LRScheduler,
    _param_groups_val_list,  # noqa: F401 (re-exported for other modules)
    _update_param_group_val,  # noqa: F401 (re-exported for other modules)
    _warn_get_lr_called_within_step,  # noqa: F401 (re-exported for other modules)
)
from ._composite import ChainedScheduler, SequentialLR
from ._cyclic import (
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    OneCycleLR,
    _SchedulePhase,
)
from ._plateau import ReduceLROnPlateau
from ._simple import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)

__all__ = [
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "SequentialLR",
    "CosineAnnealingLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "CyclicLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "PolynomialLR",
    "LRScheduler",
]

# The classes keep the module path they had when this was a single file, so
# pickles and reprs name ``ferrograd.optim.lr_scheduler.X`` as before.
for _cls in (
    LRScheduler,
    _LRScheduler,
    _enable_get_lr_call,
    _initial_mode,
    _SchedulePhase,
    LambdaLR,
    MultiplicativeLR,
    StepLR,
    MultiStepLR,
    ConstantLR,
    LinearLR,
    ExponentialLR,
    SequentialLR,
    CosineAnnealingLR,
    ChainedScheduler,
    ReduceLROnPlateau,
    CyclicLR,
    CosineAnnealingWarmRestarts,
    OneCycleLR,
    PolynomialLR,
):
    _cls.__module__ = __name__
del _cls

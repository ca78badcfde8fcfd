"""Optimizers and learning-rate schedulers with PyTorch's API
(``ferrograd.optim`` as ``torch.optim``). Every first-order optimizer updates
all parameters of a group with one fused multi-tensor call into Rust."""

from . import lr_scheduler, swa_utils
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = [
    "Adagrad",
    "Adam",
    "Adamax",
    "AdamW",
    "LBFGS",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "SGD",
    "lr_scheduler",
    "swa_utils",
]

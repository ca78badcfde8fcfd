"""Optimizers and learning-rate schedulers with PyTorch's API
(``ferrograd.optim`` as ``torch.optim``). The common first-order optimizers
update all parameters of a group with one fused multi-tensor call into Rust;
Adadelta, ASGD, Rprop, Adafactor and Muon run PyTorch's per-parameter loop over
tensor ops."""

from . import functional, lr_scheduler, swa_utils
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = [
    "ASGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "Adamax",
    "AdamW",
    "LBFGS",
    "Muon",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SGD",
    "SparseAdam",
    "functional",
    "lr_scheduler",
    "swap_in_optimizer_params_and_state",
    "swa_utils",
]

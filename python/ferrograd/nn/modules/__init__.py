"""``ferrograd.nn`` layers, one file per topic as in PyTorch."""

from . import activation, container, dropout, linear, loss, module, rnn, transformer
from .activation import *  # noqa: F403
from .container import *  # noqa: F403
from .dropout import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .module import *  # noqa: F403
from .rnn import *  # noqa: F403
from .transformer import *  # noqa: F403

__all__ = [
    name
    for m in (activation, container, dropout, linear, loss, module, rnn, transformer)
    for name in m.__all__
]

"""``ferrograd.nn.utils``: gradient clipping, parameter/vector conversion
(and, in ``rnn``, sequence packing)."""

from __future__ import annotations

from . import clip_grad, convert_parameters
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

# The ``rnn`` submodule (pad_sequence, pack_padded_sequence, ...) is imported here
# once it exists: ``from . import rnn``.

__all__ = [
    "clip_grad",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "convert_parameters",
    "get_total_norm",
    "parameters_to_vector",
    "vector_to_parameters",
]
"""``ferrograd.nn.utils``: helpers around modules and their inputs."""

from . import rnn

__all__ = ["rnn"]

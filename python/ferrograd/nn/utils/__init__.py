"""``ferrograd.nn.utils``: gradient clipping, parameter/vector conversion,
sequence packing (``rnn``), parametrizations (``parametrize``,
``parametrizations``) and the legacy ``weight_norm``/``spectral_norm`` hooks."""

from __future__ import annotations

from . import clip_grad, convert_parameters, rnn
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters

# isort: split
from . import parametrizations, parametrize  # noqa: E402
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: E402
from .weight_norm import remove_weight_norm, weight_norm  # noqa: E402

__all__ = [
    "clip_grad",
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "convert_parameters",
    "get_total_norm",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "spectral_norm",
    "vector_to_parameters",
    "weight_norm",
]

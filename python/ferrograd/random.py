"""``ferrograd.random``: the default generator, as ``torch.random``.

Seeded sampling reproduces PyTorch's CPU numbers: the generator is PyTorch's
Mersenne Twister (``get_rng_state`` returns its 5056 state bytes, a uint8
tensor) and every sampler draws as
ATen's CPU kernel does, including ``randn``'s vectorised path from 16
elements on (float32 through the AVX2 kernel every x86-64 build of PyTorch
runs), ``randperm``, ``multinomial``, ``dropout`` and ``nn.Linear``'s
initialisation (compared draw for draw with PyTorch 2.15's CPU build on an
AMD EPYC, and tested against a NumPy transcription of the algorithms).
Where PyTorch itself takes platform-specific paths the numbers can differ:
on Intel CPUs PyTorch's MKL builds draw ``bernoulli_(p)`` with a scalar
``p`` (and so ``dropout`` masks) through MKL's ``viRngBernoulli``, which
ferrograd does not reproduce (it follows the generic kernel PyTorch runs on
AMD and ARM CPUs); older MKL builds also drew ``exponential_`` (and so
``multinomial`` without replacement) through MKL; and on CPUs without AVX2
(ARM) PyTorch's float32 ``randn`` of 16 or more elements can differ from
these in the last bit.
"""

from __future__ import annotations

import contextlib

from . import _C
from ._C import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    seed,
    set_rng_state,
)

__all__ = [
    "Generator",
    "default_generator",
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "seed",
    "set_rng_state",
]


def manual_seed(seed: int) -> Generator:
    """Seeds the default generator and returns it. As ``torch.manual_seed``,
    the seed goes through ``int()`` first (``1.0`` and ``"7"`` are accepted);
    ints in [-2**63, 2**64) are valid, negative ones taken modulo 2**64."""
    return _C.manual_seed(int(seed))


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Restores the default generator's state on exit (there are no CUDA
    generators to fork), as ``torch.random.fork_rng``."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)

"""The random draws the samplers and the loader make, on ``ferrograd.Generator``.

The samplers are written against ``ferrograd.Generator`` (``manual_seed``,
``initial_seed``) and ``ferrograd.randperm(n, generator=)``, PyTorch's API and
its streams. Until those exist in this build, ``_FallbackGenerator`` (NumPy's
MT19937 seeded the same way) stands in so loaders still shuffle
reproducibly; its orders differ from PyTorch's.
"""

from __future__ import annotations

import numpy as np

import ferrograd as _fg

_MAX_SEED = 2**63


class _FallbackGenerator:
    """A seedable generator used only while ``ferrograd.Generator`` is missing."""

    def __init__(self, device="cpu"):
        self._seed = 67280421310721
        self._rs = np.random.Generator(np.random.MT19937(self._seed))

    def manual_seed(self, seed):
        self._seed = int(seed) % 2**64
        self._rs = np.random.Generator(np.random.MT19937(self._seed))
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        s = int(np.random.SeedSequence().generate_state(1, np.uint64)[0]) % _MAX_SEED
        self.manual_seed(s)
        return s


Generator = getattr(_fg, "Generator", _FallbackGenerator)


def _fallback(generator):
    return isinstance(generator, _FallbackGenerator)


def random_seed(generator=None):
    """A 63-bit seed drawn as ``torch.empty((), dtype=int64).random_(generator=g)``."""
    if _fallback(generator):
        return int(generator._rs.integers(0, _MAX_SEED))
    t = _fg.empty((), dtype=_fg.int64)
    if hasattr(t, "random_"):
        return int(t.random_(generator=generator).item() if generator is not None
                   else t.random_().item())  # fmt: skip
    # Without Tensor.random_: the global generator, so manual_seed still fixes it.
    return int(_fg.randint(0, _MAX_SEED - 1, ()).item())


def new_generator(seed):
    g = Generator()
    g.manual_seed(seed)
    return g


def randperm(n, generator):
    """``torch.randperm(n, generator=generator).tolist()``."""
    if _fallback(generator) or not hasattr(_fg, "randperm"):
        rs = generator._rs if _fallback(generator) else _global_rs()
        return rs.permutation(n).tolist()
    return _fg.randperm(n, generator=generator).tolist()


def randint(high, size, generator):
    """``torch.randint(high=high, size=(size,), generator=generator).tolist()``."""
    if _fallback(generator):
        return generator._rs.integers(0, high, size).tolist()
    return _fg.randint(0, high, (size,), generator=generator).tolist()


def rand(n, generator):
    """``n`` float64 draws in [0, 1) as a NumPy array."""
    if _fallback(generator):
        return generator._rs.random(n)
    if generator is None:
        return _fg.rand(n, dtype=_fg.float64).numpy()
    return _fg.rand(n, generator=generator, dtype=_fg.float64).numpy()


def _global_rs():
    # A NumPy stream seeded from ferrograd's global generator.
    return np.random.Generator(np.random.MT19937(random_seed(None)))

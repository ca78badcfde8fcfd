"""Samplers: which dataset indices a ``DataLoader`` visits, in which order."""

from __future__ import annotations

import numpy as np

import ferrograd as _fg

from . import _random

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]


class Sampler:
    """Base class: ``__iter__`` yields indices (or lists of them, for a batch sampler)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (``num_samples`` long, repeating permutations when
    it exceeds the dataset), or ``num_samples`` draws with ``replacement``.
    Without a ``generator`` each iteration seeds a fresh one from the global
    generator, as PyTorch's, so ``ferrograd.manual_seed`` fixes the order."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={self.replacement}"
            )
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self):
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.generator is None:
            generator = _random.new_generator(_random.random_seed(None))
        else:
            generator = self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _random.randint(n, 32, generator)
            yield from _random.randint(n, self.num_samples % 32, generator)
        else:
            for _ in range(self.num_samples // n):
                yield from _random.randperm(n, generator)
            yield from _random.randperm(n, generator)[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _random.randperm(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``
    (with or without replacement)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if (
            not isinstance(num_samples, int)
            or isinstance(num_samples, bool)
            or num_samples <= 0
        ):
            raise ValueError(
                f"num_samples should be a positive integer value, but got "
                f"num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        w = weights.detach().numpy() if isinstance(weights, _fg.Tensor) else weights
        w = np.asarray(w, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}"
            )
        self.weights = _fg.tensor(w, dtype=_fg.float64)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        # torch.multinomial's checks, then inverse-CDF draws (with replacement)
        # or Efraimidis-Spirakis keys u**(1/w), largest first (without).
        w = self.weights.numpy()
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        positive = int(np.count_nonzero(w))
        if positive == 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > positive:
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            )
        u = _random.rand(self.num_samples if self.replacement else len(w), self.generator)
        if self.replacement:
            cdf = np.cumsum(w)
            cdf /= cdf[-1]
            idx = np.searchsorted(cdf, u, side="right")
            idx = np.minimum(idx, len(w) - 1)
        else:
            with np.errstate(divide="ignore"):
                keys = np.where(w > 0, np.log(np.maximum(u, 1e-300)) / w, -np.inf)
            idx = np.argsort(-keys, kind="stable")[: self.num_samples]
        yield from idx.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last
    one shorter unless ``drop_last``)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        if self.drop_last:
            it = iter(self.sampler)
            while True:
                try:
                    yield [next(it) for _ in range(self.batch_size)]
                except StopIteration:
                    break
        else:
            batch = [0] * self.batch_size
            k = 0
            for idx in self.sampler:
                batch[k] = idx
                k += 1
                if k == self.batch_size:
                    yield batch
                    k = 0
                    batch = [0] * self.batch_size
            if k > 0:
                yield batch[:k]

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size

"""Named result pairs, as ``torch.return_types``: ``x.max(dim)`` returns
``max(values=..., indices=...)``, which also unpacks like a tuple."""

from __future__ import annotations

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001 - PyTorch's name
min = namedtuple("min", ["values", "indices"])  # noqa: A001 - PyTorch's name
sort = namedtuple("sort", ["values", "indices"])
topk = namedtuple("topk", ["values", "indices"])
kthvalue = namedtuple("kthvalue", ["values", "indices"])
median = namedtuple("median", ["values", "indices"])
nanmedian = namedtuple("nanmedian", ["values", "indices"])
mode = namedtuple("mode", ["values", "indices"])

__all__ = ["max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode"]

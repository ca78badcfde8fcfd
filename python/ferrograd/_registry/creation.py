"""Factories: tensors made from sizes, ranges, data or another tensor's
shape, and the random ones (drawn from PyTorch's mt19937 stream)."""

from __future__ import annotations

import numpy as np

from .schema import (
    ALL,
    CUSTOM,
    FORWARD,
    FUNCTION,
    METHOD,
    NONE,
    OPEN01,
    POSITIVE,
    VMAP,
    Op,
    Sample,
    T,
    fixed,
    ints,
)

OPS: list[Op] = []
RANDOM = "random: the values are PyTorch's mt19937 stream, checked value by value in tests/test_random_compat.py"


def _c(name, doc, ref, sample, *, surfaces=(FUNCTION,), rule=None, **kw):
    OPS.append(Op(name, "creation", doc, surfaces=surfaces, dtypes=ALL, differentiable=False,
                  batching=CUSTOM if rule else NONE, batching_rule=rule, sample=sample, ref=ref,
                  **kw))


NO_TENSOR = "it takes no tensor, so there is nothing to batch"
# The benchmark's large cases (``bench=``): about a million elements made, as a
# 1024 x 1024 tensor or 2**20 values.
N = 1 << 20
M = T((1024, 1024))
#: `tensor`'s data at scale: 1024 rows of 1024 Python floats (one row object
#: repeated, so importing the registry stays cheap).
_ROW = [float(i) for i in range(1024)]
NESTED = [_ROW] * 1024
_c("zeros", "A tensor of `size` filled with 0.", lambda *s: np.zeros(s), fixed(2, 3),
   refuse={VMAP: NO_TENSOR}, bench=fixed(1024, 1024))
_c("ones", "A tensor of `size` filled with 1.", lambda *s: np.ones(s), fixed(2, 3),
   refuse={VMAP: NO_TENSOR}, bench=fixed(1024, 1024))
_c("full", "A tensor of `size` filled with `fill_value`.", lambda s, v: np.full(s, v), fixed((2, 3), 1.5),
   refuse={VMAP: NO_TENSOR}, bench=fixed((1024, 1024), 1.5))
_c("arange", "Values from `start` to `end` (excluded) in steps of `step`.", np.arange,
   fixed(0.0, 2.0, 0.5), refuse={VMAP: NO_TENSOR}, bench=fixed(0.0, N / 2, 0.5))
_c("range", "Values from `start` to `end` (included) in steps of `step` (deprecated: `arange`).",
   lambda a, b, s: np.arange(a, b + s / 2, s), fixed(0.0, 2.0, 0.5), refuse={VMAP: NO_TENSOR},
   bench=fixed(0.0, N / 2 - 0.5, 0.5))
_c("linspace", "`steps` values evenly spaced from `start` to `end` (both included).", np.linspace,
   fixed(-1.0, 2.0, 7), refuse={VMAP: NO_TENSOR}, bench=fixed(-1.0, 2.0, N))
_c("logspace", "`steps` values evenly spaced on a log scale from `base**start` to `base**end`.",
   np.logspace, fixed(-1.0, 2.0, 5),
   refuse={VMAP: NO_TENSOR}, bench=fixed(-1.0, 2.0, N))
_c("eye", "The identity matrix of `n` rows (and `m` columns).", np.eye, fixed(3, 4),
   refuse={VMAP: NO_TENSOR}, bench=fixed(1024))
_c("zeros_like", "Zeros of `input`'s shape and dtype.", np.zeros_like, fixed(T((2, 3))),
   rule="_like", bench=fixed(M))
_c("ones_like", "Ones of `input`'s shape and dtype.", np.ones_like, fixed(T((2, 3))),
   rule="_like", bench=fixed(M))
_c("full_like", "`fill_value` in `input`'s shape and dtype.", np.full_like, fixed(T((2, 3)), 2.5),
   rule="_like", bench=fixed(M, 2.5))
_c("empty_like", "An uninitialised tensor of `input`'s shape and dtype.", None, fixed(T((2, 3))),
   rule="_like", refuse={FORWARD: "its values are uninitialised memory"}, bench=fixed(M))
_c("empty", "An uninitialised tensor of `size`.", None, fixed(2, 3),
   refuse={FORWARD: "its values are uninitialised memory", VMAP: NO_TENSOR},
   bench=fixed(1024, 1024))
_c("tensor", "A tensor copied from `data` (nested lists, numbers, NumPy arrays).", np.array,
   fixed([[1.0, 2.0], [3.0, 4.5]]), refuse={VMAP: NO_TENSOR}, bench=fixed(NESTED))
_c("tril_indices", "The indices of the lower triangle of a `row` x `col` matrix.",
   lambda r, c, offset=0: np.stack(np.tril_indices(r, offset, c)), fixed(3, 4),
   refuse={VMAP: NO_TENSOR}, bench=fixed(1024, 1024))
_c("triu_indices", "The indices of the upper triangle of a `row` x `col` matrix.",
   lambda r, c, offset=0: np.stack(np.triu_indices(r, offset, c)), fixed(3, 4),
   refuse={VMAP: NO_TENSOR}, bench=fixed(1024, 1024))

for _name, _doc, _args, _big in (
    ("rand", "Uniform random values in [0, 1) of `size`.", (2, 3), (1024, 1024)),
    ("randn", "Standard normal random values of `size`.", (2, 3), (1024, 1024)),
    ("randint", "Random integers in [`low`, `high`) of `size`.", (0, 5, (2, 3)),
     (0, 5, (1024, 1024))),
    ("randperm", "A random permutation of 0..n-1.", (5,), (N,)),
):
    _c(_name, _doc, None, Sample("fixed", _args, seeded=True),
       refuse={FORWARD: RANDOM, VMAP: NO_TENSOR}, bench=Sample("fixed", _big, seeded=True))
for _name, _doc in (
    ("rand_like", "Uniform random values in [0, 1) of `input`'s shape and dtype."),
    ("randn_like", "Standard normal random values of `input`'s shape and dtype."),
):
    _c(_name, _doc, None, Sample("fixed", (T((2, 3)),), seeded=True), rule="_random_like",
       refuse={FORWARD: RANDOM}, bench=Sample("fixed", (M,), seeded=True))
_c("bernoulli", "Draws 0 or 1 with probabilities `input`.", None,
   Sample("fixed", (T((2, 3), domain=OPEN01, grad=False),), seeded=True), surfaces=(FUNCTION, METHOD),
   refuse={FORWARD: RANDOM},
   rule="bernoulli",
   bench=Sample("fixed", (T((1024, 1024), domain=OPEN01, grad=False),), seeded=True))
_c("multinomial", "Draws `num_samples` category indices per row of weights `input`.", None,
   Sample("fixed", (T((2, 3), domain=POSITIVE, grad=False), 2), seeded=True), surfaces=(FUNCTION, METHOD),
   refuse={FORWARD: RANDOM, VMAP: "randomness differs per sample: draw outside vmap"},
   bench=Sample("fixed", (T((1024, 1000), domain=POSITIVE, grad=False), 10), seeded=True))


def _binomial(fn, n, p):
    """The counts drawn as integers, passed in the probabilities' dtype."""
    return fn(n.to(p.dtype), p)


_c("binomial", "Draws a binomial count per element, of `count` trials with probability `prob`.",
   None, Sample("fixed", (T((2, 3), domain=ints(0, 6), grad=False), T((2, 3), domain=OPEN01, grad=False)),
                seeded=True, call=_binomial),
   refuse={FORWARD: RANDOM, VMAP: "randomness differs per sample: draw outside vmap"},
   bench=Sample("fixed", (T((1024, 1024), domain=ints(0, 6), grad=False),
                          T((1024, 1024), domain=OPEN01, grad=False)), seeded=True, call=_binomial))
_c("poisson", "Draws a Poisson count per element with rate `input`.", None,
   Sample("fixed", (T((2, 3), domain=POSITIVE, grad=False),), seeded=True),
   refuse={FORWARD: RANDOM, VMAP: "randomness differs per sample: draw outside vmap"},
   bench=Sample("fixed", (T((1024, 1024), domain=POSITIVE, grad=False),), seeded=True))
_c("normal", "Normal random values with means `mean` and standard deviations `std`.", None,
   Sample("fixed", (0.0, 1.0, (2, 3)), seeded=True), refuse={FORWARD: RANDOM, VMAP: NO_TENSOR},
   bench=Sample("fixed", (0.0, 1.0, (1024, 1024)), seeded=True))

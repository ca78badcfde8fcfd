"""ferrograd.compile over ops composed in Python that read their inputs'
values (NumPy, ``.item()``): an op whose output shapes follow from its
arguments' shapes replays as one call that runs it again (so new values, in
integer inputs too, give new results and its argument checks run on every
call); an op whose output shape follows from its input's values (``unique``,
``bincount``) fails the capture naming the op, as torch.compile breaks the
graph there (an error under ``fullgraph=True``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F

RNG = np.random.default_rng(0)


def _ints(lo, hi, shape):
    return fg.tensor(RNG.integers(lo, hi, shape))


# name -> (function, draw of its arguments): each call draws new values,
# integer arguments included, which a stale replay would miss.
REPLAYED = {
    "isin": (lambda a, b: fg.isin(a, b), lambda: (_ints(0, 6, (2, 4)), _ints(0, 6, (3,)))),
    "searchsorted": (lambda s, v: fg.searchsorted(s, v),
                     lambda: (fg.sort(_ints(0, 9, (5,)))[0], _ints(0, 9, (2, 3)))),
    "bucketize": (lambda v, b: fg.bucketize(v, b),
                  lambda: (_ints(0, 9, (2, 3)), fg.sort(_ints(0, 9, (4,)))[0])),
    "unravel_index": (lambda i: fg.unravel_index(i, (3, 4)), lambda: (_ints(0, 12, (5,)),)),
    "histc": (lambda x: fg.histc(x, bins=4, min=-1, max=1),
              lambda: (fg.tensor(RNG.uniform(-1, 1, 7)),)),
    "quantile": (lambda x, q: fg.quantile(x, q, dim=1),
                 lambda: (fg.tensor(RNG.uniform(-1, 1, (2, 5))), fg.tensor(RNG.uniform(0, 1, 3)))),
    "index_fill": (lambda x, i: x.index_fill(1, i, -1.0),
                   lambda: (fg.tensor(RNG.uniform(-1, 1, (2, 4))), _ints(0, 4, (2,)))),
    "masked_scatter": (lambda x, m, s: x.masked_scatter(m, s),
                       lambda: (fg.zeros(2, 3), fg.tensor(RNG.random((2, 3)) < 0.5),
                                fg.tensor(RNG.uniform(-1, 1, 6)))),
    "take": (lambda x, i: fg.take(x, i),
             lambda: (fg.tensor(RNG.uniform(-1, 1, (2, 3))), _ints(0, 6, (2, 2)))),
    "cummax": (lambda x: tuple(fg.cummax(x, 1)), lambda: (fg.tensor(RNG.uniform(-1, 1, (2, 5))),)),
    "cummin": (lambda x: tuple(fg.cummin(x, 0)), lambda: (fg.tensor(RNG.uniform(-1, 1, (3, 2))),)),
    "repeat_interleave": (lambda x: fg.repeat_interleave(x, 2, dim=0),
                          lambda: (_ints(0, 9, (3,)),)),
    "one_hot": (lambda x: F.one_hot(x, 6), lambda: (_ints(0, 6, (2, 3)),)),
    "put": (lambda x, i, s: x.put(i, s),
            lambda: (fg.tensor(RNG.uniform(-1, 1, (2, 3))), fg.tensor(RNG.permutation(6)[:2]),
                     fg.tensor(RNG.uniform(-1, 1, 2)))),
    "max_unpool2d": (lambda v, i: F.max_unpool2d(v, i, 2),
                     lambda: F.max_pool2d(fg.tensor(RNG.uniform(-1, 1, (1, 2, 4, 4))), 2,
                                          return_indices=True)),
}


@pytest.mark.parametrize("name", sorted(REPLAYED))
def test_an_op_that_reads_values_replays_with_each_calls_values(name):
    fn, draw = REPLAYED[name]
    compiled = fg.compile(fn, fullgraph=True)
    for _ in range(4):  # eager, capture, then replays
        args = draw()
        want, got = fn(*args), compiled(*args)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    # One tape, in which the op is one entry.
    assert len(compiled.tapes) == 1 and name in compiled.tapes[0].ops


def test_repeat_interleave_with_a_tensor_of_repeats_replays_given_output_size():
    fn = lambda x, r: fg.repeat_interleave(x, r, dim=0, output_size=6)  # noqa: E731
    compiled = fg.compile(fn, fullgraph=True)
    for r in ([1, 2, 3], [3, 3, 0], [0, 0, 6], [2, 2, 2]):
        x, reps = fg.tensor(RNG.uniform(-1, 1, (3, 2))), fg.tensor(r)
        np.testing.assert_array_equal(compiled(x, reps).numpy(), fn(x, reps).numpy())
    assert len(compiled.tapes) == 1


def test_a_replayed_op_checks_its_arguments_on_every_call():
    compiled = fg.compile(lambda v, i: F.max_unpool2d(v, i, 2), fullgraph=True)
    v = fg.ones(1, 1, 2, 2)
    good = fg.tensor([[[[0, 3], [8, 15]]]])
    for _ in range(3):
        compiled(v, good)
    with pytest.raises(RuntimeError, match="Found an invalid max index: 99"):
        compiled(v, fg.tensor([[[[0, 3], [8, 99]]]]))


def test_a_replayed_loss_checks_its_variance_on_every_call():
    compiled = fg.compile(lambda x, y, v: F.gaussian_nll_loss(x, y, v), fullgraph=True)
    x, y = fg.zeros(3), fg.ones(3)
    for _ in range(3):
        compiled(x, y, fg.ones(3))
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        compiled(x, y, fg.tensor([1.0, -1.0, 1.0]))


def test_rrelu_while_training_draws_as_eager_on_every_replay():
    def step(x):
        y = F.rrelu(x, training=True)
        y.sum().backward()
        return y.detach()

    compiled = fg.compile(step, fullgraph=True)
    for k in range(4):
        data = RNG.uniform(-1, 1, (3, 4))
        xe, xc = fg.tensor(data, requires_grad=True), fg.tensor(data, requires_grad=True)
        fg.manual_seed(k)
        want = step(xe)
        fg.manual_seed(k)
        np.testing.assert_array_equal(compiled(xc).numpy(), want.numpy())
        np.testing.assert_array_equal(xc.grad.numpy(), xe.grad.numpy())
    assert len(compiled.tapes) == 1


def test_gradients_flow_through_a_replayed_op():
    def step(x):
        loss = F.multi_margin_loss(x, fg.tensor([0, 2]))
        loss.backward()
        return loss.detach()

    compiled = fg.compile(step, fullgraph=True)
    for _ in range(4):
        data = RNG.uniform(-1, 1, (2, 3))
        xe, xc = fg.tensor(data, requires_grad=True), fg.tensor(data, requires_grad=True)
        np.testing.assert_array_equal(compiled(xc).numpy(), step(xe).numpy())
        np.testing.assert_array_equal(xc.grad.numpy(), xe.grad.numpy())


DATA_DEPENDENT = {
    "unique": lambda x: fg.unique(x),
    "unique_consecutive": lambda x: fg.unique_consecutive(x),
    "bincount": lambda x: fg.bincount(x),
    "repeat_interleave": lambda x: fg.repeat_interleave(x),
    "one_hot": lambda x: F.one_hot(x),
}


@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_a_data_dependent_shape_refuses_naming_the_op(name):
    fn = DATA_DEPENDENT[name]
    x = fg.tensor([3, 1, 1, 0, 3])
    compiled = fg.compile(fn, fullgraph=True)
    compiled(x)  # the first call runs eagerly
    with pytest.raises(RuntimeError, match=f"`{name}` returns a tensor whose shape depends on its "
                                           "input's values"):
        compiled(x)
    # Without fullgraph the call warns and runs eagerly, with eager's values.
    lenient = fg.compile(fn)
    lenient(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = lenient(fg.tensor([2, 2, 5]))
    assert any(f"`{name}` returns a tensor whose shape" in str(w.message) for w in caught)
    np.testing.assert_array_equal(got.numpy(), fn(fg.tensor([2, 2, 5])).numpy())


def test_a_result_that_cannot_be_rebuilt_ends_the_capture():
    import collections

    pair = collections.namedtuple("pair", "a b")
    bad = fg.compile(lambda x: pair(x + 1, x * 2), fullgraph=True)
    bad(fg.ones(2))
    with pytest.raises(RuntimeError, match="cannot be rebuilt on replay"):
        bad(fg.ones(2))
    assert not fg._C._capture_active()
    # A later compiled function records and replays as usual.
    good = fg.compile(lambda x: x.exp(), fullgraph=True)
    for _ in range(3):
        good(fg.ones(2))
    assert len(good.tapes) == 1

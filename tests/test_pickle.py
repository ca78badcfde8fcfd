"""Pickling and deep copies keep values, dtype and requires_grad."""

import copy
import pickle

import ferrograd as fg
from ferrograd import nn


def test_pickle_round_trip_keeps_dtype_and_values():
    for t in [fg.tensor([[1.5, -2.0]], dtype=fg.float64), fg.tensor([2**60 + 1]), fg.tensor([True, False])]:
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype == t.dtype and u.tolist() == t.tolist() and u.shape == t.shape


def test_pickled_leaf_keeps_requires_grad():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert y.requires_grad and y.is_leaf
    (y * y).sum().backward()
    assert y.grad.tolist() == [2.0, 4.0] and x.grad is None


def test_deepcopy_of_a_model_is_independent():
    m = nn.Linear(3, 2)
    m2 = copy.deepcopy(m)
    with fg.no_grad():
        m2.weight.zero_()
    assert m.weight.abs().sum().item() > 0

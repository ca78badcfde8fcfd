"""``set_default_dtype`` / ``get_default_dtype`` / ``set_default_tensor_type``:
every creation path PyTorch's default dtype affects, under float64, restored
afterwards."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ferrograd as fg
from ferrograd import nn


@pytest.fixture
def float64_default():
    assert fg.get_default_dtype() is fg.float32
    fg.set_default_dtype(fg.float64)
    try:
        yield
    finally:
        fg.set_default_dtype(fg.float32)


def test_initial_default_and_round_trip():
    assert fg.get_default_dtype() is fg.float32
    fg.set_default_dtype(fg.float64)
    try:
        assert fg.get_default_dtype() is fg.float64
    finally:
        fg.set_default_dtype(fg.float32)
    assert fg.get_default_dtype() is fg.float32
    assert fg.zeros(1).dtype is fg.float32


def test_errors_leave_the_default_unchanged():
    for bad in (fg.int64, fg.bool):
        with pytest.raises(
            TypeError, match="only floating-point types are supported as the default type"
        ):
            fg.set_default_dtype(bad)
    with pytest.raises(
        TypeError, match=r"argument 'd' \(position 1\) must be torch.dtype, not str"
    ):
        fg.set_default_dtype("float64")
    assert fg.get_default_dtype() is fg.float32


CREATION = {
    "tensor(float)": lambda: fg.tensor(2.5),
    "tensor([floats])": lambda: fg.tensor([1.0, 2.0]),
    "tensor([int, float])": lambda: fg.tensor([[1, 2.5]]),
    "tensor([])": lambda: fg.tensor([]),
    "Tensor(data)": lambda: fg.Tensor([1, 2]),
    "Tensor()": lambda: fg.Tensor(),
    "zeros": lambda: fg.zeros(2, 3),
    "ones": lambda: fg.ones((2,)),
    "empty": lambda: fg.empty(3),
    "full(float)": lambda: fg.full((2,), 1.5),
    "rand": lambda: fg.rand(4),
    "randn": lambda: fg.randn(20),
    "normal(floats, size)": lambda: fg.normal(0.0, 1.0, size=(3,)),
    "arange(float)": lambda: fg.arange(0, 1, 0.25),
    "arange(float end)": lambda: fg.arange(2.0),
    "linspace": lambda: fg.linspace(0, 1, 5),
    "eye": lambda: fg.eye(3),
    "int / int": lambda: fg.tensor([1, 2]) / 2,
    "int * float": lambda: fg.tensor([1, 2]) * 0.5,
    "int.exp()": lambda: fg.tensor([1, 2]).exp(),
    "int.sqrt()": lambda: fg.tensor([4]).sqrt(),
    "bool.sigmoid()": lambda: fg.tensor([True]).sigmoid(),
    "logsumexp(int)": lambda: fg.logsumexp(fg.tensor([1, 2]), 0),
    "float scalar tensor op": lambda: fg.tensor(3) + fg.tensor(0.5),
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_creation_follows_the_default(name, float64_default):
    assert CREATION[name]().dtype is fg.float64
    fg.set_default_dtype(fg.float32)
    assert CREATION[name]().dtype is fg.float32


def test_what_the_default_does_not_change(float64_default):
    # Integer and bool data, explicit dtypes, and existing float32 tensors.
    assert fg.tensor([1, 2]).dtype is fg.int64
    assert fg.tensor([True]).dtype is fg.bool
    assert fg.full((2,), 3).dtype is fg.int64
    assert fg.arange(3).dtype is fg.int64
    assert fg.zeros(2, dtype=fg.float32).dtype is fg.float32
    x = fg.ones(2, dtype=fg.float32)
    assert (x * 2.5).dtype is fg.float32  # a Python float never widens a float tensor
    assert x.exp().dtype is fg.float32
    assert fg.zeros_like(x).dtype is fg.float32
    assert fg.rand_like(x).dtype is fg.float32
    assert fg.from_numpy(np.zeros(2, np.float32)).dtype is fg.float32
    assert fg.tensor(np.zeros(2, np.float32)).dtype is fg.float32
    assert x.float().dtype is fg.float32


def test_values_and_random_numbers_under_float64(float64_default):
    assert fg.tensor([0.1]).item() == 0.1  # no float32 rounding on the way
    assert fg.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    # The same seed draws what randn(dtype=float64) draws.
    fg.manual_seed(5)
    a = fg.randn(20)
    fg.manual_seed(5)
    b = fg.randn(20, dtype=fg.float64)
    assert fg.equal(a, b)
    assert fg.finfo().eps == np.finfo(np.float64).eps


LAYERS = {
    "Linear": lambda: nn.Linear(3, 2),
    "Bilinear": lambda: nn.Bilinear(2, 2, 3),
    "Conv1d": lambda: nn.Conv1d(2, 3, 3),
    "Conv2d": lambda: nn.Conv2d(2, 3, 3),
    "Conv3d": lambda: nn.Conv3d(2, 3, 3),
    "ConvTranspose2d": lambda: nn.ConvTranspose2d(2, 3, 3),
    "BatchNorm1d": lambda: nn.BatchNorm1d(3),
    "BatchNorm2d": lambda: nn.BatchNorm2d(3),
    "LayerNorm": lambda: nn.LayerNorm(4),
    "GroupNorm": lambda: nn.GroupNorm(2, 4),
    "InstanceNorm2d(affine)": lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
    "Embedding": lambda: nn.Embedding(5, 3),
    "EmbeddingBag": lambda: nn.EmbeddingBag(5, 3),
    "PReLU": lambda: nn.PReLU(),
    "RNN": lambda: nn.RNN(3, 4),
    "LSTM": lambda: nn.LSTM(3, 4),
    "GRU": lambda: nn.GRU(3, 4),
    "LSTMCell": lambda: nn.LSTMCell(3, 4),
    "MultiheadAttention": lambda: nn.MultiheadAttention(4, 2),
    "TransformerEncoderLayer": lambda: nn.TransformerEncoderLayer(4, 2, dim_feedforward=8),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_parameters_and_float_buffers_follow_the_default(name, float64_default):
    m = LAYERS[name]()
    floats = [t for t in list(m.parameters()) + list(m.buffers()) if t.is_floating_point()]
    assert floats, name
    assert all(t.dtype is fg.float64 for t in floats), name
    fg.set_default_dtype(fg.float32)
    m = LAYERS[name]()
    assert all(t.dtype is fg.float32 for t in m.parameters())


def test_float64_default_trains_a_model_in_float64(float64_default):
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x = fg.randn(8, 3)
    loss = ((model(x) - 1.0) ** 2).mean()
    loss.backward()
    assert loss.dtype is fg.float64
    assert all(p.grad.dtype is fg.float64 for p in model.parameters())


def test_repr_names_the_non_default_float_dtype(float64_default):
    assert "dtype" not in repr(fg.tensor([1.5]))
    assert "dtype=ferrograd.float32" in repr(fg.tensor([1.5], dtype=fg.float32))


def test_set_default_tensor_type():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            fg.set_default_tensor_type(fg.DoubleTensor)
            assert fg.get_default_dtype() is fg.float64
            assert fg.zeros(1).dtype is fg.float64
            fg.set_default_tensor_type("torch.FloatTensor")
            assert fg.get_default_dtype() is fg.float32
        finally:
            fg.set_default_dtype(fg.float32)
    assert any("set_default_tensor_type() is deprecated" in str(x.message) for x in w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(
            TypeError, match="only floating-point types are supported as the default type"
        ):
            fg.set_default_tensor_type(fg.LongTensor)
        with pytest.raises(TypeError, match="invalid type"):
            fg.set_default_tensor_type("torch.NopeTensor")
    assert fg.get_default_dtype() is fg.float32


def test_legacy_constructor_follows_the_default_dtype_and_takes_sizes():
    # PyTorch's Tensor(data) converts any data, float64 arrays included, to
    # the default dtype; integer arguments are a size, a Size is a shape.
    assert fg.Tensor(np.zeros(3)).dtype == fg.float32
    assert fg.Tensor(np.arange(3)).dtype == fg.float32
    assert fg.Tensor(2, 3).shape == (2, 3) and fg.Tensor(2, 3).sum().item() == 0
    assert fg.Tensor(fg.Size([4, 1])).shape == (4, 1)
    assert fg.Tensor((2, 3)).tolist() == [2.0, 3.0]
    assert fg.Tensor().shape == (0,)
    fg.set_default_dtype(fg.float64)
    try:
        assert fg.Tensor(np.zeros(2, np.float32)).dtype == fg.float64
    finally:
        fg.set_default_dtype(fg.float32)


@pytest.mark.parametrize(
    "args, exc, text",
    [
        ((3.5,), TypeError, "new(): data must be a sequence (got float)"),
        ((None,), TypeError, "new(): data must be a sequence (got NoneType)"),
        ((2, "a"), TypeError, 'at pos 2 with error "type must be tuple of ints,but got str"'),
        ((-1,), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    ],
)
def test_legacy_constructor_errors(args, exc, text):
    with pytest.raises(exc) as e:
        fg.Tensor(*args)
    assert text in str(e.value)

"""``Tensor.__format__`` and ``Tensor.device`` as PyTorch's.

A 0-d tensor formats as its Python number (``f"{loss:.4f}"``, the commonest
logging line of training scripts); ``Tensor.device`` is a ``ferrograd.device``
with ``type`` and ``index``, equal to ``device("cpu")`` and to the string
``"cpu"``, hashable.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as torch

# ----- __format__ -----------------------------------------------------------------------------


@given(
    value=st.floats(-1e6, 1e6, allow_nan=False, width=32),
    spec=st.sampled_from([".4f", ".3f", "8.2f", ".2e", "g", "", ">10.1f", "+.3f", ".0%"]),
)
def test_zero_dim_float_formats_as_its_value(value, spec):
    t = torch.tensor(value)
    # A float32 0-d tensor formats as the Python float of its value, as PyTorch's.
    assert format(t, spec) == format(float(np.float32(value)), spec)
    assert f"{t:{spec}}" == format(t.item(), spec)


@pytest.mark.parametrize("spec", ["d", "5d", "x", "", ",", "+d"])
def test_zero_dim_int_formats_as_int(spec):
    t = torch.tensor(1234)
    assert format(t, spec) == format(1234, spec)


def test_zero_dim_bool_and_double():
    assert f"{torch.tensor(True)}" == "True"
    assert "{:.3f}".format(torch.tensor(2.0, dtype=torch.float64) / 3) == "0.667"  # noqa: UP032


def test_format_of_results_and_parameters():
    loss = (torch.ones(3, requires_grad=True) * 2).sum()
    assert f"{loss:.4f}" == "6.0000"
    p = torch.nn.Parameter(torch.tensor(0.5))
    assert f"{p:.2f}" == "0.50"
    acc = torch.tensor([1, 1, 0, 1]).sum().double() / 4
    assert "{:.3f}".format(acc) == "0.750"  # noqa: UP032 - the idiom itself


def test_format_of_a_non_scalar_tensor():
    t = torch.tensor([1.0, 2.0])
    # Empty spec: the tensor's str; any other spec: PyTorch's TypeError.
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="unsupported format string passed to"):
        f"{t:.3f}"
    # A one-element tensor that is not 0-d is no scalar for formatting either.
    with pytest.raises(TypeError, match="unsupported format string passed to"):
        format(torch.tensor([1.0]), ".2f")


# ----- device ---------------------------------------------------------------------------------


def test_tensor_device_is_a_device():
    x = torch.ones(2)
    d = x.device
    assert isinstance(d, torch.device)
    assert d.type == "cpu" and d.index is None
    assert repr(d) == "device(type='cpu')"
    assert str(d) == "cpu"
    assert d == torch.device("cpu") and d == "cpu" and "cpu" == d
    assert d != torch.device("meta")
    assert hash(d) == hash(torch.device("cpu"))
    assert {d: 1}[torch.device("cpu")] == 1
    # Every tensor (and every result, parameter and grad) reports the same device.
    y = torch.nn.Parameter(torch.ones(2))
    (y * 2).sum().backward()
    assert y.device == y.grad.device == (y * 2).device == d


def test_device_idioms_of_training_scripts():
    x = torch.ones(2)
    assert x.device.type != "cuda"
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert x.to(device).device == device
    assert x.to(x.device) is x
    assert torch.zeros(2, device=x.device).device.type == "cpu"
    assert torch.device("cpu", 0).index == 0
    assert repr(torch.device("cpu:0")) == "device(type='cpu', index=0)"
    assert torch.device(torch.device("cpu")) == "cpu"


def test_device_copies_and_pickles():
    d = torch.ones(1).device
    assert copy.deepcopy(d) == d and pickle.loads(pickle.dumps(d)) == d
    assert type(pickle.loads(pickle.dumps(d))) is torch.device


def test_accelerators_are_refused():
    with pytest.raises(RuntimeError, match="ferrograd has no CUDA support"):
        torch.device("cuda")
    with pytest.raises(RuntimeError, match="ferrograd has no CUDA support"):
        torch.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="CPU only"):
        torch.ones(2).to("cuda")
    with pytest.raises(RuntimeError, match="CPU only"):
        torch.ones(2).to(device="cuda:0")
    with pytest.raises(RuntimeError, match="ferrograd has no CUDA support"):
        torch.nn.Linear(2, 2, device="cuda")


def test_meta_device_object():
    m = torch.device("meta")
    assert m.type == "meta" and m == "meta" and repr(m) == "device(type='meta')"


def test_default_device_context():
    assert torch.get_default_device() == "cpu"
    with torch.device("meta"):
        assert torch.get_default_device() == "meta"
        assert torch.empty(3).is_meta
        assert torch.zeros(2, device="cpu").device == "cpu"
        with torch.device("cpu"):
            assert not torch.ones(2).is_meta
        assert torch.ones(2).is_meta
    assert not torch.empty(3).is_meta
    torch.set_default_device("meta")
    try:
        assert torch.randn(4, 4).is_meta
    finally:
        torch.set_default_device(None)
    assert torch.get_default_device() == "cpu"


def test_device_in_a_checkpoint(tmp_path):
    torch.save({"device": torch.ones(1).device, "meta": torch.device("meta")}, tmp_path / "c.pt")
    back = torch.load(tmp_path / "c.pt", weights_only=True)
    assert back["device"] == torch.device("cpu") and isinstance(back["device"], torch.device)
    assert back["meta"].type == "meta"

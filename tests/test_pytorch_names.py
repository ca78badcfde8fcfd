"""Small names PyTorch code copied from the web uses: constants, ``device``,
``cuda``, ``backends``, ``finfo``/``iinfo``, legacy tensor types,
``Tensor.type()``, and the loss batch-size error."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn.functional as F


def test_constants():
    assert torch.pi == math.pi and torch.e == math.e
    assert torch.inf == math.inf and math.isnan(torch.nan)


def test_device():
    d = torch.device("cpu")
    assert (str(d), repr(d), d.type, d.index) == ("cpu", "device(type='cpu')", "cpu", None)
    d0 = torch.device("cpu", 0)
    assert (str(d0), repr(d0), d0.index) == ("cpu:0", "device(type='cpu', index=0)", 0)
    assert torch.device("cpu:0") == d0 and d0 != d
    assert hash(torch.device("cpu")) == hash(d) and len({d, torch.device("cpu")}) == 1
    assert torch.device(d) is d
    assert pickle.loads(pickle.dumps(d0)) == d0
    x = torch.ones(2)
    assert x.device == d and x.to(d).dtype == torch.float32
    for bad in ("cuda", "cuda:1", "mps"):
        with pytest.raises(RuntimeError, match="ferrograd has no CUDA support"):
            torch.device(bad)
    with pytest.raises(RuntimeError, match="ferrograd has no CUDA support"):
        torch.device(0)
    with pytest.raises(RuntimeError, match="Expected one of cpu"):
        torch.device("gpu")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        torch.device("cpu:x")


def test_cuda_and_backends():
    assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
    assert torch.cuda.manual_seed(1) is None and torch.cuda.manual_seed_all(1) is None
    with pytest.raises(RuntimeError, match="no CUDA"):
        torch.cuda.current_device()
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    assert torch.backends.cudnn.deterministic is True
    assert torch.backends.mps.is_available() is False
    assert torch.backends.cudnn.is_available() is False


def test_tensor_cuda_is_refused_like_device_cuda():
    x = torch.ones(2)
    for args, kind in (((), "cuda"), ((0,), "cuda:0"), (("cuda:1",), "cuda:1")):
        with pytest.raises(RuntimeError, match=f"no CUDA support.*device '{kind}'"):
            x.cuda(*args)
    assert torch.Tensor.cuda.__doc__
    assert x.cpu() is x and x.is_cuda is False


LIKE = {
    "zeros_like": lambda x, **kw: torch.zeros_like(x, **kw),
    "ones_like": lambda x, **kw: torch.ones_like(x, **kw),
    "full_like": lambda x, **kw: torch.full_like(x, 7.0, **kw),
    "empty_like": lambda x, **kw: torch.empty_like(x, **kw),
    "rand_like": lambda x, **kw: torch.rand_like(x, **kw),
    "randn_like": lambda x, **kw: torch.randn_like(x, **kw),
    "randint_like": lambda x, **kw: torch.randint_like(x, 5, **kw),
}


@pytest.mark.parametrize("name", sorted(LIKE))
def test_like_functions_take_the_cpu_device_and_refuse_others(name):
    # `torch.zeros_like(x, device=x.device)` is common in code written for GPUs.
    x = torch.ones(2, 3, dtype=torch.float64)
    for dev in (None, "cpu", torch.device("cpu"), x.device):
        y = LIKE[name](x, device=dev)
        assert tuple(y.shape) == (2, 3) and y.dtype == torch.float64
    for dev in ("cuda", "cuda:0", "mps", 0):
        with pytest.raises(RuntimeError, match="no CUDA support"):
            LIKE[name](x, device=dev)
    with pytest.raises(RuntimeError, match="Expected one of cpu"):
        LIKE[name](x, device="gpu")
    with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'device' must be torch.device"):
        LIKE[name](x, device=1.5)


@pytest.mark.parametrize("make", [
    lambda d: torch.zeros(2, device=d), lambda d: torch.ones(2, device=d),
    lambda d: torch.empty(2, device=d), lambda d: torch.full((2,), 1.0, device=d),
    lambda d: torch.eye(2, device=d), lambda d: torch.arange(3, device=d),
    lambda d: torch.linspace(0, 1, 3, device=d), lambda d: torch.tensor([1.0], device=d),
])
def test_native_factories_refuse_cuda(make):
    with pytest.raises(RuntimeError, match="no CUDA support"):
        make("cuda")


def test_finfo_iinfo():
    f = torch.finfo(torch.float32)
    n = np.finfo(np.float32)
    assert (f.bits, f.eps, f.max, f.min, f.tiny) == (32, float(n.eps), float(n.max),
                                                     float(n.min), float(n.tiny))
    assert f.smallest_normal == f.tiny and f.resolution == 1e-06 and f.dtype == "float32"
    assert torch.finfo() == f
    assert torch.finfo(torch.float64).eps == 2.0**-52
    i = torch.iinfo(torch.int64)
    assert (i.bits, i.max, i.min, i.dtype) == (64, 2**63 - 1, -(2**63), "int64")
    with pytest.raises(TypeError):
        torch.finfo(torch.int64)
    with pytest.raises(TypeError):
        torch.iinfo(torch.float32)


def test_tensor_predicates():
    x = torch.zeros(2, 3)
    assert torch.is_tensor(x) and not torch.is_tensor([1])
    assert torch.is_floating_point(x) and not torch.is_floating_point(torch.zeros(1, dtype=torch.int64))
    assert torch.numel(x) == 6
    with pytest.raises(TypeError):
        torch.is_floating_point(1.0)


def test_legacy_types_and_type():
    x = torch.zeros(2)
    assert x.type() == "torch.FloatTensor"
    assert torch.zeros(1, dtype=torch.float64).type() == "torch.DoubleTensor"
    assert torch.zeros(1, dtype=torch.int64).type() == "torch.LongTensor"
    assert torch.zeros(1, dtype=torch.bool).type() == "torch.BoolTensor"
    assert x.type(torch.FloatTensor) is x
    assert x.type(torch.float64).dtype == torch.float64
    assert x.type("torch.LongTensor").dtype == torch.int64
    assert x.type(torch.DoubleTensor).dtype == torch.float64
    with pytest.raises(RuntimeError, match="CUDA"):
        x.type("torch.cuda.FloatTensor")
    with pytest.raises(ValueError):
        x.type("torch.NotATensor")
    assert isinstance(x, torch.FloatTensor) and not isinstance(x, torch.LongTensor)
    assert isinstance(x, torch.Tensor)
    t = torch.FloatTensor(2, 3)
    assert t.shape == (2, 3) and t.dtype == torch.float32
    np.testing.assert_array_equal(torch.LongTensor([1, 2]).numpy(), [1, 2])
    assert torch.DoubleTensor([0.5]).dtype == torch.float64
    assert torch.BoolTensor([True]).dtype == torch.bool
    assert torch.FloatTensor().numel() == 0


@pytest.mark.parametrize("loss", [F.cross_entropy, F.nll_loss])
def test_loss_batch_size_mismatch_is_a_value_error(loss):
    with pytest.raises(ValueError, match=r"^Expected input batch_size \(3\) to match target "
                                         r"batch_size \(2\)\.$"):
        loss(torch.zeros(3, 4), torch.zeros(2, dtype=torch.int64))


def test_random_module_and_fork_rng():
    torch.random.manual_seed(3)
    a = torch.rand(4)
    torch.random.manual_seed(3)
    with torch.random.fork_rng():
        torch.rand(100)
    np.testing.assert_array_equal(torch.rand(4).numpy(), a.numpy())
    assert torch.random.initial_seed() == 3

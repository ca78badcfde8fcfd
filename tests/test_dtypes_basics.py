"""Every dtype through creation, conversion, NumPy sharing, printing,
save/load, ``iinfo``/``finfo`` and the autograd dtype rules.

Expected values are NumPy's, closed forms, or PyTorch's behaviour recorded
from PyTorch 2.15 on x86-64 (noted where so).
"""

import math

import numpy as np
import pytest

import ferrograd as torch

INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
LOW = [torch.float16, torch.bfloat16]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
ALL = [torch.bool, *INTS, *FLOATS]
NP = {
    torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
    torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16,
    torch.float32: np.float32, torch.float64: np.float64,
}  # fmt: skip


def name(d):
    return str(d).rsplit(".", 1)[-1]


def bf16_round(x):
    """float32 values rounded to bfloat16 (nearest, ties to even), as float32."""
    x = np.asarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    r = (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), r)


def values(t):
    """A tensor's values as a NumPy array (bfloat16 widened to float32, exactly)."""
    t = t.detach()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


# ----- names and aliases --------------------------------------------------------------


def test_names_and_aliases():
    assert torch.half is torch.float16
    assert torch.float is torch.float32
    assert torch.double is torch.float64
    assert torch.short is torch.int16
    assert torch.int is torch.int32
    assert torch.long is torch.int64
    # PyTorch has no torch.byte/torch.char (only the Tensor methods).
    assert not hasattr(torch, "byte") and not hasattr(torch, "char")
    for d in ALL:
        assert repr(d) == f"ferrograd.{name(d)}"
        assert getattr(torch, name(d)) is d


@pytest.mark.parametrize("d", ALL, ids=name)
def test_dtype_attributes(d):
    assert d.is_floating_point == (d in FLOATS)
    assert d.is_signed == (d not in (torch.bool, torch.uint8))
    assert d.is_complex is False
    size = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
            "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[name(d)]  # fmt: skip
    assert d.itemsize == size
    assert torch.zeros(3, dtype=d).element_size() == size


def test_conversion_methods():
    x = torch.tensor([1.7, -2.5, 300.0])
    for method, d in [("half", torch.float16), ("bfloat16", torch.bfloat16), ("int", torch.int32),
                      ("short", torch.int16), ("char", torch.int8), ("byte", torch.uint8),
                      ("long", torch.int64), ("double", torch.float64), ("float", torch.float32),
                      ("bool", torch.bool)]:  # fmt: skip
        y = getattr(x, method)()
        assert y.dtype == d
        assert x.to(d).dtype == d
        assert x.to(dtype=d).dtype == d
        assert getattr(y, method)() is y  # already that dtype: the tensor itself
    # Truncation toward zero, then the low bits (recorded from PyTorch 2.15).
    assert x.char().tolist() == [1, -2, 44]
    assert x.byte().tolist() == [1, 254, 44]
    assert x.short().tolist() == [1, -2, 300]


# ----- creation ---------------------------------------------------------------------------


@pytest.mark.parametrize("d", ALL, ids=name)
def test_factories(d):
    one = True if d == torch.bool else 1
    assert torch.zeros(2, 3, dtype=d).dtype == d
    assert torch.ones(4, dtype=d).tolist() == [one] * 4
    assert torch.full((2,), one, dtype=d).tolist() == [one, one]
    assert torch.empty(3, dtype=d).dtype == d
    base = torch.zeros(2, dtype=d)
    for like in (torch.zeros_like, torch.ones_like, torch.empty_like):
        assert like(base).dtype == d
    assert torch.full_like(base, one).tolist() == [one, one]
    assert torch.tensor([one, 0], dtype=d).dtype == d
    assert torch.eye(2, dtype=d).tolist() == [[one, 0 * one], [0 * one, one]]


@pytest.mark.parametrize("d", INTS + FLOATS, ids=name)
def test_arange_and_randint(d):
    assert torch.arange(5, dtype=d).tolist() == [0, 1, 2, 3, 4]
    assert torch.arange(5, dtype=d).dtype == d
    r = torch.randint(0, 7, (200,), dtype=d)
    assert r.dtype == d
    v = values(r)
    assert v.min() >= 0 and v.max() < 7


def test_tensor_from_lists_checks_integer_range():
    # Recorded from PyTorch 2.15: out-of-range values refuse, uint8 takes
    # -255..-1 (wrapping), floats truncate.
    assert torch.tensor([-1], dtype=torch.uint8).tolist() == [255]
    assert torch.tensor([1.7], dtype=torch.int32).tolist() == [1]
    assert torch.tensor([True, 2], dtype=torch.int8).tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8 without overflow"):
        torch.tensor([300, -1], dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int32 without overflow"):
        torch.tensor([2**31], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8 without overflow"):
        torch.tensor([300.5], dtype=torch.uint8)
    # Floats overflow to infinity instead.
    assert torch.tensor([1e10], dtype=torch.float16).tolist() == [math.inf]
    assert torch.tensor([1e39], dtype=torch.bfloat16).tolist() == [math.inf]


@pytest.mark.parametrize("d", LOW, ids=name)
def test_rand_is_float32_rounded_once(d):
    # PyTorch 2.15 draws float16/bfloat16 `rand` as float32 and rounds.
    torch.manual_seed(3)
    low = torch.rand(40, dtype=d)
    torch.manual_seed(3)
    ref = torch.rand(40).numpy()
    want = bf16_round(ref) if d == torch.bfloat16 else ref.astype(np.float16).astype(np.float32)
    assert low.dtype == d
    np.testing.assert_array_equal(values(low).astype(np.float32), want)


def test_randn_low_precision_values_recorded_from_pytorch():
    # torch.manual_seed(0); torch.randn(4, dtype=torch.float16).tolist() in PyTorch 2.15
    torch.manual_seed(0)
    assert torch.randn(4, dtype=torch.float16).tolist() == [
        1.541015625, -0.29345703125, -2.1796875, 0.568359375,
    ]  # fmt: skip
    # From 16 values on PyTorch's generic kernel computes in the 16-bit type
    # itself; ferrograd draws float32's samples and rounds them (documented).
    for d in LOW:
        torch.manual_seed(0)
        low = values(torch.randn(40, dtype=d)).astype(np.float32)
        torch.manual_seed(0)
        ref = torch.randn(40).numpy()
        want = bf16_round(ref) if d == torch.bfloat16 else ref.astype(np.float16).astype(np.float32)
        np.testing.assert_array_equal(low, want)


# ----- conversion semantics -----------------------------------------------------------

SPECIAL = [math.nan, math.inf, -math.inf, 300.0, -1.0, 1e10, -3.7, 2.5, 65543.0, 2.0**31 + 5,
           -(2.0**31) - 5, 1e20, -129.0, 128.0]  # fmt: skip
# Recorded from PyTorch 2.15 on x86-64 (`torch.tensor(SPECIAL).to(dtype)`).
CAST = {
    torch.int64: [-(2**63), -(2**63), -(2**63), 300, -1, 10**10, -3, 2, 65543, 2**31, -(2**31),
                  -(2**63), -129, 128],
    torch.int32: [-(2**31), -(2**31), -(2**31), 300, -1, -(2**31), -3, 2, 65543, -(2**31),
                  -(2**31), -(2**31), -129, 128],
    torch.int16: [0, 0, 0, 300, -1, 0, -3, 2, 7, 0, 0, 0, -129, 128],
    torch.int8: [0, 0, 0, 44, -1, 0, -3, 2, 7, 0, 0, 0, 127, -128],
    torch.uint8: [0, 0, 0, 44, 255, 0, 253, 2, 7, 0, 0, 0, 127, 128],
}  # fmt: skip


@pytest.mark.parametrize("d", INTS, ids=name)
def test_float_to_int_is_pytorchs_x86_conversion(d):
    assert torch.tensor(SPECIAL).to(d).tolist() == CAST[d]
    # The values were recorded from the float32 tensor widened (`.double()`).
    assert torch.tensor(SPECIAL).double().to(d).tolist() == CAST[d]


def test_float_to_bool_and_back():
    assert torch.tensor([0.0, -0.0, math.nan, 0.5]).bool().tolist() == [False, False, True, True]
    for d in ALL:
        assert torch.tensor([True, False]).to(d).tolist() == [1, 0]


def test_int_to_narrower_int_wraps():
    x = torch.tensor([300, -129, 65543, 2**40 + 3])
    assert x.to(torch.uint8).tolist() == [44, 127, 7, 3]
    assert x.to(torch.int8).tolist() == [44, 127, 7, 3]
    assert x.to(torch.int16).tolist() == [300, -129, 7, 3]


@pytest.mark.parametrize("d", LOW, ids=name)
def test_float32_to_low_precision_rounds_to_nearest_even(d):
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.standard_normal(10_000).astype(np.float32) * 100,
        np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-11, 1 + 3 * 2**-11, 65520.0, 1e-8, -0.0,
                  np.inf, -np.inf], np.float32),
    ])  # fmt: skip
    got = values(torch.from_numpy(x).to(d)).astype(np.float32)
    want = bf16_round(x) if d == torch.bfloat16 else x.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    nan = torch.tensor([math.nan]).to(d)
    assert math.isnan(nan.item())
    # A strided (non-contiguous) source converts the same way.
    t = torch.from_numpy(x[:200].reshape(20, 10)).t()
    np.testing.assert_array_equal(values(t.to(d)).astype(np.float32), want[:200].reshape(20, 10).T)


# ----- NumPy ------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [d for d in ALL if d != torch.bfloat16], ids=name)
def test_numpy_shares_memory_both_ways(d):
    npd = NP[d]
    a = np.arange(6).astype(npd)
    t = torch.from_numpy(a)
    assert t.dtype == d
    a[0] = 1
    assert t.tolist()[0] == (True if d == torch.bool else 1)
    back = t.numpy()
    assert back.dtype == npd
    assert np.shares_memory(back, a)
    # torch.tensor copies.
    c = torch.tensor(a)
    assert c.dtype == d
    a[1] = 0
    assert c.tolist()[1] != 0 or d == torch.bool


def test_bfloat16_has_no_numpy_counterpart():
    t = torch.ones(3, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        t.numpy()
    np.testing.assert_array_equal(t.float().numpy(), np.ones(3, np.float32))


def test_from_numpy_refuses_other_types():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type uint16"):
        torch.from_numpy(np.zeros(2, np.uint16))
    # A copy widens them.
    assert torch.tensor(np.array([1, 2], np.uint16)).dtype == torch.int64


# ----- printing ----------------------------------------------------------------------------

# Recorded from PyTorch 2.15 (torch. replaced by ferrograd.).
REPRS = [
    (lambda: torch.tensor([1, 2, 3], dtype=torch.uint8), "tensor([1, 2, 3], dtype=ferrograd.uint8)"),
    (lambda: torch.tensor([[5, -1], [3, 4]], dtype=torch.uint8),
     "tensor([[  5, 255],\n        [  3,   4]], dtype=ferrograd.uint8)"),
    (lambda: torch.tensor([[5, -1], [3, 4]], dtype=torch.int8),
     "tensor([[ 5, -1],\n        [ 3,  4]], dtype=ferrograd.int8)"),
    (lambda: torch.tensor([1, 2, 300], dtype=torch.int16),
     "tensor([  1,   2, 300], dtype=ferrograd.int16)"),
    (lambda: torch.tensor([1, 2, 3], dtype=torch.int32), "tensor([1, 2, 3], dtype=ferrograd.int32)"),
    (lambda: torch.tensor([1.0, 2, 3], dtype=torch.float16),
     "tensor([1., 2., 3.], dtype=ferrograd.float16)"),
    (lambda: torch.tensor([0.1, 0.2], dtype=torch.float16),
     "tensor([0.1000, 0.2000], dtype=ferrograd.float16)"),
    (lambda: torch.tensor([0.1, 0.2], dtype=torch.bfloat16),
     "tensor([0.1001, 0.2002], dtype=ferrograd.bfloat16)"),
    (lambda: torch.tensor([0.1, 1.5, 300], dtype=torch.float16),
     "tensor([9.9976e-02, 1.5000e+00, 3.0000e+02], dtype=ferrograd.float16)"),
    (lambda: torch.tensor([0.1, 1.5, 300], dtype=torch.bfloat16),
     "tensor([1.0010e-01, 1.5000e+00, 3.0000e+02], dtype=ferrograd.bfloat16)"),
    (lambda: torch.tensor(2.5, dtype=torch.bfloat16), "tensor(2.5000, dtype=ferrograd.bfloat16)"),
    (lambda: torch.tensor(3, dtype=torch.int8), "tensor(3, dtype=ferrograd.int8)"),
    (lambda: torch.zeros(0, dtype=torch.int32), "tensor([], dtype=ferrograd.int32)"),
    (lambda: torch.tensor([1.5], dtype=torch.bfloat16, requires_grad=True) * 2,
     "tensor([3.], dtype=ferrograd.bfloat16, grad_fn=<MulBackward0>)"),
]  # fmt: skip


@pytest.mark.parametrize("make,want", REPRS)
def test_printing(make, want):
    assert repr(make()) == want


# ----- save / load ------------------------------------------------------------------------


def test_save_load_every_dtype(tmp_path):
    state = {name(d): torch.arange(6, dtype=d).reshape(2, 3) if d != torch.bool
             else torch.tensor([[True, False, True], [False, False, True]]) for d in ALL}  # fmt: skip
    state["bf16_odd"] = torch.tensor([0.1, -3.3e38, math.inf], dtype=torch.bfloat16)
    path = tmp_path / "all.pt"
    torch.save(state, path)
    back = torch.load(path)
    for k, t in state.items():
        assert back[k].dtype == t.dtype
        assert back[k].tolist() == t.tolist() or all(
            (math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(back[k].tolist(), t.tolist())
        )
    # The safetensors library reads the same file with the same dtypes and bytes.
    st = pytest.importorskip("safetensors.numpy")
    with open(path, "rb") as f:
        raw = f.read()
    import json
    import struct

    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    st_names = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
                "int64": "I64", "float16": "F16", "bfloat16": "BF16", "float32": "F32",
                "float64": "F64"}  # fmt: skip
    for d in ALL:
        assert header[name(d)]["dtype"] == st_names[name(d)]
    # NumPy's reader has no bfloat16: the other nine through it.
    np_only = {k: v for k, v in state.items() if v.dtype != torch.bfloat16}
    torch.save(np_only, tmp_path / "np.safetensors")
    arrays = st.load_file(str(tmp_path / "np.safetensors"))
    for k, t in np_only.items():
        np.testing.assert_array_equal(arrays[k], t.numpy())


def test_load_reads_safetensors_written_by_the_library(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    arrays = {name(d): np.arange(4).astype(NP[d]) for d in ALL if d != torch.bfloat16}
    st.save_file(arrays, str(tmp_path / "lib.safetensors"))
    back = torch.load(tmp_path / "lib.safetensors")
    for k, a in arrays.items():
        assert back[k].dtype == getattr(torch, k)
        np.testing.assert_array_equal(back[k].numpy(), a)


# ----- iinfo / finfo ------------------------------------------------------------------------


@pytest.mark.parametrize("d", INTS, ids=name)
def test_iinfo(d):
    i = torch.iinfo(d)
    n = np.iinfo(NP[d])
    assert (i.bits, i.min, i.max, i.dtype) == (n.bits, int(n.min), int(n.max), name(d))
    assert repr(i) == f"iinfo(min={n.min}, max={n.max}, dtype={name(d)})"


def test_finfo_values_recorded_from_pytorch():
    h = torch.finfo(torch.float16)
    assert (h.bits, h.eps, h.max, h.min, h.tiny, h.resolution) == (
        16, 2**-10, 65504.0, -65504.0, 2**-14, 0.001)  # fmt: skip
    assert repr(h) == (
        "finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562, "
        "smallest_normal=6.10352e-05, tiny=6.10352e-05, dtype=float16)"
    )
    b = torch.finfo(torch.bfloat16)
    assert (b.bits, b.eps, b.max, b.tiny, b.smallest_normal, b.resolution, b.dtype) == (
        16, 0.0078125, 3.3895313892515355e38, 1.1754943508222875e-38, 1.1754943508222875e-38,
        0.01, "bfloat16")  # fmt: skip
    assert repr(b) == (
        "finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, eps=0.0078125, "
        "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=bfloat16)"
    )
    assert torch.finfo(torch.float32).eps == float(np.finfo(np.float32).eps)
    with pytest.raises(TypeError, match="requires a floating point input type"):
        torch.finfo(torch.int32)
    with pytest.raises(TypeError, match="requires an integer input type"):
        torch.iinfo(torch.float16)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        torch.iinfo(torch.bool)


# ----- autograd dtype rules ------------------------------------------------------------------


@pytest.mark.parametrize("d", [torch.bool, *INTS], ids=name)
def test_only_floats_require_grad(d):
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        torch.zeros(2, dtype=d, requires_grad=True)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        torch.zeros(2, dtype=d).requires_grad_()


@pytest.mark.parametrize("d", LOW, ids=name)
def test_low_precision_autograd_keeps_node_names_and_dtype(d):
    x = torch.tensor([0.5, 1.0, 2.0], dtype=d, requires_grad=True)
    y = x.exp()
    assert y.grad_fn.name() == "ExpBackward0"
    y.sum().backward()
    assert x.grad.dtype == d
    want = np.exp(values(x).astype(np.float32))
    want = bf16_round(want) if d == torch.bfloat16 else want.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(values(x.grad).astype(np.float32), want)


def test_gradcheck_in_float64_is_unaffected():
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: (t * t).exp().sum(), (x,))

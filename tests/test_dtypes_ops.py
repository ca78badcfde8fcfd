"""A representative op of each family on every dtype it takes.

float16/bfloat16 results must equal the float32 computation rounded once
(NumPy's float32 where NumPy computes exactly what ferrograd's float32 kernel
does: +, -, *, /, sqrt, comparisons, moves; ferrograd's own float32 result
otherwise, itself checked against NumPy). Integer semantics (wrapping,
division) are PyTorch's, recorded from PyTorch 2.15.
"""


import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn.functional as F

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
    x = np.asarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    r = (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), r)


def round_to(x32, d):
    """float32 values rounded once to `d`, as float32."""
    x32 = np.asarray(x32, np.float32)
    if d == torch.bfloat16:
        return bf16_round(x32)
    if d == torch.float16:
        return x32.astype(np.float16).astype(np.float32)
    return x32


def values(t):
    t = t.detach()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def low_input(d, shape=(6, 5), seed=0, scale=3.0):
    """Random values exactly representable in `d`, as (tensor, float32 array)."""
    rng = np.random.default_rng(seed)
    x = round_to(rng.standard_normal(shape).astype(np.float32) * scale, d)
    return torch.from_numpy(x.copy()).to(d), x


def int_input(d, shape=(6, 5), seed=0):
    rng = np.random.default_rng(seed)
    info = np.iinfo(NP[d])
    lo, hi = max(info.min, -100), min(info.max, 100)
    a = rng.integers(lo, hi + 1, size=shape).astype(NP[d])
    return torch.from_numpy(a.copy()), a


def exact(t, want, d):
    assert t.dtype == d
    np.testing.assert_array_equal(values(t).astype(np.float32), np.asarray(want, np.float32))


# ----- elementwise ----------------------------------------------------------------------------


@pytest.mark.parametrize("d", LOW, ids=name)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_arithmetic_is_float32_rounded_once(d, op):
    a, xa = low_input(d, seed=1)
    b, xb = low_input(d, seed=2)
    xb = np.where(xb == 0, np.float32(1), xb)
    b = torch.from_numpy(xb.copy()).to(d)
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    exact(getattr(torch, op)(a, b), round_to(f(xa, xb), d), d)
    # Broadcast against a row, and a strided (transposed) operand.
    exact(getattr(torch, op)(a, b[0]), round_to(f(xa, xb[0]), d), d)
    exact(getattr(torch, op)(a.t(), b.t()), round_to(f(xa.T, xb.T), d), d)


@pytest.mark.parametrize("d", LOW, ids=name)
def test_python_numbers_with_low_precision(d):
    # Recorded from PyTorch 2.15: `+` rounds the number to the tensor's dtype
    # first, `*` and `/` keep it in float32.
    x = torch.tensor([1.0], dtype=d)
    if d == torch.bfloat16:
        assert (x + (0.00390625 + 1e-6)).tolist() == [1.0]
        assert (x * (1.00390625 + 1e-6)).tolist() == [1.0078125]
        assert (x / (1 / (1.00390625 + 1e-6))).tolist() == [1.0078125]
        assert (x < 1.0 + 1e-6).tolist() == [False]
    a, xa = low_input(d)
    exact(a * 0.1, round_to(xa * np.float32(0.1), d), d)
    exact(a + 0.1, round_to(xa + round_to(np.float32(0.1), d), d), d)


@pytest.mark.parametrize("d", LOW, ids=name)
@pytest.mark.parametrize("fn", ["exp", "sin", "tanh", "sigmoid", "log", "sqrt", "relu", "neg"])
def test_unary_float_ops_are_float32_rounded_once(d, fn):
    a, xa = low_input(d, seed=3)
    if fn in ("log", "sqrt"):
        xa = np.abs(xa) + np.float32(0.5)
        xa = round_to(xa, d)
        a = torch.from_numpy(xa.copy()).to(d)
    out = getattr(torch, fn)(a)
    ref32 = getattr(torch, fn)(torch.from_numpy(xa.copy()))
    exact(out, round_to(ref32.numpy(), d), d)
    np_ref = {
        "exp": np.exp, "sin": np.sin, "tanh": np.tanh, "log": np.log, "sqrt": np.sqrt,
        "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "relu": lambda v: np.maximum(v, 0),
        "neg": np.negative,
    }[fn]  # fmt: skip
    np.testing.assert_allclose(ref32.numpy(), np_ref(xa.astype(np.float64)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("d", INTS, ids=name)
def test_float_functions_of_integers_promote_to_the_default_dtype(d):
    a, xa = int_input(d)
    y = torch.exp(a.clamp(max=10) if d != torch.uint8 else a.clamp(max=10))
    assert y.dtype == torch.float32
    np.testing.assert_allclose(y.numpy(), np.exp(np.minimum(xa, 10).astype(np.float32)), rtol=2e-6)
    assert (a / 2).dtype == torch.float32


@pytest.mark.parametrize("d", [torch.bool, *INTS], ids=name)
@pytest.mark.parametrize("op", ["add", "mul", "sub"])
def test_integer_arithmetic_matches_numpy_wrapping(d, op):
    if d == torch.bool and op == "sub":
        pytest.skip("bool subtraction refuses")
    if d == torch.bool:
        a, b = torch.tensor([True, False, True]), torch.tensor([True, True, False])
        want = {"add": [True, True, True], "mul": [True, False, False]}[op]
        out = getattr(torch, op)(a, b)
        assert out.dtype == torch.bool and out.tolist() == want
        return
    rng = np.random.default_rng(5)
    info = np.iinfo(NP[d])
    xa = rng.integers(info.min, info.max, size=50, endpoint=True).astype(NP[d])
    xb = rng.integers(info.min, info.max, size=50, endpoint=True).astype(NP[d])
    f = {"add": np.add, "mul": np.multiply, "sub": np.subtract}[op]
    with np.errstate(over="ignore"):
        want = f(xa, xb)
    out = getattr(torch, op)(torch.from_numpy(xa), torch.from_numpy(xb))
    assert out.dtype == d
    np.testing.assert_array_equal(out.numpy(), want)


def test_integer_overflow_and_division_are_pytorchs():
    i8 = torch.int8
    # Recorded from PyTorch 2.15.
    assert (torch.tensor([1], dtype=i8) + 300).tolist() == [45]
    assert (torch.tensor([1], dtype=i8) + 2**40).tolist() == [1]
    assert (torch.tensor([1], dtype=i8) * 1000).tolist() == [-24]
    assert (torch.tensor([0], dtype=torch.uint8) - 1).tolist() == [255]
    assert (torch.tensor([127], dtype=i8) + torch.tensor([1], dtype=i8)).tolist() == [-128]
    assert (torch.tensor([-128], dtype=i8) // -1).tolist() == [-128]
    assert (torch.tensor([1], dtype=torch.uint8).neg()).tolist() == [255]
    assert (torch.tensor([1], dtype=i8) < 300).tolist() == [True]
    assert (torch.tensor([7], dtype=i8) / 2).tolist() == [3.5]
    assert (torch.tensor([1], dtype=torch.uint8) - torch.tensor([2], dtype=i8)).tolist() == [-1]
    assert (torch.tensor([1], dtype=torch.uint8) - torch.tensor([2], dtype=i8)).dtype == torch.int16
    # Floor division and remainder follow Python's signs, in the operands' dtype.
    a = torch.tensor([7, -7, 7, -7], dtype=torch.int32)
    b = torch.tensor([2, 2, -2, -2], dtype=torch.int32)
    assert (a // b).tolist() == [3, -4, -4, 3]
    assert (a // b).dtype == torch.int32
    assert (a % b).tolist() == [1, 1, -1, -1]
    assert torch.fmod(a, b).tolist() == [1, -1, 1, -1]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([1], dtype=torch.int16) // torch.tensor([0], dtype=torch.int16)
    assert (torch.tensor([2], dtype=i8) ** 7).tolist() == [-128]


@pytest.mark.parametrize("d", ALL, ids=name)
def test_comparisons(d):
    if d == torch.bool:
        a, xa = torch.tensor([True, False, True]), np.array([True, False, True])
        b, xb = torch.tensor([False, False, True]), np.array([False, False, True])
    elif d in INTS:
        a, xa = int_input(d, seed=1)
        b, xb = int_input(d, seed=2)
    else:
        a, xa = low_input(d, seed=1) if d in LOW else (None, None)
        b, xb = low_input(d, seed=2) if d in LOW else (None, None)
        if d not in LOW:
            xa = np.random.default_rng(1).standard_normal((6, 5)).astype(NP[d])
            xb = np.random.default_rng(2).standard_normal((6, 5)).astype(NP[d])
            a, b = torch.from_numpy(xa), torch.from_numpy(xb)
    for op, f in [("lt", np.less), ("le", np.less_equal), ("eq", np.equal), ("ne", np.not_equal),
                  ("gt", np.greater), ("ge", np.greater_equal)]:  # fmt: skip
        out = getattr(torch, op)(a, b)
        assert out.dtype == torch.bool
        np.testing.assert_array_equal(out.numpy(), f(xa, xb))
    assert torch.maximum(a, b).dtype == d
    np.testing.assert_array_equal(values(torch.maximum(a, b)), np.maximum(xa, xb))


@pytest.mark.parametrize("d", [torch.bool, *INTS], ids=name)
def test_bitwise_ops(d):
    if d == torch.bool:
        a, b = torch.tensor([True, True, False]), torch.tensor([True, False, False])
        assert (a & b).tolist() == [True, False, False]
        assert (a | b).tolist() == [True, True, False]
        assert (a ^ b).tolist() == [False, True, False]
        assert (~a).tolist() == [False, False, True]
        return
    a, xa = int_input(d, seed=1)
    b, xb = int_input(d, seed=2)
    np.testing.assert_array_equal((a & b).numpy(), xa & xb)
    np.testing.assert_array_equal((a | b).numpy(), xa | xb)
    np.testing.assert_array_equal((a ^ b).numpy(), xa ^ xb)
    np.testing.assert_array_equal((~a).numpy(), ~xa)
    np.testing.assert_array_equal(torch.bitwise_and(a, b).numpy(), xa & xb)
    assert (a & b).dtype == d


@pytest.mark.parametrize("d", FLOATS, ids=name)
def test_bitwise_ops_refuse_floats(d):
    x = torch.ones(2, dtype=d)
    s = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}[name(d)]
    with pytest.raises(RuntimeError, match=f'"bitwise_and_cpu" not implemented for \'{s}\''):
        _ = x & x
    with pytest.raises(RuntimeError, match=f'"bitwise_or_cpu" not implemented for \'{s}\''):
        _ = x | x
    with pytest.raises(RuntimeError, match=f'"bitwise_xor_cpu" not implemented for \'{s}\''):
        _ = x ^ x
    with pytest.raises(RuntimeError, match=f'"bitwise_not_cpu" not implemented for \'{s}\''):
        _ = ~x


@pytest.mark.parametrize("d", INTS, ids=name)
def test_float_only_ops_refuse_integers(d):
    x = torch.ones(2, 2, dtype=d)
    s = {"uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long"}[name(d)]
    with pytest.raises(RuntimeError, match=f"\"frac_cpu\" not implemented for '{s}'"):
        torch.frac(x)
    with pytest.raises(RuntimeError, match=f"Got: {s}"):
        x.mean()


# ----- reductions ------------------------------------------------------------------------------


@pytest.mark.parametrize("d", LOW, ids=name)
def test_reductions_accumulate_in_float32(d):
    a, xa = low_input(d, shape=(64, 33), seed=4)
    exact(a.sum(), round_to(np.float32(torch.from_numpy(xa).sum().item()), d), d)
    np.testing.assert_allclose(torch.from_numpy(xa).sum().item(), xa.astype(np.float64).sum(), rtol=1e-5)
    exact(a.sum(0), round_to(torch.from_numpy(xa).sum(0).numpy(), d), d)
    exact(a.mean(1), round_to(torch.from_numpy(xa).mean(1).numpy(), d), d)
    exact(a.amax(1), xa.max(1), d)
    exact(a.cumsum(0), round_to(torch.from_numpy(xa).cumsum(0).numpy(), d), d)
    # A long sum of ones: a bfloat16 accumulator would stop at 256.
    ones = torch.ones(1000, dtype=d)
    assert ones.sum().item() == (1000.0 if d == torch.float16 else 1000.0)


@pytest.mark.parametrize("d", [torch.bool, *INTS], ids=name)
def test_integer_sums_are_int64(d):
    if d == torch.bool:
        a, xa = torch.tensor([True, True, False]), np.array([1, 1, 0])
    else:
        a, xa = int_input(d, shape=(40,))
    s = a.sum()
    assert s.dtype == torch.int64 and s.item() == int(xa.astype(np.int64).sum())
    assert a.cumsum(0).dtype == torch.int64
    assert a.prod().dtype == torch.int64
    np.testing.assert_array_equal(a.cumsum(0).numpy(), np.cumsum(xa.astype(np.int64)))


# ----- products ---------------------------------------------------------------------------------


@pytest.mark.parametrize("d", LOW, ids=name)
def test_matmul_is_float32_rounded_once(d):
    a, xa = low_input(d, shape=(3, 7, 40), seed=6)
    b, xb = low_input(d, shape=(3, 40, 5), seed=7)
    ref32 = torch.from_numpy(xa) @ torch.from_numpy(xb)
    exact(a @ b, round_to(ref32.numpy(), d), d)
    np.testing.assert_allclose(ref32.numpy(), xa.astype(np.float64) @ xb, rtol=1e-5, atol=1e-4)
    fa, fb = torch.from_numpy(xa), torch.from_numpy(xb)
    exact(a[0] @ b[0], round_to((fa[0] @ fb[0]).numpy(), d), d)  # mm
    exact(a[0] @ b[0][:, 0], round_to((fa[0] @ fb[0][:, 0]).numpy(), d), d)  # mv
    exact(a[0][0] @ b[0][:, 0], round_to((fa[0][0] @ fb[0][:, 0]).numpy(), d), d)  # dot
    c, xc = low_input(d, shape=(5,), seed=8)
    lin = F.linear(a[0], b[0].t(), c)
    exact(lin, round_to((torch.from_numpy(xa[0]) @ torch.from_numpy(xb[0]) + torch.from_numpy(xc)).numpy(), d), d)


@pytest.mark.parametrize("d", INTS, ids=name)
def test_integer_matmul_wraps_like_numpy(d):
    a, xa = int_input(d, shape=(4, 9), seed=1)
    b, xb = int_input(d, shape=(9, 3), seed=2)
    out = a @ b
    assert out.dtype == d
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.numpy(), (xa.astype(np.int64) @ xb.astype(np.int64)).astype(NP[d]))


def test_matmul_refuses_bool():
    x = torch.ones(2, 2, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.mm(x, x)


@pytest.mark.parametrize("d", LOW, ids=name)
def test_conv2d_is_float32_rounded_once(d):
    x, xx = low_input(d, shape=(2, 3, 9, 9), seed=9, scale=1.0)
    w, xw = low_input(d, shape=(4, 3, 3, 3), seed=10, scale=1.0)
    b, xb = low_input(d, shape=(4,), seed=11, scale=1.0)
    out = F.conv2d(x, w, b, padding=1)
    ref = F.conv2d(torch.from_numpy(xx), torch.from_numpy(xw), torch.from_numpy(xb), padding=1)
    exact(out, round_to(ref.numpy(), d), d)


@pytest.mark.parametrize("d", INTS, ids=name)
def test_conv2d_refuses_integers(d):
    x = torch.ones(1, 1, 3, 3, dtype=d)
    with pytest.raises(RuntimeError, match="not implemented for"):
        F.conv2d(x, x)


# ----- moves: indexing, cat, sort --------------------------------------------------------------


@pytest.mark.parametrize("d", ALL, ids=name)
def test_indexing_cat_and_sort(d):
    if d == torch.bool:
        xa = np.array([[True, False, True], [False, False, True]])
        a = torch.from_numpy(xa.copy())
    elif d in INTS:
        a, xa = int_input(d, shape=(4, 6))
    else:
        a, xa = low_input(d, shape=(4, 6)) if d in LOW else (None, None)
        if d not in LOW:
            xa = np.random.default_rng(0).standard_normal((4, 6)).astype(NP[d])
            a = torch.from_numpy(xa.copy())
    idx = torch.tensor([2, 0, 1]) if d != torch.bool else torch.tensor([1, 0])
    sel = a.index_select(0, idx)
    assert sel.dtype == d
    np.testing.assert_array_equal(values(sel), xa[idx.numpy()])
    np.testing.assert_array_equal(values(a[idx]), xa[idx.numpy()])
    np.testing.assert_array_equal(values(a[:, 1]), xa[:, 1])
    both = torch.cat([a, a], 1)
    assert both.dtype == d
    np.testing.assert_array_equal(values(both), np.concatenate([xa, xa], 1))
    np.testing.assert_array_equal(values(torch.stack([a, a])), np.stack([xa, xa]))
    np.testing.assert_array_equal(values(a.t().contiguous()), xa.T)
    if d != torch.bool:
        s, i = a.sort(1)
        assert s.dtype == d
        np.testing.assert_array_equal(values(s), np.sort(xa, 1))
        np.testing.assert_array_equal(np.take_along_axis(xa, i.numpy(), 1), np.sort(xa, 1))
    w = torch.where(torch.from_numpy(np.ones(xa.shape, bool)), a, a)
    assert w.dtype == d
    c = a.clone()
    c[0] = a[1]
    np.testing.assert_array_equal(values(c)[0], xa[1])


# ----- autograd, optimizers -----------------------------------------------------------------------


@pytest.mark.parametrize("d", LOW, ids=name)
def test_backward_runs_in_the_low_precision_dtype(d):
    a, xa = low_input(d, shape=(5, 4), seed=12, scale=1.0)
    b, xb = low_input(d, shape=(4, 3), seed=13, scale=1.0)
    a.requires_grad_()
    b.requires_grad_()
    out = (a @ b).tanh().sum()
    assert out.dtype == d
    out.backward()
    assert a.grad.dtype == d and b.grad.dtype == d
    assert a.grad_fn is None
    # The same computation in float32, each op rounded: close to it.
    a32 = torch.from_numpy(xa.copy()).requires_grad_()
    b32 = torch.from_numpy(xb.copy()).requires_grad_()
    (a32 @ b32).tanh().sum().backward()
    tol = 2e-2 if d == torch.bfloat16 else 3e-3
    np.testing.assert_allclose(values(a.grad), a32.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("d", LOW, ids=name)
@pytest.mark.parametrize("opt", ["SGD", "Adam", "AdamW"])
def test_optimizers_keep_state_in_the_parameters_dtype(d, opt):
    p, xp = low_input(d, shape=(8,), seed=14, scale=1.0)
    p = torch.nn.Parameter(p)
    kw = {"lr": 0.1, "momentum": 0.9} if opt == "SGD" else {"lr": 0.01}
    o = getattr(torch.optim, opt)([p], **kw)
    for _ in range(3):
        o.zero_grad()
        (p * p).sum().backward()
        o.step()
    assert p.dtype == d
    for v in o.state[p].values():
        if isinstance(v, torch.Tensor) and v.numel() > 1:
            assert v.dtype == d
    # float32 reference, rounded: the update follows it closely.
    q = torch.nn.Parameter(torch.from_numpy(xp.copy()))
    o2 = getattr(torch.optim, opt)([q], **kw)
    for _ in range(3):
        o2.zero_grad()
        (q * q).sum().backward()
        o2.step()
    np.testing.assert_allclose(values(p), q.detach().numpy(), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("d", LOW, ids=name)
def test_layers_run_in_the_low_precision_dtype(d):
    torch.manual_seed(0)
    x = torch.randn(4, 3).to(d)
    layers = [
        (torch.nn.Linear(3, 2), x),
        (torch.nn.LayerNorm(3), x),
        (torch.nn.BatchNorm1d(3), x),
        (torch.nn.Conv2d(1, 2, 3), torch.randn(1, 1, 5, 5).to(d)),
        (torch.nn.LSTM(3, 4), x.unsqueeze(1)),
    ]
    for layer, inp in layers:
        layer = layer.half() if d == torch.float16 else layer.bfloat16()
        out = layer(inp)
        out = out[0] if isinstance(out, tuple) else out
        assert out.dtype == d, type(layer).__name__
        out.float().sum().backward()
        for p in layer.parameters():
            assert p.dtype == d and p.grad is not None and p.grad.dtype == d
    e = torch.nn.Embedding(5, 3).to(d)
    assert e(torch.tensor([1, 2], dtype=torch.int32)).dtype == d
    q = x[None]
    assert F.scaled_dot_product_attention(q, q, q).dtype == d
    assert F.max_pool2d(torch.randn(1, 1, 4, 4).to(d), 2).dtype == d
    assert F.cross_entropy(x, torch.tensor([0, 1, 2, 0])).dtype == d

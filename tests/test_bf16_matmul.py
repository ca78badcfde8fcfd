"""bfloat16 matrix products: ``matmul``/``@``, ``mm``, ``bmm``, ``mv``, ``dot``,
``addmm`` and ``linear``, forward and backward, on every bfloat16 product path
this CPU runs (``ferrograd.backends.cpu``: AMX tiles, AVX512_BF16, portable).

Each result must be a float32 sum of the exact products of the bfloat16
inputs, rounded once to bfloat16. The paths add in different orders, so the
float32 sum is known only up to the summation-order bound: with
``u = 2^-24`` and ``g(n) = n u / (1 - n u)``, it lies within
``g(k + ceil(k / 64) + 3) * sum_p |a_ip b_pj|`` (plus ``|bias|`` for addmm) of
the exact value (``kernels/bf16_gemm/mod.rs`` states and proves the bound for
each path). Rounding is monotonic, so the result must lie between the
bfloat16 roundings of the exact value minus and plus that bound: wherever
that interval holds a single bfloat16 value (almost everywhere), the result
is exactly the correctly rounded product. The reference is float64 NumPy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ferrograd as torch
from ferrograd.backends import cpu

PATHS = ["portable", "avx512_bf16", "amx"]


@pytest.fixture(params=PATHS)
def path(request):
    name = request.param
    if name not in cpu.bf16_matmul_paths():
        pytest.skip(f"this CPU cannot run the {name} path")
    cpu.set_bf16_matmul_path(name)
    try:
        yield name
    finally:
        cpu.set_bf16_matmul_path(None)


def round_bf16(x) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16, ties to even (finite inputs)."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32)


def bf16_values(rng, shape) -> np.ndarray:
    """Normal samples made exact bfloat16 values (as float32)."""
    return round_bf16(rng.standard_normal(shape).astype(np.float32))


def to_bf16(a: np.ndarray, requires_grad: bool = False):
    t = torch.tensor(np.ascontiguousarray(a, np.float32)).bfloat16()
    assert t.dtype == torch.bfloat16
    return t.requires_grad_(requires_grad)


def values(t) -> np.ndarray:
    assert t.dtype == torch.bfloat16
    return t.detach().float().numpy().astype(np.float64)


def gamma(k: int) -> float:
    n = k + math.ceil(k / 64) + 3
    return n * 2.0**-24 / (1 - n * 2.0**-24)


def assert_rounded_once(got, exact, magnitude, single, k: int):
    """``got`` (bfloat16) is a float32 value within the order bound of ``exact``
    (float64), rounded once. ``magnitude`` is ``sum |terms|`` per element;
    ``single`` the float32 sum in NumPy's order."""
    got, exact, magnitude, single = np.broadcast_arrays(
        np.asarray(got, np.float64), np.asarray(exact, np.float64),
        np.asarray(magnitude, np.float64), np.asarray(single, np.float32))
    bound = gamma(k) * magnitude
    # Interval ends in float32 (outward), then rounded: the widest the answer may be.
    lo = np.nextafter((exact - bound).astype(np.float32), np.float32(-np.inf))
    hi = np.nextafter((exact + bound).astype(np.float32), np.float32(np.inf))
    lo, hi = round_bf16(lo).astype(np.float64), round_bf16(hi).astype(np.float64)
    bad = ~((lo <= got) & (got <= hi))
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} elements not the rounded float32 sum, e.g. got "
        f"{got[bad][:3]} for exact {exact[bad][:3]}"
    )
    # NumPy's float32 sum rounded once is the same bfloat16 value almost everywhere
    # (the orders' float32 sums differ by a few float32 steps, rarely across a
    # bfloat16 rounding boundary): what the interval allows is rarely used.
    if got.size >= 16:
        same = got == round_bf16(single).astype(np.float64)
        assert same.mean() > 0.98, same.mean()


def product_ref(a, b):
    """Exact product (float64 is exact enough: far below the bound), sum |terms|, and
    the float32 product."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return a64 @ b64, np.abs(a64) @ np.abs(b64), a.astype(np.float32) @ b.astype(np.float32)


def plus_bias(ref, bias):
    exact, mag, single = ref
    return exact + bias, mag + np.abs(bias), single + bias.astype(np.float32)


SHAPES = [
    (0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0), (1, 1, 1), (1, 7, 1), (5, 1, 3), (2, 2, 2),
    (7, 13, 5), (17, 33, 31), (32, 32, 32), (33, 65, 47), (64, 300, 9), (130, 96, 70),
    (1, 513, 129), (129, 513, 1),
]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_mm_is_the_float32_sum_rounded_once(path, m, k, n):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a, b = bf16_values(rng, (m, k)), bf16_values(rng, (k, n))
    for out in (torch.mm(to_bf16(a), to_bf16(b)), to_bf16(a) @ to_bf16(b),
                torch.matmul(to_bf16(a), to_bf16(b)), to_bf16(a).mm(to_bf16(b))):
        assert out.dtype == torch.bfloat16 and tuple(out.shape) == (m, n)
        assert_rounded_once(values(out), *product_ref(a, b), k)
    if k == 0:
        assert (values(torch.mm(to_bf16(a), to_bf16(b))) == 0).all()


def test_a_large_product_on_the_pool(path):
    # Big enough for the parallel blocked driver, streamed stores and several k blocks.
    rng = np.random.default_rng(1)
    a, b = bf16_values(rng, (300, 1100)), bf16_values(rng, (1100, 260))
    assert_rounded_once(values(to_bf16(a) @ to_bf16(b)), *product_ref(a, b), 1100)


LAYOUTS = ["contiguous", "transposed", "strided", "expanded"]


def laid_out(x: np.ndarray, layout: str):
    """A bfloat16 tensor with the values of ``x`` in the given memory layout."""
    if layout == "contiguous":
        return to_bf16(x)
    if layout == "transposed":
        return to_bf16(x.T.copy()).t()
    if layout == "strided":
        wide = np.zeros((x.shape[0] * 2, x.shape[1] * 3), np.float32)
        wide[::2, ::3] = x
        return to_bf16(wide)[::2, ::3]
    # Every row the same: a stride-0 view.
    return to_bf16(x[:1]).expand(x.shape[0], x.shape[1])


@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_strided_and_transposed_operands(path, la, lb):
    rng = np.random.default_rng(7)
    a, b = bf16_values(rng, (37, 70)), bf16_values(rng, (70, 45))
    if la == "expanded":
        a = np.repeat(a[:1], 37, axis=0)
    if lb == "expanded":
        b = np.repeat(b[:1], 70, axis=0)
    ta, tb = laid_out(a, la), laid_out(b, lb)
    if la != "contiguous":
        assert not ta.is_contiguous()
    assert_rounded_once(values(ta @ tb), *product_ref(a, b), 70)


def test_vectors_batches_and_broadcasting(path):
    rng = np.random.default_rng(3)
    v, w = bf16_values(rng, (19,)), bf16_values(rng, (19,))
    a, b = bf16_values(rng, (5, 19)), bf16_values(rng, (19, 6))
    cases = [
        (v, w, 19),  # dot
        (a, v, 19),  # mv
        (v, b, 19),  # vector @ matrix
        (bf16_values(rng, (4, 5, 19)), bf16_values(rng, (4, 19, 6)), 19),  # bmm
        (bf16_values(rng, (4, 5, 19)), b, 19),  # batch @ matrix (folded)
        (a, bf16_values(rng, (3, 19, 6)), 19),  # matrix @ batch
        (bf16_values(rng, (2, 1, 5, 19)), bf16_values(rng, (3, 19, 6)), 19),  # broadcast batch
        (bf16_values(rng, (0, 5, 19)), bf16_values(rng, (0, 19, 6)), 19),  # empty batch
    ]
    for x, y, k in cases:
        out = to_bf16(x) @ to_bf16(y)
        ref = product_ref(x, y)
        assert out.dtype == torch.bfloat16 and tuple(out.shape) == ref[0].shape
        assert_rounded_once(values(out), *ref, k)
    out = torch.bmm(to_bf16(cases[3][0]), to_bf16(cases[3][1]))
    assert_rounded_once(values(out), *product_ref(cases[3][0], cases[3][1]), 19)
    out = torch.dot(to_bf16(v), to_bf16(w))
    assert out.dim() == 0
    assert_rounded_once(values(out), *product_ref(v, w), 19)
    out = torch.mv(to_bf16(a), to_bf16(v))
    assert_rounded_once(values(out), *product_ref(a, v), 19)


@pytest.mark.parametrize("bias_shape", [(6,), (1, 6), (5, 6), (5, 1), ()])
def test_addmm_and_linear_add_the_bias_before_the_one_rounding(path, bias_shape):
    rng = np.random.default_rng(11)
    x, w = bf16_values(rng, (5, 40)), bf16_values(rng, (6, 40))
    bias = bf16_values(rng, bias_shape)
    ref = plus_bias(product_ref(x, w.T), bias)
    got = torch.addmm(to_bf16(bias), to_bf16(x), to_bf16(w).t())
    assert got.dtype == torch.bfloat16
    assert_rounded_once(values(got), *ref, 41)
    if len(bias_shape) == 1:
        got = torch.nn.functional.linear(to_bf16(x), to_bf16(w), to_bf16(bias))
        assert_rounded_once(values(got), *ref, 41)
        # Leading dimensions fold into rows.
        x3 = bf16_values(rng, (2, 3, 40))
        got = torch.nn.functional.linear(to_bf16(x3), to_bf16(w), to_bf16(bias))
        assert_rounded_once(values(got), *plus_bias(product_ref(x3, w.T), bias), 41)
    got = torch.nn.functional.linear(to_bf16(x), to_bf16(w))
    assert_rounded_once(values(got), *product_ref(x, w.T), 40)


def test_a_linear_layer_in_bfloat16(path):
    torch.manual_seed(0)
    layer = torch.nn.Linear(24, 10).bfloat16()
    assert layer.weight.dtype == torch.bfloat16
    rng = np.random.default_rng(5)
    x = bf16_values(rng, (8, 24))
    w, b = values(layer.weight), values(layer.bias)
    got = values(layer(to_bf16(x)))
    assert_rounded_once(got, *plus_bias(product_ref(x, w.T), b), 25)


def test_nan_and_infinity_propagate(path):
    a = np.ones((4, 8), np.float32)
    b = np.ones((8, 3), np.float32)
    a[0, 2] = np.nan
    a[1, 3] = np.inf
    b[3, 1] = 0.0  # inf * 0
    got = values(to_bf16(a) @ to_bf16(b))
    assert np.isnan(got[0]).all()
    assert got[1, 0] == np.inf and np.isnan(got[1, 1]) and got[1, 2] == np.inf
    assert (got[2:] == [8, 7, 8]).all()  # column 1 has one zero
    # Beyond bfloat16's range (it has float32's exponent): infinity.
    big = np.full((1, 4), 2.0**100, np.float32)
    assert values(to_bf16(big) @ to_bf16(big.T))[0, 0] == np.inf


def test_the_paths_agree(path):
    """Each path against the portable one: equal wherever the rounding is unambiguous,
    one bfloat16 step apart at most elsewhere."""
    rng = np.random.default_rng(13)
    a, b = bf16_values(rng, (70, 530)), bf16_values(rng, (530, 90))
    got = values(to_bf16(a) @ to_bf16(b))
    cpu.set_bf16_matmul_path("portable")
    ref = values(to_bf16(a) @ to_bf16(b))
    step = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), 2.0**-126))) - 7)
    assert (np.abs(got - ref) <= step).all()
    assert (got == ref).mean() > 0.9


# ----- backward: the gradients are bfloat16 products too -------------------------------


def assert_grad(got, exact, mag, single, k):
    assert got is not None and got.dtype == torch.bfloat16
    assert_rounded_once(values(got), exact, mag, single, k)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 2), (17, 33, 9), (40, 70, 130), (0, 4, 3),
                                   (4, 0, 3)])
def test_mm_backward(path, m, k, n):
    rng = np.random.default_rng(m + 10 * k + 100 * n)
    a, b, g = bf16_values(rng, (m, k)), bf16_values(rng, (k, n)), bf16_values(rng, (m, n))
    ta, tb = to_bf16(a, True), to_bf16(b, True)
    out = ta @ tb
    assert out.requires_grad and out.grad_fn is not None
    out.backward(to_bf16(g))
    # grad_a = g @ b^T, grad_b = a^T @ g: each a bfloat16 product rounded once.
    assert_grad(ta.grad, *product_ref(g, b.T), n)
    assert_grad(tb.grad, *product_ref(a.T, g), m)
    # Against the same computation in float32 (the inputs' values widened exactly):
    # the bfloat16 gradient is the float32 one rounded, up to the order bound.
    fa, fb = to_bf16(a).float().requires_grad_(), to_bf16(b).float().requires_grad_()
    (fa @ fb).backward(to_bf16(g).float())
    for low, full, kk in ((ta.grad, fa.grad, n), (tb.grad, fb.grad, m)):
        full = full.numpy().astype(np.float64)
        step = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(full), 2.0**-126))) - 7)
        assert (np.abs(values(low) - full) <= step + gamma(kk) * np.abs(full) * 2).all()


def test_bmm_and_batched_matmul_backward(path):
    rng = np.random.default_rng(21)
    a, b, g = bf16_values(rng, (3, 6, 20)), bf16_values(rng, (3, 20, 7)), bf16_values(rng, (3, 6, 7))
    for op in (torch.bmm, torch.matmul):
        ta, tb = to_bf16(a, True), to_bf16(b, True)
        op(ta, tb).backward(to_bf16(g))
        assert_grad(ta.grad, *product_ref(g, b.transpose(0, 2, 1)), 7)
        assert_grad(tb.grad, *product_ref(a.transpose(0, 2, 1), g), 6)


def test_linear_backward(path):
    rng = np.random.default_rng(23)
    x, w, bias = bf16_values(rng, (9, 30)), bf16_values(rng, (12, 30)), bf16_values(rng, (12,))
    g = bf16_values(rng, (9, 12))
    tx, tw, tbias = to_bf16(x, True), to_bf16(w, True), to_bf16(bias, True)
    out = torch.nn.functional.linear(tx, tw, tbias)
    assert out.grad_fn.name() == "AddmmBackward0"
    out.backward(to_bf16(g))
    assert_grad(tx.grad, *product_ref(g, w), 12)  # g @ w
    assert_grad(tw.grad, *product_ref(g.T, x), 9)  # g^T @ x
    # The bias gradient is a sum over the batch, accumulated in float32, rounded once.
    assert_grad(tbias.grad, g.astype(np.float64).sum(0), np.abs(g.astype(np.float64)).sum(0),
                g.sum(0), 9)


def test_addmm_backward(path):
    rng = np.random.default_rng(29)
    c, a, b = bf16_values(rng, (4, 5)), bf16_values(rng, (4, 11)), bf16_values(rng, (11, 5))
    g = bf16_values(rng, (4, 5))
    tc, ta, tb = to_bf16(c, True), to_bf16(a, True), to_bf16(b, True)
    torch.addmm(tc, ta, tb).backward(to_bf16(g))
    assert (values(tc.grad) == g).all()
    assert_grad(ta.grad, *product_ref(g, b.T), 5)
    assert_grad(tb.grad, *product_ref(a.T, g), 4)


def test_second_order_gradients_stay_bfloat16(path):
    rng = np.random.default_rng(31)
    a, b = bf16_values(rng, (6, 8)), bf16_values(rng, (8, 5))
    ta, tb = to_bf16(a, True), to_bf16(b, True)
    (ga,) = torch.autograd.grad((ta @ tb).sum(), ta, create_graph=True)
    assert ga.dtype == torch.bfloat16 and ga.requires_grad
    (gb,) = torch.autograd.grad(ga.float().pow(2).sum(), tb)
    # d/db sum_ij (sum_q b_jq)^2 = 2 * (row sums of b) broadcast over m rows of 1s.
    rows = np.asarray(round_bf16(b.astype(np.float32).sum(1)), np.float64)
    want = 2 * 6 * np.repeat(rows[:, None], 5, axis=1)
    assert gb.dtype == torch.bfloat16
    assert np.allclose(values(gb), want, rtol=2**-7, atol=0)


# ----- the switch ----------------------------------------------------------------------


def test_the_path_switch():
    assert cpu.bf16_matmul_paths()[0] == "portable"
    assert cpu.get_bf16_matmul_path() in cpu.bf16_matmul_paths()
    with pytest.raises(ValueError, match="unknown bfloat16 matmul path 'sse'"):
        cpu.set_bf16_matmul_path("sse")
    with pytest.raises(TypeError):
        cpu.set_bf16_matmul_path(3)
    for name in PATHS:
        if name not in cpu.bf16_matmul_paths():
            with pytest.raises(RuntimeError, match="not available on this CPU"):
                cpu.set_bf16_matmul_path(name)
    before = cpu.get_bf16_matmul_path()
    cpu.set_bf16_matmul_path("portable")
    try:
        assert cpu.get_bf16_matmul_path() == "portable"
        paths = {f: p for f, (p, _) in torch._C._simd_paths().items()}
        assert paths["bf16"] == "portable" and paths["amx"] == "none"
    finally:
        cpu.set_bf16_matmul_path(None)
    assert cpu.get_bf16_matmul_path() == before
    assert cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")


def test_float16_products_still_round_once():
    # float16 stays on the float32 GEMM: widened, summed in float32, rounded once.
    rng = np.random.default_rng(37)
    a = rng.standard_normal((9, 33)).astype(np.float16)
    b = rng.standard_normal((33, 7)).astype(np.float16)
    got = (torch.from_numpy(a) @ torch.from_numpy(b))
    assert got.dtype == torch.float16
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.allclose(got.numpy().astype(np.float64), exact, rtol=2**-10, atol=2**-10 * 33)

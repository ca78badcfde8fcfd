"""Seeded sampling gives PyTorch's CPU numbers.

The reference is the published algorithm, written here in NumPy: the
Mersenne Twister stream (checked against NumPy's own MT19937) and ATen's
transforms (``DistributionsHelper.h``, ``TransformationHelper.h``,
``cpu/DistributionTemplates.h`` with the AVX2 ``normal_fill_16_AVX2`` and
``avx_mathfun.h``, ``randperm_cpu``, the multinomial kernel, ``Dropout.cpp``).
A few values printed on the web by PyTorch itself are an independent check.
"""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn.functional as F

SEEDS = [0, 1, 42, 2**40 + 7]
SIZES = [1, 5, 15, 16, 17, 33, 100]
f32 = np.float32


# ----- reference: the Mersenne Twister ---------------------------------------------------


class MT:
    """MT19937 as at::mt19937: seeded by the seed's low 32 bits (init_genrand)."""

    def __init__(self, seed):
        s = np.zeros(624, dtype=np.uint64)
        s[0] = seed & 0xFFFFFFFF
        for j in range(1, 624):
            p = int(s[j - 1])
            s[j] = (1812433253 * (p ^ (p >> 30)) + j) & 0xFFFFFFFF
        self.state = s.astype(np.uint32)
        self.buf = np.zeros(0, dtype=np.uint32)

    def _twist(self):
        mt = self.state.astype(np.uint64)
        # Rows depend on rows up to 227 back, so compute them 227 at a time.
        for lo in range(0, 624, 227):
            hi = min(lo + 227, 624)
            i = np.arange(lo, hi)
            y = (mt[i] & 0x80000000) | (mt[(i + 1) % 624] & 0x7FFFFFFF)
            mt[i] = mt[(i + 397) % 624] ^ (y >> 1) ^ np.where(y & 1, np.uint64(0x9908B0DF), np.uint64(0))
        self.state = mt.astype(np.uint32)
        y = mt.copy()
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        self.buf = np.concatenate([self.buf, (y & 0xFFFFFFFF).astype(np.uint32)])

    def u32(self, n):
        while len(self.buf) < n:
            self._twist()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out.astype(np.uint64)

    def u64(self, n):
        r = self.u32(2 * n)
        return (r[0::2] << np.uint64(32)) | r[1::2]

    def uniform_f32(self, n):
        return (self.u32(n) & 0xFFFFFF).astype(f32) * f32(2.0**-24)

    def uniform_f64(self, n):
        return (self.u64(n) & ((1 << 53) - 1)).astype(np.float64) * 2.0**-53


def test_reference_stream_is_numpys_mt19937():
    # RandomState(int) seeds with init_genrand, and a uint64 randint over
    # [0, 2**32) takes every 32-bit draw as it comes (the mask never rejects).
    for seed in (0, 5489, 12345):
        raw = np.random.RandomState(seed).randint(0, 2**32, size=1300, dtype=np.uint64)
        assert np.array_equal(MT(seed).u32(1300), raw)


# ----- reference: ATen's transforms ----------------------------------------------------------


def fma32(a, b, c):
    """f32 fused multiply-add, rounded once (the product of two floats is exact in Fraction)."""
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    near = f32(float(exact))
    cands = [np.nextafter(near, f32(-np.inf)), near, np.nextafter(near, f32(np.inf))]
    errs = [abs(Fraction(float(x)) - exact) for x in cands]
    best = min(errs)
    picks = [x for x, e in zip(cands, errs) if e == best]
    if len(picks) > 1:
        picks = [x for x in picks if int(np.array(x).view(np.uint32)) % 2 == 0]
    return f32(picks[0])


def fma64(a, b, c):
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def avx_log(x):
    bits = int(np.array(x, dtype=f32).view(np.uint32))
    e = f32((bits >> 23) - 0x7F) + f32(1)
    x = np.array((bits & ~0x7F800000) | 0x3F000000, dtype=np.uint32).view(f32)[()]
    mask = x < f32(0.707106781186547524)
    tmp = x if mask else f32(0)
    x = f32(x - f32(1))
    e = f32(e - (f32(1) if mask else f32(0)))
    x = f32(x + tmp)
    z = f32(x * x)
    y = f32(7.0376836292e-2)
    for c in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
              -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1):
        y = fma32(y, x, f32(c))
    y = f32(y * x)
    y = fma32(y, z, f32(e * f32(-2.12194440e-4)))
    y = fma32(z, f32(-0.5), y)
    x = f32(x + y)
    return fma32(e, f32(0.693359375), x)


def avx_sincos(x):
    y = f32(x * f32(1.27323954473516))
    j = (int(y) + 1) & ~1
    y = f32(j)
    for dp in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = fma32(y, f32(dp), x)
    z = f32(x * x)
    yc = fma32(f32(2.443315711809948e-5), z, f32(-1.388731625493765e-3))
    yc = fma32(yc, z, f32(4.166664568298827e-2))
    yc = fma32(f32(yc * z), z, f32(-f32(z * f32(0.5))))
    yc = f32(yc + f32(1))
    ys = fma32(f32(-1.9515295891e-4), z, f32(8.3321608736e-3))
    ys = fma32(ys, z, f32(-1.6666654611e-1))
    ys = fma32(f32(ys * z), x, x)
    s, c = (ys, yc) if j & 2 == 0 else (yc, ys)
    if j & 4:
        s = -s
    if (j - 2) & 4 == 0:
        c = -c
    return s, c


def ref_normal(mt, n, dtype, mean=0.0, std=1.0, cache=None):
    """normal_kernel: the scalar path below 16 elements, normal_fill from 16 on."""
    if n >= 16:
        u = mt.uniform_f32(n) if dtype == "float32" else mt.uniform_f64(n)
        u = list(u)
        blocks = list(range(0, n - 15, 16))
        if n % 16:
            blocks.append(None)
        for b in blocks:
            if b is None:
                b = n - 16
                u[b:] = list(mt.uniform_f32(16) if dtype == "float32" else mt.uniform_f64(16))
            d = u[b:b + 16]
            for j in range(8):
                if dtype == "float32":
                    r = np.sqrt(f32(f32(-2) * avx_log(f32(f32(1) - d[j]))))
                    s, c = avx_sincos(f32(f32(2 * math.pi) * d[j + 8]))
                    u[b + j] = fma32(f32(r * c), f32(std), f32(mean))
                    u[b + j + 8] = fma32(f32(r * s), f32(std), f32(mean))
                else:
                    r = math.sqrt(-2 * math.log(1 - d[j]))
                    th = 2 * math.pi * d[j + 8]
                    u[b + j] = fma64(r * math.cos(th), std, mean)
                    u[b + j + 8] = fma64(r * math.sin(th), std, mean)
        return np.array(u, dtype=dtype)
    cache = cache if cache is not None else []
    out = []
    for _ in range(n):
        if cache:
            out.append(fma64(cache.pop(), std, mean))
            continue
        u1, u2 = mt.uniform_f64(2)
        r = math.sqrt(-2.0 * math.log1p(-u2))
        th = 2.0 * math.pi * u1
        cache.append(r * math.sin(th))
        out.append(fma64(r * math.cos(th), std, mean))
    return np.array(out, dtype=dtype)


def same(t, ref):
    a = t.numpy()
    assert a.dtype == np.asarray(ref).dtype
    np.testing.assert_array_equal(a, ref)


# ----- the creation functions ----------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rand(seed, dtype):
    torch.manual_seed(seed)
    mt = MT(seed)
    for n in SIZES:
        ref = mt.uniform_f32(n) if dtype == "float32" else mt.uniform_f64(n)
        same(torch.rand(n, dtype=getattr(torch, dtype)), ref)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_randn_every_size(seed, dtype):
    torch.manual_seed(seed)
    mt = MT(seed)
    cache = []
    for n in SIZES:
        same(torch.randn(n, dtype=getattr(torch, dtype)), ref_normal(mt, n, dtype, cache=cache))


def test_randn_scalar_path_keeps_the_spare_sample_across_calls():
    torch.manual_seed(7)
    a = torch.cat([torch.randn(1, dtype=torch.float64), torch.randn(1, dtype=torch.float64)])
    torch.manual_seed(7)
    b = torch.randn(2, dtype=torch.float64)
    same(a, b.numpy())
    # manual_seed drops the spare, as PyTorch's set_current_seed does.
    torch.manual_seed(7)
    torch.randn(1)
    torch.manual_seed(7)
    same(torch.randn(1, dtype=torch.float64), ref_normal(MT(7), 1, "float64"))


@pytest.mark.parametrize("n", [5, 16, 40])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_and_uniform_with_parameters(n, dtype):
    dt = getattr(torch, dtype)
    torch.manual_seed(3)
    mt, spare = MT(3), []
    same(torch.zeros(n, dtype=dt).normal_(2.0, 0.5), ref_normal(mt, n, dtype, 2.0, 0.5, spare))
    same(torch.normal(-1.0, 3.0, (n,), dtype=dt), ref_normal(mt, n, dtype, -1.0, 3.0, spare))
    torch.manual_seed(3)  # drops a spare sample the scalar path leaves
    mt = MT(3)
    u = mt.uniform_f32(n) if dtype == "float32" else mt.uniform_f64(n)
    if dtype == "float32":
        lo, hi = f32(-2.5), f32(0.75)
        ref = np.array([fma32(x, f32(hi - lo), lo) for x in u], dtype=f32)
    else:
        ref = np.array([fma64(float(x), 0.75 + 2.5, -2.5) for x in u])
    same(torch.zeros(n, dtype=dt).uniform_(-2.5, 0.75), ref)


def test_normal_on_a_transposed_tensor_fills_memory_order():
    torch.manual_seed(11)
    t = torch.zeros(6, 3, dtype=torch.float64).t()
    t.normal_()
    # Not contiguous: the scalar path (even at 18 elements), in memory order.
    mt, cache = MT(11), []
    ref = np.concatenate([ref_normal(mt, 1, "float64", cache=cache) for _ in range(18)])
    same(t.t().contiguous().reshape(-1), ref)


@pytest.mark.parametrize("seed", SEEDS)
def test_randint_32_and_64_bit_draws(seed):
    torch.manual_seed(seed)
    mt = MT(seed)
    for n in SIZES:
        same(torch.randint(-3, 7, (n,)), (mt.u32(n) % 10).astype(np.int64) - 3)
    r = 2**40
    same(torch.randint(0, r, (9,)), (mt.u64(9) % r).astype(np.int64))
    same(torch.randint(5, (4,), dtype=torch.float32), (mt.u32(4) % 5).astype(f32))


def ref_randperm(mt, n):
    r = list(range(n))
    for i in range(n - 1):
        z = int(mt.u32(1)[0]) % (n - i)
        r[i], r[i + z] = r[i + z], r[i]
    return np.array(r, dtype=np.int64)


@pytest.mark.parametrize("seed", SEEDS)
def test_randperm(seed):
    torch.manual_seed(seed)
    mt = MT(seed)
    for n in [0, 1, 2, 5, 17, 100]:
        same(torch.randperm(n), ref_randperm(mt, n))
    g = torch.Generator().manual_seed(seed)
    same(torch.randperm(30, generator=g), ref_randperm(MT(seed), 30))
    g.manual_seed(seed)
    same(torch.randperm(6, dtype=torch.float64, generator=g), ref_randperm(MT(seed), 6).astype(float))


def test_randperm_errors():
    with pytest.raises(RuntimeError, match="n must be non-negative"):
        torch.randperm(-1)
    with pytest.raises(TypeError, match="must be torch.Generator"):
        torch.randperm(3, generator=5)


# ----- sampling methods, dropout, multinomial ------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bernoulli_dropout_exponential_random(dtype):
    dt = getattr(torch, dtype)
    torch.manual_seed(5)
    mt = MT(5)
    same(torch.zeros(33, dtype=dt).bernoulli_(0.3), (mt.uniform_f64(33) < 0.3).astype(dtype))
    p = np.linspace(0, 1, 17).astype(dtype)
    u = mt.uniform_f32(17) if dtype == "float32" else mt.uniform_f64(17)
    same(torch.bernoulli(torch.tensor(p)), (u < p).astype(dtype))
    x = torch.arange(1.0, 41.0, dtype=dt)
    keep = mt.uniform_f64(40) < 0.75
    scale = f32(1) / f32(0.75) if dtype == "float32" else 1 / 0.75
    same(F.dropout(x, 0.25), (np.arange(1, 41) * keep * np.array(scale)).astype(dtype))
    # math.log1p is the C library's, as in ATen (NumPy's own differs in the last bit).
    e = np.array([-1.0 / 2.0 * math.log1p(-x) for x in mt.uniform_f64(9)]).astype(dtype)
    np.testing.assert_array_equal(torch.zeros(9, dtype=dt).exponential_(2.0).numpy(), e)
    same(torch.zeros(6, dtype=dt).random_(2, 9), (mt.u32(6) % 7 + 2).astype(dtype))
    full = mt.u32(3) % (2**24 + 1) if dtype == "float32" else mt.u64(3) % (2**53 + 1)
    same(torch.zeros(3, dtype=dt).random_(), full.astype(dtype))
    same(torch.zeros(4, dtype=torch.int64).random_(), (mt.u64(4) % 2**63).astype(np.int64))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial(dtype):
    probs = np.random.RandomState(0).rand(3, 6).astype(dtype)
    torch.manual_seed(9)
    mt = MT(9)
    out = torch.multinomial(torch.tensor(probs), 10, replacement=True).numpy()
    for row, got in zip(probs, out):
        cum = np.cumsum(row, dtype=dtype) / row.sum(dtype=dtype)
        cum[-1] = 1
        u = mt.uniform_f64(10)
        assert list(got) == [int(np.searchsorted(cum.astype(np.float64), x, "left")) for x in u]
    # Without replacement: the top k of p / q with q ~ Exponential(1), drawn in double.
    q = np.array([-math.log1p(-x) for x in mt.uniform_f64(18)]).astype(dtype).reshape(3, 6)
    want = np.argsort(-(probs / q), axis=1, kind="stable")[:, :4]
    same(torch.multinomial(torch.tensor(probs), 4), want.astype(np.int64))


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        torch.multinomial(torch.zeros(3), 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(torch.ones(3), 4)
    with pytest.raises(RuntimeError, match="inf"):
        torch.multinomial(torch.tensor([1.0, -1.0]), 1)


def test_like_functions_and_generator_keyword():
    x = torch.zeros(2, 9, dtype=torch.float64)
    g = torch.Generator().manual_seed(4)
    same(torch.rand_like(x, generator=g), MT(4).uniform_f64(18).reshape(2, 9))
    same(torch.randn_like(x, generator=torch.Generator().manual_seed(4)),
         ref_normal(MT(4), 18, "float64").reshape(2, 9))
    same(torch.randint_like(x, 3, 6, generator=torch.Generator().manual_seed(4)),
         (MT(4).u32(18) % 3 + 3).astype(np.float64).reshape(2, 9))


def test_linear_default_initialisation():
    torch.manual_seed(2)
    lin = torch.nn.Linear(5, 3)
    mt = MT(2)
    wb = math.sqrt(3.0) * (math.sqrt(2.0 / (1 + math.sqrt(5) ** 2)) / math.sqrt(5))
    lo, hi = f32(-wb), f32(wb)
    w = np.array([fma32(u, f32(hi - lo), lo) for u in mt.uniform_f32(15)], dtype=f32)
    b0, b1 = f32(-1 / math.sqrt(5)), f32(1 / math.sqrt(5))
    b = np.array([fma32(u, f32(b1 - b0), b0) for u in mt.uniform_f32(3)], dtype=f32)
    same(lin.weight.detach(), w.reshape(3, 5))
    same(lin.bias.detach(), b)


def ref_kaiming_uniform(mt, n, fan_in):
    """kaiming_uniform_(a=sqrt(5)) then the bias's uniform(-1/sqrt(fan_in), ...), as
    _ConvNd.reset_parameters draws them: weight first, then bias."""
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + math.sqrt(5) ** 2)) / math.sqrt(fan_in)
    lo, hi = f32(-bound), f32(bound)
    return np.array([fma32(u, f32(hi - lo), lo) for u in mt.uniform_f32(n)], dtype=f32)


@pytest.mark.parametrize("seed", [0, 5, 2**33 + 1])
@pytest.mark.parametrize(
    "make,fan_in",
    [
        (lambda: torch.nn.Conv2d(4, 6, 3, groups=2), 2 * 3 * 3),
        (lambda: torch.nn.Conv2d(1, 16, kernel_size=3, padding=1), 9),
        (lambda: torch.nn.Conv1d(3, 2, 5), 15),
    ],
)
def test_conv_default_initialisation(seed, make, fan_in):
    torch.manual_seed(seed)
    conv = make()
    mt = MT(seed)
    w = ref_kaiming_uniform(mt, conv.weight.numel(), fan_in)
    b0, b1 = f32(-1 / math.sqrt(fan_in)), f32(1 / math.sqrt(fan_in))
    b = np.array([fma32(u, f32(b1 - b0), b0) for u in mt.uniform_f32(conv.bias.numel())], dtype=f32)
    same(conv.weight.detach(), w.reshape(tuple(conv.weight.shape)))
    same(conv.bias.detach(), b)


@pytest.mark.parametrize("seed", [0, 9])
@pytest.mark.parametrize("num,dim", [(3, 4), (5, 7)])  # 12 values: scalar path; 35: blocks
def test_embedding_default_initialisation(seed, num, dim):
    torch.manual_seed(seed)
    emb = torch.nn.Embedding(num, dim)
    same(emb.weight.detach(), ref_normal(MT(seed), num * dim, "float32").reshape(num, dim))


# ----- values PyTorch printed, as published ----------------------------------------------------


def test_published_values():
    # https://github.com/being-aerys/Deep_Learning_Marathon_with_PyTorch
    torch.manual_seed(42)
    np.testing.assert_allclose(
        torch.rand(1, 5).numpy(), [[0.8823, 0.9150, 0.3829, 0.9593, 0.3904]], atol=5e-5
    )
    # https://sprintchase.com/?p=9243
    torch.manual_seed(42)
    np.testing.assert_allclose(
        torch.randn(2, 3).numpy(),
        [[0.3367, 0.1288, 0.2345], [0.2303, -1.1229, -0.1863]],
        atol=5e-5,
    )
    # https://sprintchase.com/torch-manual_seed
    torch.manual_seed(21)
    np.testing.assert_allclose(torch.randn(3).numpy(), [0.1081, -0.4376, -0.7697], atol=5e-5)
    torch.manual_seed(123)
    np.testing.assert_allclose(
        torch.nn.Linear(4, 2).weight.detach().numpy(),
        [[-0.2039, 0.0166, -0.2483, 0.1886], [-0.4260, 0.3665, -0.3634, -0.3975]],
        atol=5e-5,
    )


# ----- generators -------------------------------------------------------------------------------


def test_generator_api():
    g = torch.Generator()
    assert g.initial_seed() == 67280421310721
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    assert str(g.device) == "cpu"
    assert torch.manual_seed(8) is torch.default_generator
    assert torch.initial_seed() == 8
    assert torch.manual_seed(-1).initial_seed() == 2**64 - 1
    with pytest.raises(RuntimeError, match="Overflow"):
        torch.manual_seed(2**64)
    s = torch.seed()
    assert torch.initial_seed() == s and 0 <= s < 2**64
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.Generator("cuda")


def test_generators_are_independent_of_the_default():
    g = torch.Generator().manual_seed(1)
    torch.manual_seed(1)
    a = torch.rand(4, generator=g)
    torch.rand(100)
    b = torch.rand(4, generator=g)
    same(torch.cat([a, b]), MT(1).uniform_f32(8))


def test_state_round_trip_and_layout():
    torch.manual_seed(13)
    torch.randn(3, dtype=torch.float64)  # leaves a spare normal sample
    state = torch.get_rng_state()
    assert state.shape == (5056,) and state.dtype == torch.uint8  # a ByteTensor, as PyTorch
    b = state.numpy().astype(np.uint8).tobytes()
    assert int.from_bytes(b[0:8], "little") == 13  # the_initial_seed
    assert int.from_bytes(b[5040:5044], "little") == 1  # normal_is_valid
    first = torch.randn(20, dtype=torch.float64)
    torch.set_rng_state(state)
    same(torch.randn(20, dtype=torch.float64), first.numpy())
    g = torch.Generator().set_state(state)
    same(torch.randn(20, dtype=torch.float64, generator=g), first.numpy())
    h = pickle.loads(pickle.dumps(torch.Generator().manual_seed(4)))
    same(torch.rand(3, generator=h), MT(4).uniform_f32(3))
    before = torch.get_rng_state().numpy()
    with pytest.raises(RuntimeError, match="size"):
        torch.set_rng_state(torch.zeros(10, dtype=torch.int64))
    with pytest.raises(TypeError):
        torch.set_rng_state(torch.zeros(5056))
    np.testing.assert_array_equal(torch.get_rng_state().numpy(), before)


def test_sampling_methods_take_a_generator():
    def g():
        return torch.Generator().manual_seed(6)

    torch.manual_seed(0)
    untouched = torch.get_rng_state().numpy()
    same(torch.zeros(5, dtype=torch.float64).bernoulli_(0.5, generator=g()),
         (MT(6).uniform_f64(5) < 0.5).astype(np.float64))
    same(torch.zeros(5, dtype=torch.int64).random_(0, 10, generator=g()),
         (MT(6).u32(5) % 10).astype(np.int64))
    e = np.array([-math.log1p(-x) for x in MT(6).uniform_f64(5)])
    same(torch.zeros(5, dtype=torch.float64).exponential_(generator=g()), e)
    p = torch.tensor([0.1, 0.2, 0.7], dtype=torch.float64)
    a = torch.multinomial(p, 5, True, generator=g())
    same(torch.multinomial(p, 5, True, generator=g()), a.numpy())
    np.testing.assert_array_equal(torch.get_rng_state().numpy(), untouched)


def test_sampling_misuse_raises_and_leaves_the_tensor():
    x = torch.ones(4)
    for bad in (lambda: x.bernoulli_(1.5), lambda: x.exponential_(-1.0),
                lambda: x.random_(5, 2), lambda: x.uniform_(2.0, 1.0),
                lambda: x.normal_(0.0, -1.0)):
        with pytest.raises(RuntimeError):
            bad()
    np.testing.assert_array_equal(x.numpy(), np.ones(4, np.float32))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.rand(2, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="from=3 >= to=3"):
        torch.randint(3, 3, (2,))


@pytest.mark.parametrize("n", [5, 20])
def test_normal_with_tensor_arguments(n):
    mean = np.arange(n) * 0.37
    std = np.arange(1, n + 1) * 0.13
    torch.manual_seed(4)
    got = torch.normal(torch.tensor(mean), 0.3)
    same(got, ref_normal(MT(4), n, "float64", 0.0, 0.3) + mean)
    torch.manual_seed(4)
    got = torch.normal(0.7, torch.tensor(std))
    same(got, ref_normal(MT(4), n, "float64") * std + 0.7)
    torch.manual_seed(4)
    got = torch.normal(torch.tensor(mean), torch.tensor(std))
    same(got, ref_normal(MT(4), n, "float64") * std + mean)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        torch.normal(torch.tensor(mean), -1.0)


def test_manual_seed_converts_like_pytorch():
    # torch.manual_seed runs int() on its argument; Generator.manual_seed does not.
    torch.manual_seed(1.7)
    assert torch.initial_seed() == 1
    torch.manual_seed("12")
    assert torch.initial_seed() == 12
    torch.manual_seed(np.int64(5))
    same(torch.rand(3), MT(5).uniform_f32(3))
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        torch.Generator().manual_seed(1.5)

"""The vectorised float32 kernels of the elementwise ops and activations: values within the
documented ulps of a float64 (SciPy/NumPy) reference over the whole float32 range, the same bits
on every instruction-set path (forced with FERROGRAD_ISA in a subprocess), NaN propagated as
PyTorch does, one-pass backward rules equal to the recorded ones, and the nodes' names."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.special as sp

import ferrograd as fg
import ferrograd.nn.functional as F


def wide_sample(per=64, seed=0):
    """Every float32 exponent (subnormals included) with `per` random mantissas, both signs,
    and the special values."""
    rng = np.random.default_rng(seed)
    e = np.repeat(np.arange(255, dtype=np.uint32), per)
    m = rng.integers(0, 1 << 23, e.size, dtype=np.uint32)
    bits = (e << 23) | m
    x = bits.view(np.float32)
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1e-45, -1e-45], np.float32
    )
    return np.concatenate([x, -x, special, rng.normal(0, 4, 20000).astype(np.float32)])


def ulp_error(got, want):
    """|got - want| in units of the float32 spacing at `want`; inf/NaN must match exactly."""
    got = got.astype(np.float64)
    w32 = want.astype(np.float32)
    err = np.zeros(got.shape)
    nan = np.isnan(want) | np.isnan(got)
    err[nan] = np.where(np.isnan(want[nan]) & np.isnan(got[nan]), 0.0, np.inf)
    inf = ~nan & (np.isinf(w32) | np.isinf(got))
    err[inf] = np.where(got[inf] == w32[inf].astype(np.float64), 0.0, np.inf)
    fin = ~nan & ~inf
    spacing = np.spacing(np.abs(w32[fin])).astype(np.float64)
    spacing = np.maximum(spacing, np.float64(np.float32(1e-45)))
    err[fin] = np.abs(got[fin] - want[fin]) / spacing
    return err


UNARY = {
    # op -> (ferrograd function, float64 reference, max ulps)
    "exp": (fg.exp, np.exp, 1),
    "expm1": (fg.expm1, np.expm1, 1),
    "exp2": (fg.exp2, np.exp2, 1),
    "log": (fg.log, np.log, 1),
    "log2": (fg.log2, np.log2, 1),
    "log10": (fg.log10, np.log10, 1),
    "log1p": (fg.log1p, np.log1p, 1),
    "sinh": (fg.sinh, np.sinh, 1),
    "cosh": (fg.cosh, np.cosh, 1),
    "tanh": (fg.tanh, np.tanh, 1),
    "asinh": (fg.asinh, np.arcsinh, 1),
    "acosh": (fg.acosh, np.arccosh, 1),
    "atanh": (fg.atanh, np.arctanh, 1),
    "atan": (fg.atan, np.arctan, 1),
    "asin": (fg.asin, np.arcsin, 1),
    "acos": (fg.acos, np.arccos, 1),
    "tan": (fg.tan, np.tan, 1),
    "sin": (fg.sin, np.sin, 1),
    "cos": (fg.cos, np.cos, 1),
    "erf": (fg.erf, sp.erf, 1),
    "erfc": (fg.erfc, sp.erfc, 1),
    "erfinv": (fg.erfinv, sp.erfinv, 2),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_float32_within_ulps_over_the_whole_range(name):
    fn, ref, bound = UNARY[name]
    x = wide_sample()
    if name in ("asin", "acos", "atanh", "erfinv"):
        x = np.concatenate([x, np.linspace(-1, 1, 200001, dtype=np.float32)])
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    got = fn(fg.tensor(x)).numpy()
    err = ulp_error(got, want)
    worst = int(np.argmax(err))
    assert err.max() <= bound, f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"
    # Signed zeros as the reference has them; erfinv(-0) is -0 in PyTorch 2.x (recorded from
    # its behaviour; SciPy gives +0), as for the other odd functions.
    zero = (want == 0) & (got == 0)
    sign = np.where(x == 0, np.signbit(x), np.signbit(want)) if name == "erfinv" else np.signbit(want)
    np.testing.assert_array_equal(np.signbit(got[zero]), sign[zero])


def test_gamma_functions_within_one_ulp():
    # lgamma, digamma and trigamma (digamma's gradient, polygamma(1, x)) in float32 against
    # SciPy's float64 over the whole range; below 0, next to the zeros there, the reflection
    # formula's subtraction leaves an absolute error of up to 2^-32 instead.
    rng = np.random.default_rng(4)
    x = np.concatenate([wide_sample(), rng.uniform(-30, 30, 200000).astype(np.float32)])
    x = x[np.isfinite(x) & ((x > 0) | (x != np.round(x)))]
    for fn, ref in (
        (fg.lgamma, sp.gammaln),
        (fg.digamma, sp.psi),
        (lambda t: fg.polygamma(1, t), lambda v: sp.polygamma(1, v)),
    ):
        with np.errstate(all="ignore"):
            want = ref(x.astype(np.float64))
        got = fn(fg.tensor(x)).numpy()
        err = ulp_error(got, want)
        ok = (err <= 1) | ((x < 0) & (np.abs(got - want) <= 2.0**-32))
        worst = int(np.argmax(np.where(ok, 0, err)))
        assert ok.all(), f"{fn}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"
    # PyTorch's values at the poles, the signed zeros and the infinities.
    s = fg.tensor([0.0, -0.0, -1.0, -7.0, -1e30, np.inf, -np.inf, np.nan])
    inf, nan = np.inf, np.nan
    np.testing.assert_array_equal(fg.lgamma(s).numpy(), [inf, inf, inf, inf, inf, inf, inf, nan])
    np.testing.assert_array_equal(
        fg.digamma(s).numpy(), [-inf, inf, nan, nan, nan, inf, nan, nan]
    )
    np.testing.assert_array_equal(
        fg.polygamma(1, s).numpy(), [inf, inf, inf, inf, inf, 0.0, inf, nan]
    )


def test_sinc_backward_against_its_closed_form():
    # d/dx sinc(x) = (cos(pi x) - sinc(x)) / x, 0 at 0; next to 0 its series, where the
    # closed form cancels.
    rng = np.random.default_rng(6)
    x0 = np.concatenate([rng.uniform(-20, 20, 20000), rng.uniform(-1e-3, 1e-3, 2000), [0.0]])
    xd = x0.astype(np.float64)
    with np.errstate(all="ignore"):
        p = np.pi * xd
        want = np.where(xd == 0, 0.0, (np.cos(p) - np.sin(p) / p) / xd)
        small = np.abs(p) < 1e-2
        want[small] = np.pi * p[small] * (-1 / 3 + p[small] ** 2 / 30)
    for dtype, tol in ((np.float32, 2e-5), (np.float64, 1e-12)):
        x = fg.tensor(x0.astype(dtype), requires_grad=True)
        (g,) = fg.autograd.grad(fg.sinc(x).sum(), x)
        # float32: pi x is rounded first (as PyTorch computes it), an absolute 2^-24 |x| in the
        # argument of cos.
        bound = tol * (1 + np.abs(xd)) if dtype == np.float32 else tol * (1 + np.abs(want))
        assert (np.abs(g.numpy() - want) <= bound).all()


def test_atan2_within_one_ulp_with_c_special_values():
    s = wide_sample(per=6)
    y, x = np.meshgrid(s[::3], s[::5])
    y, x = y.ravel(), x.ravel()
    got = fg.atan2(fg.tensor(y), fg.tensor(x)).numpy()
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    assert ulp_error(got, want).max() <= 1
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))


def test_pow_within_one_ulp_with_c_special_values():
    s = wide_sample(per=6)
    x, y = np.meshgrid(s[::3], np.concatenate([s[::5], np.arange(-9, 10, dtype=np.float32)]))
    x, y = x.ravel(), y.ravel()
    got = fg.pow(fg.tensor(x), fg.tensor(y)).numpy()
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
    # x ** 3 is x * x * x (two roundings), as PyTorch's number exponent 3 is.
    bound = np.where(y == 3, 1.5, 1.0)
    err = ulp_error(got, want)
    worst = int(np.argmax(err - bound))
    assert (err <= bound).all(), f"pow({x[worst]!r}, {y[worst]!r}) = {got[worst]!r}"
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
    # A number exponent takes the same path (or the exact forms for 2, 0.5 and -0.5).
    for e in (2.5, -1.0, 3.0, -7.0, 0.0, 1e-3):
        with np.errstate(all="ignore"):
            want = np.power(s.astype(np.float64), e)
        got = (fg.tensor(s) ** e).numpy()
        assert ulp_error(got, want).max() <= (1.5 if e == 3.0 else 1.0), e


def test_float64_pow_within_one_ulp_of_the_c_library():
    # float64 pow (and float_power, which computes in it) runs in vector lanes: equal to the C
    # library's pow (NumPy's) or one ulp away, over every exponent range, subnormals and the
    # special values, with the signs of zeros and infinities.
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 0x7FF0_0000_0000_0000, 4000, dtype=np.int64)
    s = np.concatenate([bits.view(np.float64), -bits.view(np.float64)[:1000],
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.0, 5e-324, 2.0 ** 53 + 2]])
    x, y = np.meshgrid(s[::7], np.concatenate([s[::9], np.arange(-9, 10.0), rng.normal(0, 30, 200)]))
    x, y = x.ravel(), y.ravel()
    near = rng.uniform(0.25, 4.0, 20000)
    x = np.concatenate([x, near])
    y = np.concatenate([y, rng.uniform(-600, 600, near.size)])
    got = fg.pow(fg.tensor(x), fg.tensor(y)).numpy()
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    fin = ~same & np.isfinite(want) & np.isfinite(got)
    assert (same | fin).all(), (x[~(same | fin)][:5], y[~(same | fin)][:5])
    spacing = np.spacing(np.abs(want[fin]))
    # Results below the normal range are rounded twice.
    bound = np.where(np.abs(want[fin]) < np.finfo(np.float64).tiny, 2.0, 1.0)
    assert (np.abs(got[fin] - want[fin]) <= bound * spacing).all()
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
    f32 = near.astype(np.float32)
    np.testing.assert_array_equal(fg.float_power(fg.tensor(f32), fg.tensor(f32)).numpy(),
                                  fg.pow(fg.tensor(f32.astype(np.float64)),
                                         fg.tensor(f32.astype(np.float64))).numpy())


def test_rounding_is_exact():
    x = np.concatenate([wide_sample(per=16), np.arange(-8, 8, 0.25, dtype=np.float32)])
    t = fg.tensor(x)
    for fn, ref in [
        (fg.round, np.round),  # half to even, as NumPy
        (fg.floor, np.floor),
        (fg.ceil, np.ceil),
        (fg.trunc, np.trunc),
    ]:
        np.testing.assert_array_equal(fn(t).numpy(), ref(x))


# The activations and clamps whose NaN PyTorch propagates (the value PyTorch 2.x gives for a
# NaN input, recorded from its behaviour: NaN for every one of these).
NAN_OPS = {
    "relu": F.relu,
    "relu6": F.relu6,
    "hardtanh": F.hardtanh,
    "leaky_relu": F.leaky_relu,
    "elu": F.elu,
    "selu": F.selu,
    "celu": F.celu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "softplus": F.softplus,
    "mish": F.mish,
    "logsigmoid": F.logsigmoid,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "hardshrink": F.hardshrink,
    "softshrink": F.softshrink,
    "threshold": lambda x: F.threshold(x, 0.1, 5.0),
    "clamp": lambda x: x.clamp(-1.0, 1.0),
    "clamp_min": lambda x: x.clamp(min=0.0),
}


@pytest.mark.parametrize("name", sorted(NAN_OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_nan_propagates(name, dtype):
    x = fg.tensor([np.nan, -np.nan, 1.5, -2.0], dtype=getattr(fg, dtype))
    out = NAN_OPS[name](x).float().numpy()
    assert np.isnan(out[:2]).all() and np.isfinite(out[2:]).all()


# One-pass backward (no create_graph) against the recorded rule (create_graph=True).
GRAD_OPS = {
    **{k: v for k, v in NAN_OPS.items() if k not in ("relu",)},
    **{k: v[0] for k, v in UNARY.items()},
    "lgamma": fg.lgamma,
    "digamma": fg.digamma,
    "elu_inplace_rule": lambda x: F.elu(x * 1.0, inplace=True),
    "leaky_inplace_rule": lambda x: F.leaky_relu(x * 1.0, 0.2, inplace=True),
}
DOMAIN = {"acosh": (1.01, 6), "asin": (-0.99, 0.99), "acos": (-0.99, 0.99),
          "atanh": (-0.99, 0.99), "erfinv": (-0.99, 0.99), "log": (0.01, 6),
          "log2": (0.01, 6), "log10": (0.01, 6), "log1p": (-0.99, 6)}


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_backward_equals_the_recorded_rule(name, dtype):
    lo, hi = DOMAIN.get(name, (-6, 6))
    x0 = np.random.default_rng(1).uniform(lo, hi, 3000).astype(dtype)
    grads = []
    for create_graph in (False, True):
        x = fg.tensor(x0, requires_grad=True)
        y = GRAD_OPS[name](x)
        g = fg.tensor(np.linspace(-2, 2, x0.size).astype(dtype))
        (gx,) = fg.autograd.grad(y, x, g, create_graph=create_graph)
        grads.append(gx.detach().numpy())
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(grads[0], grads[1], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_fused_backward_equals_the_recorded_rule(dtype):
    # PowBackward1's one-pass forms (both gradients) against the recorded rule, bit for bit,
    # with the masked points: a zero base with exponents >= 0 and < 0, exponent 0 with a zero or
    # NaN base, and a broadcast exponent.
    rng = np.random.default_rng(4)
    a0 = np.concatenate([rng.uniform(0.1, 3, 2000), [0.0, 0.0, 0.0, -0.0, np.nan, 0.0, 2.0]])
    b0 = np.concatenate([rng.uniform(-3, 3, 2000), [2.0, 0.0, -1.5, 3.0, 0.0, np.nan, 0.0]])
    g0 = np.linspace(-2, 2, a0.size)
    for b_shape in (b0, b0[:1]):
        grads = []
        for create_graph in (False, True):
            a = fg.tensor(a0.astype(dtype), requires_grad=True)
            b = fg.tensor(b_shape.astype(dtype), requires_grad=True)
            out = fg.float_power(a, b) if dtype == "float64" else fg.pow(a, b)
            ga, gb = fg.autograd.grad(out, (a, b), fg.tensor(g0.astype(dtype)),
                                      create_graph=create_graph)
            grads.append((ga.detach().numpy(), gb.detach().numpy()))
        for fused, recorded in zip(*grads):
            np.testing.assert_array_equal(fused, recorded)


@pytest.mark.parametrize("name", sorted(NAN_OPS))
def test_low_precision_matches_float32(name):
    x = np.random.default_rng(2).uniform(-6, 6, 1000).astype(np.float32)
    want = NAN_OPS[name](fg.tensor(x)).numpy()
    for dt in (fg.float16, fg.bfloat16):
        xt = fg.tensor(x).to(dt)
        got = NAN_OPS[name](xt)
        assert got.dtype == dt
        ref = NAN_OPS[name](xt.float()).to(dt).float().numpy()
        # One rounding of the float32 result (the input rounded first).
        np.testing.assert_array_equal(got.float().numpy(), ref)
    assert want.dtype == np.float32


@pytest.mark.parametrize(
    "fn, name",
    [
        (F.mish, "MishBackward0"),
        (F.logsigmoid, "LogSigmoidBackward0"),
        (F.hardswish, "HardswishBackward0"),
        (F.hardsigmoid, "HardsigmoidBackward0"),
        (F.hardshrink, "HardshrinkBackward0"),
        (F.softshrink, "SoftshrinkBackward0"),
        (F.softsign, "SoftsignBackward0"),
        (lambda x: F.threshold(x, 0.1, 2.0), "ThresholdBackward0"),
        (F.selu, "EluBackward0"),
        (F.celu, "EluBackward0"),
    ],
)
def test_node_names(fn, name):
    # PyTorch's names for these nodes.
    assert fn(fg.randn(3, requires_grad=True)).grad_fn.name() == name


_SCRIPT = r"""
import json, sys, numpy as np, ferrograd as fg, ferrograd.nn.functional as F
rng = np.random.default_rng(3)
x = np.concatenate([rng.normal(0, 5, 5000), rng.uniform(-1, 1, 5000)]).astype(np.float32)
x[::97] = np.nan
t = fg.tensor(x)
ops = {
    "expm1": fg.expm1, "log1p": lambda t: fg.log1p(t.abs()), "erf": fg.erf, "erfc": fg.erfc,
    "erfinv": lambda t: fg.erfinv(t.clamp(-1, 1)), "atan": fg.atan, "asin": fg.asin,
    "tan": fg.tan, "sinh": fg.sinh, "atan2": lambda t: fg.atan2(t, t.flip(0)),
    "gelu": F.gelu, "mish": F.mish, "elu": F.elu, "softplus": F.softplus,
    "round": fg.round, "clamp": lambda t: t.clamp(-1, 1), "log": lambda t: fg.log(t.abs()),
    "log2": fg.log2, "log10": fg.log10, "exp2": fg.exp2, "tanh": fg.tanh,
    "sin": fg.sin, "cos": fg.cos, "pow": lambda t: fg.pow(t.abs(), t.flip(0)),
    "pow_int": lambda t: fg.pow(t, t.flip(0).round()), "pow_number": lambda t: t ** -2.5,
    "lgamma": fg.lgamma, "digamma": fg.digamma, "trigamma": lambda t: fg.polygamma(1, t),
}
# Transposing copies (kernels/transpose.rs on AVX2 and up), four- and eight-byte.
ops["t_copy"] = lambda t: t.reshape(80, 125).t().contiguous().flatten()
ops["permute_copy"] = lambda t: t.reshape(10, 10, 100).permute(2, 0, 1).contiguous().flatten()
ops["t_copy64"] = lambda t: t.double().reshape(100, 100).t().contiguous().flatten()
out = {k: f(t).numpy().view(np.uint32).tolist() for k, f in ops.items()}
print(json.dumps(out))
"""


def _run_with_isa(isa):
    env = dict(os.environ, FERROGRAD_ISA=isa)
    r = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(r.stdout)


def test_every_instruction_set_gives_the_same_bits():
    wide = _run_with_isa("avx512")
    for isa in ("avx2", "portable"):
        other = _run_with_isa(isa)
        for k in wide:
            assert wide[k] == other[k], f"{k} differs on {isa}"


# ----- float64 -------------------------------------------------------------------------------


def ulp_error64(got, want):
    """|got - want| in units of the float64 spacing at `want`; inf/NaN must match exactly."""
    err = np.zeros(got.shape)
    nan = np.isnan(want) | np.isnan(got)
    err[nan] = np.where(np.isnan(want[nan]) & np.isnan(got[nan]), 0.0, np.inf)
    inf = ~nan & (np.isinf(want) | np.isinf(got))
    err[inf] = np.where(got[inf] == want[inf], 0.0, np.inf)
    fin = ~nan & ~inf
    spacing = np.maximum(np.spacing(np.abs(want[fin])), np.float64(5e-324))
    err[fin] = np.abs(got[fin] - want[fin]) / spacing
    return err


# float64 keeps the C library's functions (and ferrograd's own erfinv); the bound is what they
# reach against NumPy/SciPy's float64 functions, which are themselves within an ulp or so. The
# `libm` crate's erfc is within 3 ulps up to x = 10 and drifts to about 110 in the far tail
# (results below 1e-44), where it is still accurate to 1e-14 relative.
F64_BOUND = {"erf": 3, "erfinv": 3, "tanh": 3, "erfc": 128}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_float64_within_ulps(name):
    fn, ref, _ = UNARY[name]
    rng = np.random.default_rng(5)
    x = np.concatenate([wide_sample(per=16).astype(np.float64), rng.normal(0, 4, 20000)])
    if name in ("asin", "acos", "atanh", "erfinv"):
        x = np.concatenate([x, rng.uniform(-1, 1, 20000)])
    with np.errstate(all="ignore"):
        want = ref(x)
    got = fn(fg.tensor(x)).numpy()
    assert got.dtype == np.float64
    err = ulp_error64(got, want)
    worst = int(np.argmax(err))
    bound = F64_BOUND.get(name, 2)
    assert err.max() <= bound, f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"


# ----- the activation family, enumerated from the registry -------------------------------------


def _activations():
    """The single-input elementwise activations the registry declares, with the extra
    arguments of their sample and their NumPy reference."""
    from ferrograd._registry import nn_ops, schema

    out = {}
    for op in nn_ops.OPS:
        s = op.sample
        if op.family != "activation" or op.batching != schema.EW or s is None or s.kind != "ew":
            continue
        tensors = [a for a in s.args if isinstance(a, schema.T)]
        if len(tensors) != 1:
            continue
        extra = tuple(a for a in s.args if not isinstance(a, schema.T))
        out[op.name] = (getattr(F, op.name), op.ref, extra, dict(s.kwargs))
    return out


ACTIVATIONS = _activations()

# float32 error bounds in ulps. Where the function is a product `x * f(x)` whose `f` loses its
# relative precision (gelu's `1 + erf` below 0, as PyTorch computes it too), the ulp is taken
# at max(|result|, |x|) instead: the error is then a few ulps of the input.
ACT_BOUND = {
    "gelu": (3, True),
    "mish": (6, False),
    "softplus": (2, False),
    "logsigmoid": (2, False),
    "elu": (2, False),
    "selu": (2, False),
    "celu": (2, False),
    "hardswish": (2, False),
    "hardsigmoid": (1, False),
    "softsign": (2, False),
    "tanhshrink": (4, True),  # x - tanh(x) cancels near 0 (in PyTorch too)
}

# Results this small come from float32 intermediates that are subnormal (mish's softplus of
# x < -88, as PyTorch computes it too): compared above the normal range only.
NORMAL_ONLY = {"mish"}


def test_the_activation_family_is_enumerated():
    # Guard against an empty or shrunken enumeration.
    for name in ("leaky_relu", "elu", "gelu", "mish", "softplus", "logsigmoid", "hardtanh",
                 "hardswish", "softshrink", "threshold", "relu6", "selu", "celu"):
        assert name in ACTIVATIONS


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_float32_within_ulps(name):
    fn, ref, extra, kwargs = ACTIVATIONS[name]
    rng = np.random.default_rng(6)
    wide = wide_sample(per=16)
    x = np.concatenate([wide[np.abs(wide) < 1e6], rng.uniform(-25, 25, 50000).astype(np.float32)])
    with np.errstate(all="ignore"):
        want = np.asarray(ref(x.astype(np.float64), *extra, **kwargs), np.float64)
    got = fn(fg.tensor(x), *extra, **kwargs).numpy()
    bound, by_input = ACT_BOUND.get(name, (1, False))
    err = ulp_error(got, want)  # NaN and infinities exactly
    fin = np.isfinite(want)
    if name in NORMAL_ONLY:
        err[np.abs(want) < np.finfo(np.float32).tiny] = 0.0
        fin &= np.abs(want) >= np.finfo(np.float32).tiny
    scale = np.maximum(np.abs(want), np.abs(x)) if by_input else np.abs(want)
    spacing = np.spacing(scale[fin].astype(np.float32)).astype(np.float64)
    spacing = np.maximum(spacing, np.float64(np.float32(1e-45)))
    err[fin] = np.abs(got[fin].astype(np.float64) - want[fin]) / spacing
    worst = int(np.argmax(err))
    assert err.max() <= bound, f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_float64_matches_reference(name):
    fn, ref, extra, kwargs = ACTIVATIONS[name]
    x = np.random.default_rng(7).uniform(-25, 25, 20000)
    want = np.asarray(ref(x, *extra, **kwargs), np.float64)
    got = fn(fg.tensor(x), *extra, **kwargs).numpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_clamp_with_a_nan_bound_is_nan():
    # PyTorch 2.x: torch.clamp(torch.tensor([1., -2., nan]), min=nan) is all NaN (recorded).
    x = fg.tensor([1.0, -2.0, np.nan])
    assert np.isnan(x.clamp(min=float("nan")).numpy()).all()
    assert np.isnan(x.clamp(max=float("nan")).numpy()).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clamp_fused_backward_equals_the_recorded_rule(dtype):
    x0 = np.random.default_rng(8).uniform(-3, 3, 3000).astype(dtype)
    # PyTorch 2.15 (recorded): with number bounds the gradient passes strictly inside them,
    # so the bounds themselves and a NaN get 0.
    x0[:3] = [-1.0, 1.0, np.nan]
    grads = []
    for create_graph in (False, True):
        x = fg.tensor(x0, requires_grad=True)
        (gx,) = fg.autograd.grad(x.clamp(-1.0, 1.0), x, fg.ones_like(x), create_graph=create_graph)
        grads.append(gx.detach().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert list(grads[0][:3]) == [0.0, 0.0, 0.0]


def test_relu_keeps_nan_and_negative_zero():
    # PyTorch 2.x (recorded): relu([-0., nan, 1.]) = [-0., nan, 1.], and the gradient of a
    # sum is [0., 1., 1.] (it passes wherever the result is not <= 0).
    for create_graph in (False, True):
        x = fg.tensor([-0.0, np.nan, 1.0], requires_grad=True)
        y = F.relu(x)
        out = y.detach().numpy()
        assert np.signbit(out[0]) and out[0] == 0 and np.isnan(out[1]) and out[2] == 1
        (gx,) = fg.autograd.grad(y, x, fg.ones_like(y), create_graph=create_graph)
        assert gx.detach().numpy().tolist() == [0.0, 1.0, 1.0]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(1, 1), (3, 130), (70, 45), (64, 64), (129, 300), (300, 1030)])
def test_transposed_operands_are_tiled_correctly(shape, threads):
    # Operands that run down the output's columns (transposed matrices, a
    # column broadcast along rows) take a tiled traversal: every element,
    # every tile edge, integer, float and bool results, either thread count.
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(-50, 50, shape[::-1])
    b = rng.integers(-50, 50, shape[::-1])
    col = rng.integers(-50, 50, (shape[0], 1))
    before = fg.get_num_threads()
    fg.set_num_threads(threads)
    try:
        ta, tb = fg.tensor(a).t(), fg.tensor(b).t()
        assert (ta & tb).tolist() == (a.T & b.T).tolist()
        assert (~ta).tolist() == (~a.T).tolist()
        assert fg.neg(ta.float()).numpy().tolist() == (-a.T.astype(np.float32)).tolist()
        fa, fb = fg.tensor(a.astype(np.float32)).t(), fg.tensor(b.astype(np.float32)).t()
        np.testing.assert_array_equal(fg.exp(fa / 50).numpy(),
                                      fg.exp(fg.tensor((a.T / 50).astype(np.float32))).numpy())
        np.testing.assert_array_equal((fa * fb).numpy(), a.T.astype(np.float32) * b.T)
        assert (fa < fb).numpy().tolist() == (a.T < b.T).tolist()
        # A column of `col` broadcast along the rows, against a transposed matrix.
        tc = fg.tensor(col).expand(*shape)
        assert (ta ^ tc).tolist() == (a.T ^ col).tolist()
    finally:
        fg.set_num_threads(before)


def _unary_ops():
    from ferrograd import _registry

    return [o for o in _registry.ops() if o.family in ("unary", "activation")]


@pytest.mark.parametrize("op", _unary_ops(), ids=lambda o: o.name)
def test_a_permuted_input_gives_the_contiguous_bits(op):
    # Every unary op and activation on a permuted (dense, not row-major) input: the same
    # values, bit for bit, as on its contiguous copy; the op may run over memory in order.
    from ferrograd.testing._realize import entry_point

    fn = entry_point(fg, op)
    rng = np.random.default_rng(0)
    base = (rng.random((3, 4, 5)) * 0.8 + 0.1).astype(np.float32)  # inside every domain
    x = fg.tensor(base).permute(2, 0, 1)
    try:
        want = fn(x.contiguous())
    except (TypeError, RuntimeError):
        pytest.skip(f"{op.name} takes more than one tensor")
    got = fn(x)
    if not isinstance(want, fg.Tensor):
        pytest.skip(f"{op.name} does not return a tensor")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", ["exp", "log", "sin", "cos", "tan", "sqrt", "erf", "sigmoid"])
def test_unary_results_keep_a_dense_input_layout(name):
    # PyTorch's elementwise results follow a dense input's strides; the work is the
    # contiguous loop over memory.
    a = np.linspace(0.1, 0.9, 60, dtype=np.float32).reshape(3, 4, 5)
    x = fg.tensor(a, requires_grad=True)
    y = getattr(fg, name)(x.permute(2, 0, 1))
    assert y.stride() == x.permute(2, 0, 1).stride()
    want = getattr(fg, name)(x).permute(2, 0, 1)
    np.testing.assert_array_equal(y.detach().numpy(), want.detach().numpy())
    y.sum().backward()
    assert x.grad.shape == x.shape
    # A strided slice (not dense) comes back row-major.
    assert getattr(fg, name)(x.detach()[:, ::2]).is_contiguous()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softsign_rounds_as_its_composition(dtype):
    # One pass that rounds where x / (|x| + 1) does: bit for bit, also for
    # huge, tiny, signed-zero, infinite and NaN inputs, contiguous or not.
    rng = np.random.default_rng(7)
    x = np.concatenate([
        rng.standard_normal(5000) * 10.0 ** rng.integers(-30, 30, 5000),
        [0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(dtype).max, np.finfo(dtype).tiny / 8],
    ]).astype(dtype)
    want = x / (np.abs(x) + dtype(1))
    got = F.softsign(fg.from_numpy(x)).numpy()
    np.testing.assert_array_equal(got.view(f"u{x.itemsize}"), want.view(f"u{x.itemsize}"))
    m = x[:5000].reshape(50, 100)
    got_t = F.softsign(fg.from_numpy(m).t()).numpy()
    np.testing.assert_array_equal(got_t, (m / (np.abs(m) + dtype(1))).T)


def test_softsign_other_dtypes_and_gradient():
    # Integers divide to float; half precision rounds after each step.
    i = fg.tensor([-3, 0, 4])
    assert F.softsign(i).dtype == fg.float32
    np.testing.assert_array_equal(F.softsign(i).numpy(), np.float32([-3, 0, 4]) / np.float32([4, 1, 5]))
    h = fg.tensor([0.1, -2.7, 300.0], dtype=fg.float16)
    hn = h.numpy()
    np.testing.assert_array_equal(F.softsign(h).numpy(), hn / (np.abs(hn) + np.float16(1)))
    # The gradient 1 / (1 + |x|)^2, finite for huge |x|, against finite
    # differences in float64 to second order.
    x = fg.tensor([-1e30, -3.0, -0.5, 0.25, 2.0, 1e300], dtype=fg.float64, requires_grad=True)
    (g,) = fg.autograd.grad(F.softsign(x).sum(), x, create_graph=True)
    xn = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), 1 / (1 + np.abs(xn)) ** 2, rtol=1e-15, atol=0)
    (gg,) = fg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), -2 * np.sign(xn) / (1 + np.abs(xn)) ** 3, rtol=1e-14, atol=0)
    xs = fg.tensor([-1.3, 0.4, 2.2], dtype=fg.float64, requires_grad=True)
    assert fg.autograd.gradcheck(F.softsign, (xs,))
    assert fg.autograd.gradgradcheck(F.softsign, (xs,))

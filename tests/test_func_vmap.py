"""``ferrograd.func.vmap``: every batching-rule category against a Python loop
over the samples, on hypothesis-drawn shapes, ``in_dims`` and ``out_dims``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.func import BatchedTensor, vmap


def shapes(min_dims=0, max_dims=3):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=4)


def rand(*shape, dtype=fg.float64):
    return fg.randn(*shape, dtype=dtype)


def loop(f, args, in_dims, out_dims=0):
    """The reference: ``f`` once per sample, stacked at ``out_dims``."""
    if not isinstance(in_dims, tuple):
        in_dims = (in_dims,) * len(args)
    size = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    outs = [
        f(*[a if d is None else a.select(d, i) for a, d in zip(args, in_dims)]) for i in range(size)
    ]
    if isinstance(outs[0], tuple):
        od = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(outs[0])
        return tuple(fg.stack([o[k] for o in outs], od[k]) for k in range(len(outs[0])))
    return fg.stack(outs, out_dims)


def close(a, b, tol=1e-9):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y, tol)
        return
    assert isinstance(a, fg.Tensor), type(a)
    assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


def check(f, args, in_dims=0, out_dims=0, tol=1e-9):
    close(vmap(f, in_dims, out_dims)(*args), loop(f, args, in_dims, out_dims), tol)


@st.composite
def batched(draw, min_dims=0, max_dims=3, shape=None):
    """(tensor, in_dim, batch size 3) with the batch dimension at a drawn place."""
    shape = shape if shape is not None else draw(shapes(min_dims, max_dims))
    d = draw(st.integers(0, len(shape)))
    full = list(shape)
    full.insert(d, 3)
    neg = draw(st.booleans())
    return rand(*full), (d - len(full) if neg else d)


# ----- elementwise ------------------------------------------------------------------------

UNARY = [
    fg.exp, fg.sin, fg.tanh, fg.sigmoid, fg.relu, fg.abs, fg.neg, fg.square, fg.cos,
    lambda x: fg.sqrt(x.abs() + 1), lambda x: fg.log(x.abs() + 1), lambda x: x.clamp(-0.5, 0.5),
    lambda x: -x, lambda x: x ** 2, lambda x: 2.0 / (x.abs() + 1), F.relu, F.gelu, F.silu,
    lambda x: F.leaky_relu(x, 0.1), F.softplus, F.elu, lambda x: x.pow(3),
]  # fmt: skip


@pytest.mark.parametrize("op", UNARY)
@given(data=batched())
@settings(max_examples=8)
def test_unary(op, data):
    x, d = data
    check(op, (x,), d)


BINARY = [
    fg.add, fg.sub, fg.mul, fg.div, fg.maximum, fg.minimum, fg.eq, fg.lt, fg.ge,
    lambda a, b: a + b, lambda a, b: a * b - b, lambda a, b: a / (b.abs() + 1),
    lambda a, b: fg.where(a > b, a, b), lambda a, b: fg.pow(a.abs() + 1, b),
    lambda a, b: fg.add(a, b, alpha=2), lambda a, b: a.mul(b),
]  # fmt: skip


@pytest.mark.parametrize("op", BINARY)
@given(data=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       which=st.sampled_from(["both", "first", "second"]), dims=st.tuples(st.integers(0, 3), st.integers(0, 3)))  # fmt: skip
@settings(max_examples=8)
def test_binary(op, data, which, dims):
    sa, sb = data.input_shapes
    da, db = min(dims[0], len(sa)), min(dims[1], len(sb))
    a = rand(*sa[:da], 3, *sa[da:]) if which != "second" else rand(*sa)
    b = rand(*sb[:db], 3, *sb[db:]) if which != "first" else rand(*sb)
    in_dims = (da if which != "second" else None, db if which != "first" else None)
    check(op, (a, b), in_dims)


def test_scalars_and_numbers():
    x = rand(4, 3)
    check(lambda t: 3 - t * 2 + 1, (x,), 0)
    check(lambda t: 1 / (t.abs() + 1), (x,), 1)
    check(lambda t: fg.mul(2, t), (x,), 0)


# ----- reductions and dimension-taking ops ------------------------------------------------

REDUCE = ["sum", "mean", "amax", "amin", "prod", "var", "std", "argmax", "argmin", "logsumexp"]


@pytest.mark.parametrize("name", REDUCE)
@given(data=batched(min_dims=1), dimpick=st.integers(-3, 2), keep=st.booleans(), none=st.booleans())
@settings(max_examples=8)
def test_reductions(name, data, dimpick, keep, none):
    x, d = data
    nd = x.dim() - 1
    dim = dimpick % nd - (nd if dimpick < 0 else 0)
    if none and name != "logsumexp":
        check(lambda t: getattr(t, name)(), (x,), d)
        return
    check(lambda t: getattr(t, name)(dim, keepdim=keep), (x,), d)


@given(data=batched(min_dims=1), dimpick=st.integers(-3, 2))
@settings(max_examples=10)
def test_dim_ops(data, dimpick):
    x, d = data
    nd = x.dim() - 1
    dim = dimpick % nd - (nd if dimpick < 0 else 0)
    check(lambda t: t.softmax(dim), (x,), d)
    check(lambda t: F.log_softmax(t, dim), (x,), d)
    check(lambda t: t.cumsum(dim), (x,), d)
    check(lambda t: t.max(dim), (x,), d)
    check(lambda t: t.min(dim, keepdim=True), (x,), d)
    check(lambda t: t.flip(dim), (x,), d)
    check(lambda t: t.narrow(dim, 0, 1), (x,), d)
    check(lambda t: t.select(dim, 0), (x,), d)
    check(lambda t: t.sort(dim), (x,), d)
    check(lambda t: fg.sum(t, dim), (x,), d)
    check(lambda t: fg.cat(t.split(1, dim), dim), (x,), d)
    check(lambda t: t.chunk(2, dim)[0], (x,), d)
    check(lambda t: fg.stack(t.unbind(dim), 0), (x,), d)


def test_reduce_everything_with_keepdim():
    x = rand(3, 2, 4)
    close(vmap(lambda t: t.sum(None, True))(x), x.sum((1, 2), keepdim=True))
    close(vmap(lambda t: t.amax(dim=None, keepdim=True))(x), x.amax((1, 2), keepdim=True))
    close(vmap(lambda t: t.max())(x), x.amax((1, 2)))


def test_full_reductions_of_module_functions():
    x = rand(3, 2, 2)
    check(lambda t: fg.trace(t), (x,), 0)
    check(lambda t: fg.all(t > -10), (x,), 0)
    check(lambda t: fg.any(t > 0.5), (x,), 1)
    check(lambda t: fg.mean(t), (x,), 2)
    check(lambda t: t.sum(), (x,), 0)


# ----- shape and view ops -----------------------------------------------------------------


@given(data=batched(min_dims=2, max_dims=3), perm_seed=st.integers(0, 100))
@settings(max_examples=12)
def test_shape_ops(data, perm_seed):
    x, d = data
    shape = list(x.shape)
    shape.pop(d % x.dim())
    nd = len(shape)
    perm = list(np.random.default_rng(perm_seed).permutation(nd))
    n = int(np.prod(shape))
    check(lambda t: t.reshape(-1), (x,), d)
    check(lambda t: t.reshape(n, 1), (x,), d)
    check(lambda t: t.reshape(shape[::-1]), (x,), d)
    check(lambda t: t.permute(*perm), (x,), d)
    check(lambda t: t.permute(perm), (x,), d)
    check(lambda t: t.transpose(0, -1), (x,), d)
    check(lambda t: t.unsqueeze(0).unsqueeze(-1), (x,), d)
    check(lambda t: t.unsqueeze(1).squeeze(), (x,), d)
    check(lambda t: t.unsqueeze(1).squeeze(1), (x,), d)
    check(lambda t: t.flatten(), (x,), d)
    check(lambda t: t.flatten(1), (x,), d)
    check(lambda t: t.movedim(0, -1), (x,), d)
    check(lambda t: t.T, (x,), d)
    check(lambda t: t.mT, (x,), d)
    check(lambda t: t.unsqueeze(0).expand(2, *shape), (x,), d)
    check(lambda t: t.expand(2, *shape), (x,), d)
    check(lambda t: t.repeat(*([2] * nd)), (x,), d)
    check(lambda t: t[0], (x,), d)
    check(lambda t: t[..., :1], (x,), d)
    check(lambda t: t[:, None], (x,), d)
    check(lambda t: t.contiguous().view(-1), (x,), d)
    check(lambda t: t.diagonal(), (x,), d)
    check(lambda t: fg.permute(t, perm), (x,), d)


def test_view_as_and_properties():
    x = rand(5, 2, 3)
    seen = {}

    def f(t):
        if not isinstance(t, BatchedTensor):
            return t.reshape_as(t.T.T)
        seen["shape"] = tuple(t.shape)
        seen["dim"] = t.dim()
        seen["ndim"] = t.ndim
        seen["size1"] = t.size(1)
        seen["size-1"] = t.size(-1)
        seen["numel"] = t.numel()
        seen["len"] = len(t)
        seen["dtype"] = t.dtype
        return t.reshape_as(t.T.T)

    check(f, (x,), 0)
    assert seen == {
        "shape": (2, 3), "dim": 2, "ndim": 2, "size1": 3, "size-1": 3, "numel": 6, "len": 2,
        "dtype": fg.float64,
    }  # fmt: skip


@given(a=batched(shape=(2, 3)), which=st.sampled_from(["both", "first", "second"]),
       dim=st.integers(-2, 1))  # fmt: skip
@settings(max_examples=10)
def test_cat_stack(a, which, dim):
    x, dx = a
    y = rand(2, 3, 3)
    args = (x, y)
    in_dims = (dx, 2)
    if which == "first":
        args, in_dims = (x, rand(2, 3)), (dx, None)
    elif which == "second":
        args, in_dims = (rand(2, 3), y), (None, 2)
    check(lambda p, q: fg.cat([p, q], dim), args, in_dims)
    check(lambda p, q: fg.stack([p, q], dim), args, in_dims)
    check(lambda p, q: fg.stack((p, q, p), dim - 1), args, in_dims)


def test_index_ops():
    x = rand(4, 5, 3)
    idx = fg.tensor([2, 0, 2])
    check(lambda t: t.index_select(0, idx), (x,), 0)
    check(lambda t: fg.index_select(t, 1, idx.narrow(0, 0, 2)), (x,), 0)
    check(lambda t: t[idx], (x,), 1)
    gidx = fg.tensor([[0, 1, 0], [2, 2, 1]])
    check(lambda t: t.gather(0, gidx), (x,), 0)
    bidx = fg.randint(0, 3, (4, 2, 3))
    check(lambda t, i: t.gather(1, i), (x.narrow(1, 0, 2), bidx), (0, 0))
    check(lambda t: t.masked_fill(t > 0, 0.0), (x,), 2)


# ----- matrix products --------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)), ((1, 2, 3), (5, 3, 2)),
]  # fmt: skip


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
@pytest.mark.parametrize("which", ["both", "first", "second"])
def test_matmul(sa, sb, which):
    a = rand(4, *sa) if which != "second" else rand(*sa)
    b = rand(*sb, 4) if which != "first" else rand(*sb)
    in_dims = (0 if which != "second" else None, -1 if which != "first" else None)
    check(fg.matmul, (a, b), in_dims)
    check(lambda p, q: p @ q, (a, b), in_dims)


def test_product_family():
    check(fg.mm, (rand(4, 2, 3), rand(3, 5)), (0, None))
    check(fg.mm, (rand(2, 3), rand(3, 5, 4)), (None, 2))
    check(fg.mv, (rand(4, 2, 3), rand(4, 3)), (0, 0))
    check(fg.dot, (rand(4, 3), rand(3)), (0, None))
    check(fg.bmm, (rand(4, 2, 2, 3), rand(2, 3, 5)), (0, None))
    check(fg.outer, (rand(4, 3), rand(2, 4)), (0, 1))
    check(lambda p, q: p.mm(q), (rand(4, 2, 3), rand(4, 3, 2)), (0, 0))


# ----- nn.functional ----------------------------------------------------------------------


@pytest.mark.parametrize("batched_weight", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("xshape", [(3,), (2, 3)])
def test_linear(batched_weight, bias, xshape):
    x = rand(4, *xshape)
    w = rand(4, 5, 3) if batched_weight else rand(5, 3)
    b = (rand(4, 5) if batched_weight else rand(5)) if bias else None
    wd = 0 if batched_weight else None
    if bias:
        check(F.linear, (x, w, b), (0, wd, wd))
    else:
        check(lambda p, q: F.linear(p, q), (x, w), (0, wd))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("per_sample", [(5,), (3, 5)])
def test_classification_losses(reduction, per_sample):
    x = rand(4, *per_sample)
    t = fg.randint(0, 5, (4, *per_sample[:-1]))
    w = fg.rand(5, dtype=fg.float64) + 0.5
    check(lambda p, q: F.cross_entropy(p, q, reduction=reduction), (x, t))
    check(lambda p, q: F.cross_entropy(p, q, weight=w, reduction=reduction), (x, t))
    check(lambda p, q: F.nll_loss(F.log_softmax(p, -1), q, reduction=reduction), (x, t))
    check(lambda p: F.cross_entropy(p, t[0], reduction=reduction), (x,))
    if len(per_sample) == 2:
        t2 = t.clone()
        t2[:, 0] = -100
        check(lambda p, q: F.cross_entropy(p, q, reduction=reduction), (x, t2))
        check(lambda p, q: F.cross_entropy(p, q, label_smoothing=0.1, reduction=reduction), (x, t))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pointwise_losses(reduction):
    x, y = rand(4, 3, 2), rand(3, 2)
    check(lambda p, q: F.mse_loss(p, q, reduction=reduction), (x, y), (0, None))
    check(lambda p, q: F.l1_loss(p, q, reduction=reduction), (x, y), (0, None))
    check(lambda p, q: F.mse_loss(q, p, reduction=reduction), (x, y), (0, None))


def test_softmax_and_activations_functional():
    x = rand(3, 4, 5)
    check(lambda t: F.softmax(t, -1), (x,), 1)
    check(lambda t: F.softmax(t, 0), (x,), 1)
    check(lambda t: fg.softmax(t, 1), (x,), 0)
    check(lambda t: F.gelu(t, approximate="tanh"), (x,), 0)
    check(lambda t: F.hardtanh(t), (x,), 2)


def test_like_functions():
    x = rand(3, 2)
    close(vmap(lambda t: t + fg.ones_like(t))(x), x + 1)
    close(vmap(lambda t: fg.full_like(t, 2.0) * t)(x), 2 * x)
    r = vmap(lambda t: fg.rand_like(t), randomness="different")(fg.zeros(4, 50)).numpy()
    assert (r[0] != r[1]).any() and ((r >= 0) & (r < 1)).all()
    r = vmap(lambda t: fg.randn_like(t), randomness="same")(fg.zeros(4, 50)).numpy()
    assert (r == r[0]).all()


def test_dropout_randomness():
    x = fg.ones(6, 50)
    out = vmap(lambda t: F.dropout(t, 0.5), randomness="different")(x)
    assert out.shape == (6, 50)
    rows = out.numpy()
    assert set(np.unique(rows)) <= {0.0, 2.0}
    assert any((rows[i] != rows[0]).any() for i in range(1, 6))
    same = vmap(lambda t: F.dropout(t, 0.5), randomness="same")(x).numpy()
    assert all((same[i] == same[0]).all() for i in range(6))
    assert set(np.unique(same)) <= {0.0, 2.0}
    # Not training: no randomness involved, so 'error' mode is fine.
    close(vmap(lambda t: F.dropout(t, 0.5, training=False))(x), x)


# ----- in_dims / out_dims / structure -----------------------------------------------------


@given(data=batched(min_dims=1, max_dims=2), od=st.integers(-2, 1))
@settings(max_examples=10)
def test_out_dims(data, od):
    x, d = data
    check(lambda t: t * 2, (x,), d, od)


def test_pytree_inputs_and_outputs():
    x, y = rand(3, 2), rand(2, 3)
    out = vmap(lambda p: {"s": p["a"] + p["b"], "t": (p["a"] * 2,)}, in_dims=({"a": 0, "b": 1},))(
        {"a": x, "b": y}
    )
    close(out["s"], x + y.T)
    close(out["t"][0], x * 2)
    a, b = vmap(lambda p, q: (p * q, p), in_dims=(0, None), out_dims=(1, 0))(x, fg.ones(2))
    close(a, x.T)
    close(b, x)
    lst = vmap(lambda ps: [ps[0] + ps[1]])([x, x])
    assert isinstance(lst, list)
    close(lst[0], 2 * x)


def test_unbatched_outputs_are_expanded_and_none_out_dims():
    x = rand(3, 2)
    c = fg.ones(2)
    close(vmap(lambda t: c)(x), fg.ones(3, 2))
    out, same = vmap(lambda t: (t, c), out_dims=(0, None))(x)
    close(out, x)
    assert same is c


def test_kwargs_are_not_batched():
    x = rand(3, 2)
    close(vmap(lambda t, scale=1.0: t * scale)(x, scale=fg.tensor(2.0, dtype=fg.float64)), x * 2)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5])
def test_chunk_size(chunk):
    x = rand(5, 3)
    close(vmap(lambda t: t.softmax(0), chunk_size=chunk)(x), x.softmax(1))
    close(vmap(lambda t: (t.sum(), t), out_dims=(0, 1), chunk_size=chunk)(x), (x.sum(1), x.T))


def test_nested_vmap():
    x, y = rand(2, 3, 4), rand(3, 4)
    close(vmap(vmap(lambda a, b: a * b))(x, x), x * x)
    close(vmap(vmap(fg.dot), in_dims=(0, None))(x, y), (x * y).sum(-1))
    close(vmap(vmap(lambda a: a.sum(), in_dims=1), in_dims=2)(x), x.sum(0).T)
    w = rand(2, 4, 5)
    close(vmap(lambda a: vmap(lambda b: b @ a)(y))(w), fg.stack([y @ w[i] for i in range(2)]))
    z = rand(2, 3, 4, 5)
    check(lambda t: vmap(lambda u: u.softmax(-1) @ u.T)(t), (z,), 0)
    check(
        lambda a, b: vmap(lambda u, v: fg.cat([u, v]), in_dims=(0, None))(a, b),
        (z, rand(2, 1, 5)),
        (0, 0),
    )
    check(lambda a: vmap(vmap(lambda u: u * a.sum()))(z[0]), (x,), 0)


def test_ferrograd_vmap_alias():
    assert fg.vmap is vmap


def test_broadcast_tensors_under_vmap_matches_a_loop():
    a, b = fg.randn(5, 3, 1), fg.randn(4)
    outs = vmap(fg.broadcast_tensors, in_dims=(0, None))(a, b)
    for i in range(5):
        want = fg.broadcast_tensors(a[i], b)
        for got, w in zip(outs, want):
            assert got[i].shape == w.shape
            assert fg.equal(got[i], w)


def test_every_native_function_batches_or_names_itself():
    # An op without a batching rule must say which op it is, never the generic
    # "this ferrograd function" text of a binding that skipped dispatch.
    import types

    x = fg.randn(3, 4)
    for name in sorted(dir(fg)):
        f = getattr(fg, name)
        if not isinstance(f, types.BuiltinFunctionType):
            continue
        try:
            vmap(f)(x)
        except Exception as e:  # noqa: BLE001 - any refusal is fine if it names the op
            assert "this ferrograd function" not in str(e), (name, str(e))

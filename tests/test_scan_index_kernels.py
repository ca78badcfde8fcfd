"""The Rust scan, reduction and index kernels on every layout they split on:
``cumprod``, ``cummax``/``cummin``, ``cumsum``, ``nansum``, ``argmax``/``max(dim)``,
``topk`` with a small ``k``, ``gather``/``scatter``/``scatter_add`` along any
dimension (index shapes smaller than the input's, bounds errors) and the one-pass
masked write behind ``masked_scatter`` and ``x[mask] = v``, against NumPy references on
hypothesis shapes (size-0 and size-1 dimensions, negative dims, non-contiguous inputs),
with float64 gradients checked by finite differences (first and second order), and the
vector kernels against the portable ones (FERROGRAD_ISA in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import FEW, check_grads, op_shapes, values

NAN = float("nan")


def layout(a, how):
    """``a`` as a ferrograd tensor, contiguous or as a non-contiguous view of the
    same values (transposed storage, or every other element of a wider one)."""
    if how == "contiguous" or a.ndim == 0:
        return fg.tensor(a)
    if how == "transposed":
        return fg.tensor(np.ascontiguousarray(a.T)).permute(*range(a.ndim - 1, -1, -1))
    wide = np.repeat(a, 2, axis=-1)
    return fg.tensor(wide)[..., ::2]


LAYOUTS = st.sampled_from(["contiguous", "transposed", "strided"])


def scan_extreme_ref(a, axis, is_max):
    """PyTorch's rule, written out: an equal value moves the index forward, a NaN
    always wins and is only replaced by a later NaN."""
    x = np.moveaxis(a, axis, -1)
    vals, idx = np.empty_like(x), np.zeros(x.shape, dtype=np.int64)
    for pos in np.ndindex(*x.shape[:-1]):
        best, at = None, 0
        for j, v in enumerate(x[pos]):
            if j == 0:
                best, at = v, 0
            better = v >= best if is_max else v <= best
            if np.isnan(v) or (not np.isnan(best) and better):
                best, at = v, j
            vals[pos + (j,)], idx[pos + (j,)] = best, at
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def ties(shape):
    """float64 arrays from a few values, so ties are common, with some NaNs."""
    return st.lists(st.sampled_from([-1.0, -0.0, 0.0, 0.5, 2.0, NAN]),
                    min_size=int(np.prod(shape)), max_size=int(np.prod(shape))).map(
        lambda v: np.array(v, dtype=np.float64).reshape(shape))


@FEW
@given(op_shapes(min_dims=1, max_dims=3, max_side=5), LAYOUTS, st.data())
def test_cummax_cummin_follow_pytorch_ties_and_nans(shape, how, data):
    a = data.draw(ties(shape))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    for fn, is_max in ((fg.cummax, True), (fg.cummin, False)):
        vals, idx = fn(layout(a, how), dim)
        want_v, want_i = scan_extreme_ref(a, dim % len(shape), is_max)
        np.testing.assert_array_equal(idx.numpy(), want_i)
        # Bit-exact, -0.0 and NaN included.
        np.testing.assert_array_equal(np.signbit(vals.numpy()), np.signbit(want_v))
        np.testing.assert_array_equal(vals.numpy(), want_v)


def test_cummax_values_recorded_from_pytorch():
    # torch.cummax / torch.cummin outputs (PyTorch 2.x, CPU), recorded as constants.
    v, i = fg.cummax(fg.tensor([0.0, -0.0, 0.0]), 0)
    assert i.tolist() == [0, 1, 2] and np.signbit(v.numpy()).tolist() == [False, True, False]
    v, i = fg.cummin(fg.tensor([-0.0, 0.0]), 0)
    assert i.tolist() == [0, 1]
    m = fg.tensor([[1.0, NAN], [3.0, 2.0], [3.0, NAN], [2.0, 5.0]])
    v, i = fg.cummax(m, 0)
    assert i.tolist() == [[0, 0], [1, 0], [2, 2], [2, 2]]
    v, i = fg.cummin(fg.tensor([NAN, 1.0, NAN, -1.0]), 0)
    assert i.tolist() == [0, 0, 2, 2] and np.isnan(v.numpy()).all()


@FEW
@given(st.sampled_from([(17, 40), (16, 300), (3, 7, 1100), (2, 1030, 3), (1, 5)]),
       st.sampled_from([0, 1, -1]), st.integers(0, 2**31))
def test_scans_on_large_layouts(shape, dim, seed):
    # Row groups of eight (full and partial) and column blocks beyond 1024.
    rng = np.random.default_rng(seed)
    a = rng.choice([-1.0, 0.5, 1.0, 2.0, NAN], size=shape).astype(np.float32)
    t = fg.tensor(a)
    want_v, want_i = scan_extreme_ref(a, dim % a.ndim, True)
    vals, idx = fg.cummax(t, dim)
    np.testing.assert_array_equal(idx.numpy(), want_i)
    np.testing.assert_array_equal(vals.numpy(), want_v)
    b = rng.uniform(0.9, 1.1, size=shape).astype(np.float32)
    np.testing.assert_allclose(fg.cumprod(fg.tensor(b), dim).numpy(), np.cumprod(b, axis=dim),
                               rtol=1e-5)
    np.testing.assert_allclose(fg.cumsum(fg.tensor(b), dim).numpy(), np.cumsum(b, axis=dim),
                               rtol=1e-5)
    # float64 sums in order equal NumPy's sequential cumsum bit for bit.
    c = b.astype(np.float64)
    np.testing.assert_array_equal(fg.cumsum(fg.tensor(c), dim).numpy(), np.cumsum(c, axis=dim))


@FEW
@given(op_shapes(min_dims=1, max_dims=3), LAYOUTS, st.data())
def test_cumprod_layouts_values_and_grads(shape, how, data):
    a = data.draw(values(shape, -1.5, 1.5))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    np.testing.assert_allclose(fg.cumprod(layout(a, how), dim).numpy(), np.cumprod(a, axis=dim))
    check_grads(lambda x: x.cumprod(dim), a)
    # Distinct values, so finite differences never straddle a tie of the running max.
    b = data.draw(values(shape, unique=True))
    check_grads(lambda x: fg.cummax(x, dim).values, b)


def test_cumprod_with_zeros_keeps_second_order_gradients():
    # A zero sends a grad-requiring input to the product-rule scan.
    check_grads(lambda x: x.cumprod(1), np.array([[0.5, 0.0, 2.0, 1.5], [0.0, 0.0, 3.0, 1.0]]))
    assert fg.cumprod(fg.tensor([1, 2, 3], dtype=fg.int32), 0).dtype == fg.int64
    assert fg.cumprod(fg.tensor([[2.0, 3.0]], dtype=fg.float16), 1).dtype == fg.float16
    empty = fg.zeros(3, 0, 2)
    assert fg.cumprod(empty, 1).shape == (3, 0, 2)
    assert fg.cummin(empty, -1).indices.shape == (3, 0, 2)


@FEW
@given(op_shapes(min_dims=0, max_dims=3), LAYOUTS, st.data())
def test_nansum_values_and_grads(shape, how, data):
    a = data.draw(ties(shape))
    ndim = len(shape)
    dim = data.draw(st.none() | st.integers(-ndim, ndim - 1)) if ndim else None
    keep = data.draw(st.booleans())
    got = fg.nansum(layout(a, how), dim, keep) if dim is not None else fg.nansum(layout(a, how))
    want = np.nansum(a, axis=dim, keepdims=keep) if dim is not None else np.nansum(a)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    x = fg.tensor(a, requires_grad=True)
    (fg.nansum(x, dim, keep) if dim is not None else fg.nansum(x)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (~np.isnan(a)).astype(np.float64))
    b = data.draw(values(shape))
    check_grads(lambda t: fg.nansum(t, dim, keep) if dim is not None else fg.nansum(t), b)


def test_nansum_dtypes():
    h = fg.tensor([1.0, NAN, 2.5], dtype=fg.float16)
    assert fg.nansum(h).dtype == fg.float16 and fg.nansum(h).item() == 3.5
    assert fg.nansum(h, dtype=fg.float64).dtype == fg.float64
    assert fg.nansum(fg.tensor([[1, 2], [3, 4]]), 1).tolist() == [3, 7]
    # PyTorch: nansum([1, nan, inf]) is inf, and its gradient is 1 at the infinity.
    x = fg.tensor([1.0, NAN, float("inf")], requires_grad=True)
    s = fg.nansum(x)
    s.backward()
    assert s.item() == float("inf") and x.grad.tolist() == [1.0, 0.0, 1.0]


@FEW
@given(op_shapes(min_dims=1, max_dims=3), LAYOUTS, st.data())
def test_argmax_and_max_dim_first_extreme(shape, how, data):
    a = data.draw(ties(shape))
    if 0 in shape:
        return
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    t = layout(a, how)
    for name, npf in (("max", np.argmax), ("min", np.argmin)):
        # NumPy also returns the first extreme, and the first NaN when there is one.
        want = npf(a, axis=dim)
        np.testing.assert_array_equal(getattr(t, "arg" + name)(dim).numpy(), want)
        v, i = getattr(t, name)(dim)
        np.testing.assert_array_equal(i.numpy(), want)
        np.testing.assert_array_equal(v.numpy(), np.take_along_axis(
            a, np.expand_dims(want, dim), dim).squeeze(dim))


@FEW
@given(st.integers(1, 40), st.integers(1, 20), st.booleans(), LAYOUTS, st.data())
def test_topk_small_k_is_the_stable_order(cols, k, largest, how, data):
    k = min(k, cols)
    a = data.draw(ties((3, cols)))
    vals, idx = fg.topk(layout(a, how), k, 1, largest)
    # A stable sort of the row, NaN counted as the largest (ties keep their order).
    key = np.where(np.isnan(a), np.inf, a)
    rank = np.where(np.isnan(a), 1, 0)
    order = [np.lexsort((np.arange(cols), -rank[r], -key[r]) if largest
                        else (np.arange(cols), rank[r], key[r]))[:k] for r in range(3)]
    np.testing.assert_array_equal(idx.numpy(), np.array(order))
    np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(a, np.array(order), 1))


@FEW
@given(op_shapes(min_dims=1, max_dims=3, min_side=1), LAYOUTS, st.data())
def test_gather_scatter_along_any_dim(shape, how, data):
    a = data.draw(values(shape))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    d = dim % len(shape)
    ishape = list(shape)
    ishape[d] = data.draw(st.integers(0, 5))
    idx = data.draw(st.lists(st.integers(0, shape[d] - 1), min_size=int(np.prod(ishape)),
                             max_size=int(np.prod(ishape))))
    idx = np.array(idx, dtype=np.int64).reshape(ishape)
    t = layout(a, how)
    np.testing.assert_array_equal(t.gather(dim, fg.tensor(idx)).numpy(),
                                  np.take_along_axis(a, idx, d))
    src = data.draw(values(tuple(ishape)))
    want_add, want_set = a.copy(), a.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[d] = idx[pos]
        want_add[tuple(tgt)] += src[pos]
        want_set[tuple(tgt)] = src[pos]  # the last write wins, in index order
    s = layout(src, how) if src.size else fg.tensor(src)
    np.testing.assert_allclose(t.scatter_add(dim, fg.tensor(idx), s).numpy(), want_add)
    np.testing.assert_array_equal(t.scatter(dim, fg.tensor(idx), s).numpy(), want_set)
    check_grads(lambda x, y: x.scatter_add(dim, fg.tensor(idx), y), a, src)
    check_grads(lambda x: x.gather(dim, fg.tensor(idx)), a)


def test_index_errors_name_the_offending_index():
    x = fg.zeros(2, 3)
    for bad in (3, -1):
        i = fg.tensor([[0, bad]])
        msg = f"index {bad} is out of bounds for dimension 1 with size 3"
        with pytest.raises(RuntimeError, match=msg):
            x.gather(1, i)
        with pytest.raises(RuntimeError, match=msg):
            x.scatter_add(1, i, fg.ones(1, 2))


def scatter_ref(a, d, idx, src, add):
    """``a`` with ``src`` written (or added, one element at a time in index order)
    along ``d`` at ``idx``."""
    out = a.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[d] = idx[pos]
        out[tuple(tgt)] = out[tuple(tgt)] + src[pos] if add else src[pos]
    return out


@FEW
@given(op_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), LAYOUTS, st.data())
def test_gather_scatter_with_smaller_index_shapes(shape, how, data):
    # The index may be shorter than the input in every dimension but `dim` (any length
    # there): then it covers only some of the input's outer positions.
    a = data.draw(values(shape)).astype(np.float32)
    d = data.draw(st.integers(0, len(shape) - 1))
    ishape = tuple(data.draw(st.integers(0, 6)) if k == d else data.draw(st.integers(0, n))
                   for k, n in enumerate(shape))
    n = int(np.prod(ishape))
    idx = np.array(data.draw(st.lists(st.integers(0, shape[d] - 1), min_size=n, max_size=n)),
                   dtype=np.int64).reshape(ishape)
    src = data.draw(values(ishape)).astype(np.float32)
    t, i, s = layout(a, how), fg.tensor(idx), fg.tensor(src)
    box = tuple(slice(None) if k == d else slice(0, m) for k, m in enumerate(ishape))
    np.testing.assert_array_equal(t.gather(d, i).numpy(), np.take_along_axis(a[box], idx, d))
    # float32 sums in index order: bit for bit.
    np.testing.assert_array_equal(t.scatter_add(d, i, s).numpy(), scatter_ref(a, d, idx, src, True))
    np.testing.assert_array_equal(t.scatter(d, i, s).numpy(), scatter_ref(a, d, idx, src, False))
    np.testing.assert_array_equal(
        fg.scatter_reduce(t, d, i, s, "sum").numpy(), scatter_ref(a, d, idx, src, True))
    if n:
        # Bad indices anywhere: the error names the first in row-major order.
        flat = idx.reshape(-1).copy()
        at = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))
        for k, p in enumerate(at):
            flat[p] = (-1, shape[d], shape[d] + 7)[k % 3]
        bad = fg.tensor(flat.reshape(ishape))
        msg = f"index {flat[min(at)]} is out of bounds for dimension {d} with size {shape[d]}"
        for call in (lambda: t.gather(d, bad), lambda: t.scatter_add(d, bad, s),
                     lambda: t.scatter(d, bad, s)):
            with pytest.raises(RuntimeError, match=msg):
                call()


def test_indices_into_an_empty_dimension_are_out_of_bounds():
    x, i = fg.zeros(2, 0), fg.tensor([[0], [0]])
    msg = "index 0 is out of bounds for dimension 1 with size 0"
    for call in (lambda: x.gather(1, i), lambda: x.scatter_add(1, i, fg.ones(2, 1)),
                 lambda: x.scatter(1, i, fg.ones(2, 1))):
        with pytest.raises(RuntimeError, match=msg):
            call()
    assert x.scatter_add(1, fg.zeros(2, 0, dtype=fg.int64), fg.ones(2, 0)).shape == (2, 0)


def test_gather_backward_of_a_full_index_sums_in_order():
    # The backward (a scatter-add into zeros made block by block) against np.add.at.
    rng = np.random.default_rng(4)
    a = rng.standard_normal((33, 70)).astype(np.float32)
    idx = rng.integers(0, 70, (33, 90))
    g = rng.standard_normal((33, 90)).astype(np.float32)
    x = fg.tensor(a, requires_grad=True)
    x.gather(1, fg.tensor(idx)).backward(fg.tensor(g))
    want = np.zeros_like(a)
    np.add.at(want, (np.arange(33)[:, None].repeat(90, 1), idx), g)
    np.testing.assert_array_equal(x.grad.numpy(), want)
    y = fg.tensor(a, requires_grad=True)
    v, i = fg.cummax(y, 1)
    v.backward(fg.tensor(g[:, :70]))
    want = np.zeros_like(a)
    np.add.at(want, (np.arange(33)[:, None].repeat(70, 1), i.numpy()), g[:, :70])
    np.testing.assert_array_equal(y.grad.numpy(), want)


@FEW
@given(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5), st.data())
def test_masked_write_in_one_pass(shape, data):
    a = data.draw(values(shape))
    m = np.array(data.draw(st.lists(st.booleans(), min_size=a.size, max_size=a.size)),
                 dtype=bool).reshape(shape)
    k = int(m.sum())
    extra = data.draw(st.integers(0, 3))
    src = np.arange(1.0, k + extra + 1.0)
    want = a.copy()
    want[m] = src[:k]
    np.testing.assert_array_equal(fg.tensor(a).masked_scatter(fg.tensor(m), fg.tensor(src)).numpy(),
                                  want)
    # In place: a value per true flag, one value for all, a view with an offset.
    t = fg.tensor(a.copy())
    t[fg.tensor(m)] = fg.tensor(src[:k])
    np.testing.assert_array_equal(t.numpy(), want)
    t = fg.tensor(a.copy())
    t[fg.tensor(m)] = 2.5
    ones = a.copy()
    ones[m] = 2.5
    np.testing.assert_array_equal(t.numpy(), ones)
    big = fg.tensor(np.concatenate([np.full(3, -9.0), a.reshape(-1)]))
    view = big[3:].reshape(shape)
    view[fg.tensor(m)] = fg.tensor(src[:k])
    np.testing.assert_array_equal(big.numpy(), np.concatenate([np.full(3, -9.0), want.reshape(-1)]))
    out = fg.index_put(fg.tensor(a), (fg.tensor(m),), fg.tensor(src[:k]))
    np.testing.assert_array_equal(out.numpy(), want)
    if k:
        check_grads(lambda x, s: fg.index_put(x, (fg.tensor(m),), s), a, src[:k])


def test_masked_write_refusals_keep_pytorch_errors():
    x = fg.zeros(2, 3)
    m = fg.tensor([[True, False, True], [False, False, True]])
    # Values of another count or dtype take the general path and its errors.
    with pytest.raises(RuntimeError):
        x[m] = fg.ones(2)
    with pytest.raises(RuntimeError):
        fg.index_put(x, (m,), fg.ones(3, dtype=fg.float64))
    # A value that is part of the destination is read before it is overwritten.
    y = fg.arange(6.0)
    y[fg.tensor([False, True, True, False, False, False])] = y[3:5]
    assert y.tolist() == [0.0, 3.0, 4.0, 3.0, 4.0, 5.0]
    b = fg.tensor([True, False, True])
    b[b] = False
    assert b.tolist() == [False, False, False]


_ISA_SCRIPT = r"""
import json, numpy as np, ferrograd as fg
rng = np.random.default_rng(5)
a = rng.choice([-1.0, -0.0, 0.0, 0.5, 2.0, np.nan], size=(19, 150)).astype(np.float32)
out = {}
for name, fn in (("cummax", fg.cummax), ("cummin", fg.cummin)):
    v, i = fn(fg.tensor(a), 1)
    out[name] = [v.numpy().view(np.uint32).tolist(), i.numpy().tolist()]
x = rng.standard_normal((13, 70)).astype(np.float32)
idx = rng.integers(0, 70, (13, 90))
src = rng.standard_normal((13, 90)).astype(np.float32)
out["gather"] = fg.tensor(x).gather(1, fg.tensor(idx)).numpy().view(np.uint32).tolist()
out["scatter_add"] = fg.tensor(x).scatter_add(1, fg.tensor(idx), fg.tensor(src)).numpy().view(
    np.uint32).tolist()
errors = []
for bad in (70, -1, 2**40):
    b = idx.copy()
    b[7, 33] = bad
    b[9, 2] = bad
    for f in (lambda: fg.tensor(x).gather(1, fg.tensor(b)),
              lambda: fg.tensor(x).scatter_add(1, fg.tensor(b), fg.tensor(src))):
        try:
            f()
            errors.append(None)
        except RuntimeError as e:
            errors.append(str(e))
out["errors"] = errors
print(json.dumps(out))
"""


def _run_with_isa(isa):
    env = dict(os.environ, FERROGRAD_ISA=isa)
    r = subprocess.run([sys.executable, "-c", _ISA_SCRIPT], env=env, capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout)


def test_vector_and_portable_kernels_agree_with_numpy():
    rng = np.random.default_rng(5)
    a = rng.choice([-1.0, -0.0, 0.0, 0.5, 2.0, np.nan], size=(19, 150)).astype(np.float32)
    x = rng.standard_normal((13, 70)).astype(np.float32)
    idx = rng.integers(0, 70, (13, 90))
    src = rng.standard_normal((13, 90)).astype(np.float32)
    want_add = x.copy()
    np.add.at(want_add, (np.arange(13)[:, None].repeat(90, 1), idx), src)
    for isa in ("avx512", "avx2", "portable"):
        got = _run_with_isa(isa)
        for name, is_max in (("cummax", True), ("cummin", False)):
            v, i = scan_extreme_ref(a, 1, is_max)
            assert got[name][0] == v.view(np.uint32).tolist(), (isa, name)
            assert got[name][1] == i.tolist(), (isa, name)
        assert got["gather"] == np.take_along_axis(x, idx, 1).view(np.uint32).tolist(), isa
        assert got["scatter_add"] == want_add.view(np.uint32).tolist(), isa
        for k, bad in enumerate((70, -1, 2**40)):
            msg = f"index {bad} is out of bounds for dimension 1 with size 70"
            assert got["errors"][2 * k:2 * k + 2] == [msg, msg], isa

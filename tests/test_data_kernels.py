"""The data-movement, selection and reduction kernels: strided copies
(``contiguous`` of permuted views, ``flip``, ``roll``, ``cat``, ``repeat``,
``pad``, ``tril``/``triu``), the index family (``index_select``,
``index_add``, ``index_copy``, ``gather``/``scatter``, advanced indexing),
sorting and selection (radix ``sort``, ``topk``/``kthvalue``/``median`` by
selection) and reductions along leading dimensions, against NumPy, with
gradients checked in float64, results bit-identical on one and two threads,
and every dtype kept working."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import FEW, check_grads, op_shapes, values

ALL_DTYPES = [fg.bool, fg.uint8, fg.int8, fg.int16, fg.int32, fg.int64,
              fg.float16, fg.bfloat16, fg.float32, fg.float64]  # fmt: skip


def _np(t):
    if t.dtype == fg.bfloat16:
        return t.float().numpy()
    return t.numpy()


def _threads(n):
    class _Ctx:
        def __enter__(self):
            self.old = fg.get_num_threads()
            fg.set_num_threads(n)

        def __exit__(self, *exc):
            fg.set_num_threads(self.old)

    return _Ctx()


# ----- strided copies ------------------------------------------------------------------


@given(data=st.data())
def test_contiguous_of_any_permutation(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=4, max_side=5))
    x = data.draw(values(shape))
    perm = data.draw(st.permutations(range(len(shape))))
    got = fg.tensor(x).permute(*perm).contiguous()
    assert got.is_contiguous()
    np.testing.assert_array_equal(got.numpy(), np.transpose(x, perm))


def test_large_transposes_tile_exactly():
    # Large enough for the tiled path, with partial tiles on both sides.
    r = np.random.default_rng(0)
    for shape in [(513, 700), (33, 2000), (3, 50, 97)]:
        x = r.standard_normal(shape).astype(np.float32)
        t = fg.tensor(x)
        np.testing.assert_array_equal(t.transpose(-1, -2).contiguous().numpy(),
                                      np.swapaxes(x, -1, -2))  # fmt: skip
        np.testing.assert_array_equal(t.flip(-1).transpose(0, -1).contiguous().numpy(),
                                      np.transpose(np.flip(x, -1), (len(shape) - 1,) +
                                                   tuple(range(1, len(shape) - 1)) + (0,)))  # fmt: skip


@given(data=st.data())
def test_flip_roll_against_numpy(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, max_side=5))
    x = data.draw(values(shape))
    nd = len(shape)
    dims = data.draw(st.lists(st.integers(-nd, nd - 1), max_size=nd, unique_by=lambda d: d % nd))
    np.testing.assert_array_equal(fg.tensor(x).flip(dims).numpy(), np.flip(x, dims))
    shifts = data.draw(st.lists(st.integers(-7, 7), min_size=len(dims), max_size=len(dims)))
    if dims:
        np.testing.assert_array_equal(fg.tensor(x).roll(shifts, dims).numpy(),
                                      np.roll(x, shifts, dims))  # fmt: skip
    s = data.draw(st.integers(-9, 9))
    np.testing.assert_array_equal(fg.tensor(x).roll(s).numpy(), np.roll(x, s))
    # A strided (transposed) source.
    xt = fg.tensor(x).permute(*reversed(range(nd)))
    np.testing.assert_array_equal(xt.flip(0).numpy(), np.flip(np.transpose(x), 0))
    np.testing.assert_array_equal(xt.roll(2, 0).numpy(), np.roll(np.transpose(x), 2, 0))


def test_roll_repeats_a_dim_and_keeps_zero_d():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(fg.tensor(x).roll((1, 2), (1, 1)).numpy(), np.roll(x, 3, 1))
    np.testing.assert_array_equal(fg.tensor(x).roll((1, -1), (0, 1)).numpy(),
                                  np.roll(x, (1, -1), (0, 1)))  # fmt: skip
    assert fg.tensor(5.0).roll(3).item() == 5.0


@given(data=st.data())
def test_cat_of_strided_parts(data):
    shape = data.draw(op_shapes(min_dims=2, max_dims=3, max_side=4))
    dim = data.draw(st.integers(0, len(shape) - 1))
    a, b = data.draw(values(shape)), data.draw(values(shape))
    ta = fg.tensor(a.swapaxes(0, 1).copy()).transpose(0, 1)  # a non-contiguous view of `a`
    tb = fg.tensor(b).flip(0)
    got = fg.cat([ta, tb, ta], dim)
    np.testing.assert_array_equal(got.numpy(), np.concatenate([a, np.flip(b, 0), a], dim))
    got = fg.stack([ta, tb], dim)
    np.testing.assert_array_equal(got.numpy(), np.stack([a, np.flip(b, 0)], dim))


def test_cat_promotes_and_copies_each_part_once():
    a = fg.tensor([[1, 2], [3, 4]], dtype=fg.int16)
    b = fg.tensor([[0.5, 1.5]], dtype=fg.float32)
    out = fg.cat([a.t(), b], 0)
    assert out.dtype == fg.float32
    np.testing.assert_array_equal(out.numpy(), [[1, 3], [2, 4], [0.5, 1.5]])


@given(data=st.data())
def test_repeat_tile_pad_tri(data):
    shape = data.draw(op_shapes(min_dims=2, max_dims=3, max_side=4))
    x = data.draw(values(shape))
    reps = data.draw(st.lists(st.integers(0, 3), min_size=len(shape), max_size=len(shape) + 1))
    np.testing.assert_array_equal(fg.tensor(x).repeat(*reps).numpy(), np.tile(x, reps))
    k = data.draw(st.integers(-4, 4))
    np.testing.assert_array_equal(fg.tensor(x).tril(k).numpy(), np.tril(x, k))
    np.testing.assert_array_equal(fg.tensor(x).triu(k).numpy(), np.triu(x, k))
    np.testing.assert_array_equal(fg.tril(fg.tensor(x).transpose(-1, -2), k).numpy(),
                                  np.tril(np.swapaxes(x, -1, -2), k))  # fmt: skip
    p = data.draw(st.lists(st.integers(0, 2), min_size=4, max_size=4))
    got = fg.nn.functional.pad(fg.tensor(x), p, value=1.5)
    widths = [(0, 0)] * (len(shape) - 2) + [(p[2], p[3]), (p[0], p[1])]
    np.testing.assert_array_equal(got.numpy(), np.pad(x, widths, constant_values=1.5))


def test_tril_errors_and_every_dtype():
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        fg.tensor([1.0, 2.0]).tril()
    with pytest.raises(RuntimeError, match="triu: input tensor must have at least 2 dimensions"):
        fg.tensor([1.0, 2.0]).triu()
    base = np.arange(1, 13).reshape(3, 4) % 5
    for dt in ALL_DTYPES:
        t = fg.tensor(base).to(dt)
        want = np.tril(_np(t), -1)
        got = t.tril(-1)
        assert got.dtype == dt
        np.testing.assert_array_equal(_np(got), want)
        np.testing.assert_array_equal(_np(t.roll(1, 1)), np.roll(_np(t), 1, 1))
        np.testing.assert_array_equal(_np(t.flip(0, 1)), np.flip(_np(t), (0, 1)))
        np.testing.assert_array_equal(_np(fg.cat([t, t.t().t()], 1)),
                                      np.concatenate([_np(t)] * 2, 1))  # fmt: skip
        np.testing.assert_array_equal(_np(t.t().contiguous()), _np(t).T)


@FEW
@given(data=st.data())
def test_copy_ops_gradients(data):
    shape = data.draw(op_shapes(min_dims=2, max_dims=3, min_side=1, max_side=3))
    x = data.draw(values(shape))
    k = data.draw(st.integers(-2, 2))
    check_grads(lambda t: t.tril(k), x)
    check_grads(lambda t: t.triu(k), x)
    check_grads(lambda t: t.roll((1, -2), (0, -1)), x)
    check_grads(lambda t: t.roll(3), x)
    check_grads(lambda t: fg.cat([t.transpose(0, 1), t.transpose(0, 1).flip(0)], 1), x)


def test_node_names():
    x = fg.ones(3, 3, requires_grad=True)
    assert x.tril().grad_fn.name() == "TrilBackward0"
    assert x.triu().grad_fn.name() == "TriuBackward0"
    assert x.roll(1, 0).grad_fn.name() == "RollBackward0"
    i = fg.tensor([0, 2])
    assert x.index_add(0, i, fg.ones(2, 3)).grad_fn.name() == "IndexAddBackward0"
    assert x.index_copy(0, i, fg.ones(2, 3)).grad_fn.name() == "IndexCopyBackward0"
    assert x[i].grad_fn.name() == "IndexBackward0"
    assert x.index_select(1, i).grad_fn.name() == "IndexSelectBackward0"


# ----- the index family ----------------------------------------------------------------


@st.composite
def indexed(draw, min_dims=1):
    shape = draw(op_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=4))
    x = draw(values(shape))
    dim = draw(st.integers(0, len(shape) - 1))
    k = draw(st.integers(0, 6))
    idx = np.array(draw(st.lists(st.integers(0, shape[dim] - 1), min_size=k, max_size=k)),
                   dtype=np.int64)  # fmt: skip
    return x, dim, idx


@given(case=indexed())
def test_index_select_add_copy_against_numpy(case):
    x, dim, idx = case
    t, i = fg.tensor(x), fg.tensor(idx)
    np.testing.assert_array_equal(t.index_select(dim, i).numpy(), np.take(x, idx, dim))
    src = np.take(x, idx, dim) * 3 + 1
    want = x.copy()
    sel = [slice(None)] * x.ndim
    for j, v in enumerate(idx):
        sel[dim] = v
        src_sel = list(sel)
        src_sel[dim] = j
        want[tuple(sel)] += 2 * src[tuple(src_sel)]
    np.testing.assert_allclose(t.index_add(dim, i, fg.tensor(src), alpha=2).numpy(), want,
                               rtol=1e-12)  # fmt: skip
    # index_copy with unique indices (repeats keep the last row).
    uniq = np.unique(idx)
    src_u = np.take(x, uniq, dim) - 5
    want = x.copy()
    sel = [slice(None)] * x.ndim
    sel[dim] = uniq
    want[tuple(sel)] = src_u
    np.testing.assert_array_equal(t.index_copy(dim, fg.tensor(uniq), fg.tensor(src_u)).numpy(), want)


@given(data=st.data())
def test_advanced_indexing_against_numpy(data):
    shape = data.draw(op_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4))
    x = data.draw(values(shape))
    t = fg.tensor(x)
    n0 = shape[0]
    i = np.array(data.draw(st.lists(st.integers(-n0, n0 - 1), max_size=5)), dtype=np.int64)
    np.testing.assert_array_equal(t[fg.tensor(i)].numpy(), x[i])
    n1 = shape[1]
    j = np.array(data.draw(st.lists(st.integers(-n1, n1 - 1), min_size=2, max_size=2)),
                 dtype=np.int64).reshape(2, 1)  # fmt: skip
    np.testing.assert_array_equal(t[:, fg.tensor(j)].numpy(), x[:, j])
    if len(shape) == 3:
        n2 = shape[2]
        k = np.array(data.draw(st.lists(st.integers(0, n2 - 1), min_size=2, max_size=2)))
        jj = j.reshape(-1)
        if i.size:
            # Separated advanced indices: their dimensions go first (NumPy's rule).
            ii = i[:1].repeat(2)
            np.testing.assert_array_equal(t[fg.tensor(ii), :, fg.tensor(k)].numpy(), x[ii, :, k])
        np.testing.assert_array_equal(t[:, fg.tensor(jj), fg.tensor(k)].numpy(), x[:, jj, k])
    m = data.draw(values(shape)) > 0
    np.testing.assert_array_equal(t[fg.tensor(m)].numpy(), x[m])


@FEW
@given(case=indexed(min_dims=2))
def test_index_gradients(case):
    x, dim, idx = case
    i = fg.tensor(idx)
    src = np.take(x, idx, dim)
    check_grads(lambda t: t.index_select(dim, i), x)
    check_grads(lambda t, s: t.index_add(dim, i, s, alpha=0.5), x, src)
    uniq = fg.tensor(np.unique(idx))
    src_u = np.take(x, np.unique(idx), dim)
    check_grads(lambda t, s: t.index_copy(dim, uniq, s), x, src_u)
    if dim == 0:
        check_grads(lambda t: t[i], x)
    if dim == 1:
        check_grads(lambda t: t[:, i.reshape(-1, 1)], x)
    j = fg.tensor([0, x.shape[1] - 1, 0])
    check_grads(lambda t: t[fg.tensor([0, 0, x.shape[0] - 1]), j], x)


def test_index_errors():
    x = fg.zeros(3, 4)
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, fg.tensor([3]))
    with pytest.raises(RuntimeError, match="out of bounds for dimension 1 with size 4"):
        x.index_add(1, fg.tensor([4]), fg.zeros(3, 1))
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.index_copy(0, fg.tensor([-1]), fg.zeros(1, 4))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_add(0, fg.tensor([[0]]), fg.zeros(1, 4))


def test_index_family_every_dtype():
    base = (np.arange(12).reshape(3, 4) % 5).astype(np.int64)
    idx = np.array([2, 0, 2])
    for dt in ALL_DTYPES:
        t = fg.tensor(base).to(dt)
        a = _np(t)
        np.testing.assert_array_equal(_np(t.index_select(0, fg.tensor(idx))), a[idx])
        np.testing.assert_array_equal(_np(t[fg.tensor(idx)]), a[idx])
        np.testing.assert_array_equal(_np(t.gather(1, fg.tensor([[0, 3]] * 3))),
                                      np.take_along_axis(a, np.array([[0, 3]] * 3), 1))  # fmt: skip
        if dt != fg.bool:
            got = t.index_add(0, fg.tensor(idx), t[fg.tensor(idx)])
            want = a.copy()
            np.add.at(want, idx, a[idx])
            assert got.dtype == dt
            np.testing.assert_array_equal(_np(got), want.astype(a.dtype))
        got = t.index_copy(1, fg.tensor([1, 3]), t[:, :2])
        want = a.copy()
        want[:, [1, 3]] = a[:, :2]
        np.testing.assert_array_equal(_np(got), want)


def test_scatter_family_against_numpy():
    r = np.random.default_rng(3)
    x = r.standard_normal((40, 50))
    src = r.standard_normal((40, 50))
    for dim in (0, 1):
        idx = r.integers(0, x.shape[dim], (30, 45))
        got = fg.tensor(x).scatter_add(dim, fg.tensor(idx), fg.tensor(src)).numpy()
        want = x.copy()
        ii, jj = np.indices(idx.shape)
        coords = (idx, jj) if dim == 0 else (ii, idx)
        np.add.at(want, coords, src[:30, :45])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        # gather reads only the index's extent of the other dimension.
        part = x[:, :45] if dim == 0 else x[:30]
        np.testing.assert_array_equal(fg.tensor(x).gather(dim, fg.tensor(idx)).numpy(),
                                      np.take_along_axis(part, idx, dim))  # fmt: skip
        # Unique targets per column/row: scatter writes exactly.
        perm = np.argsort(r.random((x.shape[0], x.shape[1])), axis=dim)[:30, :45] if dim == 1 \
            else np.argsort(r.random(x.shape), axis=0)[:30, :45]  # fmt: skip
        got = fg.tensor(x).scatter(dim, fg.tensor(perm), fg.tensor(src)).numpy()
        want = x.copy()
        coords = (perm, jj) if dim == 0 else (ii, perm)
        want[coords] = src[:30, :45]
        np.testing.assert_array_equal(got, want)


def test_parallel_results_are_bit_identical_across_thread_counts():
    # Large enough that every kernel splits over the pool.
    r = np.random.default_rng(1)
    x = fg.tensor(r.standard_normal((700, 600)).astype(np.float32))
    idx = fg.tensor(r.integers(0, 700, 900))
    src = fg.tensor(r.standard_normal((900, 600)).astype(np.float32))
    col_idx = fg.tensor(r.integers(0, 600, (700, 600)))
    flat_idx = fg.tensor(r.integers(0, 700 * 600, 500_000))
    flat_src = fg.tensor(r.standard_normal(500_000).astype(np.float32))
    runs = []
    for n in (1, 2):
        with _threads(n):
            runs.append([
                x.index_add(0, idx, src),
                x.t().index_add(1, idx, src.t()),
                x.scatter_add(1, col_idx, x),
                x.reshape(-1).scatter_add(0, flat_idx, flat_src),
                x.reshape(-1).put(flat_idx, flat_src, accumulate=True),
                fg.zeros(700 * 600).index_put_((flat_idx,), flat_src, accumulate=True),
                x[idx], x[:, idx[:500] % 600],
                x.sum(), x.sum(0), x.norm(), x.norm(dim=1), x.amax(0), x.argmin(0), x.prod(1),
                x.sort(1)[1], x.topk(5, 0)[1], x.median(1)[1],
            ])  # fmt: skip
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


# ----- sorting and selection -----------------------------------------------------------


def _stable_order(row, descending):
    nan = np.isnan(row) if row.dtype.kind == "f" else np.zeros(row.shape, bool)
    filled = np.where(nan, 0, row).astype(np.float64)
    pos = np.arange(row.size)
    if descending:
        return np.lexsort((pos, -filled, ~nan))
    return np.lexsort((pos, filled, nan))


@st.composite
def rows_with_ties(draw):
    shape = draw(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6))
    el = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, 1e-40])
    from hypothesis.extra import numpy as hnp

    return draw(hnp.arrays(np.float32, shape, elements=el))


@given(x=rows_with_ties(), descending=st.booleans(), data=st.data())
def test_sort_is_stable_with_nan_last(x, descending, data):
    dim = data.draw(st.integers(-max(x.ndim, 1), max(x.ndim, 1) - 1))
    vals, idx = fg.tensor(x).sort(dim, descending=descending)
    moved = np.moveaxis(x, dim, -1) if x.ndim else x.reshape(1)
    want = np.apply_along_axis(lambda r: _stable_order(r, descending), -1, moved) \
        if moved.size else np.zeros(moved.shape, np.int64)  # fmt: skip
    got = np.moveaxis(idx.numpy(), dim, -1) if x.ndim else idx.numpy().reshape(1)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(x, idx.numpy(), dim)
                                  if x.ndim else x)  # fmt: skip


@given(x=rows_with_ties(), largest=st.booleans(), data=st.data())
def test_topk_kthvalue_median_against_the_stable_order(x, largest, data):
    if x.ndim == 0 or x.size == 0:
        return
    n = x.shape[-1]
    k = data.draw(st.integers(0, n))
    vals, idx = fg.tensor(x).topk(k, -1, largest=largest)
    order = np.apply_along_axis(lambda r: _stable_order(r, largest), -1, x)
    np.testing.assert_array_equal(idx.numpy(), order[..., :k])
    np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(x, order[..., :k], -1))
    asc = np.apply_along_axis(lambda r: _stable_order(r, False), -1, x)
    kk = data.draw(st.integers(1, n))
    v, i = fg.tensor(x).kthvalue(kk, -1)
    np.testing.assert_array_equal(i.numpy(), asc[..., kk - 1])
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, asc[..., kk - 1:kk], -1)[..., 0])
    v, i = fg.tensor(x).median(-1)
    nan_any = np.isnan(x).any(-1)
    first_nan = np.argmax(np.isnan(x), -1)
    want = np.where(nan_any, first_nan, asc[..., (n - 1) // 2])
    np.testing.assert_array_equal(i.numpy(), want)
    v, i = fg.tensor(x).nanmedian(-1)
    valid = (~np.isnan(x)).sum(-1)
    rank = np.maximum(valid - 1, 0) // 2
    np.testing.assert_array_equal(i.numpy(), np.take_along_axis(asc, rank[..., None], -1)[..., 0])


def test_large_sort_topk_against_numpy():
    r = np.random.default_rng(7)
    x = r.standard_normal((64, 3000)).astype(np.float32)
    x[::7, ::13] = np.nan
    x[::5, 1::3] = 0.5  # ties
    t = fg.tensor(x)
    for desc in (False, True):
        order = np.apply_along_axis(lambda row, d=desc: _stable_order(row, d), 1, x)
        np.testing.assert_array_equal(t.argsort(1, descending=desc).numpy(), order)
        np.testing.assert_array_equal(t.topk(17, 1, largest=desc)[1].numpy(), order[:, :17])
    asc = np.apply_along_axis(lambda row: _stable_order(row, False), 0, x)
    np.testing.assert_array_equal(t.sort(0)[1].numpy(), asc)
    np.testing.assert_array_equal(t.kthvalue(10, 0)[1].numpy(), asc[9])
    np.testing.assert_array_equal(t.msort().numpy(), np.take_along_axis(x, asc, 0))


def test_sort_every_dtype():
    base = np.array([[3, 1, 4, 1, 5, 9, 2, 6], [5, 3, 5, 8, 9, 7, 9, 3]])
    for dt in ALL_DTYPES:
        t = fg.tensor(base).to(dt)
        a = _np(t)
        for desc in (False, True):
            order = np.apply_along_axis(lambda r, d=desc: _stable_order(r, d), 1, a)
            v, i = t.sort(1, descending=desc)
            assert v.dtype == dt
            np.testing.assert_array_equal(i.numpy(), order)
            np.testing.assert_array_equal(_np(v), np.take_along_axis(a, order, 1))
            np.testing.assert_array_equal(t.topk(3, 1, largest=desc)[1].numpy(), order[:, :3])
        if dt != fg.bool:
            np.testing.assert_array_equal(t.kthvalue(2, 1)[0].to(fg.float64).numpy(),
                                          np.sort(a.astype(np.float64), 1)[:, 1])  # fmt: skip
    neg = fg.tensor([[-3, 100, -128, 127, 0]], dtype=fg.int8)
    np.testing.assert_array_equal(neg.sort(1)[0].numpy(), [[-128, -3, 0, 100, 127]])
    big = fg.tensor([[2**62, -(2**62), 3, -(2**63)]])
    np.testing.assert_array_equal(big.argsort(1).numpy(), [[3, 1, 2, 0]])


def test_mode_with_radix_order():
    x = np.array([[1.0, 2.0, 2.0, 1.0, 3.0], [np.nan, 4.0, np.nan, 4.0, 0.0]])
    v, i = fg.tensor(x).mode(1)
    # The smallest most frequent value at its last occurrence; NaNs count as one value.
    np.testing.assert_array_equal(v.numpy(), [1.0, 4.0])
    np.testing.assert_array_equal(i.numpy(), [3, 3])


@FEW
@given(x=values(op_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4), unique=True))
def test_selection_gradients(x):
    n = x.shape[-1]
    check_grads(lambda t: t.sort(-1, descending=True)[0], x)
    check_grads(lambda t: t.topk(max(1, n // 2), -1)[0], x)
    check_grads(lambda t: t.kthvalue(n, -1)[0], x)
    check_grads(lambda t: t.median(-1)[0], x)


# ----- reductions along leading dimensions ---------------------------------------------


def _first_extreme(a, axis, is_max):
    moved = np.moveaxis(a, axis, -1)
    out = np.empty(moved.shape[:-1], np.int64)
    for pos in np.ndindex(*moved.shape[:-1]):
        row = moved[pos]
        nan = np.flatnonzero(np.isnan(row))
        out[pos] = nan[0] if nan.size else (np.argmax(row) if is_max else np.argmin(row))
    return out


@given(data=st.data())
def test_extremes_along_leading_dims(data):
    shape = data.draw(op_shapes(min_dims=2, max_dims=3, min_side=1, max_side=5))
    from hypothesis.extra import numpy as hnp

    el = st.sampled_from([0.0, 1.0, -1.0, 2.0, np.nan, -np.inf])
    x = data.draw(hnp.arrays(np.float64, shape, elements=el))
    dim = data.draw(st.integers(0, len(shape) - 2))
    t = fg.tensor(x)
    for is_max in (True, False):
        want = _first_extreme(x, dim, is_max)
        got = (t.argmax if is_max else t.argmin)(dim)
        np.testing.assert_array_equal(got.numpy(), want)
        v, i = (t.max if is_max else t.min)(dim)
        np.testing.assert_array_equal(i.numpy(), want)
        red = (np.max if is_max else np.min)(x, axis=dim)
        np.testing.assert_array_equal(v.numpy(), red)
        np.testing.assert_array_equal((t.amax if is_max else t.amin)(dim).numpy(), red)


def test_extremes_and_norm_every_dtype():
    base = np.array([[[3, 1], [4, 1]], [[5, 9], [2, 6]], [[5, 3], [5, 8]]])
    for dt in ALL_DTYPES:
        t = fg.tensor(base).to(dt)
        a = _np(t)
        np.testing.assert_array_equal(_np(t.amax(0)), a.max(0))
        np.testing.assert_array_equal(_np(t.amin(1)), a.min(1))
        if dt != fg.bool:
            np.testing.assert_array_equal(t.argmax(0).numpy(), a.argmax(0))
            np.testing.assert_array_equal(t.max(1)[1].numpy(), a.argmax(1))
        if dt.is_floating_point:
            n = t.norm(dim=(1, 2))
            assert n.dtype == dt
            np.testing.assert_allclose(_np(n).astype(np.float64),
                                       np.sqrt((a.astype(np.float64) ** 2).sum((1, 2))),
                                       rtol=1e-2 if dt in (fg.float16, fg.bfloat16) else 1e-6)  # fmt: skip
        if dt not in (fg.bool,):
            got = _np(t.prod(2))
            want = a.astype(np.float32 if dt.is_floating_point else np.int64).prod(2)
            np.testing.assert_array_equal(got, want.astype(got.dtype))


@given(x=values(op_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)), data=st.data())
def test_norm_and_prod_against_numpy(x, data):
    t = fg.tensor(x)
    np.testing.assert_allclose(t.norm().numpy(), np.sqrt((x**2).sum()), rtol=1e-12)
    if x.ndim:
        dim = data.draw(st.integers(0, x.ndim - 1))
        np.testing.assert_allclose(t.norm(dim=dim).numpy(), np.sqrt((x**2).sum(dim)), rtol=1e-12)
        np.testing.assert_allclose(t.norm(dim=dim, keepdim=True).numpy(),
                                   np.sqrt((x**2).sum(dim, keepdims=True)), rtol=1e-12)  # fmt: skip
        np.testing.assert_allclose(t.prod(dim).numpy(), np.prod(x, dim), rtol=1e-12)


# ----- writes through one index tensor ------------------------------------------------


@given(case=indexed(min_dims=1), data=st.data())
def test_setitem_with_one_index_tensor_against_numpy(case, data):
    x, _, idx = case
    n0 = x.shape[0]
    i = np.array(data.draw(st.lists(st.integers(-n0, n0 - 1), max_size=5)), dtype=np.int64)
    i = np.unique(np.where(i < 0, i + n0, i)) - data.draw(st.sampled_from([0, n0]))
    val = np.arange(i.size * int(np.prod(x.shape[1:])), dtype=np.float64).reshape(
        (i.size,) + x.shape[1:]) - 3  # fmt: skip
    t = fg.tensor(x)
    t[fg.tensor(i)] = fg.tensor(val)
    want = x.copy()
    want[i] = val
    np.testing.assert_array_equal(t.numpy(), want)
    # A broadcast row, and an int32 index.
    t = fg.tensor(x)
    t[fg.tensor(i).to(fg.int32)] = fg.tensor(val[:1] if i.size else val)
    want = x.copy()
    want[i] = val[:1] if i.size else val
    np.testing.assert_array_equal(t.numpy(), want)


def test_setitem_repeated_rows_keep_the_last_and_errors():
    x = fg.zeros(4, 2)
    x[fg.tensor([1, 3, 1])] = fg.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    np.testing.assert_array_equal(x.numpy(), [[0, 0], [3, 3], [0, 0], [2, 2]])
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        x[fg.tensor([4])] = 1.0
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape"):
        x[fg.tensor([0, 1])] = fg.ones(3, 2)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes"):
        fg.zeros(3, 2, dtype=fg.int64)[fg.tensor([0])] = fg.ones(1, 2)


@FEW
@given(x=values(op_shapes(min_dims=2, max_dims=3, min_side=2, max_side=4)))
def test_setitem_gradients(x):
    i = fg.tensor([x.shape[0] - 1, 0])
    v = np.ones((2,) + x.shape[1:]) * 0.5

    def f(t, s):
        out = t * 1.0
        out[i] = s * 2.0
        return out

    check_grads(f, x, v)

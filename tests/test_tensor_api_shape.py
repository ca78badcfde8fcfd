"""Shape helpers (diff, tile, repeat_interleave, rot90, flips, the *stack and
atleast_* families), reductions (quantile, nansum, aminmax, std_mean, ...),
counting and sets, tensordot/inner/vdot, block_diag, integration, creation
(logspace, scalar_tensor, as_tensor/asarray) and windows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import FEW, check_grads, op_shapes, values


def T(a):
    return fg.tensor(np.asarray(a))


# ----- shape helpers -------------------------------------------------------------------


@FEW
@given(op_shapes(min_dims=1, max_dims=3), st.integers(0, 3), st.data())
def test_diff_values_and_grads(shape, n, data):
    a = data.draw(values(shape))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    np.testing.assert_allclose(fg.diff(T(a), n, dim).numpy(), np.diff(a, n, axis=dim))
    check_grads(lambda x: x.diff(n, dim), a)


def test_diff_prepend_append_and_bool():
    a = np.array([1.0, 4.0, 9.0])
    got = fg.diff(T(a), prepend=T([0.0]), append=T([16.0]))
    np.testing.assert_allclose(got.numpy(), np.diff(a, prepend=0, append=16))
    assert fg.diff(T(a), append=20.0).tolist() == [3.0, 5.0, 11.0]
    assert fg.diff(fg.tensor([True, True, False])).tolist() == [False, True]
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        fg.diff(fg.tensor(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative"):
        fg.diff(T(a), -1)


@FEW
@given(op_shapes(max_dims=3), st.lists(st.integers(1, 3), max_size=4), st.data())
def test_tile_values_and_grads(shape, reps, data):
    a = data.draw(values(shape))
    np.testing.assert_allclose(fg.tile(T(a), reps).numpy(), np.tile(a, reps))
    check_grads(lambda x: x.tile(tuple(reps)), a)


@FEW
@given(op_shapes(min_dims=1, max_dims=3), st.data())
def test_repeat_interleave_values_and_grads(shape, data):
    a = data.draw(values(shape))
    dim = data.draw(st.integers(0, len(shape) - 1))
    reps = np.array(data.draw(st.lists(st.integers(0, 3), min_size=shape[dim],
                                       max_size=shape[dim])), dtype=np.int64)  # fmt: skip
    np.testing.assert_allclose(
        fg.repeat_interleave(T(a), T(reps), dim).numpy(), np.repeat(a, reps, axis=dim)
    )
    np.testing.assert_allclose(T(a).repeat_interleave(2).numpy(), np.repeat(a, 2))
    check_grads(lambda x: x.repeat_interleave(T(reps), dim=dim), a)


def test_repeat_interleave_forms_and_errors():
    assert fg.repeat_interleave(fg.tensor([1, 0, 2])).tolist() == [0, 2, 2]
    x = fg.tensor([[1, 2], [3, 4]])
    assert x.repeat_interleave(fg.tensor(2), dim=0).tolist() == [[1, 2], [1, 2], [3, 4], [3, 4]]
    assert x.repeat_interleave(2, dim=1, output_size=4).shape == (2, 4)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(-1)
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim"):
        x.repeat_interleave(fg.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError, match="allocated size does not match required size"):
        x.repeat_interleave(2, dim=1, output_size=3)


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 5])
def test_rot90_matches_numpy(k):
    a = np.arange(24.0).reshape(2, 3, 4)
    for dims in ((0, 1), (1, 2), (2, 0), (-1, -2)):
        np.testing.assert_array_equal(fg.rot90(T(a), k, dims).numpy(), np.rot90(a, k, dims))


def test_rot90_errors_and_grads():
    x = fg.zeros(2, 3)
    with pytest.raises(RuntimeError, match="expected total rotation dims == 2, but got dims = 1"):
        x.rot90(1, (0,))
    with pytest.raises(RuntimeError, match="expected total dims >= 2, but got total dims = 1"):
        fg.zeros(3).rot90()
    with pytest.raises(RuntimeError, match="expected rotation dims to be different"):
        x.rot90(1, (1, -1))
    check_grads(lambda t: t.rot90(1, (0, 1)) * 2, np.arange(6.0).reshape(2, 3))


def test_flips_ravel_aliases():
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(fg.fliplr(T(a)).numpy(), np.fliplr(a))
    np.testing.assert_array_equal(T(a).flipud().numpy(), np.flipud(a))
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        fg.fliplr(fg.zeros(3))
    with pytest.raises(RuntimeError, match="Input must be >= 1-d."):
        fg.flipud(fg.tensor(1.0))
    np.testing.assert_array_equal(fg.ravel(T(a).t()).numpy(), a.T.ravel())
    b = np.zeros((2, 3, 4))
    assert fg.moveaxis(T(b), 0, -1).shape == (3, 4, 2)
    assert T(b).swapdims(0, 2).shape == (4, 3, 2)
    m = np.array([[0, 1], [2, 0]])
    np.testing.assert_array_equal(fg.argwhere(T(m)).numpy(), np.argwhere(m))


def test_atleast_and_stacks():
    s, v, m = fg.tensor(1.0), fg.tensor([1.0, 2.0]), fg.ones(2, 3)
    assert fg.atleast_1d(s).shape == (1,)
    assert [t.shape for t in fg.atleast_2d(s, v, m)] == [(1, 1), (1, 2), (2, 3)]
    assert [t.shape for t in fg.atleast_3d([s, v, m])] == [(1, 1, 1), (1, 2, 1), (2, 3, 1)]
    for a in (np.array(1.0), np.arange(2.0), np.ones((2, 3)), np.ones((2, 3, 4))):
        for n, ref in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d)):
            assert getattr(fg, f"atleast_{n}d")(T(a)).shape == ref(a).shape
    a, b = np.arange(3.0), np.arange(3.0, 6.0)
    for fn in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
        ref = getattr(np, fn) if fn != "row_stack" else np.vstack
        np.testing.assert_array_equal(getattr(fg, fn)([T(a), T(b)]).numpy(), ref([a, b]))
        A, B = a.reshape(3, 1), b.reshape(3, 1)
        np.testing.assert_array_equal(getattr(fg, fn)((T(A), T(B))).numpy(), ref([A, B]))
    with pytest.raises(RuntimeError, match="expects a non-empty TensorList"):
        fg.hstack([])
    check_grads(lambda x, y: fg.column_stack([x, y]), a, np.ones((3, 2)))


# ----- reductions ----------------------------------------------------------------------


def test_aminmax_count_nonzero_nan_reductions():
    a = np.array([[3.0, -1.0, 0.0], [2.0, 5.0, 0.0]])
    mn, mx = fg.aminmax(T(a))
    assert (mn.item(), mx.item()) == (-1.0, 5.0)
    r = T(a).aminmax(dim=1, keepdim=True)
    assert r.min.tolist() == [[-1.0], [0.0]] and r.max.tolist() == [[3.0], [5.0]]
    assert fg.aminmax(T(a), keepdim=True).min.shape == (1, 1)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        fg.aminmax(fg.zeros(0))
    assert fg.count_nonzero(T(a)).item() == 4
    assert T(a).count_nonzero(0).tolist() == [2, 2, 0]
    assert fg.count_nonzero(T(a), (0, 1)).item() == 4
    b = np.array([[1.0, np.nan], [np.nan, np.nan], [2.0, 4.0]])
    np.testing.assert_allclose(fg.nansum(T(b)).item(), np.nansum(b))
    np.testing.assert_allclose(fg.nansum(T(b), 1).numpy(), np.nansum(b, 1))
    want = np.nanmean(b, 0)
    np.testing.assert_allclose(fg.nanmean(T(b), 0).numpy(), want)
    np.testing.assert_allclose(T(b).nanmean(1).numpy()[[0, 2]], [1.0, 3.0])
    assert np.isnan(T(b).nanmean(1).numpy()[1])
    with pytest.raises(RuntimeError, match="expected input to have floating point dtype"):
        fg.nanmean(fg.tensor([1, 2]))
    check_grads(lambda x: fg.nansum(x * 2, 0), np.array([[1.0, 2.0], [3.0, 4.0]]))


def test_std_mean_var_mean():
    a = np.random.default_rng(1).normal(size=(3, 4))
    s, m = fg.std_mean(T(a), 1)
    np.testing.assert_allclose(s.numpy(), a.std(1, ddof=1))
    np.testing.assert_allclose(m.numpy(), a.mean(1))
    v, m = fg.var_mean(T(a), 0, correction=0, keepdim=True)
    np.testing.assert_allclose(v.numpy(), a.var(0, keepdims=True))
    assert m.shape == (1, 4)
    v, _ = fg.var_mean(T(a))
    np.testing.assert_allclose(v.item(), a.var(ddof=1))


@FEW
@given(op_shapes(min_dims=1, max_dims=3, min_side=1), st.data())
def test_quantile_matches_numpy_and_grads(shape, data):
    a = data.draw(values(shape, unique=True))
    q = data.draw(st.floats(0, 1))
    dim = data.draw(st.one_of(st.none(), st.integers(0, len(shape) - 1)))
    keep = data.draw(st.booleans())
    method = data.draw(st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]))
    want = np.quantile(a, q, axis=dim, keepdims=keep, method=method)
    got = fg.quantile(T(a), q, dim, keep, interpolation=method)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    qs = np.array([0.0, 0.3, 1.0])
    np.testing.assert_allclose(
        T(a).quantile(T(qs), dim, keep).numpy(),
        np.quantile(a, qs, axis=dim, keepdims=keep),
        rtol=1e-12,
    )
    check_grads(lambda x: fg.quantile(x, q, dim, keep), a)


def test_nanquantile_and_errors():
    a = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [4.0, 2.0, 0.0]])
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanquantile(a, 0.25, axis=1)
    np.testing.assert_allclose(fg.nanquantile(T(a), 0.25, 1).numpy(), want)
    q = fg.quantile(T(a), 0.5, 1).numpy()
    assert np.isnan(q[0]) and np.isnan(q[1]) and q[2] == 2.0
    x = fg.ones(3)
    with pytest.raises(RuntimeError, match="q values must be in the range \\[0, 1\\]"):
        x.quantile(1.5)
    with pytest.raises(RuntimeError, match="input tensor must be either float or double dtype"):
        fg.quantile(fg.tensor([1, 2]), 0.5)
    with pytest.raises(ValueError, match="interpolation must be one of linear"):
        x.quantile(0.5, interpolation="cubic")


# ----- counting and sets ---------------------------------------------------------------


def test_bincount_histc():
    x = np.array([0, 3, 3, 1, 7])
    assert fg.bincount(T(x)).tolist() == np.bincount(x).tolist()
    assert T(x).bincount(minlength=10).shape == (10,)
    w = np.array([0.5, 1.0, 1.5, 2.0, 2.5])
    got = fg.bincount(T(x), T(w))
    np.testing.assert_allclose(got.numpy(), np.bincount(x, w))
    assert got.dtype == fg.float64
    with pytest.raises(RuntimeError, match="1-d non-negative integral inputs"):
        fg.bincount(fg.tensor([-1, 2]))
    v = np.array([1.0, 2.0, 1.0, 4.0, 2.5])
    np.testing.assert_allclose(
        fg.histc(T(v), bins=4, min=0, max=4).numpy(), np.histogram(v, 4, (0, 4))[0]
    )
    np.testing.assert_allclose(fg.histc(T(v), bins=3).numpy(), np.histogram(v, 3)[0])
    assert fg.histc(T(v), bins=2, min=3, max=4).tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        fg.histc(T(v), min=2, max=1)


def test_isin_unique_consecutive():
    a = np.array([[1, 2], [3, 4]])
    assert fg.isin(T(a), T([2, 3])).tolist() == [[False, True], [True, False]]
    assert fg.isin(T(a), 4, invert=True).tolist() == [[True, True], [True, False]]
    assert fg.isin(3, T(a)).item() is True
    # A 0-d input gives a 0-d result, as in PyTorch.
    assert fg.isin(fg.tensor(2), T(a)).shape == ()
    assert fg.isin(3, T(a)).shape == ()
    x = fg.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    out, inv, cnt = fg.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert out.tolist() == [1, 2, 3, 1, 2]
    assert inv.tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert cnt.tolist() == [2, 2, 1, 2, 1]
    m = fg.tensor([[1, 1, 2, 2], [3, 3, 3, 3]])
    assert m.unique_consecutive(dim=1).tolist() == [[1, 2], [3, 3]]


def test_unravel_index():
    idx = np.array([0, 5, 7, -1])
    got = fg.unravel_index(T(idx), (2, 4))
    want = np.unravel_index(idx % 8, (2, 4))
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
    assert [g.item() for g in fg.unravel_index(fg.tensor(5), (2, 3))] == [1, 2]
    with pytest.raises(RuntimeError, match="'indices' must be in range"):
        fg.unravel_index(fg.tensor([8]), (2, 4))
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
        fg.unravel_index(fg.tensor([1.0]), (2, 4))


# ----- products ------------------------------------------------------------------------


@FEW
@given(st.data())
def test_tensordot_inner_vdot(data):
    a = data.draw(values((2, 3, 4)))
    b = data.draw(values((3, 4, 2)))
    np.testing.assert_allclose(fg.tensordot(T(a), T(b)).numpy(), np.tensordot(a, b))
    np.testing.assert_allclose(
        fg.tensordot(T(a), T(b), ([1, 0], [0, 2])).numpy(), np.tensordot(a, b, ([1, 0], [0, 2]))
    )
    np.testing.assert_allclose(fg.tensordot(T(a), T(b), 0).numpy(), np.tensordot(a, b, 0))
    check_grads(lambda x, y: fg.tensordot(x, y, 1), a, b.transpose(1, 0, 2))
    c = data.draw(values((5, 4)))
    np.testing.assert_allclose(fg.inner(T(a), T(c)).numpy(), np.inner(a, c))
    check_grads(lambda x, y: x.inner(y), a, c)
    u, v = data.draw(values((4,))), data.draw(values((4,)))
    np.testing.assert_allclose(fg.vdot(T(u), T(v)).item(), np.vdot(u, v))


def test_product_errors():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        fg.tensordot(fg.zeros(2, 3), fg.zeros(2, 3), 1)
    with pytest.raises(RuntimeError, match="inner\\(\\) the last dimension must match"):
        fg.inner(fg.zeros(2, 3), fg.zeros(2))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        fg.vdot(fg.zeros(2, 2), fg.zeros(2))
    assert fg.inner(fg.tensor(2.0), fg.tensor([1.0, 3.0])).tolist() == [2.0, 6.0]


def test_block_diag():
    a, b, c = np.ones((2, 2)), np.array([3.0, 4.0, 5.0]), np.array(7.0)
    got = fg.block_diag(T(a), T(b), T(c))
    want = np.zeros((4, 6))
    want[:2, :2] = a
    want[2, 2:5] = b
    want[3, 5] = 7.0
    np.testing.assert_array_equal(got.numpy(), want)
    assert fg.block_diag(fg.tensor([1, 2]), fg.tensor([[1.5]])).dtype == fg.float32
    with pytest.raises(RuntimeError, match="Input tensors must have 2 or fewer dimensions"):
        fg.block_diag(fg.zeros(1, 1, 1))
    check_grads(lambda x, y: fg.block_diag(x, y), a, b)


# ----- integration ---------------------------------------------------------------------


@FEW
@given(op_shapes(min_dims=1, max_dims=3, min_side=1), st.data())
def test_trapezoid_and_cumulative(shape, data):
    y = data.draw(values(shape))
    dim = data.draw(st.integers(0, len(shape) - 1))
    np.testing.assert_allclose(fg.trapezoid(T(y), dim=dim).numpy(), np.trapezoid(y, axis=dim))
    np.testing.assert_allclose(fg.trapz(T(y), dx=0.5, dim=dim).numpy(),
                               np.trapezoid(y, dx=0.5, axis=dim))  # fmt: skip
    x = np.cumsum(np.arange(1.0, shape[dim] + 1))
    np.testing.assert_allclose(fg.trapezoid(T(y), T(x), dim=dim).numpy(),
                               np.trapezoid(y, x, axis=dim))  # fmt: skip
    cum = fg.cumulative_trapezoid(T(y), dim=dim).numpy()
    n = shape[dim]
    for k in range(1, n):
        np.testing.assert_allclose(
            np.take(cum, k - 1, axis=dim),
            np.trapezoid(np.take(y, range(k + 1), axis=dim), axis=dim),
        )
    check_grads(lambda t: fg.trapezoid(t, T(x), dim=dim), y)


# ----- creation ------------------------------------------------------------------------


def test_logspace_scalar_tensor():
    np.testing.assert_allclose(fg.logspace(0, 3, 4).numpy(), [1, 10, 100, 1000])
    assert fg.logspace(0, 1, 3, base=2.0, dtype=fg.float64).dtype == fg.float64
    np.testing.assert_allclose(fg.logspace(0, 1, 3, base=2.0).numpy(), 2 ** np.linspace(0, 1, 3))
    s = fg.scalar_tensor(3)
    assert s.shape == () and s.dtype == fg.float32 and s.item() == 3.0
    assert fg.scalar_tensor(2, dtype=fg.int64).dtype == fg.int64


def test_as_tensor_asarray_sharing():
    a = np.arange(3.0)
    t = fg.as_tensor(a)
    a[0] = 9.0
    assert t[0].item() == 9.0
    x = fg.ones(2)
    assert fg.as_tensor(x) is x and fg.asarray(x) is x
    assert fg.as_tensor(x, dtype=fg.float64).dtype == fg.float64
    assert fg.asarray(x, copy=True) is not x
    assert fg.as_tensor([1, 2]).dtype == fg.int64
    b = np.arange(3.0)
    c = fg.asarray(b, copy=True)
    b[0] = 5.0
    assert c[0].item() == 0.0
    with pytest.raises(ValueError, match="without a copy"):
        fg.asarray([1, 2], copy=False)
    assert fg.asarray([1.0], requires_grad=True).requires_grad


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8])
def test_windows(n, periodic):
    m = n + 1 if periodic else n

    def ref(fn):
        return fn(m)[:n] if n > 1 else np.ones(n)

    k = np.arange(m)
    cases = {
        "hann_window": lambda: ref(np.hanning),
        "hamming_window": lambda: ref(lambda L: 0.54 - 0.46 * np.cos(2 * np.pi * k / (L - 1))),
        "blackman_window": lambda: ref(np.blackman),
        "bartlett_window": lambda: ref(np.bartlett),
        "kaiser_window": lambda: ref(lambda L: np.kaiser(L, 12.0)),
    }
    for name, want in cases.items():
        got = getattr(fg, name)(n, periodic, dtype=fg.float64)
        assert got.shape == (n,) and got.dtype == fg.float64
        np.testing.assert_allclose(got.numpy(), want(), atol=1e-12)
    assert fg.hann_window(4).dtype == fg.float32
    with pytest.raises(RuntimeError, match="requires non-negative window_length"):
        fg.hann_window(-1)

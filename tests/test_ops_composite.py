"""Composed ops (tril/triu, diag, roll, tensor_split, meshgrid, kron, cross, cdist,
lerp, the addmm family, unique, searchsorted, bucketize): values against NumPy,
gradients against finite differences (first and second order)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from ferrograd.autograd import gradcheck, gradgradcheck


def arr(shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape)


def leaf(a):
    return fg.tensor(a, requires_grad=True)


def check(fn, *arrays):
    xs = tuple(leaf(a) for a in arrays)
    assert gradcheck(fn, xs)
    assert gradgradcheck(fn, xs)


mats = hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=4)


@given(mats, st.integers(-4, 4), st.integers(0, 999))
def test_tril_triu(shape, k, seed):
    a = arr(shape, seed)
    np.testing.assert_array_equal(fg.tril(fg.tensor(a), k).numpy(), np.tril(a, k))
    np.testing.assert_array_equal(fg.tensor(a).triu(k).numpy(), np.triu(a, k))
    check(lambda t: fg.tril(t, k), a)
    check(lambda t: t.triu(k), a)


def test_tril_keeps_infinities_out_of_the_zeroed_part():
    x = fg.tensor([[1.0, float("-inf")], [2.0, 3.0]])
    assert fg.tril(x).tolist() == [[1.0, 0.0], [2.0, 3.0]]
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        fg.tril(fg.ones(3))


def test_tril_in_place():
    x = fg.ones(3, 3)
    x.tril_()
    np.testing.assert_array_equal(x.numpy(), np.tril(np.ones((3, 3))))


def test_tri_indices():
    np.testing.assert_array_equal(
        fg.tril_indices(3, 4, 1).numpy(), np.array(np.tril_indices(3, 1, 4))
    )
    np.testing.assert_array_equal(
        fg.triu_indices(4, 3, -1).numpy(), np.array(np.triu_indices(4, -1, 3))
    )
    # Each call returns its own tensor: writing one leaves the next call's values alone.
    first = fg.tril_indices(3, 4, 1)
    first[0, 0] = 7
    first.add_(1)
    np.testing.assert_array_equal(
        fg.tril_indices(3, 4, 1).numpy(), np.array(np.tril_indices(3, 1, 4))
    )
    # A large table, built afresh, is the same.
    np.testing.assert_array_equal(
        fg.triu_indices(300, 400, 5).numpy(), np.array(np.triu_indices(300, 5, 400))
    )


@given(st.integers(1, 5), st.integers(-3, 3), st.integers(0, 999))
def test_diag(n, k, seed):
    v = arr((n,), seed)
    np.testing.assert_array_equal(fg.diag(fg.tensor(v), k).numpy(), np.diag(v, k))
    m = arr((n, n + 1), seed)
    np.testing.assert_array_equal(fg.diag(fg.tensor(m), k).numpy(), np.diag(m, k))
    check(lambda t: fg.diag(t, k), v)
    check(lambda t: fg.diag(t, k), m)


def test_diag_embed():
    v = arr((2, 3))
    out = fg.diag_embed(fg.tensor(v), 1).numpy()
    expected = np.stack([np.diag(row, 1) for row in v])
    np.testing.assert_array_equal(out, expected)
    out = fg.diag_embed(fg.tensor(v), 0, 0, 2).numpy()
    np.testing.assert_array_equal(out, np.stack([np.diag(r) for r in v]).transpose(1, 0, 2))
    check(lambda t: fg.diag_embed(t, -1), v)


@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_roll(shape, data):
    a = arr(shape)
    dim = data.draw(st.integers(0, len(shape) - 1))
    s = data.draw(st.integers(-7, 7))
    np.testing.assert_array_equal(fg.roll(fg.tensor(a), s, dim).numpy(), np.roll(a, s, dim))
    np.testing.assert_array_equal(fg.tensor(a).roll(s).numpy(), np.roll(a, s))
    check(lambda t: fg.roll(t, s, dim), a)


def test_roll_several_dims_and_errors():
    a = arr((3, 4))
    np.testing.assert_array_equal(
        fg.roll(fg.tensor(a), (1, -2), (0, 1)).numpy(), np.roll(a, (1, -2), (0, 1))
    )
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        fg.roll(fg.tensor(a), (1, 2), 0)


@given(st.integers(0, 9), st.integers(1, 5))
def test_tensor_split_sections(n, sections):
    a = np.arange(float(n))
    parts = fg.tensor_split(fg.tensor(a), sections)
    expected = np.array_split(a, sections)
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        np.testing.assert_array_equal(p.numpy(), e)


def test_tensor_split_indices_views_and_grad():
    x = fg.arange(10.0).requires_grad_()
    parts = x.tensor_split([2, 5, 20])
    assert [p.tolist() for p in parts] == [
        [0.0, 1.0],
        [2.0, 3.0, 4.0],
        list(map(float, range(5, 10))),
        [],
    ]
    assert parts[1]._base is x
    sum(p.sum() * (i + 1) for i, p in enumerate(parts)).backward()
    assert x.grad.tolist() == [1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0, 3.0]
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0"):
        fg.tensor_split(x, 0)


def test_hsplit_vsplit_dsplit():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = fg.tensor(a)
    for ours, theirs in (
        (fg.hsplit(t, 3), np.hsplit(a, 3)),
        (fg.vsplit(t, [1]), np.vsplit(a, [1])),
        (fg.dsplit(t, 2), np.dsplit(a, 2)),
    ):
        assert len(ours) == len(theirs)
        for p, e in zip(ours, theirs):
            np.testing.assert_array_equal(p.numpy(), e)
    with pytest.raises(RuntimeError, match="not divisible by the split_size 2"):
        fg.hsplit(t, 2)
    with pytest.raises(RuntimeError, match="at least 3 dimension"):
        fg.dsplit(fg.ones(2, 2), 2)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    x, y, z = np.arange(3.0), np.arange(2.0) + 10, np.arange(4.0) - 5
    ours = fg.meshgrid(fg.tensor(x), fg.tensor(y), fg.tensor(z), indexing=indexing)
    theirs = np.meshgrid(x, y, z, indexing=indexing)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t)
    check(lambda a, b: fg.meshgrid(a, b, indexing=indexing)[1] * 1.0, x, y)


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning, match="indexing argument"):
        fg.meshgrid(fg.ones(2), fg.ones(3))


def test_cartesian_prod():
    a, b = [1, 2], [3, 4, 5]
    out = fg.cartesian_prod(fg.tensor(a), fg.tensor(b))
    assert out.tolist() == [list(p) for p in itertools.product(a, b)]


@given(
    hnp.array_shapes(min_dims=1, max_dims=3, max_side=3),
    hnp.array_shapes(min_dims=1, max_dims=3, max_side=3),
)
def test_kron(sa, sb):
    a, b = arr(sa, 1), arr(sb, 2)
    np.testing.assert_allclose(fg.kron(fg.tensor(a), fg.tensor(b)).numpy(), np.kron(a, b))
    check(fg.kron, a, b)


@given(st.integers(1, 4), st.sampled_from([0, 1]))
def test_cross(n, dim):
    shape = (3, n) if dim == 0 else (n, 3)
    a, b = arr(shape, 1), arr(shape, 2)
    np.testing.assert_allclose(
        fg.cross(fg.tensor(a), fg.tensor(b), dim=dim).numpy(), np.cross(a, b, axis=dim)
    )
    check(lambda x, y: fg.cross(x, y, dim=dim), a, b)
    with pytest.raises(RuntimeError, match="must have length 3"):
        fg.cross(fg.ones(4, 2), fg.ones(4, 2), dim=1)


@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.sampled_from([1.0, 2.0, 3.0]))
def test_cdist(p_rows, r_rows, m, p):
    a, b = arr((p_rows, m), 1), arr((r_rows, m), 2)
    expected = (np.abs(a[:, None, :] - b[None, :, :]) ** p).sum(-1) ** (1 / p)
    np.testing.assert_allclose(
        fg.cdist(fg.tensor(a), fg.tensor(b), p).numpy(), expected, rtol=1e-12
    )
    check(lambda x, y: fg.cdist(x, y, p), a, b)


def test_cdist_errors():
    with pytest.raises(RuntimeError, match="same number of columns"):
        fg.cdist(fg.ones(2, 3), fg.ones(2, 4))
    with pytest.raises(RuntimeError, match="at least 2D"):
        fg.cdist(fg.ones(3), fg.ones(2, 3))


def test_lerp_and_the_add_product_family():
    a, b, c = arr((3, 4), 1), arr((3, 4), 2), arr((3, 4), 3) + 3
    w = 0.3
    np.testing.assert_allclose(fg.lerp(fg.tensor(a), fg.tensor(b), w).numpy(), a + w * (b - a))
    np.testing.assert_allclose(
        fg.addcmul(fg.tensor(a), fg.tensor(b), fg.tensor(c), value=0.5).numpy(), a + 0.5 * b * c
    )
    np.testing.assert_allclose(
        fg.addcdiv(fg.tensor(a), fg.tensor(b), fg.tensor(c), value=-2).numpy(), a - 2 * b / c
    )
    check(lambda x, y, z: fg.addcdiv(x, y, z, value=0.5), a, b, c)
    m1, m2, bias = arr((3, 5), 4), arr((5, 4), 5), arr((4,), 6)
    np.testing.assert_allclose(
        fg.addmm(fg.tensor(bias), fg.tensor(m1), fg.tensor(m2), beta=0.5, alpha=2).numpy(),
        0.5 * bias + 2 * m1 @ m2,
    )
    check(lambda i, x, y: fg.addmm(i, x, y, beta=0.5, alpha=2), bias, m1, m2)
    b1, b2, inp = arr((2, 3, 4), 7), arr((2, 4, 5), 8), arr((3, 5), 9)
    np.testing.assert_allclose(
        fg.baddbmm(fg.tensor(inp), fg.tensor(b1), fg.tensor(b2)).numpy(), inp + b1 @ b2
    )
    np.testing.assert_allclose(
        fg.addbmm(fg.tensor(inp), fg.tensor(b1), fg.tensor(b2)).numpy(), inp + (b1 @ b2).sum(0)
    )
    v = arr((5,), 10)
    np.testing.assert_allclose(
        fg.addmv(fg.tensor(arr((3,))), fg.tensor(m1), fg.tensor(v)).numpy(), arr((3,)) + m1 @ v
    )
    np.testing.assert_allclose(
        fg.addr(fg.tensor(a), fg.tensor(arr((3,))), fg.tensor(arr((4,), 1))).numpy(),
        a + np.outer(arr((3,)), arr((4,), 1)),
    )


def test_beta_zero_ignores_nan_in_input():
    bias = fg.full((2, 2), float("nan"))
    out = fg.addmm(bias, fg.eye(2), fg.eye(2), beta=0)
    assert out.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_in_place_lerp_and_addcmul():
    x = fg.zeros(3)
    x.lerp_(fg.ones(3), 0.25)
    assert x.tolist() == [0.25, 0.25, 0.25]
    x.addcmul_(fg.ones(3), fg.full((3,), 2.0), value=0.5)
    assert x.tolist() == [1.25, 1.25, 1.25]


def test_unique():
    x = fg.tensor([[3, 1], [3, 2]])
    u, inv, counts = fg.unique(x, return_inverse=True, return_counts=True)
    assert (
        u.tolist() == [1, 2, 3]
        and inv.tolist() == [[2, 0], [2, 1]]
        and counts.tolist() == [1, 1, 2]
    )
    rows = fg.unique(fg.tensor([[1, 2], [0, 5], [1, 2]]), dim=0)
    assert rows.tolist() == [[0, 5], [1, 2]]
    assert fg.tensor([2.0, 2.0, 1.0]).unique().tolist() == [1.0, 2.0]


def test_searchsorted_and_bucketize():
    seq = fg.tensor([1, 3, 5, 7, 9])
    vals = fg.tensor([[3, 6, 9], [3, 6, 1]])
    assert fg.searchsorted(seq, vals).tolist() == [[1, 3, 4], [1, 3, 0]]
    assert fg.searchsorted(seq, vals, right=True).tolist() == [[2, 3, 5], [2, 3, 1]]
    assert fg.searchsorted(seq, vals, side="right").tolist() == [[2, 3, 5], [2, 3, 1]]
    rows = fg.tensor([[1, 3, 5, 7, 9], [2, 4, 6, 8, 10]])
    assert fg.searchsorted(rows, vals).tolist() == [[1, 3, 4], [1, 2, 0]]
    i32 = fg.searchsorted(seq, vals, out_int32=True)
    assert i32.dtype == fg.int32 and i32.tolist() == [[1, 3, 4], [1, 3, 0]]
    assert fg.bucketize(fg.tensor([1, 5, 9]), fg.tensor([1, 3, 5, 7])).tolist() == [0, 2, 4]
    assert fg.bucketize(fg.tensor([1, 5, 9]), fg.tensor([1, 3, 5, 7]), right=True).tolist() == [
        1,
        3,
        4,
    ]
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right'"):
        fg.searchsorted(seq, vals, side="middle")
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        fg.bucketize(vals, rows)


@pytest.mark.parametrize(("seq_shape", "vals_shape"), [((2, 3), (2, 0)), ((0, 3), (0, 2)),
                                                       ((2, 0), (2, 2))])
def test_searchsorted_rows_with_no_values_or_no_rows(seq_shape, vals_shape):
    out = fg.searchsorted(fg.zeros(*seq_shape), fg.ones(*vals_shape))
    assert tuple(out.shape) == vals_shape and out.dtype == fg.int64
    assert out.tolist() == np.full(vals_shape, 0 if seq_shape[-1] == 0 else seq_shape[-1]).tolist()


def _bisect(seq, v, right):
    """PyTorch's documented search: move right while not seq[mid] >= v (> v with right)."""
    lo, hi = 0, len(seq)
    while lo < hi:
        mid = (lo + hi) // 2
        if not (seq[mid] > v if right else seq[mid] >= v):
            lo = mid + 1
        else:
            hi = mid
    return lo


_SEARCH_VALUES = st.sampled_from([-2.0, -0.0, 0.0, 1.0, 1.5, 3.0, float("nan"), float("inf")])


@given(st.lists(_SEARCH_VALUES, max_size=9), st.lists(_SEARCH_VALUES, max_size=5),
       st.booleans(), st.booleans())
def test_searchsorted_follows_the_bisection_sorted_or_not(seq, vals, right, sort):
    # Sorted sequences take NumPy's search, the others (and NaN ones) the bisection.
    if sort:
        seq = sorted(seq, key=lambda v: (v != v, v))  # NaN last, as torch.sort puts it
    got = fg.searchsorted(fg.tensor(seq, dtype=fg.float64), fg.tensor(vals, dtype=fg.float64),
                          right=right)
    assert got.tolist() == [_bisect(seq, v, right) for v in vals]


def test_tri_indices_bad_sizes():
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        fg.tril_indices(-1, 3)
    with pytest.raises(RuntimeError, match="DefaultCPUAllocator: can't allocate memory"):
        fg.triu_indices(2**31, 2**31)
    with pytest.raises(TypeError):
        fg.tril_indices(2.5, 3)


@pytest.mark.parametrize("weight", [0.0, 0.25, 0.5, 0.75, 1.0, -0.3, 1.7])
def test_lerp_is_computed_from_the_nearer_end_and_exact_at_both(weight):
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal(50).astype(np.float32), rng.standard_normal(50).astype(np.float32)
    got = fg.lerp(fg.tensor(a), fg.tensor(b), weight).numpy()
    w = np.float32(weight)
    # The two-sided form of PyTorch's lerp, each step rounded in float32.
    want = a + w * (b - a) if abs(weight) < 0.5 else b - (b - a) * (np.float32(1) - w)
    np.testing.assert_array_equal(got, want)
    if weight == 1.0:
        np.testing.assert_array_equal(got, b)
        np.testing.assert_array_equal(fg.tensor(a).lerp_(fg.tensor(b), weight).numpy(), b)
    if weight == 0.0:
        np.testing.assert_array_equal(got, a)


def test_lerp_with_a_tensor_weight_on_both_sides_of_one_half():
    rng = np.random.default_rng(12)
    a, b = (fg.tensor(rng.standard_normal(6), requires_grad=True) for _ in range(2))
    w = fg.tensor([0.0, 0.2, 0.49, 0.51, 0.9, 1.0], dtype=fg.float64, requires_grad=True)
    out = fg.lerp(a, b, w)
    np.testing.assert_array_equal(out.detach().numpy()[[0, 5]], [a.detach().numpy()[0], b.detach().numpy()[5]])
    assert gradcheck(fg.lerp, (a, b, w))
    assert gradgradcheck(fg.lerp, (a, b, w))


def _f32(*shapes, seed=20):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("shapes", [((4, 5),) * 3, ((4, 5), (1, 5), ()), ((4, 1), (5,), (4, 5))])
def test_fused_lerp_and_add_products_round_as_the_step_by_step_formula(shapes):
    """One pass, each step rounded in float32 as PyTorch's formulas round it:
    ``input + value * (t1 * t2)`` (``/``), lerp from the nearer end; broadcast
    and one-element operands included."""
    a, b, c = _f32(*shapes)
    c = np.where(np.abs(c) < 0.1, np.float32(0.7), c).astype(np.float32)
    A, B, C = (fg.from_numpy(x.copy()) for x in (a, b, c))
    v = np.float32(0.3)
    np.testing.assert_array_equal(fg.addcmul(A, B, C, value=0.3).numpy(), a + v * (b * c))
    np.testing.assert_array_equal(fg.addcdiv(A, B, C, value=0.3).numpy(), a + v * (b / c))
    np.testing.assert_array_equal(fg.addcmul(A, B, C).numpy(), a + b * c)
    np.testing.assert_array_equal(fg.addcdiv(A, B, C).numpy(), a + b / c)
    w = np.concatenate([[0.0, 0.5, 1.0, -0.2, 1.3, 0.49999997], np.linspace(-1, 2, 30)])
    w = np.resize(w, c.shape).astype(np.float32)
    W = fg.from_numpy(w.copy())
    d = b - a
    want = np.where(np.abs(w) < 0.5, a + w * d, b - d * (np.float32(1) - w))
    np.testing.assert_array_equal(fg.lerp(A, B, W).numpy(), want)


def test_fused_lerp_and_add_products_on_transposed_operands_keep_their_layout():
    a, b, c = _f32((6, 9), (6, 9), (6, 9))
    A, B, C = (fg.from_numpy(np.ascontiguousarray(x.T)).t() for x in (a, b, c))
    for got, want in [
        (fg.lerp(A, B, C), np.where(np.abs(c) < 0.5, a + c * (b - a), b - (b - a) * (1 - c))),
        (fg.lerp(A, B, 0.75), b - (b - a) * np.float32(0.25)),
        (fg.addcmul(A, B, C, value=2), a + np.float32(2) * (b * c)),
    ]:
        assert got.stride() == (1, 6)
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_lerp_and_add_products_in_half_precision(dtype):
    a, b, c = (fg.tensor(x.astype(np.float64)).to(getattr(fg, dtype)) for x in _f32(5, 5, 5))
    got = fg.addcmul(a, b, c, value=0.5).float().numpy()
    want = (a.float() + 0.5 * (b.float() * c.float())).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(fg.lerp(a, b, 0.3).float().numpy(),
                               (a.float() + 0.3 * (b.float() - a.float())).numpy(),
                               rtol=2e-2, atol=2e-2)


def test_fused_lerp_and_add_products_gradients_and_nodes():
    # Node names recorded from PyTorch 2: torch.lerp(a, b, 0.3).grad_fn is
    # LerpBackward0, with a tensor weight LerpBackward1; AddcmulBackward0,
    # AddcdivBackward0.
    a, b = arr((3, 4), 1), arr((3, 4), 2)
    w, row, den = arr((3, 4), 3) / 2 + 0.5, arr((1, 4), 4), arr((3, 1), 5) + 3
    la, lb, lw, lr, ld = (leaf(x) for x in (a, b, w, row, den))
    assert fg.lerp(la, lb, 0.3).grad_fn.name() == "LerpBackward0"
    assert fg.lerp(la, lb, lw).grad_fn.name() == "LerpBackward1"
    assert fg.addcmul(la, lb, lr).grad_fn.name() == "AddcmulBackward0"
    assert fg.addcdiv(la, lb, ld).grad_fn.name() == "AddcdivBackward0"
    check(lambda x, y: fg.lerp(x, y, 0.3), a, b)
    check(lambda x, y: fg.lerp(x, y, 0.8), a, row)
    check(fg.lerp, a, row, w)
    check(lambda x, y, z: fg.addcmul(x, y, z, value=-1.5), a, row, den)
    check(lambda x, y, z: fg.addcdiv(x, y, z, value=0.5), row, b, den)
    check(fg.addcdiv, a, b, den)
    # Without a graph of the backward, the one-pass gradients: the same values.
    for fn, xs in [(fg.lerp, (a, row, w)), (lambda x, y, z: fg.addcdiv(x, y, z, value=0.5), (row, b, den)),
                   (lambda x, y, z: fg.addcmul(x, y, z, value=2.0), (a, row, den))]:
        ls = [leaf(x) for x in xs]
        g = arr((3, 4), 9)
        fn(*ls).backward(fg.tensor(g))
        ref = [leaf(x) for x in xs]
        (fn(*ref) * fg.tensor(g)).sum().backward(create_graph=True)
        for p, q in zip(ls, ref):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.detach().numpy(), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist"])
def test_cdist_through_one_matrix_product(mode):
    # Past 25 rows (or when asked) Euclidean distances come from one product,
    # as PyTorch computes them; values and gradients still match the direct form.
    a, b = arr((30, 3), 1), arr((27, 3), 2)
    expected = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    got = fg.cdist(fg.tensor(a), fg.tensor(b), compute_mode=mode)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    check(lambda x, y: fg.cdist(x, y, compute_mode=mode), a[:4], b[:3])
    batched = fg.cdist(fg.tensor(np.stack([a, a])), fg.tensor(np.stack([b, b])))
    np.testing.assert_allclose(batched.numpy(), np.stack([expected, expected]), rtol=1e-10)
    with pytest.raises(ValueError, match="x is not a valid value for compute_mode"):
        fg.cdist(fg.tensor(a), fg.tensor(b), compute_mode="x")


@pytest.mark.parametrize("dx", [None, 0.5])
def test_trapezoid_with_even_spacing_is_the_sum_less_half_the_ends(dx):
    y = arr((4, 5), 3)
    step = 1.0 if dx is None else dx
    for dim in (0, 1, -1):
        want = np.trapezoid(y, dx=step, axis=dim)
        np.testing.assert_allclose(fg.trapezoid(fg.tensor(y), dx=dx, dim=dim).numpy(), want)
    check(lambda t: fg.trapezoid(t, dx=dx), y)
    assert fg.trapezoid(fg.zeros(3, 0)).shape == (3,)

"""ferrograd.linalg: values against NumPy, gradients (first and second order)
against finite differences and closed forms, PyTorch's degenerate-input
behaviour and error texts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.linalg as LA
from ferrograd.autograd import gradcheck, gradgradcheck

NP = {fg.float32: np.float32, fg.float64: np.float64}
TOL = {fg.float32: dict(rtol=2e-4, atol=2e-4), fg.float64: dict(rtol=1e-10, atol=1e-10)}


def to_np(t):
    return np.array(t.detach().numpy(), copy=True)


def T(a, dtype=fg.float64, requires_grad=False):
    return fg.from_numpy(np.array(a, dtype=NP[dtype])).requires_grad_(requires_grad)


def close(t, expected, dtype=fg.float64, **kw):
    tol = dict(TOL[dtype])
    tol.update(kw)
    assert t.dtype == dtype
    np.testing.assert_allclose(to_np(t), np.asarray(expected), **tol)


def orthogonal(rng, batch, n):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def well_conditioned(rng, batch, m, n=None, signed=True):
    """U diag(s) V^T with singular values in [1, 1 + 0.6 k]: distinct and
    away from zero, so every decomposition's derivative is smooth there."""
    n = m if n is None else n
    k = min(m, n)
    s = 1.0 + 0.6 * np.arange(k)[::-1] + 0.1 * rng.random(batch + (k,))
    U = orthogonal(rng, batch, m)[..., :k]
    V = orthogonal(rng, batch, n)[..., :k]
    if signed:
        U = U * rng.choice([-1.0, 1.0], size=batch + (1, k))
    return (U * s[..., None, :]) @ np.swapaxes(V, -1, -2)


def symmetric(rng, batch, n, spd=False):
    lo = 1.0 if spd else -2.0
    w = lo + 0.7 * np.arange(n) + 0.1 * rng.random(batch + (n,))
    Q = orthogonal(rng, batch, n)
    return (Q * w[..., None, :]) @ np.swapaxes(Q, -1, -2)


batches = st.sampled_from([(), (2,), (1, 2)])
sizes = st.integers(1, 3)
seeds = st.integers(0, 2**31 - 1)
dtypes = st.sampled_from([fg.float32, fg.float64])


def check_grads(fn, *inputs):
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


# ----- forward values against NumPy -------------------------------------------------------


@given(batches, sizes, seeds, dtypes)
def test_inv_det_slogdet_match_numpy(batch, n, seed, dtype):
    a = well_conditioned(np.random.default_rng(seed), batch, n).astype(NP[dtype])
    A = T(a, dtype)
    close(LA.inv(A), np.linalg.inv(a), dtype)
    close(LA.det(A), np.linalg.det(a), dtype)
    sign, logabs = LA.slogdet(A)
    ns, nl = np.linalg.slogdet(a)
    close(sign, ns, dtype)
    close(logabs, nl, dtype)
    assert tuple(LA.det(A).shape) == batch
    inverse, info = LA.inv_ex(A)
    close(inverse, np.linalg.inv(a), dtype)
    assert info.dtype == fg.int64 and tuple(info.shape) == batch and not to_np(info).any()


@given(batches, sizes, st.integers(1, 3), seeds, dtypes)
def test_solve_matches_numpy_with_broadcasting_and_vector_rhs(batch, n, k, seed, dtype):
    rng = np.random.default_rng(seed)
    a = well_conditioned(rng, batch, n).astype(NP[dtype])
    b = rng.standard_normal((2,) + batch + (n, k)).astype(NP[dtype])
    close(LA.solve(T(a, dtype), T(b, dtype)), np.linalg.solve(a, b), dtype)
    v = rng.standard_normal(batch + (n,)).astype(NP[dtype])
    x = LA.solve(T(a, dtype), T(v, dtype))
    close(x, np.linalg.solve(a, v[..., None])[..., 0], dtype)
    v1 = rng.standard_normal(n).astype(NP[dtype])
    close(LA.solve(T(a, dtype), T(v1, dtype)), np.linalg.solve(a, v1[:, None])[..., 0], dtype)
    # left=False solves X A = B
    bl = rng.standard_normal(batch + (k, n)).astype(NP[dtype])
    xl = LA.solve(T(a, dtype), T(bl, dtype), left=False)
    close(xl @ T(a, dtype), bl, dtype, rtol=1e-3 if dtype == fg.float32 else 1e-9)


@given(batches, sizes, seeds, dtypes, st.booleans())
def test_cholesky_matches_numpy(batch, n, seed, dtype, upper):
    a = symmetric(np.random.default_rng(seed), batch, n, spd=True).astype(NP[dtype])
    L = np.linalg.cholesky(a)
    got = LA.cholesky(T(a, dtype), upper=upper)
    close(got, np.swapaxes(L, -1, -2) if upper else L, dtype)
    close(fg.cholesky(T(a, dtype), upper=upper), np.swapaxes(L, -1, -2) if upper else L, dtype)


@given(batches, st.integers(1, 4), st.integers(1, 4), seeds, dtypes)
def test_qr_modes_match_numpy(batch, m, n, seed, dtype):
    a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(NP[dtype])
    for mode in ("reduced", "complete"):
        q, r = np.linalg.qr(a, mode=mode)
        Q, R = LA.qr(T(a, dtype), mode=mode)
        close(Q, q, dtype)
        close(R, r, dtype)
    Q, R = LA.qr(T(a, dtype), mode="r")
    assert tuple(Q.shape) == (0,)
    close(R, np.linalg.qr(a, mode="r"), dtype)
    res = fg.qr(T(a, dtype), some=False)
    assert tuple(res.Q.shape) == batch + (m, m)


@given(batches, sizes, seeds, dtypes, st.sampled_from(["L", "U"]))
def test_eigh_eigvalsh_match_numpy(batch, n, seed, dtype, uplo):
    rng = np.random.default_rng(seed)
    # Only the chosen triangle may be read: garbage in the other one.
    a = symmetric(rng, batch, n)
    junk = rng.standard_normal(a.shape)
    a = np.where(np.tril(np.ones((n, n))) > 0, a, junk) if uplo == "L" else np.where(
        np.triu(np.ones((n, n))) > 0, a, junk)
    a = a.astype(NP[dtype])
    w, v = np.linalg.eigh(a, UPLO=uplo)
    L, V = LA.eigh(T(a, dtype), UPLO=uplo)
    close(L, w, dtype)
    close(V.abs(), np.abs(v), dtype, atol=1e-3 if dtype == fg.float32 else 1e-8)
    close(LA.eigvalsh(T(a, dtype), UPLO=uplo), w, dtype)
    close(LA.eigvalsh(T(a, dtype, requires_grad=True), UPLO=uplo), w, dtype)


@given(batches, st.integers(1, 4), st.integers(1, 4), seeds, dtypes, st.booleans())
def test_svd_svdvals_match_numpy(batch, m, n, seed, dtype, full):
    a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(NP[dtype])
    u, s, vh = np.linalg.svd(a, full_matrices=full)
    U, S, Vh = LA.svd(T(a, dtype), full_matrices=full)
    close(S, s, dtype)
    close(U.abs(), np.abs(u), dtype, atol=1e-3 if dtype == fg.float32 else 1e-7)
    close(Vh.abs(), np.abs(vh), dtype, atol=1e-3 if dtype == fg.float32 else 1e-7)
    close(LA.svdvals(T(a, dtype)), s, dtype)
    # torch.svd: V (not Vh), reduced by default
    U2, S2, V2 = fg.svd(T(a, dtype))
    k = min(m, n)
    assert tuple(U2.shape) == batch + (m, k) and tuple(V2.shape) == batch + (n, k)
    close(U2 @ (S2.unsqueeze(-1) * V2.mT), a, dtype, atol=1e-4 if dtype == fg.float32 else 1e-9)
    Uz, Sz, Vz = T(a, dtype).svd(compute_uv=False)
    assert tuple(Uz.shape) == batch + (m, m) and not to_np(Uz).any()
    assert tuple(Vz.shape) == batch + (n, n) and not to_np(Vz).any()
    close(Sz, s, dtype)


@given(batches, st.integers(1, 4), st.integers(1, 4), seeds, dtypes)
def test_pinv_matrix_rank_match_numpy(batch, m, n, seed, dtype):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (m, n))
    if min(m, n) > 1:  # drop the rank by one
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        s[..., -1] = 0
        a = (u * s[..., None, :]) @ vh
    a = a.astype(NP[dtype])
    eps = np.finfo(NP[dtype]).eps
    rcond = eps * max(m, n)
    close(LA.pinv(T(a, dtype)), np.linalg.pinv(a, rcond=rcond), dtype,
          rtol=1e-3 if dtype == fg.float32 else 1e-7, atol=1e-3 if dtype == fg.float32 else 1e-9)
    close(fg.pinverse(T(a, dtype), rcond=1e-3), np.linalg.pinv(a, rcond=1e-3), dtype,
          rtol=1e-3 if dtype == fg.float32 else 1e-7, atol=1e-3 if dtype == fg.float32 else 1e-9)
    rank = LA.matrix_rank(T(a, dtype))
    assert rank.dtype == fg.int64
    np.testing.assert_array_equal(to_np(rank), np.linalg.matrix_rank(a, tol=None))
    sym = symmetric(rng, batch, n).astype(NP[dtype])
    close(LA.pinv(T(sym, dtype), hermitian=True), np.linalg.pinv(sym, hermitian=True), dtype,
          rtol=1e-3 if dtype == fg.float32 else 1e-7)


def test_pinv_and_matrix_rank_tolerances():
    A = T(np.diag([4.0, 1.0, 0.01]))
    np.testing.assert_allclose(to_np(LA.pinv(A, rtol=0.1)), np.diag([0.25, 1.0, 0.0]))
    np.testing.assert_allclose(to_np(LA.pinv(A, atol=0.5)), np.diag([0.25, 1.0, 0.0]))
    np.testing.assert_allclose(to_np(LA.pinv(A, atol=0.5, rtol=0.3)), np.diag([0.25, 0, 0]))
    np.testing.assert_allclose(to_np(LA.pinv(A)), np.diag([0.25, 1.0, 100.0]))
    assert LA.matrix_rank(A).item() == 3
    assert LA.matrix_rank(A, rtol=0.1).item() == 2
    assert LA.matrix_rank(A, atol=2.0).item() == 1
    assert LA.matrix_rank(T(np.diag([-4.0, 1.0])), hermitian=True).item() == 2


@given(st.sampled_from([(), (2,)]), st.integers(1, 3), st.integers(0, 2), seeds, dtypes)
def test_lstsq_matches_numpy(batch, n, extra, seed, dtype):
    rng = np.random.default_rng(seed)
    m = n + extra
    a = well_conditioned(rng, batch, m, n).astype(NP[dtype])
    b = rng.standard_normal(batch + (m, 2)).astype(NP[dtype])
    res = LA.lstsq(T(a, dtype), T(b, dtype))
    flat_a, flat_b = a.reshape((-1, m, n)), b.reshape((-1, m, 2))
    want = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(flat_a, flat_b)])
    close(res.solution, want.reshape(batch + (n, 2)), dtype,
          rtol=1e-3 if dtype == fg.float32 else 1e-8, atol=1e-4 if dtype == fg.float32 else 1e-9)
    # gelsy (PyTorch's CPU default): rank, no residuals, no singular values.
    np.testing.assert_array_equal(to_np(res.rank), np.full(batch, n))
    assert tuple(res.residuals.shape) == (0,) and tuple(res.singular_values.shape) == (0,)
    gelsd = LA.lstsq(T(a, dtype), T(b, dtype), driver="gelsd")
    close(gelsd.singular_values, np.linalg.svd(a, compute_uv=False), dtype,
          rtol=1e-4 if dtype == fg.float32 else 1e-9)
    if m > n:
        r = a.astype(np.float64) @ want.reshape(batch + (n, 2)) - b
        close(gelsd.residuals, (r * r).sum(-2), dtype, rtol=1e-3 if dtype == fg.float32 else 1e-7,
              atol=1e-4 if dtype == fg.float32 else 1e-9)
    else:
        assert tuple(gelsd.residuals.shape) == (0,)
    gels = LA.lstsq(T(a, dtype), T(b, dtype), driver="gels")
    assert tuple(gels.rank.shape) == (0,)


def test_lstsq_broadcasts_a_matrix_rhs_of_one_dimension_less():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3, 2)), rng.standard_normal((3, 1))
    x = LA.lstsq(T(a), T(b)).solution
    assert tuple(x.shape) == (2, 2, 1)
    for i in range(2):
        np.testing.assert_allclose(to_np(x)[i], np.linalg.lstsq(a[i], b, rcond=None)[0])
    raises(RuntimeError, "torch.linalg.lstsq: input.dim() must be greater or equal to "
           "other.dim() and (input.dim() - other.dim()) <= 1", LA.lstsq, T(a[0]), T(a))


def test_lstsq_vector_rhs_and_rank_deficient():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    b = np.array([1.0, 2.0, 3.5])
    res = LA.lstsq(T(a), T(b), driver="gelsd")
    np.testing.assert_allclose(to_np(res.solution), np.linalg.lstsq(a, b, rcond=None)[0])
    assert res.rank.item() == 1
    # rank < n: gelsd reports no residuals
    assert tuple(res.residuals.shape) == (0,)
    full = LA.lstsq(T(a[:, :1] + np.array([[0.0], [1.0], [0.0]])), T(b), driver="gelss")
    assert tuple(full.residuals.shape) == (1,)


@given(batches, st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), seeds, dtypes,
       st.booleans())  # fmt: skip
def test_lstsq_native_forward_matches_numpy_on_any_shape_and_rank(batch, m, n, k, seed, dtype,
                                                                  deficient):  # fmt: skip
    # Tall, square and wide systems, full rank or with a repeated column: the
    # minimum-norm solution, the SVD-based rank and the singular values.
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (m, n))
    if deficient and n > 1:
        a[..., -1] = a[..., 0]
    a, b = a.astype(NP[dtype]), rng.standard_normal(batch + (m, k)).astype(NP[dtype])
    res = LA.lstsq(T(a, dtype), T(b, dtype), driver="gelsd")
    a64, b64 = a.astype(np.float64).reshape((-1, m, n)), b.astype(np.float64).reshape((-1, m, k))
    rc = np.finfo(NP[dtype]).eps * max(m, n)
    want = np.stack([np.linalg.lstsq(x, y, rcond=rc)[0] for x, y in zip(a64, b64)])
    sv = np.linalg.svd(a64, compute_uv=False)
    rank = (sv > rc * sv[..., :1]).sum(-1)
    np.testing.assert_array_equal(to_np(res.rank), rank.reshape(batch))
    close(res.singular_values, sv.reshape(batch + sv.shape[-1:]), dtype,
          rtol=1e-5 if dtype == fg.float32 else 1e-12, atol=1e-5 if dtype == fg.float32 else 1e-12)
    if dtype == fg.float64 or rank.min() == min(m, n):
        close(res.solution, want.reshape(batch + (n, k)), dtype,
              rtol=1e-4 if dtype == fg.float32 else 1e-9, atol=1e-4 if dtype == fg.float32 else 1e-9)


def test_lstsq_refuses_non_finite_input_and_answers_empty_matrices_without_a_loop():
    a = np.array([[1.0, 2.0], [np.nan, 1.0], [0.0, 1.0]])
    raises(LA.LinAlgError, "linalg.lstsq: The algorithm failed to converge because the input "
           "matrix contained non-finite values.", LA.lstsq, T(a), T(np.ones((3, 1))))
    raises(LA.LinAlgError, "linalg.lstsq: The algorithm failed to converge because the input "
           "matrix contained non-finite values.", LA.lstsq, T(np.eye(2)), T([[1.0], [np.inf]]))
    # 2**20 matrices of no rows and no columns: empty solutions and rank 0, no loop.
    res = LA.lstsq(fg.zeros(2**20, 0, 0), fg.zeros(2**20, 0, 0), driver="gelsd")
    assert tuple(res.solution.shape) == (2**20, 0, 0)
    assert tuple(res.singular_values.shape) == (2**20, 0)
    assert int(res.rank.sum()) == 0
    x = LA.lstsq(fg.zeros(3, 0, 2), fg.zeros(3, 0, 1)).solution
    np.testing.assert_array_equal(to_np(x), np.zeros((3, 2, 1)))


@given(batches, st.integers(1, 5), st.integers(1, 5), seeds, dtypes)
def test_geqrf_matches_lapack_and_householder_product_its_composite(batch, m, n, seed, dtype):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (m, n)).astype(NP[dtype])
    if m > 1:
        a[..., 1:, 0] = 0.0  # nothing below the first pivot: its reflector is I (tau = 0)
    h, tau = fg.geqrf(T(a, dtype))
    flat = a.astype(np.float64).reshape((-1, m, n))
    want = [np.linalg.qr(x, mode="raw") for x in flat]
    close(h, np.stack([w[0].T for w in want]).reshape(a.shape), dtype,
          rtol=1e-5 if dtype == fg.float32 else 1e-12, atol=1e-5 if dtype == fg.float32 else 1e-12)
    close(tau, np.stack([w[1] for w in want]).reshape(batch + (min(m, n),)), dtype,
          rtol=1e-5 if dtype == fg.float32 else 1e-12, atol=1e-5 if dtype == fg.float32 else 1e-12)
    assert not h.requires_grad and not tau.requires_grad
    if m >= n:
        # The native product (nothing recorded) against the recorded composite.
        fast = LA.householder_product(h, tau)
        with fg.enable_grad():
            hr = h.detach().requires_grad_()
            slow = LA.householder_product(hr, tau)
        assert slow.grad_fn is not None and fast.grad_fn is None
        close(fast, to_np(slow), dtype, rtol=1e-5 if dtype == fg.float32 else 1e-12,
              atol=1e-6 if dtype == fg.float32 else 1e-13)


def test_geqrf_and_householder_product_of_empty_batches():
    h, tau = fg.geqrf(fg.zeros(2**40, 0, 3))
    assert tuple(h.shape) == (2**40, 0, 3) and tuple(tau.shape) == (2**40, 0)
    q = LA.householder_product(fg.zeros(0, 3, 2), fg.zeros(0, 2))
    assert tuple(q.shape) == (0, 3, 2)
    np.testing.assert_array_equal(to_np(LA.householder_product(fg.zeros(3, 2), fg.zeros(0))),
                                  np.eye(3, 2))


NORM_ORDS = ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2]


@given(batches, st.integers(1, 4), st.integers(1, 4), seeds, dtypes, st.sampled_from(NORM_ORDS))
def test_matrix_norm_matches_numpy(batch, m, n, seed, dtype, ord):
    a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(NP[dtype])
    want = np.linalg.norm(a, ord=ord, axis=(-2, -1))
    tol = dict(rtol=1e-5) if dtype == fg.float32 else {}
    close(LA.matrix_norm(T(a, dtype), ord), want, dtype, **tol)
    close(LA.norm(T(a, dtype), ord, dim=(-2, -1)), want, dtype, **tol)
    kept = LA.matrix_norm(T(a, dtype), ord, keepdim=True)
    assert tuple(kept.shape) == batch + (1, 1)
    if batch:
        # the matrix in dims (0, -1), batch in the middle
        want0 = np.linalg.norm(np.moveaxis(a, 0, -2), ord=ord, axis=(-2, -1))
        close(LA.matrix_norm(T(a, dtype), ord, dim=(0, -1)), want0, dtype, **tol)


def test_norm_dispatch_and_vector_norm():
    x = np.arange(-3.0, 3.0).reshape(2, 3)
    X = T(x)
    np.testing.assert_allclose(LA.norm(X).item(), np.linalg.norm(x))
    np.testing.assert_allclose(LA.norm(X, 1).item(), np.linalg.norm(x, 1))  # matrix 1-norm
    np.testing.assert_allclose(to_np(LA.norm(X, 1, dim=1)), np.abs(x).sum(1))
    np.testing.assert_allclose(to_np(LA.norm(X, dim=0)), np.linalg.norm(x, axis=0))
    np.testing.assert_allclose(LA.norm(T(x[0]), math.inf).item(), 3.0)
    np.testing.assert_allclose(LA.norm(X, "nuc").item(), np.linalg.norm(x, "nuc"))
    np.testing.assert_allclose(to_np(LA.norm(X, dim=(0, 1), keepdim=True)), [[np.linalg.norm(x)]])
    np.testing.assert_allclose(LA.norm(T(np.ones((2, 2, 2)))).item(), math.sqrt(8))
    for ord in (2, 1, 0, 3.5, math.inf, -math.inf, -1):
        with np.errstate(divide="ignore"):  # NumPy's -1 norm of a vector holding a zero
            want = np.linalg.norm(x.ravel(), ord)
        np.testing.assert_allclose(LA.vector_norm(X, ord).item(), want)
    np.testing.assert_allclose(to_np(LA.vector_norm(X, 3, dim=(0, 1), keepdim=True)),
                               np.linalg.norm(x.ravel(), 3).reshape(1, 1))
    assert LA.vector_norm(X, dtype=fg.float32).dtype == fg.float32
    assert LA.matrix_norm(X, dtype=fg.float32).dtype == fg.float32


def test_products_cross_vecdot_multi_dot_matrix_power_diagonal():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4, 3)), rng.standard_normal((4, 3))
    np.testing.assert_allclose(to_np(LA.cross(T(a), T(b[None]))), np.cross(a, b))
    a3, b3 = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(to_np(LA.cross(T(a3), T(b3), dim=0)), np.cross(a3, b3, axis=0))
    np.testing.assert_allclose(to_np(LA.vecdot(T(a), T(b))), (a * b).sum(-1))
    np.testing.assert_allclose(to_np(LA.vecdot(T(a), T(b), dim=1)), (a * b).sum(1))
    ms = [rng.standard_normal(s) for s in [(3,), (3, 4), (4, 2), (2,)]]
    np.testing.assert_allclose(LA.multi_dot([T(x) for x in ms]).item(), np.linalg.multi_dot(ms))
    ms = [rng.standard_normal(s) for s in [(2, 3), (3, 4), (4, 2)]]
    np.testing.assert_allclose(to_np(LA.multi_dot([T(x) for x in ms])), np.linalg.multi_dot(ms))
    m = well_conditioned(rng, (2,), 3)
    for p in (-3, -1, 0, 1, 2, 5):
        want = np.linalg.matrix_power(m, p)
        np.testing.assert_allclose(to_np(LA.matrix_power(T(m), p)), want, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(to_np(T(m).matrix_power(p)), want, rtol=1e-9, atol=1e-9)
    P0 = LA.matrix_power(T([[math.inf, 1.0], [2.0, 3.0]], requires_grad=True), 0)
    np.testing.assert_array_equal(to_np(P0), np.eye(2))
    assert P0.requires_grad
    np.testing.assert_allclose(to_np(LA.diagonal(T(a))), np.diagonal(a, axis1=-2, axis2=-1))
    np.testing.assert_allclose(to_np(LA.diagonal(T(a), offset=1)),
                               np.diagonal(a, 1, axis1=-2, axis2=-1))
    np.testing.assert_allclose(to_np(LA.matmul(T(a), T(b.T))), a @ b.T)


# ----- gradients: first and second order ----------------------------------------------------

GG = settings(max_examples=15)


@GG
@given(batches, sizes, seeds)
def test_inv_det_slogdet_logdet_gradients(batch, n, seed):
    A = T(well_conditioned(np.random.default_rng(seed), batch, n), requires_grad=True)
    check_grads(LA.inv, A)
    check_grads(LA.det, A)
    check_grads(lambda x: LA.slogdet(x).logabsdet, A)
    check_grads(lambda x: LA.inv_ex(x).inverse, A)
    # logdet needs a positive determinant
    P = T(symmetric(np.random.default_rng(seed), batch, n, spd=True), requires_grad=True)
    check_grads(fg.logdet, P)


@GG
@given(batches, sizes, st.integers(1, 2), seeds, st.booleans())
def test_solve_gradients(batch, n, k, seed, left):
    rng = np.random.default_rng(seed)
    A = T(well_conditioned(rng, batch, n), requires_grad=True)
    B = T(rng.standard_normal(batch + ((n, k) if left else (k, n))), requires_grad=True)
    check_grads(lambda a, b: LA.solve(a, b, left=left), A, B)
    v = T(rng.standard_normal(n), requires_grad=True)  # vector rhs, broadcast over A's batch
    check_grads(LA.solve, A, v)


@GG
@given(batches, sizes, seeds, st.booleans())
def test_cholesky_gradients(batch, n, seed, upper):
    A = T(symmetric(np.random.default_rng(seed), batch, n, spd=True), requires_grad=True)
    # cholesky reads one triangle: differentiate through a symmetric input,
    # as PyTorch's own tests do.
    check_grads(lambda a: LA.cholesky((a + a.mT) * 0.5, upper=upper), A)


@GG
@given(batches, st.integers(1, 4), st.integers(1, 4), seeds)
def test_qr_gradients(batch, m, n, seed):
    A = T(well_conditioned(np.random.default_rng(seed), batch, m, n), requires_grad=True)
    check_grads(lambda a: tuple(LA.qr(a)), A)
    if m <= n:
        check_grads(lambda a: tuple(LA.qr(a, mode="complete")), A)


@GG
@given(batches, sizes, seeds)
def test_eigh_gradients(batch, n, seed):
    S = T(symmetric(np.random.default_rng(seed), batch, n), requires_grad=True)

    def f(a):
        L, V = LA.eigh((a + a.mT) * 0.5)
        # |V| does not depend on the sign of each eigenvector
        return L, V.abs()

    check_grads(f, S)
    check_grads(lambda a: LA.eigvalsh((a + a.mT) * 0.5, UPLO="U"), S)


@GG
@given(batches, st.integers(1, 4), st.integers(1, 4), seeds, st.booleans())
def test_svd_gradients(batch, m, n, seed, full):
    A = T(well_conditioned(np.random.default_rng(seed), batch, m, n), requires_grad=True)
    k = min(m, n)

    def f(a):
        U, S, Vh = LA.svd(a, full_matrices=full)
        # invariant under the joint sign flip of u_i and v_i; with
        # full_matrices the extra columns of U are not a function of A, and
        # PyTorch (so ferrograd) ignores gradients flowing into them.
        return S, U[..., :, :k] @ Vh[..., :k, :], U[..., :, :k].abs()

    check_grads(f, A)
    check_grads(LA.svdvals, A)
    # torch.svd's V convention: the same factorisation, reassembled
    check_grads(lambda a: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.V.mT)(fg.svd(a)), A)
    check_grads(lambda a: LA.matrix_norm(a, "nuc"), A)
    check_grads(lambda a: LA.matrix_norm(a, 2), A)


@GG
@given(batches, st.integers(1, 4), st.integers(1, 4), seeds)
def test_pinv_lstsq_gradients(batch, m, n, seed):
    rng = np.random.default_rng(seed)
    A = T(well_conditioned(rng, batch, m, n), requires_grad=True)
    check_grads(LA.pinv, A)
    check_grads(fg.pinverse, A)
    S = T(symmetric(rng, batch, n), requires_grad=True)
    check_grads(lambda a: LA.pinv((a + a.mT) * 0.5, hermitian=True), S)
    B = T(rng.standard_normal(batch + (m, 2)), requires_grad=True)
    check_grads(lambda a, b: LA.lstsq(a, b).solution, A, B)


@GG
@given(batches, st.integers(2, 3), st.integers(2, 3), seeds, st.sampled_from(NORM_ORDS))
def test_matrix_norm_gradients(batch, m, n, seed, ord):
    A = T(well_conditioned(np.random.default_rng(seed), batch, m, n), requires_grad=True)
    check_grads(lambda a: LA.matrix_norm(a, ord), A)
    check_grads(lambda a: LA.norm(a, ord, dim=(-1, -2), keepdim=True), A)


def test_products_gradients():
    rng = np.random.default_rng(1)
    a = T(rng.standard_normal((2, 3)), requires_grad=True)
    b = T(rng.standard_normal((1, 3)), requires_grad=True)
    check_grads(LA.cross, a, b)
    check_grads(LA.vecdot, a, b)
    m1, m2 = (T(rng.standard_normal(s), requires_grad=True) for s in [(3, 2), (2, 4)])
    v = T(rng.standard_normal(4), requires_grad=True)
    check_grads(lambda x, y, z: LA.multi_dot([x, y, z]), m1, m2, v)
    M = T(well_conditioned(rng, (2,), 2), requires_grad=True)
    for p in (-2, 0, 3):
        check_grads(lambda x, p=p: LA.matrix_power(x, p), M)


# ----- closed forms --------------------------------------------------------------------------------


@given(batches, sizes, seeds)
def test_det_and_logdet_closed_form_gradients(batch, n, seed):
    a = well_conditioned(np.random.default_rng(seed), batch, n)
    A = T(a, requires_grad=True)
    LA.det(A).sum().backward()
    inv_t = np.swapaxes(np.linalg.inv(a), -1, -2)
    np.testing.assert_allclose(to_np(A.grad), np.linalg.det(a)[..., None, None] * inv_t,
                               rtol=1e-9, atol=1e-10)
    A.grad = None
    LA.slogdet(A).logabsdet.sum().backward()
    np.testing.assert_allclose(to_np(A.grad), inv_t, rtol=1e-9, atol=1e-10)
    A.grad = None
    P = T(symmetric(np.random.default_rng(seed), batch, n, spd=True), requires_grad=True)
    fg.logdet(P).sum().backward()
    np.testing.assert_allclose(to_np(P.grad), np.swapaxes(np.linalg.inv(to_np(P)), -1, -2),
                               rtol=1e-9, atol=1e-10)
    LA.inv(A).sum().backward()
    ia = np.linalg.inv(a)
    ones = np.ones_like(a)
    np.testing.assert_allclose(to_np(A.grad), -np.swapaxes(ia, -1, -2) @ ones @ np.swapaxes(
        ia, -1, -2), rtol=1e-9, atol=1e-10)


def test_det_gradient_of_singular_matrices_is_the_cofactor_matrix():
    # [[a, b], [c, d]] -> cofactors [[d, -c], [-b, a]], finite at det = 0
    A = T([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)
    LA.det(A).backward()
    np.testing.assert_allclose(to_np(A.grad), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    # rank 1 in 3x3: every 2x2 minor vanishes, so does the gradient
    B = T(np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]), requires_grad=True)
    LA.det(B).backward()
    np.testing.assert_allclose(to_np(B.grad), np.zeros((3, 3)), atol=1e-12)
    # rank 2 in 3x3, in a batch beside a nonsingular matrix
    c = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    cof = np.array([[np.linalg.det(np.delete(np.delete(c, i, 0), j, 1)) * (-1) ** (i + j)
                     for j in range(3)] for i in range(3)])
    C = T(np.stack([c, np.eye(3) * 2]), requires_grad=True)
    LA.det(C).sum().backward()
    np.testing.assert_allclose(to_np(C.grad)[0], cof, atol=1e-9)
    np.testing.assert_allclose(to_np(C.grad)[1], np.eye(3) * 4, atol=1e-12)
    # 1x1 zero: d det / dA = 1 (PyTorch issue #80761)
    Z = T([[0.0]], requires_grad=True)
    LA.det(Z).backward()
    assert Z.grad.item() == 1.0


def test_det_second_order_at_a_singular_matrix():
    # det of 2x2 is ad - bc: its Hessian is constant, also at det = 0.
    A = T([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)
    (g,) = fg.autograd.grad(LA.det(A), A, create_graph=True)
    (h,) = fg.autograd.grad(g[0, 0], A)  # d/dA of d det/da = d
    np.testing.assert_allclose(to_np(h), [[0.0, 0.0], [0.0, 1.0]], atol=1e-9)


def test_logdet_and_slogdet_at_singular_and_negative():
    A = T([[0.0, 1.0], [1.0, 0.0]], requires_grad=True)  # det = -1
    assert math.isnan(fg.logdet(A).item())
    assert math.isnan(A.logdet().item())
    sign, logabs = A.slogdet()
    assert sign.item() == -1.0 and logabs.item() == 0.0
    # As PyTorch: both outputs carry the node (sign's gradient is zero).
    assert sign.requires_grad and logabs.requires_grad
    Z = T([[1.0, 1.0], [1.0, 1.0]], requires_grad=True)
    s, la = LA.slogdet(Z)
    assert s.item() == 0.0 and la.item() == -math.inf
    la.backward()
    # PyTorch's LU solve through a zero pivot: not finite, no exception.
    assert not np.isfinite(to_np(Z.grad)).all()


def test_eigh_and_svd_repeated_values():
    # eigenvalues only: defined for repeated eigenvalues (V diag(g) V^T)
    A = T(np.eye(3), requires_grad=True)
    LA.eigvalsh(A).sum().backward()
    np.testing.assert_allclose(to_np(A.grad), np.eye(3), atol=1e-12)
    # eigenvectors of a repeated eigenvalue: PyTorch divides by L_j - L_i = 0
    A.grad = None
    LA.eigh(A).eigenvectors.sum().backward()
    assert np.isnan(to_np(A.grad)).all()
    # distinct eigenvalues but sign-dependent loss: finite (PyTorch gives
    # a value too; it is simply not meaningful)
    B = T(np.diag([1.0, 2.0, 3.0]), requires_grad=True)
    LA.eigh(B).eigenvectors.sum().backward()
    assert np.isfinite(to_np(B.grad)).all()
    # singular values only: defined when they repeat
    C = T(2 * np.eye(3), requires_grad=True)
    LA.svdvals(C).sum().backward()
    np.testing.assert_allclose(to_np(C.grad), np.eye(3), atol=1e-12)
    C.grad = None
    U, S, Vh = LA.svd(C)
    (U @ Vh).sum().backward()
    assert not np.isfinite(to_np(C.grad)).all()


def test_eigh_backward_matches_closed_form():
    # d lambda_i / dA = v_i v_i^T
    a = symmetric(np.random.default_rng(3), (), 3)
    A = T(a, requires_grad=True)
    LA.eigh(A).eigenvalues[1].backward()
    v = np.linalg.eigh(a)[1][:, 1]
    np.testing.assert_allclose(to_np(A.grad), np.outer(v, v), atol=1e-12)


# ----- graph nodes, named results, aliases ------------------------------------------------------------


def test_node_names_and_result_types():
    A = T(well_conditioned(np.random.default_rng(0), (), 3), requires_grad=True)
    assert LA.inv(A).grad_fn.name() == "LinalgInvExBackward0"
    assert LA.det(A).grad_fn.name() == "LinalgDetBackward0"
    assert LA.slogdet(A).logabsdet.grad_fn.name() == "LinalgSlogdetBackward0"
    assert LA.solve(A, A).grad_fn.name() == "LinalgSolveExBackward0"
    assert LA.eigh(A).eigenvalues.grad_fn.name() == "LinalgEighBackward0"
    assert LA.svd(A).S.grad_fn.name() == "LinalgSvdBackward0"
    assert LA.qr(A).R.grad_fn.name() == "LinalgQrBackward0"
    assert LA.pinv(A).grad_fn.name() == "LinalgPinvBackward0"
    assert type(LA.slogdet(A)).__name__ == "linalg_slogdet"
    assert type(fg.slogdet(A)).__name__ == "slogdet"
    assert type(LA.eigh(A)).__name__ == "linalg_eigh"
    assert LA.svd(A)._fields == ("U", "S", "Vh")
    assert fg.svd(A)._fields == ("U", "S", "V")
    assert LA.qr(A)._fields == ("Q", "R")
    assert LA.lstsq(A, A)._fields == ("solution", "residuals", "rank", "singular_values")
    assert fg.return_types.linalg_eigh is type(LA.eigh(A))
    assert issubclass(LA.LinAlgError, RuntimeError)


def test_top_level_aliases_and_methods():
    a = well_conditioned(np.random.default_rng(5), (2,), 3)
    A = T(a)
    for got in (fg.det(A), A.det()):
        np.testing.assert_allclose(to_np(got), np.linalg.det(a))
    for got in (fg.inverse(A), A.inverse()):
        np.testing.assert_allclose(to_np(got), np.linalg.inv(a))
    np.testing.assert_allclose(to_np(fg.slogdet(A).logabsdet), np.linalg.slogdet(a)[1])
    np.testing.assert_allclose(to_np(A.pinverse()), np.linalg.pinv(a), atol=1e-12)
    spd = T(symmetric(np.random.default_rng(5), (), 3, spd=True))
    np.testing.assert_allclose(to_np(spd.cholesky(upper=True)),
                               np.linalg.cholesky(to_np(spd)).T)
    Q, R = A.qr()
    np.testing.assert_allclose(to_np(Q @ R), a, atol=1e-12)
    U, S, V = A.svd(some=False)
    np.testing.assert_allclose(to_np(U @ (S.unsqueeze(-1) * V.mT)), a, atol=1e-12)
    np.testing.assert_allclose(to_np(fg.matrix_power(A, 2)), a @ a)
    import importlib

    assert importlib.import_module("ferrograd.linalg") is fg.linalg


# ----- errors --------------------------------------------------------------------------------------------


def raises(exc, text, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert str(info.value) == text
    return info


def test_error_texts():
    sing = T([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]])
    raises(RuntimeError, "linalg.inv: A must be batches of square matrices, but they are 2 by "
           "3 matrices", LA.inv, fg.ones(2, 3))
    raises(RuntimeError, "linalg.inv: Expected a floating point or complex tensor as input. "
           "Got Long", LA.inv, fg.tensor([[1, 2], [3, 4]]))
    raises(RuntimeError, "linalg.inv: The input tensor A must have at least 2 dimensions.",
           LA.inv, fg.ones(3))
    raises(LA.LinAlgError, "linalg.inv: The diagonal element 3 is zero, the inversion could "
           "not be completed because the input matrix is singular.", LA.inv, sing)
    raises(LA.LinAlgError, "linalg.inv: The diagonal element 2 is zero, the inversion could "
           "not be completed because the input matrix is singular.", fg.inverse,
           T([[1.0, 1.0], [1.0, 1.0]]))
    raises(LA.LinAlgError, "linalg.inv: (Batch element 1): The diagonal element 1 is zero, the "
           "inversion could not be completed because the input matrix is singular.", LA.inv,
           fg.stack([fg.eye(2), fg.zeros(2, 2)]))
    inverse, info = LA.inv_ex(sing)
    assert info.item() == 3 and np.isnan(to_np(inverse)).all()
    raises(LA.LinAlgError, "linalg.cholesky: The factorization could not be completed because "
           "the input is not positive-definite (the leading minor of order 2 is not "
           "positive-definite).", LA.cholesky, T([[1.0, 2.0], [2.0, 1.0]]))
    raises(LA.LinAlgError, "linalg.cholesky: (Batch element 1): The factorization could not be "
           "completed because the input is not positive-definite (the leading minor of order 1 "
           "is not positive-definite).", LA.cholesky, T([np.eye(2), -np.eye(2)]))
    raises(LA.LinAlgError, "linalg.cholesky: The factorization could not be completed because "
           "the input is not positive-definite (the leading minor of order 1 is not "
           "positive-definite).", LA.cholesky, fg.full((2, 2), float("nan")))
    raises(RuntimeError, "linalg.cholesky: Expected a floating point or complex tensor as "
           "input. Got Long", LA.cholesky, fg.tensor([[1]]))
    raises(LA.LinAlgError, "torch.linalg.solve: The solver failed because the input matrix is "
           "singular.", LA.solve, sing, fg.ones(3, dtype=fg.float64))
    raises(RuntimeError, "linalg.solve: Incompatible shapes of A and B for the equation AX = B "
           "(3x3 and 4x1)", LA.solve, fg.eye(3), fg.ones(4, 1))
    raises(RuntimeError, "linalg.solve: Expected A and B to have the same dtype, but found A of "
           "type Float and B of type Double instead", LA.solve, fg.eye(2),
           fg.ones(2, dtype=fg.float64))
    raises(RuntimeError, "linalg.solve: A must be batches of square matrices, but they are 2 by "
           "3 matrices", LA.solve, fg.ones(2, 3), fg.ones(2))
    raises(RuntimeError, "linalg.det: A must be batches of square matrices, but they are 2 by "
           "3 matrices", fg.det, fg.ones(2, 3))
    raises(RuntimeError, "linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got X",
           LA.eigh, fg.eye(2), "X")
    raises(RuntimeError, "qr received unrecognized mode 'x' but expected one of 'reduced' "
           "(default), 'r', or 'complete'", LA.qr, fg.eye(2), "x")
    raises(RuntimeError, "linalg.svd: Expected a floating point or complex tensor as input. "
           "Got Bool", LA.svd, fg.ones(2, 2, dtype=fg.bool))
    raises(RuntimeError, "linalg.matrix_norm: Order 3 not supported.", LA.matrix_norm,
           fg.eye(2), 3)
    raises(RuntimeError, "linalg.matrix_norm: dim must be a 2-tuple. Got 0", LA.matrix_norm,
           fg.eye(2), "fro", (0,))
    raises(RuntimeError, "linalg.norm: If dim is not specified but ord is, the input must be 1D "
           "or 2D. Got 3D.", LA.norm, fg.ones(2, 2, 2), 2)
    raises(RuntimeError, "linalg.norm: If dim is specified, it mut be of length 1 or 2. Got "
           "[0, 1, 2]", LA.norm, fg.ones(2, 2, 2), dim=(0, 1, 2))
    raises(RuntimeError, "linalg.matrix_norm: dim must be a 2-tuple. Got 0", LA.norm,
           fg.ones(2, 2), "fro", dim=0)
    raises(RuntimeError, "linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4",
           LA.cross, fg.ones(4), fg.ones(4))
    raises(RuntimeError, "multi_dot(): expected at least 2 tensors but got 1", LA.multi_dot,
           [fg.ones(2, 2)])
    raises(RuntimeError, "multi_dot(): tensors 0 and 1 with shapes [2, 3] and [2, 2] cannot be "
           "multiplied", LA.multi_dot, [fg.ones(2, 3), fg.ones(2, 2)])
    raises(RuntimeError, "linalg.matrix_power: A must be batches of square matrices, but they "
           "are 2 by 3 matrices", LA.matrix_power, fg.ones(2, 3), 2)
    raises(RuntimeError, "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, "
           "gelsd, gelss)", LA.lstsq, fg.eye(2), fg.eye(2), driver="x")
    raises(TypeError, "linalg.inv(): argument 'A' (position 1) must be Tensor, not list",
           LA.inv, [[1.0]])


def test_inv_ex_check_errors():
    sing = T([[1.0, 1.0], [1.0, 1.0]])
    raises(LA.LinAlgError, "linalg.inv_ex: The diagonal element 2 is zero, the inversion could "
           "not be completed because the input matrix is singular.", LA.inv_ex, sing,
           check_errors=True)


def test_ex_variants_report_info_instead_of_raising():
    A = T(np.stack([np.eye(2), [[1.0, 1.0], [1.0, 1.0]], [[0.0, 0.0], [0.0, 1.0]]]))
    X, info = LA.solve_ex(A, T(np.ones((3, 2))))
    np.testing.assert_array_equal(to_np(info), [0, 2, 1])
    np.testing.assert_allclose(to_np(X)[0], [1.0, 1.0])
    assert np.isnan(to_np(X)[1:]).all()
    raises(LA.LinAlgError, "torch.linalg.solve_ex: (Batch element 1): The solver failed because "
           "the input matrix is singular.", LA.solve_ex, A, T(np.ones((3, 2))),
           check_errors=True)
    S = T(np.stack([np.eye(2), [[1.0, 2.0], [2.0, 1.0]]]))
    L, info = LA.cholesky_ex(S)
    np.testing.assert_array_equal(to_np(info), [0, 2])
    np.testing.assert_allclose(to_np(L)[0], np.eye(2))
    assert np.isnan(to_np(L)[1]).all()
    raises(LA.LinAlgError, "linalg.cholesky_ex: (Batch element 1): The factorization could not "
           "be completed because the input is not positive-definite (the leading minor of order "
           "2 is not positive-definite).", LA.cholesky_ex, S, check_errors=True)
    U, info = LA.cholesky_ex(T(np.diag([4.0, 9.0])), upper=True)
    np.testing.assert_allclose(to_np(U), np.diag([2.0, 3.0]))
    assert info.item() == 0 and tuple(info.shape) == ()


def test_qr_backward_errors():
    A = T(np.random.default_rng(0).standard_normal((3, 2)), requires_grad=True)
    raises(RuntimeError, "The derivative of linalg.qr depends on Q, which is not computed when "
           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
           "through linalg.qr.", lambda: LA.qr(A, mode="r").R.sum().backward())
    raises(RuntimeError, "The QR decomposition is not differentiable when mode='complete' and "
           "nrows > ncols.", lambda: LA.qr(A, mode="complete").Q.sum().backward())


def test_failed_calls_leave_inputs_unchanged():
    a = np.array([[1.0, 2.0], [2.0, 1.0]])
    A = T(a, requires_grad=True)
    with pytest.raises(LA.LinAlgError):
        LA.cholesky(A)
    np.testing.assert_array_equal(to_np(A), a)
    assert A.grad is None


# LAPACK's gesdd looped without end on this batch (found by the misuse fuzzer);
# every iterative factorisation now refuses non-finite input first.
_NON_FINITE = [
    [[math.inf, 1.0, -math.inf], [-0.0, 1.0, math.nan], [math.inf, 0.0, -math.inf]],
    [[math.inf, -math.inf, 0.0], [-0.0, -math.inf, 1.0], [0.0, 0.0, 1.0]],
]


@pytest.mark.parametrize("call", [
    lambda a: LA.svd(a),
    lambda a: LA.svdvals(a),
    lambda a: LA.eigh(a),
    lambda a: LA.eigvalsh(a),
    lambda a: LA.pinv(a),
    lambda a: LA.pinv(a, hermitian=True),
    lambda a: LA.matrix_rank(a),
    lambda a: LA.lstsq(a, fg.ones(2, 3, 1, dtype=a.dtype)),
    lambda a: a.pinverse(),
])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_non_finite_input_is_refused_not_looped_on(call, requires_grad):
    a = fg.tensor(_NON_FINITE, dtype=fg.float64, requires_grad=requires_grad)
    with pytest.raises(LA.LinAlgError, match="contained non-finite values"):
        call(a)


def test_geqrf_of_tiny_columns_reflects_as_lapack_does():
    # Entries of 1e-192 square to zero; their norm must not, or the
    # reflector (and the sign of R's diagonal) differs from LAPACK's.
    a = np.array([[4.0, 2.4e-192], [2.4e-192, 4.0], [2.4e-192, 2.4e-192]])
    h, tau = np.linalg.qr(a, mode="raw")
    got, gtau = fg.geqrf(fg.tensor(a))
    np.testing.assert_allclose(got.numpy(), h.T, rtol=1e-12, atol=0)
    np.testing.assert_allclose(gtau.numpy(), tau, rtol=1e-12)
    # A batch under vmap factors each matrix as the unbatched call does.
    ones = fg.ones(2, 3, 2, dtype=fg.float64)
    batched = fg.func.vmap(lambda x: fg.geqrf(x)[0])(ones)
    np.testing.assert_array_equal(batched.numpy()[1], fg.geqrf(ones[1])[0].numpy())

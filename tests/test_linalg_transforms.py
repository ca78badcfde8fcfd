"""``ferrograd.linalg`` under vmap (the NumPy-backed Functions take the batch
dimension as one more leading batch dimension), under ``jacobian(vectorize=True)``,
under ``ferrograd.compile`` (the error checks run inside the op, so a replay
checks too), and ``einsum``'s batching rule. References are per-sample loops
and NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.linalg as LA
from ferrograd.func import vmap

F64 = fg.float64


def _rand(rng, *shape):
    return fg.tensor(rng.standard_normal(shape), dtype=F64)


def _nonsingular(rng, *batch, n=3):
    a = rng.uniform(-1, 1, batch + (n, n)) + 4 * np.eye(n)
    return fg.tensor(a, dtype=F64)


def _loop(f, *args, dims=None):
    dims = dims or (0,) * len(args)
    size = next(a.shape[0] for a, d in zip(args, dims) if d == 0)
    rows = [f(*[a[i] if d == 0 else a for a, d in zip(args, dims)]) for i in range(size)]
    if isinstance(rows[0], tuple):
        return tuple(fg.stack([r[k] for r in rows]) for k in range(len(rows[0])))
    return fg.stack(rows)


def _same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)


SQUARE_FNS = {
    "inv": LA.inv,
    "det": LA.det,
    "slogdet": lambda a: tuple(LA.slogdet(a)),
    "logdet": fg.logdet,
    "cholesky": lambda a: LA.cholesky(a @ a.mT),
    "eigh": lambda a: LA.eigh(a + a.mT)[0],
    "eigvalsh": lambda a: LA.eigvalsh(a + a.mT),
    "svdvals": LA.svdvals,
    "qr": lambda a: tuple(LA.qr(a)),
    "svd_S": lambda a: LA.svd(a)[1],
    "pinv": LA.pinv,
    "matrix_rank": LA.matrix_rank,
    "matrix_power": lambda a: LA.matrix_power(a, -2),
    "inv_ex": lambda a: tuple(LA.inv_ex(a)),
    "cholesky_ex": lambda a: tuple(LA.cholesky_ex(a @ a.mT)),
    "nuclear_norm": lambda a: LA.matrix_norm(a, "nuc"),
    "vector_norm": lambda a: LA.vector_norm(a, 3, dim=-1),
    "torch_svd_U": lambda a: fg.svd(a)[0].abs(),
    "matrix_exp": lambda a: LA.matrix_exp(a / 4),
    "geqrf": lambda a: tuple(fg.geqrf(a)),
    "householder_product": lambda a: LA.householder_product(a, a[..., 0, :] / 4),
}


@pytest.mark.parametrize("name", sorted(SQUARE_FNS))
@pytest.mark.parametrize("batch", [(), (2,)])
def test_vmap_of_square_matrix_ops_matches_a_loop(name, batch):
    rng = np.random.default_rng(0)
    f = SQUARE_FNS[name]
    a = _nonsingular(rng, 3, *batch)
    _same(vmap(f)(a), _loop(f, a))


def test_nested_vmap_and_in_dims():
    rng = np.random.default_rng(1)
    a = _nonsingular(rng, 2, 3)
    want = fg.stack([fg.stack([LA.inv(a[i, j]) for j in range(3)]) for i in range(2)])
    _same(vmap(vmap(LA.inv))(a), want)
    # The batch dimension elsewhere than 0.
    _same(vmap(LA.inv, in_dims=1)(a), want.transpose(0, 1))


@pytest.mark.parametrize("rhs", ["vector", "matrix"])
@pytest.mark.parametrize("dims", [(0, 0), (0, None), (None, 0)])
def test_vmap_of_solve_keeps_the_vector_rule(rhs, dims):
    rng = np.random.default_rng(2)
    a = _nonsingular(rng, 4)
    b = _rand(rng, 4, 3) if rhs == "vector" else _rand(rng, 4, 3, 2)
    args = (a if dims[0] == 0 else a[0], b if dims[1] == 0 else b[0])
    _same(vmap(LA.solve, in_dims=dims)(*args), _loop(LA.solve, *args, dims=dims))
    # solve_ex and lstsq's solution too.
    _same(vmap(lambda x, y: LA.solve_ex(x, y).result, in_dims=dims)(*args),
          _loop(LA.solve, *args, dims=dims))
    _same(vmap(lambda x, y: LA.lstsq(x, y).solution, in_dims=dims)(*args),
          _loop(lambda x, y: LA.lstsq(x, y).solution, *args, dims=dims))


def test_vmap_checks_errors_inside_the_op():
    a = fg.zeros(2, 2, 2, dtype=F64)
    with pytest.raises(LA.LinAlgError, match="singular"):
        vmap(LA.inv)(a)
    with pytest.raises(LA.LinAlgError, match="not positive-definite"):
        vmap(LA.cholesky)(-fg.eye(2, dtype=F64).expand(3, 2, 2))
    out, info = vmap(LA.inv_ex)(a)
    assert info.tolist() == [1, 1]


def test_jacobian_vectorized_matches_the_loop():
    rng = np.random.default_rng(3)
    a = _nonsingular(rng)
    for f in (LA.inv, LA.det, lambda x: LA.eigh(x + x.mT)[0], lambda x: LA.svd(x)[1],
              lambda x: LA.matrix_exp(x / 4),
              lambda x: LA.solve(x, x[:, 0]), lambda x: LA.cholesky(x @ x.mT)):
        fast = fg.autograd.functional.jacobian(f, a, vectorize=True)
        slow = fg.autograd.functional.jacobian(f, a, vectorize=False)
        np.testing.assert_allclose(fast.numpy(), slow.numpy(), rtol=1e-12, atol=1e-12)


def test_jacfwd_jacrev_hessian_and_per_sample_grad():
    from ferrograd.func import grad, hessian, jacfwd, jacrev

    rng = np.random.default_rng(6)
    a = _nonsingular(rng)
    for f in (LA.inv, LA.det, lambda x: LA.eigvalsh(x + x.mT), lambda x: LA.solve(x, x[0]),
              LA.svdvals, lambda x: LA.matrix_exp(x / 4)):
        np.testing.assert_allclose(jacfwd(f)(a).numpy(), jacrev(f)(a).numpy(), rtol=1e-10,
                                   atol=1e-12)
    # d^2 det / dA_ij dA_kl, by central differences of the cofactor matrix; hessian is
    # jacfwd(jacrev(f)): forward mode through a backward that reads the saved output.
    h = hessian(LA.det)(a).detach().numpy()
    for f in (lambda x: LA.inv(x).sum(), lambda x: LA.cholesky(x @ x.mT).sum(),
              lambda x: LA.matrix_exp(x / 4).sum()):
        np.testing.assert_allclose(hessian(f)(a).detach().numpy(),
                                   jacrev(jacrev(f))(a).detach().numpy(), rtol=1e-10, atol=1e-12)
    eps = 1e-6
    for i, j in ((0, 0), (1, 2)):
        d = np.zeros((3, 3))
        d[i, j] = eps
        fd = (grad(LA.det)(a + fg.tensor(d)).numpy() - grad(LA.det)(a - fg.tensor(d)).numpy())
        np.testing.assert_allclose(h[i, j], fd / (2 * eps), rtol=1e-6, atol=1e-8)
    per_sample = vmap(grad(LA.det))(fg.stack([a, 2 * a]))
    np.testing.assert_allclose(per_sample[1].numpy(), grad(LA.det)(2 * a).numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "op", ["inv", "det", "cholesky", "qr", "lstsq", "matrix_rank", "eigvalsh", "matrix_exp", "geqrf"]
)
def test_compile_replays_linalg_bit_for_bit(op):
    rng = np.random.default_rng(4)
    fns = {
        "inv": lambda a: [LA.inv(a)],
        "det": lambda a: [LA.det(a)],
        "cholesky": lambda a: [LA.cholesky(a @ a.mT)],
        "qr": lambda a: list(LA.qr(a)),
        "lstsq": lambda a: [LA.lstsq(a, a[:, :1]).solution],
        "matrix_rank": lambda a: [LA.matrix_rank(a)],
        "eigvalsh": lambda a: [LA.eigvalsh(a + a.mT)],
        "matrix_exp": lambda a: [LA.matrix_exp(a / 4)],
        "geqrf": lambda a: list(fg.geqrf(a.detach())),
    }
    f = fns[op]

    def step(a):
        outs = f(a)
        loss = sum((o * 1.5).sum() for o in outs if o.requires_grad)
        if not isinstance(loss, int):
            loss.backward()
        with fg.no_grad():
            return [o.clone() for o in outs]

    compiled = fg.compile(step, fullgraph=True)
    for _ in range(3):
        a = rng.uniform(-1, 1, (3, 3)) + 4 * np.eye(3)
        ae = fg.tensor(a, requires_grad=True)
        ac = fg.tensor(a, requires_grad=True)
        want, got = step(ae), compiled(ac)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        if ae.grad is not None:
            np.testing.assert_array_equal(ac.grad.numpy(), ae.grad.numpy())


def test_compiled_inv_still_raises_on_a_singular_matrix():
    compiled = fg.compile(lambda a: LA.inv(a) * 2, fullgraph=True)
    for _ in range(3):
        compiled(fg.eye(2) * 2)
    with pytest.raises(LA.LinAlgError, match="singular"):
        compiled(fg.zeros(2, 2))


def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix():
    # Rank one: det = 0, and the cofactors [[d, -c], [-b, a]] are [[6, -3], [-2, 1]].
    a = fg.tensor([[1.0, 2.0], [3.0, 6.0]], dtype=F64, requires_grad=True)
    LA.det(a).backward()
    np.testing.assert_allclose(a.grad.numpy(), [[6.0, -3.0], [-2.0, 1.0]], atol=1e-12)


# ----- einsum ------------------------------------------------------------------------------

EQUATIONS = [
    ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("ij,kj", [(2, 3), (4, 3)]),  # implicit output: the batch letter must not be summed
    ("ij,j->i", [(2, 3), (3,)]),
    ("...j,kj->...k", [(2, 2, 3), (4, 3)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("i,i", [(3,), (3,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 1)]),
]


@settings(max_examples=20, deadline=None)
@given(case=st.sampled_from(EQUATIONS), batched=st.lists(st.booleans(), min_size=2, max_size=2),
       as_list=st.booleans(), seed=st.integers(0, 2**16))
def test_vmap_of_einsum_matches_a_loop(case, batched, as_list, seed):
    eq, shapes = case
    rng = np.random.default_rng(seed)
    dims = tuple(0 if b else None for b in batched[: len(shapes)])
    if all(d is None for d in dims):
        dims = (0,) + dims[1:]
    args = [_rand(rng, 3, *s) if d == 0 else _rand(rng, *s) for s, d in zip(shapes, dims)]

    def f(*ts):
        return fg.einsum(eq, list(ts)) if as_list else fg.einsum(eq, *ts)

    got = vmap(f, in_dims=dims)(*args)
    want = np.stack([
        np.einsum(eq, *[a.numpy()[i] if d == 0 else a.numpy() for a, d in zip(args, dims)])
        for i in range(3)
    ])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_nested_vmap_of_einsum():
    rng = np.random.default_rng(5)
    a, b = _rand(rng, 4, 2, 3), _rand(rng, 4, 5, 3)
    got = vmap(vmap(lambda x, y: fg.einsum("j,kj->k", x, y), in_dims=(0, None)))(a, b)
    np.testing.assert_allclose(got.numpy(), np.einsum("abj,akj->abk", a.numpy(), b.numpy()),
                               rtol=1e-12, atol=1e-12)

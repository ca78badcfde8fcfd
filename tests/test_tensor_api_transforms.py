"""The added tensor API under the function transforms: vmap against a per-sample
loop, and forward-mode Jacobians (jacfwd) against reverse-mode ones (jacrev)."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.autograd.forward_ad as fwAD

IDX = fg.tensor([[0], [1], [2]])

VMAP_CASES = {
    "diff": lambda x: x.diff(),
    "diff_n2_dim0": lambda x: fg.diff(x, 2, 0),
    "tile": lambda x: x.tile((2, 1)),
    "rot90": lambda x: x.rot90(),
    "fliplr": lambda x: x.fliplr(),
    "ravel": lambda x: x.ravel(),
    "cumprod": lambda x: x.cumprod(1),
    "logcumsumexp": lambda x: fg.logcumsumexp(x, 0),
    "sin_": lambda x: (x * 1).sin_(),
    "sqrt_": lambda x: (x * 1).sqrt_(),
    "ge_": lambda x: (x * 1).ge_(0.5),
    "logical_not_": lambda x: (x * 1).logical_not_(),
    "nansum": lambda x: x.nansum(1),
    "nanmean": lambda x: fg.nanmean(x, 0),
    "count_nonzero": lambda x: (x > 0.5).count_nonzero(1),
    "inner": lambda x: fg.inner(x, x),
    "tensordot": lambda x: fg.tensordot(x, x, ([1], [1])),
    "index_add": lambda x: x.index_add(0, fg.tensor([0, 0]), x[:2]),
    "index_fill": lambda x: x.index_fill(1, fg.tensor([1]), 2.0),
    "take_along_dim": lambda x: fg.take_along_dim(x, IDX, 1),
    "hstack": lambda x: fg.hstack([x, x]),
    "vstack": lambda x: fg.vstack([x, x]),
    "block_diag": lambda x: fg.block_diag(x, x[0]),
    "trapezoid": lambda x: fg.trapezoid(x, dim=0),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_loop(name):
    f = VMAP_CASES[name]
    x = fg.tensor(np.random.default_rng(3).uniform(0.1, 1.0, (4, 3, 5)))
    got = fg.vmap(f)(x)
    want = fg.stack([f(x[i]) for i in range(4)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


JAC_CASES = {
    "cumprod": lambda x: x.cumprod(0),
    "logcumsumexp": lambda x: x.logcumsumexp(1),
    "cummax": lambda x: x.cummax(1).values,
    "diff": lambda x: x.diff(dim=0),
    "quantile": lambda x: x.quantile(0.3, 1),
    "scatter_reduce_amax": lambda x: x.scatter_reduce(1, fg.tensor([[0, 0, 1]] * 3), x, "amax"),
    "scatter_reduce_prod": lambda x: x.scatter_reduce(1, fg.tensor([[0, 0, 1]] * 3), x, "prod"),
    "masked_scatter": lambda x: x.masked_scatter(x > 0, x.flip(0)),
    "index_copy": lambda x: x.index_copy(0, fg.tensor([2, 0]), x[:2] * 3),
    "tensordot": lambda x: fg.tensordot(x, x, 1),
    "repeat_interleave": lambda x: x.repeat_interleave(fg.tensor([1, 0, 2]), dim=0),
    "sin_inplace": lambda x: (x * 1).sin_(),
    "round_inplace": lambda x: (x * 1).round_() + x,
}


@pytest.mark.parametrize("name", sorted(JAC_CASES))
def test_forward_mode_matches_reverse_jacobian(name):
    f = JAC_CASES[name]
    rng = np.random.default_rng(5)
    x = fg.tensor(rng.normal(size=(3, 3)))
    v = fg.tensor(rng.normal(size=(3, 3)))
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, v))).tangent
    jac = fg.autograd.functional.jacobian(f, x).numpy()
    out_shape = tuple(f(x).shape)
    want = jac.reshape(int(np.prod(out_shape)), 9) @ v.numpy().reshape(9)
    np.testing.assert_allclose(tangent.numpy().reshape(-1), want, rtol=1e-10, atol=1e-12)


BATCHED_JAC = ["cumprod", "logcumsumexp", "diff", "index_copy", "tensordot", "sin_inplace"]


@pytest.mark.parametrize("name", BATCHED_JAC)
def test_jacfwd_matches_jacrev(name):
    f = JAC_CASES[name]
    x = fg.tensor(np.random.default_rng(5).normal(size=(3, 3)))
    fwd = fg.func.jacfwd(f)(x)
    rev = fg.func.jacrev(f)(x)
    np.testing.assert_allclose(fwd.numpy(), rev.numpy(), rtol=1e-10, atol=1e-12)

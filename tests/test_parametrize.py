"""``nn.utils.parametrize``, ``nn.utils.parametrizations`` (``weight_norm``,
``spectral_norm``, ``orthogonal``), the legacy ``nn.utils.weight_norm`` and
``spectral_norm`` hooks, and the matrix functions they use (``matrix_exp``,
``householder_product``, ``geqrf``), against NumPy/SciPy references, closed
forms, finite differences and values recorded from PyTorch 2.15."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as torch
import ferrograd.nn as nn
from ferrograd.nn.utils import parametrizations as PZ
from ferrograd.nn.utils import parametrize as P
from ferrograd.testing import gradcheck, gradgradcheck

scipy_linalg = pytest.importorskip("scipy.linalg")


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class RankOne(nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        U, S, Vh = torch.linalg.svd(Z, full_matrices=False)
        s0_sqrt = S[0].sqrt().unsqueeze(-1)
        return U[..., :, 0] * s0_sqrt, Vh[..., 0, :] * s0_sqrt


# ----- register_parametrization ---------------------------------------------------------------


def test_symmetric_parametrization():
    m = nn.Linear(5, 5)
    w0 = m.weight.detach().numpy().copy()
    bias = m.bias
    P.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear"
    assert isinstance(m, nn.Linear)
    assert P.type_before_parametrizations(m) is nn.Linear
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
    assert not P.is_parametrized(m, "bias") and m.bias is bias
    W = m.weight.detach().numpy()
    np.testing.assert_allclose(W, W.T)
    # right_inverse stored triu(W0) as the original; the value is triu(W0) + triu(W0, 1)^T.
    np.testing.assert_allclose(W, np.triu(w0) + np.triu(w0, 1).T, rtol=1e-6)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    # Assigning goes through right_inverse.
    A = torch.rand(5, 5)
    A = A + A.T
    m.weight = A
    np.testing.assert_allclose(m.weight.detach().numpy(), A.numpy(), rtol=1e-6)
    # Gradients reach the original through the parametrization.
    x = torch.randn(3, 5)
    m(x).sum().backward()
    g = m.parametrizations.weight.original.grad.numpy()
    gw = np.ones((3, 5)).T @ x.numpy()  # d sum / dW
    np.testing.assert_allclose(g, np.triu(gw) + np.triu(gw.T, 1), rtol=1e-5)


def test_optimizer_keeps_the_original_object():
    m = nn.Linear(4, 4)
    original_weight = m.weight
    P.register_parametrization(m, "weight", Symmetric())
    # The parameter object an optimizer built earlier holds is the original.
    assert m.parametrizations.weight.original is original_weight
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        m(torch.randn(2, 4)).pow(2).sum().backward()
        opt.step()
    W = m.weight.detach().numpy()
    np.testing.assert_allclose(W, W.T)


def test_rank_one_sequence_right_inverse():
    m = nn.Linear(4, 4)
    P.register_parametrization(m, "weight", RankOne())
    assert list(m.state_dict()) == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1",
    ]  # fmt: skip
    assert np.linalg.matrix_rank(m.weight.detach().numpy()) == 1
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    w = m.weight.detach().numpy().copy()
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), w)


def test_chained_and_removed():
    class Double(nn.Module):
        def forward(self, x):
            return 2 * x

        def right_inverse(self, x):
            return x / 2

    m = nn.Linear(3, 3)
    w0 = m.weight.detach().numpy().copy()
    P.register_parametrization(m, "weight", Symmetric())
    P.register_parametrization(m, "weight", Double())
    assert len(m.parametrizations.weight) == 2
    sym = np.triu(w0) + np.triu(w0, 1).T
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * sym, rtol=1e-6)
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    np.testing.assert_allclose(m.weight.detach().numpy(), np.triu(w0), rtol=1e-6)


def test_buffers_can_be_parametrized():
    m = nn.BatchNorm1d(3)

    class Abs(nn.Module):
        def forward(self, x):
            return x.abs()

    m.running_mean.fill_(-2.0)
    P.register_parametrization(m, "running_mean", Abs())
    assert "parametrizations.running_mean.original" in m.state_dict()
    np.testing.assert_array_equal(m.running_mean.numpy(), [2.0, 2.0, 2.0])


def test_cached():
    calls = []

    class Count(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x * 1.0

    m = nn.Linear(2, 2)
    P.register_parametrization(m, "weight", Count())
    calls.clear()
    with P.cached():
        a = m.weight
        b = m.weight
        assert a is b
    assert len(calls) == 1
    _ = m.weight
    _ = m.weight
    assert len(calls) == 3


def test_errors():
    m = nn.Linear(2, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized "
                                         "element with name 'foo'"):  # fmt: skip
        P.register_parametrization(m, "foo", Symmetric())

    class Shrink(nn.Module):
        def forward(self, x):
            return x[:1]

    with pytest.raises(ValueError, match="may not change the shape of the tensor"):
        P.register_parametrization(m, "weight", Shrink())
    assert not P.is_parametrized(m)

    class NoInverse(nn.Module):
        def forward(self, x):
            return x * 2

    P.register_parametrization(m, "weight", NoInverse())
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        m.weight = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(m, "bias")
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only "
                                           "supported through state_dict()"):  # fmt: skip
        pickle.dumps(m)


def test_unsafe_allows_shape_change():
    class Flat(nn.Module):
        def forward(self, x):
            return x.reshape(-1)

    m = nn.Linear(2, 3)
    P.register_parametrization(m, "weight", Flat(), unsafe=True)
    assert m.weight.shape == (6,)


def test_deepcopy_and_state_dict_round_trip():
    m = nn.Linear(3, 3)
    P.register_parametrization(m, "weight", Symmetric())
    c = copy.deepcopy(m)
    assert type(c).__name__ == "ParametrizedLinear"
    np.testing.assert_array_equal(c.weight.detach().numpy(), m.weight.detach().numpy())
    c.parametrizations.weight.original.data.add_(1.0)
    assert not np.allclose(c.weight.detach().numpy(), m.weight.detach().numpy())
    fresh = nn.Linear(3, 3)
    P.register_parametrization(fresh, "weight", Symmetric())
    fresh.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(fresh.weight.detach().numpy(), m.weight.detach().numpy())


def test_transfer_parametrizations_and_params():
    a = nn.Linear(3, 3)
    P.register_parametrization(a, "weight", Symmetric())
    b = nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(a, b)
    assert P.is_parametrized(b, "weight")
    assert b.parametrizations.weight.original is a.parametrizations.weight.original


# ----- weight_norm ----------------------------------------------------------------------------


def test_weight_norm_values():
    m = nn.Conv2d(3, 4, 3)
    w0 = m.weight.detach().numpy().copy()
    PZ.weight_norm(m)
    assert list(m.state_dict()) == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1",
    ]  # fmt: skip
    g = m.parametrizations.weight.original0.detach().numpy()
    v = m.parametrizations.weight.original1.detach().numpy()
    np.testing.assert_allclose(g.ravel(), np.sqrt((w0**2).sum((1, 2, 3))), rtol=1e-6)
    assert g.shape == (4, 1, 1, 1)
    np.testing.assert_allclose(m.weight.detach().numpy(), w0, rtol=1e-5, atol=1e-7)
    # weight = g * v / ||v|| with v changed.
    with torch.no_grad():
        m.parametrizations.weight.original1.mul_(3.0)
    v = m.parametrizations.weight.original1.detach().numpy()
    norm = np.sqrt((v**2).sum((1, 2, 3), keepdims=True))
    np.testing.assert_allclose(m.weight.detach().numpy(), g * v / norm, rtol=1e-5)
    assert "_WeightNorm()" in repr(m)


def test_weight_norm_dim_none_and_dim_1():
    m = nn.Linear(3, 4)
    w = m.weight.detach().numpy().copy()
    PZ.weight_norm(m, dim=None)
    assert m.parametrizations.weight.original0.shape == ()
    assert float(m.parametrizations.weight.original0) == pytest.approx(np.linalg.norm(w), rel=1e-6)
    m2 = nn.Linear(3, 4)
    w2 = m2.weight.detach().numpy().copy()
    PZ.weight_norm(m2, dim=1)
    np.testing.assert_allclose(m2.parametrizations.weight.original0.detach().numpy().ravel(),
                               np.linalg.norm(w2, axis=0), rtol=1e-6)  # fmt: skip


def test_weight_norm_gradients():
    from ferrograd.nn.utils._norm_fns import _weight_norm, norm_except_dim

    v = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    g = torch.rand(3, 1, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda v, g: _weight_norm(v, g, 0), (v, g))
    assert gradgradcheck(lambda v, g: _weight_norm(v, g, 0), (v, g))
    assert norm_except_dim(v, 2, -1).shape == ()
    np.testing.assert_allclose(norm_except_dim(v, 2, 1).detach().numpy().ravel(),
                               np.linalg.norm(v.detach().numpy(), axis=0))  # fmt: skip


def test_weight_norm_loads_legacy_checkpoint():
    old = nn.Linear(3, 4)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(old)
    sd = old.state_dict()
    assert set(sd) == {"bias", "weight_g", "weight_v"}
    new = PZ.weight_norm(nn.Linear(3, 4))
    new.load_state_dict(sd)
    np.testing.assert_allclose(new.weight.detach().numpy(), old.weight.detach().numpy(), rtol=1e-6)


# ----- spectral_norm --------------------------------------------------------------------------

# Recorded from PyTorch 2.15: torch.manual_seed(0); m = nn.Linear(3, 4); spectral_norm(m).
_SN_WEIGHT = [
    [-0.005841533653438091, 0.41855594515800476, -0.6421746015548706],
    [-0.5742107629776001, -0.30051371455192566, 0.20922771096229553],
    [-0.01545908022671938, 0.6186458468437195, -0.06924185901880264],
    [0.20646189153194427, -0.2357994019985199, -0.15336862206459045],
]
_SN_U = [0.6924716234207153, -0.5086683034896851, 0.510381281375885, -0.03536272421479225]
_SN_V = [0.27284660935401917, 0.7667836546897888, -0.5810313820838928]


def test_spectral_norm_matches_pytorch():
    torch.manual_seed(0)
    m = nn.Linear(3, 4)
    PZ.spectral_norm(m)
    assert list(m.state_dict()) == [
        "bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
        "parametrizations.weight.0._v",
    ]  # fmt: skip
    sn = m.parametrizations.weight[0]
    np.testing.assert_allclose(sn._u.numpy(), _SN_U, atol=1e-5)
    np.testing.assert_allclose(sn._v.numpy(), _SN_V, atol=1e-5)
    m.eval()
    np.testing.assert_allclose(m.weight.detach().numpy(), _SN_WEIGHT, atol=1e-5)


def test_spectral_norm_normalises():
    torch.manual_seed(1)
    m = nn.Linear(6, 5)
    W = m.weight.detach().numpy().copy()
    PZ.spectral_norm(m, n_power_iterations=3)
    u_buf = m.parametrizations.weight[0]._u
    for _ in range(10):
        _ = m.weight  # training mode: each access runs power iterations on the same buffers
    assert m.parametrizations.weight[0]._u is u_buf
    sigma = np.linalg.svd(W, compute_uv=False)[0]
    np.testing.assert_allclose(m.weight.detach().numpy(), W / sigma, rtol=1e-4)
    assert np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)[0] == pytest.approx(1.0, rel=1e-4)
    # In eval mode the vectors stay.
    m.eval()
    u = u_buf.numpy().copy()
    _ = m.weight
    np.testing.assert_array_equal(u_buf.numpy(), u)


def test_spectral_norm_conv_dims_and_errors():
    ct = nn.ConvTranspose2d(3, 5, 2)
    PZ.spectral_norm(ct)
    assert ct.parametrizations.weight[0].dim == 1
    c = nn.Conv2d(3, 5, 2)
    PZ.spectral_norm(c)
    W = c.parametrizations.weight.original.detach().numpy().reshape(5, -1)
    for _ in range(20):
        _ = c.weight
    np.testing.assert_allclose(
        np.linalg.svd(c.weight.detach().numpy().reshape(5, -1), compute_uv=False)[0], 1.0, rtol=1e-4
    )
    assert W.shape == (5, 12)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        PZ.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        PZ.spectral_norm(nn.Linear(2, 2), name="nope")
    e = nn.Embedding(4, 3)
    PZ.spectral_norm(e)
    assert e(torch.tensor([1, 2])).shape == (2, 3)


def test_spectral_norm_gradients_flow():
    m = nn.Linear(3, 3).double()
    PZ.spectral_norm(m)
    m.eval()
    x = torch.randn(2, 3, dtype=torch.float64)
    m(x).sum().backward()
    assert m.parametrizations.weight.original.grad is not None
    assert np.isfinite(m.parametrizations.weight.original.grad.numpy()).all()


# ----- orthogonal -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("orth_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal(shape, orth_map, triv):
    torch.manual_seed(0)
    m = nn.Linear(shape[1], shape[0]).double()
    PZ.orthogonal(m, orthogonal_map=orth_map, use_trivialization=triv)
    resolved = orth_map or ("matrix_exp" if shape[0] == shape[1] else "householder")
    if not triv and resolved in ("matrix_exp", "cayley"):
        # Without a base these maps cannot be inverted: assigning is refused (registering
        # takes the current values as the unconstrained original, as PyTorch does).
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            m.weight = torch.eye(*shape, dtype=torch.float64)
    keys = list(m.state_dict())
    assert "parametrizations.weight.original" in keys
    assert ("parametrizations.weight.0.base" in keys) == triv
    W = m.weight.detach().numpy()
    n, k = W.shape
    gram = W.T @ W if n >= k else W @ W.T
    np.testing.assert_allclose(gram, np.eye(min(n, k)), atol=1e-10)
    # A few optimisation steps keep it orthogonal.
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        m(torch.randn(4, shape[1], dtype=torch.float64)).pow(3).sum().backward()
        opt.step()
    W = m.weight.detach().numpy()
    gram = W.T @ W if n >= k else W @ W.T
    np.testing.assert_allclose(gram, np.eye(min(n, k)), atol=1e-10)


def test_orthogonal_assignment_and_errors():
    m = nn.Linear(4, 4).double()
    PZ.orthogonal(m)
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))[0]
    m.weight = torch.tensor(q)
    np.testing.assert_allclose(m.weight.detach().numpy(), q, atol=1e-12)
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
        PZ.orthogonal(nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", '
                                         '"cayley", "householder". Got: qr'):  # fmt: skip
        PZ.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")


# ----- matrix functions -----------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 5), scale=st.sampled_from([0.1, 1.0, 5.0, 40.0]), seed=st.integers(0, 99))
def test_matrix_exp_against_scipy(n, scale, seed):
    a = np.random.default_rng(seed).standard_normal((n, n)) * scale / n
    got = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
    np.testing.assert_allclose(got, scipy_linalg.expm(a), rtol=1e-10, atol=1e-12 * np.abs(got).max())
    if np.abs(a).sum(0).max() <= 4:
        # float32 (away from the cancellation of large negative eigenvalues, where the
        # squarings lose digits in any float32 implementation).
        got32 = torch.matrix_exp(torch.tensor(a, dtype=torch.float32)).numpy()
        np.testing.assert_allclose(got32, scipy_linalg.expm(a), rtol=2e-5,
                                   atol=1e-6 * np.abs(got32).max())  # fmt: skip


def test_matrix_exp_batched_and_gradients():
    a = torch.randn(2, 3, 3, dtype=torch.float64)
    out = torch.linalg.matrix_exp(a).numpy()
    for i in range(2):
        np.testing.assert_allclose(out[i], scipy_linalg.expm(a[i].numpy()), rtol=1e-12)
    x = (torch.randn(3, 3, dtype=torch.float64) * 2).requires_grad_()
    assert gradcheck(torch.linalg.matrix_exp, (x,))
    assert gradgradcheck(torch.linalg.matrix_exp, (x,))
    # exp of a skew-symmetric matrix is orthogonal; exp(0) = I.
    s = torch.randn(4, 4, dtype=torch.float64)
    q = torch.matrix_exp(s - s.T).numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-12)
    np.testing.assert_array_equal(torch.matrix_exp(torch.zeros(2, 2)).numpy(), np.eye(2))
    with pytest.raises(RuntimeError, match="squared matrices"):
        torch.linalg.matrix_exp(torch.zeros(2, 3))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (2, 6, 2)])
def test_geqrf_and_householder_product(shape):
    a = torch.randn(*shape, dtype=torch.float64)
    h, tau = torch.geqrf(a)
    q = torch.linalg.householder_product(h, tau).numpy()
    an = a.numpy()
    r = np.triu(h.numpy())[..., : shape[-1], :]
    np.testing.assert_allclose(q @ r, an, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(shape[-1]),
                               q.shape[:-2] + (shape[-1], shape[-1])), atol=1e-12)  # fmt: skip
    assert torch.orgqr(h, tau).shape == h.shape


def test_householder_product_gradients():
    a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    tau = torch.rand(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(torch.linalg.householder_product, (a, tau))
    assert gradgradcheck(torch.linalg.householder_product, (a, tau))
    with pytest.raises(RuntimeError, match="input.shape\\[-2\\] must be greater than or equal"):
        torch.linalg.householder_product(torch.zeros(2, 3), torch.zeros(2))


# ----- legacy hooks ---------------------------------------------------------------------------


def test_legacy_weight_norm():
    m = nn.Linear(3, 4)
    w0 = m.weight.detach().numpy().copy()
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        nn.utils.weight_norm(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_g", "weight_v"]
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(m.weight.detach().numpy(), w0, rtol=1e-6)
    with torch.no_grad():
        m.weight_g.mul_(2.0)
    m(torch.zeros(1, 3))  # the pre-hook recomputes weight
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * w0, rtol=1e-6)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        with pytest.warns(FutureWarning):
            nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    assert isinstance(m.weight, nn.Parameter) and list(m.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(m)


def test_legacy_spectral_norm():
    torch.manual_seed(0)
    m = nn.Linear(3, 4)
    W = m.weight.detach().numpy().copy()
    nn.utils.spectral_norm(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    sd = m.state_dict()
    assert list(sd) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert sd._metadata[""] == {"version": 1, "spectral_norm": {"weight.version": 1}}
    for _ in range(30):
        m(torch.zeros(1, 3))
    sigma = np.linalg.svd(W, compute_uv=False)[0]
    np.testing.assert_allclose(m.weight.detach().numpy(), W / sigma, rtol=1e-4)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(m)
    # Reload into a fresh spectral-normed module.
    m2 = nn.utils.spectral_norm(nn.Linear(3, 4))
    m2.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(m2.weight_u.numpy(), m.weight_u.numpy())
    nn.utils.remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and not m._state_dict_hooks
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(m)


def test_legacy_spectral_norm_first_forward_matches_pytorch():
    # Recorded from PyTorch 2.15: manual_seed(0), Linear(3, 4), spectral_norm, one forward.
    torch.manual_seed(0)
    m = nn.Linear(3, 4)
    nn.utils.spectral_norm(m)
    np.testing.assert_allclose(m.weight_u.numpy(), [-0.6956158876419067, -0.3900858163833618,
                                                    -0.5770242214202881, 0.1760530322790146],
                               atol=1e-6)  # fmt: skip
    m(torch.zeros(1, 3))
    expected = [
        [-0.0067470381036400795, 0.4834369122982025, -0.7417190670967102],
        [-0.6632199883460999, -0.3470967710018158, 0.24166040122509003],
        [-0.017855415120720863, 0.7145430445671082, -0.07997513562440872],
        [0.23846586048603058, -0.2723510265350342, -0.17714251577854156],
    ]
    np.testing.assert_allclose(m.weight.detach().numpy(), expected, atol=1e-5)


def test_legacy_spectral_norm_upgrades_version_none_checkpoint():
    torch.manual_seed(0)
    m = nn.utils.spectral_norm(nn.Linear(3, 4))
    for _ in range(20):
        m(torch.zeros(1, 3))
    W = m.weight.detach().clone()
    # A checkpoint from before the version field: weight stored, no weight_v.
    old = {"bias": m.bias.detach(), "weight_orig": m.weight_orig.detach(),
           "weight_u": m.weight_u.clone(), "weight": W}  # fmt: skip
    m2 = nn.utils.spectral_norm(nn.Linear(3, 4))
    m2.load_state_dict(old)
    m2.eval()
    m2(torch.zeros(1, 3))
    np.testing.assert_allclose(m2.weight.detach().numpy(), W.numpy(), rtol=1e-4)

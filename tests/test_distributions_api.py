"""The ``ferrograd.distributions`` API: shapes, ``expand``, ``Independent``,
argument validation with PyTorch's messages, transforms and their Jacobians,
and the two scripts the distributions exist for (REINFORCE and a VAE),
written as for PyTorch."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.distributions as D
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck
from ferrograd.distributions import constraints, transforms

f64 = torch.float64


def T(x, dtype=f64):
    return torch.tensor(x, dtype=dtype)


# ----- shapes -------------------------------------------------------------------------


def test_shapes_of_samples_and_log_probs():
    d = D.Normal(torch.zeros(2, 3), torch.ones(2, 3))
    assert d.batch_shape == torch.Size([2, 3]) and d.event_shape == torch.Size([])
    assert d.sample().shape == (2, 3)
    assert d.sample((5,)).shape == (5, 2, 3)
    assert d.rsample((4, 1)).shape == (4, 1, 2, 3)
    assert d.log_prob(torch.zeros(7, 1, 3)).shape == (7, 2, 3)
    scalar = D.Normal(0.0, 1.0)
    assert scalar.batch_shape == torch.Size([]) and scalar.sample().shape == ()
    mvn = D.MultivariateNormal(torch.zeros(4, 3), torch.eye(3))
    assert mvn.batch_shape == (4,) and mvn.event_shape == (3,)
    assert mvn.sample((2,)).shape == (2, 4, 3) and mvn.log_prob(torch.zeros(3)).shape == (4,)
    dirich = D.Dirichlet(torch.ones(5, 4))
    assert dirich.batch_shape == (5,) and dirich.event_shape == (4,)
    assert dirich.sample((2,)).shape == (2, 5, 4)
    cat = D.Categorical(logits=torch.zeros(3, 6))
    assert cat.batch_shape == (3,) and cat.sample((2,)).shape == (2, 3)
    assert cat.sample().dtype == torch.int64
    oh = D.OneHotCategorical(logits=torch.zeros(3, 6))
    assert oh.event_shape == (6,) and oh.sample((2,)).shape == (2, 3, 6)


def test_expand():
    d = D.Normal(T([0.0, 1.0]), T([1.0, 2.0]))
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.sample().shape == (3, 2)
    np.testing.assert_allclose(e.log_prob(T(0.5)).numpy(),
                               np.broadcast_to(d.log_prob(T(0.5)).numpy(), (3, 2)))
    for dist in [D.Gamma(T([2.0]), T([1.0])), D.Bernoulli(T([0.3])), D.Poisson(T([2.0])),
                 D.Exponential(T([1.0])), D.Laplace(T([0.0]), T([1.0])),
                 D.Uniform(T([0.0]), T([1.0])), D.Beta(T([2.0]), T([3.0])),
                 D.StudentT(T([3.0])), D.Cauchy(T([0.0]), T([1.0])),
                 D.LogNormal(T([0.0]), T([1.0])), D.HalfNormal(T([1.0])),
                 D.Chi2(T([2.0])), D.Geometric(T([0.3])), D.Binomial(T([3.0]), T([0.3])),
                 D.Categorical(T([[0.5, 0.5]])), D.OneHotCategorical(T([[0.5, 0.5]])),
                 D.Dirichlet(T([[1.0, 2.0]])), D.MultivariateNormal(T([[0.0, 0.0]]), T(np.eye(2))),
                 D.RelaxedBernoulli(T(0.5), T([0.3])),
                 D.RelaxedOneHotCategorical(T(0.5), T([[0.3, 0.7]]))]:
        big = dist.expand((4,))
        assert type(big) is type(dist)
        assert big.batch_shape == (4,), type(dist)
        assert big.sample().shape == (4,) + tuple(dist.event_shape), type(dist)

    class Custom(D.Normal):
        def __init__(self, loc):
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        Custom(T([0.0])).expand((2,))


def test_independent_reinterprets_batch_dims():
    base = D.Normal(torch.zeros(4, 3, dtype=f64), torch.ones(4, 3, dtype=f64))
    ind = D.Independent(base, 1)
    assert ind.batch_shape == (4,) and ind.event_shape == (3,)
    x = torch.randn(4, 3, dtype=f64)
    np.testing.assert_allclose(ind.log_prob(x).numpy(), base.log_prob(x).sum(-1).numpy())
    np.testing.assert_allclose(ind.entropy().numpy(), base.entropy().sum(-1).numpy())
    assert repr(ind.support) == "IndependentConstraint(Real(), 1)"
    assert ind.has_rsample and ind.rsample((2,)).shape == (2, 4, 3)
    both = D.Independent(base, 2)
    assert both.batch_shape == () and both.event_shape == (4, 3)
    assert both.log_prob(x).shape == ()
    with pytest.raises(ValueError, match="Expected reinterpreted_batch_ndims <= "
                                         "len\\(base_distribution.batch_shape\\), actual 3 vs 2"):
        D.Independent(base, 3)
    assert ind.expand((2, 4)).batch_shape == (2, 4)


# ----- validation ---------------------------------------------------------------------


def test_invalid_parameters_raise_pytorchs_value_error():
    with pytest.raises(ValueError) as e:
        D.Normal(T([0.0, 1.0]), T([1.0, -1.0]))
    msg = str(e.value)
    size = repr(torch.Size([2]))
    assert msg.startswith(f"Expected parameter scale (Tensor of shape (2,)) of distribution "
                          f"Normal(loc: {size}, scale: {size}) to satisfy the "
                          "constraint GreaterThan(lower_bound=0.0), but found invalid values:\n")
    with pytest.raises(ValueError, match="Expected parameter probs .* to satisfy the constraint "
                                         "Interval\\(lower_bound=0.0, upper_bound=1.0\\)"):
        D.Bernoulli(T([1.5]))
    with pytest.raises(ValueError, match="constraint Simplex\\(\\)"):
        D.Categorical(T([0.5, -0.5]))
    with pytest.raises(ValueError, match="Expected parameter concentration .* "
                                         "IndependentConstraint\\(GreaterThan"):
        D.Dirichlet(T([1.0, 0.0]))
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        D.Uniform(T(1.0), T(0.0))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, "
                                         "but not both."):
        D.Bernoulli(T([0.5]), T([0.0]))
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional."):
        D.Categorical(T(0.5))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix "
                                         "or scale_tril may be specified."):
        D.MultivariateNormal(T([0.0]))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional."):
        D.MultivariateNormal(T(0.0), T([[1.0]]))
    with pytest.raises(ValueError, match="constraint PositiveDefinite"):
        D.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="Expected parameter probs .* to be positive but found"):
        D.Geometric(T([0.0, 0.5]))
    with pytest.raises(ValueError, match="must all be instances of numbers.Number, torch.Tensor"):
        D.Normal("a", 1.0)


def test_values_outside_the_support_raise_pytorchs_value_error():
    with pytest.raises(ValueError) as e:
        D.Exponential(T([1.0])).log_prob(T([-1.0]))
    assert str(e.value).startswith(
        "Expected value argument (Tensor of shape (1,)) to be within the support "
        "(GreaterThanEq(lower_bound=0.0)) of the distribution Exponential(rate: "
    )
    with pytest.raises(ValueError, match="within the support \\(IntegerInterval\\("
                                         "lower_bound=0, upper_bound=2\\)\\)"):
        D.Categorical(T([0.2, 0.3, 0.5])).log_prob(torch.tensor([3]))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match="Value is not broadcastable with "
                                         "batch_shape\\+event_shape"):
        D.Normal(torch.zeros(3), torch.ones(3)).log_prob(torch.zeros(2))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        D.MultivariateNormal(torch.zeros(3), torch.eye(3)).log_prob(torch.zeros(2))
    with pytest.raises(ValueError, match="support \\(Boolean\\(\\)\\)"):
        D.Bernoulli(T([0.5])).log_prob(T([0.5]))


def test_validation_can_be_turned_off():
    d = D.Normal(T([0.0]), T([-1.0]), validate_args=False)
    assert math.isnan(d.log_prob(T([0.0])).item())
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(T([0.0]), T([-1.0]))
        D.Exponential(T([1.0])).log_prob(T([-1.0]))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(T([0.0]), T([-1.0]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_lazy_parameters_and_repr():
    b = D.Bernoulli(logits=T([0.0, 2.0]))
    np.testing.assert_allclose(b.probs.numpy(), [0.5, 1 / (1 + math.exp(-2))])
    c = D.Categorical(probs=T([0.25, 0.75]))
    np.testing.assert_allclose(c.logits.numpy(), np.log([0.25, 0.75]))
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    size = repr(torch.Size([2]))
    assert repr(D.Normal(torch.zeros(2), torch.ones(2))) == f"Normal(loc: {size}, scale: {size})"
    assert repr(constraints.interval(0, 1)) == "Interval(lower_bound=0, upper_bound=1)"
    assert D.Normal.arg_constraints["scale"] is constraints.positive
    assert D.Uniform.support.event_dim == 0 and constraints.is_dependent(D.Uniform.support)


def test_sample_n_warns_and_samples():
    with pytest.warns(FutureWarning, match="sample_n"):
        s = D.Normal(torch.zeros(2), torch.ones(2)).sample_n(3)
    assert s.shape == (3, 2)


def test_constraints_check():
    x = T([-1.0, 0.0, 0.5, 1.0, 2.0])
    assert constraints.positive.check(x).tolist() == [False, False, True, True, True]
    assert constraints.nonnegative.check(x).tolist() == [False, True, True, True, True]
    assert constraints.unit_interval.check(x).tolist() == [False, True, True, True, False]
    assert constraints.half_open_interval(0, 1).check(x).tolist() == \
        [False, True, True, False, False]
    assert constraints.nonnegative_integer.check(x).tolist() == [False, True, False, True, True]
    assert constraints.simplex.check(T([[0.2, 0.8], [0.5, 0.6]])).tolist() == [True, False]
    assert constraints.real.check(T([math.nan, 1.0])).tolist() == [False, True]
    assert constraints.lower_cholesky.check(T([[1.0, 0.0], [2.0, 3.0]])).item()
    assert not constraints.lower_cholesky.check(T([[1.0, 1.0], [2.0, 3.0]])).item()
    assert constraints.one_hot.check(T([[0.0, 1.0], [1.0, 1.0]])).tolist() == [True, False]


# ----- transforms ---------------------------------------------------------------------

SCALAR_TRANSFORMS = [
    ("Exp", transforms.ExpTransform(), (-2, 2)),
    ("Sigmoid", transforms.SigmoidTransform(), (-4, 4)),
    ("Tanh", transforms.TanhTransform(), (-2, 2)),
    ("Softplus", transforms.SoftplusTransform(), (-3, 3)),
    ("Affine", transforms.AffineTransform(T([0.5, -1.0, 2.0, 0.0, 1.0]), T([2.0, -0.5, 3.0, 1.0, 4.0])),
     (-2, 2)),
    ("AffineScalar", transforms.AffineTransform(1.0, -3.0), (-2, 2)),
    ("Power", transforms.PowerTransform(T(2.5)), (0.2, 3)),
    ("Compose", transforms.ComposeTransform([transforms.AffineTransform(0.5, 2.0),
                                              transforms.ExpTransform()]), (-1, 1)),
]


@pytest.mark.parametrize("name,t,rng", SCALAR_TRANSFORMS, ids=[s[0] for s in SCALAR_TRANSFORMS])
def test_scalar_transforms(name, t, rng):
    x = torch.linspace(rng[0], rng[1], 5, dtype=f64).requires_grad_()
    y = t(x)
    # log|dy/dx| against the elementwise derivative from autograd.
    (dy,) = torch.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).detach().numpy(),
                               np.log(np.abs(dy.numpy())), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(t.inv(y).detach().numpy(), x.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    assert t.inv.inv is t
    inv_ladj = t.inv.log_abs_det_jacobian(y, x)
    np.testing.assert_allclose(inv_ladj.detach().numpy(),
                               -t.log_abs_det_jacobian(x, y).detach().numpy())
    assert t.bijective
    sign = t.sign
    s = np.sign(dy.numpy())
    if isinstance(sign, torch.Tensor):
        np.testing.assert_array_equal(np.broadcast_to(sign.numpy(), s.shape), s)
    else:
        assert np.all(s == sign)
    assert gradcheck(lambda v: t(v), (x,))


def test_stick_breaking_transform():
    t = transforms.StickBreakingTransform()
    x = T([0.3, -1.2, 0.8]).requires_grad_()
    y = t(x)
    assert y.shape == (4,)
    assert y.sum().item() == pytest.approx(1.0)
    assert (y > 0).all()
    np.testing.assert_allclose(t.inv(y).detach().numpy(), x.detach().numpy(), rtol=1e-10)
    # log|det J| of x -> y[:-1] against the determinant of the autograd Jacobian.
    J = torch.autograd.functional.jacobian(lambda v: t(v)[:-1], x)
    want = np.log(abs(np.linalg.det(J.numpy())))
    assert t.log_abs_det_jacobian(x, y).item() == pytest.approx(want, rel=1e-10)
    assert t.forward_shape((2, 3)) == (2, 4) and t.inverse_shape((2, 4)) == (2, 3)
    # Zeros map to the centre of the simplex.
    np.testing.assert_allclose(t(torch.zeros(3, dtype=f64)).numpy(), [0.25] * 4, rtol=1e-12)


def test_softmax_abs_and_caching():
    sm = transforms.SoftmaxTransform()
    x = T([1.0, 2.0, 0.5])
    np.testing.assert_allclose(sm(x).numpy(), F.softmax(x, -1).numpy(), rtol=1e-14)
    assert not sm.bijective
    ab = transforms.AbsTransform()
    assert ab(T([-2.0, 3.0])).tolist() == [2.0, 3.0]
    t = transforms.TanhTransform(cache_size=1)
    x = T([30.0])
    y = t(x)
    assert t.inv(y) is x  # the cached pair: exact even where atanh(tanh(x)) is not
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        transforms.ExpTransform(cache_size=2)
    assert transforms.ExpTransform() == transforms.ExpTransform()
    assert transforms.identity_transform(x) is x


def test_transformed_distribution():
    base = D.Normal(T([0.0, 0.5]), T([1.0, 0.3]))
    d = D.TransformedDistribution(base, [transforms.AffineTransform(1.0, 2.0),
                                         transforms.ExpTransform()])
    ln = D.LogNormal(T([1.0, 2.0]), T([2.0, 0.6]))
    v = T([0.7, 3.0])
    np.testing.assert_allclose(d.log_prob(v).numpy(), ln.log_prob(v).numpy(), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(v).numpy(), ln.cdf(v).numpy(), rtol=1e-12)
    np.testing.assert_allclose(d.icdf(T([0.2, 0.9])).numpy(), ln.icdf(T([0.2, 0.9])).numpy(),
                               rtol=1e-12)
    # A decreasing transform flips the CDF.
    neg = D.TransformedDistribution(D.Exponential(T([1.0])), transforms.AffineTransform(0.0, -1.0))
    assert neg.cdf(T([-0.5])).item() == pytest.approx(math.exp(-0.5))
    assert repr(neg.support) == "Real()"
    # Stick breaking turns a 2-d normal into a distribution on the 3-simplex.
    sb = D.TransformedDistribution(D.Normal(torch.zeros(2, dtype=f64), torch.ones(2, dtype=f64)),
                                   transforms.StickBreakingTransform())
    assert sb.event_shape == (3,) and sb.batch_shape == ()
    s = sb.sample((5,))
    assert s.shape == (5, 3) and bool(constraints.simplex.check(s).all())
    assert sb.log_prob(s).shape == (5,)
    with pytest.raises(ValueError, match="transforms must be a Transform or list"):
        D.TransformedDistribution(base, "exp")


def test_tanh_squashed_gaussian_policy():
    # The SAC-style policy: a Normal squashed by tanh, log_prob corrected by the Jacobian.
    mu = T([0.1, -0.3]).requires_grad_()
    log_std = T([-0.5, 0.2]).requires_grad_()
    pi = D.TransformedDistribution(D.Normal(mu, log_std.exp()), [transforms.TanhTransform(cache_size=1)])
    torch.manual_seed(0)
    a = pi.rsample()
    lp = pi.log_prob(a)
    u = pi.transforms[0].inv(a)
    want = D.Normal(mu, log_std.exp()).log_prob(u) - torch.log(1 - a.pow(2))
    np.testing.assert_allclose(lp.detach().numpy(), want.detach().numpy(), rtol=1e-9)
    (lp.sum() - a.sum()).backward()
    assert mu.grad is not None and log_std.grad is not None


# ----- the scripts the distributions exist for ---------------------------------------------


def test_reinforce_script():
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.Adam(policy.parameters(), lr=0.05)
    target = 2  # reward 1 for choosing action 2, 0 otherwise
    for _ in range(60):
        state = torch.randn(8, 4)
        logits = policy(state)
        dist = D.Categorical(logits=logits)
        action = dist.sample()
        reward = (action == target).float()
        loss = -(dist.log_prob(action) * (reward - reward.mean())).mean()
        loss = loss - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    probs = F.softmax(policy(torch.randn(256, 4)), -1)[:, target].mean().item()
    assert probs > 0.9


def test_vae_script():
    torch.manual_seed(0)
    data = (torch.rand(64, 8) > 0.5).float()

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(8, 2 * 2)
            self.dec = nn.Linear(2, 8)

        def forward(self, x):
            mu, log_var = self.enc(x).chunk(2, dim=-1)
            std = torch.exp(0.5 * log_var)
            q = D.Normal(mu, std)
            z = q.rsample()
            recon = D.Bernoulli(logits=self.dec(z)).log_prob(x).sum(-1)
            kl = D.kl_divergence(q, D.Normal(torch.zeros_like(mu), torch.ones_like(std))).sum(-1)
            return -(recon - kl).mean()

    model = VAE()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    first = None
    for _ in range(150):
        loss = model(data)
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < first - 0.3
    assert all(p.grad is not None for p in model.parameters())


def test_no_warnings_on_plain_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = D.Gamma(T([2.0]), T([1.0]))
        d.log_prob(d.sample((3,)))
        D.kl_divergence(d, D.Gamma(T([3.0]), T([2.0])))

"""In-place forms under vmap, autograd and compile: the functional in-place
activations (``F.relu_``...), the in-place methods of ops written in Python
(``addmm_``, ``index_copy_``, ``cumsum_``...), random ops by vmap's
``randomness`` mode, index ops replayed by ``ferrograd.compile`` with new
index values, and vmap of ``polygamma`` and ``mode``. References are
per-sample loops and NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F


def _loop(fn, *batched):
    return np.stack([fn(*[b[i].clone() for b in batched]).numpy() for i in range(batched[0].shape[0])])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: F.relu_(x.clone()),
        lambda x: F.elu_(x.clone(), 0.5),
        lambda x: F.leaky_relu_(x.clone(), 0.2),
        lambda x: F.hardtanh_(x.clone(), -0.5, 0.5),
        lambda x: F.celu_(x.clone()),
        lambda x: F.selu_(x.clone()),
        lambda x: F.threshold_(x.clone(), 0.1, -2.0),
        lambda x: F.rrelu_(x.clone()),
        lambda x: F.relu(x.clone(), inplace=True),
        lambda x: F.silu(x.clone(), inplace=True),
        lambda x: x.clone().sinh_(),
        lambda x: x.clone().cumsum_(1),
        lambda x: x.clone().tril_(),
    ],
)
def test_inplace_activations_and_methods_under_vmap(fn):
    x = fg.tensor(np.random.default_rng(0).uniform(-2, 2, (4, 3, 3)))
    np.testing.assert_allclose(fg.vmap(fn)(x).numpy(), _loop(fn, x), rtol=1e-12, atol=1e-12)


def test_inplace_products_and_index_writes_under_vmap():
    rng = np.random.default_rng(1)
    c = fg.tensor(rng.normal(size=(3, 2, 2)))
    a = fg.tensor(rng.normal(size=(3, 2, 4)))
    b = fg.tensor(rng.normal(size=(3, 4, 2)))
    idx = fg.tensor([[1, 0], [0, 1], [1, 1]])
    src = fg.tensor(rng.normal(size=(3, 2, 2)))
    for fn, args in (
        (lambda c, a, b: c.clone().addmm_(a, b, beta=0.5, alpha=2.0), (c, a, b)),
        (lambda c, i, s: c.clone().index_copy_(0, i[:1], s[:1]), (c, idx, src)),
        (lambda c, i, s: c.clone().index_add_(0, i, s), (c, idx, src)),
        # index_put's indices come in a tuple, unbatched (its vmap refusal says why).
        (lambda c, s: c.clone().index_put_((fg.tensor([1]),), s[:1]), (c, src)),
        (lambda c, i, s: c.clone().scatter_(1, i.unsqueeze(0), s[:1]), (c, idx, src)),
        (lambda c, i, s: c.clone().put_(i, s[0]), (c, idx, src)),
        (lambda c: c.clone().index_fill_(1, fg.tensor([1]), -3.0), (c,)),
    ):
        np.testing.assert_allclose(fg.vmap(fn)(*args).numpy(), _loop(fn, *args), rtol=1e-12)


def test_inplace_into_an_unbatched_tensor_is_refused_naming_the_op():
    w = fg.zeros(2, 2)
    a, b = fg.randn(3, 2, 4), fg.randn(4, 2)
    with pytest.raises(RuntimeError, match=r"vmap: addmm_\(self, \*extra_args\) is not possible"):
        fg.vmap(lambda a: w.addmm_(a, b))(a)
    with pytest.raises(RuntimeError, match=r"vmap: addr_\(self"):
        fg.vmap(lambda s: w.addr_(s, fg.ones(2)))(fg.randn(3, 2))
    assert w.abs().sum().item() == 0


def test_inplace_activation_of_a_leaf_clone_has_gradients():
    # F.relu_ on a clone of a leaf: the gradient reaches the leaf (kinks kept off 0).
    x = fg.tensor([-1.5, -0.5, 0.5, 2.0], dtype=fg.float64, requires_grad=True)
    F.leaky_relu_(x.clone(), 0.1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.1, 0.1, 1.0, 1.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        F.relu_(x)


@pytest.mark.parametrize("make", [fg.rand_like, fg.randn_like, lambda t: fg.randint_like(t, 5),
                                  lambda t: F.rrelu(t, training=True)])
def test_random_ops_follow_vmaps_randomness_mode(make):
    x = fg.tensor(np.random.default_rng(2).uniform(-2, 2, (3, 2, 4)))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        fg.vmap(make)(x)
    # 'different': one draw for the whole batch, the values the op draws for the stack.
    fg.manual_seed(7)
    got = fg.vmap(make, randomness="different")(x)
    fg.manual_seed(7)
    np.testing.assert_array_equal(got.numpy(), make(x).numpy())
    assert not np.array_equal(got[0].numpy(), got[1].numpy())
    # 'same': equal samples get equal rows.
    same = x[:1].expand(3, 2, 4).contiguous()
    rows = fg.vmap(make, randomness="same")(same).numpy()
    np.testing.assert_array_equal(rows[1], rows[0])
    np.testing.assert_array_equal(rows[2], rows[0])


def test_histc_under_vmap_counts_each_sample():
    x = fg.tensor([[0.1, 0.6, 1.9], [1.2, 1.3, 5.0]])
    got = fg.vmap(lambda t: fg.histc(t, 4, 0.0, 2.0))(x)
    np.testing.assert_array_equal(got.numpy(), [[1, 1, 0, 1], [0, 0, 2, 0]])


def test_rrelu_training_under_compile_replays_the_draws_as_eager():
    # The slopes are drawn per non-positive element: a replay redraws them from the
    # generator exactly as an eager call would, for new inputs with other signs.
    step = fg.compile(lambda x: F.rrelu(x, training=True), fullgraph=True)
    for k in range(4):
        x = fg.randn(2, 3)
        fg.manual_seed(k)
        want = F.rrelu(x, training=True)
        fg.manual_seed(k)
        got = step(x)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_index_writes_replay_with_new_index_values():
    def f(x, i, v):
        return x.index_put((i,), v), x.put(i, v[:, 0].contiguous()), x.index_fill(0, i, 2.0)

    compiled = fg.compile(f, fullgraph=True)
    x, v = fg.zeros(3, 2), fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    for idx in ([0, 2], [1, -1], [2, 0]):
        i = fg.tensor(idx)
        for got, want in zip(compiled(x, i, v), f(x, i, v)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    ("name", "ref"),
    [
        ("hann_window", np.hanning),
        ("hamming_window", np.hamming),
        ("blackman_window", np.blackman),
        ("bartlett_window", np.bartlett),
        ("kaiser_window", lambda n: np.kaiser(n, 12.0)),
    ],
)
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_windows_periodic_and_symmetric(name, ref, n):
    fn = getattr(fg, name)
    want_sym = ref(n) if n > 1 else np.ones(n)
    want_per = ref(n + 1)[:-1] if n > 1 else np.ones(n)
    np.testing.assert_allclose(fn(n, False, dtype=fg.float64).numpy(), want_sym, atol=1e-14)
    np.testing.assert_allclose(fn(n, dtype=fg.float64).numpy(), want_per, atol=1e-14)
    w = fn(n, requires_grad=True)
    assert w.dtype == fg.float32 and w.requires_grad


def test_polygamma_and_mode_under_vmap():
    # Not in-place, but batched in the same change: polygamma is elementwise in `input`,
    # mode takes sort's dimension rule (as a function and as a method).
    x = fg.tensor(np.random.default_rng(3).choice([0.5, 1.0, 1.5], size=(4, 2, 5)))
    for fn in (lambda t: fg.polygamma(1, t), lambda t: t.polygamma(2),
               lambda t: fg.mode(t, 1).values, lambda t: t.mode().indices,
               lambda t: fg.mode(t, 0, True).values):
        np.testing.assert_allclose(fg.vmap(fn)(x).numpy(), _loop(fn, x), rtol=1e-12)

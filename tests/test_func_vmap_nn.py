"""vmap of the neural-network functions whose batching rules fold the vmap
batch into their own batch dimension (transposed convolution, attention,
grid sampling, bilinear maps, the Gaussian NLL check) and of the in-place
shape ops: each is compared with a loop over the samples, with every mix of
batched and shared arguments."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F


def _loop(fn, args, batched):
    """``fn`` per sample: batched args are indexed, shared ones passed as they are."""
    size = next(a.shape[0] for a, b in zip(args, batched) if b)
    rows = []
    for i in range(size):
        rows.append(fn(*[a[i] if b else a for a, b in zip(args, batched)]))
    return fg.stack(rows)


def _vmapped(fn, args, batched):
    dims = tuple(0 if b else None for b in batched)
    return fg.vmap(fn, in_dims=dims)(*args)


def _check(fn, args, batched, tol=1e-12):
    got = _vmapped(fn, args, batched)
    want = _loop(fn, args, batched)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)


def _rand(rng, *shape):
    return fg.tensor(rng.standard_normal(shape), dtype=fg.float64)


masks = st.lists(st.booleans(), min_size=3, max_size=3).filter(any)


@given(seed=st.integers(0, 2**16), which=masks, stride=st.integers(1, 2),
       groups=st.sampled_from([1, 2]), sd=st.sampled_from([1, 2]), transposed=st.booleans(),
       unbatched_sample=st.booleans())
def test_conv_matches_loop(seed, which, stride, groups, sd, transposed, unbatched_sample):
    rng = np.random.default_rng(seed)
    b, n, cin, cout = 3, 2, 4, 2
    x = _rand(rng, b, n, cin, *([3] * sd))
    if unbatched_sample:
        x = x[:, 0]
    if transposed:
        w = _rand(rng, b, cin, cout // groups, *([2] * sd))
        conv = F.conv_transpose1d if sd == 1 else F.conv_transpose2d
    else:
        w = _rand(rng, b, cout, cin // groups, *([2] * sd))
        conv = F.conv1d if sd == 1 else F.conv2d
    bias = _rand(rng, b, cout)

    def fn(x, w, bias):
        return conv(x, w, bias, stride=stride, groups=groups)

    args = [x if which[0] else x[0], w if which[1] else w[0], bias if which[2] else bias[0]]
    _check(fn, args, which)


@given(seed=st.integers(0, 2**16), which=masks, causal=st.booleans(),
       mask_kind=st.sampled_from([None, "bool", "float", "batched"]),
       heads=st.sampled_from([(), (2,)]))
def test_sdpa_matches_loop(seed, which, causal, mask_kind, heads):
    rng = np.random.default_rng(seed)
    b, L, S, E = 3, 4, 5, 6
    if causal:
        mask_kind = None
    q = _rand(rng, b, *heads, L, E)
    k = _rand(rng, b, *heads, S, E)
    v = _rand(rng, b, *heads, S, 3)
    args = [q if which[0] else q[0], k if which[1] else k[0], v if which[2] else v[0]]
    batched = list(which)
    mask = None
    if mask_kind == "bool":
        mask = fg.tensor(rng.random((L, S)) < 0.7)
        mask[:, 0] = True
    elif mask_kind == "float":
        mask = _rand(rng, L, S)
    elif mask_kind == "batched":
        mask = _rand(rng, b, L, S)

    if mask_kind == "batched":
        args.append(mask)
        batched.append(True)

        def fn(q, k, v, m):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    else:

        def fn(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    _check(fn, args, batched)


def test_sdpa_dropout_under_vmap_needs_different_randomness():
    q = fg.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="randomness"):
        fg.vmap(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=0.5))(q)
    out = fg.vmap(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=0.5),
                  randomness="different")(q)
    assert out.shape == (2, 3, 4)


@given(seed=st.integers(0, 2**16), which=st.lists(st.booleans(), min_size=2, max_size=2)
       .filter(any), mode=st.sampled_from(["bilinear", "nearest"]),
       padding_mode=st.sampled_from(["zeros", "border", "reflection"]))
def test_grid_sample_matches_loop(seed, which, mode, padding_mode):
    rng = np.random.default_rng(seed)
    x = _rand(rng, 3, 2, 2, 4, 5)
    grid = fg.tensor(rng.uniform(-1.1, 1.1, (3, 2, 3, 2, 2)), dtype=fg.float64)

    def fn(x, g):
        return F.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=False)

    _check(fn, [x if which[0] else x[0], grid if which[1] else grid[0]], which)


def test_affine_grid_matches_loop():
    theta = fg.randn(3, 2, 2, 3, dtype=fg.float64)
    _check(lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=True), [theta], [True])
    theta3 = fg.randn(3, 2, 3, 4, dtype=fg.float64)
    _check(lambda t: F.affine_grid(t, (2, 1, 2, 3, 4), align_corners=False), [theta3], [True])


@given(seed=st.integers(0, 2**16),
       which=st.lists(st.booleans(), min_size=4, max_size=4).filter(any))
def test_bilinear_matches_loop(seed, which):
    rng = np.random.default_rng(seed)
    x1, x2 = _rand(rng, 3, 2, 3), _rand(rng, 3, 2, 4)
    w, b = _rand(rng, 3, 5, 3, 4), _rand(rng, 3, 5)
    args = [a if on else a[0] for a, on in zip((x1, x2, w, b), which)]
    _check(F.bilinear, args, which)


def test_gaussian_nll_loss_under_vmap_checks_every_sample():
    x, y = fg.randn(3, 4, dtype=fg.float64), fg.randn(3, 4, dtype=fg.float64)
    var = fg.rand(3, 4, dtype=fg.float64) + 0.1
    _check(F.gaussian_nll_loss, [x, y, var], [True, True, True])
    var[2, 1] = -1.0
    with pytest.raises(ValueError, match="var has negative entry"):
        fg.vmap(F.gaussian_nll_loss)(x, y, var)


@pytest.mark.parametrize("name, args", [
    ("t_", ()), ("transpose_", (0, 1)), ("swapaxes_", (1, 0)), ("swapdims_", (0, 1)),
    ("squeeze_", ()), ("squeeze_", (1,)), ("unsqueeze_", (0,)), ("unsqueeze_", (-1,)),
])  # fmt: skip
def test_inplace_shape_ops_match_loop(name, args):
    x = fg.randn(3, 2, 1, dtype=fg.float64)
    if name in ("t_",):
        x = fg.randn(3, 2, 4, dtype=fg.float64)

    def fn(s):
        r = getattr(s, name)(*args)
        assert r is s
        return s * 1.0

    want = _loop(fn, [x.clone()], [True])
    kept = x.clone()
    got = fg.vmap(fn)(x)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # The tensor vmap was given keeps its shape, as each sample's view does in a loop.
    assert x.shape == kept.shape
    np.testing.assert_array_equal(x.numpy(), kept.numpy())


@given(size=st.integers(1, 3), step=st.integers(1, 3), dim=st.sampled_from([0, 1, -1]))
def test_unfold_windows_matches_loop(size, step, dim):
    x = fg.arange(3 * 4 * 5, dtype=fg.float64).reshape(3, 4, 5)
    _check(lambda s: s.unfold(dim, size, step), [x], [True])


@given(seed=st.integers(0, 2**16), bins=st.integers(1, 6),
       rng_kind=st.sampled_from(["data", "given"]), nested=st.booleans())
def test_histc_matches_loop(seed, bins, rng_kind, nested):
    rng = np.random.default_rng(seed)
    x = fg.tensor(rng.standard_normal((2, 3, 7)).astype(np.float32))
    x[1, 2] = 0.5  # a sample whose data range is empty
    lo, hi = (0.0, 0.0) if rng_kind == "data" else (-1.0, 1.0)

    def fn(s):
        return fg.histc(s, bins=bins, min=lo, max=hi)

    if nested:
        got = fg.vmap(fg.vmap(fn), in_dims=1)(x)  # the outer level maps dim 1
        want = fg.stack([fg.stack([fn(x[i, j]) for i in range(2)]) for j in range(3)])
    else:
        got = fg.vmap(fn)(x[0])
        want = fg.stack([fn(x[0, j]) for j in range(3)])
    np.testing.assert_array_equal(got.numpy(), want.numpy())

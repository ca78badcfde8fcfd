"""F.grid_sample and F.affine_grid against a NumPy reference written from PyTorch's
documentation (pixel coordinates, padding modes, bilinear/nearest/bicubic weights), and
their gradients against finite differences (first and second order, float64)."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]


def unnormalize(c, size, align_corners):
    # -1 and 1 are the centres of the corner pixels, or their outer edges.
    if align_corners:
        return (c + 1) / 2 * (size - 1)
    return ((c + 1) * size - 1) / 2


def reflect(c, size, align_corners):
    lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
    span = hi - lo
    if span == 0:
        return 0.0
    c = abs(c - lo)
    k = math.floor(c / span)
    r = c - k * span
    return lo + (r if k % 2 == 0 else span - r)


def pad_coord(c, size, padding_mode, align_corners):
    if padding_mode == "border":
        return min(max(c, 0.0), size - 1.0)
    if padding_mode == "reflection":
        return min(max(reflect(c, size, align_corners), 0.0), size - 1.0)
    return c


def pixel(img, idx):
    # img: [C, *sizes]; outside the image reads 0.
    if all(0 <= i < n for i, n in zip(idx, img.shape[1:])):
        return img[(slice(None), *idx)]
    return np.zeros(img.shape[0])


def cubic(t):
    a = -0.75
    t = abs(t)
    if t <= 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    if t < 2:
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return 0.0


def reference(x, grid, mode, padding_mode, align_corners):
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    d = len(sizes)
    out = np.zeros((n, c) + grid.shape[1:-1])
    for b in range(n):
        for pos in np.ndindex(*grid.shape[1:-1]):
            pt = grid[(b, *pos)]
            # grid[..., 0] is x (the last dimension), grid[..., 1] is y, ...
            coords = [unnormalize(pt[d - 1 - i], sizes[i], align_corners) for i in range(d)]
            if mode == "bicubic":
                y, xx = coords
                y0, x0 = math.floor(y), math.floor(xx)
                v = np.zeros(c)
                for i in range(-1, 3):
                    for j in range(-1, 3):
                        yy = int(pad_coord(y0 + i, sizes[0], padding_mode, align_corners))
                        xj = int(pad_coord(x0 + j, sizes[1], padding_mode, align_corners))
                        v += pixel(x[b], (yy, xj)) * cubic(y - (y0 + i)) * cubic(xx - (x0 + j))
            else:
                coords = [
                    pad_coord(q, s, padding_mode, align_corners) for q, s in zip(coords, sizes)
                ]
                if mode == "nearest":
                    v = pixel(x[b], tuple(int(np.rint(q)) for q in coords))
                else:
                    v = np.zeros(c)
                    low = [math.floor(q) for q in coords]
                    for corner in itertools.product((0, 1), repeat=d):
                        w = 1.0
                        for q, lo, bit in zip(coords, low, corner):
                            w *= (q - lo) if bit else (1 - (q - lo))
                        v += w * pixel(x[b], tuple(lo + bit for lo, bit in zip(low, corner)))
            out[(b, slice(None), *pos)] = v
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d_matches_the_reference(mode, padding_mode, align_corners):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5))
    # Points inside, on and well outside the image (reflections several times over).
    grid = rng.uniform(-2.5, 2.5, (2, 3, 4, 2))
    grid[0, 0, 0] = [1.0, -1.0]
    grid[0, 0, 1] = [0.0, 0.0]
    got = F.grid_sample(fg.tensor(x), fg.tensor(grid), mode, padding_mode, align_corners)
    np.testing.assert_allclose(got.numpy(), reference(x, grid, mode, padding_mode, align_corners),
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    got32 = F.grid_sample(fg.tensor(x).float(), fg.tensor(grid).float(), mode, padding_mode,
                          align_corners)  # fmt: skip
    assert got32.dtype == fg.float32
    np.testing.assert_allclose(got32.numpy(), got.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_3d_matches_the_reference(mode, padding_mode, align_corners):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 3, 4, 2))
    grid = rng.uniform(-1.8, 1.8, (1, 2, 3, 2, 3))
    got = F.grid_sample(fg.tensor(x), fg.tensor(grid), mode, padding_mode, align_corners)
    np.testing.assert_allclose(got.numpy(), reference(x, grid, mode, padding_mode, align_corners),
                               rtol=1e-12, atol=1e-12)  # fmt: skip


def test_sampling_pixel_centres_reproduces_the_image():
    rng = np.random.default_rng(2)
    x = fg.tensor(rng.standard_normal((2, 3, 5, 4)))
    theta = fg.tensor([[[1.0, 0, 0], [0, 1.0, 0]]] * 2, dtype=fg.float64)
    for ac in (False, True):
        grid = F.affine_grid(theta, (2, 3, 5, 4), align_corners=ac)
        for mode in MODES:
            y = F.grid_sample(x, grid, mode=mode, align_corners=ac)
            np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(
    mode=st.sampled_from(MODES),
    padding_mode=st.sampled_from(PADDINGS),
    align_corners=st.booleans(),
    h=st.integers(1, 4),
    w=st.integers(2, 4),
    seed=st.integers(0, 10_000),
)
def test_grid_sample_gradients(mode, padding_mode, align_corners, h, w, seed):
    rng = np.random.default_rng(seed)
    x = fg.tensor(rng.standard_normal((1, 2, h, w)), requires_grad=True)
    g = fg.tensor(rng.uniform(-1.4, 1.4, (1, 2, 3, 2)), requires_grad=mode != "nearest")

    def f(x, g):
        return F.grid_sample(x, g, mode, padding_mode, align_corners)

    assert gradcheck(f, (x, g), atol=1e-6)
    assert gradgradcheck(f, (x, g), atol=1e-6)


def test_grid_sample_3d_gradients():
    rng = np.random.default_rng(3)
    x = fg.tensor(rng.standard_normal((1, 2, 2, 3, 3)), requires_grad=True)
    g = fg.tensor(rng.uniform(-1.2, 1.2, (1, 2, 2, 1, 3)), requires_grad=True)
    for pm in PADDINGS:
        def f(x, g, pm=pm):
            return F.grid_sample(x, g, "bilinear", pm, False)

        assert gradcheck(f, (x, g))
        assert gradgradcheck(f, (x, g))


def test_grid_sample_errors():
    x, g = fg.zeros(2, 3, 4, 5), fg.zeros(2, 6, 7, 2)
    # PyTorch's words.
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                                         "but got: 'bad'"):  # fmt: skip
        F.grid_sample(x, g, mode="bad", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or "
                                         "'reflection', but got: 'bad'"):  # fmt: skip
        F.grid_sample(x, g, padding_mode="bad", align_corners=False)
    with pytest.raises(RuntimeError, match=r"expected grid and input to have same batch size, but "
                                           r"got input with sizes \[2, 3, 4, 5\] and grid with "
                                           r"sizes \[1, 6, 7, 2\]"):  # fmt: skip
        F.grid_sample(x, g[:1], align_corners=False)
    with pytest.raises(RuntimeError, match=r"expected grid to have size 2 in last dimension, but "
                                           r"got grid with sizes \[2, 6, 7, 3\]"):  # fmt: skip
        F.grid_sample(x, fg.zeros(2, 6, 7, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="non-empty spatial dimensions, but input has sizes "
                                           r"\[2, 3, 0, 5\] with dimension 2 being empty"):  # fmt: skip
        F.grid_sample(fg.zeros(2, 3, 0, 5), g, align_corners=False)
    with pytest.raises(RuntimeError, match="expected 4D input and grid with same number of "
                                           "dimensions"):  # fmt: skip
        F.grid_sample(x, fg.zeros(2, 6, 2), align_corners=False)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.grid_sample(x, g.double(), align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(fg.zeros(1, 1, 2, 2, 2), fg.zeros(1, 1, 1, 1, 3), mode="bicubic",
                      align_corners=False)  # fmt: skip
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        F.grid_sample(x, g)
    assert "Default grid_sample and affine_grid behavior has changed" in str(w[0].message)


def test_affine_grid_matches_the_reference_and_differentiates():
    rng = np.random.default_rng(4)
    for size, shape in (((2, 3, 4, 5), (2, 2, 3)), ((2, 1, 2, 3, 4), (2, 3, 4))):
        theta = rng.standard_normal(shape)
        spatial = size[2:]
        for ac in (False, True):
            axes = []
            for s in reversed(spatial):  # x, y(, z)
                a = np.linspace(-1, 1, s) if s > 1 else np.zeros(1)
                axes.append(a if ac else a * (s - 1) / s)
            mesh = np.meshgrid(*reversed(axes), indexing="ij")
            base = np.stack([*reversed(mesh), np.ones(spatial)], axis=-1)
            want = np.einsum("...k,njk->n...j", base, theta)
            got = F.affine_grid(fg.tensor(theta), size, align_corners=ac)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    th = fg.tensor(rng.standard_normal((1, 2, 3)), requires_grad=True)
    assert gradcheck(lambda t: F.affine_grid(t, (1, 1, 3, 2), align_corners=False), (th,))
    with pytest.raises(ValueError, match=r"Expected a batch of 2D affine matrices of shape Nx2x3 "
                                         r"for size ferrograd.Size\(\[1, 1, 3, 2\]\)"):  # fmt: skip
        F.affine_grid(fg.zeros(1, 3, 3), (1, 1, 3, 2), align_corners=False)
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(fg.zeros(1, 2, 3), (1, 1, 3), align_corners=False)
    with pytest.raises(ValueError, match="Expected non-zero, positive output size"):
        F.affine_grid(fg.zeros(1, 2, 3), (1, 1, 0, 2), align_corners=False)
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(fg.zeros(1, 2, 3, dtype=fg.int64), (1, 1, 2, 2), align_corners=False)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 1e30])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_non_finite_and_huge_grid_points_sample_without_an_index_error(value, padding_mode, mode):
    # A NaN, infinite or huge coordinate once became an out-of-range gather index.
    x = fg.arange(4.0).reshape(1, 1, 2, 2)
    grid = fg.tensor([[[[value, 0.0], [0.0, 0.5]]]])
    out = F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=False)
    assert out.shape == (1, 1, 1, 2)
    # The finite point is unaffected: (0, 0.5) in [-1, 1] is pixel (x=0.5, y=1.25)
    # with align_corners=False; its value does not depend on the other point.
    alone = F.grid_sample(x, grid[:, :, 1:], mode=mode, padding_mode=padding_mode,
                          align_corners=False)  # fmt: skip
    assert out[0, 0, 0, 1].item() == alone[0, 0, 0, 0].item()


@pytest.mark.parametrize("size", [[1, 1, 2.0, 2], [1, 1, float("inf"), 2], "abcd"])
def test_affine_grid_size_takes_ints_only(size):
    # PyTorch's argument parser refuses non-int elements with a TypeError.
    with pytest.raises(TypeError, match="must be tuple of ints"):
        F.affine_grid(fg.ones(1, 2, 3), size, align_corners=False)


@settings(max_examples=25, deadline=None)
@given(
    mode=st.sampled_from(MODES),
    padding_mode=st.sampled_from(PADDINGS),
    align_corners=st.booleans(),
    dims=st.sampled_from([2, 3]),
    sizes=st.lists(st.integers(1, 5), min_size=3, max_size=3),
    seed=st.integers(0, 10_000),
)
def test_native_gradients_match_the_composite(mode, padding_mode, align_corners, dims, sizes,
                                              seed):
    # The native backward against the derivative of grid_sample written in differentiable
    # ops (which a graph of the backward uses), points inside and outside the image.
    from ferrograd.nn._functional.grid_sample import _composite

    if mode == "bicubic":
        dims = 2
    rng = np.random.default_rng(seed)
    x = fg.tensor(rng.standard_normal((2, 3, *sizes[:dims])), requires_grad=True)
    g = fg.tensor(rng.uniform(-1.6, 1.6, (2, 4, *([1, 3][: dims - 1]), dims)),
                  requires_grad=True)  # fmt: skip
    out = F.grid_sample(x, g, mode, padding_mode, align_corners)
    want = _composite(x, g, mode, padding_mode, align_corners)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12,
                               atol=1e-12)  # fmt: skip
    seed_grad = fg.tensor(rng.standard_normal(tuple(out.shape)))
    got = fg.autograd.grad(out, (x, g), seed_grad)
    ref = fg.autograd.grad(want, (x, g), seed_grad, allow_unused=True)
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), rtol=1e-10, atol=1e-12)
    ref_grid = np.zeros(g.shape) if ref[1] is None else ref[1].numpy()
    np.testing.assert_allclose(got[1].numpy(), ref_grid, rtol=1e-10, atol=1e-12)


def test_native_float32_matches_the_reference():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 5, 6))
    grid = rng.uniform(-1.3, 1.3, (2, 4, 3, 2))
    for mode in MODES:
        for pm in PADDINGS:
            got = F.grid_sample(fg.tensor(x, dtype=fg.float32), fg.tensor(grid, dtype=fg.float32),
                                mode, pm, False)  # fmt: skip
            assert got.dtype is fg.float32
            np.testing.assert_allclose(got.numpy(), reference(x, grid, mode, pm, False),
                                       rtol=1e-4, atol=1e-5)  # fmt: skip


def _bits(t):
    a = t.numpy()
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
@pytest.mark.parametrize("mode,dims", [("bilinear", 2), ("nearest", 2), ("bicubic", 2),
                                       ("bilinear", 3)])  # fmt: skip
@pytest.mark.parametrize("batch", [0, 1, 3])
def test_one_and_two_threads_give_the_same_bits(dtype, mode, dims, batch):
    # Big enough for the kernels to split the work (a batch of 1 over its points and
    # channels), with points outside the image; each value and gradient must not depend
    # on the split.
    rng = np.random.default_rng(batch)
    sizes = (24, 20) if dims == 2 else (6, 10, 12)
    out = (40, 36) if dims == 2 else (5, 12, 16)
    x = rng.standard_normal((batch, 6, *sizes))
    grid = rng.uniform(-1.15, 1.15, (batch, *out, dims))
    seed = rng.standard_normal((batch, 6, *out))
    results = []
    before = fg.get_num_threads()
    try:
        for threads in (1, 2):
            fg.set_num_threads(threads)
            xt = fg.tensor(x, dtype=dtype, requires_grad=True)
            gt = fg.tensor(grid, dtype=dtype, requires_grad=True)
            y = F.grid_sample(xt, gt, mode, "zeros", False)
            y.backward(fg.tensor(seed, dtype=dtype))
            results.append([_bits(y.detach()), _bits(xt.grad), _bits(gt.grad)])
    finally:
        fg.set_num_threads(before)
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)
    assert results[0][0].shape == (batch, 6, *out)

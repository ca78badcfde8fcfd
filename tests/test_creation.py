"""Tensor creation: ``fg.tensor`` and the factory functions, with PyTorch's dtype rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from helpers import assert_tensor, run_isolated, shapes

# -- fg.tensor from Python data -----------------------------------------------------


@pytest.mark.parametrize(
    ("data", "dtype", "shape"),
    [
        (1.5, fg.float32, ()),
        (3, fg.int64, ()),
        (True, fg.bool, ()),
        ([1.0, 2.0, 3.0], fg.float32, (3,)),
        ([[1, 2], [3, 4]], fg.int64, (2, 2)),
        ([True, False], fg.bool, (2,)),
        ([1, 2.5], fg.float32, (2,)),  # any float makes the whole tensor float
        ([True, 2], fg.int64, (2,)),  # bool and int -> int64
        ([[[1.0]], [[2.0]]], fg.float32, (2, 1, 1)),
        ([], fg.float32, (0,)),
        ([[], []], fg.float32, (2, 0)),
    ],
)
def test_tensor_infers_dtype_and_shape(data, dtype, shape):
    t = fg.tensor(data)
    assert t.dtype == dtype
    assert t.shape == shape
    assert t.tolist() == data if shape else t.item() == data
    assert not t.requires_grad and t.is_leaf and t.grad_fn is None


@given(hnp.arrays(np.float64, shapes(max_dims=3), elements=st.floats(-1e30, 1e30)))
def test_tensor_from_nested_python_floats_is_float32(arr):
    t = fg.tensor(arr.tolist())
    assert t.dtype == fg.float32
    assert_tensor(t, arr.astype(np.float32), rtol=0, atol=0)


@given(hnp.arrays(np.int64, shapes(max_dims=3), elements=st.integers(-(2**40), 2**40)))
def test_tensor_from_nested_python_ints_is_int64(arr):
    t = fg.tensor(arr.tolist())
    assert t.dtype == fg.int64
    assert_tensor(t, arr)
    assert t.tolist() == arr.tolist()


@pytest.mark.parametrize(
    ("np_dtype", "fg_dtype"),
    [(np.float64, fg.float64), (np.float32, fg.float32), (np.int64, fg.int64), (np.bool_, fg.bool)],
)
def test_tensor_from_numpy_keeps_dtype(np_dtype, fg_dtype):
    arr = np.array([[0, 1, 2], [3, 4, 5]]).astype(np_dtype)
    t = fg.tensor(arr)
    assert t.dtype == fg_dtype
    assert_tensor(t, arr)


def test_tensor_copies_its_data():
    arr = np.ones(3)
    t = fg.tensor(arr)
    arr[0] = 5.0
    assert t.tolist() == [1.0, 1.0, 1.0]
    src = fg.tensor([1.0, 2.0])
    copy = fg.tensor(src)
    src.zero_()
    assert copy.tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    ("data", "dtype", "expected"),
    [
        ([1, 2], fg.float64, [1.0, 2.0]),
        ([1.7, -1.7], fg.int64, [1, -1]),  # truncation toward zero
        ([0.0, 2.0], fg.bool, [False, True]),
        (np.array([1.5, 2.5]), fg.float32, [1.5, 2.5]),
        (2, fg.float32, 2.0),
    ],
)
def test_tensor_dtype_argument(data, dtype, expected):
    t = fg.tensor(data, dtype=dtype)
    assert t.dtype == dtype
    assert t.tolist() == expected


def test_tensor_requires_grad_argument():
    t = fg.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad is None and t.grad_fn is None
    d = fg.tensor([1, 2], dtype=fg.float64, requires_grad=True)
    assert d.requires_grad and d.dtype == fg.float64
    with pytest.raises(RuntimeError, match="floating point"):
        fg.tensor([1, 2], requires_grad=True)


def test_ragged_nested_list_raises_value_error():
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got 1\\)"):
        fg.tensor([[1, 2], [3]])


def test_strings_and_self_containing_lists_are_rejected():
    # These used to recurse forever (a str is a sequence of strs) and crash the
    # interpreter, so they run in a child process.
    proc = run_isolated(
        """
        import ferrograd as fg
        for data in ["a", ["a", "b"], [[1.0], "x"], b"ab"]:
            try:
                fg.tensor(data)
            except TypeError as e:
                assert "invalid data type" in str(e), e
            else:
                raise AssertionError(f"no TypeError for {data!r}")
        data = []
        data.append(data)
        try:
            fg.tensor(data)
        except ValueError as e:
            assert "too many dimensions 'list'" in str(e), e
        else:
            raise AssertionError("no ValueError for a self-containing list")
        print("ok")
        """
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        fg.tensor("abc")


# -- factories ----------------------------------------------------------------------


@pytest.mark.parametrize(("factory", "value"), [(fg.zeros, 0.0), (fg.ones, 1.0), (fg.empty, None)])
@pytest.mark.parametrize("spelling", ["varargs", "tuple", "list"])
def test_filled_factories_accept_every_size_spelling(factory, value, spelling):
    args = {"varargs": (2, 3), "tuple": ((2, 3),), "list": ([2, 3],)}[spelling]
    t = factory(*args)
    assert t.shape == (2, 3) and t.dtype == fg.float32
    if value is not None:
        assert t.tolist() == [[value] * 3] * 2


@pytest.mark.parametrize("factory", [fg.zeros, fg.ones, fg.empty, fg.rand, fg.randn])
def test_factories_accept_size_keyword(factory):
    assert factory(size=(2, 3)).shape == (2, 3)
    assert factory(size=()).shape == ()
    assert factory(size=[4]).shape == (4,)


@pytest.mark.parametrize("factory", [fg.zeros, fg.ones, fg.empty, fg.rand, fg.randn])
def test_zero_dim_sizes(factory):
    assert factory(()).shape == ()
    assert factory(()).dim() == 0
    assert factory(0).shape == (0,)
    assert factory(2, 0).numel() == 0


@given(shapes(max_dims=4))
def test_zeros_ones_full_match_numpy(shape):
    assert_tensor(fg.zeros(shape), np.zeros(shape, np.float32), dtype=fg.float32)
    assert_tensor(fg.ones(*shape), np.ones(shape, np.float32), dtype=fg.float32)
    assert_tensor(fg.full(shape, 2.5), np.full(shape, 2.5, np.float32), dtype=fg.float32)
    assert_tensor(fg.zeros(shape, dtype=fg.int64), np.zeros(shape, np.int64), dtype=fg.int64)
    assert_tensor(fg.ones(shape, dtype=fg.float64), np.ones(shape), dtype=fg.float64)
    assert_tensor(fg.ones(shape, dtype=fg.bool), np.ones(shape, bool), dtype=fg.bool)


def test_full_infers_dtype_from_fill_value():
    assert fg.full((2, 2), 7).dtype == fg.int64
    assert fg.full((2, 2), 7.0).dtype == fg.float32
    assert fg.full((2,), True).dtype == fg.bool
    assert fg.full((2,), 7, dtype=fg.float64).tolist() == [7.0, 7.0]
    assert fg.full(size=(1, 2), fill_value=-1.5).tolist() == [[-1.5, -1.5]]


def test_factories_requires_grad_and_dtype():
    for t in [
        fg.zeros(2, requires_grad=True),
        fg.ones(2, 2, dtype=fg.float64, requires_grad=True),
        fg.rand(3, requires_grad=True),
        fg.randn(3, requires_grad=True),
        fg.full((2,), 1.0, requires_grad=True),
        fg.empty(2, requires_grad=True),
        fg.arange(3.0, requires_grad=True),
        fg.linspace(0, 1, 3, requires_grad=True),
        fg.eye(2, requires_grad=True),
    ]:
        assert t.requires_grad and t.is_leaf and t.grad_fn is None
    with pytest.raises(RuntimeError):
        fg.zeros(2, dtype=fg.int64, requires_grad=True)


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((3,), {}, np.eye(3, dtype=np.float32)),
        ((2, 3), {}, np.eye(2, 3, dtype=np.float32)),
        ((3, 2), {}, np.eye(3, 2, dtype=np.float32)),
        ((2,), {"dtype": fg.int64}, np.eye(2, dtype=np.int64)),
        ((2,), {"dtype": fg.float64}, np.eye(2)),
    ],
)
def test_eye(args, kwargs, expected):
    t = fg.eye(*args, **kwargs)
    assert_tensor(t, expected, rtol=0, atol=0)
    assert (
        t.dtype
        == {np.float32: fg.float32, np.int64: fg.int64, np.float64: fg.float64}[expected.dtype.type]
    )


@pytest.mark.parametrize(
    ("args", "kwargs", "dtype", "expected"),
    [
        ((5,), {}, fg.int64, [0, 1, 2, 3, 4]),
        ((1, 4), {}, fg.int64, [1, 2, 3]),
        ((0, 10, 3), {}, fg.int64, [0, 3, 6, 9]),
        ((5.0,), {}, fg.float32, [0.0, 1.0, 2.0, 3.0, 4.0]),
        ((0, 1, 0.25), {}, fg.float32, [0.0, 0.25, 0.5, 0.75]),
        ((4,), {"dtype": fg.float32}, fg.float32, [0.0, 1.0, 2.0, 3.0]),
        ((3,), {"dtype": fg.float64}, fg.float64, [0.0, 1.0, 2.0]),
        ((-3, 3, 2), {}, fg.int64, [-3, -1, 1]),
        ((3, 0, -1), {}, fg.int64, [3, 2, 1]),
        ((0,), {}, fg.int64, []),
    ],
)
def test_arange(args, kwargs, dtype, expected):
    t = fg.arange(*args, **kwargs)
    assert t.dtype == dtype
    assert t.tolist() == expected


@given(st.integers(-20, 20), st.integers(-20, 20), st.integers(1, 5), st.booleans())
def test_arange_matches_numpy(start, end, step, flip):
    if flip:
        step = -step
    expected = np.arange(start, end, step)
    if expected.size == 0 and (end - start) * step < 0:
        with pytest.raises(RuntimeError):
            fg.arange(start, end, step)
        return
    assert fg.arange(start, end, step).tolist() == expected.tolist()


@given(st.floats(-10, 10), st.floats(-10, 10), st.integers(2, 50))
def test_linspace_matches_numpy(start, end, steps):
    t = fg.linspace(start, end, steps)
    assert t.dtype == fg.float32 and t.shape == (steps,)
    np.testing.assert_allclose(t.numpy(), np.linspace(start, end, steps), rtol=1e-5, atol=1e-5)
    assert t[0].item() == pytest.approx(start, abs=1e-5)
    assert t[-1].item() == pytest.approx(end, abs=1e-5)


def test_linspace_small_cases():
    assert fg.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert fg.linspace(0, 1, steps=3).tolist() == [0.0, 0.5, 1.0]
    assert fg.linspace(0, 1, 0).shape == (0,)
    assert fg.linspace(0, 1, 5, dtype=fg.float64).dtype == fg.float64


def test_linspace_single_step_is_start():
    assert fg.linspace(2, 3, 1).tolist() == [2.0]
    assert fg.linspace(-1.5, 7, steps=1).tolist() == [-1.5]


def test_rand_and_randn_distribution():
    fg.manual_seed(0)
    u = fg.rand(20000).numpy()
    assert u.dtype == np.float32
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 1 / 12) < 0.01
    n = fg.randn(20000, dtype=fg.float64).numpy()
    assert n.dtype == np.float64
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1.0) < 0.05
    # Roughly 68% within one standard deviation.
    assert 0.65 < np.mean(np.abs(n) < 1) < 0.71


@given(st.integers(-50, 50), st.integers(1, 50), shapes(max_dims=3))
def test_randint_range_dtype_and_shape(low, span, shape):
    t = fg.randint(low, low + span, shape)
    assert t.dtype == fg.int64 and t.shape == shape
    vals = t.numpy()
    assert ((vals >= low) & (vals < low + span)).all()
    t2 = fg.randint(span, size=shape)  # randint(high, size)
    assert ((t2.numpy() >= 0) & (t2.numpy() < span)).all()


def test_randint_covers_its_range():
    fg.manual_seed(1)
    vals = set(fg.randint(0, 4, (400,)).tolist())
    assert vals == {0, 1, 2, 3}


def test_randint_rejects_empty_range():
    with pytest.raises(RuntimeError, match="from=5 >= to=2"):
        fg.randint(5, 2, (3,))


def test_manual_seed_reproduces_every_generator():
    def draw():
        return (
            fg.rand(5).tolist(),
            fg.randn(2, 3).tolist(),
            fg.randint(0, 100, (6,)).tolist(),
            fg.rand_like(fg.ones(3)).tolist(),
            fg.randn_like(fg.ones(2, dtype=fg.float64)).tolist(),
        )

    fg.manual_seed(42)
    first = draw()
    fg.manual_seed(42)
    assert draw() == first
    fg.manual_seed(43)
    assert draw() != first
    # Draws continue the stream: not the same numbers twice without reseeding.
    fg.manual_seed(42)
    a = fg.rand(5).tolist()
    b = fg.rand(5).tolist()
    assert a != b


# -- *_like ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64, fg.int64, fg.bool])
def test_like_functions_keep_shape_and_dtype(dtype):
    src = fg.zeros(2, 3, dtype=dtype)
    for fn, fill in [(fg.zeros_like, 0), (fg.ones_like, 1), (fg.empty_like, None)]:
        t = fn(src)
        assert t.shape == (2, 3) and t.dtype == dtype
        if fill is not None:
            assert (t.numpy() == fill).all()
    t = fg.full_like(src, 1)
    assert t.shape == (2, 3) and t.dtype == dtype and (t.numpy() == 1).all()
    if dtype in (fg.float32, fg.float64):
        for fn in (fg.rand_like, fg.randn_like):
            t = fn(src)
            assert t.shape == (2, 3) and t.dtype == dtype


def test_like_functions_dtype_and_requires_grad():
    src = fg.ones(2, requires_grad=True)
    z = fg.zeros_like(src)
    assert not z.requires_grad and z.is_leaf  # *_like does not inherit requires_grad
    assert fg.zeros_like(src, dtype=fg.float64).dtype == fg.float64
    assert fg.ones_like(src, requires_grad=True).requires_grad
    assert fg.full_like(src, 2.5).tolist() == [2.5, 2.5]
    assert fg.full_like(fg.ones(2, dtype=fg.int64), 3).tolist() == [3, 3]
    r = fg.rand_like(src)
    assert ((r.numpy() >= 0) & (r.numpy() < 1)).all()


def test_full_like_of_zero_dim():
    t = fg.full_like(fg.tensor(1.0), math.pi)
    assert t.shape == () and t.item() == pytest.approx(math.pi, rel=1e-6)

"""dtypes: the aliases, the float32 default, type promotion and conversions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from helpers import NP_DTYPES, assert_tensor, shapes


def test_aliases():
    assert fg.float is fg.float32
    assert fg.double is fg.float64
    assert fg.long is fg.int64
    assert isinstance(fg.bool, fg.dtype)
    assert len({fg.float32, fg.float64, fg.int64, fg.bool}) == 4


@pytest.mark.parametrize(
    ("dtype", "name"),
    [(fg.float32, "float32"), (fg.float64, "float64"), (fg.int64, "int64"), (fg.bool, "bool")],
)
def test_dtype_repr(dtype, name):
    assert repr(dtype) == f"ferrograd.{name}"
    assert str(dtype) == f"ferrograd.{name}"


def test_float32_is_the_default():
    for t in [
        fg.tensor(1.0),
        fg.tensor([1.0, 2.0]),
        fg.zeros(2),
        fg.ones(2),
        fg.empty(2),
        fg.rand(2),
        fg.randn(2),
        fg.full((2,), 1.5),
        fg.eye(2),
        fg.linspace(0, 1, 3),
        fg.arange(2.0),
    ]:
        assert t.dtype == fg.float32


def test_is_floating_point():
    assert fg.ones(1).is_floating_point()
    assert fg.ones(1, dtype=fg.float64).is_floating_point()
    assert not fg.ones(1, dtype=fg.int64).is_floating_point()
    assert not fg.ones(1, dtype=fg.bool).is_floating_point()


# -- promotion (PyTorch's result_type rules) ------------------------------------------

F32, F64, I64, B = fg.float32, fg.float64, fg.int64, fg.bool


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (F32, F32, F32),
        (F32, F64, F64),
        (F64, F32, F64),
        (I64, F32, F32),
        (F32, I64, F32),
        (I64, F64, F64),
        (I64, I64, I64),
        (B, I64, I64),
        (B, F32, F32),
        (B, B, B),
    ],
)
@pytest.mark.parametrize("op", ["add", "mul", "sub"])
def test_tensor_tensor_promotion(a, b, expected, op):
    if op == "sub" and B in (a, b):
        pytest.skip("bool subtraction is an error in PyTorch: see test_bool_subtraction_is_refused")
    x = fg.ones(2, dtype=a)
    y = fg.ones(2, dtype=b)
    r = x + y if op == "add" else x * y if op == "mul" else x - y
    assert r.dtype == expected
    nx, ny = np.ones(2, NP_DTYPES[a]), np.ones(2, NP_DTYPES[b])
    assert r.tolist() == (nx + ny if op == "add" else nx * ny if op == "mul" else nx - ny).tolist()


def test_two_bool_tensors_cannot_be_subtracted():
    with pytest.raises(
        RuntimeError, match="Subtraction, the `-` operator, with two bool tensors is not supported."
    ):
        fg.tensor([True]) - fg.tensor([True])


@pytest.mark.parametrize("other", [fg.tensor([1.0]), fg.tensor([1]), 1])
def test_bool_subtraction_is_refused(other):
    with pytest.raises(
        RuntimeError, match="Subtraction, the `-` operator, with a bool tensor is not supported."
    ):
        fg.tensor([True]) - other


@pytest.mark.parametrize(
    ("dtype", "scalar", "expected"),
    [
        (F32, 2, F32),
        (F32, 2.5, F32),  # a Python float does not upgrade float32 to float64
        (F64, 2, F64),
        (F64, 2.5, F64),
        (I64, 2, I64),
        (I64, 2.5, F32),  # int tensor with a Python float -> default float dtype
        (I64, True, I64),
        (B, 2, I64),
        (B, 2.5, F32),
    ],
)
def test_tensor_scalar_promotion(dtype, scalar, expected):
    t = fg.ones(2, dtype=dtype)
    assert (t + scalar).dtype == expected
    assert (scalar + t).dtype == expected
    assert (t * scalar).dtype == expected
    assert (scalar * t).dtype == expected


def test_true_division_always_gives_floats():
    a = fg.tensor([1, 2])
    b = fg.tensor([2, 4])
    assert (a / b).dtype == fg.float32
    assert (a / b).tolist() == [0.5, 0.5]
    assert (a / 2).tolist() == [0.5, 1.0]
    assert (3 / a).tolist() == [3.0, 1.5]
    assert (fg.ones(2, dtype=fg.float64) / a).dtype == fg.float64


def test_integer_power():
    a = fg.tensor([1, 2, 3])
    assert (a**2).dtype == fg.int64 and (a**2).tolist() == [1, 4, 9]
    assert (a**0.5).dtype == fg.float32
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        a**-1


def test_zero_dim_tensors_promote_like_scalars():
    # A 0-d tensor only decides the category (int/float), not the width.
    assert (fg.ones(3) + fg.tensor(1.0, dtype=fg.float64)).dtype == fg.float32
    assert (fg.ones(3, dtype=fg.int64) + fg.tensor(1.5)).dtype == fg.float32
    assert (fg.ones(3) + fg.tensor(1)).dtype == fg.float32
    assert (fg.ones(3, dtype=fg.float64) + fg.tensor(1.0)).dtype == fg.float64
    # Two 0-d tensors promote normally.
    assert (fg.tensor(1.0) + fg.tensor(1.0, dtype=fg.float64)).dtype == fg.float64


@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne"])
@pytest.mark.parametrize("dtype", [F32, F64, I64, B])
def test_comparisons_give_bool(op, dtype):
    t = fg.ones(3, dtype=dtype)
    assert getattr(fg, op)(t, t).dtype == fg.bool
    assert getattr(t, op)(1).dtype == fg.bool


def test_mean_of_integers_is_an_error():
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        fg.tensor([1, 2]).mean()
    assert fg.tensor([1, 2]).sum().dtype == fg.int64
    assert fg.tensor([True, True, False]).sum().dtype == fg.int64
    assert fg.tensor([True, True, False]).sum().item() == 2


def test_float_functions_of_integers_give_float32():
    t = fg.tensor([1, 2])
    for fn in (fg.exp, fg.sin, fg.cos, fg.log, fg.sqrt, fg.tanh, fg.sigmoid):
        assert fn(t).dtype == fg.float32
    assert fg.abs(fg.tensor([-1, 2])).dtype == fg.int64
    assert fg.relu(fg.tensor([-1, 2])).tolist() == [0, 2]
    assert (-fg.tensor([1, 2])).dtype == fg.int64


# -- conversions -------------------------------------------------------------------

_values = hnp.arrays(np.float64, shapes(max_dims=3), elements=st.floats(-1e6, 1e6))


@given(_values, st.sampled_from([F32, F64, I64, B]))
def test_to_matches_numpy_astype(arr, dtype):
    t = fg.tensor(arr, dtype=fg.float64)
    out = t.to(dtype)
    assert out.dtype == dtype
    expected = arr.astype(NP_DTYPES[dtype])
    if dtype == F32:
        np.testing.assert_array_equal(out.numpy(), expected)
    else:
        assert_tensor(out, expected, rtol=0, atol=0)


def test_conversion_methods():
    t = fg.tensor([1.7, -1.7, 0.0])
    assert t.double().dtype == fg.float64
    assert t.long().tolist() == [1, -1, 0]
    assert t.bool().tolist() == [True, True, False]
    assert fg.tensor([1, 2]).float().dtype == fg.float32
    assert fg.tensor([1, 2]).float().tolist() == [1.0, 2.0]
    assert t.to(dtype=fg.float64).dtype == fg.float64
    assert t.to("cpu").dtype == fg.float32
    assert fg.tensor([True, False]).long().tolist() == [1, 0]


def test_conversion_copies_and_keeps_the_graph():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x.double()
    assert y.dtype == fg.float64 and y.requires_grad and y.grad_fn is not None
    (y * y).sum().backward()
    assert x.grad.dtype == fg.float32  # gradients come back in the leaf's dtype
    assert x.grad.tolist() == [2.0, 4.0]
    z = fg.tensor([1.0, 2.0])
    w = z.double()
    w.add_(1)
    assert z.tolist() == [1.0, 2.0]


@given(hnp.arrays(np.float64, shapes(min_dims=2, max_dims=4), elements=st.floats(-1e6, 1e6)),
       st.sampled_from([F32, I64, B]), st.randoms(use_true_random=False))
def test_conversion_keeps_the_layout_of_a_dense_tensor(arr, dtype, rnd):
    # PyTorch's preserve_format: a permuted (dense, non-overlapping) tensor keeps its
    # strides, converted in memory order; a sliced one comes back contiguous.
    perm = list(range(arr.ndim))
    rnd.shuffle(perm)
    x = fg.tensor(arr).permute(*perm)
    out = x.to(dtype)
    expected = np.transpose(arr, perm).astype(NP_DTYPES[dtype])
    np.testing.assert_array_equal(out.numpy(), expected)
    if x.numel() > 1:
        assert out.stride() == x.stride()
    sliced = fg.tensor(arr)[..., ::2]
    got = sliced.to(dtype)
    np.testing.assert_array_equal(got.numpy(), arr[..., ::2].astype(NP_DTYPES[dtype]))
    assert got.is_contiguous()
    # The converted memory is its own: writing it leaves the source alone.
    if dtype == F32 and out.numel():
        out.add_(1)
        np.testing.assert_array_equal(x.numpy(), np.transpose(arr, perm))


def test_transposed_conversion_keeps_the_graph():
    x = fg.tensor(np.arange(6.0).reshape(2, 3), dtype=fg.float64, requires_grad=True)
    y = x.t().float()
    assert y.stride() == (1, 3) and y.grad_fn.name() == "ToCopyBackward0"
    (y * fg.tensor([[1.0, 2.0]] * 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0] * 3, [2.0] * 3])


def test_to_same_dtype_returns_self():
    # PyTorch returns the tensor itself when nothing changes.
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    assert x.to(fg.float32) is x
    assert x.float() is x
    d = fg.tensor([1.0], dtype=fg.float64)
    assert d.double() is d

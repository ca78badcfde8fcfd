"""The added tensor API: new_* constructors, dtype and size helpers, in-place
unary/comparison forms, in-place view ops, settings and nn.functional aliases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import FEW, check_grads, leaf, op_shapes, values

LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation."


# ----- new_* ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64, fg.int64, fg.bool])
def test_new_family_keeps_dtype(dtype):
    x = fg.zeros(2, dtype=dtype)
    for out, fill in (
        (x.new_zeros(2, 3), 0),
        (x.new_zeros((2, 3)), 0),
        (x.new_ones([2, 3]), 1),
        (x.new_full((2, 3), 1), 1),
        (x.new_empty(2, 3), None),
    ):
        assert out.dtype == dtype and tuple(out.shape) == (2, 3)
        if fill is not None:
            assert (out.numpy() == fill).all()


def test_new_family_dtype_and_requires_grad():
    x = fg.zeros(2, dtype=fg.int64)
    y = x.new_ones(3, dtype=fg.float64, requires_grad=True)
    assert y.dtype == fg.float64 and y.requires_grad and y.is_leaf
    assert x.new_full((2,), 2.5, dtype=fg.float32).tolist() == [2.5, 2.5]
    assert x.new_zeros(()).shape == ()
    with pytest.raises(TypeError, match="tuple of ints"):
        x.new_zeros(2.0)


def test_new_tensor_takes_self_dtype():
    x = fg.zeros(1, dtype=fg.int64)
    # PyTorch: the data's own type does not matter, self's dtype wins.
    assert x.new_tensor([1.7, 2.2]).tolist() == [1, 2]
    f = fg.zeros(1)
    assert f.new_tensor([1, 2]).dtype == fg.float32
    assert f.new_tensor([1, 2], dtype=fg.float64).dtype == fg.float64
    src = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="clone\\(\\).detach\\(\\)"):
        c = f.new_tensor(src)
    assert not c.requires_grad
    c.add_(1)
    assert src.tolist() == [1.0, 2.0]
    r = f.new_tensor([3.0], requires_grad=True)
    assert r.requires_grad


# ----- dtype and size helpers ----------------------------------------------------------


@pytest.mark.parametrize(
    "method,name",
    [("int", "int32"), ("short", "int16"), ("byte", "uint8"), ("char", "int8"), ("half", "float16")],
)
def test_narrow_dtype_methods_convert(method, name):
    x = fg.zeros(2)
    assert getattr(x, method)().dtype == getattr(fg, name)


@pytest.mark.parametrize(
    "dtype,size", [(fg.float32, 4), (fg.float64, 8), (fg.int64, 8), (fg.bool, 1)]
)
def test_element_sizes(dtype, size):
    x = fg.zeros(3, 5, dtype=dtype)
    assert x.element_size() == size
    assert x.itemsize == size
    assert x.nbytes == 15 * size
    assert x.is_signed() == (dtype != fg.bool)


def test_misc_predicates():
    x = fg.zeros(2, 3)
    assert x.ndimension() == 2
    assert x.is_cpu is True
    assert x.share_memory_() is x
    assert x.is_complex() is False
    assert x.is_same_size(fg.ones(2, 3)) and not x.is_same_size(fg.ones(3, 2))
    assert fg.is_same_size(x, fg.ones(2, 3))
    assert fg.tensor([2.0]).is_nonzero() is True
    assert fg.tensor(0).is_nonzero() is False
    assert fg.is_nonzero(fg.tensor([[True]]))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        fg.ones(2).is_nonzero()
    with pytest.raises(RuntimeError, match="with no values is ambiguous"):
        fg.ones(0).is_nonzero()
    with pytest.raises(TypeError, match="must be Tensor"):
        fg.is_nonzero(1.0)


# ----- in-place unary forms (op table) -------------------------------------------------

UNARY = {
    "sin_": np.sin,
    "cos_": np.cos,
    "tan_": np.tan,
    "sqrt_": np.sqrt,
    "rsqrt_": lambda a: 1 / np.sqrt(a),
    "log_": np.log,
    "log2_": np.log2,
    "log1p_": np.log1p,
    "expm1_": np.expm1,
    "floor_": np.floor,
    "ceil_": np.ceil,
    "trunc_": np.trunc,
    "sign_": np.sign,
    "abs_": np.abs,
    "reciprocal_": np.reciprocal,
    "square_": np.square,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_inplace_unary_values_and_version(name):
    a = np.array([[0.3, 1.7], [2.2, 0.9]])
    x = fg.tensor(a)
    v = x._version
    out = getattr(x, name)()
    assert out is x
    assert x._version > v
    np.testing.assert_allclose(x.numpy(), UNARY[name](a), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(UNARY) + ["erf_", "logical_not_", "round_"])
def test_inplace_unary_refuses_leaf(name):
    x = fg.tensor([0.5, 1.5], requires_grad=True)
    with pytest.raises(RuntimeError, match=LEAF_MSG):
        getattr(x, name)()
    assert x.tolist() == [0.5, 1.5]


def test_erf_logical_not_round_inplace():
    x = fg.tensor([0.0, 0.5, -1.0], dtype=fg.float64)
    x.erf_()
    np.testing.assert_allclose(x.numpy(), [0.0, 0.5204998778130465, -0.8427007929497149])
    y = fg.tensor([0.0, 2.0])
    y.logical_not_()
    assert y.dtype == fg.float32 and y.tolist() == [1.0, 0.0]
    z = fg.tensor([1.2345, 2.5, -0.5], dtype=fg.float64)
    z.round_()
    assert z.tolist() == [1.0, 2.0, -0.0]
    w = fg.tensor([1.2345], dtype=fg.float64)
    w.round_(decimals=2)
    assert w.tolist() == [1.23]


@FEW
@given(st.data())
def test_inplace_unary_gradients_on_non_leaf(data):
    shape = data.draw(op_shapes(max_dims=2))
    a = data.draw(values(shape, 0.2, 2.0))

    def fn(x):
        # Ops that save their input (not their output), so each write is legal.
        y = x * 1.0
        y.sin_()
        y.square_()
        return y.log1p_()

    check_grads(fn, a)


def test_inplace_unary_history_matches_out_of_place():
    x = leaf(np.array([0.4, 1.3]))
    y = x * 2
    y.log_()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / np.array([0.4, 1.3]))


# ----- in-place comparisons and logical ops --------------------------------------------

CMP = {"ge_": np.greater_equal, "gt_": np.greater, "le_": np.less_equal, "lt_": np.less,
       "ne_": np.not_equal, "eq_": np.equal}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CMP))
def test_inplace_comparisons_keep_dtype(name):
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([2.0, 2.0, 2.0])
    x = fg.tensor(a, dtype=fg.float32)
    getattr(x, name)(fg.tensor(b))
    assert x.dtype == fg.float32
    np.testing.assert_array_equal(x.numpy(), CMP[name](a, b).astype(np.float32))
    y = fg.tensor(a)
    getattr(y, name)(2)
    np.testing.assert_array_equal(y.numpy(), CMP[name](a, 2).astype(np.float32))


def test_inplace_comparison_broadcast_shape_error():
    x = fg.zeros(3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.ge_(fg.zeros(2, 3))
    assert x.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", ["logical_and_", "logical_or_", "logical_xor_"])
def test_inplace_logical(name):
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    x = fg.tensor(a)
    getattr(x, name)(fg.tensor(b))
    np.testing.assert_array_equal(x.numpy(), getattr(np, name[:-1])(a, b))


def test_clip_inplace_is_clamp_inplace():
    x = fg.tensor([-2.0, 0.5, 3.0])
    assert x.clip_(-1, 1) is x
    assert x.tolist() == [-1.0, 0.5, 1.0]


# ----- in-place view ops ---------------------------------------------------------------


def test_inplace_view_ops():
    x = fg.arange(6).reshape(2, 3)
    v = x.unsqueeze_(0)
    assert v is x and tuple(x.shape) == (1, 2, 3)
    x.squeeze_(0)
    assert tuple(x.shape) == (2, 3)
    x.t_()
    assert x.tolist() == [[0, 3], [1, 4], [2, 5]]
    x.transpose_(0, 1)
    assert tuple(x.shape) == (2, 3)
    x.swapaxes_(0, 1)
    assert tuple(x.shape) == (3, 2)
    x.squeeze_()
    assert tuple(x.shape) == (3, 2)


def test_inplace_view_ops_refuse_grad():
    x = fg.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="use unsqueeze\\(\\) instead"):
        x.unsqueeze_(0)
    assert tuple(x.shape) == (2,)
    with fg.no_grad():
        x.unsqueeze_(0)
    assert tuple(x.shape) == (1, 2)


# ----- settings ------------------------------------------------------------------------


def test_set_printoptions_changes_repr():
    x = fg.tensor([1.23456789, 2.0], dtype=fg.float64)
    try:
        fg.set_printoptions(precision=2)
        assert repr(x) == "tensor([1.23, 2.00], dtype=torch.float64)".replace(
            "torch", "ferrograd"
        ) or ("1.23," in repr(x))
        assert "1.2346" not in repr(x)
        fg.set_printoptions(threshold=5, edgeitems=1)
        assert "..." in repr(fg.arange(10))
        fg.set_printoptions(profile="full")
        assert "..." not in repr(fg.arange(2000))
    finally:
        fg.set_printoptions(profile="default")
    assert "1.2346" in repr(x)


def test_set_printoptions_refuses_bad_values():
    before = repr(fg.tensor([1.5]))
    for kwargs in ({"precision": 1e308}, {"precision": -1}, {"edgeitems": "3"},
                   {"threshold": "x"}, {"sci_mode": 1}, {"profile": 3}):  # fmt: skip
        with pytest.raises(TypeError, match="set_printoptions"):
            fg.set_printoptions(**kwargs)
    assert repr(fg.tensor([1.5])) == before


def test_deterministic_flag_recorded():
    assert fg.are_deterministic_algorithms_enabled() is False
    try:
        fg.use_deterministic_algorithms(True, warn_only=True)
        assert fg.are_deterministic_algorithms_enabled() is True
        assert fg.is_deterministic_algorithms_warn_only_enabled() is True
    finally:
        fg.use_deterministic_algorithms(False)
    assert fg.are_deterministic_algorithms_enabled() is False
    with pytest.raises(TypeError, match="must be bool"):
        fg.use_deterministic_algorithms(1)


# ----- nn.functional aliases -----------------------------------------------------------


def test_functional_aliases_point_at_functional():
    F = fg.nn.functional
    for name in ("conv2d", "dropout", "layer_norm", "max_pool2d", "cosine_similarity",
                 "pixel_shuffle", "selu", "celu", "threshold", "pdist", "pairwise_distance"):  # fmt: skip
        assert getattr(fg, name) is getattr(F, name), name
        assert name in fg.__all__


def test_functional_aliases_torch_order():
    w = fg.tensor(np.arange(12.0).reshape(4, 3))
    idx = fg.tensor([3, 0])
    assert fg.embedding(w, idx).tolist() == [[9.0, 10.0, 11.0], [0.0, 1.0, 2.0]]
    x = fg.tensor(np.random.default_rng(0).normal(size=(4, 2, 3)))
    rm, rv = fg.zeros(2, dtype=fg.float64), fg.ones(2, dtype=fg.float64)
    wt, b = fg.full((2,), 2.0, dtype=fg.float64), fg.full((2,), 0.5, dtype=fg.float64)
    got = fg.batch_norm(x, wt, b, rm, rv, False, 0.1, 1e-5, True)
    np.testing.assert_allclose(got.numpy(), x.numpy() / np.sqrt(1 + 1e-5) * 2 + 0.5)
    vals, ind = fg.adaptive_max_pool1d(fg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    assert vals.tolist() == [[[3.0, 2.0]]] and ind.tolist() == [[[1, 2]]]

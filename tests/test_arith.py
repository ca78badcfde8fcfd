"""Forward values of the ops, checked against NumPy on shapes chosen by hypothesis."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from helpers import arrays, assert_tensor, broadcastable_shapes, shapes

F32 = dict(rtol=1e-5, atol=1e-6)

# -- binary arithmetic with broadcasting ---------------------------------------------------

BINARY = {
    "add": (operator.add, np.add),
    "sub": (operator.sub, np.subtract),
    "mul": (operator.mul, np.multiply),
    "truediv": (operator.truediv, np.divide),
    "pow": (operator.pow, np.power),
}


@st.composite
def binary_case(draw, op):
    sa, sb = draw(broadcastable_shapes())
    a = draw(arrays(sa, -3, 3, dtype=np.float32))
    if op == "pow":
        a = draw(arrays(sa, 0.1, 3, dtype=np.float32))
    b = draw(arrays(sb, -3, 3, dtype=np.float32, avoid=(0.0, 0.1) if op == "truediv" else None))
    return a, b


@pytest.mark.parametrize("name", list(BINARY))
@given(data=st.data())
def test_binary_ops_broadcast_like_numpy(name, data):
    a, b = data.draw(binary_case(name))
    fg_op, np_op = BINARY[name]
    out = fg_op(fg.tensor(a), fg.tensor(b))
    expected = np_op(a, b)
    assert out.shape == np.broadcast_shapes(a.shape, b.shape)
    assert_tensor(out, expected, dtype=fg.float32, **F32)


@pytest.mark.parametrize("name", list(BINARY))
@given(data=st.data())
def test_binary_ops_with_python_scalars_on_either_side(name, data):
    fg_op, np_op = BINARY[name]
    shape = data.draw(shapes())
    lo = 0.1 if name == "pow" else -3
    a = data.draw(arrays(shape, lo, 3, dtype=np.float32, avoid=(0.0, 0.1)))
    s = data.draw(st.sampled_from([2, -1, 0.5, 1.5, 3]))
    t = fg.tensor(a)
    right = fg_op(t, s)
    assert_tensor(right, np_op(a, np.float32(s)), dtype=fg.float32, **F32)
    if name == "pow" and s < 0:
        return  # s ** t with a negative base is nan for fractional t
    left = fg_op(s, t)
    assert_tensor(left, np_op(np.float32(s), a), dtype=fg.float32, **F32)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_function_forms(name):
    a = fg.tensor([1.0, 2.0, 4.0])
    b = fg.tensor([2.0, 2.0, 0.5])
    fn = {"add": fg.add, "sub": fg.sub, "mul": fg.mul, "truediv": fg.div, "pow": fg.pow}[name]
    np.testing.assert_allclose(fn(a, b).numpy(), BINARY[name][1](a.numpy(), b.numpy()))
    method = {"add": a.add, "sub": a.sub, "mul": a.mul, "truediv": a.div, "pow": a.pow}[name]
    np.testing.assert_allclose(method(b).numpy(), BINARY[name][1](a.numpy(), b.numpy()))


def test_add_sub_alpha():
    a, b = fg.tensor([1.0, 2.0]), fg.tensor([10.0, 20.0])
    assert fg.add(a, b, alpha=2).tolist() == [21.0, 42.0]
    assert fg.sub(a, b, alpha=0.5).tolist() == [-4.0, -8.0]


def test_integer_arithmetic_is_exact():
    a = fg.tensor([2**40, -7, 3])
    b = fg.tensor([3, 2, -2])
    assert (a + b).tolist() == [2**40 + 3, -5, 1]
    assert (a * b).tolist() == [3 * 2**40, -14, -6]
    assert (a - b).tolist() == [2**40 - 3, -9, 5]


@given(array=hnp.arrays(np.float32, shapes(), elements=st.floats(-1e6, 1e6, width=32)))
def test_unary_minus(array):
    t = fg.tensor(array)
    assert_tensor(-t, -array, rtol=0, atol=0)
    assert_tensor(fg.neg(t), -array, rtol=0, atol=0)
    assert_tensor(t.neg(), -array, rtol=0, atol=0)


# -- elementwise functions ------------------------------------------------------------------


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = {
    "sin": (np.sin, -10, 10),
    "cos": (np.cos, -10, 10),
    "exp": (np.exp, -10, 10),
    "log": (np.log, 1e-3, 100),
    "tanh": (np.tanh, -10, 10),
    "sigmoid": (_sigmoid, -20, 20),
    "relu": (lambda x: np.maximum(x, 0), -10, 10),
    "sqrt": (np.sqrt, 0, 100),
    "abs": (np.abs, -10, 10),
}


@pytest.mark.parametrize("name", list(UNARY))
@given(data=st.data())
def test_unary_functions_match_numpy(name, data):
    ref, lo, hi = UNARY[name]
    shape = data.draw(shapes())
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    a = data.draw(arrays(shape, lo, hi, dtype=dtype))
    t = fg.tensor(a)
    expected = ref(a.astype(np.float64))
    fg_dtype = fg.float32 if dtype == np.float32 else fg.float64
    tol = F32 if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert_tensor(getattr(fg, name)(t), expected, dtype=fg_dtype, **tol)
    assert_tensor(getattr(t, name)(), expected, dtype=fg_dtype, **tol)


def test_unary_special_values():
    assert fg.tensor([0.0]).log().tolist() == [float("-inf")]
    assert np.isnan(fg.tensor([-1.0]).sqrt().item())
    assert fg.tensor(0.0).sigmoid().item() == 0.5
    assert abs(fg.tensor([-2.0, 3.0])).tolist() == [2.0, 3.0]
    assert fg.relu(fg.tensor([-1.0, 0.0, 2.0])).tolist() == [0.0, 0.0, 2.0]


# -- reductions ------------------------------------------------------------------------


@st.composite
def reduction_case(draw):
    shape = draw(shapes(min_dims=1, max_dims=4))
    a = draw(arrays(shape, -3, 3, dtype=np.float32))
    nd = len(shape)
    dims = draw(
        st.one_of(
            st.none(),
            st.integers(-nd, nd - 1),
            st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(tuple),
        )
    )
    keepdim = draw(st.booleans())
    return a, dims, keepdim


@pytest.mark.parametrize("name", ["sum", "mean"])
@given(case=reduction_case())
def test_sum_mean_match_numpy(name, case):
    a, dims, keepdim = case
    t = fg.tensor(a)
    ref = getattr(np, name)
    if dims is None:
        out = getattr(t, name)()
        expected = ref(a.astype(np.float64))
        assert out.shape == ()
    else:
        out = getattr(t, name)(dims, keepdim)
        expected = ref(a.astype(np.float64), axis=dims, keepdims=keepdim)
        kw = getattr(t, name)(dim=dims, keepdim=keepdim)
        assert_tensor(kw, expected, **F32)
        fn = getattr(fg, name)(t, dims, keepdim)
        assert_tensor(fn, expected, **F32)
    assert out.dtype == fg.float32
    assert_tensor(out, expected, rtol=1e-5, atol=1e-5)


def test_reduction_examples():
    t = fg.ones(2, 3)
    assert t.sum().item() == 6.0
    assert t.sum(0).tolist() == [2.0, 2.0, 2.0]
    assert t.sum(dim=1, keepdim=True).shape == (2, 1)
    assert t.sum((0, 1)).shape == ()
    assert t.mean(-1).tolist() == [1.0, 1.0]
    assert fg.tensor([1, 2]).sum().item() == 3
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.sum(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        t.sum((0, 0))


def test_large_sum_is_accurate():
    n = 1_000_003
    t = fg.ones(n)
    assert t.sum().item() == n
    assert t.mean().item() == pytest.approx(1.0, rel=1e-6)
    r = fg.arange(n, dtype=fg.float64)
    assert r.sum().item() == n * (n - 1) / 2


# -- matmul ----------------------------------------------------------------------------


@st.composite
def matmul_case(draw):
    n, m, p = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 5))
    kind = draw(
        st.sampled_from(["1x1", "2x1", "1x2", "2x2", "3x2", "2x3", "3x3", "bcast", "1x3", "3x1"])
    )
    batch = draw(st.integers(1, 3))
    sa, sb = {
        "1x1": ((m,), (m,)),
        "2x1": ((n, m), (m,)),
        "1x2": ((m,), (m, p)),
        "2x2": ((n, m), (m, p)),
        "3x2": ((batch, n, m), (m, p)),
        "2x3": ((n, m), (batch, m, p)),
        "3x3": ((batch, n, m), (batch, m, p)),
        "bcast": ((1, n, m), (batch, m, p)),
        "1x3": ((m,), (batch, m, p)),
        "3x1": ((batch, n, m), (m,)),
    }[kind]
    return draw(arrays(sa, dtype=np.float32)), draw(arrays(sb, dtype=np.float32))


@given(matmul_case())
def test_matmul_matches_numpy(case):
    a, b = case
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    ta, tb = fg.tensor(a), fg.tensor(b)
    for out in (ta @ tb, fg.matmul(ta, tb), ta.matmul(tb)):
        assert_tensor(out, expected, dtype=fg.float32, rtol=1e-5, atol=1e-5)


def test_mm_and_dot():
    a = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = fg.tensor([[5.0, 6.0], [7.0, 8.0]])
    assert fg.mm(a, b).tolist() == [[19.0, 22.0], [43.0, 50.0]]
    assert a.mm(b).tolist() == [[19.0, 22.0], [43.0, 50.0]]
    assert fg.dot(fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0])).item() == 11.0
    assert (fg.ones(3) @ fg.ones(3)).shape == ()


def test_matmul_of_larger_matrices():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((67, 129)).astype(np.float32)
    b = rng.standard_normal((129, 33)).astype(np.float32)
    out = fg.tensor(a) @ fg.tensor(b)
    np.testing.assert_allclose(out.numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    ad, bd = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose((fg.tensor(ad) @ fg.tensor(bd)).numpy(), ad @ bd, rtol=1e-12)


@pytest.mark.parametrize(
    ("sa", "sb", "message"),
    [
        ((2, 3), (4, 5), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
        ((2, 3), (2,), None),  # PyTorch: "size mismatch, got input (2), mat (2x3), vec (2)"
        ((), (3,), "both arguments to matmul need to be at least 1D"),
    ],
)
def test_matmul_shape_errors(sa, sb, message):
    with pytest.raises(RuntimeError, match=message):
        fg.ones(sa) @ fg.ones(sb)


# -- shape ops ------------------------------------------------------------------------


@st.composite
def array_and_new_shape(draw):
    shape = draw(shapes(max_dims=4))
    n = int(np.prod(shape))
    dims = []
    rest = n
    for _ in range(draw(st.integers(0, 3))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        rest //= d
    dims.append(rest)
    if draw(st.booleans()):
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return np.arange(n, dtype=np.float32).reshape(shape), tuple(dims)


@given(array_and_new_shape())
def test_view_and_reshape_match_numpy(case):
    a, new_shape = case
    t = fg.tensor(a)
    expected = a.reshape(new_shape)
    assert_tensor(t.view(new_shape), expected, rtol=0, atol=0)
    assert_tensor(t.view(*new_shape), expected, rtol=0, atol=0)
    assert_tensor(t.reshape(new_shape), expected, rtol=0, atol=0)
    assert_tensor(fg.reshape(t, new_shape), expected, rtol=0, atol=0)


def test_view_shares_memory_reshape_copies_when_needed():
    t = fg.zeros(2, 3)
    v = t.view(6)
    v.add_(1)
    assert t.tolist() == [[1.0] * 3] * 2
    tt = t.t()
    with pytest.raises(
        RuntimeError, match="view size is not compatible with input tensor's size and stride"
    ):
        tt.view(6)
    r = tt.reshape(6)
    assert r.tolist() == [1.0] * 6
    r.add_(1)
    assert t.tolist() == [[1.0] * 3] * 2  # reshape had to copy
    with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
        t.view(4)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)


@st.composite
def array_and_perm(draw):
    shape = draw(shapes(min_dims=1, max_dims=4))
    perm = tuple(draw(st.permutations(range(len(shape)))))
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape), perm


@given(array_and_perm())
def test_permute_matches_numpy(case):
    a, perm = case
    t = fg.tensor(a)
    assert_tensor(t.permute(*perm), a.transpose(perm), rtol=0, atol=0)
    assert_tensor(t.permute(perm), a.transpose(perm), rtol=0, atol=0)


@given(array_and_perm(), st.data())
def test_transpose_and_t_match_numpy(case, data):
    a, _ = case
    nd = a.ndim
    d0 = data.draw(st.integers(-nd, nd - 1))
    d1 = data.draw(st.integers(-nd, nd - 1))
    t = fg.tensor(a)
    assert_tensor(t.transpose(d0, d1), np.swapaxes(a, d0, d1), rtol=0, atol=0)
    assert_tensor(fg.transpose(t, d0, d1), np.swapaxes(a, d0, d1), rtol=0, atol=0)
    if nd <= 2:
        assert_tensor(t.t(), a.T, rtol=0, atol=0)
        assert_tensor(fg.t(t), a.T, rtol=0, atol=0)


def test_t_rejects_3d():
    with pytest.raises(
        RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"
    ):
        fg.ones(2, 3, 4).t()


@given(shapes(max_dims=3), st.data())
def test_unsqueeze_squeeze_match_numpy(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = fg.tensor(a)
    d = data.draw(st.integers(-a.ndim - 1, a.ndim))
    u = t.unsqueeze(d)
    assert_tensor(u, np.expand_dims(a, d), rtol=0, atol=0)
    assert_tensor(fg.unsqueeze(t, d), np.expand_dims(a, d), rtol=0, atol=0)
    assert_tensor(u.squeeze(d), a, rtol=0, atol=0)
    assert_tensor(u.squeeze(), np.squeeze(a), rtol=0, atol=0)
    assert_tensor(fg.squeeze(u), np.squeeze(a), rtol=0, atol=0)
    if a.ndim:
        k = data.draw(st.integers(0, a.ndim - 1))
        # squeezing a dim that is not 1 leaves the tensor unchanged (PyTorch)
        expected = np.squeeze(a, k) if a.shape[k] == 1 else a
        assert_tensor(t.squeeze(k), expected, rtol=0, atol=0)


@st.composite
def expand_case(draw):
    shape = draw(shapes(max_dims=3))
    extra = draw(st.lists(st.integers(1, 3), max_size=2))
    target = list(extra) + [draw(st.integers(1, 3)) if s == 1 else s for s in shape]
    spelled = list(target)
    for i in range(len(extra), len(target)):
        if target[i] == shape[i - len(extra)] and draw(st.booleans()):
            spelled[i] = -1  # -1 keeps the existing size
    return (
        np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape),
        tuple(target),
        tuple(spelled),
    )


@given(expand_case())
def test_expand_matches_numpy_broadcast_to(case):
    a, target, spelled = case
    t = fg.tensor(a)
    e = t.expand(*spelled)
    assert_tensor(e, np.broadcast_to(a, target), rtol=0, atol=0)
    assert_tensor(t.expand(spelled), np.broadcast_to(a, target), rtol=0, atol=0)


def test_expand_errors():
    with pytest.raises(
        RuntimeError,
        match=r"The expanded size of the tensor \(4\) must match the existing size \(2\) at non-singleton dimension 1",
    ):
        fg.ones(3, 2).expand(3, 4)


def test_flatten():
    t = fg.arange(24.0).view(2, 3, 4)
    assert t.flatten().shape == (24,)
    assert t.flatten(1).shape == (2, 12)
    assert fg.flatten(t, 0, 1).shape == (6, 4)


# -- comparisons and all / any -------------------------------------------------------------

CMP = {
    "lt": (operator.lt, np.less),
    "le": (operator.le, np.less_equal),
    "gt": (operator.gt, np.greater),
    "ge": (operator.ge, np.greater_equal),
    "eq": (operator.eq, np.equal),
    "ne": (operator.ne, np.not_equal),
}

_small_ints = st.integers(-2, 2).map(float)


@pytest.mark.parametrize("name", list(CMP))
@given(data=st.data())
def test_comparisons_match_numpy(name, data):
    sa, sb = data.draw(broadcastable_shapes())
    a = data.draw(hnp.arrays(np.float32, sa, elements=_small_ints))
    b = data.draw(hnp.arrays(np.float32, sb, elements=_small_ints))
    s = data.draw(_small_ints)
    fg_op, np_op = CMP[name]
    ta, tb = fg.tensor(a), fg.tensor(b)
    assert_tensor(fg_op(ta, tb), np_op(a, b), dtype=fg.bool)
    assert_tensor(getattr(fg, name)(ta, tb), np_op(a, b), dtype=fg.bool)
    assert_tensor(getattr(ta, name)(tb), np_op(a, b), dtype=fg.bool)
    assert_tensor(fg_op(ta, s), np_op(a, np.float32(s)), dtype=fg.bool)
    assert_tensor(fg_op(s, ta), np_op(np.float32(s), a), dtype=fg.bool)


def test_comparison_results_do_not_require_grad():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    for r in (x > 1, x == x, x <= 0):
        assert r.dtype == fg.bool and not r.requires_grad and r.grad_fn is None


@given(hnp.arrays(np.bool_, shapes(max_dims=3)))
def test_all_any_match_numpy(a):
    t = fg.tensor(a)
    for out, expected in (
        (t.all(), a.all()),
        (t.any(), a.any()),
        (fg.all(t), a.all()),
        (fg.any(t), a.any()),
    ):
        assert out.dtype == fg.bool and out.shape == ()
        assert out.item() == bool(expected)


_ALL_ANY_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                   "float64"]


@pytest.mark.parametrize("dtype", _ALL_ANY_DTYPES)
@given(data=st.data())
def test_all_any_every_dtype_and_layout(dtype, data):
    # Zeros placed anywhere (the scan works in blocks), -0.0 counted as zero and NaN
    # as nonzero, read through contiguous, transposed and strided views.
    n = data.draw(st.integers(0, 3000))
    a = np.ones(n, dtype=np.float64)
    for i in data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=3)) if n else []:
        a[i] = data.draw(st.sampled_from([0.0, -0.0] if dtype.startswith("float") else [0.0]))
    if dtype.startswith("float") and n and data.draw(st.booleans()):
        a[data.draw(st.integers(0, n - 1))] = np.nan
    arr = a.astype(dtype)
    t = fg.tensor(arr)
    views = [(t, arr)]
    if n % 2 == 0 and n:
        views.append((t.reshape(2, -1).t(), arr.reshape(2, -1).T))
        views.append((t[::2], arr[::2]))
    for v, ref in views:
        assert v.all().item() == bool(np.all(ref != 0)), (dtype, ref)
        assert v.any().item() == bool(np.any(ref != 0)), (dtype, ref)


def test_all_any_of_numbers_and_empty():
    assert fg.tensor([1.0, 2.0]).all().item() is True
    assert fg.tensor([0.0, 2.0]).all().item() is False
    assert fg.tensor([0, 0]).any().item() is False
    assert fg.tensor([0, 3]).any().item() is True
    assert fg.tensor([]).all().item() is True
    assert fg.tensor([]).any().item() is False
    x = fg.tensor([1.0, 2.0])
    assert (x > 0).all() and not (x > 1).all() and (x > 1).any()


@given(hnp.arrays(np.float32, shapes(), elements=st.floats(-1e3, 1e3, width=32)))
def test_operators_do_not_modify_inputs(a):
    t = fg.tensor(a)
    before = t.numpy().copy()
    for r in (t + 1, t * t, -t, t.exp(), t.sum(), t > 0, t.view(-1), t.unsqueeze(0)):
        assert r is not t
    np.testing.assert_array_equal(t.numpy(), before)
    assume(a.size > 1)
    assert t.reshape(-1).shape == (a.size,)

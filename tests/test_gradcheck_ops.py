"""First- and second-order gradients of every differentiable foundation op, checked with
``fg.autograd.gradcheck`` / ``gradgradcheck`` in float64 on shapes chosen by hypothesis
(broadcasting pairs and size-1 dims included)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd.autograd import gradcheck, gradgradcheck
from helpers import arrays, broadcastable_shapes, leaf, shapes

# Each example runs a full finite-difference Jacobian (and gradgradcheck one of the
# backward pass), so these properties get fewer examples than the cheap ones.
_examples = max(10, settings.default.max_examples // 4)
checked = settings(max_examples=_examples)

SMALL = dict(max_dims=3, max_side=3)


def check_both(fn, inputs, second_order=True):
    assert gradcheck(fn, inputs)
    if second_order:
        assert gradgradcheck(fn, inputs)


# -- binary elementwise with broadcasting -----------------------------------------------

BINARY = {
    "add": (lambda a, b: a + b, None),
    "sub": (lambda a, b: a - b, None),
    "mul": (lambda a, b: a * b, None),
    "div": (lambda a, b: a / b, "b_away_from_zero"),
    "pow": (lambda a, b: a**b, "a_positive"),
    "add_fn": (lambda a, b: fg.add(a, b, alpha=0.5), None),
    "sub_fn": (lambda a, b: fg.sub(a, b, alpha=2.0), None),
    "mul_fn": (fg.mul, None),
    "div_fn": (fg.div, "b_away_from_zero"),
    "pow_fn": (fg.pow, "a_positive"),
}


@pytest.mark.parametrize("name", list(BINARY))
@checked
@given(data=st.data())
def test_binary_ops(name, data):
    fn, constraint = BINARY[name]
    sa, sb = data.draw(broadcastable_shapes(**SMALL))
    a_kw = dict(lo=0.5, hi=2.0) if constraint == "a_positive" else dict(lo=-2.0, hi=2.0)
    b_kw = dict(avoid=(0.0, 0.3)) if constraint == "b_away_from_zero" else {}
    a = leaf(data.draw(arrays(sa, **a_kw)))
    b = leaf(data.draw(arrays(sb, -2.0, 2.0, **b_kw)))
    check_both(fn, (a, b))


SCALAR = {
    "add_r": lambda a: a + 1.5,
    "add_l": lambda a: 1.5 + a,
    "sub_r": lambda a: a - 2,
    "sub_l": lambda a: 2 - a,
    "mul_r": lambda a: a * -3.0,
    "mul_l": lambda a: 0.5 * a,
    "div_r": lambda a: a / 4.0,
    "div_l": lambda a: 2.0 / a,
    "pow_r2": lambda a: a**2,
    "pow_r3": lambda a: a**3,
    "pow_rhalf": lambda a: a**0.5,
    "pow_rneg": lambda a: a**-1.5,
    "pow_l": lambda a: 2.0**a,
    "neg": lambda a: -a,
}


@pytest.mark.parametrize("name", list(SCALAR))
@checked
@given(data=st.data())
def test_ops_with_python_scalars(name, data):
    shape = data.draw(shapes(**SMALL))
    a = leaf(data.draw(arrays(shape, 0.5, 2.0)))  # positive: pow and 2/a are smooth
    check_both(SCALAR[name], (a,))


def test_partial_requires_grad():
    a = leaf(np.array([1.0, 2.0]))
    b = leaf(np.array([3.0, 4.0]), requires_grad=False)
    check_both(lambda x, y: x * y + y, (a, b))


# -- unary ------------------------------------------------------------------------------

UNARY = {
    "sin": (fg.sin, -3, 3, None),
    "cos": (fg.cos, -3, 3, None),
    "exp": (fg.exp, -2, 2, None),
    "log": (fg.log, 0.2, 3, None),
    "tanh": (fg.tanh, -2, 2, None),
    "sigmoid": (fg.sigmoid, -3, 3, None),
    "relu": (fg.relu, -2, 2, (0.0, 0.05)),
    "sqrt": (fg.sqrt, 0.2, 3, None),
    "abs": (fg.abs, -2, 2, (0.0, 0.05)),
    "sin_method": (lambda t: t.sin(), -3, 3, None),
    "exp_method": (lambda t: t.exp(), -2, 2, None),
    "relu_method": (lambda t: t.relu(), -2, 2, (0.0, 0.05)),
    "abs_builtin": (abs, -2, 2, (0.0, 0.05)),
    "nn_relu": (lambda t: fg.nn.functional.relu(t), -2, 2, (0.0, 0.05)),
    "nn_sigmoid": (lambda t: fg.nn.functional.sigmoid(t), -3, 3, None),
    "nn_tanh": (lambda t: fg.nn.functional.tanh(t), -2, 2, None),
}


@pytest.mark.parametrize("name", list(UNARY))
@checked
@given(data=st.data())
def test_unary_ops(name, data):
    fn, lo, hi, avoid = UNARY[name]
    a = leaf(data.draw(arrays(data.draw(shapes(**SMALL)), lo, hi, avoid=avoid)))
    check_both(fn, (a,))


# -- reductions -------------------------------------------------------------------------


@st.composite
def reduction_args(draw):
    shape = draw(shapes(min_dims=1, **SMALL))
    nd = len(shape)
    dim = draw(
        st.one_of(
            st.none(),
            st.integers(-nd, nd - 1),
            st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(tuple),
        )
    )
    return shape, dim, draw(st.booleans())


@pytest.mark.parametrize("name", ["sum", "mean"])
@checked
@given(data=st.data())
def test_reductions(name, data):
    shape, dim, keepdim = data.draw(reduction_args())
    a = leaf(data.draw(arrays(shape)))
    if dim is None:
        fn = lambda t: getattr(t, name)()  # noqa: E731
    else:
        fn = lambda t: getattr(t, name)(dim, keepdim)  # noqa: E731
    # multiplied by the input so that the second derivative is not identically zero
    check_both(lambda t: fn(t * t), (a,))
    check_both(lambda t: getattr(fg, name)(t) * 2, (a,), second_order=False)


# -- matmul -----------------------------------------------------------------------------


@st.composite
def matmul_shapes(draw):
    n, m, p, batch = (draw(st.integers(1, 3)) for _ in range(4))
    return draw(
        st.sampled_from(
            [
                ((m,), (m,)),
                ((n, m), (m,)),
                ((m,), (m, p)),
                ((n, m), (m, p)),
                ((batch, n, m), (m, p)),
                ((n, m), (batch, m, p)),
                ((batch, n, m), (batch, m, p)),
                ((1, n, m), (batch, m, p)),
            ]
        )
    )


@checked
@given(data=st.data())
def test_matmul(data):
    sa, sb = data.draw(matmul_shapes())
    a = leaf(data.draw(arrays(sa)))
    b = leaf(data.draw(arrays(sb)))
    check_both(lambda x, y: x @ y, (a, b))
    check_both(fg.matmul, (a, b), second_order=False)


@checked
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.data())
def test_mm_and_dot(n, m, p, data):
    a = leaf(data.draw(arrays((n, m))))
    b = leaf(data.draw(arrays((m, p))))
    check_both(fg.mm, (a, b))
    u = leaf(data.draw(arrays((m,))))
    v = leaf(data.draw(arrays((m,))))
    check_both(fg.dot, (u, v))


# -- shape ops --------------------------------------------------------------------------


@st.composite
def reshape_args(draw):
    shape = draw(shapes(**SMALL))
    n = int(np.prod(shape))
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    first = draw(st.sampled_from(divisors))
    return shape, (first, -1)


@checked
@given(data=st.data())
def test_view_and_reshape(data):
    shape, new = data.draw(reshape_args())
    a = leaf(data.draw(arrays(shape)))
    check_both(lambda t: t.view(new) * t.view(new), (a,))
    check_both(lambda t: t.reshape(*new).exp(), (a,))
    # reshape of a non-contiguous tensor copies; its gradient must still flow back
    if len(shape) >= 2:
        check_both(lambda t: t.transpose(0, 1).reshape(-1).sin(), (a,))


@checked
@given(data=st.data())
def test_transpose_t_permute(data):
    shape = data.draw(shapes(min_dims=1, **SMALL))
    nd = len(shape)
    a = leaf(data.draw(arrays(shape)))
    d0, d1 = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
    perm = data.draw(st.permutations(range(nd)))
    check_both(lambda t: t.transpose(d0, d1) * 2, (a,), second_order=False)
    check_both(lambda t: t.permute(*perm).sin(), (a,))
    if nd <= 2:
        check_both(lambda t: t.t().exp(), (a,))


@checked
@given(data=st.data())
def test_unsqueeze_squeeze_expand(data):
    shape = data.draw(shapes(**SMALL))
    nd = len(shape)
    a = leaf(data.draw(arrays(shape)))
    d = data.draw(st.integers(-nd - 1, nd))
    check_both(lambda t: t.unsqueeze(d).cos(), (a,))
    check_both(lambda t: t.unsqueeze(d).squeeze(d).cos(), (a,))
    check_both(lambda t: t.unsqueeze(0).squeeze().cos(), (a,))
    target = [data.draw(st.integers(1, 3)) if s == 1 else s for s in shape]
    extra = data.draw(st.lists(st.integers(1, 2), max_size=2))
    check_both(lambda t: t.expand(*extra, *target).sin(), (a,))


@checked
@given(data=st.data())
def test_expand_sums_the_gradient(data):
    n = data.draw(st.integers(1, 3))
    a = leaf(data.draw(arrays((n, 1))))
    k = data.draw(st.integers(1, 4))
    check_both(lambda t: t.expand(n, k) * t.expand(n, k), (a,))
    (g,) = fg.autograd.grad(a.expand(n, k).sum(), a)
    assert g.tolist() == [[float(k)]] * n


# -- indexing ---------------------------------------------------------------------------


@st.composite
def index_args(draw):
    from hypothesis.extra import numpy as hnp

    shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
    index = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(
        slice(i.start, i.stop, abs(i.step)) if isinstance(i, slice) and i.step is not None else i
        for i in items
    )
    return shape, items


@checked
@given(data=st.data())
def test_basic_indexing(data):
    shape, index = data.draw(index_args())
    a = leaf(data.draw(arrays(shape)))

    def fn(t):
        v = t[index]
        return v * v

    check_both(fn, (a,))


def test_indexing_examples():
    a = leaf(np.arange(6.0).reshape(2, 3) / 3 + 0.5)
    for fn in (
        lambda t: t[0] * t[1],
        lambda t: t[:, 1:] ** 2,
        lambda t: t[None, ..., 0].exp(),
        lambda t: t[-1, -1] * t[0, 0],
        lambda t: t[...].sin(),
        lambda t: t[0:1] @ t[1].unsqueeze(1),
    ):
        check_both(fn, (a,))


# -- composites and misc ------------------------------------------------------------------


@checked
@given(data=st.data())
def test_mse_loss(data):
    shape = data.draw(shapes(**SMALL))
    a = leaf(data.draw(arrays(shape)))
    b = leaf(data.draw(arrays(shape)))
    for reduction in ("mean", "sum", "none"):
        check_both(lambda x, y, r=reduction: fg.nn.functional.mse_loss(x, y, reduction=r), (a, b))
    check_both(lambda x, y: fg.nn.MSELoss()(x, y), (a, b))


@checked
@given(data=st.data())
def test_clone_contiguous_and_dtype_casts(data):
    shape = data.draw(shapes(min_dims=2, **SMALL))
    a = leaf(data.draw(arrays(shape)))
    check_both(lambda t: t.clone() * t, (a,))
    check_both(
        lambda t: t.t().contiguous() * 3 if t.dim() == 2 else t.transpose(0, 1).contiguous().sin(),
        (a,),
    )
    check_both(lambda t: t.to(fg.float64) * t.double(), (a,))


@checked
@given(data=st.data())
def test_small_network(data):
    n, d, h = (data.draw(st.integers(1, 3)) for _ in range(3))
    x = leaf(data.draw(arrays((n, d))), requires_grad=False)
    w1 = leaf(data.draw(arrays((d, h))))
    b1 = leaf(data.draw(arrays((h,))))
    w2 = leaf(data.draw(arrays((h, 1))))

    def net(w1, b1, w2):
        hidden = (x @ w1 + b1).tanh()
        out = (hidden @ w2).sigmoid()
        return ((out - 0.5) ** 2).mean()

    check_both(net, (w1, b1, w2))


def test_gradcheck_catches_a_wrong_gradient():
    # guard against a vacuous setup: the checker used above does fail on a bad rule
    a = leaf(np.array([0.5, 1.5]))
    with pytest.raises(fg.autograd.GradcheckError):
        gradcheck(lambda t: t * t.detach(), (a,))

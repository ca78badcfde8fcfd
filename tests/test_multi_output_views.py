"""`split`, `chunk`, `unbind` (and iterating a tensor) return views that are
the outputs of one node, as in PyTorch: one `SplitBackward0` (or
`SplitWithSizesBackward0`, `UnbindBackward0`) with an output per piece. The
pieces may not be written in place while their base requires grad, and may
not be used once their memory was written (the messages are PyTorch's,
checked against it by hand)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from helpers import FEW, leaf, op_shapes, values

ADVICE = (
    "This view is the output of a function that returns multiple views. Such functions do not "
    "allow the output views to be modified inplace. You should replace the inplace operation by "
    "an out-of-place one."
)
NO_GRAD_ADVICE = (
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the no_grad block (if you "
    "don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked)."
)


def direct(nr, op):
    return f"Output {nr} of {op} is a view and is being modified inplace. {ADVICE}"


def indirect(nr, op):
    return (
        f"Output {nr} of {op} is a view and its base or another view of its base has been "
        f"modified inplace. {ADVICE}"
    )


def raises(message):
    return pytest.raises(RuntimeError, match="^" + re.escape(message) + "$")


def X():
    return fg.tensor(
        [[0.5, -1.2, 2.0], [1.5, 0.3, -0.7], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
        dtype=fg.float64,
        requires_grad=True,
    )


def arr(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


# -- one node, several outputs ---------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "name", "count"),
    [
        (lambda y: y.split(2), "SplitBackward0", 2),
        (lambda y: y.split(3), "SplitBackward0", 2),
        (lambda y: y.split(10), "SplitBackward0", 1),
        (lambda y: fg.split(y, 1, 1), "SplitBackward0", 3),
        (lambda y: y.split([1, 3]), "SplitWithSizesBackward0", 2),
        (lambda y: fg.split(y, [2, 0, 1], -1), "SplitWithSizesBackward0", 3),
        (lambda y: y.chunk(2), "SplitBackward0", 2),
        (lambda y: fg.chunk(y, 3, 1), "SplitBackward0", 3),
        (lambda y: y.unbind(), "UnbindBackward0", 4),
        (lambda y: fg.unbind(y, 1), "UnbindBackward0", 3),
        (lambda y: list(y), "UnbindBackward0", 4),
        (lambda y: tuple(iter(y)), "UnbindBackward0", 4),
    ],
)
def test_pieces_share_one_node(make, name, count):
    for y in (X(), X() * 1):
        pieces = make(y)
        assert len(pieces) == count
        node = pieces[0].grad_fn
        for i, p in enumerate(pieces):
            assert p.grad_fn.name() == name
            assert p.grad_fn == node
            assert p._is_view()
            assert p._base is y
            assert not p.is_leaf
            assert p.requires_grad
            # A consumer names the piece by its output number.
            assert (p * 1).grad_fn.next_functions[0] == (node, i)
        ((prev, nr),) = node.next_functions
        assert nr == 0
        if y.is_leaf:
            assert prev.variable is y
        else:
            assert prev == y.grad_fn


def test_empty_dimension():
    z = fg.zeros(0, 3, requires_grad=True) * 1
    pieces = z.chunk(2)
    assert [p.grad_fn.name() for p in pieces] == ["SplitWithSizesBackward0"] * 2
    assert [tuple(p.shape) for p in pieces] == [(0, 3), (0, 3)]
    (only,) = z.split(0)
    assert only is not z
    assert only._base is z
    assert only.grad_fn.name() == "SplitBackward0"
    assert tuple(only.shape) == (0, 3)
    assert fg.zeros(3, 0, requires_grad=True).unbind(1) == ()


def test_no_node_when_nothing_is_recorded():
    for p in fg.ones(4, 3).split(2):
        assert p.grad_fn is None
        assert p._is_view()
    x = X()
    with fg.no_grad():
        pieces = x.split(2)
    for p in pieces:
        assert p.grad_fn is None
        assert p.requires_grad
        assert p._base is x


def test_values_are_views_of_the_input():
    y = fg.arange(12.0).reshape(4, 3)
    a, b = y.split([1, 3])
    c = y.unbind(1)[2]
    y.mul_(10)
    assert a.tolist() == [[0.0, 10.0, 20.0]]
    assert b[0].tolist() == [30.0, 40.0, 50.0]
    assert c.tolist() == [20.0, 50.0, 80.0, 110.0]
    # Nothing requires grad: writing a piece is an ordinary write into the base.
    a.add_(1)
    assert y[0].tolist() == [1.0, 11.0, 21.0]


# -- gradients -------------------------------------------------------------------------


def test_unused_pieces_get_zeros():
    x = X()
    p = x.split([1, 1, 2])
    (p[2] * 3).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [[0, 0, 0], [0, 0, 0], [3, 3, 3], [3, 3, 3]])

    x = X()
    p = x.unbind(1)
    (p[1] * p[1]).sum().backward()
    want = np.zeros((4, 3))
    want[:, 1] = 2 * arr(x)[:, 1]
    np.testing.assert_allclose(arr(x.grad), want)

    x = X()
    rows = list(x * 2)
    rows[3].sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [[0, 0, 0], [0, 0, 0], [0, 0, 0], [2, 2, 2]])


def test_every_piece_used_and_one_used_twice():
    x = X()
    a, b = x.chunk(2)
    (a * 2 + b * 3 + a.sum()).sum().backward()
    # a.sum() is added to each of the six elements.
    np.testing.assert_allclose(arr(x.grad), [[8] * 3, [8] * 3, [3] * 3, [3] * 3])


def test_hooks_and_retain_grad_on_pieces():
    x = X()
    p = (x * 1).split(2)
    p[1].register_hook(lambda g: g * 10)
    p[0].retain_grad()
    (p[0].sum() + p[1].sum()).backward()
    np.testing.assert_array_equal(arr(p[0].grad), np.ones((2, 3)))
    np.testing.assert_array_equal(arr(x.grad), [[1] * 3, [1] * 3, [10] * 3, [10] * 3])


def test_second_order_through_pieces():
    x = X()
    p = x.split(2)
    (g,) = fg.autograd.grad((p[1] ** 3).sum(), x, create_graph=True)
    # The gradients of the pieces are joined by a recorded `cat` (`stack` for unbind).
    assert g.grad_fn.name() == "CatBackward0"
    want = np.zeros((4, 3))
    want[2:] = 3 * arr(x)[2:] ** 2
    np.testing.assert_allclose(arr(g), want)
    g.sum().backward()
    want[2:] = 6 * arr(x)[2:]
    np.testing.assert_allclose(arr(x.grad), want)

    x = X()
    (g,) = fg.autograd.grad((x.unbind(1)[0] ** 2).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "StackBackward0"


@FEW
@given(data=st.data())
def test_some_pieces_used(data):
    shape = data.draw(op_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(values(shape))
    n = shape[d]
    how = data.draw(st.sampled_from(["split", "sections", "chunk", "unbind"]))

    def pieces(t):
        if how == "split":
            return t.split(data_size, d)
        if how == "sections":
            return t.split(sections, d)
        if how == "chunk":
            return t.chunk(data_size, d)
        return t.unbind(d)

    data_size = data.draw(st.integers(1, n))
    cut = data.draw(st.integers(0, n))
    sections = [cut, n - cut]
    count = len(pieces(leaf(x, False)))
    used = data.draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=count))

    def f(t):
        ps = pieces(t)
        return fg.stack([(ps[i] * (k + 1)).sum() for k, i in enumerate(used)])

    inputs = (leaf(x),)
    assert fg.autograd.gradcheck(f, inputs)
    assert fg.autograd.gradgradcheck(f, inputs)


# -- in-place writes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "nr", "op"),
    [
        (lambda y: y.split(2)[1], 1, "Split"),
        (lambda y: y.chunk(2)[0], 0, "Split"),
        (lambda y: y.split(4)[0], 0, "Split"),
        (lambda y: y.split([1, 3])[1], 1, "SplitWithSizes"),
        (lambda y: y.unbind()[2], 2, "Unbind"),
        (lambda y: list(y)[3], 3, "Unbind"),
        # A view of a piece carries the refusal, named after its own node.
        (lambda y: y.split(2)[0][1], 0, "Select"),
        (lambda y: y.split(2)[1].view(6), 0, "View"),
        (lambda y: y.split(2)[1].t(), 0, "T"),
        (lambda y: y.split(2)[1].split(1)[1], 1, "Split"),
    ],
)
@pytest.mark.parametrize(
    "write",
    [
        lambda p: p.mul_(2),
        lambda p: p.add_(fg.ones(p.shape, dtype=fg.float64)),
        lambda p: p.zero_(),
        lambda p: p.fill_(1.0),
        lambda p: p.copy_(fg.zeros(p.shape, dtype=fg.float64)),
        lambda p: p.normal_(),
        lambda p: p.uniform_(),
        lambda p: p.__iadd__(1),
        lambda p: p.clamp_(0, 1),
        lambda p: p.masked_fill_(p > 0, 3.0),
    ],
)
def test_writing_a_piece_is_refused(make, nr, op, write):
    for y in (X() * 1, X()):
        p = make(y)
        before = arr(y)
        with raises(direct(nr, op)):
            write(p)
        np.testing.assert_array_equal(arr(y), before)


def test_writing_into_a_piece_by_index_is_refused():
    y = X() * 1
    p = y.split(2)
    with raises(direct(0, "Select")):
        p[0][0] = 1.0
    # The full slice is skipped, as PyTorch skips it: the write goes into a select.
    with raises(direct(0, "Select")):
        p[1][:, 1] = fg.tensor(3.0, dtype=fg.float64)
    with raises(direct(1, "Split")):
        p[1][fg.tensor([0])] = 3.0
    with raises(direct(1, "Split")):
        p[1][p[1] > 0] = 3.0


def test_piece_of_a_tensor_not_requiring_grad():
    y = fg.ones(4, 3, dtype=fg.float64)
    p = y.split(2)
    # Nothing requires grad: allowed.
    p[0].mul_(2)
    assert p[0].grad_fn is None
    assert y.sum().item() == 18.0
    # A value that requires grad would need the piece rebased onto new history.
    w = X()
    for target in (p[1], p[1][0]):
        with raises(
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            f"enabled. {ADVICE}"
        ):
            target.mul_(w[0])


def test_base_written_then_piece_used():
    y = X() * 1
    p = y.split(2)
    y.mul_(2)
    for i in (0, 1):
        with raises(indirect(i, "Split")):
            _ = p[i].grad_fn
        with raises(indirect(i, "Split")):
            p[i] * 2
        with raises(indirect(i, "Split")):
            _ = p[i].is_leaf
    # The base itself is fine, and the values are current.
    assert y.grad_fn.name() == "MulBackward0"
    np.testing.assert_array_equal(arr(p[1]), 2 * arr(X())[2:])


def test_other_view_or_alias_written_then_piece_used():
    y = X() * 1
    p = y.unbind()
    y[0].mul_(2)  # through another view of the base
    with raises(indirect(1, "Unbind")):
        p[1] + 1
    y = X() * 1
    p = y.split(2)
    p[0].detach().mul_(2)  # `detach()` shares the version counter
    with raises(indirect(0, "Split")):
        _ = p[0].grad_fn
    y = X() * 1
    p = y.split(2)
    q = p[1][0]
    y.add_(1)
    with raises(indirect(0, "Select")):
        _ = q.grad_fn


def test_piece_written_under_no_grad_then_used():
    y = X() * 1
    p = y.split(2)
    with fg.no_grad():
        p[0].mul_(2)  # allowed: nothing is recorded
    with raises(indirect(0, "Split")):
        p[0] * 2
    with raises(indirect(1, "Split")):
        p[1] * 2
    # `.data` has its own version counter: invisible to the graph.
    y = X() * 1
    p = y.split(2)
    p[0].data.mul_(2)
    assert (p[0] * 2).grad_fn.name() == "MulBackward0"


def test_pieces_taken_under_no_grad():
    x = X()
    y = x * 1
    with fg.no_grad():
        p = y.split(2)
        q = x.split(2)
    for piece in (p[0], q[1]):
        with raises(
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            f"enabled. {NO_GRAD_ADVICE}"
        ):
            piece.mul_(2)
    # A view of a piece taken under no_grad() is an ordinary no-grad view.
    r = y.split(2)
    with fg.no_grad():
        v = r[0][0]
    with raises(
        "A view was created in no_grad mode and is being modified inplace with grad mode "
        f"enabled. {NO_GRAD_ADVICE}"
    ):
        v.mul_(2)
    # Splitting a no-grad view in grad mode makes multi-output views again.
    with fg.no_grad():
        w = y[1:]
    s = w.split(1)
    with raises(direct(0, "Split")):
        s[0].mul_(2)


def test_copies_of_pieces_can_be_written():
    y = X() * 1
    p = y.split(2)
    c = p[1].clone()
    c.mul_(2)
    assert c.grad_fn.name() == "MulBackward0"
    d = p[0].detach()
    assert d._base is None
    with fg.no_grad():
        for q in fg.ones(4, 3).split(2):
            q.mul_(2)

"""matmul in every 1-D/2-D/batched combination, mm, bmm, dot, outer, einsum."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as fg
from helpers import FEW, check_grads, close32, op_shapes, values

F = fg.nn.functional


@st.composite
def matmul_shapes(draw):
    m, k, n = (draw(st.integers(0, 3)) for _ in range(3))
    kind_a = draw(st.sampled_from(["1d", "2d", "batched"]))
    kind_b = draw(st.sampled_from(["1d", "2d", "batched"]))
    batch = draw(st.lists(st.integers(1, 2), max_size=2))
    # Broadcast batch dims: each side drops some leading dims or uses size 1.
    ba = [b if draw(st.booleans()) else 1 for b in batch][draw(st.integers(0, len(batch))):]
    bb = [b if draw(st.booleans()) else 1 for b in batch][draw(st.integers(0, len(batch))):]
    sa = {"1d": (k,), "2d": (m, k), "batched": (*ba, m, k)}[kind_a]
    sb = {"1d": (k,), "2d": (k, n), "batched": (*bb, k, n)}[kind_b]
    return sa, sb


@FEW
@given(data=st.data())
def test_matmul_all_combinations(data):
    sa, sb = data.draw(matmul_shapes())
    a, b = data.draw(values(sa)), data.draw(values(sb))
    check_grads(fg.matmul, a, b)
    check_grads(lambda x, y: x @ y, a, b)
    close32(fg.matmul, np.matmul, a, b, rtol=1e-5, atol=1e-5)


def _maybe_transposed(data, arr):
    """``arr`` as a leaf, or the transpose of a contiguous leaf holding
    ``arr.T`` (same values, other strides: matmul's folding depends on them)."""

    def make(a, rg):
        if a.ndim >= 2 and data.draw(st.booleans()):
            t = fg.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=fg.float64)
            return t.requires_grad_(rg).mT if rg else t.mT
        return fg.tensor(a, dtype=fg.float64).requires_grad_(rg)

    return make


@FEW
@given(data=st.data())
def test_matmul_one_operand_requires_grad(data):
    # Which operand requires grad, and the operands' strides, choose
    # matmul's route (folded into one mm/mv, or batched): every route
    # differentiates to second order.
    sa, sb = data.draw(matmul_shapes())
    a, b = data.draw(values(sa)), data.draw(values(sb))
    make = _maybe_transposed(data, None)
    expected = np.matmul(a, b)
    for ra, rb in [(True, False), (False, True), (True, True)]:
        ta, tb = make(a, ra), make(b, rb)
        np.testing.assert_allclose((ta @ tb).detach().numpy(), expected, atol=1e-12)
        inputs = tuple(t for t, r in ((ta, ra), (tb, rb)) if r)

        def f(*xs, ra=ra, rb=rb, ta=ta, tb=tb):
            it = iter(xs)
            return (next(it) if ra else ta) @ (next(it) if rb else tb)

        assert fg.autograd.gradcheck(f, inputs)
        assert fg.autograd.gradgradcheck(f, inputs)


@FEW
@given(data=st.data())
def test_mv(data):
    m, k = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    x, v = data.draw(values((m, k))), data.draw(values((k,)))
    check_grads(fg.mv, x, v)
    close32(fg.mv, np.matmul, x, v, atol=1e-5)
    close32(lambda p, q: p.mv(q), np.matmul, x, v, atol=1e-5)


def test_mv_errors():
    with pytest.raises(RuntimeError, match=r"^size mismatch, got input \(2\), mat \(2x3\), vec \(4\)$"):
        fg.mv(fg.ones(2, 3), fg.ones(4))
    with pytest.raises(RuntimeError, match=r"^vector \+ matrix @ vector expected, got 1, 3, 1$"):
        fg.mv(fg.ones(2, 2, 3), fg.ones(3))
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype, but got Double, Float, and Double"):
        fg.mv(fg.ones(2, 3), fg.ones(3, dtype=fg.float64))


def test_matmul_routes_and_their_errors():
    # PyTorch's messages, which come from the op each route ends in.
    cases = [
        ((2, 3), (4,), "size mismatch, got input (2), mat (2x3), vec (4)"),
        ((3,), (4, 2), "mm: mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)"),
        ((4, 2, 3), (4, 2), "mm: mat1 and mat2 shapes cannot be multiplied (8x3 and 4x2)"),
        ((4, 2, 3), (4,), "size mismatch, got input (8), mat (8x3), vec (4)"),
        ((3,), (1, 4, 2), "size mismatch, got input (2), mat (2x4), vec (3)"),
        ((4, 2, 3), (4, 4, 2), "Expected size for first two dimensions of batch2 tensor to be: [4, 3] but got: [4, 4]."),
        ((4, 2, 3), (2, 1, 4, 2), "Expected size for first two dimensions of batch2 tensor to be: [8, 3] but got: [8, 4]."),
    ]
    for sa, sb, message in cases:
        with pytest.raises(RuntimeError, match="^" + re.escape(message) + "$"):
            fg.ones(sa) @ fg.ones(sb)
    with pytest.raises(RuntimeError, match=re.escape("mm: self must be a matrix, got 3-D tensor")):
        fg.mm(fg.ones(2, 2, 3), fg.ones(3, 2))
    with pytest.raises(RuntimeError, match=re.escape("mm: mat2 must be a matrix, got 1-D tensor")):
        fg.mm(fg.ones(2, 3), fg.ones(3))


def test_vector_times_matrix_is_not_a_view():
    # PyTorch squeezes the one-row product in place: a new tensor, version 1.
    v = fg.ones(3, requires_grad=True)
    out = v @ fg.ones(3, 2)
    assert out.grad_fn.name() == "SqueezeBackward4"
    assert out._base is None and not out._is_view()
    assert out._version == 1
    assert out.grad_fn.next_functions[0][0].name() == "MmBackward0"
    out.sum().backward()
    assert v.grad.tolist() == [2.0, 2.0, 2.0]


def test_folded_matmul_gradient_is_one_product():
    # (batch, n, k) @ (k, p) with the matrix requiring grad: one mm over the
    # folded rows, as PyTorch; the gradient is that mm's, not a sum over batches.
    x = fg.tensor(np.arange(24.0).reshape(4, 2, 3))
    w = fg.tensor(np.linspace(-1, 1, 6).reshape(3, 2), requires_grad=True)
    out = x @ w
    assert out.grad_fn.name() == "UnsafeViewBackward0"
    (mm_node, _), = out.grad_fn.next_functions
    assert mm_node.name() == "MmBackward0"
    out.sum().backward()
    np.testing.assert_allclose(np.asarray(w.grad.tolist()), np.arange(24.0).reshape(8, 3).T @ np.ones((8, 2)))


@FEW
@given(data=st.data())
def test_mm_bmm_dot_outer(data):
    b, m, k, n = (data.draw(st.integers(0, 3)) for _ in range(4))
    x, y = data.draw(values((m, k))), data.draw(values((k, n)))
    check_grads(fg.mm, x, y)
    close32(fg.mm, np.matmul, x, y, atol=1e-5)
    x, y = data.draw(values((b, m, k))), data.draw(values((b, k, n)))
    check_grads(fg.bmm, x, y)
    close32(lambda p, q: p.bmm(q), np.matmul, x, y, atol=1e-5)
    u, v = data.draw(values((k,))), data.draw(values((k,)))
    check_grads(fg.dot, u, v)
    close32(fg.dot, np.dot, u, v, atol=1e-5)
    w = data.draw(values((n,)))
    check_grads(fg.outer, u, w)
    close32(lambda p, q: p.outer(q), np.outer, u, w)


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 1)]),
    ("ij,ij->", [(2, 3), (2, 3)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("i,j->ij", [(3,), (2,)]),
    ("i,i->", [(4,), (4,)]),
    ("ij->ji", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 2), (1, 2, 2, 2)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 1)]),
    ("ij,jk", [(2, 0), (0, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
]


@pytest.mark.parametrize("eq,shapes_", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
@FEW
@given(data=st.data())
def test_einsum(eq, shapes_, data):
    arrays = [data.draw(values(s)) for s in shapes_]
    check_grads(lambda *ts: fg.einsum(eq, *ts), *arrays)
    close32(lambda *ts: fg.einsum(eq, *ts), lambda *a: np.einsum(eq, *a), *arrays, atol=1e-5)


def test_einsum_list_form_and_errors():
    a, b = fg.ones(2, 3), fg.ones(3, 4)
    assert fg.einsum("ij,jk->ik", [a, b]).shape == (2, 4)
    with pytest.raises(RuntimeError, match="einsum"):
        fg.einsum("ij,jk->ik", a)
    with pytest.raises(RuntimeError, match="does not match the number of dimensions"):
        fg.einsum("ijk,jk->ik", a, b)
    with pytest.raises(RuntimeError, match="einsum"):
        fg.einsum("ij,jk->ik", a, fg.ones(2, 4))


def test_matmul_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        fg.ones(2, 3) @ fg.ones(2, 3)
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        fg.matmul(fg.ones(()), fg.ones(2))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        fg.bmm(fg.ones(2, 2), fg.ones(2, 2))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        fg.dot(fg.ones(2, 2), fg.ones(2))


# -- repeated subscripts (diagonals), ellipsis, summed labels ---------------------------

DIAGONAL_CASES = [
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ii->", [(0, 0)]),
    ("bii->bi", [(2, 3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("iji->j", [(2, 3, 2)]),
    ("iii->i", [(2, 2, 2)]),
    ("ij,jj->i", [(2, 3), (3, 3)]),
    ("ii,ij->j", [(3, 3), (3, 2)]),
    ("ii,jj->ij", [(2, 2), (3, 3)]),
    ("...ii->...i", [(2, 1, 3, 3)]),
    ("...ii->...", [(2, 3, 3)]),
    ("i...i", [(2, 3, 2)]),
    ("ij...,jj->i...", [(2, 3, 2), (3, 3)]),
    (" i i -> i ", [(2, 2)]),
]


@pytest.mark.parametrize("eq,shapes_", DIAGONAL_CASES, ids=[c[0] for c in DIAGONAL_CASES])
@FEW
@given(data=st.data())
def test_einsum_repeated_subscripts(eq, shapes_, data):
    arrays = [data.draw(values(s)) for s in shapes_]
    check_grads(lambda *ts: fg.einsum(eq, *ts), *arrays)
    np_eq = eq.replace(" ", "")
    close32(lambda *ts: fg.einsum(eq, *ts), lambda *a: np.einsum(np_eq, *a), *arrays, atol=1e-5)
    got = fg.einsum(eq, *[fg.tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), np.einsum(np_eq, *arrays), rtol=1e-12, atol=1e-12)


@st.composite
def einsum_problems(draw):
    """A random equation (repeated subscripts, an optional ellipsis with broadcast
    batch dimensions, implicit or explicit output) and operand shapes for it."""
    letters = "abcdE"
    size = {c: draw(st.integers(0 if c == "a" else 1, 3)) for c in letters}
    n_ops = draw(st.integers(1, 3))
    use_ell = draw(st.booleans())
    ell_shapes = (
        draw(
            hnp.mutually_broadcastable_shapes(
                num_shapes=n_ops, min_dims=0, max_dims=2, min_side=1, max_side=2
            )
        ).input_shapes
        if use_ell
        else [()] * n_ops
    )
    terms, shapes_ = [], []
    for k in range(n_ops):
        labels = draw(st.lists(st.sampled_from(letters), min_size=0, max_size=4))
        term = "".join(labels)
        shape = [size[c] for c in labels]
        if use_ell and draw(st.booleans()):
            at = draw(st.integers(0, len(labels)))
            term = term[:at] + "..." + term[at:]
            shape = shape[:at] + list(ell_shapes[k]) + shape[at:]
        terms.append(term)
        shapes_.append(tuple(shape))
    eq = ",".join(terms)
    if draw(st.booleans()):
        used = sorted(set("".join(terms).replace(".", "")))
        out = draw(st.permutations(used))[: draw(st.integers(0, len(used)))]
        out = "".join(out)
        if "..." in eq and draw(st.booleans()):
            at = draw(st.integers(0, len(out)))
            out = out[:at] + "..." + out[at:]
        eq += "->" + out
    return eq, shapes_


def reference_einsum(eq, *arrays):
    """NumPy's einsum, except that an explicit output without '...' sums the
    ellipsis dimensions away as PyTorch does (NumPy refuses such equations)."""
    if "->" not in eq or "..." not in eq or "..." in eq.split("->")[1]:
        return np.einsum(eq, *arrays)
    out = eq.split("->")[1]
    full = np.einsum(eq + "...", *arrays) if out else np.einsum(eq.split("->")[0] + "->...", *arrays)
    if not out:
        return full.sum()
    return full.sum(axis=tuple(range(len(out), full.ndim)))


@FEW
@given(data=st.data())
def test_einsum_random_equations_match_numpy(data):
    eq, shapes_ = data.draw(einsum_problems())
    arrays = [data.draw(values(s)) for s in shapes_]
    want = reference_einsum(eq, *arrays)
    got = fg.einsum(eq, *[fg.tensor(a) for a in arrays])
    assert got.dtype == fg.float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)
    close32(lambda *ts: fg.einsum(eq, *ts), lambda *a: reference_einsum(eq, *a), *arrays, rtol=1e-4, atol=1e-4)
    check_grads(lambda *ts: fg.einsum(eq, *ts), *arrays)


def test_einsum_diagonal_gradient_scatters_into_zeros():
    a = fg.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    fg.einsum("ii->i", a).backward(fg.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(a.grad.numpy(), np.diag([1.0, 2.0, 3.0]))
    a.grad = None
    fg.einsum("ii", a).backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.eye(3))


def test_einsum_int_and_bool_operands():
    m = fg.tensor([[1, 2], [3, 4]])
    assert fg.einsum("ii", m).item() == 5
    assert fg.einsum("ii->i", m).tolist() == [1, 4]
    assert fg.einsum("ij->ji", fg.tensor([[True, False]])).tolist() == [[True], [False]]


EINSUM_ERRORS = [
    ("ii->i", [(3, 2)], RuntimeError,
     "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 2 != 3"),
    ("ii", [(1, 3)], RuntimeError,
     "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 1"),
    ("...ii->...i", [(2, 3, 2)], RuntimeError,
     "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 2 != 3"),
    ("ij,ii->i", [(2, 3), (3, 2)], RuntimeError,
     "einsum(): subscript i has size 3 for operand 1 which does not broadcast with previously seen size 2"),
    ("ij,jk->ik", [(3, 3)], RuntimeError,
     "einsum(): fewer operands were provided than specified in the equation"),
    ("ij", [(3, 3), (3, 3)], RuntimeError,
     "einsum(): more operands were provided than specified in the equation"),
    ("ij->ik", [(3, 3)], RuntimeError,
     "einsum(): output subscript k does not appear in the equation for any input operand"),
    ("ij->ii", [(3, 3)], RuntimeError,
     "einsum(): output subscript i appears more than once in the output"),
    ("ijk->i", [(3, 3)], RuntimeError,
     "einsum(): the number of subscripts in the equation (3) does not match the number of "
     "dimensions (2) for operand 0 and no ellipsis was given"),
    ("...ij->ij", [(3,)], RuntimeError,
     "einsum(): the number of subscripts in the equation (2) is more than the number of "
     "dimensions (1) for operand 0"),
    ("i.j->i", [(3, 3)], RuntimeError,
     "einsum(): found '.' for operand 0 that is not part of any ellipsis"),
    ("...i...->i", [(3, 3)], RuntimeError,
     "einsum(): found '.' for operand 0 for which an ellipsis was already found"),
    ("ij->i...j...", [(2, 2)], RuntimeError,
     "einsum(): found '.' for output but an ellipsis (...) was already found"),
    ("ij->i..", [(2, 2)], RuntimeError,
     "einsum(): found '.' for output that is not part of any ellipsis (...)"),
    ("i1->i", [(3, 3)], RuntimeError,
     "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]"),
    ("ij->i->j", [(3, 3)], RuntimeError,
     "einsum(): invalid subscript given at index 5 in the equation string, subscripts must be in [a-zA-Z]"),
    ("i j->i 1", [(2, 2)], RuntimeError,
     "einsum(): invalid subscript given at index 7 in the equation string, subscripts must be in [a-zA-Z]"),
    ("ij,jk->ik", [(3, 3), (2, 2)], RuntimeError,
     "einsum(): subscript j has size 2 for operand 1 which does not broadcast with previously seen size 3"),
    ("a...,a...", [(2, 5, 3), (2, 4)], RuntimeError,
     "einsum(): dimension 1 covered by ellipsis in operand 1has size 4 which does not broadcast with "
     "previously seen ellipsis with size 3 for the respective dimension"),
    ("ij", [], ValueError,
     "einsum(): must specify the equation string and at least one operand, or at least one operand "
     "and its subscripts list"),
]


@pytest.mark.parametrize("eq,shapes_,exc,message", EINSUM_ERRORS, ids=[e[0] for e in EINSUM_ERRORS])
def test_einsum_errors_match_pytorch(eq, shapes_, exc, message):
    with pytest.raises(exc) as info:
        fg.einsum(eq, *[fg.ones(*s) for s in shapes_])
    assert str(info.value) == message


# -- diagonal and trace -------------------------------------------------------------------


@st.composite
def diagonal_args(draw):
    shape = draw(op_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4))
    nd = len(shape)
    d1 = draw(st.integers(-nd, nd - 1))
    d2 = draw(st.integers(-nd, nd - 1).filter(lambda d: d % nd != d1 % nd))
    offset = draw(st.integers(-5, 5))
    return shape, offset, d1, d2


@FEW
@given(data=st.data())
def test_diagonal_values_and_grads(data):
    shape, offset, d1, d2 = data.draw(diagonal_args())
    x = data.draw(values(shape))
    np.testing.assert_array_equal(
        fg.diagonal(fg.tensor(x), offset, d1, d2).numpy(), np.diagonal(x, offset, d1, d2)
    )
    close32(lambda t: t.diagonal(offset, d1, d2), lambda a: np.diagonal(a, offset, d1, d2), x)
    close32(lambda t: fg.diagonal(t, offset=offset, dim1=d1, dim2=d2),
            lambda a: np.diagonal(a, offset, d1, d2), x)
    # squared, so that the second derivative is not identically zero
    check_grads(lambda t: t.diagonal(offset, d1, d2) ** 2, x)


def test_diagonal_is_a_view_and_its_gradient_scatters_into_zeros():
    base = fg.zeros(3, 4)
    d = base.diagonal(1)
    assert d.stride() == (5,) and d.shape == (3,)
    base[0, 1] = 7.0
    assert d.tolist() == [7.0, 0.0, 0.0]
    d[2] = 9.0  # writes through to the base
    assert base[2, 3].item() == 9.0
    a = fg.tensor(np.ones((3, 4)), requires_grad=True)
    a.diagonal(-1).backward(fg.tensor([2.0, 3.0], dtype=fg.float64))
    want = np.zeros((3, 4))
    want[1, 0], want[2, 1] = 2.0, 3.0
    np.testing.assert_array_equal(a.grad.numpy(), want)
    assert a.diagonal().grad_fn.name() == "DiagonalBackward0"


def test_in_place_through_a_diagonal():
    a = fg.ones(3, 3, dtype=fg.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place operation."):
        a.diagonal().add_(1)
    y = a * 1
    y.diagonal().mul_(3)
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((3, 3)) + 2 * np.eye(3))


def test_diagonal_errors():
    with pytest.raises(RuntimeError, match="^diagonal dimensions cannot be identical 1, -1$"):
        fg.ones(3, 4).diagonal(0, 1, -1)
    with pytest.raises(RuntimeError, match="^diagonal dimensions cannot be identical 0, 0$"):
        fg.diagonal(fg.ones(3, 4), 0, 0, 0)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)$"):
        fg.ones(3, 4).diagonal(0, 0, 2)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)$"):
        fg.ones(3).diagonal()
    with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 1"):
        fg.ones(()).diagonal()


@FEW
@given(data=st.data())
def test_trace(data):
    n, m = data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4))
    x = data.draw(values((n, m)))
    check_grads(lambda t: fg.trace(t) * t.sum(), x)
    close32(fg.trace, np.trace, x, atol=1e-5)
    t = fg.tensor(x, requires_grad=True)
    y = t.trace()
    assert y.grad_fn.name() == "TraceBackward0"
    y.backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.eye(n, m))


def test_trace_dtypes_and_errors():
    t = fg.tensor([[1, 2, 3], [4, 5, 6]])
    assert fg.trace(t).item() == 6 and fg.trace(t).dtype == fg.int64
    with pytest.raises(RuntimeError, match="^trace: expected a matrix, but got tensor with dim 3$"):
        fg.ones(2, 3, 4).trace()
    with pytest.raises(RuntimeError, match="^trace: expected a matrix, but got tensor with dim 1$"):
        fg.trace(fg.ones(3))
    with pytest.raises(RuntimeError, match="\"trace\" not implemented for 'Bool'"):
        fg.trace(fg.ones(2, 2, dtype=fg.bool))


MIXED_DTYPE_ERRORS = [
    (lambda a, b: a @ b, "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda a, b: fg.mm(a, b), "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda a, b: a @ b[:, 0], "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    (lambda a, b: a[0] @ b[:, 0], "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda a, b: fg.bmm(a[None], b[None]), "expected scalar type Float but found Double"),
    (lambda a, b: a[None] @ b, "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda a, b: b[:, 0] @ a.t(), "expected m1 and m2 to have the same dtype, but got: double != float"),
    (lambda a, b: F.linear(a, b.t()), "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda a, b: a.long() @ b.float(), "expected m1 and m2 to have the same dtype, but got: long int != float"),
]


@pytest.mark.parametrize("op,message", MIXED_DTYPE_ERRORS)
def test_products_refuse_mixed_dtypes_instead_of_dropping_the_gradient(op, message):
    # Promoting by a data-only cast would return a result with no gradient.
    a = fg.ones(2, 3, requires_grad=True)
    b = fg.ones(3, 2, dtype=fg.float64)
    with pytest.raises(RuntimeError, match=re.escape(message)):
        op(a, b)

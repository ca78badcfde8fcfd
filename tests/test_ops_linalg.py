"""matmul in every 1-D/2-D/batched combination, mm, bmm, dot, outer, einsum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as fg
from ops_helpers import FEW, check_grads, close32, values


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

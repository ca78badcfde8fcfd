"""The one-pass in-place update used by optimizers (`p -= lr * p.grad`)."""

import numpy as np
import pytest

import ferrograd as fg


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/="])
def test_update_matches_out_of_place(op):
    rng = np.random.default_rng(0)
    a_np = rng.random((64, 33)).astype(np.float32) + 0.5
    b_np = rng.random((64, 33)).astype(np.float32) + 0.5
    for b in (fg.from_numpy(b_np.copy()), 0.75):
        a = fg.from_numpy(a_np.copy())
        v0 = a._version
        expected = {"+=": a_np + b_np, "-=": a_np - b_np, "*=": a_np * b_np, "/=": a_np / b_np}[op]
        if not isinstance(b, fg.Tensor):
            expected = {"+=": a_np + b, "-=": a_np - b, "*=": a_np * b, "/=": a_np / b}[op]
        exec(f"a {op} b")
        np.testing.assert_allclose(a.numpy(), expected, rtol=1e-6)
        assert a._version == v0 + 1


def test_optimizer_step_under_no_grad_updates_the_parameter_in_place():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    same = w
    with fg.no_grad():
        w -= 0.5 * w.grad
    assert w is same and w.is_leaf and w.requires_grad
    assert w.tolist() == [0.0, 0.0]


def test_self_aliasing_and_saved_tensors_still_behave():
    x = fg.tensor([1.0, 2.0])
    x += x
    assert x.tolist() == [2.0, 4.0]
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    y = a * 1
    z = y * y
    with fg.no_grad():
        y += 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@pytest.mark.parametrize("method", ["add_", "sub_", "mul_", "div_"])
def test_update_of_dense_views_writes_memory_order(method):
    """A transpose or permutation (and a view of one) is updated in place,
    with an operand of the same layout or a number, and its base sees it."""
    rng = np.random.default_rng(1)
    base_np = rng.random((4, 6, 5)).astype(np.float32) + 0.5
    other_np = rng.random((4, 6, 5)).astype(np.float32) + 0.5
    ref = {"add_": np.add, "sub_": np.subtract, "mul_": np.multiply, "div_": np.divide}[method]
    for perm in [(1, 0, 2), (2, 1, 0), (0, 2, 1)]:
        for operand in ("same layout", "number", "row-major"):
            base = fg.from_numpy(base_np.copy())
            view = base.permute(*perm)
            v0 = base._version
            if operand == "number":
                b, b_np = 1.25, 1.25
            elif operand == "same layout":
                b = fg.from_numpy(other_np.copy()).permute(*perm)
                b_np = other_np.transpose(perm)
            else:
                b_np = np.ascontiguousarray(other_np.transpose(perm))
                b = fg.from_numpy(b_np.copy())
            getattr(view, method)(b)
            expected = ref(base_np.transpose(perm), b_np)
            np.testing.assert_allclose(view.numpy(), expected, rtol=1e-6)
            np.testing.assert_allclose(base.numpy(), expected.transpose(np.argsort(perm)), rtol=1e-6)
            assert base._version == v0 + 1 and view._version == v0 + 1


def test_one_element_operand_that_would_widen_the_result_is_refused():
    a = fg.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[1, 3\]"):
        a.mul_(fg.ones(1, 1))
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0, 3.0])

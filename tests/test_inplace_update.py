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

"""Tests of the gradient checker itself (ferrograd.autograd.gradcheck)."""

import pytest

pytest.importorskip("ferrograd._C")

import numpy as np  # noqa: E402

import ferrograd as fg  # noqa: E402
from ferrograd.autograd.gradcheck import (  # noqa: E402
    GradcheckError,
    gradcheck,
    gradgradcheck,
)


def _leaf(shape, seed):
    data = np.random.default_rng(seed).uniform(0.5, 1.5, shape)
    return fg.tensor(data, dtype=fg.float64, requires_grad=True)


def _wrong_grad(x):
    # Forward is x**2, but the detached factor makes backward claim x instead of 2x.
    return x * x.detach()


@pytest.mark.parametrize("fast_mode", [False, True])
def test_product_passes(fast_mode):
    x, y = _leaf((2, 3), 0), _leaf((2, 3), 1)
    assert gradcheck(lambda a, b: a * b, (x, y), fast_mode=fast_mode) is True


@pytest.mark.parametrize("fast_mode", [False, True])
def test_sum_passes(fast_mode):
    assert gradcheck(lambda a: a.sum(), (_leaf((2, 3), 0),), fast_mode=fast_mode) is True


@pytest.mark.parametrize("fast_mode", [False, True])
def test_cube_sum_passes(fast_mode):
    x = _leaf((4,), 0)
    assert gradcheck(lambda a: (a * a * a).sum(), (x,), fast_mode=fast_mode) is True


def test_bare_tensor_input_and_tuple_output():
    x = _leaf((3,), 0)
    assert gradcheck(lambda a: (a * a, a.sum()), x) is True


def test_non_tensor_argument_is_passed_through():
    assert gradcheck(lambda a, c: a * c, (_leaf((3,), 0), 2.0)) is True


def test_undefined_grad_check_passes_for_product():
    x, y = _leaf((3,), 0), _leaf((3,), 1)
    assert gradcheck(lambda a, b: a * b, (x, y), check_undefined_grad=True) is True


def test_gradgradcheck_passes():
    x, y = _leaf((3,), 0), _leaf((3,), 1)
    assert gradgradcheck(lambda a, b: a * a * b, (x, y)) is True


@pytest.mark.parametrize("fast_mode", [False, True])
def test_wrong_gradient_raises(fast_mode):
    with pytest.raises(GradcheckError) as info:
        gradcheck(_wrong_grad, (_leaf((3,), 0),), fast_mode=fast_mode)
    message = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 0" in message
    assert "numerical:" in message and "analytical:" in message


@pytest.mark.parametrize("fast_mode", [False, True])
def test_wrong_gradient_returns_false(fast_mode):
    x = _leaf((3,), 0)
    assert gradcheck(_wrong_grad, (x,), raise_exception=False, fast_mode=fast_mode) is False


def test_error_names_the_failing_input():
    x, y = _leaf((3,), 0), _leaf((3,), 1)
    with pytest.raises(GradcheckError, match="output 0 with respect to input 1"):
        gradcheck(lambda a, b: a * _wrong_grad(b), (x, y))


def test_gradgradcheck_catches_wrong_second_derivative():
    # backward of x * x.detach() is grad * x.detach(), which has no graph back to x,
    # so its analytical derivative in x is zero while the numerical one is not.
    x = _leaf((3,), 0)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(_wrong_grad, (x,))
    assert gradgradcheck(_wrong_grad, (x,), raise_exception=False) is False


def test_gradcheck_error_is_runtime_error():
    assert issubclass(GradcheckError, RuntimeError)


def test_no_input_requiring_grad_is_rejected():
    x = fg.tensor([1.0, 2.0], dtype=fg.float64)
    with pytest.raises(ValueError, match="requires_grad=True"):
        gradcheck(lambda a: a * a, (x,))


def test_non_float64_input_warns_and_is_skipped():
    if not hasattr(fg, "float32"):
        pytest.skip("ferrograd has no float32")
    x = _leaf((3,), 0)
    y = fg.tensor([1.0, 2.0, 3.0], dtype=fg.float32, requires_grad=True)
    with pytest.warns(UserWarning, match="Input #1"):
        assert gradcheck(lambda a, b: a * a, (x, y)) is True

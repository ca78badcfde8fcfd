"""ferrograd.testing: assert_close, make_tensor, strategies, check_op, and gradcheck's new checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ferrograd.testing import assert_close, check_op, make_tensor
from ferrograd.testing import strategies as fst
from helpers import run_isolated

# --- assert_close ---------------------------------------------------------------------


def test_assert_close_message_matches_pytorch_format():
    with pytest.raises(AssertionError) as info:
        assert_close(fg.tensor([1.0, 2.0, 3.0]), fg.tensor([1.0, 2.5, 3.0]))
    assert str(info.value) == (
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)"
    )
    with pytest.raises(AssertionError) as info:
        assert_close(fg.tensor([[1, 2], [3, 4]]), fg.tensor([[1, 2], [3, 6]]))
    assert str(info.value) == (
        "Tensor-likes are not equal!\n\n"
        "Mismatched elements: 1 / 4 (25.0%)\n"
        "Greatest absolute difference: 2 at index (1, 1)\n"
        "Greatest relative difference: 0.3333333333333333 at index (1, 1)"
    )
    with pytest.raises(AssertionError) as info:
        assert_close(1.0, 1.5)
    assert str(info.value) == (
        "Scalars are not close!\n\nExpected 1.5 but got 1.0.\n"
        "Absolute difference: 0.5 (up to 1e-07 allowed)\n"
        "Relative difference: 0.3333333333333333 (up to 1e-07 allowed)"
    )


def test_assert_close_default_tolerances_depend_on_dtype():
    a = np.array([1.0, 100.0])
    b = a * (1 + 1e-6)
    assert_close(fg.tensor(a, dtype=fg.float32), fg.tensor(b, dtype=fg.float32))
    with pytest.raises(AssertionError, match=r"up to 1e-07 allowed"):
        assert_close(fg.tensor(a, dtype=fg.float64), fg.tensor(b, dtype=fg.float64))
    assert_close(fg.tensor(a, dtype=fg.float64), fg.tensor(b, dtype=fg.float64), rtol=1e-5, atol=0)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or omitted, but got no atol."):
        assert_close(fg.tensor(a), fg.tensor(a), rtol=1e-3)


def test_assert_close_attribute_checks():
    with pytest.raises(AssertionError, match=r"The values for attribute 'shape' do not match: ferrograd.Size\(\[2\]\) != ferrograd.Size\(\[3\]\)."):
        assert_close(fg.zeros(2), fg.zeros(3))
    with pytest.raises(AssertionError, match="The values for attribute 'dtype' do not match: ferrograd.float32 != ferrograd.float64."):
        assert_close(fg.zeros(2), fg.zeros(2, dtype=fg.float64))
    assert_close(fg.zeros(2), fg.zeros(2, dtype=fg.float64), check_dtype=False)
    x = fg.zeros(2, 3)
    with pytest.raises(AssertionError, match=r"attribute 'stride\(\)'"):
        assert_close(x.t(), fg.zeros(3, 2), check_stride=True)
    assert_close(x.t(), fg.zeros(3, 2))


def test_assert_close_nan_inf_and_numpy():
    nan = float("nan")
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        assert_close(fg.tensor([nan, 1.0]), fg.tensor([nan, 1.0]))
    assert_close(fg.tensor([nan, float("inf")]), fg.tensor([nan, float("inf")]), equal_nan=True)
    with pytest.raises(AssertionError):
        assert_close(fg.tensor([float("inf")]), fg.tensor([-float("inf")]))
    assert_close(fg.tensor([1.0, 2.0], dtype=fg.float64), np.array([1.0, 2.0]))
    assert_close(fg.tensor(2.0), 2.0, check_dtype=False)
    with pytest.raises(AssertionError, match=r"at index \(\)"):
        assert_close(fg.tensor(2.0), fg.tensor(3.0))
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs"):
        assert_close("a", fg.zeros(1))


def test_assert_close_containers_and_custom_messages():
    assert_close([fg.ones(2), (1, 2.0)], [fg.ones(2), (1, 2.0)])
    with pytest.raises(AssertionError, match=r"(?s)Tensor-likes are not close!.*The failure occurred for item \[1\]\['a'\]"):
        assert_close([1, {"a": fg.tensor([1.0])}], [1, {"a": fg.tensor([1.1])}])
    with pytest.raises(AssertionError, match="The length of the sequences mismatch: 1 != 2"):
        assert_close([1], [1, 2])
    with pytest.raises(AssertionError, match=r"Missing keys in the actual mapping: \['b'\]"):
        assert_close({"a": 1}, {"a": 1, "b": 2})
    with pytest.raises(AssertionError, match="The \\(d\\)types do not match"):
        assert_close(1, 1.0)
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(fg.ones(1), fg.zeros(1), msg="custom")
    with pytest.raises(AssertionError, match="^prefix: Tensor-likes are not close!"):
        assert_close(fg.ones(1), fg.zeros(1), msg=lambda m: "prefix: " + m)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=6), st.floats(0, 1e-2))
def test_assert_close_agrees_with_numpy_isclose(values, scale):
    a = np.array(values)
    b = a + scale * np.linspace(-1, 1, a.size)
    ok = bool(np.isclose(a, b, rtol=1e-4, atol=1e-6).all())
    try:
        assert_close(fg.tensor(a, dtype=fg.float64), fg.tensor(b, dtype=fg.float64),
                     rtol=1e-4, atol=1e-6)
        passed = True
    except AssertionError:
        passed = False
    assert passed == ok


# --- make_tensor ------------------------------------------------------------------------


def test_make_tensor_shapes_dtypes_and_ranges():
    fg.manual_seed(0)
    x = make_tensor(3, 4, dtype=fg.float32, low=-1, high=2)
    assert tuple(x.shape) == (3, 4) and x.dtype == fg.float32
    assert float(x.min()) >= -1 and float(x.max()) < 2
    fg.manual_seed(0)
    assert_close(make_tensor((3, 4), dtype=fg.float32, device="cpu", low=-1, high=2), x)
    i = make_tensor(200, dtype=fg.int64)
    assert i.dtype == fg.int64 and int(i.min()) >= -9 and int(i.max()) <= 9
    b = make_tensor(50, dtype=fg.bool)
    assert b.dtype == fg.bool
    g = make_tensor(2, dtype=fg.float64, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    nc = make_tensor(3, 4, dtype=fg.float64, noncontiguous=True)
    assert tuple(nc.shape) == (3, 4) and not nc.is_contiguous()
    z = make_tensor(100, dtype=fg.int64, low=0, high=2, exclude_zero=True)
    assert bool((z != 0).all())
    assert tuple(make_tensor((), dtype=fg.float32).shape) == ()


def test_make_tensor_errors():
    with pytest.raises(ValueError, match="`low` must be less than or equal to `high`"):
        make_tensor(2, dtype=fg.float32, low=3, high=1)
    with pytest.raises(ValueError, match="requires_grad=True is not supported"):
        make_tensor(2, dtype=fg.int64, requires_grad=True)
    with pytest.raises(ValueError, match="cannot be NaN"):
        make_tensor(2, dtype=fg.float32, low=float("nan"))


# --- strategies ---------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_strategies_draw_what_they_promise(data):
    shape = data.draw(fst.shapes(min_dims=1, max_dims=3, min_side=2, max_side=3))
    assert 1 <= len(shape) <= 3 and all(2 <= s <= 3 for s in shape)
    t = data.draw(fst.tensors(dtype=fg.float32, shape=shape, requires_grad=True))
    assert t.dtype == fg.float32 and tuple(t.shape) == shape and t.requires_grad
    b = data.draw(fst.broadcastable_shapes(shape, max_dims=4))
    assert np.broadcast_shapes(shape, b) is not None
    shs = data.draw(fst.mutually_broadcastable_shapes(3, max_side=3))
    assert len(shs) == 3
    np.broadcast_shapes(*shs)
    ints = data.draw(fst.tensors(dtype=fg.int64, shape=(4,)))
    assert ints.dtype == fg.int64


@pytest.mark.parametrize(
    "op,ok",
    [
        (fg.relu, lambda v: abs(v) > 0.05),
        (fg.abs, lambda v: abs(v) > 0.05),
        (fg.log, lambda v: v >= 0.2),
        (fg.sqrt, lambda v: v >= 0.2),
        (fg.reciprocal, lambda v: v >= 0.2),
        (fg.log1p, lambda v: v >= -0.8),
        (fg.tan, lambda v: abs(math.cos(v)) > math.sin(0.29)),
        (fg.floor, lambda v: abs(v - round(v)) > 0.05),
        ("round", lambda v: abs(v - math.floor(v) - 0.5) > 0.05),
        (lambda v: v * 2, lambda v: -3 <= v <= 3),
    ],
)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_differentiable_points_avoid_kinks_and_poles(op, ok, data):
    x = data.draw(fst.differentiable_points(op, shape=fst.shapes(max_side=3)))
    assert x.dtype == fg.float64 and x.requires_grad
    assert all(ok(v) for v in x.detach().numpy().reshape(-1))


def test_differentiable_points_rejects_an_empty_domain():
    with pytest.raises(ValueError, match="does not meet log's domain"):
        fst.differentiable_points(fg.log, low=-3, high=0)


def test_testing_imports_without_hypothesis_and_strategies_say_what_is_missing():
    r = run_isolated(
        """
        import sys
        sys.modules["hypothesis"] = None  # as if it were not installed
        import ferrograd.testing as t
        t.assert_close(t.make_tensor(2, dtype=__import__("ferrograd").float32).abs() >= 0,
                       __import__("ferrograd").ones(2, dtype=__import__("ferrograd").bool))
        try:
            import ferrograd.testing.strategies
        except ImportError as e:
            print("IMPORT-ERROR:", e)
        try:
            t.check_op(abs)
        except ImportError as e:
            print("CHECK-OP-ERROR:", e)
        """
    )
    assert r.returncode == 0, r.stderr
    assert "IMPORT-ERROR: ferrograd.testing.strategies needs the 'hypothesis' package" in r.stdout
    assert "CHECK-OP-ERROR: ferrograd.testing.check_op needs the 'hypothesis' package" in r.stdout


# --- check_op -------------------------------------------------------------------------------


class Square(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


class WrongSquare(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x  # the derivative of x^2 is 2x


class FirstOrderOnlySquare(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        # Right values, but the detached x hides the dependence on x from double backward.
        return 2 * g * x.detach()


def test_check_op_passes_correct_ops():
    small = fst.shapes(max_dims=2, max_side=3)
    assert check_op(Square.apply, fst.tensors(shape=small), max_examples=5)
    assert check_op(fg.log, fst.differentiable_points(fg.log, shape=small), max_examples=5)

    @st.composite
    def pair(draw):
        sa, sb = draw(fst.mutually_broadcastable_shapes(2, max_side=3))
        return (draw(fst.tensors(shape=sa)), draw(fst.tensors(shape=sb)))

    assert check_op(lambda a, b: a * b + a.exp(), args=pair(), max_examples=5)
    # Non-float arguments pass through untouched.
    assert check_op(lambda a, k: a**k, fst.tensors(shape=small), st.integers(1, 3), max_examples=5)


def test_check_op_catches_a_wrong_backward_with_a_helpful_message():
    with pytest.raises(GradcheckError) as info:
        check_op(WrongSquare.apply, fst.tensors(shape=fst.shapes(max_side=3)), max_examples=20)
    msg = str(info.value)
    assert "check_op: the first derivatives of WrongSquare.apply disagree with finite differences (gradcheck)" in msg
    assert "input 0: shape" in msg and "numerical:" in msg and "analytical:" in msg
    assert "The worst entry is d output[" in msg


def test_check_op_second_order_catches_a_detached_backward():
    small = fst.tensors(shape=fst.shapes(max_side=2), elements=fst.floats(0.5, 2))
    assert check_op(FirstOrderOnlySquare.apply, small, order=1, max_examples=5)
    with pytest.raises(GradcheckError, match="the second derivatives of FirstOrderOnlySquare.apply"):
        check_op(FirstOrderOnlySquare.apply, small, max_examples=10)


def test_check_op_argument_errors():
    with pytest.raises(ValueError, match="order must be 1 or 2"):
        check_op(fg.sin, fst.tensors(), order=3)
    with pytest.raises(TypeError, match="one strategy per argument"):
        check_op(fg.sin)


# --- gradcheck's new checks --------------------------------------------------------------


class ScalesGradInPlace(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g.mul_(3)


class WritesSavedInput(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        out = 2 * g * x
        x.mul_(1.0001)
        return out


def _x():
    return fg.tensor([0.5, 1.5], dtype=fg.float64, requires_grad=True)


def test_gradcheck_reports_a_backward_that_writes_its_grad_output():
    with pytest.raises(GradcheckError, match="Backward modified its grad_output in place"):
        gradcheck(ScalesGradInPlace.apply, (_x(),))


def test_gradcheck_reports_a_backward_that_writes_its_input():
    with pytest.raises(GradcheckError, match="Backward modified input 0 in place"):
        gradcheck(WritesSavedInput.apply, (_x(),))


def test_gradcheck_batched_grad_and_flags():
    assert gradcheck(lambda a: (a * a).sum() * a, (_x(),), check_batched_grad=True)
    assert gradgradcheck(lambda a: a**3, (_x(),), check_batched_grad=True)
    with pytest.raises(ValueError, match="requires check_backward_ad to be True"):
        gradcheck(fg.sin, (_x(),), check_backward_ad=False, check_batched_grad=True)
    with pytest.raises(ValueError, match="at least one of check_forward_ad or check_backward_ad"):
        gradcheck(fg.sin, (_x(),), check_backward_ad=False)


def _square_with_jvp(k):
    """x * x with a correct backward and a forward rule (jvp) of k * x * t: right
    only for k = 2."""

    class SquareJvp(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return k * t * x

    return SquareJvp


def _square_whose_backward_has_a_wrong_jvp(k):
    """x * x whose backward, 2 * (g * x), doubles through a custom Function with a
    forward rule of k * t: first derivatives and reverse-over-reverse are right for
    every k, forward-over-reverse only for k = 2."""

    class Twice(fg.autograd.Function):
        @staticmethod
        def forward(ctx, g):
            return g * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * k

    class SquareTwice(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return Twice.apply(g * x)

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 2 * t * x

    return SquareTwice


def test_gradcheck_forward_ad_checks_tangents():
    assert gradcheck(lambda a: a.sin() * a, (_x(),), check_forward_ad=True)
    assert gradcheck(_square_with_jvp(2).apply, (_x(),), check_forward_ad=True)
    # The backward is right, so only the forward-mode check can see the wrong jvp.
    assert gradcheck(_square_with_jvp(1).apply, (_x(),))
    with pytest.raises(GradcheckError) as info:
        gradcheck(_square_with_jvp(1).apply, (_x(),), check_forward_ad=True)
    msg = str(info.value)
    assert "(forward mode: analytical is the tangent of the output)" in msg
    # d(x^2)/dx at x = 1.5 is 3, the wrong rule gives 1.5.
    assert "The worst entry is d output[1] / d input[1]" in msg and "analytical 1.5," in msg
    assert not gradcheck(_square_with_jvp(1).apply, (_x(),), check_forward_ad=True,
                         raise_exception=False)


def test_gradgradcheck_forward_over_reverse():
    y = fg.tensor([0.3, -1.5], dtype=fg.float64, requires_grad=True)
    assert gradgradcheck(lambda a: a.sin() * a, (_x(),), check_fwd_over_rev=True)
    assert gradgradcheck(lambda a, b: (a.exp() * b, a * a), (_x(), y), check_fwd_over_rev=True,
                         check_rev_over_rev=False)
    assert gradgradcheck(_square_whose_backward_has_a_wrong_jvp(2).apply, (_x(),),
                         check_fwd_over_rev=True)
    wrong = _square_whose_backward_has_a_wrong_jvp(3).apply
    assert gradgradcheck(wrong, (_x(),))
    with pytest.raises(GradcheckError, match="forward mode"):
        gradgradcheck(wrong, (_x(),), check_fwd_over_rev=True)


def test_gradcheck_batched_grad_reports_rows_that_differ(monkeypatch):
    # A batched backward that gets one row wrong, standing in for an engine bug.
    real_grad = fg.autograd.grad

    def skewed_grad(*args, **kwargs):
        res = real_grad(*args, **kwargs)
        if kwargs.get("is_grads_batched"):
            res = tuple(None if g is None else g * fg.tensor([[1.0], [1.5], [1.0]], dtype=g.dtype)
                        for g in res)
        return res

    monkeypatch.setattr(fg.autograd, "grad", skewed_grad)
    assert gradcheck(lambda a: a.exp(), (_x(),))
    with pytest.raises(GradcheckError, match=r"batched grad \(row 1\) does not match"):
        gradcheck(lambda a: a.exp(), (_x(),), check_batched_grad=True)


def test_check_op_checks_forward_mode_when_asked():
    small = fst.tensors(shape=fst.shapes(max_dims=2, max_side=3), elements=fst.floats(0.5, 2))
    assert check_op(_square_with_jvp(2).apply, small, check_forward_ad=True, max_examples=5)
    assert check_op(_square_with_jvp(1).apply, small, max_examples=5)
    with pytest.raises(GradcheckError, match="forward mode"):
        check_op(_square_with_jvp(1).apply, small, order=1, check_forward_ad=True,
                 max_examples=10)
    wrong = _square_whose_backward_has_a_wrong_jvp(3).apply
    assert check_op(wrong, small, max_examples=5)
    with pytest.raises(GradcheckError, match="the second derivatives of SquareTwice.apply"):
        check_op(wrong, small, check_forward_ad=True, max_examples=10)


def test_public_names_have_docstrings():
    import ferrograd.autograd.functional as functional
    import ferrograd.testing as testing

    for mod in (testing, fst, functional):
        assert (mod.__doc__ or "").strip()
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj):
                assert (obj.__doc__ or "").strip(), f"{mod.__name__}.{name} has no docstring"

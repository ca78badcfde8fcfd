"""Tensor repr must match PyTorch's character for character.

Expected strings are PyTorch's output for the equivalent torch tensors.  The
formatting module is loaded by file path so these tests run without the native
extension being built.
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "python" / "ferrograd" / "_tensor_str.py"
_spec = importlib.util.spec_from_file_location("ferrograd_tensor_str_under_test", _PATH)
ts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ts)

_DTYPES = {
    "float32": True,
    "float64": False,
    "float16": False,
    "int64": True,
    "int32": False,
    "bool": True,
}


def r(values, dtype="float32", **kwargs):
    """repr of a tensor built like torch.tensor(values, dtype=dtype)."""
    arr = np.asarray(values, dtype=dtype)
    name = arr.dtype.name
    return ts.tensor_repr(
        arr, dtype_name=f"ferrograd.{name}", is_default_dtype=_DTYPES[name], **kwargs
    )


@pytest.fixture(autouse=True)
def _default_printoptions():
    ts.set_printoptions(profile="default")
    yield
    ts.set_printoptions(profile="default")


# -- examples from the brief ------------------------------------------------------


def test_autograd_suffixes():
    assert (
        r(np.ones((2, 2)), requires_grad=True)
        == "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"
    )
    assert (
        r(40 / 3, grad_fn_name="MseLossBackward0") == "tensor(13.3333, grad_fn=<MseLossBackward0>)"
    )
    # grad_fn wins over requires_grad, as in PyTorch.
    assert (
        r([1.0, 2.0], requires_grad=True, grad_fn_name="MulBackward0")
        == "tensor([1., 2.], grad_fn=<MulBackward0>)"
    )
    assert (
        r([[0.2499, 0.3156], [0.4506, 0.3886]], requires_grad=True)
        == "tensor([[0.2499, 0.3156],\n        [0.4506, 0.3886]], requires_grad=True)"
    )


@pytest.mark.parametrize(
    ("values", "dtype", "expected"),
    [
        ([8 / 3, 100, 704], "float32", "tensor([  2.6667, 100.0000, 704.0000])"),
        ([0.0, 1.0, 2.0, 3.0], "float32", "tensor([0., 1., 2., 3.])"),
        ([0.0, 4.0, 8.0, 12.0], "float32", "tensor([ 0.,  4.,  8., 12.])"),
        ([True] * 4, "bool", "tensor([True, True, True, True])"),
        ([2.0, 0.2, 0.02, 0.002], "float32", "tensor([2.0000, 0.2000, 0.0200, 0.0020])"),
        (-8.7423e-08, "float32", "tensor(-8.7423e-08)"),
        (2.0, "float32", "tensor(2.)"),
        ([1, 2, 3], "int64", "tensor([1, 2, 3])"),
        (3.0, "float64", "tensor(3., dtype=ferrograd.float64)"),
        ([1.0, 1e10], "float32", "tensor([1.0000e+00, 1.0000e+10])"),
        ([math.nan, math.inf, 1.0], "float32", "tensor([nan, inf, 1.])"),
        ([1.0, 2.0], "float32", "tensor([1., 2.])"),
    ],
)
def test_brief_examples(values, dtype, expected):
    assert r(values, dtype) == expected


# -- element formatting -----------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "dtype", "expected"),
    [
        ([1.0, 2.0, 3.0], "float32", "tensor([1., 2., 3.])"),
        ([0.5, 1.25, -3.0], "float32", "tensor([ 0.5000,  1.2500, -3.0000])"),
        ([1e-5, 1.0], "float32", "tensor([1.0000e-05, 1.0000e+00])"),
        ([1e9, 1.0], "float32", "tensor([1.0000e+09, 1.0000e+00])"),
        ([1.0, 2000.0], "float32", "tensor([1.0000e+00, 2.0000e+03])"),
        ([1.0, 1000.0], "float32", "tensor([   1., 1000.])"),  # ratio must *exceed* 1000
        ([0.0001, 5.0], "float32", "tensor([1.0000e-04, 5.0000e+00])"),
        ([1e8], "float32", "tensor([100000000.])"),  # must *exceed* 1e8
        (
            [[1.0, 22.5], [-3.0, 4.0]],
            "float32",
            "tensor([[ 1.0000, 22.5000],\n        [-3.0000,  4.0000]])",
        ),
        ([[7.0, 11.0], [9.0, 13.0]], "float32", "tensor([[ 7., 11.],\n        [ 9., 13.]])"),
        (
            [[1e-10, 1.0], [1.0, 2.0]],
            "float32",
            "tensor([[1.0000e-10, 1.0000e+00],\n        [1.0000e+00, 2.0000e+00]])",
        ),
        (3.5, "float32", "tensor(3.5000)"),
        (1e-8, "float32", "tensor(1.0000e-08)"),
        ([1, -20, 300], "int64", "tensor([  1, -20, 300])"),
        (5, "int64", "tensor(5)"),
        ([True, False], "bool", "tensor([ True, False])"),
        (True, "bool", "tensor(True)"),
        ([1.5, 2.5], "float64", "tensor([1.5000, 2.5000], dtype=ferrograd.float64)"),
        ([1, 2], "int32", "tensor([1, 2], dtype=ferrograd.int32)"),
        ([0.5, 1.0], "float16", "tensor([0.5000, 1.0000], dtype=ferrograd.float16)"),
    ],
)
def test_elements(values, dtype, expected):
    assert r(values, dtype) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # Non-finite values are left out of the width, so they are not padded...
        ([math.nan, 1.0, math.inf, -math.inf], "tensor([nan, 1., inf, -inf])"),
        ([math.nan, math.nan], "tensor([nan, nan])"),
        (math.nan, "tensor(nan)"),
        # ...but they are padded to the width the finite values need.
        ([math.inf, 1.5], "tensor([   inf, 1.5000])"),
        ([-math.inf, 1e-5], "tensor([      -inf, 1.0000e-05])"),
        # Zeros do not count either: -0. keeps its sign and is wider than the column.
        ([-0.0, 1.0], "tensor([-0., 1.])"),
        ([-0.0], "tensor([-0.])"),
        ([-0.0, 1.5], "tensor([-0.0000, 1.5000])"),
        (np.zeros((2, 3)), "tensor([[0., 0., 0.],\n        [0., 0., 0.]])"),
    ],
)
def test_nonfinite_and_zero(values, expected):
    assert r(values) == expected


def test_float32_formatted_from_its_own_value():
    # float32(2.00005) is 2.0000500679..., whereas the double 2.00005 is just below.
    assert r(2.00005, "float32") == "tensor(2.0001)"
    assert r(2.00005, "float64") == "tensor(2.0000, dtype=ferrograd.float64)"
    assert r(np.float32(13.333333)) == "tensor(13.3333)"


# -- empty tensors ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "dtype", "expected"),
    [
        ((0,), "float32", "tensor([])"),
        ((0, 3), "float32", "tensor([], size=(0, 3))"),
        ((0,), "int64", "tensor([], dtype=ferrograd.int64)"),  # int64 is shown when empty
        ((0,), "bool", "tensor([], dtype=ferrograd.bool)"),
        ((2, 0), "int64", "tensor([], size=(2, 0), dtype=ferrograd.int64)"),
        ((0,), "float64", "tensor([], dtype=ferrograd.float64)"),
        ((1, 0, 2), "float64", "tensor([], size=(1, 0, 2), dtype=ferrograd.float64)"),
    ],
)
def test_empty(shape, dtype, expected):
    assert r(np.zeros(shape), dtype) == expected


def test_empty_requires_grad():
    assert r(np.zeros(0), requires_grad=True) == "tensor([], requires_grad=True)"


# -- layout: nesting, wrapping, summarising ---------------------------------------


def test_3d_blocks_are_separated_by_blank_lines():
    assert r(np.arange(24.0).reshape(2, 3, 4)) == (
        "tensor([[[ 0.,  1.,  2.,  3.],\n"
        "         [ 4.,  5.,  6.,  7.],\n"
        "         [ 8.,  9., 10., 11.]],\n"
        "\n"
        "        [[12., 13., 14., 15.],\n"
        "         [16., 17., 18., 19.],\n"
        "         [20., 21., 22., 23.]]])"
    )


def test_4d_uses_two_blank_lines():
    assert r(np.arange(4).reshape(2, 1, 1, 2), "int64") == (
        "tensor([[[[0, 1]]],\n\n\n        [[[2, 3]]]])"
    )


def test_long_rows_wrap_at_linewidth():
    assert r(np.arange(30.0)) == (
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
        "        28., 29.])"
    )
    # Continuation lines of nested rows are indented one column further.
    assert r(np.arange(40.0).reshape(2, 20)) == (
        "tensor([[ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "         14., 15., 16., 17., 18., 19.],\n"
        "        [20., 21., 22., 23., 24., 25., 26., 27., 28., 29., 30., 31., 32., 33.,\n"
        "         34., 35., 36., 37., 38., 39.]])"
    )


def test_suffix_moves_to_next_line_when_too_long():
    assert r(np.arange(14.0), requires_grad=True) == (
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.],\n"
        "       requires_grad=True)"
    )
    assert r(np.arange(13.0), requires_grad=True) == (
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12.],\n"
        "       requires_grad=True)"
    )
    assert r(np.arange(10.0), requires_grad=True) == (
        "tensor([0., 1., 2., 3., 4., 5., 6., 7., 8., 9.], requires_grad=True)"
    )


def test_summarised_1d():
    # threshold is 1000: exactly 1000 elements are printed in full.
    assert "..." not in r(np.arange(1000.0))
    assert r(np.arange(2000), "int64") == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    # Only the shown elements decide notation and width (1000/1 is not > 1000).
    assert r(np.arange(1001.0)) == "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])"
    assert r(np.arange(1001) / 10 + 1) == (
        "tensor([  1.0000,   1.1000,   1.2000,  ..., 100.8000, 100.9000, 101.0000])"
    )
    assert r(np.arange(2000.0)) == (
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
        "        1.9990e+03])"
    )
    assert r(np.arange(2000.0, dtype=np.float32) / 7) == (
        "tensor([0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 2.8529e+02, 2.8543e+02,\n"
        "        2.8557e+02])"
    )


def test_summarised_2d():
    assert r(np.arange(1200).reshape(40, 30), "int64") == (
        "tensor([[   0,    1,    2,  ...,   27,   28,   29],\n"
        "        [  30,   31,   32,  ...,   57,   58,   59],\n"
        "        [  60,   61,   62,  ...,   87,   88,   89],\n"
        "        ...,\n"
        "        [1110, 1111, 1112,  ..., 1137, 1138, 1139],\n"
        "        [1140, 1141, 1142,  ..., 1167, 1168, 1169],\n"
        "        [1170, 1171, 1172,  ..., 1197, 1198, 1199]])"
    )
    assert r(np.arange(3000.0).reshape(3, 1000)) == (
        "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9700e+02, 9.9800e+02,\n"
        "         9.9900e+02],\n"
        "        [1.0000e+03, 1.0010e+03, 1.0020e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
        "         1.9990e+03],\n"
        "        [2.0000e+03, 2.0010e+03, 2.0020e+03,  ..., 2.9970e+03, 2.9980e+03,\n"
        "         2.9990e+03]])"
    )
    row = "[1., 1., 1.,  ..., 1., 1., 1.]"
    assert r(np.ones((100, 100))) == (
        f"tensor([{row},\n"
        + f"        {row},\n" * 2
        + "        ...,\n"
        + f"        {row},\n" * 2
        + f"        {row}])"
    )


def test_summarised_3d():
    ts.set_printoptions(threshold=10, edgeitems=1)
    assert r(np.arange(27).reshape(3, 3, 3), "int64") == (
        "tensor([[[ 0,  ...,  2],\n"
        "         ...,\n"
        "         [ 6,  ...,  8]],\n"
        "\n"
        "        ...,\n"
        "\n"
        "        [[18,  ..., 20],\n"
        "         ...,\n"
        "         [24,  ..., 26]]])"
    )


# -- print options ----------------------------------------------------------------


def test_printoption_defaults_and_profiles():
    defaults = {
        "precision": 4,
        "threshold": 1000,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": None,
    }
    assert ts.get_printoptions() == defaults
    ts.set_printoptions(profile="short")
    assert ts.get_printoptions() == {**defaults, "precision": 2, "edgeitems": 2}
    ts.set_printoptions(profile="full")
    assert ts.get_printoptions() == {**defaults, "threshold": math.inf}
    assert r(np.arange(2000), "int64").count(",") == 1999
    # Explicit arguments override the profile.
    ts.set_printoptions(profile="default", precision=6)
    assert ts.get_printoptions() == {**defaults, "precision": 6}
    ts.set_printoptions(**defaults)
    assert ts.get_printoptions() == defaults


def test_printoption_effects():
    ts.set_printoptions(precision=2)
    assert r([1.23456, 2.5]) == "tensor([1.23, 2.50])"
    ts.set_printoptions(precision=4, sci_mode=False)
    assert r([1e-6, 1.0]) == "tensor([0.0000, 1.0000])"
    ts.set_printoptions(sci_mode=None, threshold=5, edgeitems=2)
    assert r(np.arange(10), "int64") == "tensor([0, 1,  ..., 8, 9])"
    ts.set_printoptions(profile="default")
    assert r(np.arange(10), "int64") == "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"
    ts.set_printoptions(linewidth=20)
    assert r(np.arange(8), "int64") == "tensor([0, 1, 2, 3,\n        4, 5, 6, 7])"


def test_sci_mode_is_reset_by_any_call():
    ts.set_printoptions(sci_mode=True)
    assert r([1.0, 2.0]) == "tensor([1.0000e+00, 2.0000e+00])"
    # PyTorch bails out before honouring sci_mode when nothing is nonzero and finite.
    assert r([0.0, 0.0]) == "tensor([0., 0.])"
    ts.set_printoptions(precision=4)
    assert ts.get_printoptions()["sci_mode"] is None
    assert r([1.0, 2.0]) == "tensor([1., 2.])"


def test_zero_edgeitems_shows_only_the_size():
    ts.set_printoptions(threshold=5, edgeitems=0)
    assert r(np.arange(10), "int64") == "tensor([...], size=(10,))"
    assert r(np.ones((4, 5))) == "tensor([...], size=(4, 5))"
    assert r([1.0, 2.0]) == "tensor([1., 2.], size=(2,))"


def test_printoptions_context_manager_restores():
    with ts.printoptions(precision=1):
        assert r([1.25]) == "tensor([1.2])"
    assert ts.get_printoptions()["precision"] == 4


# -- _repr on tensor-like objects -------------------------------------------------


class _GradFn:
    def name(self):
        return "MulBackward0"


class _FakeTensor:
    def __init__(self, arr, dtype, requires_grad=False, grad_fn=None, broken=False):
        self._arr, self.dtype = np.asarray(arr), dtype
        self.requires_grad, self.grad_fn, self._broken = requires_grad, grad_fn, broken
        self.is_leaf = grad_fn is None

    def detach(self):
        return self

    def numpy(self):
        if self._broken:
            raise RuntimeError("storage freed")
        return self._arr


def test_repr_helper():
    f32 = np.array([1.0, 2.0], np.float32)
    assert ts._repr(_FakeTensor(f32, "ferrograd.float32")) == "tensor([1., 2.])"
    assert (
        ts._repr(_FakeTensor(f32, "ferrograd.float32", True))
        == "tensor([1., 2.], requires_grad=True)"
    )
    assert (
        ts._repr(_FakeTensor(f32 * 2, "ferrograd.float32", True, _GradFn()))
        == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    )
    assert (
        ts._repr(_FakeTensor(np.float64(3), "ferrograd.float64"))
        == "tensor(3., dtype=ferrograd.float64)"
    )
    assert ts._repr(_FakeTensor(np.arange(3), "ferrograd.int64")) == "tensor([0, 1, 2])"
    assert ts._repr(_FakeTensor(np.array([True]), "ferrograd.bool")) == "tensor([True])"
    assert (
        ts._repr(_FakeTensor(np.zeros(0, np.int64), "ferrograd.int64"))
        == "tensor([], dtype=ferrograd.int64)"
    )


def test_repr_helper_never_raises():
    text = ts._repr(_FakeTensor(np.zeros(2), "ferrograd.float32", broken=True))
    assert text.startswith("tensor(<unavailable: RuntimeError: storage freed>")
    assert text.endswith(", dtype=ferrograd.float32)")

"""The native counting and bucketing kernels behind ``searchsorted``/``bucketize``,
``histc``, ``bincount`` and ``isin``: values against NumPy (or a loop written from
PyTorch's definition) for every dtype they take, batched and strided inputs, and
PyTorch's error texts."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg

NAN = float("nan")

INT_DTYPES = [(fg.int8, np.int8), (fg.uint8, np.uint8), (fg.int16, np.int16),
              (fg.int32, np.int32), (fg.int64, np.int64)]
FLOAT_DTYPES = [(fg.float32, np.float32), (fg.float64, np.float64)]


def bisect_ref(row, v, right):
    """PyTorch's bisection: right while not row[mid] >= v (> v with ``right``)."""
    lo, hi = 0, len(row)
    while lo < hi:
        mid = (lo + hi) // 2
        if (row[mid] > v) if right else (row[mid] >= v):
            hi = mid
        else:
            lo = mid + 1
    return lo


@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES + FLOAT_DTYPES)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_matches_numpy_on_sorted_rows(dtype, np_dtype, right):
    rng = np.random.default_rng(3)
    seq = np.sort(rng.integers(0, 50, 40)).astype(np_dtype)
    vals = rng.integers(-5, 55, (3, 7)).astype(np_dtype)
    got = fg.searchsorted(fg.tensor(seq, dtype=dtype), fg.tensor(vals, dtype=dtype), right=right)
    side = "right" if right else "left"
    assert got.dtype == fg.int64
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, vals, side))
    got32 = fg.bucketize(fg.tensor(vals, dtype=dtype), fg.tensor(seq, dtype=dtype), right=right,
                         out_int32=True)
    assert got32.dtype == fg.int32
    np.testing.assert_array_equal(got32.numpy(), np.searchsorted(seq, vals, side))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_batched_rows_unsorted_and_nan(right):
    rng = np.random.default_rng(4)
    seq = rng.standard_normal((2, 3, 9))
    seq[0, 1, 4] = NAN
    seq[1, 2] = np.sort(seq[1, 2])
    vals = rng.standard_normal((2, 3, 5))
    vals[1, 0, 2] = NAN
    got = fg.searchsorted(fg.tensor(seq), fg.tensor(vals), right=right).numpy()
    want = np.array([[[bisect_ref(seq[i, j].tolist(), v, right) for v in vals[i, j].tolist()]
                      for j in range(3)] for i in range(2)])
    np.testing.assert_array_equal(got, want)


def test_searchsorted_strided_values_and_empty_shapes():
    seq = fg.tensor([0.0, 1.0, 2.0, 3.0])
    vals = fg.tensor([[0.5, 2.5], [1.5, 3.5], [-1.0, 9.0]]).t()
    assert fg.searchsorted(seq, vals).tolist() == [[1, 2, 0], [3, 4, 4]]
    assert fg.searchsorted(seq, fg.tensor(1.5)).tolist() == 2
    assert fg.searchsorted(fg.zeros(0), fg.ones(3)).tolist() == [0, 0, 0]
    assert fg.searchsorted(seq, fg.ones(0)).shape == (0,)
    assert fg.searchsorted(fg.zeros(2, 0), fg.ones(2, 3)).tolist() == [[0] * 3] * 2


def test_searchsorted_batched_shape_mismatch_words():
    with pytest.raises(RuntimeError, match=r"first N-1 dimensions of boundaries tensor and "
                       r"input value tensor must match, but we got boundaries tensor \[2, 4\] "
                       r"and input value tensor \[3, 1\]"):
        fg.searchsorted(fg.zeros(2, 4), fg.zeros(3, 1))


def histc_ref(x, bins, lo, hi):
    """PyTorch's histc in the input's dtype: the bin (x - lo) / (hi - lo) * bins,
    truncated, the top edge in the last bin, values outside [lo, hi] dropped."""
    t = x.dtype.type
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    out = np.zeros(bins, dtype=x.dtype)
    for v in x.reshape(-1):
        if t(lo) <= v <= t(hi):
            b = int((v - t(lo)) / (t(hi) - t(lo)) * t(bins))
            out[min(max(b, 0), bins - 1)] += 1
    return out


@pytest.mark.parametrize("dtype,np_dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("bins,lo,hi", [(4, -1.0, 1.0), (7, 0.0, 0.0), (3, 0.25, 0.5), (1, -2.0, 2.0)])
def test_histc_counts_as_pytorch(dtype, np_dtype, bins, lo, hi):
    rng = np.random.default_rng(5)
    x = rng.uniform(-1.5, 1.5, (4, 9)).astype(np_dtype)
    # The edges, and a NaN (not counted) unless the range is the data's.
    x[0, :3] = [-1.0, 1.0, NAN if lo != hi else 0.0]
    got = fg.histc(fg.tensor(x, dtype=dtype).t(), bins, lo, hi)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), histc_ref(x, bins, lo, hi))


def test_histc_flat_and_empty_ranges_and_errors():
    assert fg.histc(fg.tensor([2.0, 2.0]), 4).tolist() == [0.0, 0.0, 2.0, 0.0]
    assert fg.histc(fg.zeros(0), 2).tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match=r"torch.histc: range of \[nan, nan\] is not finite"):
        fg.histc(fg.tensor([0.5, NAN]), 4)
    with pytest.raises(RuntimeError, match=r"torch.histc: range of \[0.5, inf\] is not finite"):
        fg.histc(fg.tensor([0.5, float("inf")], dtype=fg.float64), 4)


def test_bincount_matches_numpy():
    rng = np.random.default_rng(6)
    x = rng.integers(0, 9, 30)
    assert fg.bincount(fg.tensor(x)).tolist() == np.bincount(x).tolist()
    assert fg.bincount(fg.tensor(x), minlength=20).tolist() == np.bincount(x, minlength=20).tolist()
    assert fg.bincount(fg.tensor(x[::3].copy())).dtype == fg.int64
    assert fg.bincount(fg.zeros(0, dtype=fg.int64)).shape == (0,)
    assert fg.bincount(fg.zeros(0, dtype=fg.int64), minlength=3).tolist() == [0, 0, 0]
    strided = fg.tensor(x.reshape(5, 6)).t()[1]
    assert fg.bincount(strided).tolist() == np.bincount(x.reshape(5, 6)[:, 1]).tolist()


def test_bincount_errors():
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral"):
        fg.bincount(fg.tensor([3, -1]))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        fg.bincount(fg.tensor([3, 1]), minlength=-1)
    with pytest.raises(RuntimeError, match="you tried to allocate 80000000000 bytes"):
        fg.bincount(fg.tensor([9_999_999_999]))


@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES + FLOAT_DTYPES)
@pytest.mark.parametrize("n_test", [3, 40])
@pytest.mark.parametrize("invert", [False, True])
def test_isin_matches_numpy(dtype, np_dtype, n_test, invert):
    rng = np.random.default_rng(7)
    a = rng.integers(0, 60, (4, 6)).astype(np_dtype)
    b = rng.integers(0, 60, n_test).astype(np_dtype)
    got = fg.isin(fg.tensor(a, dtype=dtype).t(), fg.tensor(b, dtype=dtype), invert=invert)
    assert got.dtype == fg.bool
    np.testing.assert_array_equal(got.numpy(), np.isin(a.T, b, invert=invert))


@pytest.mark.parametrize("n_test", [2, 30])
def test_isin_nan_matches_nothing_and_signed_zeros_match(n_test):
    b = np.concatenate([[NAN, -0.0], np.arange(1.0, n_test - 1)])
    a = np.array([NAN, 0.0, -0.0, 1.0, 0.5])
    got = fg.isin(fg.tensor(a), fg.tensor(b)).tolist()
    assert got == [False, True, True, n_test > 2, False]
    bools = fg.isin(fg.tensor([True, False]), fg.tensor([False])).tolist()
    assert bools == [False, True]

"""Type promotion for every pair of the ten dtypes.

The expected table is written out by hand from PyTorch's documented rules
(the "Type Promotion" section of the tensor attributes page and
``torch.promote_types``): categories bool < integer < floating; within a
category the wider type; uint8 with int8 is int16 (the narrowest type that
holds both); float16 with bfloat16 is float32. Zero-dimensional tensors and
Python numbers only count when they are of a higher category than the
dimensioned operands (``torch.result_type``).
"""

import itertools

import pytest

import ferrograd as torch

B, U8, I8, I16, I32, I64 = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
                            torch.int64)  # fmt: skip
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
ALL = [B, U8, I8, I16, I32, I64, F16, BF16, F32, F64]

# Row a, column b: promote_types(a, b), in the order of ALL.
TABLE = [
    [B, U8, I8, I16, I32, I64, F16, BF16, F32, F64],
    [U8, U8, I16, I16, I32, I64, F16, BF16, F32, F64],
    [I8, I16, I8, I16, I32, I64, F16, BF16, F32, F64],
    [I16, I16, I16, I16, I32, I64, F16, BF16, F32, F64],
    [I32, I32, I32, I32, I32, I64, F16, BF16, F32, F64],
    [I64, I64, I64, I64, I64, I64, F16, BF16, F32, F64],
    [F16, F16, F16, F16, F16, F16, F16, F32, F32, F64],
    [BF16, BF16, BF16, BF16, BF16, BF16, F32, BF16, F32, F64],
    [F32, F32, F32, F32, F32, F32, F32, F32, F32, F64],
    [F64, F64, F64, F64, F64, F64, F64, F64, F64, F64],
]
PAIRS = [(ALL[i], ALL[j], TABLE[i][j]) for i, j in itertools.product(range(10), range(10))]
CATEGORY = {B: 0, U8: 1, I8: 1, I16: 1, I32: 1, I64: 1, F16: 2, BF16: 2, F32: 2, F64: 2}


def name(d):
    return str(d).rsplit(".", 1)[-1]


def test_the_table_is_symmetric():
    for i, j in itertools.product(range(10), range(10)):
        assert TABLE[i][j] == TABLE[j][i]


@pytest.mark.parametrize("a,b,want", PAIRS, ids=lambda v: name(v))
def test_promote_types(a, b, want):
    assert torch.promote_types(a, b) == want


@pytest.mark.parametrize("a,b,want", PAIRS, ids=lambda v: name(v))
def test_dimensioned_tensors(a, b, want):
    x, y = torch.ones(2, dtype=a), torch.ones(2, dtype=b)
    assert torch.result_type(x, y) == want
    # Both zero-dimensional: the same table.
    assert torch.result_type(torch.ones((), dtype=a), torch.ones((), dtype=b)) == want
    # The arithmetic itself agrees (subtraction refuses bool, so add; bool +
    # bool stays bool).
    assert (x + y).dtype == want
    assert (x * y).dtype == want


@pytest.mark.parametrize("a,b,want", PAIRS, ids=lambda v: name(v))
def test_a_zero_dim_operand_counts_only_from_a_higher_category(a, b, want):
    dim, zero = torch.ones(3, dtype=a), torch.ones((), dtype=b)
    expect = b if CATEGORY[b] > CATEGORY[a] else a
    assert torch.result_type(dim, zero) == expect
    assert torch.result_type(zero, dim) == expect
    assert (dim * zero).dtype == expect
    assert (zero * dim).dtype == expect


@pytest.mark.parametrize("a", ALL, ids=name)
def test_python_numbers(a):
    t = torch.ones(2, dtype=a)
    # bool never promotes; an int lifts only bool (to int64); a float lifts
    # bool and integers to the default dtype.
    assert torch.result_type(t, True) == a
    assert torch.result_type(t, 3) == (I64 if a == B else a)
    assert torch.result_type(t, 2.5) == (a if CATEGORY[a] == 2 else F32)
    assert torch.result_type(2.5, t) == (a if CATEGORY[a] == 2 else F32)
    assert (t * 3).dtype == (I64 if a == B else a)
    assert (t * 2.5).dtype == (a if CATEGORY[a] == 2 else F32)


def test_python_floats_follow_the_default_dtype():
    t = torch.ones(2, dtype=torch.int32)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.result_type(t, 2.5) == F64
        assert (t * 2.5).dtype == F64
        assert torch.result_type(1, 2.5) == F64
    finally:
        torch.set_default_dtype(prev)


def test_two_numbers():
    assert torch.result_type(1, 2) == I64
    assert torch.result_type(True, False) == B
    assert torch.result_type(True, 2) == I64
    assert torch.result_type(1, 2.0) == F32


@pytest.mark.parametrize("a,b", list(itertools.product(ALL, ALL)), ids=lambda v: name(v))
def test_can_cast_never_goes_down_a_category(a, b):
    assert torch.can_cast(a, b) == (CATEGORY[a] <= CATEGORY[b])


def test_bad_arguments():
    with pytest.raises(TypeError, match="must be torch.dtype"):
        torch.promote_types(torch.float32, "float32")
    with pytest.raises(TypeError, match="must be Tensor or Number"):
        torch.result_type(torch.ones(1), "x")


def test_set_default_dtype_takes_floating_types_only():
    prev = torch.get_default_dtype()
    try:
        for d in (F16, BF16, F64, F32):
            torch.set_default_dtype(d)
            assert torch.get_default_dtype() == d
            assert torch.tensor([1.5]).dtype == d
            assert (torch.tensor([1, 2]) / 2).dtype == d
    finally:
        torch.set_default_dtype(prev)
    for d in (B, U8, I8, I16, I32, I64):
        with pytest.raises(TypeError, match="only floating-point types are supported as the default"):
            torch.set_default_dtype(d)

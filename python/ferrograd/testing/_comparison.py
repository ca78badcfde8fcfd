"""``assert_close``: PyTorch's comparison of tensors, numbers, sequences and mappings."""

from __future__ import annotations

import collections.abc
import math

import numpy as np

__all__ = ["assert_close"]

# (rtol, atol) per dtype name, PyTorch's table; dtypes not listed compare exactly.
_DTYPE_PRECISIONS = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def _fg():
    import ferrograd

    return ferrograd


class _ErrorMeta(Exception):
    """A failed comparison: the exception type to raise and its message, plus the
    path (``[1]['a']``) of the item inside nested sequences and mappings."""

    def __init__(self, type_, msg, path=()):
        super().__init__(msg)
        self.type = type_
        self.msg = msg
        self.path = path

    def to_error(self, msg=None):
        if msg is None or callable(msg):
            text = self.msg
            if self.path:
                text += "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in self.path)
            if callable(msg):
                text = msg(text)
        else:
            text = msg
        return self.type(text)


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _default_tolerances(*dtypes):
    rtols, atols = zip(*(_DTYPE_PRECISIONS.get(_dtype_name(d), (0.0, 0.0)) for d in dtypes))
    return max(rtols), max(atols)


def _get_tolerances(*dtypes, rtol, atol):
    if (rtol is None) ^ (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise _ErrorMeta(
            ValueError,
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.",
        )
    if rtol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _unravel(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _diff_line(kind, diff, idx, tol):
    line = f"{kind.title()} difference: {diff}" if idx is None else (
        f"Greatest {kind} difference: {diff} at index {idx}"
    )
    if tol > 0:
        line += f" (up to {tol} allowed)"
    return line + "\n"


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += _diff_line("absolute", abs_diff, abs_idx, atol)
    msg += _diff_line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


# --- numbers --------------------------------------------------------------------------


def _is_number(x):
    return isinstance(x, (bool, int, float, complex, np.number, np.bool_))


def _number_dtype(x):
    fg = _fg()
    if isinstance(x, (bool, np.bool_)):
        return fg.bool
    if isinstance(x, (int, np.integer)):
        return fg.int64
    return fg.float64


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _ErrorMeta(
            AssertionError,
            f"The (d)types do not match: {type(actual)} != {type(expected)}.",
        )
    rtol, atol = _get_tolerances(_number_dtype(actual), _number_dtype(expected), rtol=rtol, atol=atol)
    if actual == expected:
        return
    if equal_nan and _isnan(actual) and _isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if not (math.isinf(abs_diff) or _isnan(abs_diff)) and abs_diff <= atol + rtol * abs(expected):
        return
    rel_diff = abs_diff / abs(expected) if expected != 0 else float("inf")
    raise _ErrorMeta(
        AssertionError,
        _mismatch_msg(
            "Scalars", f"Expected {expected} but got {actual}.",
            abs_diff, None, atol, rel_diff, None, rtol,
        ),
    )


def _isnan(x):
    try:
        return math.isnan(x)
    except TypeError:
        return False


# --- tensors --------------------------------------------------------------------------


def _is_tensor(x):
    return isinstance(x, _fg().Tensor)


def _as_tensor_pair(actual, expected):
    """Turns a NumPy array (or a number paired with a tensor) into a tensor, so
    both sides are tensors; anything else is a type error."""
    fg = _fg()

    def conv(x, other):
        if _is_tensor(x):
            return x
        if isinstance(x, np.ndarray):
            return fg.tensor(x)
        if _is_number(x) and _is_tensor(other):
            return fg.tensor(x)
        raise _ErrorMeta(
            TypeError,
            f"No comparison pair was able to handle inputs of type {type(actual)} "
            f"and {type(expected)}.",
        )

    return conv(actual, expected), conv(expected, actual)


def _compare_tensors(actual, expected, *, rtol, atol, equal_nan, check_device, check_dtype,
                     check_layout, check_stride):
    if tuple(actual.shape) != tuple(expected.shape):
        raise _ErrorMeta(
            AssertionError,
            f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}.",
        )
    if check_device and str(actual.device) != str(expected.device):
        raise _ErrorMeta(
            AssertionError,
            f"The values for attribute 'device' do not match: {actual.device} != {expected.device}.",
        )
    if check_dtype and actual.dtype != expected.dtype:
        raise _ErrorMeta(
            AssertionError,
            f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.",
        )
    if check_layout and getattr(actual, "layout", None) != getattr(expected, "layout", None):
        raise _ErrorMeta(
            AssertionError,
            f"The values for attribute 'layout' do not match: {actual.layout} != {expected.layout}.",
        )
    if check_stride and tuple(actual.stride()) != tuple(expected.stride()):
        raise _ErrorMeta(
            AssertionError,
            f"The values for attribute 'stride()' do not match: {actual.stride()} != "
            f"{expected.stride()}.",
        )
    rtol, atol = _get_tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol)

    a = np.asarray(actual.detach().numpy())
    e = np.asarray(expected.detach().numpy())
    if a.dtype != e.dtype:
        common = np.promote_types(a.dtype, e.dtype)
        a, e = a.astype(common), e.astype(common)
    if a.dtype.kind in "biu":
        # Differences of integers must not wrap (or be booleans).
        a, e = a.astype(np.int64), e.astype(np.int64)
        matches = a == e
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            matches = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if matches.all():
        return

    n = matches.size
    mismatches = n - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    a_flat, e_flat, m_flat = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(a_flat - e_flat)
        abs_diff[m_flat] = 0
        rel_diff = abs_diff / np.abs(e_flat)
        rel_diff[m_flat] = 0
    # NaN wins, as torch.max picks it.
    abs_i = int(np.argmax(np.isnan(abs_diff))) if np.isnan(abs_diff).any() else int(np.argmax(abs_diff))
    rel_i = int(np.argmax(np.isnan(rel_diff))) if np.isnan(rel_diff).any() else int(np.argmax(rel_diff))
    shape = tuple(matches.shape)
    abs_v, rel_v = abs_diff[abs_i].item(), rel_diff[rel_i].item()
    raise _ErrorMeta(
        AssertionError,
        _mismatch_msg(
            "Tensor-likes", extra, abs_v, _unravel(abs_i, shape), atol,
            rel_v, _unravel(rel_i, shape), rtol,
        ),
    )


# --- containers -----------------------------------------------------------------------


def _compare(actual, expected, path, opts):
    try:
        _compare_leaf_or_container(actual, expected, path, opts)
    except _ErrorMeta as err:
        if not err.path:
            err.path = path
        raise


def _compare_leaf_or_container(actual, expected, path, opts):
    is_seq = lambda x: (  # noqa: E731
        isinstance(x, collections.abc.Sequence) and not isinstance(x, str) and not _is_tensor(x)
    )
    if is_seq(actual) and is_seq(expected):
        if len(actual) != len(expected):
            raise _ErrorMeta(
                AssertionError,
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                path,
            )
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, path + (i,), opts)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        a_keys, e_keys = set(actual.keys()), set(expected.keys())
        if a_keys != e_keys:
            missing = e_keys - a_keys
            extra = a_keys - e_keys
            msg = "The keys of the mappings do not match:\n"
            if missing:
                msg += f"Missing keys in the actual mapping: {sorted(missing, key=repr)}\n"
            if extra:
                msg += f"Extra keys in the actual mapping: {sorted(extra, key=repr)}\n"
            raise _ErrorMeta(AssertionError, msg.strip(), path)
        keys = list(actual.keys())
        try:
            keys = sorted(keys)
        except TypeError:
            pass
        for k in keys:
            _compare(actual[k], expected[k], path + (k,), opts)
        return
    if _is_number(actual) and _is_number(expected):
        _compare_numbers(
            actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"], opts["check_dtype"]
        )
        return
    if actual is None and expected is None:
        return
    a, e = _as_tensor_pair(actual, expected)
    _compare_tensors(a, e, **opts)


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses=True,
    rtol=None,
    atol=None,
    equal_nan=False,
    check_device=True,
    check_dtype=True,
    check_layout=True,
    check_stride=False,
    msg=None,
):
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors (and NumPy arrays) must agree in shape and, unless switched off, device,
    dtype and layout; values pass when ``|actual - expected| <= atol + rtol * |expected|``
    elementwise. Without ``rtol``/``atol`` the dtype's defaults are used (float32
    ``1.3e-6``/``1e-5``, float64 ``1e-7``/``1e-7``, exact for integers and bools).
    Python numbers, sequences and mappings are compared item by item. On failure an
    ``AssertionError`` reports the number of mismatched elements and the greatest
    absolute and relative differences with their indices; ``msg`` (a string, or a
    callable taking the generated message) replaces that message.
    """
    del allow_subclasses  # Tensor subclasses (Parameter) always compare as tensors.
    opts = dict(
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        check_device=check_device,
        check_dtype=check_dtype,
        check_layout=check_layout,
        check_stride=check_stride,
    )
    try:
        _compare(actual, expected, (), opts)
    except _ErrorMeta as err:
        raise err.to_error(msg) from None

"""PyTorch-compatible ``repr`` for ferrograd tensors.

The goal is that a ferrograd tensor prints character for character like the
equivalent ``torch.Tensor``, so users can diff outputs against PyTorch and reuse
doctests.  The rules below follow PyTorch's observable behaviour (recent 2.x
releases), including its quirks, which are pointed out where they look like bugs.

Everything works on plain numpy arrays; the native ``Tensor.__repr__`` calls
:func:`_repr`, which pulls the values out and delegates to :func:`tensor_repr`.
"""

from __future__ import annotations

import contextlib
import math
import types
from typing import Any, NamedTuple

import numpy as np

__all__ = ["get_printoptions", "printoptions", "set_printoptions", "tensor_repr"]


_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
# A namespace rather than a dataclass so the module also works when loaded by
# file path without being registered in sys.modules (as the tests do).
PRINT_OPTS = types.SimpleNamespace(**_DEFAULTS)

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(
    precision=None,
    threshold=None,
    edgeitems=None,
    linewidth=None,
    profile=None,
    sci_mode=None,
):
    """Set global print options; same arguments and semantics as ``torch.set_printoptions``.

    As in PyTorch, a profile is applied first and explicit arguments override it,
    an unknown profile name is ignored, and ``sci_mode`` is always assigned, so any
    call without ``sci_mode=`` goes back to automatic scientific notation.
    """
    if profile is not None:
        for name, value in _PROFILES.get(profile, {}).items():
            setattr(PRINT_OPTS, name, value)
    for name, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Current options as a dict that can be passed back as ``set_printoptions(**opts)``."""
    return dict(vars(PRINT_OPTS))


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change print options (like ``torch._tensor_str.printoptions``)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Picks one notation and one column width for every element of a tensor.

    PyTorch decides from the values that will actually be shown (the summary when
    the tensor is elided) and right-aligns all elements to a common width.
    """

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not self.floating:
            for v in values.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return

        # Zeros, nans and infs carry no magnitude information, so PyTorch ignores
        # them both when choosing the notation and when measuring the width (that
        # is why `tensor([nan, inf, 1.])` has no padding).
        shown = values[np.isfinite(values) & (values != 0)]
        if shown.size == 0:
            # PyTorch returns early here, so even a forced sci_mode has no effect.
            return
        # Python floats: a float32 widens exactly to double, which is what
        # PyTorch formats (via .item()), so rounding matches (13.333333f -> 13.3333).
        shown_list = shown.tolist()
        mags = [abs(v) for v in shown_list]
        lo, hi = min(mags), max(mags)
        self.int_mode = all(v == math.ceil(v) for v in shown_list)
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode

        if self.sci_mode:
            spec, extra = f".{PRINT_OPTS.precision}e", 0
        elif self.int_mode:
            # Integral floats print as "3." - the trailing dot is not in the
            # measured text, hence the +1.
            spec, extra = ".0f", 1
        else:
            spec, extra = f".{PRINT_OPTS.precision}f", 0
        for v in shown_list:
            self.max_width = max(self.max_width, len(format(v, spec)) + extra)

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = format(value, f"{self.max_width}.{PRINT_OPTS.precision}e")
        elif self.int_mode:
            text = format(value, ".0f")
            if math.isfinite(value):
                text += "."
        else:
            text = format(value, f".{PRINT_OPTS.precision}f")
        return text.rjust(self.max_width)


def _summarized_values(arr: np.ndarray) -> np.ndarray:
    """Flat array of the elements that survive elision (what the formatter measures)."""
    edge = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr.reshape(-1)
    if arr.ndim == 1:
        if arr.shape[0] > 2 * edge:
            # With edge == 0 `arr[-0:]` is the whole row; PyTorch behaves the same.
            return np.concatenate((arr[:edge], arr[-edge:]))
        return arr
    if not edge:
        return arr.reshape(-1)[:0]
    n = arr.shape[0]
    rows = range(n) if n <= 2 * edge else [*range(edge), *range(n - edge, n)]
    return np.concatenate([_summarized_values(arr[i]).reshape(-1) for i in rows])


def _vector_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    edge = PRINT_OPTS.edgeitems
    # Every element takes width + len(", "); wrap so that lines fit the linewidth.
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2)))
    if summarize and not edge:
        items = ["..."]
    elif summarize and arr.shape[0] > 2 * edge:
        # " ..." joined with ", " yields the characteristic ",  ..., ".
        items = [fmt.format(v) for v in arr[:edge].tolist()]
        items.append(" ...")
        items += [fmt.format(v) for v in arr[-edge:].tolist()]
    else:
        items = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    edge = PRINT_OPTS.edgeitems
    n = arr.shape[0]
    if summarize and n > 2 * edge:
        parts = [_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(edge)]
        parts.append("...")
        parts += [_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(n - edge, n)]
    else:
        parts = [_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    # One blank line between blocks per extra dimension, as NumPy and PyTorch do.
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _tensor_str(arr: np.ndarray, indent: int) -> str:
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    fmt = _Formatter(_summarized_values(arr) if summarize else arr.reshape(-1))
    return _nested_str(arr, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    # PyTorch's estimate of the last line's length is 2 too large when there is no
    # newline (rfind gives -1) and 1 too large otherwise; kept so wrapping matches.
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


class _Empty(NamedTuple):
    """What :func:`tensor_repr` reads of an empty tensor: its shape and dtype."""

    shape: tuple
    dtype: np.dtype


# A NumPy dtype of the same kind for each tensor dtype ("f" for the floating ones
# decides whether an empty tensor's default dtype is left implicit).
_NP_KIND = {"bool": "?", "uint8": "u1", "int8": "i1", "int16": "i2", "int32": "i4",
            "int64": "i8", "float16": "f2", "bfloat16": "f4", "float32": "f4", "float64": "f8"}


def tensor_repr(
    arr,
    *,
    dtype_name: str,
    is_default_dtype: bool,
    requires_grad: bool = False,
    grad_fn_name: str | None = None,
    prefix: str = "tensor(",
) -> str:
    """Format ``arr`` exactly like PyTorch's ``repr(tensor)``.

    ``is_default_dtype`` must be True for the dtypes PyTorch leaves implicit (the
    default float dtype, int64 and bool).  For empty tensors PyTorch only omits
    the default *float* dtype, since an empty ``[]`` would otherwise read as
    float; that is derived here from ``arr.dtype``.
    """
    empty = isinstance(arr, _Empty)
    if not empty:
        arr = np.asarray(arr)
    indent = len(prefix)
    suffixes = []
    if empty or arr.size == 0:
        # Like NumPy, the shape is implied only for the 1-D case.
        if len(arr.shape) != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if not (is_default_dtype and arr.dtype.kind == "f"):
            suffixes.append(f"dtype={dtype_name}")
        body = "[]"
    else:
        # With edgeitems=0 nothing is shown, so the shape is the only information left.
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(arr.shape)}")
        if not is_default_dtype:
            suffixes.append(f"dtype={dtype_name}")
        body = _tensor_str(arr, indent)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


_FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")


def _default_float_name() -> str:
    # PyTorch hides whichever float dtype is the default; follow ferrograd's
    # get_default_dtype() if the package has one, else the usual float32.
    try:
        import ferrograd

        name = str(ferrograd.get_default_dtype()).rsplit(".", 1)[-1]
    except Exception:
        return "float32"
    return name if name in _FLOAT_NAMES else "float32"


def _repr(t) -> str:
    """Backend for the native ``Tensor.__repr__``; never raises."""
    dtype_name = str(getattr(t, "dtype", "?"))
    short = dtype_name.rsplit(".", 1)[-1]
    is_default = short in ("int64", "bool", _default_float_name())

    try:
        grad_fn = t.grad_fn
    except Exception:
        # Same marker PyTorch prints when grad_fn cannot be computed.
        grad_fn, grad_fn_name = None, "Invalid"
    else:
        grad_fn_name = None
    if grad_fn is not None:
        try:
            grad_fn_name = str(grad_fn.name())
        except Exception:
            grad_fn_name = type(grad_fn).__name__
        # C++ node names can be namespaced ("torch::autograd::AccumulateGrad").
        grad_fn_name = grad_fn_name.rsplit("::", 1)[-1]
    requires_grad = bool(getattr(t, "requires_grad", False))

    try:
        numel = getattr(t, "numel", None)
        if numel is not None and numel() == 0:
            # No values to format: NumPy is not asked, since it refuses some
            # empty shapes that tensors allow (`[2**61, 0]` is "too big" for it).
            arr = _Empty(tuple(t.shape), np.dtype(_NP_KIND.get(short, "f4")))
        else:
            d = t.detach()
            # NumPy has no bfloat16: its values widen to float32 exactly.
            arr = np.asarray((d.float() if short == "bfloat16" else d).numpy())
    except Exception as exc:
        # A repr that raises hides the original error in tracebacks and debuggers.
        body = f"tensor(<unavailable: {type(exc).__name__}: {exc}>"
        return _add_suffixes(body, [f"dtype={dtype_name}"], len("tensor("))
    return tensor_repr(
        arr,
        dtype_name=dtype_name,
        is_default_dtype=is_default,
        requires_grad=requires_grad,
        grad_fn_name=grad_fn_name,
    )

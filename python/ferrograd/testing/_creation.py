"""``make_tensor``: a random tensor of a given shape and dtype, as in ``torch.testing``."""

from __future__ import annotations

import math

__all__ = ["make_tensor"]


def make_tensor(
    *shape,
    dtype,
    device=None,
    low=None,
    high=None,
    requires_grad=False,
    noncontiguous=False,
    exclude_zero=False,
    memory_format=None,
):
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``.

    ``shape`` is given as integers or one sequence. Floating dtypes default to
    ``[-9, 9)``, integers to ``[-9, 10)`` and booleans draw ``False``/``True``;
    ``low``/``high`` are clamped to the dtype's range. Draws come from ferrograd's
    global generator, so ``ferrograd.manual_seed`` makes them reproducible.
    ``noncontiguous=True`` returns a strided view with the same values' distribution,
    ``exclude_zero=True`` replaces zeros by the dtype's smallest positive value (1 for
    integers, True for bool), and ``requires_grad`` is only allowed for floating dtypes.
    """
    import ferrograd as fg

    del memory_format  # ferrograd tensors have one (strided, row-major) memory format.
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if device is not None and str(device) != "cpu":
        raise RuntimeError(f"make_tensor: device {device!r} is not available (only 'cpu').")
    floating = dtype in (fg.float32, fg.float64)
    if requires_grad and not floating:
        raise ValueError(f"make_tensor: requires_grad=True is not supported for {dtype}.")
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low is not None and high is not None and low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")

    gen_shape = shape[:-1] + (shape[-1] * 2,) if noncontiguous and shape else shape
    if dtype == fg.bool:
        t = fg.randint(0, 2, gen_shape, dtype=fg.int64).to(fg.bool)
    elif floating:
        info = fg.finfo(dtype)
        lo = -9.0 if low is None else max(float(low), float(info.min))
        hi = 9.0 if high is None else min(float(high), float(info.max))
        t = fg.empty(gen_shape, dtype=dtype)
        if lo == hi:
            t.fill_(lo)
        else:
            t.uniform_(lo, hi)
    else:
        lo = -9 if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high)
        if lo == hi:
            t = fg.full(gen_shape, lo, dtype=dtype)
        else:
            t = fg.randint(lo, hi, gen_shape, dtype=dtype)
    if noncontiguous and shape and t.numel() > 1:
        t = t[..., ::2]
    elif noncontiguous and shape:
        t = t[..., :shape[-1]]
    if exclude_zero:
        if dtype == fg.bool:
            replacement = True
        elif floating:
            replacement = fg.finfo(dtype).tiny
        else:
            replacement = 1
        t = fg.where(t == 0, fg.full((), replacement, dtype=dtype), t)
    if requires_grad:
        t = t.detach().requires_grad_(True)
    return t

"""Convolution, pooling, padding, unfold/fold and interpolation (``nn.functional``).

These normalise PyTorch's arguments (an int or a tuple, ``'same'``/``'valid'``
padding, unbatched inputs) and call one Rust op each; kernels and backward
rules live in ``src/ops/conv.rs`` and ``src/ops/pool.rs``.
"""

from __future__ import annotations

import functools
import math

from ... import _C

__all__ = [
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "max_pool1d",
    "max_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "pad",
    "unfold",
    "fold",
    "interpolate",
]


def _tuple(v, n, name="argument"):
    """An int or a sequence of ``n`` ints as a list of ``n`` ints."""
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an int or a tuple of {n} ints, not bool")
    if isinstance(v, int):
        return [v] * n
    try:
        out = [int(x) for x in v]
    except TypeError:
        raise TypeError(
            f"{name} must be an int or a tuple of {n} ints, not {type(v).__name__}"
        ) from None
    if len(out) == 1:
        return out * n
    if len(out) != n:
        raise RuntimeError(f"{name} must be an int or a tuple of {n} ints, but got {tuple(out)}")
    return out


def _check_tensor(input, name="input"):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"{name} must be a Tensor, not {type(input).__name__}")


# ----- convolution ---------------------------------------------------------------------------


def _conv(input, weight, bias, stride, padding, dilation, groups, sd):
    if any(hasattr(type(t), "__ferrograd_function__") for t in (input, weight, bias)):
        from ...func._rules import conv_rule

        return conv_rule(_conv, input, weight, bias, stride, padding, dilation, groups, sd)
    _check_tensor(input)
    _check_tensor(weight, "weight")
    name = f"conv{sd}d"
    if input.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"Expected {sd + 1}D (unbatched) or {sd + 2}D (batched) input to {name}, "
            f"but got input of size: {list(input.shape)}"
        )
    if weight.dim() != sd + 2:
        raise RuntimeError(
            f"Expected {sd + 2}-dimensional weight for {name}, but got weight of size "
            f"{list(weight.shape)}"
        )
    unbatched = input.dim() == sd + 1
    if unbatched:
        input = input.unsqueeze(0)
    stride = _tuple(stride, sd, "stride")
    dilation = _tuple(dilation, sd, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0] * sd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            kernel = list(weight.shape[2:])
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            padding = [t // 2 for t in total]
            extra = [t - 2 * p for t, p in zip(total, padding)]
            if any(extra):
                # An odd total padding: the extra element goes after, as in PyTorch.
                pads = []
                for e in reversed(extra):
                    pads += [0, e]
                input = _C.constant_pad_nd(input, pads, 0.0)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _tuple(padding, sd, "padding")
    out = _C.convolution(input, weight, bias, stride, padding, dilation, False, [0] * sd, groups)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution of ``input`` ``(N, C, L)`` or ``(C, L)`` with ``weight``
    ``(O, C/groups, K)``; ``padding`` may be an int, a tuple, ``'valid'`` or ``'same'``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution of ``input`` ``(N, C, H, W)`` or ``(C, H, W)`` with ``weight``
    ``(O, C/groups, kH, kW)``; ``padding`` may be an int, a tuple, ``'valid'`` or ``'same'``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, sd):
    _check_tensor(input)
    _check_tensor(weight, "weight")
    name = f"conv_transpose{sd}d"
    if input.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"Expected {sd + 1}D (unbatched) or {sd + 2}D (batched) input to {name}, "
            f"but got input of size: {list(input.shape)}"
        )
    if weight.dim() != sd + 2:
        raise RuntimeError(
            f"Expected {sd + 2}-dimensional weight for {name}, but got weight of size "
            f"{list(weight.shape)}"
        )
    unbatched = input.dim() == sd + 1
    if unbatched:
        input = input.unsqueeze(0)
    out = _C.convolution(
        input,
        weight,
        bias,
        _tuple(stride, sd, "stride"),
        _tuple(padding, sd, "padding"),
        _tuple(dilation, sd, "dilation"),
        True,
        _tuple(output_padding, sd, "output_padding"),
        groups,
    )
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """1-d transposed convolution (the gradient of ``conv1d`` with respect to its
    input); ``weight`` is ``(C_in, C_out/groups, K)``."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """2-d transposed convolution (the gradient of ``conv2d`` with respect to its
    input); ``weight`` is ``(C_in, C_out/groups, kH, kW)``."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2
    )


# ----- pooling -------------------------------------------------------------------------------


def _stride(stride, kernel_size, n):
    if stride is None or (not isinstance(stride, int) and len(stride) == 0):
        return _tuple(kernel_size, n, "kernel_size")
    return _tuple(stride, n, "stride")


def max_pool2d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True
):
    """``max_pool2d`` returning ``(output, indices)``; indices are flat positions in
    each input plane."""
    _check_tensor(input)
    return _C.max_pool2d_with_indices(
        input,
        _tuple(kernel_size, 2, "kernel_size"),
        _stride(stride, kernel_size, 2),
        _tuple(padding, 2, "padding"),
        _tuple(dilation, 2, "dilation"),
        bool(ceil_mode),
    )


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """2-d max pooling over ``(N, C, H, W)`` or ``(C, H, W)``; with ``return_indices``
    also the flat in-plane position of each maximum."""
    out, idx = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def _check_1d(input, name):
    _check_tensor(input)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
            f"for input, but got: {list(input.shape)}"
        )


def max_pool1d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True
):
    """``max_pool1d`` returning ``(output, indices)``."""
    _check_1d(input, "max_pool1d")
    out, idx = _C.max_pool2d_with_indices(
        input.unsqueeze(-2),
        [1, *_tuple(kernel_size, 1, "kernel_size")],
        [1, *_stride(stride, kernel_size, 1)],
        [0, *_tuple(padding, 1, "padding")],
        [1, *_tuple(dilation, 1, "dilation")],
        bool(ceil_mode),
    )
    return out.squeeze(-2), idx.squeeze(-2)


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """1-d max pooling over ``(N, C, L)`` or ``(C, L)``."""
    out, idx = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """2-d average pooling; ``count_include_pad`` counts padding in the divisor,
    ``divisor_override`` replaces it."""
    _check_tensor(input)
    return _C.avg_pool2d(
        input,
        _tuple(kernel_size, 2, "kernel_size"),
        _stride(stride, kernel_size, 2),
        _tuple(padding, 2, "padding"),
        bool(ceil_mode),
        bool(count_include_pad),
        None if divisor_override is None else int(divisor_override),
    )


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-d average pooling over ``(N, C, L)`` or ``(C, L)``."""
    _check_1d(input, "avg_pool1d")
    out = _C.avg_pool2d(
        input.unsqueeze(-2),
        [1, *_tuple(kernel_size, 1, "kernel_size")],
        [1, *_stride(stride, kernel_size, 1)],
        [0, *_tuple(padding, 1, "padding")],
        bool(ceil_mode),
        bool(count_include_pad),
        None,
    )
    return out.squeeze(-2)


def _adaptive_size(input, output_size, n):
    if isinstance(output_size, int) or output_size is None:
        output_size = [output_size] * n
    output_size = list(output_size)
    if len(output_size) != n:
        raise RuntimeError(f"output_size must be {n}, but got {len(output_size)}")
    # None keeps that dimension's input size, as in PyTorch.
    shape = input.shape[-n:]
    return [shape[i] if s is None else int(s) for i, s in enumerate(output_size)]


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed ``output_size`` ``(oH, oW)`` (``None`` keeps a size)."""
    _check_tensor(input)
    return _C.adaptive_avg_pool2d(input, _adaptive_size(input, output_size, 2))


def adaptive_avg_pool1d(input, output_size):
    """Average pooling of ``(N, C, L)`` or ``(C, L)`` to length ``output_size``."""
    _check_1d(input, "adaptive_avg_pool1d")
    size = _adaptive_size(input, output_size, 1)
    return _C.adaptive_avg_pool2d(input.unsqueeze(-2), [1, *size]).squeeze(-2)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """``adaptive_max_pool2d`` returning ``(output, indices)``."""
    _check_tensor(input)
    return _C.adaptive_max_pool2d(input, _adaptive_size(input, output_size, 2))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed ``output_size`` ``(oH, oW)``; with ``return_indices``
    also the flat in-plane position of each maximum."""
    out, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """``adaptive_max_pool1d`` returning ``(output, indices)``."""
    _check_1d(input, "adaptive_max_pool1d")
    size = _adaptive_size(input, output_size, 1)
    out, idx = _C.adaptive_max_pool2d(input.unsqueeze(-2), [1, *size])
    return out.squeeze(-2), idx.squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling of ``(N, C, L)`` or ``(C, L)`` to length ``output_size``."""
    out, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


# ----- padding -------------------------------------------------------------------------------


def _pad_index(n, before, after, mode):
    """Source positions of a padded dimension of length ``n``."""
    out = []
    for i in range(-before, n + after):
        if mode == "reflect":
            period = 2 * (n - 1)
            j = abs(i) % period if period else 0
            out.append(period - j if j >= n else j)
        elif mode == "replicate":
            out.append(min(max(i, 0), n - 1))
        else:  # circular
            out.append(i % n)
    return out


def pad(input, pad, mode="constant", value=None):
    """Pads the last ``len(pad) // 2`` dimensions: ``pad`` lists (before, after)
    pairs starting from the last dimension. ``mode`` is ``'constant'`` (negative
    pads crop), ``'reflect'``, ``'replicate'`` or ``'circular'``."""
    _check_tensor(input)
    pad = [int(p) for p in pad]
    if mode == "constant":
        return _C.constant_pad_nd(input, pad, 0.0 if value is None else float(value))
    if mode not in ("reflect", "replicate", "circular"):
        raise RuntimeError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument.')
    if len(pad) % 2 != 0:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    npad = len(pad) // 2
    if npad > input.dim() - 1 or npad > 3:
        raise NotImplementedError(
            f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
            f"(got {input.dim()}D input and pad of length {len(pad)})"
        )
    out = input
    for i in range(npad):
        dim = input.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        n = input.shape[dim]
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({before}, {after}) at dimension {dim} of input "
                f"{list(input.shape)}"
            )
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if min(before, after) < 0:
            raise RuntimeError(f"negative padding is not supported for mode {mode}")
        if n == 0:
            raise RuntimeError(
                f"Expected non-empty dimension {dim} of input {list(input.shape)} to pad"
            )
        idx = _C.tensor(_pad_index(n, before, after, mode), dtype=_C.int64)
        out = out.index_select(dim, idx)
    return out


# ----- unfold / fold -------------------------------------------------------------------------


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extracts sliding blocks: ``(N, C, H, W)`` -> ``(N, C*kH*kW, L)`` (im2col)."""
    _check_tensor(input)
    return _C.im2col(
        input,
        _tuple(kernel_size, 2, "kernel_size"),
        _tuple(dilation, 2, "dilation"),
        _tuple(padding, 2, "padding"),
        _tuple(stride, 2, "stride"),
    )


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sums sliding blocks back into an image: ``(N, C*kH*kW, L)`` -> ``(N, C, H, W)``
    (col2im, the adjoint of ``unfold``)."""
    _check_tensor(input)
    return _C.col2im(
        input,
        _tuple(output_size, 2, "output_size"),
        _tuple(kernel_size, 2, "kernel_size"),
        _tuple(dilation, 2, "dilation"),
        _tuple(padding, 2, "padding"),
        _tuple(stride, 2, "stride"),
    )


# ----- interpolation -------------------------------------------------------------------------


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resamples ``(N, C, L)`` or ``(N, C, H, W)`` to ``size`` or by ``scale_factor``;
    ``mode`` is ``'nearest'``, ``'linear'`` (3-d) or ``'bilinear'`` (4-d), with
    PyTorch's source-index rules including ``align_corners``."""
    _check_tensor(input)
    sd = input.dim() - 2
    if sd not in (1, 2):
        raise NotImplementedError(
            f"Input Error: Only 3D and 4D input Tensors supported (got {input.dim()}D) "
            f"for the modes: nearest | linear | bilinear (got {mode})"
        )
    if mode not in ("nearest", "linear", "bilinear"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode == "nearest":
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    if mode == "bilinear" and sd != 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but bilinear mode needs 4D input")
    if mode == "linear" and sd != 1:
        raise NotImplementedError(f"Got {input.dim()}D input, but linear mode needs 3D input")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    in_size = list(input.shape[2:])
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != sd:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {in_size} and output size of {list(size)}. "
                    f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and output "
                    f"size in (o1, o2, ...,oK) format."
                )
            out_size = [int(s) for s in size]
        else:
            out_size = [int(size)] * sd
        scales = [None] * sd
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != sd:
                raise ValueError(
                    f"Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {in_size} and scale_factor of "
                    f"shape {list(scale_factor)}. Please provide input tensor in "
                    f"(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                )
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * sd
        prods = [n * s for n, s in zip(in_size, scales)]
        if not all(math.isfinite(p) and abs(p) < 2.0**63 for p in prods):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        out_size = [math.floor(p) for p in prods]
        if recompute_scale_factor:
            scales = [None] * sd
    else:
        raise ValueError("either size or scale_factor should be defined")
    if any(o <= 0 for o in out_size):
        names = ["H", "W"][2 - sd:]

        def fmt(v):
            return ", ".join(f"{k}: {d}" for k, d in zip(names, v))

        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({fmt(in_size)}) "
            f"output ({fmt(out_size)})"
        )
    return _C.upsample(input, out_size, scales, mode, bool(align_corners))


def _rowwise(fn, batched_rank):
    """``fn`` with its vmap rule: a batched input runs as one call on the
    samples' rows (``func._rules.rowwise_rule``)."""

    @functools.wraps(fn)
    def wrapper(input, *args, **kwargs):
        if hasattr(type(input), "__ferrograd_function__"):
            from ...func._rules import rowwise_rule

            return rowwise_rule(wrapper, batched_rank, input, args, kwargs)
        return fn(input, *args, **kwargs)

    return wrapper


for _name, _rank in [
    ("max_pool1d", 3), ("max_pool1d_with_indices", 3), ("max_pool2d", 4),
    ("max_pool2d_with_indices", 4), ("avg_pool1d", 3), ("avg_pool2d", 4),
    ("adaptive_avg_pool1d", 3), ("adaptive_avg_pool2d", 4), ("adaptive_max_pool1d", 3),
    ("adaptive_max_pool1d_with_indices", 3), ("adaptive_max_pool2d", 4),
    ("adaptive_max_pool2d_with_indices", 4), ("unfold", 4), ("fold", 3),
    ("interpolate", None), ("pad", "pad"),
]:  # fmt: skip
    globals()[_name] = _rowwise(globals()[_name], _rank)
del _name, _rank

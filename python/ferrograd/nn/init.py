"""Weight initialisation (``ferrograd.nn.init``), as ``torch.nn.init``.

Every function fills its tensor in place under ``no_grad`` and draws with the
tensor's own ``uniform_`` / ``normal_``, in PyTorch's order and with PyTorch's
arguments, so that for the same ``manual_seed`` the numbers are PyTorch's
wherever the generator itself is.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .. import _C
from ..autograd.grad_mode import no_grad

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (``param``: leaky_relu's
    negative slope): 1 for linear/conv/sigmoid, 5/3 for tanh, sqrt(2) for relu,
    sqrt(2 / (1 + slope^2)) for leaky_relu, 3/4 for selu."""
    linear_fns = [
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
    ]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    elif nonlinearity == "tanh":
        return 5.0 / 3
    elif nonlinearity == "relu":
        return math.sqrt(2.0)
    elif nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            # True and False are ints too, hence the check above.
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    elif nonlinearity == "selu":
        # PyTorch's empirical value (pytorch/pytorch#50664).
        return 3.0 / 4
    else:
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _no_grad_uniform_(tensor, a, b, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def _no_grad_normal_(tensor, mean, std, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills ``tensor`` with draws from U(a, b)."""
    return _no_grad_uniform_(tensor, a, b, generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills ``tensor`` with draws from N(mean, std^2)."""
    return _no_grad_normal_(tensor, mean, std, generator)


def _erfinv_array(y):
    # Giles' single-precision approximation ("Approximating the erfinv
    # function", 2010) as the start, then two Newton steps on erf(x) = y in
    # float64, which reach float64 accuracy from its ~1e-7 start.
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log((1.0 - y) * (1.0 + y))
        small = w < 5.0
        ws = w - 2.5
        p1 = 2.81022636e-08
        for c in (
            3.43273939e-07,
            -3.5233877e-06,
            -4.39150654e-06,
            0.00021858087,
            -0.00125372503,
            -0.00417768164,
            0.246640727,
            1.50140941,
        ):
            p1 = c + p1 * ws
        wl = np.sqrt(w) - 3.0
        p2 = -0.000200214257
        for c in (
            0.000100950558,
            0.00134934322,
            -0.00367342844,
            0.00573950773,
            -0.0076224613,
            0.00943887047,
            1.00167406,
            2.83297682,
        ):
            p2 = c + p2 * wl
        x = np.where(small, p1, p2) * y
        finite = np.abs(y) < 1.0
        xs = np.where(finite, x, 0.0)
        two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
        for _ in range(2):
            erf = _C.from_numpy(np.ascontiguousarray(xs)).erf().numpy()
            xs = xs - (erf - np.where(finite, y, 0.0)) / (two_over_sqrt_pi * np.exp(-xs * xs))
        out = np.where(finite, xs, np.nan)
        out = np.where(y == 1.0, np.inf, out)
        out = np.where(y == -1.0, -np.inf, out)
    return out


def _erfinv_(tensor):
    # Computed in float64 and rounded once to the tensor's dtype.
    values = tensor.detach().numpy()
    result = _erfinv_array(values).astype(values.dtype)
    tensor.copy_(_C.from_numpy(np.ascontiguousarray(result)))
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills ``tensor`` with draws from N(mean, std^2) truncated to [a, b], by
    PyTorch's inverse-CDF method: one ``uniform_`` draw per element between
    the CDF values of the bounds, then ``erfinv``, scale, shift and clamp."""

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect.",
            stacklevel=2,
        )
    with no_grad():
        lo = norm_cdf((a - mean) / std)
        up = norm_cdf((b - mean) / std)
        tensor.uniform_(2 * lo - 1, 2 * up - 1, generator=generator)
        _erfinv_(tensor)
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor


def constant_(tensor, val):
    """Fills ``tensor`` with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fills ``tensor`` with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fills ``tensor`` with zeros."""
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Fills the 2-D ``tensor`` with the identity (ones on the main diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(_C.eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def dirac_(tensor, groups=1):
    """Fills the 3-, 4- or 5-D convolution weight ``tensor`` so the convolution
    is the identity (per group) on as many channels as fit."""
    dimensions = tensor.dim()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    values = np.zeros(tuple(sizes), dtype=tensor.detach().numpy().dtype)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min_dim):
            values[(g * out_chans_per_grp + d, d, *centre)] = 1
    with no_grad():
        tensor.copy_(_C.from_numpy(values))
    return tensor


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    fan_in = num_input_fmaps * receptive_field_size
    fan_out = num_output_fmaps * receptive_field_size
    return fan_in, fan_out


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return _no_grad_uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _no_grad_normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-bound, bound), bound = gain * sqrt(3 / fan), with the gain
    of ``nonlinearity`` (``a``: leaky_relu's slope) and fan of ``mode``."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    with no_grad():
        return tensor.uniform_(-bound, bound, generator=generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, std^2), std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    with no_grad():
        return tensor.normal_(0, std, generator=generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fills ``tensor`` (2-D or more, trailing dimensions flattened) with a
    (semi-)orthogonal matrix times ``gain``: the Q of the QR factorisation of a
    standard normal draw, its columns' signs fixed by R's diagonal so Q is
    uniformly distributed (Mezzadri, 2007)."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    with no_grad():
        flattened = _C.empty(rows, cols, dtype=tensor.dtype).normal_(0, 1, generator=generator)
        mat = flattened.numpy()
        if rows < cols:
            mat = mat.T
        q, r = np.linalg.qr(mat)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        tensor.copy_(_C.from_numpy(np.ascontiguousarray(q)).reshape(tensor.shape))
        tensor.mul_(gain)
    return tensor


def _skip_meta(fn):
    """``fn`` that leaves a meta tensor as it is: it has no values to fill
    (PyTorch's initialisers do nothing on the meta device either)."""

    @functools.wraps(fn)
    def init(tensor, *args, **kwargs):
        if getattr(tensor, "is_meta", False) is True:
            return tensor
        return fn(tensor, *args, **kwargs)

    return init


for _name in ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
              "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
              "kaiming_normal_", "orthogonal_", "sparse_"):  # fmt: skip
    if _name in globals():
        globals()[_name] = _skip_meta(globals()[_name])


def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
            FutureWarning,
            stacklevel=2,
        )
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"Deprecated alias of :func:`{new_name}` (PyTorch keeps it too)."
    deprecated_init.__name__ = old_name
    return deprecated_init


# Names without the trailing underscore, from before PyTorch 0.4; old code still calls them.
uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)

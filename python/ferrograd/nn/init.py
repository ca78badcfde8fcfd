"""Weight initialisation (``ferrograd.nn.init``), as ``torch.nn.init``.

Every function fills its tensor in place under ``no_grad`` and draws with the
tensor's own ``uniform_`` / ``normal_``, in PyTorch's order and with PyTorch's
arguments, so that for the same ``manual_seed`` the numbers are PyTorch's
wherever the generator itself is.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .. import _C
from ..autograd.grad_mode import no_grad

if TYPE_CHECKING:
    from .._C import Generator, Tensor

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


def calculate_gain(nonlinearity: str, param: int | float | None = None) -> float:
    """The recommended gain (scale factor) of an initialisation for ``nonlinearity``.

    ========================  =====================================
    nonlinearity              gain
    ========================  =====================================
    linear, conv*, sigmoid    1
    tanh                      5/3
    relu                      sqrt(2)
    leaky_relu                sqrt(2 / (1 + negative_slope ** 2))
    selu                      3/4
    ========================  =====================================

    Args:
        nonlinearity (str): the name of the function, e.g. ``'relu'`` or
            ``'conv2d'``.
        param (float, optional): leaky_relu's negative slope. Default: ``0.01``
            when ``None``.

    Returns:
        float: the gain.

    Raises:
        ValueError: for an unknown nonlinearity or a non-numeric ``param``.

    Example::

        >>> nn.init.calculate_gain("relu")
        1.4142135623730951
        >>> nn.init.calculate_gain("leaky_relu", 0.2)
        1.3867504905630728
        >>> nn.init.calculate_gain("tanh")
        1.6666666666666667
    """
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


def uniform_(
    tensor: Tensor,
    a: float = 0.0,
    b: float = 1.0,
    generator: Generator | None = None,
) -> Tensor:
    """Fills ``tensor`` with draws from the uniform distribution on ``[a, b)``.

    Args:
        tensor (Tensor): the tensor to fill.
        a (float): the lower bound. Default: ``0.0``.
        b (float): the upper bound. Default: ``1.0``.
        generator (Generator, optional): the random generator to draw from.
            Default: the global one.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> w = nn.init.uniform_(torch.empty(3, 5), -0.1, 0.1)
        >>> w.shape, bool((w.abs() <= 0.1).all())
        (ferrograd.Size([3, 5]), True)
    """
    return _no_grad_uniform_(tensor, a, b, generator)


def normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    generator: Generator | None = None,
) -> Tensor:
    """Fills ``tensor`` with draws from the normal distribution ``N(mean, std ** 2)``.

    Args:
        tensor (Tensor): the tensor to fill.
        mean (float): the mean. Default: ``0.0``.
        std (float): the standard deviation. Default: ``1.0``.
        generator (Generator, optional): the random generator to draw from.
            Default: the global one.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> w = nn.init.normal_(torch.empty(10000), mean=2.0, std=0.5)
        >>> round(w.mean().item(), 1), round(w.std().item(), 1)
        (2.0, 0.5)
    """
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


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Generator | None = None,
) -> Tensor:
    """Fills ``tensor`` with draws from ``N(mean, std ** 2)`` truncated to ``[a, b]``.

    It uses PyTorch's inverse-CDF method: one uniform draw per element between the
    normal CDF values of the bounds, mapped back through ``erfinv``, so a seeded
    generator gives PyTorch's values. It warns when ``mean`` is more than two
    standard deviations outside ``[a, b]``.

    Args:
        tensor (Tensor): the tensor to fill.
        mean (float): the mean of the normal distribution. Default: ``0.0``.
        std (float): its standard deviation. Default: ``1.0``.
        a (float): the lower cut-off. Default: ``-2.0``.
        b (float): the upper cut-off. Default: ``2.0``.
        generator (Generator, optional): the random generator to draw from.
            Default: the global one.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> w = nn.init.trunc_normal_(torch.empty(1000), std=1.0, a=-0.5, b=0.5)
        >>> bool((w.abs() <= 0.5).all())
        True
    """

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


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with the value ``val``.

    Args:
        tensor (Tensor): the tensor to fill.
        val (float): the value.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> nn.init.constant_(torch.empty(2, 3), 0.3)
        tensor([[0.3000, 0.3000, 0.3000],
                [0.3000, 0.3000, 0.3000]])
    """
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with ones.

    Args:
        tensor (Tensor): the tensor to fill.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> nn.init.ones_(torch.empty(2, 2))
        tensor([[1., 1.],
                [1., 1.]])
    """
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with zeros.

    Args:
        tensor (Tensor): the tensor to fill.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> nn.init.zeros_(torch.empty(2, 2))
        tensor([[0., 0.],
                [0., 0.]])
    """
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fills the 2-d ``tensor`` with the identity matrix: ones on the main diagonal, zeros
    elsewhere (a linear layer that passes its input through, as far as sizes allow).

    Args:
        tensor (Tensor): a 2-d tensor.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Raises:
        ValueError: if ``tensor`` is not 2-d.

    Example::

        >>> nn.init.eye_(torch.empty(2, 3))
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(_C.eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills a 3-, 4- or 5-d convolution weight with the Dirac delta, so the convolution passes
    its input channels through unchanged (per group, on as many channels as fit).

    Args:
        tensor (Tensor): ``(out_channels, in_channels, *kernel)``, 3- to 5-d.
        groups (int): the number of groups; divides ``out_channels``.
            Default: ``1``.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> w = nn.init.dirac_(torch.empty(2, 2, 3))
        >>> x = torch.arange(10.0).reshape(1, 2, 5)
        >>> F.conv1d(x, w, padding=1)
        tensor([[[0., 1., 2., 3., 4.],
                 [5., 6., 7., 8., 9.]]])
    """
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


def xavier_uniform_(
    tensor: Tensor,
    gain: float = 1.0,
    generator: Generator | None = None,
) -> Tensor:
    """Glorot (Xavier) uniform initialisation: draws from ``U(-bound, bound)`` with
    ``bound = gain * sqrt(6 / (fan_in + fan_out))``, which keeps the variance of activations
    and gradients about constant across layers.

    The fans of a weight ``(out, in, *kernel)`` are ``fan_in = in * prod(kernel)`` and
    ``fan_out = out * prod(kernel)``.

    Args:
        tensor (Tensor): a weight with at least 2 dimensions.
        gain (float): the scale factor (see :func:`calculate_gain`). Default: ``1.0``.
        generator (Generator, optional): the random generator to draw from.
            Default: the global one.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> w = nn.init.xavier_uniform_(torch.empty(30, 20), gain=nn.init.calculate_gain("relu"))
        >>> bound = 2 ** 0.5 * (6 / (20 + 30)) ** 0.5
        >>> bool((w.abs() <= bound).all())
        True
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return _no_grad_uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot (Xavier) normal initialisation: draws from ``N(0, std ** 2)`` with
    ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    The fans of a weight ``(out, in, *kernel)`` are ``fan_in = in * prod(kernel)`` and
    ``fan_out = out * prod(kernel)``.

    Args:
        tensor (Tensor): a weight with at least 2 dimensions.
        gain (float): the scale factor. Default: ``1.0``.
        generator (Generator, optional): the random generator to draw from.
            Default: the global one.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> w = nn.init.xavier_normal_(torch.empty(400, 100))
        >>> round(w.std().item(), 2), round((2 / 500) ** 0.5, 2)
        (0.06, 0.06)
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _no_grad_normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """He (Kaiming) uniform initialisation: draws from ``U(-bound, bound)`` with
    ``bound = gain * sqrt(3 / fan)``, ``gain = calculate_gain(nonlinearity, a)`` and ``fan``
    chosen by ``mode``.

    The fans of a weight ``(out, in, *kernel)`` are ``fan_in = in * prod(kernel)`` and
    ``fan_out = out * prod(kernel)``. ``'fan_in'`` preserves the variance of
    the activations in the forward pass, ``'fan_out'`` that of the gradients in the
    backward pass. A tensor with no
    elements is left as it is (with a warning).

    Args:
        tensor (Tensor): a weight with at least 2 dimensions.
        a (float): the negative slope of the rectifier after this layer (for
            ``'leaky_relu'``). Default: ``0``.
        mode (str): ``'fan_in'`` or ``'fan_out'``. Default: ``'fan_in'``.
        nonlinearity (str): the function after this layer, ``'relu'`` or
            ``'leaky_relu'`` recommended. Default: ``'leaky_relu'``.
        generator (Generator, optional): the random generator to draw from.
            Default: the global one.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> w = nn.init.kaiming_uniform_(torch.empty(64, 32), mode="fan_in", nonlinearity="relu")
        >>> bool((w.abs() <= (6 / 32) ** 0.5).all())
        True
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    with no_grad():
        return tensor.uniform_(-bound, bound, generator=generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """He (Kaiming) normal initialisation: draws from ``N(0, std ** 2)`` with
    ``std = gain / sqrt(fan)``, ``gain = calculate_gain(nonlinearity, a)`` and ``fan``
    chosen by ``mode``.

    The fans of a weight ``(out, in, *kernel)`` are ``fan_in = in * prod(kernel)`` and
    ``fan_out = out * prod(kernel)``. A tensor with no elements is left as it is (with a warning).

    Args:
        tensor (Tensor): a weight with at least 2 dimensions.
        a (float): the negative slope of the rectifier after this layer.
            Default: ``0``.
        mode (str): ``'fan_in'`` or ``'fan_out'``. Default: ``'fan_in'``.
        nonlinearity (str): the function after this layer. Default: ``'leaky_relu'``.
        generator (Generator, optional): the random generator to draw from.
            Default: the global one.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> w = nn.init.kaiming_normal_(torch.empty(200, 50), mode="fan_out", nonlinearity="relu")
        >>> round(w.std().item(), 2), round((2 / 200) ** 0.5, 2)
        (0.1, 0.1)
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    with no_grad():
        return tensor.normal_(0, std, generator=generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """Fills ``tensor`` with a (semi-)orthogonal matrix times ``gain``: the Q factor of the QR
    factorisation of a standard normal draw, its columns' signs fixed by R's diagonal so
    that Q is uniformly distributed (Mezzadri, 2007). Dimensions after the first are
    flattened.

    Args:
        tensor (Tensor): at least 2-d.
        gain (float): the scale factor. Default: ``1``.
        generator (Generator, optional): the random generator to draw from.
            Default: the global one.

    Returns:
        Tensor: ``tensor``, filled in place (without recording gradients).

    Example::

        >>> w = nn.init.orthogonal_(torch.empty(3, 5))
        >>> torch.allclose(w @ w.T, torch.eye(3), atol=1e-5)
        True
    """
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

    deprecated_init.__doc__ = (
        f"Deprecated alias of :func:`{new_name}`: warns with a ``FutureWarning``, then calls "
        f"it (PyTorch keeps these names too).\n\n{inspect.cleandoc(meth.__doc__)}"
    )
    deprecated_init.__name__ = old_name
    # help() shows the arguments it passes on.
    deprecated_init.__signature__ = inspect.signature(meth)
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

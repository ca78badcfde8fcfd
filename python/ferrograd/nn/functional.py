"""Functional forms of the layers, activations and losses (``ferrograd.nn.functional``).

Each is a thin argument adapter over a Rust op; the numerics (stable
log-sum-exp forms, backward rules) live in ``src/ops``.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING

from .. import _C
from .._autocast import autocast_op as _autocast_op
from .._dispatch import check_tensor as _check_tensor
from .._inplace import apply_inplace as _apply_inplace
from ._functional.linear import bilinear


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return reduction


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _inplace(input, result):
    # PyTorch's inplace=True writes into the input; out of place, then copied in.
    return input.copy_(result)


def _native_inplace(name, input, *args):
    # The core's in-place op; a value batched by vmap takes the out-of-place
    # op's batching rule and is written in.
    if isinstance(input, _C.Tensor):
        return getattr(_C, name)(input, *args)
    return _apply_inplace(input, lambda: getattr(_C, name[:-1])(input, *args), name)


def _activation(input, inplace, compute):
    # In place, the result is written into the input as `Tensor.relu_` would
    # be, so a backward needing the input (silu) keeps its old value.
    return _apply_inplace(input, compute) if inplace else compute()


# ----- activations ---------------------------------------------------------------------------


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Rectified linear unit, elementwise: ``max(0, x)``.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.relu(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([0., 0., 2.])
    """
    return _activation(input, inplace, lambda: _C.relu(input))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """ReLU capped at 6, elementwise: ``min(max(0, x), 6)``.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.relu6(torch.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """
    return _activation(input, inplace, lambda: _C.hardtanh(input, 0.0, 6.0))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """Leaky ReLU, elementwise: ``x`` where ``x >= 0``, ``negative_slope * x`` elsewhere.

    Args:
        input (Tensor): the input, of any shape.
        negative_slope (float): the slope for negative inputs. Default: ``0.01``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.leaky_relu(torch.tensor([-2.0, 0.5]), negative_slope=0.1)
        tensor([-0.2000,  0.5000])
    """
    if inplace:
        return _native_inplace("leaky_relu_", input, negative_slope)
    return _C.leaky_relu(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu`: writes ``leaky_relu(input)`` into ``input``.

    Args:
        input (Tensor): the tensor to overwrite.
        negative_slope (float): the slope for negative inputs. Default: ``0.01``.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-2.0, 0.5])
        >>> F.leaky_relu_(x, 0.1) is x, x
        (True, tensor([-0.2000,  0.5000]))
    """
    return _native_inplace("leaky_relu_", input, negative_slope)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Exponential linear unit, elementwise: ``x`` where ``x > 0``, ``alpha * (exp(x) - 1)``
    elsewhere.

    Args:
        input (Tensor): the input, of any shape.
        alpha (float): the value the output approaches for large negative inputs is
            ``-alpha``. Default: ``1.0``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.elu(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([-0.6321,  0.0000,  2.0000])
    """
    return _native_inplace("elu_", input, alpha) if inplace else _C.elu(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`: writes ``elu(input, alpha)`` into ``input``.

    Args:
        input (Tensor): the tensor to overwrite.
        alpha (float): the ``alpha`` of :func:`elu`. Default: ``1.0``.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-1.0, 2.0])
        >>> F.elu_(x) is x, x
        (True, tensor([-0.6321,  2.0000]))
    """
    return _native_inplace("elu_", input, alpha)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit, elementwise: ``x * Phi(x)``, ``Phi`` the standard normal
    cumulative distribution function.

    Args:
        input (Tensor): the input, of any shape.
        approximate (str): ``'none'`` for the exact form with ``erf``, or ``'tanh'`` for
            ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``.
            Default: ``'none'``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> x = torch.tensor([-1.0, 0.0, 1.0])
        >>> F.gelu(x)
        tensor([-0.1587,  0.0000,  0.8413])
        >>> F.gelu(x, approximate="tanh")
        tensor([-0.1588,  0.0000,  0.8412])
    """
    return _C.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """Sigmoid linear unit (swish), elementwise: ``x * sigmoid(x)``.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.silu(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2689,  0.0000,  0.7311])
    """
    return _activation(input, inplace, lambda: _C.silu(input))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Softplus, elementwise: ``log(1 + exp(beta * x)) / beta``, a smooth ReLU.

    Where ``beta * x > threshold`` the result is ``x`` itself, which keeps large inputs
    from overflowing.

    Args:
        input (Tensor): the input, of any shape.
        beta (float): the sharpness. Default: ``1.0``.
        threshold (float): above this value of ``beta * x`` the function is linear.
            Default: ``20.0``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.softplus(torch.tensor([-1.0, 0.0, 30.0]))
        tensor([ 0.3133,  0.6931, 30.0000])
    """
    return _C.softplus(input, beta, threshold)


def sigmoid(input: Tensor) -> Tensor:
    """Logistic sigmoid, elementwise: ``1 / (1 + exp(-x))``.

    Args:
        input (Tensor): the input, of any shape.

    Returns:
        Tensor: the same shape as ``input``, with values in ``(0, 1)``.

    Example::

        >>> F.sigmoid(torch.tensor([-2.0, 0.0, 2.0]))
        tensor([0.1192, 0.5000, 0.8808])
    """
    return _C.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent, elementwise.

    Args:
        input (Tensor): the input, of any shape.

    Returns:
        Tensor: the same shape as ``input``, with values in ``(-1, 1)``.

    Example::

        >>> F.tanh(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.7616,  0.0000,  0.7616])
    """
    return _C.tanh(input)


def hardtanh(
    input: Tensor,
    min_val: float = -1.0,
    max_val: float = 1.0,
    inplace: bool = False,
) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``, elementwise.

    Args:
        input (Tensor): the input, of any shape.
        min_val (float): the lower bound. Default: ``-1.0``.
        max_val (float): the upper bound. Default: ``1.0``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Raises:
        ValueError: if ``min_val > max_val``.

    Example::

        >>> F.hardtanh(torch.tensor([-3.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _activation(input, inplace, lambda: _C.hardtanh(input, min_val, max_val))


def _softmax_dim(ndim):
    # PyTorch's legacy implicit choice when dim is omitted.
    return 0 if ndim in (0, 1, 3) else 1


def _implicit_dim(name, ndim, stacklevel):
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return _softmax_dim(ndim)


def softmax(
    input: Tensor,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: DType | None = None,
) -> Tensor:
    """Softmax along ``dim``: ``exp(x_i) / sum_j exp(x_j)``, so each slice along ``dim`` is
    positive and sums to 1.

    The largest value of each slice is subtracted first, so large inputs do not
    overflow.

    Args:
        input (Tensor): the input, of any shape.
        dim (int): the dimension to normalise over. When omitted, PyTorch's legacy
            choice is made (0 for 0-, 1- and 3-d inputs, 1 otherwise); pass it
            explicitly.
        dtype (ferrograd.dtype, optional): cast ``input`` to this dtype first.
            Default: ``None``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.softmax(torch.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]), dim=1)
        tensor([[0.0900, 0.2447, 0.6652],
                [0.3333, 0.3333, 0.3333]])
    """
    if dim is None:
        dim = _implicit_dim("softmax", input.dim(), _stacklevel)
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(
    input: Tensor,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: DType | None = None,
) -> Tensor:
    """Logarithm of :func:`softmax` along ``dim``: ``x_i - log(sum_j exp(x_j))``.

    Computed in one step (not as ``log(softmax(x))``), so it stays finite where the
    softmax would underflow to 0. Pair it with :func:`nll_loss`, or use
    :func:`cross_entropy`, which does both.

    Args:
        input (Tensor): the input, of any shape.
        dim (int): the dimension to normalise over. When omitted, PyTorch's legacy
            choice is made (0 for 0-, 1- and 3-d inputs, 1 otherwise).
        dtype (ferrograd.dtype, optional): cast ``input`` to this dtype first.
            Default: ``None``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.log_softmax(torch.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([-2.4076, -1.4076, -0.4076])
    """
    if dim is None:
        dim = _implicit_dim("log_softmax", input.dim(), _stacklevel)
    return _C.log_softmax(input, dim, dtype=dtype)


def softmin(
    input: Tensor,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: DType | None = None,
) -> Tensor:
    """Softmin along ``dim``: ``softmax(-input)``, so the smallest values get the largest
    weights.

    Args:
        input (Tensor): the input, of any shape.
        dim (int): the dimension to normalise over (PyTorch's legacy choice when
            omitted, as in :func:`softmax`).
        dtype (ferrograd.dtype, optional): cast ``input`` to this dtype first.
            Default: ``None``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.softmin(torch.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([0.6652, 0.2447, 0.0900])
    """
    if dim is None:
        dim = _implicit_dim("softmin", input.dim(), _stacklevel)
    return _C.softmax(-input, dim, dtype=dtype)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Dropout: while training, zeroes each element independently with probability ``p`` and
    scales the others by ``1 / (1 - p)``, so the expected value is unchanged.

    With ``training=False`` it returns ``input`` itself. The mask is drawn with
    ``bernoulli_(1 - p)`` from the global generator (seed it with
    ``torch.manual_seed``).

    Args:
        input (Tensor): the input, of any shape.
        p (float): the probability of zeroing an element, in ``[0, 1]``. Default: ``0.5``.
        training (bool): apply dropout; ``False`` is the identity. Default: ``True``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Raises:
        ValueError: if ``p`` is outside ``[0, 1]``.

    Note:
        PyTorch draws the mask through MKL on Intel CPUs; ferrograd always takes the
        generic mt19937 path, so a seeded mask matches PyTorch's on other CPUs.

    Example::

        >>> x = torch.ones(8)
        >>> y = F.dropout(x, p=0.5)
        >>> sorted(set(y.tolist()))
        [0.0, 2.0]
        >>> F.dropout(x, p=0.5, training=False) is x
        True
    """
    if not training:
        _check_tensor("dropout", input)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        return input
    out = _C.dropout(input, p, training)
    return _inplace(input, out) if inplace and out is not input else out


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Affine map of the last dimension: ``input @ weight.T + bias``.

    Args:
        input (Tensor): ``(*, in_features)``, any number of leading dimensions.
        weight (Tensor): ``(out_features, in_features)`` or ``(in_features,)``.
        bias (Tensor, optional): ``(out_features,)`` or ``()``. Default: ``None``.

    Shape:
        - Input: ``(*, in_features)``.
        - Output: ``(*, out_features)`` (``(*)`` for a 1-d ``weight``).

    Returns:
        Tensor: the transformed input.

    Example::

        >>> x = torch.ones(2, 3)
        >>> w = torch.arange(12.0).reshape(4, 3)
        >>> F.linear(x, w, torch.zeros(4))
        tensor([[ 3., 12., 21., 30.],
                [ 3., 12., 21., 30.]])
    """
    return _C.linear(input, weight, bias)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim``: ``v / max(||v||_p, eps)``.

    The ``eps`` floor keeps an all-zero slice at zero instead of NaN; there the
    gradient is ``1 / eps`` times the incoming one, as in PyTorch.

    Args:
        input (Tensor): the input, of any shape.
        p (float): the exponent of the norm. Default: ``2.0``.
        dim (int or tuple of ints): the dimension(s) to normalise over. Default: ``1``.
        eps (float): the smallest norm divided by. Default: ``1e-12``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.normalize(torch.tensor([[3.0, 4.0], [0.0, 0.0]]), dim=1)
        tensor([[0.6000, 0.8000],
                [0.0000, 0.0000]])
    """
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps)
    return input / denom


# ----- losses --------------------------------------------------------------------------------


def _shape_of(t):
    return getattr(t, "shape", None)


def _user_stacklevel() -> int:
    """The ``stacklevel`` that names the caller's first frame outside ferrograd, for a
    warning raised by the function calling this (wrappers such as autocast's add frames)."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(pkg):
        frame, level = frame.f_back, level + 1
    return level


def _warn_target_size(input, target):
    # A target that broadcasts against the input computes something else than
    # the user meant ((4, 1) against (4,) is a (4, 4) difference): PyTorch warns.
    si, st = _shape_of(input), _shape_of(target)
    if si is not None and st is not None and tuple(si) != tuple(st):
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )


def _scalar_type(dtype):
    return {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}.get(
        str(dtype).rsplit(".", 1)[-1], str(dtype)
    )


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Mean squared error: ``(input - target) ** 2``, reduced.

    Args:
        input (Tensor): the prediction, of any shape.
        target (Tensor): the target, broadcastable to ``input``'s shape.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.mse_loss(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0]))
        tensor(4.3333)
    """
    _warn_target_size(input, target)
    return _C.mse_loss(input, target, _reduction(size_average, reduce, reduction))


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Mean absolute error: ``|input - target|``, reduced.

    Args:
        input (Tensor): the prediction, of any shape.
        target (Tensor): the target, broadcastable to ``input``'s shape.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.l1_loss(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0]))
        tensor(1.6667)
    """
    _warn_target_size(input, target)
    return _C.l1_loss(input, target, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """Smooth L1 loss: ``0.5 * d**2 / beta`` where ``|d| < beta``, ``|d| - 0.5 * beta``
    elsewhere, with ``d = input - target``; reduced.

    Args:
        input (Tensor): the prediction, of any shape.
        target (Tensor): the target, broadcastable to ``input``'s shape.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.
        beta (float): where the loss turns from quadratic to linear; ``0`` gives the
            L1 loss. Default: ``1.0``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.smooth_l1_loss(torch.tensor([0.0, 3.0]), torch.tensor([0.5, 0.0]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    _warn_target_size(input, target)
    return _C.smooth_l1_loss(input, target, _reduction(size_average, reduce, reduction), beta)


@_autocast_op("huber_loss")
def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
) -> Tensor:
    """Huber loss: ``0.5 * d**2`` where ``|d| <= delta``, ``delta * (|d| - 0.5 * delta)``
    elsewhere, with ``d = input - target``; reduced. It equals
    ``delta * smooth_l1_loss(..., beta=delta)``.

    Args:
        input (Tensor): the prediction, of any shape.
        target (Tensor): the target, broadcastable to ``input``'s shape.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.
        delta (float): where the loss turns from quadratic to linear. Default: ``1.0``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.huber_loss(torch.tensor([0.0, 3.0]), torch.tensor([0.5, 0.0]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    _warn_target_size(input, target)
    return _C.huber_loss(input, target, reduction, delta)


@_autocast_op("binary_cross_entropy")
def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross entropy between probabilities and targets:
    ``-weight * (target * log(input) + (1 - target) * log(1 - input))``, reduced.

    Each log is clamped below at -100, so a probability of exactly 0 or 1 gives a
    finite loss, as in PyTorch. For logits, :func:`binary_cross_entropy_with_logits` is
    more accurate.

    Args:
        input (Tensor): probabilities in ``[0, 1]``, of any shape.
        target (Tensor): targets in ``[0, 1]``, ``input``'s shape.
        weight (Tensor, optional): a weight per element, broadcastable to ``input``.
            Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> F.binary_cross_entropy(torch.tensor([0.8, 0.2]), torch.tensor([1.0, 0.0]))
        tensor(0.2231)
    """
    si, st = _shape_of(input), _shape_of(target)
    if si is not None and st is not None and tuple(si) != tuple(st):
        raise ValueError(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}) is deprecated. Please ensure they have the same size."
        )
    dt, it = getattr(target, "dtype", None), getattr(input, "dtype", None)
    if dt is not None and it is not None and getattr(it, "is_floating_point", False) and dt != it:
        # PyTorch's kernel refuses a target of another dtype (an int64 one included).
        raise RuntimeError(f"Found dtype {_scalar_type(dt)} but expected {_scalar_type(it)}")
    return _C.binary_cross_entropy(
        input, target, weight, _reduction(size_average, reduce, reduction)
    )


@_autocast_op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy on logits: ``binary_cross_entropy(sigmoid(input), target)``
    computed in one stable step (no overflow for large logits).

    Per element the loss is ``-weight * (pos_weight * target * log(sigmoid(x)) +
    (1 - target) * log(1 - sigmoid(x)))``.

    Args:
        input (Tensor): logits, of any shape.
        target (Tensor): targets in ``[0, 1]``, ``input``'s shape.
        weight (Tensor, optional): a weight per element, broadcastable to ``input``.
            Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.
        pos_weight (Tensor, optional): a weight for the positive term per class
            (broadcast along the last dimension); above 1 favours recall.
            Default: ``None``.

    Returns:
        Tensor: a scalar, or ``input``'s shape with ``reduction='none'``.

    Example::

        >>> logits = torch.tensor([2.0, -1.0, 0.0])
        >>> F.binary_cross_entropy_with_logits(logits, torch.tensor([1.0, 0.0, 1.0]))
        tensor(0.3778)
    """
    si, st = _shape_of(input), _shape_of(target)
    if si is not None and st is not None and tuple(si) != tuple(st):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    dt = getattr(target, "dtype", None)
    if dt is not None and not getattr(dt, "is_floating_point", True):
        # PyTorch computes the loss in the target's dtype, which cannot hold it.
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type {_scalar_type(dt)}"
        )
    return _C.binary_cross_entropy_with_logits(
        input, target, weight, _reduction(size_average, reduce, reduction), pos_weight
    )


def _check_batch_size(input, target):
    # PyTorch raises ValueError here (a TORCH_CHECK_VALUE), before any other check.
    if (
        isinstance(input, _C.Tensor)
        and isinstance(target, _C.Tensor)
        and input.dim() >= 2
        and target.dim() >= 1
        and not target.is_floating_point()
        and input.shape[0] != target.shape[0]
    ):
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0]})."
        )


def _check_class_target(input, target, probabilities_allowed):
    # A float target of the input's shape holds class probabilities
    # (cross_entropy only); any other float target was meant as class indices.
    dt = getattr(target, "dtype", None)
    if dt is None or dt == _C.int64:
        return
    if probabilities_allowed and dt.is_floating_point:
        if tuple(getattr(target, "shape", ())) == tuple(getattr(input, "shape", ())):
            return
    raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_scalar_type(dt)}")


@_autocast_op("nll_loss")
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood loss: ``-weight[y] * input[n, y]`` for each sample ``n`` with
    class ``y = target[n]``, reduced.

    ``input`` holds log-probabilities (the output of :func:`log_softmax`).

    Args:
        input (Tensor): ``(N, C)``, ``(C,)`` or ``(N, C, d1, ..., dK)``
            log-probabilities over ``C`` classes.
        target (Tensor): int64 class indices in ``[0, C)``: ``(N,)``, ``()`` or
            ``(N, d1, ..., dK)``.
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        ignore_index (int): targets equal to this contribute nothing (and do not count
            in the mean). Default: ``-100``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)``, ``(C,)`` or ``(N, C, d1, ..., dK)``.
        - Target: ``(N,)``, ``()`` or ``(N, d1, ..., dK)``.
        - Output: a scalar; with ``reduction='none'`` the target's shape.

    Returns:
        Tensor: the loss. ``'mean'`` divides by the sum of the weights of the counted
        targets.

    Example::

        >>> logp = F.log_softmax(torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]]), dim=1)
        >>> F.nll_loss(logp, torch.tensor([2, 0]), reduction="none")
        tensor([0.4076, 0.4076])
    """
    _check_batch_size(input, target)
    _check_class_target(input, target, probabilities_allowed=False)
    return _C.nll_loss(
        input, target, weight, ignore_index, _reduction(size_average, reduce, reduction)
    )


@_autocast_op("cross_entropy")
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy between logits and targets: :func:`log_softmax` over the classes followed
    by :func:`nll_loss`, in one stable step.

    ``target`` is either class indices (int64) or class probabilities (floating, the
    same shape as ``input``).

    Args:
        input (Tensor): unnormalised scores ``(N, C)``, ``(C,)`` or
            ``(N, C, d1, ..., dK)``.
        target (Tensor): int64 class indices ``(N,)``, ``()`` or ``(N, d1, ..., dK)``
            in ``[0, C)``, or probabilities of ``input``'s shape.
        weight (Tensor, optional): ``(C,)``, a weight per class. Default: ``None``.
        size_average (bool, optional): deprecated, use ``reduction``. When given with
            ``reduce``, chooses between ``'mean'`` (True) and ``'sum'`` (False).
        reduce (bool, optional): deprecated, use ``reduction``. ``False`` means ``'none'``.
        ignore_index (int): class-index targets equal to this contribute nothing.
            Default: ``-100``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` (their mean) or
            ``'sum'`` (their sum). Default: ``'mean'``.
        label_smoothing (float): in ``[0, 1]``; mixes the target with the uniform
            distribution over the classes, ``(1 - s) * target + s / C``.
            Default: ``0.0``.

    Shape:
        - Input: ``(N, C)``, ``(C,)`` or ``(N, C, d1, ..., dK)``.
        - Target: ``(N,)``, ``()`` or ``(N, d1, ..., dK)`` for indices; ``input``'s
          shape for probabilities.
        - Output: a scalar; with ``reduction='none'`` the shape without ``C``.

    Returns:
        Tensor: the loss.

    Raises:
        ValueError: if the batch sizes of ``input`` and an index ``target`` differ.

    Example::

        >>> logits = torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]])
        >>> F.cross_entropy(logits, torch.tensor([2, 0]))
        tensor(0.4076)
        >>> F.cross_entropy(logits, torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))
        tensor(0.4076)
    """
    _check_batch_size(input, target)
    _check_class_target(input, target, probabilities_allowed=True)
    return _C.cross_entropy(
        input,
        target,
        weight,
        ignore_index,
        _reduction(size_average, reduce, reduction),
        label_smoothing,
    )


__all__ = [
    "bilinear",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "dropout",
    "elu",
    "elu_",
    "gelu",
    "hardtanh",
    "huber_loss",
    "l1_loss",
    "leaky_relu",
    "leaky_relu_",
    "linear",
    "log_softmax",
    "mse_loss",
    "nll_loss",
    "normalize",
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softmin",
    "softplus",
    "tanh",
]


# ----- convolution, pooling, padding, unfold/fold, interpolation ------------------------------
# Each topic lives in a private file under _functional/ and is re-exported here.
from ._functional import conv as _f_conv  # noqa: E402
from ._functional import fold as _f_fold  # noqa: E402
from ._functional import interpolation as _f_interpolation  # noqa: E402
from ._functional import lp_pooling as _f_lp_pooling  # noqa: E402
from ._functional import padding as _f_padding  # noqa: E402
from ._functional import pooling as _f_pooling  # noqa: E402
from ._functional import pooling3d as _f_pooling3d  # noqa: E402
from ._functional import unpooling as _f_unpooling  # noqa: E402
from ._functional.conv import *  # noqa: E402, F403
from ._functional.fold import *  # noqa: E402, F403
from ._functional.interpolation import *  # noqa: E402, F403
from ._functional.lp_pooling import *  # noqa: E402, F403
from ._functional.padding import *  # noqa: E402, F403
from ._functional.pooling import *  # noqa: E402, F403
from ._functional.pooling3d import *  # noqa: E402, F403
from ._functional.unpooling import *  # noqa: E402, F403

__all__ += [
    *_f_conv.__all__,
    *_f_pooling.__all__,
    *_f_pooling3d.__all__,
    *_f_lp_pooling.__all__,
    *_f_unpooling.__all__,
    *_f_padding.__all__,
    *_f_fold.__all__,
    *_f_interpolation.__all__,
]

# ----- normalisation, embedding, more activations, distances and losses ----------------------
from ._functional import activation as _f_activation  # noqa: E402
from ._functional import distance as _f_distance  # noqa: E402
from ._functional import embedding as _f_embedding  # noqa: E402
from ._functional import loss as _f_loss  # noqa: E402
from ._functional import margin_loss as _f_margin_loss  # noqa: E402
from ._functional import norm as _f_norm  # noqa: E402
from ._functional.activation import *  # noqa: E402, F403
from ._functional.distance import *  # noqa: E402, F403
from ._functional.embedding import *  # noqa: E402, F403
from ._functional.loss import *  # noqa: E402, F403
from ._functional.margin_loss import *  # noqa: E402, F403
from ._functional.norm import *  # noqa: E402, F403

__all__ += [
    *_f_norm.__all__,
    *_f_embedding.__all__,
    *_f_activation.__all__,
    *_f_distance.__all__,
    *_f_loss.__all__,
    *_f_margin_loss.__all__,
]
# ----- attention (implemented in _functional/attention.py) -----------------------------------

from ._functional.attention import (  # noqa: E402
    multi_head_attention_forward,
    scaled_dot_product_attention,
)

__all__ += ["multi_head_attention_forward", "scaled_dot_product_attention"]

# ----- CTC loss (implemented in _functional/ctc.py) -----------------------------------------
from ._functional.ctc import ctc_loss  # noqa: E402

__all__ += ["ctc_loss"]

# ----- in-place activations, rrelu (in _functional/activation.py) and channel-wise dropout ----
from ._functional import dropout as _f_dropout  # noqa: E402
from ._functional.dropout import *  # noqa: E402, F403

__all__ += [*_f_dropout.__all__]

# ----- pixel and channel shuffles (implemented in _functional/shuffle.py) --------------------
from ._functional import shuffle as _f_shuffle  # noqa: E402
from ._functional.shuffle import *  # noqa: E402, F403

__all__ += [*_f_shuffle.__all__]


# ----- sampling grids (implemented in _functional/grid_sample.py) ---------------------------
from ._functional.grid_sample import affine_grid, grid_sample  # noqa: E402

if TYPE_CHECKING:
    from .._C import Tensor
    from .._typing import DType

__all__ += ["affine_grid", "grid_sample"]

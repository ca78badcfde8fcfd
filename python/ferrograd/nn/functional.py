"""Functional forms of the layers, activations and losses (``ferrograd.nn.functional``).

Each is a thin argument adapter over a Rust op; the numerics (stable
log-sum-exp forms, backward rules) live in ``src/ops``.
"""

from __future__ import annotations

from .. import _C
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


def _activation(input, inplace, compute):
    # In place, the result is written into the input as `Tensor.relu_` would
    # be, so a backward needing the input (silu) keeps its old value.
    return _C._apply_inplace(input, compute) if inplace else compute()


# ----- activations ---------------------------------------------------------------------------


def relu(input, inplace=False):
    return _activation(input, inplace, lambda: _C.relu(input))


def relu6(input, inplace=False):
    return _activation(input, inplace, lambda: _C.hardtanh(input, 0.0, 6.0))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return _C.leaky_relu_(input, negative_slope)
    return _C.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _C.leaky_relu_(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _C.elu_(input, alpha) if inplace else _C.elu(input, alpha)


def elu_(input, alpha=1.0):
    return _C.elu_(input, alpha)


def gelu(input, approximate="none"):
    return _C.gelu(input, approximate)


def silu(input, inplace=False):
    return _activation(input, inplace, lambda: _C.silu(input))


def softplus(input, beta=1.0, threshold=20.0):
    return _C.softplus(input, beta, threshold)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _activation(input, inplace, lambda: _C.hardtanh(input, min_val, max_val))


def _softmax_dim(ndim):
    # PyTorch's legacy implicit choice when dim is omitted.
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability ``p`` while training, scaling the rest by
    ``1 / (1 - p)``; the identity when ``training=False``."""
    if not training:
        if not isinstance(input, _C.Tensor) and not hasattr(type(input), "__ferrograd_function__"):
            raise TypeError(
                f"dropout(): argument 'input' (position 1) must be Tensor, "
                f"not {type(input).__name__}"
            )
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        return input
    out = _C.dropout(input, p, training)
    return _inplace(input, out) if inplace and out is not input else out


def linear(input, weight, bias=None):
    return _C.linear(input, weight, bias)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """``input`` divided by its ``p``-norm over ``dim``, ``v / max(||v||_p, eps)``.

    The ``eps`` floor keeps an all-zero slice at zero instead of NaN; there the
    gradient is ``1 / eps`` times the incoming one, as in PyTorch.
    """
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps)
    return input / denom


# ----- losses --------------------------------------------------------------------------------


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _C.mse_loss(input, target, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _C.l1_loss(input, target, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return _C.smooth_l1_loss(input, target, _reduction(size_average, reduce, reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0):
    return _C.huber_loss(input, target, reduction, delta)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    return _C.binary_cross_entropy(
        input, target, weight, _reduction(size_average, reduce, reduction)
    )


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
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


def nll_loss(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
):
    _check_batch_size(input, target)
    return _C.nll_loss(
        input, target, weight, ignore_index, _reduction(size_average, reduce, reduction)
    )


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    _check_batch_size(input, target)
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

# ----- normalisation, embedding, more activations and losses ---------------------------------
# Each topic lives in a private file under _functional/ and is re-exported here.
from ._functional import activation as _f_activation  # noqa: E402
from ._functional import loss as _f_loss  # noqa: E402
from ._functional import norm as _f_norm  # noqa: E402
from ._functional.activation import *  # noqa: E402, F403
from ._functional.conv import *  # noqa: E402, F403
from ._functional.loss import *  # noqa: E402, F403
from ._functional.norm import *  # noqa: E402, F403

__all__ += [*_f_norm.__all__, *_f_activation.__all__, *_f_loss.__all__]
# ----- attention (implemented in _functional/attention.py) -----------------------------------

from ._functional.attention import (  # noqa: E402
    multi_head_attention_forward,
    scaled_dot_product_attention,
)

__all__ += ["multi_head_attention_forward", "scaled_dot_product_attention"]

# ----- 3-d convolution and pooling (implemented in _functional/conv3d.py) ---------------------
from ._functional.conv3d import avg_pool3d, conv3d, max_pool3d, max_pool3d_with_indices  # noqa: E402

__all__ += ["avg_pool3d", "conv3d", "max_pool3d", "max_pool3d_with_indices"]

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

# ----- RMS norm and local response norm (implemented in _functional/norm_extra.py) ------------
from ._functional.norm_extra import local_response_norm, rms_norm  # noqa: E402

__all__ += ["local_response_norm", "rms_norm"]

# ----- LP pooling, max unpooling, 3-d adaptive pooling, upsample (_functional/pool_extra.py) --
from ._functional import pool_extra as _f_pool_extra  # noqa: E402
from ._functional.pool_extra import *  # noqa: E402, F403

__all__ += [*_f_pool_extra.__all__]

# ----- margin losses, pdist, gumbel_softmax (implemented in _functional/loss_extra.py) -------
from ._functional import loss_extra as _f_loss_extra  # noqa: E402
from ._functional.loss_extra import *  # noqa: E402, F403

__all__ += [*_f_loss_extra.__all__]


# ----- sampling grids (implemented in _functional/grid_sample.py) ---------------------------
from ._functional.grid_sample import affine_grid, grid_sample  # noqa: E402

__all__ += ["affine_grid", "grid_sample"]

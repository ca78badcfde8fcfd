"""Functional forms of the layers, activations and losses (``ferrograd.nn.functional``).

Each is a thin argument adapter over a Rust op; the numerics (stable
log-sum-exp forms, backward rules) live in ``src/ops``.
"""

from __future__ import annotations

# ----- activations, softmax, linear maps, the elementwise and class losses -------------------
from ._functional import classification_loss as _f_classification_loss
from ._functional import core_activation as _f_core_activation
from ._functional import linear as _f_linear
from ._functional import regression_loss as _f_regression_loss
from ._functional import softmax as _f_softmax
from ._functional.classification_loss import *  # noqa: F403
from ._functional.core_activation import *  # noqa: F403
from ._functional.linear import *  # noqa: F403
from ._functional.regression_loss import *  # noqa: F403
from ._functional.softmax import *  # noqa: F403

__all__ = [
    *_f_core_activation.__all__,
    *_f_softmax.__all__,
    *_f_linear.__all__,
    *_f_regression_loss.__all__,
    *_f_classification_loss.__all__,
]

# ----- convolution, pooling, padding, unfold/fold, interpolation ------------------------------
# Each topic lives in a private file under _functional/ and is re-exported here.
from ._functional import adaptive_pooling as _f_adaptive_pooling  # noqa: E402
from ._functional import avg_pooling as _f_avg_pooling  # noqa: E402
from ._functional import conv as _f_conv  # noqa: E402
from ._functional import fold as _f_fold  # noqa: E402
from ._functional import interpolation as _f_interpolation  # noqa: E402
from ._functional import lp_pooling as _f_lp_pooling  # noqa: E402
from ._functional import max_pooling as _f_max_pooling  # noqa: E402
from ._functional import padding as _f_padding  # noqa: E402
from ._functional import pooling3d as _f_pooling3d  # noqa: E402
from ._functional import unpooling as _f_unpooling  # noqa: E402
from ._functional.adaptive_pooling import *  # noqa: E402, F403
from ._functional.avg_pooling import *  # noqa: E402, F403
from ._functional.conv import *  # noqa: E402, F403
from ._functional.fold import *  # noqa: E402, F403
from ._functional.interpolation import *  # noqa: E402, F403
from ._functional.lp_pooling import *  # noqa: E402, F403
from ._functional.max_pooling import *  # noqa: E402, F403
from ._functional.padding import *  # noqa: E402, F403
from ._functional.pooling3d import *  # noqa: E402, F403
from ._functional.unpooling import *  # noqa: E402, F403

__all__ += [
    *_f_conv.__all__,
    *_f_max_pooling.__all__,
    *_f_avg_pooling.__all__,
    *_f_adaptive_pooling.__all__,
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
# ----- attention (in _functional/multi_head_attention.py and attention.py) ------------------

from ._functional.attention import scaled_dot_product_attention  # noqa: E402
from ._functional.multi_head_attention import multi_head_attention_forward  # noqa: E402

__all__ += ["multi_head_attention_forward", "scaled_dot_product_attention"]

# ----- CTC loss (implemented in _functional/ctc.py) -----------------------------------------
from ._functional.ctc import ctc_loss  # noqa: E402

__all__ += ["ctc_loss"]

# ----- dropout, channel-wise and alpha dropout (in _functional/dropout.py) -------------------
from ._functional import dropout as _f_dropout  # noqa: E402
from ._functional.dropout import *  # noqa: E402, F403

__all__ += [*_f_dropout.__all__]

# ----- pixel and channel shuffles (implemented in _functional/shuffle.py) --------------------
from ._functional import shuffle as _f_shuffle  # noqa: E402
from ._functional.shuffle import *  # noqa: E402, F403

__all__ += [*_f_shuffle.__all__]


# ----- sampling grids (implemented in _functional/grid_sample.py) ---------------------------
from ._functional.grid_sample import affine_grid, grid_sample  # noqa: E402

__all__ += ["affine_grid", "grid_sample"]

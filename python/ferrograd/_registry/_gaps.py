"""Gaps the coverage matrix found in ops declared elsewhere, kept in one place so
they are easy to see and to close.

``REFUSE``: features an op does not support; using them raises the error
named in the reason (these join the op's ``refuse``). ``DEFECTS``: cells that
fail and are not fixed yet, with what is known; the matrix still runs them as
expected failures and docs/coverage.md lists them as open.
"""

from __future__ import annotations

import dataclasses

from .schema import COMPILE, FORWARD, GRAD, GRADGRAD, JACOBIAN, JVP, VMAP, VMAP_INPLACE

_NO_INPLACE_RULE = ("vmap has no batching rule for the in-place form: it raises \"there is no "
                    "batching rule for Tensor.{name}_\"")
_NO_RULE = "vmap has no batching rule: it raises an error naming the op"
_NOT_BATCHED = "vmap has no batching rule: the binding refuses a BatchedTensor argument (TypeError)"

REFUSE: dict = {
    **{n: {VMAP_INPLACE: _NO_INPLACE_RULE.format(name=n)}
       for n in ("cumsum", "cumprod", "t", "transpose", "unsqueeze", "squeeze", "tril", "triu")},
    **{n: {VMAP_INPLACE: "vmap of the in-place form with a batched index is not implemented "
                         "(it raises a shape error)"}
       for n in ("scatter", "scatter_add", "index_add")},
    "conv_transpose1d": {VMAP: _NO_RULE},
    "conv_transpose2d": {VMAP: _NO_RULE},
    "gaussian_nll_loss": {VMAP: "its argument check calls Tensor.any, which has no batching rule"},
    "bilinear": {VMAP: _NOT_BATCHED},
    "scaled_dot_product_attention": {VMAP: _NOT_BATCHED},
    "adaptive_max_pool3d": {
        VMAP: "its Python path reads values with .item(), which vmap refuses",
        COMPILE: "its Python path reads values into NumPy, which a replay cannot re-run",
    },
}

_TIES = ("the sample draws tied values (hypothesis finds all-zero inputs), where the gradient "
         "is a subgradient and finite differences disagree; the sample needs distinct values")
_KINK = ("the sample draws points on the op's kink (max(0, .) or a zero distance), where finite "
         "differences disagree with the subgradient; the sample needs to keep off it")

DEFECTS: dict = {
    "max_pool2d": {GRAD: _TIES, GRADGRAD: _TIES, JVP: _TIES},
    "pairwise_distance": {GRAD: _KINK, GRADGRAD: _KINK, JVP: _KINK},
    "pdist": {GRADGRAD: _KINK},
    "margin_ranking_loss": {GRAD: _KINK, GRADGRAD: _KINK, JVP: _KINK},
    "triplet_margin_loss": {GRAD: _KINK, GRADGRAD: _KINK, JVP: _KINK},
}


def apply(op):
    """``op`` with the gaps listed for it."""
    refuse, defects = REFUSE.get(op.name), dict(DEFECTS.get(op.name, {}))
    for feature, kind in UNANALYSED.get(op.name, {}).items():
        defects.setdefault(feature, f"fails with {kind}; not analysed yet")
    if not refuse and not defects:
        return op
    return dataclasses.replace(op, refuse={**op.refuse, **(refuse or {})},
                               defects={**op.defects, **(defects or {})})

#: Cells that failed when the matrix first ran over every op, not analysed yet: each
#: runs as an expected failure and is listed on docs/coverage.md until it is fixed and
#: removed here (the exception type it raised is noted).
UNANALYSED: dict = {
    "index_copy": {GRAD: "GradcheckError", JVP: "AssertionError", VMAP_INPLACE: "ValueError"},
    "index_put": {GRAD: "TypeError", GRADGRAD: "TypeError", JVP: "TypeError", VMAP_INPLACE: "ValueError", COMPILE: "TypeError", JACOBIAN: "TypeError"},
    "put": {GRAD: "GradcheckError", VMAP: "RuntimeError", VMAP_INPLACE: "ValueError", COMPILE: "RuntimeError"},
    "from_numpy": {FORWARD: "TypeError", COMPILE: "TypeError"},
    "scalar_tensor": {FORWARD: "TypeError", COMPILE: "TypeError"},
    "hann_window": {FORWARD: "AssertionError", COMPILE: "RuntimeError"},
    "hamming_window": {FORWARD: "AssertionError", COMPILE: "RuntimeError"},
    "blackman_window": {FORWARD: "AssertionError", COMPILE: "failure"},
    "bartlett_window": {FORWARD: "AssertionError", COMPILE: "failure"},
    "kaiser_window": {FORWARD: "AssertionError", COMPILE: "RuntimeError"},
    "relu_": {GRAD: "RuntimeError", GRADGRAD: "RuntimeError", JVP: "AssertionError", VMAP: "TypeError", COMPILE: "RuntimeError", JACOBIAN: "RuntimeError"},
    "elu_": {GRAD: "RuntimeError", GRADGRAD: "RuntimeError", VMAP: "TypeError", COMPILE: "RuntimeError", JACOBIAN: "RuntimeError", JVP: "AssertionError"},
    "leaky_relu_": {GRAD: "RuntimeError", GRADGRAD: "RuntimeError", JVP: "AssertionError", VMAP: "TypeError", COMPILE: "RuntimeError", JACOBIAN: "RuntimeError"},
    "hardtanh_": {GRAD: "RuntimeError", GRADGRAD: "RuntimeError", JVP: "AssertionError", VMAP: "TypeError", COMPILE: "RuntimeError", JACOBIAN: "RuntimeError"},
    "celu_": {GRAD: "RuntimeError", GRADGRAD: "RuntimeError", JVP: "AssertionError", VMAP: "TypeError", COMPILE: "RuntimeError", JACOBIAN: "RuntimeError"},
    "selu_": {GRAD: "RuntimeError", GRADGRAD: "RuntimeError", JVP: "AssertionError", VMAP: "TypeError", COMPILE: "RuntimeError", JACOBIAN: "RuntimeError"},
    "threshold_": {GRAD: "RuntimeError", GRADGRAD: "RuntimeError", VMAP: "TypeError", COMPILE: "RuntimeError", JACOBIAN: "RuntimeError"},
    "rrelu_": {GRAD: "RuntimeError", GRADGRAD: "RuntimeError", JVP: "AssertionError", VMAP: "TypeError", COMPILE: "RuntimeError", JACOBIAN: "RuntimeError"},
    "max_unpool2d": {GRAD: "AssertionError", GRADGRAD: "AssertionError", JVP: "AssertionError", VMAP: "AssertionError", COMPILE: "AssertionError", JACOBIAN: "AssertionError"},
    "max_unpool1d": {GRAD: "AssertionError", GRADGRAD: "AssertionError", JVP: "AssertionError", VMAP: "AssertionError", COMPILE: "AssertionError", JACOBIAN: "AssertionError"},
    "max_unpool3d": {GRAD: "AssertionError", GRADGRAD: "AssertionError", JVP: "AssertionError", VMAP: "AssertionError", COMPILE: "AssertionError", JACOBIAN: "AssertionError"},
    "max_pool1d_with_indices": {GRAD: "failure", GRADGRAD: "failure", JVP: "failure", VMAP: "failure", COMPILE: "failure", JACOBIAN: "failure"},
    "max_pool2d_with_indices": {GRAD: "failure", GRADGRAD: "failure", JVP: "failure", VMAP: "failure", COMPILE: "failure", JACOBIAN: "failure"},
    "max_pool3d_with_indices": {GRAD: "failure", GRADGRAD: "failure", JVP: "failure", VMAP: "failure", COMPILE: "failure", JACOBIAN: "failure"},
    "adaptive_max_pool1d_with_indices": {GRAD: "failure", GRADGRAD: "failure", JVP: "failure", VMAP: "failure", COMPILE: "failure", JACOBIAN: "failure"},
    "adaptive_max_pool2d_with_indices": {GRAD: "failure", GRADGRAD: "failure", JVP: "failure", VMAP: "failure", COMPILE: "failure", JACOBIAN: "failure"},
    "adaptive_max_pool3d_with_indices": {GRAD: "failure", GRADGRAD: "failure", JVP: "failure", VMAP: "failure", COMPILE: "failure", JACOBIAN: "failure"},
    "lp_pool3d": {GRAD: "AssertionError", GRADGRAD: "AssertionError", JVP: "AssertionError", VMAP: "AssertionError", COMPILE: "AssertionError", JACOBIAN: "AssertionError"},
    "upsample": {GRAD: "AssertionError", GRADGRAD: "AssertionError", JVP: "AssertionError", VMAP: "AssertionError", COMPILE: "AssertionError", JACOBIAN: "AssertionError"},
    "upsample_bilinear": {GRAD: "AssertionError", GRADGRAD: "failure", JVP: "AssertionError", VMAP: "AssertionError", COMPILE: "failure", JACOBIAN: "failure"},
    "upsample_nearest": {GRAD: "AssertionError", GRADGRAD: "failure", JVP: "AssertionError", VMAP: "AssertionError", COMPILE: "failure", JACOBIAN: "failure"},
    "ctc_loss": {GRAD: "AssertionError", GRADGRAD: "AssertionError", JVP: "AssertionError", VMAP: "AssertionError", COMPILE: "AssertionError", JACOBIAN: "AssertionError"},
    "multi_margin_loss": {GRAD: "AssertionError", GRADGRAD: "failure", JVP: "AssertionError", VMAP: "AssertionError", COMPILE: "failure", JACOBIAN: "failure"},
    "multilabel_margin_loss": {GRAD: "failure", GRADGRAD: "failure", JVP: "failure", VMAP: "failure", COMPILE: "failure", JACOBIAN: "failure"},
    "triplet_margin_with_distance_loss": {GRAD: "failure", GRADGRAD: "failure", JVP: "failure", VMAP: "failure", COMPILE: "failure", JACOBIAN: "failure"},
    "multi_head_attention_forward": {GRAD: "failure", GRADGRAD: "failure", JVP: "failure", VMAP: "failure", COMPILE: "failure", JACOBIAN: "failure"},
    "binary_cross_entropy": {VMAP: "failure"},
    "binary_cross_entropy_with_logits": {VMAP: "failure"},
    "rand_like": {VMAP: "RuntimeError"},
    "randn_like": {VMAP: "RuntimeError"},
    "addmm": {VMAP_INPLACE: "ValueError"},
    "addbmm": {VMAP_INPLACE: "ValueError"},
    "baddbmm": {VMAP_INPLACE: "ValueError"},
    "addmv": {VMAP_INPLACE: "ValueError"},
    "addr": {VMAP_INPLACE: "ValueError"},
    "quantile": {COMPILE: "RuntimeError"},
    "nanquantile": {COMPILE: "RuntimeError"},
    "bincount": {COMPILE: "RuntimeError"},
    "isin": {COMPILE: "RuntimeError"},
    "histc": {VMAP: "RuntimeError", COMPILE: "RuntimeError"},
    "mode": {VMAP: "TypeError"},
    "unique": {COMPILE: "RuntimeError"},
    "unique_consecutive": {COMPILE: "failure"},
    "searchsorted": {COMPILE: "RuntimeError"},
    "bucketize": {COMPILE: "RuntimeError"},
    "polygamma": {VMAP: "RuntimeError"},
    "scatter_reduce": {VMAP_INPLACE: "failure"},
    "index_fill": {VMAP_INPLACE: "failure", COMPILE: "RuntimeError"},
    "masked_scatter": {VMAP_INPLACE: "failure", COMPILE: "RuntimeError"},
    "unravel_index": {COMPILE: "RuntimeError"},
    "randint_like": {VMAP: "RuntimeError"},
    "rrelu": {VMAP: "RuntimeError", COMPILE: "RuntimeError"},
    "embedding_bag": {VMAP: "TypeError", COMPILE: "RuntimeError"},
}

#: vmap cells of ops without a differentiable input, failing since the matrix batches
#: their first array argument (before, their vmap cell did not use the batched value).
for _name, _kind in {"one_hot": "RuntimeError", "bernoulli": "TypeError", "isin": "RuntimeError",
                     "searchsorted": "RuntimeError", "bucketize": "TypeError",
                     "unravel_index": "RuntimeError"}.items():
    UNANALYSED.setdefault(_name, {})[VMAP] = _kind
_VALUE_SIZED = ("the result's size depends on the values, so vmap cannot batch it (PyTorch "
                "refuses too); the error should name the op, it speaks of .item()")
DEFECTS.setdefault("bincount", {})[VMAP] = _VALUE_SIZED
DEFECTS.setdefault("argwhere", {})[VMAP] = _VALUE_SIZED.replace("it speaks of .item()",
                                                                 "it names nonzero")

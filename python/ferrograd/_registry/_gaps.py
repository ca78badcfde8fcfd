"""Gaps the coverage matrix found in ops declared elsewhere, kept in one place so
they are easy to see and to close.

``REFUSE``: features an op does not support; using them raises the error
named in the reason (these join the op's ``refuse``). ``DEFECTS``: cells that
fail and are not fixed yet, with what is known; the matrix still runs them as
expected failures and docs/coverage.md lists them as open.
"""

from __future__ import annotations

import dataclasses

from .schema import COMPILE, GRAD, GRADGRAD, JACOBIAN, JVP, VMAP, VMAP_INPLACE

_NO_INPLACE_RULE = ("vmap has no batching rule for the in-place form: it raises \"there is no "
                    "batching rule for Tensor.{name}_\"")
_NO_RULE = "vmap has no batching rule: it raises an error naming the op"
_NOT_BATCHED = "vmap has no batching rule: the binding refuses a BatchedTensor argument (TypeError)"

REFUSE: dict = {
    **{n: {VMAP_INPLACE: _NO_INPLACE_RULE.format(name=n)}
       for n in ("t", "transpose", "unsqueeze", "squeeze")},
    "histc": {VMAP: "its counts are computed in NumPy from the values, which vmap cannot read"},
    **{n: {COMPILE: "with training=True it draws one slope per non-positive element, as PyTorch's "
                    "generator does: a count that depends on the values, which a replay cannot "
                    "redraw (compile raises that `rrelu` has no replay rule)"}
       for n in ("rrelu", "rrelu_")},
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
    "amax": {GRAD: "with ties the gradient goes to one element instead of being shared evenly "
                   "as PyTorch shares it", GRADGRAD: "as grad", JVP: "as grad"},
    "amin": {GRAD: "with ties the gradient goes to one element instead of being shared evenly "
                   "as PyTorch shares it", GRADGRAD: "as grad", JVP: "as grad"},
    "max_pool2d": {GRAD: _TIES, GRADGRAD: _TIES, JVP: _TIES},
    "pairwise_distance": {GRAD: _KINK, GRADGRAD: _KINK, JVP: _KINK},
    "pdist": {GRADGRAD: _KINK},
    "margin_ranking_loss": {GRAD: _KINK, GRADGRAD: _KINK, JVP: _KINK},
    "triplet_margin_loss": {GRAD: _KINK, GRADGRAD: _KINK, JVP: _KINK},
    **{n: {JVP: "the seeded draw can be an all-zero matrix, whose rank changes under the finite "
                "difference (1e11 against the tangent 0); the sample needs full-rank matrices"}
       for n in ("pinv", "pinverse")},
    "bernoulli": {VMAP: "the binding does not dispatch a batched input (TypeError); the cell "
                        "batched nothing before (its input has grad=False, and check_vmap's "
                        "fallback index does not reach rebuild), so the random-mode check exposes it"},
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
    "quantile": {COMPILE: "RuntimeError"},
    "nanquantile": {COMPILE: "RuntimeError"},
    "bincount": {COMPILE: "RuntimeError"},
    "isin": {COMPILE: "RuntimeError"},
    "histc": {COMPILE: "RuntimeError"},
    "unique": {COMPILE: "RuntimeError"},
    "unique_consecutive": {COMPILE: "failure"},
    "searchsorted": {COMPILE: "RuntimeError"},
    "bucketize": {COMPILE: "RuntimeError"},
    "unravel_index": {COMPILE: "RuntimeError"},
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

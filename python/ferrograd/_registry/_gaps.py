"""Gaps the coverage matrix found in ops declared elsewhere, kept in one place so
they are easy to see and to close.

``REFUSE``: features an op does not support; using them raises the error
named in the reason (these join the op's ``refuse``). ``DEFECTS``: cells that
fail and are not fixed yet, with what is known; the matrix still runs them as
expected failures and docs/coverage.md lists them as open.
"""

from __future__ import annotations

import dataclasses

from .schema import COMPILE, GRAD, GRADGRAD, JVP, VMAP, VMAP_INPLACE

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
    "amax": {GRAD: "with ties the gradient goes to one element instead of being shared evenly "
                   "as PyTorch shares it", GRADGRAD: "as grad", JVP: "as grad"},
    "amin": {GRAD: "with ties the gradient goes to one element instead of being shared evenly "
                   "as PyTorch shares it", GRADGRAD: "as grad", JVP: "as grad"},
    "var": {GRAD: "a reduced dimension of size 1 gives NaN (correction 1), which gradcheck cannot "
                  "compare; the sample needs two elements per reduction", GRADGRAD: "as grad"},
    "std": {GRAD: "as var", GRADGRAD: "as var"},
    "float": {GRAD: "the result is float32, too coarse for float64 finite differences",
              JVP: "as grad"},
    "max_pool2d": {GRAD: _TIES, GRADGRAD: _TIES, JVP: _TIES},
    "rms_norm": {GRAD: "near-zero rows make the normalisation ill-conditioned for finite "
                       "differences; the sample needs rows away from zero",
                 GRADGRAD: "as grad", JVP: "as grad"},
    "pairwise_distance": {GRAD: _KINK, GRADGRAD: _KINK, JVP: _KINK},
    "pdist": {GRADGRAD: _KINK},
    "margin_ranking_loss": {GRAD: _KINK, GRADGRAD: _KINK, JVP: _KINK},
    "triplet_margin_loss": {GRAD: _KINK, GRADGRAD: _KINK, JVP: _KINK},
}


def apply(op):
    """``op`` with the gaps listed for it."""
    refuse, defects = REFUSE.get(op.name), DEFECTS.get(op.name)
    if not refuse and not defects:
        return op
    return dataclasses.replace(op, refuse={**op.refuse, **(refuse or {})},
                               defects={**op.defects, **(defects or {})})

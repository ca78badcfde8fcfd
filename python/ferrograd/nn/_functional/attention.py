"""Scaled dot-product attention (``scaled_dot_product_attention``): its masks
(boolean, additive, causal), dropout and grouped-query heads, and the one
autograd node of its unmasked form.

It is a composition of differentiable ops (batched matmul, softmax, masking), so its
gradients of any order come from the graph it records; the unmasked form without dropout
is one node over ``_C._sdpa_forward`` and ``_C._sdpa_backward``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ... import _C, _dispatch
from ..._autocast import autocast_op as _autocast_op
from ...autograd import Function

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = ["scaled_dot_product_attention"]

_NEG_INF = float("-inf")


def _dtype_name(dtype):
    # PyTorch's C++ spelling of scalar types in its messages.
    return {_C.float32: "float", _C.float64: "double", _C.int64: "long int", _C.bool: "bool"}.get(
        dtype, str(dtype)
    )


def _repeat_heads(t, times):
    # repeat_interleave along the head dimension (-3) without a copy until the reshape.
    if times == 1:
        return t
    shape = list(t.shape)
    expanded = t.unsqueeze(-3).expand(*shape[:-2], times, *shape[-2:])
    shape[-3] *= times
    return expanded.reshape(*shape)


def _safe_softmax(scores, masked):
    # A row whose every entry is masked gets zero weights rather than NaN, as PyTorch's
    # math path does.
    weights = scores.softmax(-1)
    if masked:
        # Filled whether or not a row is empty: no value is read into Python, so a compiled
        # step replays it.
        empty = (scores == _NEG_INF).all(-1, keepdim=True)
        weights = weights.masked_fill(empty, 0.0)
    return weights


class _Attention(Function):
    """Unmasked or causal attention as one node: the native kernel keeps each head's scores
    in cache between the products and the softmax, forward and backward."""

    @staticmethod
    def forward(ctx, q, k, v, scale, causal):
        out, weights = _C._sdpa_forward(q, k, v, scale, causal)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale, ctx.causal = scale, causal
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, weights = ctx.saved_tensors
        needs = tuple(ctx.needs_input_grad[:3])
        if _C.is_grad_enabled():
            grads = _attention_backward_graph(g, q, k, v, ctx.scale, ctx.causal, needs)
        else:
            # A masked weight is exactly zero, so the rule needs no mask of its own.
            grads = _C._sdpa_backward(g, q, k, v, weights, ctx.scale, needs)
        return (*grads, None, None)


_Attention._backward_name = "ScaledDotProductFlashAttentionForCpuBackward0"


def _causal_scores(scores, length, source):
    # Query i sees keys 0..i (the top-left aligned mask PyTorch's is_causal means).
    allowed = _C.arange(length).unsqueeze(1) >= _C.arange(source)
    return scores.masked_fill(allowed.logical_not(), _NEG_INF)


def _attention_backward_graph(g, q, k, v, scale, causal, needs):
    # The same rule in recorded ops, the weights recomputed from the inputs, so a graph of
    # the backward (create_graph, forward-mode AD) sees their dependence on q and k.
    qs = q * scale
    scores = qs.matmul(k.transpose(-2, -1))
    if causal:
        scores = _causal_scores(scores, q.shape[-2], k.shape[-2])
    weights = scores.softmax(-1)
    dv = weights.transpose(-2, -1).matmul(g) if needs[2] else None
    if not (needs[0] or needs[1]):
        return None, None, dv
    dw = g.matmul(v.transpose(-2, -1))
    ds = weights * (dw - (dw * weights).sum(-1, keepdim=True))
    dq = ds.matmul(k) * scale if needs[0] else None
    dk = ds.transpose(-2, -1).matmul(qs) if needs[1] else None
    return dq, dk, dv


def _fusable(query, key, value):
    # The kernel takes heads of one batch shape (no broadcasting).
    batch = query.shape[:-2]
    return (
        key.dim() == value.dim() == query.dim()
        and key.shape[:-2] == batch
        and value.shape[:-2] == batch
    )


@_autocast_op("scaled_dot_product_attention")
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Scaled dot-product attention: ``softmax(query @ key.T * scale + mask) @ value`` over the
    last two dimensions.

    A query whose every key is masked gets zero weights (a zero output) rather than
    NaN, as in PyTorch.

    Args:
        query (Tensor): ``(*, L, E)``.
        key (Tensor): ``(*, S, E)``.
        value (Tensor): ``(*, S, Ev)``.
        attn_mask (Tensor, optional): broadcastable to ``(*, L, S)``; a bool mask is
            True where a query may attend, a float mask is added to the scores.
            Default: ``None``.
        dropout_p (float): the dropout probability of the attention weights; applied
            whenever it is above 0 (pass 0 in evaluation). Default: ``0.0``.
        is_causal (bool): query ``i`` attends to keys ``0..i`` only (no
            ``attn_mask`` then). Default: ``False``.
        scale (float, optional): the score scale. Default: ``1 / sqrt(E)``.
        enable_gqa (bool): grouped-query attention: ``key``/``value`` may have fewer
            heads (dimension -3) than ``query``, each shared by a group of query
            heads. Default: ``False``.

    Shape:
        - Query: ``(*, L, E)``; key: ``(*, S, E)``; value: ``(*, S, Ev)``.
        - Output: ``(*, L, Ev)``.

    Returns:
        Tensor: the attention output.

    Example::

        >>> q = torch.ones(2, 4, 3, 8)
        >>> k = v = torch.ones(2, 4, 5, 8)
        >>> F.scaled_dot_product_attention(q, k, v).shape
        ferrograd.Size([2, 4, 3, 8])
        >>> v = torch.arange(3.0).reshape(3, 1)
        >>> F.scaled_dot_product_attention(torch.zeros(3, 2), torch.zeros(3, 2), v, is_causal=True)
        tensor([[0.0000],
                [0.5000],
                [1.0000]])
    """
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dimensions
    ([..., L, E], [..., S, E], [..., S, Ev] -> [..., L, Ev]). ``scale`` defaults to
    1/sqrt(E). A bool ``attn_mask`` marks with True the positions that take part; a float one
    is added to the scores; ``is_causal`` lets position i see positions <= i. ``dropout_p``
    drops attention weights (always, as PyTorch's function does: pass 0 in evaluation).
    ``enable_gqa`` lets key/value have fewer heads (dim -3) than query, each shared by a group
    of query heads."""
    if _dispatch.has_protocol(query, key, value, attn_mask) and not _dispatch.is_batched(
        query, key, value, attn_mask
    ):
        kwargs = dict(attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                      scale=scale, enable_gqa=enable_gqa)  # fmt: skip
        return _dispatch.dispatch(scaled_dot_product_attention, (query, key, value), kwargs)
    if _dispatch.is_batched(query, key, value, attn_mask):
        from ...func._nn_rules import sdpa_rule

        kwargs = dict(attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                      scale=scale, enable_gqa=enable_gqa)  # fmt: skip
        return sdpa_rule(scaled_dot_product_attention, (query, key, value), kwargs)
    for name, t in (("query", query), ("key", key), ("value", value)):
        _dispatch.check_tensor("scaled_dot_product_attention", t, name, None, passes=None)
    if attn_mask is not None and not isinstance(attn_mask, _C.Tensor) and not hasattr(
        type(attn_mask), "__ferrograd_function__"
    ):
        raise TypeError(
            "scaled_dot_product_attention(): argument 'attn_mask' must be Tensor or None, "
            f"not {type(attn_mask).__name__}"
        )
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_dtype_name(query.dtype)} key.dtype: {_dtype_name(key.dtype)} and value.dtype: "
            f"{_dtype_name(value.dtype)} instead."
        )
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} "
            "instead."
        )
    if not query.is_floating_point():
        raise RuntimeError(
            f"scaled_dot_product_attention: expected a floating point query, got "
            f"{_dtype_name(query.dtype)}"
        )
    if attn_mask is not None:
        if attn_mask.dtype != _C.bool and attn_mask.dtype != query.dtype:
            raise RuntimeError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {_dtype_name(attn_mask.dtype)} and  query.dtype: "
                f"{_dtype_name(query.dtype)} instead."
            )
        if is_causal:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                "is_causal=True"
            )
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hk == 0 or hv == 0 or hq % hk or hq % hv:
            raise RuntimeError(
                "Number of heads in key and value must divide the number of heads in query"
            )
        key = _repeat_heads(key, hq // hk)
        value = _repeat_heads(value, hq // hv)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] > 0 else 1.0
    if attn_mask is None and dropout_p == 0.0 and _fusable(query, key, value):
        return _Attention.apply(query, key, value, float(scale), bool(is_causal))
    scores = (query * scale).matmul(key.transpose(-2, -1))
    masked = False
    if is_causal:
        scores = _causal_scores(scores, query.shape[-2], key.shape[-2])
        masked = True
    elif attn_mask is not None:
        if attn_mask.dtype == _C.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), _NEG_INF)
        else:
            scores = scores + attn_mask
        masked = True
    weights = _safe_softmax(scores, masked)
    if dropout_p > 0.0:
        weights = _C.dropout(weights, dropout_p, True)
    return weights.matmul(value)

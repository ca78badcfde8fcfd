"""Multi-head attention (``multi_head_attention_forward``, the functional form of
``nn.MultiheadAttention``): PyTorch's shape checks, the packed or separate input
projections, ``bias_k``/``bias_v`` and zero-attention columns, key-padding masks, then
:func:`.attention.scaled_dot_product_attention` over the heads (or the explicit
softmax when the weights are wanted).

A composition of differentiable ops, so its gradients of any order come from the graph
it records.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

from ... import _C, _dispatch
from ..._autocast import autocast_op as _autocast_op
from .attention import _NEG_INF, scaled_dot_product_attention

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = ["multi_head_attention_forward"]


def _canonical_mask(mask, name, other_dtype, other_name, target_dtype, check_other=True):
    # Bool masks become float masks with -inf where True (MultiheadAttention's convention:
    # True means "do not attend").
    if mask is None:
        return None
    if mask.dtype != _C.bool and not mask.is_floating_point():
        raise ValueError(f"only bool and floating types of {name} are supported")
    if check_other and other_dtype is not None and mask.dtype != other_dtype:
        warnings.warn(
            f"Support for mismatched {name} and {other_name} is deprecated. Use same type for "
            "both instead.",
            stacklevel=3,
        )
    if mask.dtype == _C.bool:
        mask = _C.zeros(*mask.shape, dtype=target_dtype).masked_fill(mask, _NEG_INF)
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, _C.Tensor) and not _dispatch.is_batched(t):
            raise TypeError(
                f"multi_head_attention_forward(): {name} must be a Tensor, not {type(t).__name__}"
            )
    for name, t in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
        if t is not None and not isinstance(t, _C.Tensor) and not _dispatch.is_batched(t):
            raise TypeError(
                f"multi_head_attention_forward(): {name} must be a Tensor or None, not {type(t).__name__}"
            )
    if query.dim() not in (2, 3):
        raise ValueError(
            "query should be unbatched 2D or batched 3D tensor but received "
            f"{query.dim()}-D query tensor"
        )
    # The batched and unbatched checks differ only in the dimensions they expect.
    dim = query.dim()
    kind = "batched (3-D)" if dim == 3 else "unbatched (2-D)"
    if key.dim() != dim or value.dim() != dim:
        raise ValueError(
            f"For {kind} `query`, expected `key` and `value` to be {dim}-D but found "
            f"{key.dim()}-D and {value.dim()}-D tensors respectively"
        )
    if key_padding_mask is not None and key_padding_mask.dim() != dim - 1:
        raise ValueError(
            f"For {kind} `query`, expected `key_padding_mask` to be `None` or {dim - 1}-D "
            f"but found {key_padding_mask.dim()}-D tensor instead"
        )
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise ValueError(
                f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                f"but found {attn_mask.dim()}-D tensor instead"
            )
        if dim == 2 and attn_mask.dim() == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise ValueError(
                    f"For unbatched (2-D) `query`, expected `attn_mask` of shape {expected} "
                    f"but found {attn_mask.shape}"
                )
    return dim == 3


def _pad_last(t, value=0.0):
    # One extra column at the end of the last dimension (for add_bias_kv / add_zero_attn).
    extra = _C.full((*t.shape[:-1], 1), value, dtype=t.dtype)
    return _C.cat([t, extra], -1)


def _batch_major(t):
    # A sequence-first [L, N, E] view of batch-first memory, as nn.MultiheadAttention passes
    # with batch_first: its transpose is contiguous.
    return not t.is_contiguous() and t.transpose(0, 1).is_contiguous()


def _split_heads(t, num_heads):
    # [N, L, E] -> [N, H, L, E / H] as a view, even of a chunk of the packed projection.
    n, length, e = t.shape
    return t.reshape(n, length, num_heads, e // num_heads).transpose(1, 2)


def _in_projection_packed(q, k, v, w, b):
    from .. import functional as F

    if k is v:
        if q is k:
            proj = F.linear(q, w, b)
            return tuple(proj.chunk(3, -1))
        e = q.shape[-1]
        w_q, w_kv = w.split([e, 2 * e], 0)
        b_q, b_kv = b.split([e, 2 * e], 0) if b is not None else (None, None)
        kv = F.linear(k, w_kv, b_kv)
        k_out, v_out = kv.chunk(2, -1)
        return F.linear(q, w_q, b_q), k_out, v_out
    w_q, w_k, w_v = w.chunk(3, 0)
    b_q, b_k, b_v = b.chunk(3, 0) if b is not None else (None, None, None)
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


@_autocast_op("multi_head_attention_forward")
def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """The computation of :class:`~ferrograd.nn.MultiheadAttention` as a function, on
    sequence-first inputs: project query, key and value, split ``num_heads`` heads, attend,
    join the heads and project the result.

    Args:
        query (Tensor): ``(L, N, E)`` or unbatched ``(L, E)``.
        key (Tensor): ``(S, N, E)`` or ``(S, E)``.
        value (Tensor): ``(S, N, E)`` or ``(S, E)``.
        embed_dim_to_check (int): ``E``, checked against ``query``.
        num_heads (int): the number of heads; divides ``E``.
        in_proj_weight (Tensor, optional): ``(3 * E, E)``, the packed query, key and
            value projections (unless ``use_separate_proj_weight``).
        in_proj_bias (Tensor, optional): ``(3 * E,)``.
        bias_k (Tensor, optional): ``(1, 1, E)``, appended to the keys.
        bias_v (Tensor, optional): ``(1, 1, E)``, appended to the values.
        add_zero_attn (bool): append a zero key and value.
        dropout_p (float): the dropout probability of the attention weights.
        out_proj_weight (Tensor): ``(E, E)``, the output projection.
        out_proj_bias (Tensor, optional): ``(E,)``.
        training (bool): apply dropout. Default: ``True``.
        key_padding_mask (Tensor, optional): ``(N, S)``; True (bool) marks keys to
            ignore, a float mask is added. Default: ``None``.
        need_weights (bool): also return the attention weights. Default: ``True``.
        attn_mask (Tensor, optional): ``(L, S)`` or ``(N * num_heads, L, S)``; True
            (bool) marks pairs that may not attend, a float mask is added.
            Default: ``None``.
        use_separate_proj_weight (bool): use ``q_proj_weight``, ``k_proj_weight``
            and ``v_proj_weight`` instead of ``in_proj_weight``. Default: ``False``.
        q_proj_weight (Tensor, optional): ``(E, E)``. Default: ``None``.
        k_proj_weight (Tensor, optional): ``(E, kdim)``. Default: ``None``.
        v_proj_weight (Tensor, optional): ``(E, vdim)``. Default: ``None``.
        static_k (Tensor, optional): ``(N * num_heads, S, E / num_heads)``, keys
            used as they are instead of projecting ``key``. Default: ``None``.
        static_v (Tensor, optional): likewise for the values. Default: ``None``.
        average_attn_weights (bool): average the returned weights over the heads.
            Default: ``True``.
        is_causal (bool): a hint that ``attn_mask`` is the causal mask.
            Default: ``False``.

    Returns:
        tuple: ``(output, weights)``: ``output`` ``(L, N, E)`` (or ``(L, E)``);
        ``weights`` ``(N, L, S)`` averaged over heads or ``(N, num_heads, L, S)``,
        or ``None`` unless ``need_weights``.

    Example::

        >>> E, H = 4, 2
        >>> q = torch.ones(3, 1, E)
        >>> w_in, w_out = torch.ones(3 * E, E) / E, torch.eye(E)
        >>> out, weights = F.multi_head_attention_forward(
        ...     q, q, q, E, H, w_in, None, None, None, False, 0.0, w_out, None
        ... )
        >>> out.shape, weights.shape
        (ferrograd.Size([3, 1, 4]), ferrograd.Size([1, 3, 3]))
    """
    """The computation of ``nn.MultiheadAttention`` on sequence-first input ([L, N, E] or
    unbatched [L, E]): project query/key/value, split ``num_heads`` heads, attend, join and
    project. Masks follow PyTorch: a bool ``key_padding_mask``/``attn_mask`` marks with True
    what may NOT be attended; float masks are added. Returns ``(output, weights)``, weights
    averaged over heads when ``average_attn_weights`` and None unless ``need_weights``."""
    if _dispatch.has_protocol(query, key, value) and not _dispatch.is_batched(query, key, value):
        # A meta tensor or a jit.trace value: one call of its type's own.
        args = (query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias)
        kwargs = dict(training=training, key_padding_mask=key_padding_mask,
                      need_weights=need_weights, attn_mask=attn_mask,
                      use_separate_proj_weight=use_separate_proj_weight,
                      q_proj_weight=q_proj_weight, k_proj_weight=k_proj_weight,
                      v_proj_weight=v_proj_weight, static_k=static_k, static_v=static_v,
                      average_attn_weights=average_attn_weights, is_causal=is_causal)
        return _dispatch.dispatch(multi_head_attention_forward, args, kwargs)  # fmt: skip
    from .. import functional as F

    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(
        key_padding_mask,
        "key_padding_mask",
        None if attn_mask is None else attn_mask.dtype,
        "attn_mask",
        query.dtype,
    )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        # The mask is only a hint here: the causal path builds its own.
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise ValueError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise ValueError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    # Batch-first memory is projected and split into heads as it lies: transposing it to
    # sequence-first would cost a copy before each projection and after the heads' split.
    batch_first = (
        is_batched
        and not need_weights
        and bias_k is None
        and bias_v is None
        and not add_zero_attn
        and static_k is None
        and static_v is None
        and all(_batch_major(t) for t in (query, key, value))
    )
    if batch_first:
        q_in = query.transpose(0, 1)
        k_in = q_in if key is query else key.transpose(0, 1)
        v_in = k_in if value is key else value.transpose(0, 1)
        query, key, value = q_in, k_in, v_in
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise ValueError(
                f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                f"{value.shape[:2]}"
            )
        b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None,) * 3
        q = F.linear(query, q_proj_weight, b_q)
        k = F.linear(key, k_proj_weight, b_k)
        v = F.linear(value, v_proj_weight, b_v)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise ValueError(f"key shape {key.shape} does not match value shape {value.shape}")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                    f"{(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            expected = (bsz * num_heads, tgt_len, src_len)
            if tuple(attn_mask.shape) != expected:
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be {expected}."
                )
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise ValueError("bias cannot be added to static key.")
        k = _C.cat([k, bias_k.repeat(1, bsz, 1)], 0)
        v = _C.cat([v, bias_v.repeat(1, bsz, 1)], 0)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise ValueError(
            "bias_k is set but bias_v is None" if bias_k is not None else
            "bias_v is set but bias_k is None"
        )  # fmt: skip
    if batch_first:
        q, k, v = (_split_heads(t, num_heads) for t in (q, k, v))
        src_len = k.shape[2]
    else:
        q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
        k = (static_k if static_k is not None else
             k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1))  # fmt: skip
        v = (static_v if static_v is not None else
             v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1))  # fmt: skip
        if add_zero_attn:
            zeros = _C.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)
            k = _C.cat([k, zeros], 1)
            v = _C.cat([v, zeros], 1)
            if attn_mask is not None:
                attn_mask = _pad_last(attn_mask)
            if key_padding_mask is not None:
                key_padding_mask = _pad_last(key_padding_mask)
        src_len = k.shape[1]
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise ValueError(
                f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                f"{key_padding_mask.shape[0]}"
            )
        if key_padding_mask.shape[1] != src_len:
            raise ValueError(
                f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                f"{key_padding_mask.shape[1]}"
            )
        kpm = (
            key_padding_mask.reshape(bsz, 1, 1, src_len)
            .expand(bsz, num_heads, 1, src_len)
            .reshape(bsz * num_heads, 1, src_len)
        )
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)).bmm(k.transpose(1, 2))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = scores.softmax(-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, dropout_p, True)
        out = weights.bmm(v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    if not batch_first:
        q = q.reshape(bsz, num_heads, tgt_len, head_dim)
        k = k.reshape(bsz, num_heads, src_len, head_dim)
        v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    if batch_first:
        out = out.transpose(1, 2).reshape(bsz * tgt_len, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias).reshape(bsz, tgt_len, embed_dim)
        return out.transpose(0, 1), None
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not is_batched:
        out = out.squeeze(1)
    return out, None

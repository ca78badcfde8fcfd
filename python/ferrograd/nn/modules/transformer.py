"""Attention layers: ``MultiheadAttention``, ``TransformerEncoderLayer``,
``TransformerEncoder``, ``TransformerDecoderLayer``, ``TransformerDecoder`` and
``Transformer``."""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .._functional import multi_head_attention as _mha
from .activation import _AssertionValueError
from .container import ModuleList
from .module import Module, Parameter
from .normalization import LayerNorm

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..._C import Tensor
    from ..._typing import DType

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]


class NonDynamicallyQuantizableLinear(Module):
    """``MultiheadAttention.out_proj``: a ``Linear`` under PyTorch's class name (PyTorch uses
    the name to keep quantization tools off it), so reprs and state dicts match."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        from .linear import Linear

        super().__init__()
        inner = Linear(in_features, out_features, bias, dtype=dtype)
        self.in_features, self.out_features = in_features, out_features
        self.weight = inner.weight
        if inner.bias is not None:
            self.bias = inner.bias
        else:
            self.bias = None

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


def _fans(shape):
    receptive = 1
    for n in shape[2:]:
        receptive *= n
    return shape[1] * receptive, shape[0] * receptive


def _xavier_uniform_(t):
    fan_in, fan_out = _fans(tuple(t.shape))
    bound = math.sqrt(3.0) * math.sqrt(2.0 / float(fan_in + fan_out))
    with no_grad():
        return t.uniform_(-bound, bound)


def _xavier_normal_(t):
    fan_in, fan_out = _fans(tuple(t.shape))
    with no_grad():
        return t.normal_(0.0, math.sqrt(2.0 / float(fan_in + fan_out)))


def _param(shape, dtype):
    return Parameter(_C.empty(*shape, dtype=dtype) if dtype is not None else _C.empty(*shape))


class MultiheadAttention(Module):
    """Multi-head attention: the query, key and value are projected, split into ``num_heads``
    heads of size ``embed_dim / num_heads``, each head computes scaled dot-product
    attention, and the heads are joined and projected again.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)`` returns
    ``(output, weights)``; ``weights`` is ``None`` unless ``need_weights``. A bool
    mask marks with True the positions that may not be attended; a float mask is
    added to the scores (see
    :func:`~ferrograd.nn.functional.multi_head_attention_forward`).

    Args:
        embed_dim (int): ``E``, the model's width.
        num_heads (int): the number of heads; divides ``embed_dim``.
        dropout (float): the dropout probability of the attention weights, in
            training mode. Default: ``0.0``.
        bias (bool): learn the projections' biases. Default: ``True``.
        add_bias_kv (bool): learn a bias appended to the key and value sequences.
            Default: ``False``.
        add_zero_attn (bool): append a zero position to the keys and values.
            Default: ``False``.
        kdim (int, optional): the key's features. Default: ``embed_dim``.
        vdim (int, optional): the value's features. Default: ``embed_dim``.
        batch_first (bool): inputs and output are ``(N, L, E)`` instead of
            ``(L, N, E)``. Default: ``False``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Attributes:
        in_proj_weight (Parameter or None): ``(3 * E, E)``, the packed query, key and
            value projections (when ``kdim`` and ``vdim`` equal ``E``), xavier-uniform.
        q_proj_weight, k_proj_weight, v_proj_weight (Parameter or None): the separate
            projections otherwise.
        in_proj_bias (Parameter or None): ``(3 * E,)``, zeros.
        out_proj (Module): the output projection, ``(E, E)`` with a zero bias.

    Shape:
        - Query: ``(L, N, E)``, ``(N, L, E)`` with ``batch_first``, or ``(L, E)``.
        - Key: ``(S, N, kdim)``; value: ``(S, N, vdim)`` (same layout).
        - key_padding_mask: ``(N, S)``; attn_mask: ``(L, S)`` or
          ``(N * num_heads, L, S)``.
        - Output: the query's shape; weights: ``(N, L, S)`` averaged over heads, or
          ``(N, num_heads, L, S)``.

    Example::

        >>> mha = nn.MultiheadAttention(16, 4, batch_first=True)
        >>> x = torch.ones(2, 5, 16)
        >>> out, weights = mha(x, x, x)
        >>> out.shape, weights.shape
        (ferrograd.Size([2, 5, 16]), ferrograd.Size([2, 5, 5]))
        >>> causal = nn.Transformer.generate_square_subsequent_mask(5)
        >>> out, _ = mha(x, x, x, attn_mask=causal, need_weights=False)
        >>> out.shape
        ferrograd.Size([2, 5, 16])
    """

    embed_dim: int
    kdim: int
    vdim: int
    num_heads: int
    dropout: float
    batch_first: bool
    head_dim: int
    in_proj_weight: Tensor | None
    in_proj_bias: Tensor | None
    q_proj_weight: Tensor | None
    k_proj_weight: Tensor | None
    v_proj_weight: Tensor | None
    bias_k: Tensor | None
    bias_v: Tensor | None

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                f"and num_heads={num_heads} instead"
            )
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            # PyTorch asserts; also a ValueError, so it survives `python -O`.
            raise _AssertionValueError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = _param((embed_dim, embed_dim), dtype)
            self.k_proj_weight = _param((embed_dim, self.kdim), dtype)
            self.v_proj_weight = _param((embed_dim, self.vdim), dtype)
            self.in_proj_weight = None
        else:
            self.in_proj_weight = _param((3 * embed_dim, embed_dim), dtype)
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        self.in_proj_bias = _param((3 * embed_dim,), dtype) if bias else None
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, dtype=dtype
        )
        if add_bias_kv:
            self.bias_k = _param((1, 1, embed_dim), dtype)
            self.bias_v = _param((1, 1, embed_dim), dtype)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        # PyTorch's order of draws: out_proj (as a Linear, above), then these.
        if self._qkv_same_embed_dim:
            _xavier_uniform_(self.in_proj_weight)
        else:
            _xavier_uniform_(self.q_proj_weight)
            _xavier_uniform_(self.k_proj_weight)
            _xavier_uniform_(self.v_proj_weight)
        with no_grad():
            if self.in_proj_bias is not None:
                self.in_proj_bias.zero_()
                self.out_proj.bias.zero_()
        if self.bias_k is not None:
            _xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            _xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        is_batched = query.dim() == 3
        if self.batch_first and is_batched:
            # Keep the identities (self-attention, key is value) that select the packed
            # projection.
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        out, weights = _mha.multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
        )
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights


def _get_activation(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if callable(activation):
        return activation
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _add_feed_forward_and_norms(
    layer, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias, dtype, blocks
):
    """An encoder or decoder layer's feed-forward block (``linear1``, ``dropout``,
    ``linear2``), ``norm_first``, and a layer norm and a dropout for each of its ``blocks``
    sub-blocks (``norm1``, ..., ``dropout1``, ...), made in PyTorch's order (so its
    state-dict keys and draws of the initial weights)."""
    from .dropout import Dropout
    from .linear import Linear

    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
    layer.norm_first = norm_first
    for i in range(1, blocks + 1):
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
    for i in range(1, blocks + 1):
        setattr(layer, f"dropout{i}", Dropout(dropout))


class TransformerEncoderLayer(Module):
    """One encoder layer of the Transformer: self-attention, then a feed-forward block
    ``linear2(dropout(activation(linear1(x))))``, each followed by dropout and a residual
    connection, with a layer norm after each block (or before it with ``norm_first``).

    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``
    returns the transformed sequence. The submodules have PyTorch's names
    (``self_attn``, ``linear1``, ``linear2``, ``norm1``, ``norm2``), so state dicts
    transfer.

    Args:
        d_model (int): ``E``, the features of each position.
        nhead (int): the number of attention heads; divides ``d_model``.
        dim_feedforward (int): the hidden size of the feed-forward block.
            Default: ``2048``.
        dropout (float): the dropout probability (attention weights, block outputs,
            feed-forward hidden layer). Default: ``0.1``.
        activation (str or callable): the feed-forward nonlinearity, ``'relu'``,
            ``'gelu'`` or a callable. Default: ``relu``.
        layer_norm_eps (float): the layer norms' ``eps``. Default: ``1e-5``.
        batch_first (bool): inputs and outputs are ``(N, L, E)`` instead of
            ``(L, N, E)``. Default: ``False``.
        norm_first (bool): apply each layer norm before its block (pre-norm) instead
            of after the residual addition (post-norm). Default: ``False``.
        bias (bool): learn biases in the linear layers and layer norms.
            Default: ``True``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - src: ``(L, N, E)``, ``(N, L, E)`` with ``batch_first``, or ``(L, E)``.
        - Output: the shape of ``src``.

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32)
        >>> layer(torch.ones(10, 2, 16)).shape
        ferrograd.Size([10, 2, 16])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        act = _get_activation(activation) if isinstance(activation, str) else activation
        if not callable(act):
            raise RuntimeError(f"activation should be relu/gelu, not {activation}")
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, dtype=dtype
        )
        _add_feed_forward_and_norms(
            self, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias, dtype, 2
        )
        self.activation = act

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        src_key_padding_mask = _mha._canonical_mask(
            src_key_padding_mask,
            "src_key_padding_mask",
            None if src_mask is None else src_mask.dtype,
            "src_mask",
            src.dtype,
        )
        src_mask = _mha._canonical_mask(src_mask, "src_mask", None, "", src.dtype, False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            need_weights=False, is_causal=is_causal,
        )[0]  # fmt: skip
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _is_causal_mask(mask):
    # True when ``mask`` is exactly the square subsequent mask (-inf above the diagonal).
    if mask is None or mask.dim() != 2 or mask.shape[0] != mask.shape[1]:
        return False
    n = mask.shape[0]
    above = _C.arange(n).unsqueeze(1) < _C.arange(n)
    if mask.dtype == _C.bool:
        return bool(mask.eq(above).all().item())
    expected = _C.zeros(n, n, dtype=mask.dtype).masked_fill(above, float("-inf"))
    return bool(mask.eq(expected).all().item())


class TransformerEncoder(Module):
    """A stack of ``num_layers`` encoder layers (independent deep copies of ``encoder_layer``)
    applied in turn, then ``norm`` if given.

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)`` returns the
    encoded sequence.

    Args:
        encoder_layer (TransformerEncoderLayer): the layer to copy.
        num_layers (int): the number of layers.
        norm (Module, optional): a final normalisation. Default: ``None``.
        enable_nested_tensor (bool): PyTorch's switch for its nested-tensor fast path;
            kept, without effect (ferrograd has no nested tensors). Default: ``True``.
        mask_check (bool): kept for PyTorch compatibility, without effect.
            Default: ``True``.

    Shape:
        - src: ``(L, N, E)``, ``(N, L, E)`` with ``batch_first``, or ``(L, E)``.
        - Output: the shape of ``src``.

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32)
        >>> encoder = nn.TransformerEncoder(layer, num_layers=3)
        >>> encoder(torch.ones(10, 2, 16)).shape
        ferrograd.Size([10, 2, 16])
        >>> len(encoder.layers), encoder.layers[0] is layer
        (3, False)
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        src_key_padding_mask = _mha._canonical_mask(
            src_key_padding_mask,
            "src_key_padding_mask",
            None if mask is None else mask.dtype,
            "mask",
            src.dtype,
        )
        mask = _mha._canonical_mask(mask, "mask", None, "", src.dtype, False)
        if is_causal is None:
            is_causal = _is_causal_mask(mask)
        out = src
        for layer in self.layers:
            out = layer(
                out, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask
            )
        if self.norm is not None:
            out = self.norm(out)
        return out


# ----- decoder and the full encoder-decoder model ----------------------------------------------

__all__ += ["TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    # -inf above the diagonal, 0 on and below it (PyTorch's float causal mask).
    above = _C.arange(sz).unsqueeze(1) < _C.arange(sz)
    zeros = _C.zeros(sz, sz, dtype=dtype or _C.get_default_dtype())
    return zeros.masked_fill(above, float("-inf"))


def _get_seq_len(src, batch_first):
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    # An explicit hint is returned as given; with None, a mask that equals the
    # square subsequent mask of the sequence's length counts as causal.
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, dtype=mask.dtype)
        if tuple(mask.shape) == tuple(causal.shape):
            make_causal = bool((mask == causal).all().item())
        else:
            make_causal = False
    return make_causal


class TransformerDecoderLayer(Module):
    """One decoder layer of the Transformer: self-attention over the target, attention over the
    encoder's output (``memory``), then the feed-forward block, each followed by dropout and
    a residual connection, with a layer norm after each block (or before it with
    ``norm_first``).

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)``
    returns the transformed target. The submodules have PyTorch's names
    (``self_attn``, ``multihead_attn``, ``linear1``, ``linear2``, ``norm1`` to
    ``norm3``), so state dicts transfer.

    Args:
        d_model (int): ``E``, the features of each position.
        nhead (int): the number of attention heads; divides ``d_model``.
        dim_feedforward (int): the hidden size of the feed-forward block.
            Default: ``2048``.
        dropout (float): the dropout probability (attention weights, block outputs,
            feed-forward hidden layer). Default: ``0.1``.
        activation (str or callable): the feed-forward nonlinearity, ``'relu'``,
            ``'gelu'`` or a callable. Default: ``relu``.
        layer_norm_eps (float): the layer norms' ``eps``. Default: ``1e-5``.
        batch_first (bool): inputs and outputs are ``(N, L, E)`` instead of
            ``(L, N, E)``. Default: ``False``.
        norm_first (bool): apply each layer norm before its block (pre-norm) instead
            of after the residual addition (post-norm). Default: ``False``.
        bias (bool): learn biases in the linear layers and layer norms.
            Default: ``True``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - tgt: ``(T, N, E)``, ``(N, T, E)`` with ``batch_first``, or ``(T, E)``.
        - memory: ``(S, N, E)`` in the same layout.
        - Output: the shape of ``tgt``.

    Example::

        >>> layer = nn.TransformerDecoderLayer(d_model=16, nhead=4, dim_feedforward=32)
        >>> layer(torch.ones(7, 2, 16), torch.ones(10, 2, 16)).shape
        ferrograd.Size([7, 2, 16])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, dtype=dtype
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, dtype=dtype
        )
        _add_feed_forward_and_norms(
            self, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias, dtype, 3
        )
        if isinstance(activation, str):
            self.activation = _get_activation(activation)
        else:
            self.activation = activation

    def __setstate__(self, state):
        if "activation" not in state:
            state["activation"] = F.relu
        super().__setstate__(state)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(
                x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            )
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            is_causal=is_causal, need_weights=False,
        )[0]  # fmt: skip
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(
            x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            is_causal=is_causal, need_weights=False,
        )[0]  # fmt: skip
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """A stack of ``num_layers`` decoder layers (independent deep copies of ``decoder_layer``)
    applied in turn to the target, each attending to ``memory``, then ``norm`` if given.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)``
    returns the decoded target; a ``tgt_mask`` equal to the causal mask is detected
    as causal when ``tgt_is_causal`` is ``None``.

    Args:
        decoder_layer (TransformerDecoderLayer): the layer to copy.
        num_layers (int): the number of layers.
        norm (Module, optional): a final normalisation. Default: ``None``.

    Shape:
        - tgt: ``(T, N, E)``, ``(N, T, E)`` with ``batch_first``, or ``(T, E)``.
        - memory: ``(S, N, E)`` in the same layout.
        - Output: the shape of ``tgt``.

    Example::

        >>> layer = nn.TransformerDecoderLayer(d_model=16, nhead=4, dim_feedforward=32)
        >>> decoder = nn.TransformerDecoder(layer, num_layers=2, norm=nn.LayerNorm(16))
        >>> decoder(torch.ones(7, 2, 16), torch.ones(10, 2, 16)).shape
        ferrograd.Size([7, 2, 16])
    """

    def __init__(
        self,
        decoder_layer: TransformerDecoderLayer,
        num_layers: int,
        norm: Module | None = None,
    ) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        output = tgt
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for mod in self.layers:
            output = mod(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal,
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need": a
    :class:`TransformerEncoder` of ``num_encoder_layers`` layers and a
    :class:`TransformerDecoder` of ``num_decoder_layers`` layers, each closed by a layer
    norm. After construction every parameter with more than one dimension is re-drawn with
    ``xavier_uniform_``, as in PyTorch.

    ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
    memory_is_causal=False)`` returns the decoder's output.
    ``Transformer.generate_square_subsequent_mask(sz)`` builds the causal mask for
    ``tgt_mask``.

    Args:
        d_model (int): ``E``, the features of each position. Default: ``512``.
        nhead (int): the number of attention heads. Default: ``8``.
        num_encoder_layers (int): the encoder's depth. Default: ``6``.
        num_decoder_layers (int): the decoder's depth. Default: ``6``.
        dim_feedforward (int): the feed-forward blocks' hidden size. Default: ``2048``.
        dropout (float): the dropout probability. Default: ``0.1``.
        activation (str or callable): the feed-forward nonlinearity. Default: ``relu``.
        custom_encoder (Module, optional): used instead of the built encoder.
            Default: ``None``.
        custom_decoder (Module, optional): used instead of the built decoder.
            Default: ``None``.
        layer_norm_eps (float): the layer norms' ``eps``. Default: ``1e-5``.
        batch_first (bool): inputs and output are ``(N, L, E)``. Default: ``False``.
        norm_first (bool): pre-norm layers. Default: ``False``.
        bias (bool): learn biases in the linear layers and layer norms.
            Default: ``True``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - src: ``(S, N, E)``; tgt: ``(T, N, E)`` (batch first with ``batch_first``,
          or without ``N`` unbatched).
        - Output: ``(T, N, E)``.

    Example::

        >>> model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2,
        ...                        num_decoder_layers=2, dim_feedforward=32)
        >>> src, tgt = torch.ones(10, 3, 16), torch.ones(7, 3, 16)
        >>> mask = nn.Transformer.generate_square_subsequent_mask(7)
        >>> model(src, tgt, tgt_mask=mask).shape
        ferrograd.Size([7, 3, 16])
        >>> mask[:3, :3]
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(
                d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias, dtype=dtype,
            )  # fmt: skip
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(
                d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias, dtype=dtype,
            )  # fmt: skip
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: Tensor = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        is_batched = src.dim() == 3
        if not self.batch_first and src.size(1) != tgt.size(1) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        elif self.batch_first and src.size(0) != tgt.size(0) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A ``(sz, sz)`` float mask: ``-inf`` above the diagonal (future positions),
        0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                _xavier_uniform_(p)

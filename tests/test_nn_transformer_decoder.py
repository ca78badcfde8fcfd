"""TransformerDecoderLayer, TransformerDecoder and Transformer: forward against a
NumPy transcription of the layer (post- and pre-norm, masks, batch_first),
float64 gradcheck + gradgradcheck on drawn sequence lengths, PyTorch's
state-dict keys, initialisation, causal-mask detection and error texts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

FEW = settings(max_examples=max(3, settings.default.max_examples // 8), deadline=None)


def _p(m, name):
    return m.state_dict()[name].numpy().astype(np.float64)


def np_layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def np_mha(m, prefix, q, k, v, nhead, attn_mask=None, key_padding_mask=None):
    """Sequence-first ``[L, N, E]`` multi-head attention with packed projections."""
    w = _p(m, prefix + "in_proj_weight")
    b = _p(m, prefix + "in_proj_bias")
    e = q.shape[-1]
    qp = q @ w[:e].T + b[:e]
    kp = k @ w[e : 2 * e].T + b[e : 2 * e]
    vp = v @ w[2 * e :].T + b[2 * e :]
    lq, n, _ = q.shape
    lk = k.shape[0]
    hd = e // nhead

    def heads(t, length):  # [L, N, E] -> [N, H, L, hd]
        return t.reshape(length, n, nhead, hd).transpose(1, 2, 0, 3)

    s = heads(qp, lq) @ heads(kp, lk).transpose(0, 1, 3, 2) / math.sqrt(hd)
    if attn_mask is not None:
        s = s + attn_mask
    if key_padding_mask is not None:
        s = np.where(key_padding_mask[:, None, None, :], -np.inf, s)
    s = np.exp(s - s.max(-1, keepdims=True))
    s = s / s.sum(-1, keepdims=True)
    o = (s @ heads(vp, lk)).transpose(2, 0, 1, 3).reshape(lq, n, e)
    return o @ _p(m, prefix + "out_proj.weight").T + _p(m, prefix + "out_proj.bias")


def np_decoder_layer(m, tgt, mem, nhead, norm_first, act, tgt_mask=None, mem_kpm=None, pre=""):
    def ln(i, x):
        return np_layer_norm(x, _p(m, f"{pre}norm{i}.weight"), _p(m, f"{pre}norm{i}.bias"))

    def sa(x):
        return np_mha(m, pre + "self_attn.", x, x, x, nhead, attn_mask=tgt_mask)

    def ca(x):
        return np_mha(m, pre + "multihead_attn.", x, mem, mem, nhead, key_padding_mask=mem_kpm)

    def ff(x):
        h = act(x @ _p(m, pre + "linear1.weight").T + _p(m, pre + "linear1.bias"))
        return h @ _p(m, pre + "linear2.weight").T + _p(m, pre + "linear2.bias")

    x = tgt
    if norm_first:
        x = x + sa(ln(1, x))
        x = x + ca(ln(2, x))
        return x + ff(ln(3, x))
    x = ln(1, x + sa(x))
    x = ln(2, x + ca(x))
    return ln(3, x + ff(x))


def relu(x):
    return np.maximum(x, 0)


def causal(n):
    return np.triu(np.full((n, n), -np.inf), 1)


@given(
    lt=st.integers(1, 4),
    lm=st.integers(1, 4),
    n=st.integers(1, 2),
    norm_first=st.booleans(),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
@FEW
def test_decoder_layer_matches_numpy(lt, lm, n, norm_first, masked, seed):
    fg.manual_seed(seed)
    m = nn.TransformerDecoderLayer(
        4, 2, dim_feedforward=6, dropout=0.0, norm_first=norm_first, dtype=fg.float64
    )
    rng = np.random.default_rng(seed)
    tgt, mem = rng.standard_normal((lt, n, 4)), rng.standard_normal((lm, n, 4))
    tgt_mask = causal(lt) if masked else None
    kpm = None
    if masked and lm > 1:
        kpm = np.zeros((n, lm), bool)
        kpm[:, -1] = True
    got = m(
        fg.tensor(tgt),
        fg.tensor(mem),
        tgt_mask=None if tgt_mask is None else fg.tensor(tgt_mask),
        memory_key_padding_mask=None if kpm is None else fg.tensor(kpm),
    )
    want = np_decoder_layer(m, tgt, mem, 2, norm_first, relu, tgt_mask, kpm)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-10, atol=1e-10)


@given(lt=st.integers(1, 3), lm=st.integers(1, 3), seed=st.integers(0, 2**16))
@FEW
def test_decoder_grads(lt, lm, seed):
    fg.manual_seed(seed)
    layer = nn.TransformerDecoderLayer(
        4, 2, dim_feedforward=4, dropout=0.0, activation="gelu", dtype=fg.float64
    )
    dec = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(4, dtype=fg.float64))
    rng = np.random.default_rng(seed)
    tgt = fg.tensor(rng.standard_normal((lt, 1, 4)), requires_grad=True)
    mem = fg.tensor(rng.standard_normal((lm, 1, 4)), requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(lt, dtype=fg.float64)

    def run(t, mm):
        return dec(t, mm, tgt_mask=mask)

    assert gradcheck(run, (tgt, mem)) and gradgradcheck(run, (tgt, mem))


def test_decoder_layer_state_dict_keys_and_repr():
    m = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16)
    assert list(m.state_dict()) == [
        "self_attn.in_proj_weight",
        "self_attn.in_proj_bias",
        "self_attn.out_proj.weight",
        "self_attn.out_proj.bias",
        "multihead_attn.in_proj_weight",
        "multihead_attn.in_proj_bias",
        "multihead_attn.out_proj.weight",
        "multihead_attn.out_proj.bias",
        "linear1.weight",
        "linear1.bias",
        "linear2.weight",
        "linear2.bias",
        "norm1.weight",
        "norm1.bias",
        "norm2.weight",
        "norm2.bias",
        "norm3.weight",
        "norm3.bias",
    ]
    assert m.activation is F.relu
    nb = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, bias=False)
    assert not any(k.endswith("bias") for k in nb.state_dict())
    r = repr(m)
    assert r.startswith("TransformerDecoderLayer(\n  (self_attn): MultiheadAttention(\n")
    assert "(norm3): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)" in r
    assert "(dropout3): Dropout(p=0.1, inplace=False)" in r
    dec = nn.TransformerDecoder(m, 3)
    keys = list(dec.state_dict())
    assert keys[0] == "layers.0.self_attn.in_proj_weight" and keys[-1] == "layers.2.norm3.bias"
    assert len(keys) == 54 and dec.norm is None


def test_transformer_state_dict_keys_and_init():
    fg.manual_seed(0)
    m = nn.Transformer(
        d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16
    )
    keys = list(m.state_dict())
    assert keys[:2] == ["encoder.layers.0.self_attn.in_proj_weight",
                        "encoder.layers.0.self_attn.in_proj_bias"]  # fmt: skip
    assert "encoder.norm.weight" in keys and "decoder.norm.bias" in keys
    assert keys[-1] == "decoder.norm.bias" and len(keys) == 2 * 12 + 2 + 18 + 2
    # The same draws as building the parts, then xavier_uniform_ on every
    # parameter of more than one dimension, in parameters() order.
    fg.manual_seed(0)
    enc = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, activation=F.relu), 2, nn.LayerNorm(8)
    )
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 1, nn.LayerNorm(8))
    for p in list(enc.parameters()) + list(dec.parameters()):
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    want = {**{"encoder." + k: v for k, v in enc.state_dict().items()},
            **{"decoder." + k: v for k, v in dec.state_dict().items()}}  # fmt: skip
    assert sorted(want) == sorted(keys)
    for k in keys:
        np.testing.assert_array_equal(m.state_dict()[k].numpy(), want[k].numpy())
    for name, p in m.named_parameters():
        if p.dim() > 1:
            bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
            assert np.abs(p.detach().numpy()).max() <= bound
        elif name.endswith("in_proj_bias"):
            assert not p.detach().numpy().any()
    assert (m.d_model, m.nhead, m.batch_first) == (8, 2, False)


def test_transformer_forward_is_encoder_then_decoder():
    fg.manual_seed(1)
    m = nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, dtype=fg.float64).eval()
    src, tgt = fg.randn(5, 2, 8, dtype=fg.float64), fg.randn(3, 2, 8, dtype=fg.float64)
    tmask = m.generate_square_subsequent_mask(3, dtype=fg.float64)
    skpm = fg.tensor([[False, False, False, True, True], [False] * 5])
    out = m(src, tgt, tgt_mask=tmask, src_key_padding_mask=skpm, memory_key_padding_mask=skpm)
    mem = m.encoder(src, src_key_padding_mask=skpm)
    want = m.decoder(tgt, mem, tgt_mask=tmask, memory_key_padding_mask=skpm)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    # Masked source positions do not reach the output of sample 0.
    src2 = src.clone()
    src2[3:, 0] = 7.0
    out2 = m(src2, tgt, tgt_mask=tmask, src_key_padding_mask=skpm, memory_key_padding_mask=skpm)
    np.testing.assert_allclose(out2.detach().numpy()[:, 0], out.detach().numpy()[:, 0], rtol=1e-10)
    # Causal target: changing a later target position leaves earlier outputs alone.
    tgt2 = tgt.clone()
    tgt2[2] = 5.0
    out3 = m(src, tgt2, tgt_mask=tmask)
    base = m(src, tgt, tgt_mask=tmask)
    np.testing.assert_allclose(out3.detach().numpy()[:2], base.detach().numpy()[:2], rtol=1e-10)
    assert not np.allclose(out3.detach().numpy()[2], base.detach().numpy()[2])


def test_batch_first_and_unbatched():
    fg.manual_seed(2)
    a = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True).eval()
    b = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0).eval()
    b.load_state_dict(a.state_dict())
    src, tgt = fg.randn(2, 5, 8), fg.randn(2, 3, 8)
    got = a(src, tgt)
    want = b(src.transpose(0, 1), tgt.transpose(0, 1)).transpose(0, 1)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    one = b(src[0], tgt[0])
    np.testing.assert_allclose(one.detach().numpy(), want.detach().numpy()[0], rtol=1e-5, atol=1e-6)


def test_causal_detection_and_hints():
    fg.manual_seed(3)
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0)
    dec = nn.TransformerDecoder(layer, 1).eval()
    tgt, mem = fg.randn(4, 1, 4), fg.randn(3, 1, 4)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(mask.numpy(), causal(4).astype(np.float32))
    explicit = dec(tgt, mem, tgt_mask=mask, tgt_is_causal=True)
    detected = dec(tgt, mem, tgt_mask=mask)
    plain = dec(tgt, mem, tgt_mask=mask, tgt_is_causal=False)
    np.testing.assert_allclose(detected.detach().numpy(), explicit.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(plain.detach().numpy(), explicit.detach().numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        dec(tgt, mem, tgt_is_causal=True)
    bool_mask = fg.tensor(np.triu(np.ones((4, 4), bool), 1))
    np.testing.assert_allclose(
        dec(tgt, mem, tgt_mask=bool_mask).detach().numpy(), plain.detach().numpy(), rtol=1e-5
    )
    # memory_is_causal is passed to the cross attention (with its mask) and accepted.
    mmask = fg.zeros(4, 3)
    out = dec(tgt, mem, tgt_mask=mask, memory_mask=mmask, memory_is_causal=False)
    assert out.shape == (4, 1, 4)


def test_activation_and_norm_first_and_errors():
    fg.manual_seed(4)
    rng = np.random.default_rng(4)
    tgt, mem = rng.standard_normal((3, 2, 4)), rng.standard_normal((2, 2, 4))

    def gelu(x):
        return F.gelu(fg.tensor(x)).numpy()

    for act, ref in [("gelu", gelu), (F.relu, relu), (lambda t: t * 2.0, lambda x: 2 * x)]:
        m = nn.TransformerDecoderLayer(
            4, 2, 6, dropout=0.0, activation=act, norm_first=True, dtype=fg.float64
        )
        got = m(fg.tensor(tgt), fg.tensor(mem)).detach().numpy()
        want = np_decoder_layer(m, tgt, mem, 2, True, ref)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(4, 2, activation="tanh")
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerDecoderLayer(6, 4)
    m = nn.Transformer(4, 2, 1, 1, 8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(fg.randn(3, 2, 4), fg.randn(3, 1, 4))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal"):
        m(fg.randn(3, 2, 4), fg.randn(3, 2, 5))
    mb = nn.Transformer(4, 2, 1, 1, 8, batch_first=True)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        mb(fg.randn(2, 3, 4), fg.randn(1, 3, 4))


def test_custom_encoder_decoder_and_training_dropout():
    enc = nn.Linear(4, 4)
    dec_layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0)

    class Dec(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.TransformerDecoder(dec_layer, 1)

        def forward(self, tgt, memory, **kw):
            return self.inner(tgt, memory, **kw)

    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = enc

        def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
            return self.lin(src)

    m = nn.Transformer(4, 2, custom_encoder=Enc(), custom_decoder=Dec())
    assert isinstance(m.encoder, Enc) and isinstance(m.decoder, Dec)
    assert m(fg.randn(3, 2, 4), fg.randn(2, 2, 4)).shape == (2, 2, 4)
    # Dropout acts in training mode only.
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.5)
    tgt, mem = fg.randn(3, 2, 4), fg.randn(2, 2, 4)
    fg.manual_seed(0)
    a = layer(tgt, mem)
    fg.manual_seed(1)
    b = layer(tgt, mem)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    layer.eval()
    np.testing.assert_array_equal(
        layer(tgt, mem).detach().numpy(), layer(tgt, mem).detach().numpy()
    )


def test_causal_mask_detection_rule():
    from ferrograd.nn.modules.transformer import _detect_is_causal_mask

    float_mask = nn.Transformer.generate_square_subsequent_mask(3)
    bool_mask = fg.tensor(np.triu(np.ones((3, 3), bool), 1))
    assert _detect_is_causal_mask(float_mask, None, 3)
    assert _detect_is_causal_mask(bool_mask, None, 3)  # True above the diagonal
    assert not _detect_is_causal_mask(float_mask, None, 4)  # another sequence length
    assert not _detect_is_causal_mask(fg.zeros(3, 3), None, 3)
    assert not _detect_is_causal_mask(float_mask, False, 3)  # an explicit hint wins
    assert _detect_is_causal_mask(None, True) and not _detect_is_causal_mask(None, None)
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=fg.float64).dtype == fg.float64

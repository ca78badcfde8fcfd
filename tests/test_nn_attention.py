"""Attention: F.scaled_dot_product_attention, MultiheadAttention, TransformerEncoderLayer,
TransformerEncoder, checked against NumPy implementations of the definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd import nn
from ferrograd.autograd import gradcheck, gradgradcheck


def t64(a, requires_grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=fg.float64, requires_grad=requires_grad)


def np_softmax(x):
    # Rows that are entirely -inf give zero weights (PyTorch's math path does the same).
    m = np.max(x, axis=-1, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    s = e.sum(-1, keepdims=True)
    return np.where(s > 0, e / np.where(s > 0, s, 1.0), 0.0)


def np_sdpa(q, k, v, bias=None, scale=None):
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if bias is not None:
        scores = scores + bias
    return np_softmax(scores) @ v


# -- scaled_dot_product_attention --------------------------------------------------------


@st.composite
def sdpa_case(draw):
    batch = tuple(draw(st.lists(st.integers(1, 2), min_size=0, max_size=2)))
    L, S, E, Ev = (draw(st.integers(1, 4)) for _ in range(4))
    mask = draw(st.sampled_from(["none", "bool", "float", "causal"]))
    scale = draw(st.sampled_from([None, 0.5]))
    seed = draw(st.integers(0, 2**16))
    return batch, L, S, E, Ev, mask, scale, seed


@given(sdpa_case(), st.sampled_from([np.float32, np.float64]))
def test_sdpa_matches_the_definition(case, npdt):
    batch, L, S, E, Ev, mask, scale, seed = case
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((*batch, L, E)).astype(npdt)
    k = rng.standard_normal((*batch, S, E)).astype(npdt)
    v = rng.standard_normal((*batch, S, Ev)).astype(npdt)
    kw = {"scale": scale}
    bias = None
    if mask == "bool":
        m = rng.random((L, S)) > 0.4
        kw["attn_mask"] = fg.tensor(m)
        bias = np.where(m, 0.0, -np.inf)
    elif mask == "float":
        m = rng.standard_normal((L, S)).astype(npdt)
        kw["attn_mask"] = fg.tensor(m)
        bias = m.astype(np.float64)
    elif mask == "causal":
        kw["is_causal"] = True
        bias = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf)
    got = F.scaled_dot_product_attention(fg.tensor(q), fg.tensor(k), fg.tensor(v), **kw)
    ref = np_sdpa(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), bias, scale)
    tol = 1e-5 if npdt == np.float32 else 1e-12
    assert tuple(got.shape) == ref.shape
    np.testing.assert_allclose(got.numpy(), ref, rtol=tol, atol=tol)


def test_sdpa_fully_masked_rows_are_zero():
    q, k, v = fg.randn(2, 3, 4), fg.randn(2, 5, 4), fg.randn(2, 5, 6)
    mask = fg.tensor(np.array([[True] * 5, [False] * 5, [True, False, True, False, True]]))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    np.testing.assert_array_equal(out.numpy()[:, 1], 0.0)
    assert np.isfinite(out.numpy()).all()


@settings(max_examples=10)
@given(sdpa_case())
def test_sdpa_gradcheck_and_gradgradcheck(case):
    batch, L, S, E, Ev, mask, scale, seed = case
    rng = np.random.default_rng(seed)
    q = t64(rng.standard_normal((*batch, L, E)), True)
    k = t64(rng.standard_normal((*batch, S, E)), True)
    v = t64(rng.standard_normal((*batch, S, Ev)), True)
    inputs = [q, k, v]
    kw = {"scale": scale}
    if mask == "float":
        inputs.append(t64(rng.standard_normal((L, S)), True))
    elif mask == "causal":
        kw["is_causal"] = True
    elif mask == "bool":
        # Keep every row with at least one allowed key so the function is smooth.
        m = rng.random((L, S)) > 0.4
        m[:, 0] = True
        kw["attn_mask"] = fg.tensor(m)

    def f(q, k, v, *mask_arg):
        extra = dict(kw, attn_mask=mask_arg[0]) if mask_arg else kw
        return F.scaled_dot_product_attention(q, k, v, **extra)

    assert gradcheck(f, tuple(inputs))
    assert gradgradcheck(f, tuple(inputs))


def _np_sdpa_grads(q, k, v, g, scale, bias=0.0):
    # The gradients of sum(sdpa(q, k, v) * g), written out from the definition.
    w = np_softmax(q @ np.swapaxes(k, -1, -2) * scale + bias)
    dv = np.swapaxes(w, -1, -2) @ g
    dw = g @ np.swapaxes(v, -1, -2)
    ds = w * (dw - (dw * w).sum(-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, dv


_LAYOUTS = {
    # name: (make physical array, view it as [..., rows, cols])
    "contiguous": (lambda a: a, lambda t: t),
    "transposed": (lambda a: np.ascontiguousarray(np.swapaxes(a, -1, -2)), lambda t: t.mT),
    "heads of rows": (lambda a: np.ascontiguousarray(np.swapaxes(a, -3, -2)),
                      lambda t: t.transpose(-3, -2)),
}  # fmt: skip


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", list(_LAYOUTS))
@pytest.mark.parametrize("npdt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(70, 9, 7, 5, 6), (2, 3, 64, 64, 32, 32), (1, 4, 1, 3, 2),
                                   (2, 5, 3, 4, 4), (1, 0, 3, 2, 2), (1, 3, 0, 2, 2)])
def test_sdpa_kernel_layouts_values_and_grads(layout, npdt, shape, causal):
    # Unmasked and causal attention run as one node over strided heads (many heads split
    # across the pool); it must give the definition's values and gradients for any operand
    # layout, queries beyond the keys (L > S) and none at all included.
    *batch, L, S, E, Ev = shape
    rng = np.random.default_rng(len(shape))
    raw = [rng.standard_normal((*batch, n, c)) for n, c in ((L, E), (S, E), (S, Ev))]
    g = rng.standard_normal((*batch, L, Ev))
    bias = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf) if causal else 0.0
    to_phys, view = _LAYOUTS[layout]
    leaves = [fg.tensor(to_phys(a).astype(npdt), requires_grad=True) for a in raw]
    q, k, v = (view(t) for t in leaves)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
    scale = 1.0 / math.sqrt(E)
    tol = 2e-5 if npdt == np.float32 else 1e-11
    np.testing.assert_allclose(out.detach().numpy(), np_sdpa(*raw, bias=bias), rtol=tol,
                               atol=tol)  # fmt: skip
    # The same bits as the composite form (an additive mask of 0 and -inf takes it).
    mask = fg.tensor(np.zeros((L, S)) + bias, dtype=q.dtype)
    composite = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    np.testing.assert_array_equal(out.detach().numpy(), composite.detach().numpy())
    out.backward(fg.tensor(g.astype(npdt)))
    got = [to_phys(t.grad.numpy()) for t in leaves] if layout == "contiguous" else [
        np.swapaxes(t.grad.numpy(), -1, -2) if layout == "transposed"
        else np.swapaxes(t.grad.numpy(), -3, -2) for t in leaves]  # fmt: skip
    for a, b in zip(got, _np_sdpa_grads(*raw, g, scale, bias)):
        np.testing.assert_allclose(a, b, rtol=10 * tol, atol=10 * tol)


def test_sdpa_causal_is_one_node_and_its_graph_of_the_backward_is_masked():
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((2, 4, 3)) for _ in range(3)]
    g = rng.standard_normal((2, 4, 3))
    bias = np.where(np.tril(np.ones((4, 4), bool)), 0.0, -np.inf)
    full = _np_sdpa_grads(*arrays, g, 1 / math.sqrt(3), bias)
    ts = [t64(a, True) for a in arrays]
    out = F.scaled_dot_product_attention(*ts, is_causal=True)
    assert out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
    grads = fg.autograd.grad((out * t64(g)).sum(), ts, create_graph=True)
    for got, want in zip(grads, full):
        assert got.requires_grad
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-11, atol=1e-12)
    assert gradgradcheck(lambda *x: F.scaled_dot_product_attention(*x, is_causal=True),
                         tuple(ts))  # fmt: skip


def test_sdpa_unmasked_kernel_gradients_asked_for():
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((2, 3, 4, 5)) for _ in range(3)]
    g = rng.standard_normal((2, 3, 4, 5))
    full = _np_sdpa_grads(*arrays, g, 1 / math.sqrt(5))
    for wanted in ([0], [1], [2], [0, 2], [1, 2]):
        ts = [t64(a, i in wanted) for i, a in enumerate(arrays)]
        F.scaled_dot_product_attention(*ts).backward(t64(g))
        for i, t in enumerate(ts):
            if i in wanted:
                np.testing.assert_allclose(t.grad.numpy(), full[i], rtol=1e-11, atol=1e-12)
            else:
                assert t.grad is None
    # A graph of the backward: the gradient of a gradient through every input.
    ts = [t64(a, True) for a in arrays]
    out = F.scaled_dot_product_attention(*ts)
    (gq,) = fg.autograd.grad((out * t64(g)).sum(), [ts[0]], create_graph=True)
    assert gq.requires_grad
    np.testing.assert_allclose(gq.detach().numpy(), full[0], rtol=1e-11, atol=1e-12)
    assert gradgradcheck(lambda *x: F.scaled_dot_product_attention(*x), tuple(ts))


def test_sdpa_grouped_query_attention_shares_key_heads():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 4, 3, 5))
    k = rng.standard_normal((2, 2, 6, 5))
    v = rng.standard_normal((2, 2, 6, 3))
    got = F.scaled_dot_product_attention(t64(q), t64(k), t64(v), enable_gqa=True)
    ref = np_sdpa(q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_sdpa_dropout_keeps_the_expectation_shape_and_drops():
    fg.manual_seed(0)
    q, k, v = fg.randn(1, 8, 4), fg.randn(1, 8, 4), fg.ones(1, 8, 16)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    # With v all ones each output is (sum of kept weights) / (1 - p): not all equal to 1.
    assert not np.allclose(out.numpy(), 1.0)
    same = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0)
    np.testing.assert_allclose(same.numpy(), 1.0, rtol=1e-6)


def test_sdpa_errors():
    q, k, v = fg.randn(2, 3, 4), fg.randn(2, 5, 4), fg.randn(2, 5, 6)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=fg.ones(3, 5).bool(), is_causal=True)
    with pytest.raises(
        RuntimeError,
        match="Expected query, key, and value to have the same dtype, but got query.dtype: "
        "float key.dtype: double and value.dtype: float instead.",
    ):
        F.scaled_dot_product_attention(q, k.double(), v)
    with pytest.raises(RuntimeError, match="to all be  at least 2 dimensional"):
        F.scaled_dot_product_attention(fg.randn(3), k, v)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=fg.ones(3, 5).long())
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=1.5)
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide"):
        F.scaled_dot_product_attention(
            fg.randn(1, 4, 3, 2), fg.randn(1, 3, 3, 2), fg.randn(1, 3, 3, 2), enable_gqa=True
        )
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention([1.0], k, v)


# -- MultiheadAttention ------------------------------------------------------------------


def np_mha(m, query, key, value, key_padding_mask=None, attn_mask=None):
    """Sequence-first [L, N, E] reference of nn.MultiheadAttention (bool masks: True = masked)."""
    p = {n: x.detach().numpy().astype(np.float64) for n, x in m.named_parameters()}
    E, H = m.embed_dim, m.num_heads
    hd = E // H
    if "in_proj_weight" in p:
        wq, wk, wv = np.split(p["in_proj_weight"], 3)
    else:
        wq, wk, wv = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]
    bq, bk, bv = np.split(p["in_proj_bias"], 3) if "in_proj_bias" in p else (0.0, 0.0, 0.0)
    q, k, v = query @ wq.T + bq, key @ wk.T + bk, value @ wv.T + bv
    L, N, _ = q.shape
    S = k.shape[0]
    bias = np.zeros((N, H, L, S))
    if attn_mask is not None:
        am = np.where(attn_mask, -np.inf, 0.0) if attn_mask.dtype == bool else attn_mask
        bias = bias + (am.reshape(N, H, L, S) if am.ndim == 3 else am)
    if key_padding_mask is not None:
        bias = bias + np.where(key_padding_mask, -np.inf, 0.0)[:, None, None, :]

    def heads(x, n):
        return x.reshape(n, N, H, hd).transpose(1, 2, 0, 3)

    qh, kh, vh = heads(q, L), heads(k, S), heads(v, S)
    w = np_softmax(qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias)
    out = (w @ vh).transpose(2, 0, 1, 3).reshape(L, N, E)
    out = out @ p["out_proj.weight"].T + p.get("out_proj.bias", 0.0)
    return out, w


@st.composite
def mha_case(draw):
    heads = draw(st.sampled_from([1, 2]))
    return dict(
        heads=heads,
        E=heads * draw(st.integers(1, 3)),
        L=draw(st.integers(1, 3)),
        S=draw(st.integers(1, 3)),
        N=draw(st.integers(1, 2)),
        kvdim=draw(st.booleans()),
        bias=draw(st.booleans()),
        batch_first=draw(st.booleans()),
        kpm=draw(st.booleans()),
        mask=draw(st.sampled_from(["none", "bool", "float", "3d"])),
        seed=draw(st.integers(0, 2**16)),
    )


def mha_inputs(c, rng):
    kd = c["E"] + 1 if c["kvdim"] else c["E"]
    vd = c["E"] + 2 if c["kvdim"] else c["E"]
    q = rng.standard_normal((c["L"], c["N"], c["E"]))
    k = rng.standard_normal((c["S"], c["N"], kd))
    v = rng.standard_normal((c["S"], c["N"], vd))
    kpm = None
    if c["kpm"]:
        kpm = rng.random((c["N"], c["S"])) > 0.6
        kpm[:, 0] = False
    am = None
    if c["mask"] == "bool":
        am = rng.random((c["L"], c["S"])) > 0.7
        am[:, 0] = False
    elif c["mask"] == "float":
        am = rng.standard_normal((c["L"], c["S"]))
    elif c["mask"] == "3d":
        am = rng.standard_normal((c["N"] * c["heads"], c["L"], c["S"]))
    return q, k, v, kpm, am, kd, vd


_MIXED_MASKS = pytest.mark.filterwarnings("ignore:Support for mismatched")


@_MIXED_MASKS
@given(mha_case())
def test_multihead_attention_matches_the_definition(c):
    rng = np.random.default_rng(c["seed"])
    q, k, v, kpm, am, kd, vd = mha_inputs(c, rng)
    fg.manual_seed(c["seed"])
    m = nn.MultiheadAttention(
        c["E"], c["heads"], bias=c["bias"], kdim=kd, vdim=vd, batch_first=c["batch_first"],
        dtype=fg.float64,
    )  # fmt: skip
    ref_out, ref_w = np_mha(m, q, k, v, kpm, am)

    def arg(x):
        return t64(x.transpose(1, 0, 2) if c["batch_first"] else x)

    kw = {}
    if kpm is not None:
        kw["key_padding_mask"] = fg.tensor(kpm)
    if am is not None:
        kw["attn_mask"] = fg.tensor(am) if am.dtype == bool else t64(am)
    out, w = m(arg(q), arg(k), arg(v), **kw)
    got = out.detach().numpy()
    if c["batch_first"]:
        got = got.transpose(1, 0, 2)
    np.testing.assert_allclose(got, ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), ref_w.mean(1), rtol=1e-10, atol=1e-12)
    out2, w2 = m(arg(q), arg(k), arg(v), need_weights=False, **kw)
    assert w2 is None
    np.testing.assert_allclose(out2.detach().numpy(), out.detach().numpy(), rtol=1e-10, atol=1e-12)
    _, w3 = m(arg(q), arg(k), arg(v), average_attn_weights=False, **kw)
    np.testing.assert_allclose(w3.detach().numpy(), ref_w, rtol=1e-10, atol=1e-12)


def test_multihead_self_attention_unbatched_and_causal():
    fg.manual_seed(0)
    m = nn.MultiheadAttention(4, 2, dtype=fg.float64)
    x = np.random.default_rng(1).standard_normal((3, 4))
    out, w = m(t64(x), t64(x), t64(x))
    ref_out, ref_w = np_mha(m, x[:, None], x[:, None], x[:, None])
    np.testing.assert_allclose(out.detach().numpy(), ref_out[:, 0], rtol=1e-10)
    np.testing.assert_allclose(w.detach().numpy(), ref_w.mean(1)[0], rtol=1e-10)
    causal = np.triu(np.full((3, 3), -np.inf), 1)
    out_c, _ = m(t64(x), t64(x), t64(x), attn_mask=t64(causal), is_causal=True, need_weights=False)
    ref_c, _ = np_mha(m, x[:, None], x[:, None], x[:, None], attn_mask=causal)
    np.testing.assert_allclose(out_c.detach().numpy(), ref_c[:, 0], rtol=1e-10)


def test_multihead_bias_kv_and_zero_attn():
    fg.manual_seed(0)
    m = nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True, dtype=fg.float64)
    assert tuple(m.bias_k.shape) == (1, 1, 4) and tuple(m.bias_v.shape) == (1, 1, 4)
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((n, 2, 4)) for n in (3, 2, 2))
    out, w = m(t64(q), t64(k), t64(v))
    # Reference: key/value get the learned bias row, then per head a zero row.
    p = {n: x.detach().numpy() for n, x in m.named_parameters()}
    wq, wk, wv = np.split(p["in_proj_weight"], 3)
    bq, bk, bv = np.split(p["in_proj_bias"], 3)
    qp = q @ wq.T + bq
    kp = np.concatenate([k @ wk.T + bk, np.broadcast_to(p["bias_k"], (1, 2, 4))])
    vp = np.concatenate([v @ wv.T + bv, np.broadcast_to(p["bias_v"], (1, 2, 4))])

    def heads(x):
        return x.reshape(x.shape[0], 2, 2, 2).transpose(1, 2, 0, 3)

    kh = np.concatenate([heads(kp), np.zeros((2, 2, 1, 2))], 2)
    vh = np.concatenate([heads(vp), np.zeros((2, 2, 1, 2))], 2)
    wts = np_softmax(heads(qp) @ kh.transpose(0, 1, 3, 2) / math.sqrt(2))
    ref = (wts @ vh).transpose(2, 0, 1, 3).reshape(3, 2, 4) @ p["out_proj.weight"].T
    ref = ref + p["out_proj.bias"]
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    assert tuple(w.shape) == (2, 3, 4)


@_MIXED_MASKS
@settings(max_examples=6)
@given(mha_case())
def test_multihead_attention_gradcheck_and_gradgradcheck(c):
    c = dict(c, mask="float" if c["mask"] == "bool" else c["mask"])
    rng = np.random.default_rng(c["seed"])
    q, k, v, kpm, am, kd, vd = mha_inputs(c, rng)
    fg.manual_seed(c["seed"])
    m = nn.MultiheadAttention(c["E"], c["heads"], bias=c["bias"], kdim=kd, vdim=vd,
                              dtype=fg.float64)  # fmt: skip
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for _, p in m.named_parameters()]
    kpm_t = fg.tensor(kpm) if kpm is not None else None

    def f(q, k, v, *params):
        for name, p in zip(names, params):
            owner, attr = (m.out_proj, name.split(".")[1]) if "." in name else (m, name)
            object.__setattr__(owner, attr, p)
        out, w = m(q, k, v, key_padding_mask=kpm_t, attn_mask=None if am is None else t64(am))
        return out, w

    inputs = (t64(q, True), t64(k, True), t64(v, True), *params)
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


@_MIXED_MASKS
@settings(max_examples=8)
@given(mha_case(), st.booleans())
def test_multihead_attention_batch_first_memory(c, same):
    # Batch-first input is projected and split into heads without transposing it first;
    # values and gradients of every order must be those of the sequence-first layout.
    c = dict(c, mask="float" if c["mask"] == "bool" else c["mask"])
    if same:  # self-attention: the packed projection's single product
        c = dict(c, kvdim=False, S=c["L"])
    rng = np.random.default_rng(c["seed"])
    q, k, v, kpm, am, kd, vd = mha_inputs(c, rng)
    if same:
        k = v = q
    fg.manual_seed(c["seed"])
    m = nn.MultiheadAttention(c["E"], c["heads"], bias=c["bias"], kdim=kd, vdim=vd,
                              batch_first=True, dtype=fg.float64)  # fmt: skip
    kw = {}
    if kpm is not None:
        kw["key_padding_mask"] = fg.tensor(kpm)
    if am is not None:
        kw["attn_mask"] = t64(am)
    bf = [t64(np.ascontiguousarray(x.transpose(1, 0, 2)), True) for x in (q, k, v)]
    if same:
        bf = [bf[0]] * 3
    out, _ = m(*bf, need_weights=False, **kw)
    ref, _ = np_mha(m, q, k, v, kpm, am)
    np.testing.assert_allclose(out.detach().numpy(), ref.transpose(1, 0, 2), rtol=1e-10, atol=1e-12)
    with_weights, _ = m(*bf, **kw)
    np.testing.assert_allclose(out.detach().numpy(), with_weights.detach().numpy(), rtol=1e-10)

    def f(*xs):
        return m(*(xs * 3 if same else xs), need_weights=False, **kw)[0]

    inputs = tuple(bf[:1] if same else bf)
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_multihead_parameters_and_init():
    fg.manual_seed(0)
    m = nn.MultiheadAttention(8, 2)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [
        ("in_proj_weight", (24, 8)),
        ("in_proj_bias", (24,)),
        ("out_proj.weight", (8, 8)),
        ("out_proj.bias", (8,)),
    ]
    assert type(m.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    np.testing.assert_array_equal(m.in_proj_bias.detach().numpy(), 0.0)
    np.testing.assert_array_equal(m.out_proj.bias.detach().numpy(), 0.0)
    # xavier_uniform_ on [3E, E]: bound sqrt(6 / (E + 3E)).
    w = m.in_proj_weight.detach().numpy()
    bound = math.sqrt(6.0 / 32)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    # PyTorch's order of draws: out_proj (as a Linear), then in_proj_weight.
    fg.manual_seed(0)
    fg.empty(8, 8).uniform_(-1, 1)
    fg.empty(8).uniform_(-1, 1)
    expected = fg.empty(24, 8).uniform_(-bound, bound)
    np.testing.assert_allclose(w, expected.numpy(), rtol=1e-6)
    sep = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, bias=False)
    assert [(n, tuple(p.shape)) for n, p in sep.named_parameters()] == [
        ("q_proj_weight", (4, 4)),
        ("k_proj_weight", (4, 3)),
        ("v_proj_weight", (4, 5)),
        ("out_proj.weight", (4, 4)),
    ]


def test_mismatched_mask_types_warn_as_in_pytorch():
    m = nn.MultiheadAttention(4, 2)
    x = fg.randn(3, 1, 4)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask"):
        m(x, x, x, key_padding_mask=fg.zeros(1, 3).bool(), attn_mask=fg.zeros(3, 3))


def test_multihead_errors():
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)
    m = nn.MultiheadAttention(8, 2)
    x = fg.randn(3, 2, 8)
    with pytest.raises(ValueError, match="was expecting embedding dimension of 8, but got 7"):
        m(fg.randn(3, 2, 7), x, x)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        m(x, x, x, attn_mask=fg.zeros(3, 4))
    with pytest.raises(RuntimeError, match="The shape of the 3D attn_mask is"):
        m(x, x, x, attn_mask=fg.zeros(5, 3, 3))
    with pytest.raises(ValueError, match=r"Expected key_padded_mask.shape\[1\] to be 3"):
        m(x, x, x, key_padding_mask=fg.zeros(2, 4).bool())
    with pytest.raises(ValueError, match="does not match value shape"):
        m(x, fg.randn(4, 2, 8), x)
    with pytest.raises(ValueError, match="query should be unbatched 2D or batched 3D tensor"):
        m(fg.randn(3, 2, 2, 8), x, x)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(ValueError, match="only bool and floating types of key_padding_mask"):
        m(x, x, x, key_padding_mask=fg.zeros(2, 3).long())


# -- TransformerEncoderLayer / TransformerEncoder ---------------------------------------


def np_layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def np_gelu(x):
    from math import erf

    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))


def np_encoder_layer(layer, x, kpm=None, mask=None):
    p = {n: t.detach().numpy().astype(np.float64) for n, t in layer.named_parameters()}
    act = layer.activation

    def sa(y):
        return np_mha(layer.self_attn, y, y, y, kpm, mask)[0]

    def ff(y):
        h = y @ p["linear1.weight"].T + p["linear1.bias"]
        h = np.maximum(h, 0) if act is F.relu else np_gelu(h)
        return h @ p["linear2.weight"].T + p["linear2.bias"]

    def n1(y):
        return np_layer_norm(y, p["norm1.weight"], p["norm1.bias"], layer.norm1.eps)

    def n2(y):
        return np_layer_norm(y, p["norm2.weight"], p["norm2.bias"], layer.norm2.eps)

    if layer.norm_first:
        x = x + sa(n1(x))
        return x + ff(n2(x))
    x = n1(x + sa(x))
    return n2(x + ff(x))


@_MIXED_MASKS
@given(
    st.booleans(),
    st.sampled_from(["relu", "gelu"]),
    st.booleans(),
    st.booleans(),
    st.integers(0, 1000),
)
def test_encoder_layer_matches_the_definition(norm_first, activation, batch_first, masks, seed):
    fg.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(
        4, 2, 6, dropout=0.1, activation=activation, batch_first=batch_first,
        norm_first=norm_first, dtype=fg.float64,
    ).eval()  # fmt: skip
    # Non-trivial norm parameters, so their use is checked too.
    with fg.no_grad():
        layer.norm1.weight.uniform_(0.5, 1.5)
        layer.norm2.bias.uniform_(-0.5, 0.5)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 2, 4))
    kpm = mask = None
    kw = {}
    if masks:
        kpm = np.array([[False, True, False], [False, False, True]])
        mask = np.triu(np.full((3, 3), -np.inf), 1)
        kw = dict(src_key_padding_mask=fg.tensor(kpm), src_mask=t64(mask))
    got = layer(t64(x.transpose(1, 0, 2) if batch_first else x), **kw).detach().numpy()
    if batch_first:
        got = got.transpose(1, 0, 2)
    np.testing.assert_allclose(got, np_encoder_layer(layer, x, kpm, mask), rtol=1e-9, atol=1e-10)


def test_encoder_layer_gradcheck_and_gradgradcheck():
    fg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 3, dropout=0.0, dtype=fg.float64)
    names = [n for n, _ in layer.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for _, p in layer.named_parameters()]

    def f(x, *params):
        for name, p in zip(names, params):
            *path, attr = name.split(".")
            owner = layer
            for part in path:
                owner = getattr(owner, part)
            object.__setattr__(owner, attr, p)
        return layer(x)

    x = t64(np.random.default_rng(0).standard_normal((2, 2, 4)), True)
    assert gradcheck(f, (x, *params))
    assert gradgradcheck(f, (x, *params))


def test_encoder_layer_parameters_and_options():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    assert [n for n, _ in layer.named_parameters()] == [
        "self_attn.in_proj_weight",
        "self_attn.in_proj_bias",
        "self_attn.out_proj.weight",
        "self_attn.out_proj.bias",
        "linear1.weight",
        "linear1.bias",
        "linear2.weight",
        "linear2.bias",
        "norm1.weight",
        "norm1.bias",
        "norm2.weight",
        "norm2.bias",
    ]
    assert layer.dropout.p == 0.1 and layer.norm1.eps == 1e-5
    assert nn.TransformerEncoderLayer(8, 2).linear1.out_features == 2048
    custom = nn.TransformerEncoderLayer(8, 2, 16, activation=fg.tanh)
    assert custom.activation is fg.tanh
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerEncoderLayer(8, 3)
    no_bias = nn.TransformerEncoderLayer(8, 2, 16, bias=False)
    assert all("bias" not in n for n, _ in no_bias.named_parameters())


def test_dropout_in_training_only():
    fg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = fg.randn(3, 2, 8)
    a, b = layer(x), layer(x)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


def test_encoder_stacks_independent_copies():
    fg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, dtype=fg.float64)
    norm = nn.modules.transformer.LayerNorm(4, dtype=fg.float64)
    enc = nn.TransformerEncoder(layer, 2, norm=norm)
    names = [n for n, _ in enc.named_parameters()]
    assert names[0] == "layers.0.self_attn.in_proj_weight"
    assert "layers.1.norm2.bias" in names and names[-1] == "norm.bias"
    assert enc.layers[0] is not layer and enc.layers[0] is not enc.layers[1]
    w0, w1 = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    np.testing.assert_array_equal(w0.detach().numpy(), w1.detach().numpy())
    with fg.no_grad():
        w0.add_(1.0)
    assert not np.allclose(w0.detach().numpy(), w1.detach().numpy())
    x = np.random.default_rng(0).standard_normal((3, 2, 4))
    mask = np.triu(np.full((3, 3), -np.inf), 1)
    y = x
    for sub in enc.layers:
        y = np_encoder_layer(sub, y, None, mask)
    y = np_layer_norm(y, 1.0, 0.0, 1e-5)
    got = enc(t64(x), mask=t64(mask)).detach().numpy()
    np.testing.assert_allclose(got, y, rtol=1e-9, atol=1e-10)


def test_encoder_layer_trains():
    fg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    head = nn.Linear(8, 1)
    params = list(layer.parameters()) + list(head.parameters())
    rng = np.random.default_rng(0)
    x = fg.tensor(rng.standard_normal((16, 5, 8)).astype(np.float32))
    y = fg.tensor((rng.standard_normal((16, 1)) > 0).astype(np.float32))

    def loss_fn():
        return F.binary_cross_entropy_with_logits(head(layer(x).mean(1)), y)

    first = loss_fn().item()
    for _ in range(40):
        loss = loss_fn()
        for p in params:
            p.grad = None
        loss.backward()
        with fg.no_grad():
            for p in params:
                p -= 0.1 * p.grad
    assert loss_fn().item() < 0.7 * first

"""Recurrent layers (RNN, LSTM, GRU and their cells) and nn.utils.rnn.

References are NumPy implementations of the equations in PyTorch's documentation:

    RNN:  h' = act(W_ih x + b_ih + W_hh h + b_hh)
    LSTM: i, f, g, o = split(W_ih x + b_ih + W_hh h + b_hh); i, f, o = sigmoid; g = tanh
          c' = f c + i g;  h' = o tanh(c');  with proj_size, h' = W_hr h'
    GRU:  r, z = sigmoid(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z})
          n = tanh(W_in x + b_in + r (W_hn h + b_hn));  h' = (1 - z) n + z h
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd import nn
from ferrograd.autograd import gradcheck, gradgradcheck
from ferrograd.nn.utils import rnn as R

# -- NumPy references ------------------------------------------------------------------


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_cell(mode, x, state, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    """One step of ``mode`` on NumPy arrays; ``state`` is (h,) or (h, c)."""
    b_ih = 0.0 if b_ih is None else b_ih
    b_hh = 0.0 if b_hh is None else b_hh
    gi = x @ w_ih.T + b_ih
    gh = state[0] @ w_hh.T + b_hh
    if mode in ("RNN_TANH", "RNN_RELU"):
        pre = gi + gh
        return (np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0.0),)
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = _sig(f) * state[1] + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        if w_hr is not None:
            h = h @ w_hr.T
        return h, c
    i_r, i_z, i_n = np.split(gi, 3, axis=-1)
    h_r, h_z, h_n = np.split(gh, 3, axis=-1)
    r, z = _sig(i_r + h_r), _sig(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return ((1 - z) * n + z * state[0],)


def np_params(m):
    return {n: p.detach().numpy().astype(np.float64) for n, p in m.named_parameters()}


def np_rnn(m, x, states):
    """The stacked (bi)directional recurrence of module ``m`` on a time-major [T, B, I] array
    with initial states [L*D, B, *]; returns (output [T, B, D*H], final states)."""
    p = np_params(m)
    dirs = 2 if m.bidirectional else 1
    finals = [[] for _ in states]
    layer_in = x
    for layer in range(m.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            idx = layer * dirs + d
            state = tuple(s[idx] for s in states)
            seq = []
            order = range(x.shape[0]) if d == 0 else reversed(range(x.shape[0]))
            for t in order:
                state = np_cell(
                    m.mode,
                    layer_in[t],
                    state,
                    p["weight_ih" + sfx],
                    p["weight_hh" + sfx],
                    p.get("bias_ih" + sfx),
                    p.get("bias_hh" + sfx),
                    p.get("weight_hr" + sfx),
                )
                seq.append(state[0])
            if d == 1:
                seq = seq[::-1]
            outs.append(np.stack(seq))
            for k, s in enumerate(state):
                finals[k].append(s)
        layer_in = np.concatenate(outs, -1)
    return layer_in, [np.stack(f) for f in finals]


MODES = {"RNN": "RNN_TANH", "LSTM": "LSTM", "GRU": "GRU"}


def make(kind, input_size, hidden, dtype=fg.float64, **kw):
    if kind == "RNN_RELU":
        return nn.RNN(input_size, hidden, nonlinearity="relu", dtype=dtype, **kw)
    return getattr(nn, kind)(input_size, hidden, dtype=dtype, **kw)


def state_sizes(m):
    real = m.proj_size if m.proj_size else m.hidden_size
    return [real, m.hidden_size] if m.mode == "LSTM" else [real]


def t64(a, requires_grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=fg.float64, requires_grad=requires_grad)


kinds = st.sampled_from(["RNN", "RNN_RELU", "LSTM", "GRU"])


@st.composite
def configs(draw):
    kind = draw(kinds)
    return dict(
        kind=kind,
        T=draw(st.integers(1, 4)),
        B=draw(st.integers(1, 3)),
        I=draw(st.integers(1, 4)),
        H=draw(st.integers(1, 4)),
        num_layers=draw(st.integers(1, 2)),
        bidirectional=draw(st.booleans()),
        batch_first=draw(st.booleans()),
        bias=draw(st.booleans()),
        proj=draw(st.integers(0, 2)) if kind == "LSTM" else 0,
        seed=draw(st.integers(0, 2**16)),
    )


def build(cfg, dtype=fg.float64):
    fg.manual_seed(cfg["seed"])
    kw = dict(
        num_layers=cfg["num_layers"],
        bidirectional=cfg["bidirectional"],
        batch_first=cfg["batch_first"],
        bias=cfg["bias"],
    )
    if cfg["proj"] and cfg["proj"] < cfg["H"]:
        kw["proj_size"] = cfg["proj"]
    return make(cfg["kind"], cfg["I"], cfg["H"], dtype=dtype, **kw)


# -- forward against the equations ------------------------------------------------------


@given(configs(), st.sampled_from([np.float32, np.float64]))
def test_layers_match_the_published_equations(cfg, npdt):
    dtype = fg.float32 if npdt == np.float32 else fg.float64
    m = build(cfg, dtype)
    rng = np.random.default_rng(cfg["seed"])
    x = rng.standard_normal((cfg["T"], cfg["B"], cfg["I"])).astype(npdt)
    dirs = 2 if cfg["bidirectional"] else 1
    states = [
        rng.standard_normal((cfg["num_layers"] * dirs, cfg["B"], s)).astype(npdt)
        for s in state_sizes(m)
    ]
    xin = x.transpose(1, 0, 2) if cfg["batch_first"] else x
    hx = tuple(fg.tensor(s) for s in states)
    out, hidden = m(fg.tensor(np.ascontiguousarray(xin)), hx if m.mode == "LSTM" else hx[0])
    ref_out, ref_states = np_rnn(m, x.astype(np.float64), [s.astype(np.float64) for s in states])
    if cfg["batch_first"]:
        ref_out = ref_out.transpose(1, 0, 2)
    tol = 1e-5 if npdt == np.float32 else 1e-10
    assert out.dtype == dtype
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=tol, atol=tol)
    got_states = hidden if m.mode == "LSTM" else (hidden,)
    for g, r in zip(got_states, ref_states):
        np.testing.assert_allclose(g.detach().numpy(), r, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_default_state_is_zeros_and_unbatched_input_is_a_batch_of_one(kind):
    fg.manual_seed(0)
    m = make(kind, 3, 4, num_layers=2)
    x = fg.randn(5, 3, dtype=fg.float64)
    out, hidden = m(x)
    out_b, hidden_b = m(x.unsqueeze(1))
    assert tuple(out.shape) == (5, 4)
    np.testing.assert_allclose(out.detach().numpy(), out_b.detach().numpy()[:, 0])
    hs = hidden if kind == "LSTM" else (hidden,)
    hs_b = hidden_b if kind == "LSTM" else (hidden_b,)
    for h, hb in zip(hs, hs_b):
        assert tuple(h.shape) == (2, 4)
        np.testing.assert_allclose(h.detach().numpy(), hb.detach().numpy()[:, 0])
    zeros = tuple(fg.zeros(2, 1, 4, dtype=fg.float64) for _ in hs)
    out_z, _ = m(x.unsqueeze(1), zeros if kind == "LSTM" else zeros[0])
    np.testing.assert_array_equal(out_z.detach().numpy(), out_b.detach().numpy())


@given(
    st.sampled_from(["RNN", "RNN_RELU", "LSTM", "GRU"]),
    st.integers(1, 4),
    st.integers(1, 3),
    st.integers(1, 3),
    st.booleans(),
    st.integers(0, 1000),
)
def test_cells_match_the_equations(kind, batch, isz, hsz, bias, seed):
    fg.manual_seed(seed)
    if kind == "RNN_RELU":
        cell = nn.RNNCell(isz, hsz, bias=bias, nonlinearity="relu", dtype=fg.float64)
    else:
        cell = getattr(nn, kind + "Cell")(isz, hsz, bias=bias, dtype=fg.float64)
    p = np_params(cell)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, isz))
    h = rng.standard_normal((batch, hsz))
    c = rng.standard_normal((batch, hsz))
    mode = {"RNN": "RNN_TANH"}.get(kind, kind)
    ref = np_cell(
        mode, x, (h, c), p["weight_ih"], p["weight_hh"], p.get("bias_ih"), p.get("bias_hh")
    )
    if kind == "LSTM":
        got = cell(t64(x), (t64(h), t64(c)))
    else:
        got = (cell(t64(x), t64(h)),)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.detach().numpy(), r, rtol=1e-10, atol=1e-12)
    # Unbatched input: a 1-D input gives a 1-D state.
    one = cell(t64(x[0]), (t64(h[0]), t64(c[0])) if kind == "LSTM" else t64(h[0]))
    one = one if kind == "LSTM" else (one,)
    for g, r in zip(one, ref):
        np.testing.assert_allclose(g.detach().numpy(), r[0], rtol=1e-10, atol=1e-12)


# -- packed sequences -------------------------------------------------------------------


@given(
    st.sampled_from(["RNN", "LSTM", "GRU"]),
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.booleans(),
    st.integers(1, 2),
    st.integers(0, 1000),
)
def test_packed_input_runs_each_sequence_on_its_own(kind, lengths, bidirectional, layers, seed):
    fg.manual_seed(seed)
    m = make(kind, 2, 3, num_layers=layers, bidirectional=bidirectional)
    rng = np.random.default_rng(seed)
    seqs = [rng.standard_normal((n, 2)) for n in lengths]
    dirs = 2 if bidirectional else 1
    states = [rng.standard_normal((layers * dirs, len(lengths), 3)) for _ in state_sizes(m)]
    packed = R.pack_sequence([t64(s) for s in seqs], enforce_sorted=False)
    hx = tuple(t64(s) for s in states)
    out, hidden = m(packed, hx if kind == "LSTM" else hx[0])
    assert isinstance(out, R.PackedSequence)
    padded, got_lengths = R.pad_packed_sequence(out, batch_first=True)
    assert got_lengths.tolist() == lengths
    hs = hidden if kind == "LSTM" else (hidden,)
    for b, s in enumerate(seqs):
        ref_out, ref_states = np_rnn(m, s[:, None, :], [st_[:, b : b + 1] for st_ in states])
        np.testing.assert_allclose(
            padded.detach().numpy()[b, : len(s)], ref_out[:, 0], rtol=1e-10, atol=1e-12
        )
        np.testing.assert_array_equal(padded.detach().numpy()[b, len(s) :], 0.0)
        for h, r in zip(hs, ref_states):
            np.testing.assert_allclose(h.detach().numpy()[:, b], r[:, 0], rtol=1e-10, atol=1e-12)


# -- gradients --------------------------------------------------------------------------


def functional(m, names):
    """``f(x, *states, *params)`` running ``m`` with the given tensors as its parameters."""

    def f(x, *rest):
        n_states = len(rest) - len(names)
        states, params = rest[:n_states], rest[n_states:]
        for name, p in zip(names, params):
            object.__setattr__(m, name, p)
        hx = None
        if states:
            hx = tuple(states) if m.mode == "LSTM" else states[0]
        out, hidden = m(x, hx)
        hs = hidden if m.mode == "LSTM" else (hidden,)
        return (out, *hs)

    return f


@settings(max_examples=8)
@given(configs())
def test_layer_gradcheck_and_gradgradcheck(cfg):
    cfg = dict(cfg, T=min(cfg["T"], 3), B=min(cfg["B"], 2), H=min(cfg["H"], 3))
    m = build(cfg)
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for _, p in m.named_parameters()]
    rng = np.random.default_rng(cfg["seed"])
    shape = (cfg["B"], cfg["T"]) if cfg["batch_first"] else (cfg["T"], cfg["B"])
    x = t64(rng.standard_normal((*shape, cfg["I"])), True)
    dirs = 2 if cfg["bidirectional"] else 1
    states = [
        t64(0.5 * rng.standard_normal((cfg["num_layers"] * dirs, cfg["B"], s)), True)
        for s in state_sizes(m)
    ]
    f = functional(m, names)
    inputs = (x, *states, *params)
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


@settings(max_examples=6)
@given(st.sampled_from(["LSTM", "GRU", "RNN"]), st.booleans(), st.integers(0, 1000))
def test_packed_gradcheck_and_gradgradcheck(kind, bidirectional, seed):
    fg.manual_seed(seed)
    m = make(kind, 2, 2, bidirectional=bidirectional)
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for _, p in m.named_parameters()]
    rng = np.random.default_rng(seed)
    padded = t64(rng.standard_normal((3, 3, 2)), True)
    lengths = [2, 3, 1]

    def f(x, *params):
        for name, p in zip(names, params):
            object.__setattr__(m, name, p)
        packed = R.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, hidden = m(packed)
        hs = hidden if kind == "LSTM" else (hidden,)
        return (R.pad_packed_sequence(out)[0], *hs)

    assert gradcheck(f, (padded, *params))
    assert gradgradcheck(f, (padded, *params))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_cell_gradcheck_and_gradgradcheck(kind):
    fg.manual_seed(3)
    cell = getattr(nn, kind + "Cell")(3, 2, dtype=fg.float64)
    names = [n for n, _ in cell.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for _, p in cell.named_parameters()]
    rng = np.random.default_rng(0)
    x = t64(rng.standard_normal((2, 3)), True)
    h = t64(rng.standard_normal((2, 2)), True)
    c = t64(rng.standard_normal((2, 2)), True)

    def f(x, h, c, *params):
        for name, p in zip(names, params):
            object.__setattr__(cell, name, p)
        out = cell(x, (h, c)) if kind == "LSTM" else cell(x, h)
        return out if kind == "LSTM" else (out,)

    assert gradcheck(f, (x, h, c, *params))
    assert gradgradcheck(f, (x, h, c, *params))


def test_fused_layers_agree_with_the_composite_recurrence():
    # The native loop (graph-free forward) and the op-by-op recurrence used under
    # create_graph must give the same values and first derivatives.
    from ferrograd.nn._functional import rnn as F_rnn

    for kind in ("LSTM", "GRU"):
        fg.manual_seed(1)
        m = make(kind, 4, 5, dtype=fg.float32)
        x = fg.randn(6, 3, 4, requires_grad=True)
        out, _ = m(x)
        (out * out).sum().backward()
        gx = x.grad.numpy().copy()
        gw = m.weight_hh_l0.grad.numpy().copy()
        m.zero_grad()
        x.grad = None
        gi = nn.functional.linear(x.reshape(18, 4), m.weight_ih_l0, m.bias_ih_l0)
        step = F_rnn.make_step(kind, m.weight_hh_l0, m.bias_hh_l0)
        zeros = fg.zeros(3, 5)
        state = (zeros, zeros) if kind == "LSTM" else (zeros,)
        ref, _ = F_rnn.run_direction(step, gi, [3] * 6, state, reverse=False)
        np.testing.assert_allclose(out.detach().numpy().reshape(18, 5), ref.detach().numpy(),
                                   rtol=1e-6, atol=1e-6)  # fmt: skip
        (ref * ref).sum().backward()
        np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gw, m.weight_hh_l0.grad.numpy(), rtol=1e-5, atol=1e-6)


# Shapes that take each path of the native LSTM loops: batch rows split in chunks of 4 and
# of 8 (weight gradients made inside the loop), a batch whose per-chunk partial gradients
# would be too large (gradients as products after the loop), and a batch too small to split
# by rows (hidden units split per step).
_LSTM_PATHS = {
    "rows4": (5, 6, 10, 3),
    "rows8": (7, 9, 17, 3),
    "rows_products_after": (64, 256, 64, 2),
    "units": (3, 128, 2, 3),
}


@pytest.mark.parametrize("path", sorted(_LSTM_PATHS))
@pytest.mark.parametrize("frozen", [(), ("weight_ih_l0",), ("bias_ih_l0", "weight_hh_l0")])
def test_native_lstm_gradients_match_the_composite_on_every_path(path, frozen):
    from ferrograd.nn._functional import rnn as F_rnn

    isz, hsz, batch, steps = _LSTM_PATHS[path]
    fg.manual_seed(3)
    m = make("LSTM", isz, hsz, dtype=fg.float64)
    for name in frozen:
        getattr(m, name).requires_grad_(False)
    x = fg.randn(steps, batch, isz, dtype=fg.float64, requires_grad=True)
    h0 = fg.randn(1, batch, hsz, dtype=fg.float64, requires_grad=True)
    c0 = fg.randn(1, batch, hsz, dtype=fg.float64, requires_grad=True)
    wts = fg.randn(steps, batch, hsz, dtype=fg.float64)
    out, (h_n, c_n) = m(x, (h0, c0))
    ((out * wts).sum() + h_n.sum() + 2 * c_n.sum()).backward()
    leaves = [x, h0, c0] + list(m.parameters())
    native = [None if t.grad is None else t.grad.numpy().copy() for t in leaves]
    for t in leaves:
        t.grad = None
    gi = nn.functional.linear(x.reshape(steps * batch, isz), m.weight_ih_l0, m.bias_ih_l0)
    step = F_rnn.make_step("LSTM", m.weight_hh_l0, m.bias_hh_l0)
    ref, (rh, rc) = F_rnn.run_direction(step, gi, [batch] * steps, (h0[0], c0[0]), False)
    np.testing.assert_allclose(out.detach().numpy().reshape(-1, hsz), ref.detach().numpy(),
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    ((ref * wts.reshape(-1, hsz)).sum() + rh.sum() + 2 * rc.sum()).backward()
    for t, got in zip(leaves, native):
        if not t.requires_grad:
            assert got is None
            continue
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-10, atol=1e-10)


# -- parameters and initialisation ------------------------------------------------------


def test_parameter_names_shapes_and_order_follow_pytorch():
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    got = [(n, tuple(p.shape)) for n, p in m.named_parameters()]
    expected = []
    for layer in range(2):
        for sfx in ("", "_reverse"):
            isz = 10 if layer == 0 else 10  # 2 directions * proj_size 5
            expected += [
                (f"weight_ih_l{layer}{sfx}", (80, isz)),
                (f"weight_hh_l{layer}{sfx}", (80, 5)),
                (f"bias_ih_l{layer}{sfx}", (80,)),
                (f"bias_hh_l{layer}{sfx}", (80,)),
                (f"weight_hr_l{layer}{sfx}", (5, 20)),
            ]
    assert got == expected
    g = nn.GRU(3, 4, num_layers=2, bias=False)
    assert [(n, tuple(p.shape)) for n, p in g.named_parameters()] == [
        ("weight_ih_l0", (12, 3)),
        ("weight_hh_l0", (12, 4)),
        ("weight_ih_l1", (12, 4)),
        ("weight_hh_l1", (12, 4)),
    ]
    r = nn.RNN(3, 4, bidirectional=True)
    assert [n for n, _ in r.named_parameters()] == [
        "weight_ih_l0",
        "weight_hh_l0",
        "bias_ih_l0",
        "bias_hh_l0",
        "weight_ih_l0_reverse",
        "weight_hh_l0_reverse",
        "bias_ih_l0_reverse",
        "bias_hh_l0_reverse",
    ]
    cell = nn.LSTMCell(3, 4)
    assert [(n, tuple(p.shape)) for n, p in cell.named_parameters()] == [
        ("weight_ih", (16, 3)),
        ("weight_hh", (16, 4)),
        ("bias_ih", (16,)),
        ("bias_hh", (16,)),
    ]
    assert [n for n, _ in nn.GRUCell(3, 4, bias=False).named_parameters()] == [
        "weight_ih",
        "weight_hh",
    ]
    assert all(isinstance(p, nn.Parameter) for p in m.parameters())


@pytest.mark.parametrize(
    "ctor",
    [
        lambda: nn.LSTM(3, 5, num_layers=2),
        lambda: nn.GRU(3, 5, bidirectional=True),
        lambda: nn.RNN(3, 5),
        lambda: nn.LSTMCell(3, 5),
        lambda: nn.GRUCell(3, 5),
    ],
)
def test_init_draws_uniform_in_parameter_order(ctor):
    # PyTorch: every parameter, in registration order, uniform_(-1/sqrt(H), 1/sqrt(H)).
    fg.manual_seed(1234)
    m = ctor()
    fg.manual_seed(1234)
    bound = 1.0 / math.sqrt(5)
    for _, p in m.named_parameters():
        expected = fg.empty(*p.shape).uniform_(-bound, bound)
        np.testing.assert_array_equal(p.detach().numpy(), expected.numpy())
        assert np.abs(p.detach().numpy()).max() <= bound


def test_float64_layers_have_float64_parameters():
    m = nn.GRU(2, 3, dtype=fg.float64)
    assert all(p.dtype == fg.float64 for p in m.parameters())
    out, h = m(fg.randn(4, 1, 2, dtype=fg.float64))
    assert out.dtype == fg.float64 and h.dtype == fg.float64


def test_repr_arguments():
    assert nn.LSTM(10, 20).extra_repr() == "10, 20"
    assert (
        nn.GRU(
            3, 4, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True
        ).extra_repr()  # fmt: skip
        == "3, 4, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True"
    )
    assert nn.LSTM(3, 4, proj_size=2).extra_repr() == "3, 4, proj_size=2"
    assert nn.RNNCell(3, 4, nonlinearity="relu").extra_repr() == "3, 4, nonlinearity=relu"


# -- dropout between layers -------------------------------------------------------------


def test_dropout_applies_between_layers_only_while_training():
    fg.manual_seed(0)
    m = nn.LSTM(3, 8, num_layers=2, dropout=0.5)
    fg.manual_seed(0)
    plain = nn.LSTM(3, 8, num_layers=2)
    x = fg.randn(4, 2, 3)
    a, _ = m(x)
    b, _ = m(x)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    m.eval()
    c, _ = m(x)
    d, _ = plain(x)
    np.testing.assert_array_equal(c.detach().numpy(), d.detach().numpy())


def test_dropout_with_one_layer_warns_and_bad_dropout_raises():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.2)
    with pytest.raises(ValueError, match=r"dropout should be a number in range \[0, 1\]"):
        nn.GRU(3, 4, num_layers=2, dropout=1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LSTM(3, 4, num_layers=2, dropout=0.2)


# -- errors -----------------------------------------------------------------------------


def test_pytorch_error_texts():
    m = nn.LSTM(10, 20)
    with pytest.raises(
        RuntimeError, match=r"input.size\(-1\) must be equal to input_size. Expected 10, got 5"
    ):
        m(fg.randn(4, 3, 5))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        m(fg.randn(1, 2, 3, 10))
    with pytest.raises(ValueError, match="GRU: Expected input to be 2D or 3D, got 1D instead"):
        nn.GRU(10, 20)(fg.randn(10))
    with pytest.raises(ValueError, match="RNN: Expected input to be 2D or 3D"):
        nn.RNN(10, 20)(fg.randn(1, 1, 1, 10))
    h = fg.zeros(2, 3, 20)
    with pytest.raises(
        RuntimeError, match=r"Expected hidden\[0\] size \(1, 3, 20\), got \[2, 3, 20\]"
    ):
        m(fg.randn(4, 3, 10), (h, fg.zeros(1, 3, 20)))
    with pytest.raises(
        RuntimeError, match=r"Expected hidden\[1\] size \(1, 3, 20\), got \[1, 3, 7\]"
    ):
        m(fg.randn(4, 3, 10), (fg.zeros(1, 3, 20), fg.zeros(1, 3, 7)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 3, 20\), got \[1, 2, 20\]"):
        nn.GRU(10, 20)(fg.randn(4, 3, 10), fg.zeros(1, 2, 20))
    with pytest.raises(
        RuntimeError, match="For batched 3-D input, hx should also be 3-D but got 2-D tensor"
    ):
        nn.GRU(10, 20)(fg.randn(4, 3, 10), fg.zeros(3, 20))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx and cx should also be 2-D"):
        m(fg.randn(4, 10), (fg.zeros(1, 1, 20), fg.zeros(1, 1, 20)))
    with pytest.raises(ValueError, match="input must have the type"):
        m(fg.randn(4, 3, 10, dtype=fg.float64))
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.LSTM(3, 0)
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        nn.GRU(3, 4.0)
    cell = nn.LSTMCell(10, 20)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 10"):
        cell(fg.randn(3, 5))
    with pytest.raises(RuntimeError, match="Input batch size 3 doesn't match hidden0 batch size 2"):
        cell(fg.randn(3, 10), (fg.zeros(2, 20), fg.zeros(2, 20)))
    with pytest.raises(RuntimeError, match="hidden1 has inconsistent hidden_size: got 7"):
        cell(fg.randn(3, 10), (fg.zeros(3, 20), fg.zeros(3, 7)))
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1D or 2D, got 3D instead"):
        cell(fg.randn(1, 3, 10))
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0 in RNN"):
        m(fg.randn(0, 2, 10))
    out, (h_n, _) = m(fg.randn(3, 0, 10))
    assert tuple(out.shape) == (3, 0, 20) and tuple(h_n.shape) == (1, 0, 20)
    before = [p.detach().numpy().copy() for p in m.parameters()]
    with pytest.raises(RuntimeError):
        m(fg.randn(4, 3, 5))
    for b, p in zip(before, m.parameters()):
        np.testing.assert_array_equal(b, p.detach().numpy())


# -- nn.utils.rnn -----------------------------------------------------------------------


@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.booleans(),
    st.sampled_from(["left", "right"]),
    st.floats(-2, 2),
)
def test_pad_sequence(lengths, batch_first, side, value):
    rng = np.random.default_rng(len(lengths))
    seqs = [rng.standard_normal((n, 2)) for n in lengths]
    got = R.pad_sequence([t64(s) for s in seqs], batch_first, value, side).numpy()
    longest = max(lengths)
    ref = np.full((len(seqs), longest, 2), value)
    for b, s in enumerate(seqs):
        if side == "right":
            ref[b, : len(s)] = s
        else:
            ref[b, longest - len(s) :] = s
    np.testing.assert_array_equal(got, ref if batch_first else ref.transpose(1, 0, 2))


@given(st.lists(st.integers(1, 5), min_size=1, max_size=5), st.booleans())
def test_pack_then_pad_round_trips(lengths, batch_first):
    rng = np.random.default_rng(sum(lengths))
    longest = max(lengths)
    padded = rng.standard_normal((len(lengths), longest, 3))
    for b, n in enumerate(lengths):
        padded[b, n:] = 0.0
    x = padded if batch_first else padded.transpose(1, 0, 2)
    packed = R.pack_padded_sequence(t64(x), lengths, batch_first=batch_first, enforce_sorted=False)
    # batch_sizes[t] = number of sequences longer than t; data is time-major over the
    # length-sorted batch.
    assert packed.batch_sizes.tolist() == [sum(n > t for n in lengths) for t in range(longest)]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    rows = [padded[b, t] for t in range(longest) for b in order if lengths[b] > t]
    np.testing.assert_array_equal(packed.data.numpy(), np.array(rows))
    back, got_lengths = R.pad_packed_sequence(packed, batch_first=batch_first)
    np.testing.assert_array_equal(back.numpy(), x)
    assert got_lengths.tolist() == lengths
    unpacked = R.unpack_sequence(packed)
    for b, n in enumerate(lengths):
        np.testing.assert_array_equal(unpacked[b].numpy(), padded[b, :n])


def test_pack_pad_gradients():
    x = t64(np.random.default_rng(0).standard_normal((3, 4, 2)), True)

    def f(x):
        packed = R.pack_padded_sequence(x, [3, 1, 2, 2], enforce_sorted=False)
        return R.pad_packed_sequence(packed, padding_value=-1.0, total_length=5)[0]

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    seqs = [t64(np.ones((n, 2)), True) for n in (2, 3)]
    assert gradcheck(lambda a, b: R.pad_sequence([a, b], padding_side="left"), tuple(seqs))


def test_packing_errors():
    x = fg.randn(3, 2, 1)
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order"):
        R.pack_padded_sequence(x, [1, 3])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        R.pack_padded_sequence(x, [2, 0])
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size"):
        R.pack_padded_sequence(x, [2, 1, 1])
    packed = R.pack_padded_sequence(x, [3, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length"):
        R.pad_packed_sequence(packed, total_length=2)
    with pytest.raises(ValueError, match="Expected padding_side to be one of left or right"):
        R.pad_sequence([x], padding_side="middle")
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    unsorted = R.pack_sequence([fg.ones(1), fg.ones(3)], enforce_sorted=False)
    assert unsorted.sorted_indices.tolist() == [1, 0]
    assert unsorted.unsorted_indices.tolist() == [1, 0]
    assert unsorted.to(fg.float64).data.dtype == fg.float64


# -- training ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_a_tiny_sequence_task_trains(kind):
    # Predict the sign of the running sum's final value from a noisy sequence.
    fg.manual_seed(0)
    rnn = getattr(nn, kind)(1, 8, batch_first=True)
    head = nn.Linear(8, 1)
    params = list(rnn.parameters()) + list(head.parameters())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 6, 1)).astype(np.float32)
    y = (x.sum(axis=(1, 2)) > 0).astype(np.float32)[:, None]
    xt, yt = fg.tensor(x), fg.tensor(y)

    def loss_fn():
        out, _ = rnn(xt)
        logits = head(out[:, -1])
        return nn.functional.binary_cross_entropy_with_logits(logits, yt)

    first = loss_fn().item()
    optimizer = fg.optim.Adam(params, lr=0.05)
    for _ in range(60):
        loss = loss_fn()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss_fn().item() < 0.1 * first


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_wide_layers_use_the_tiled_products_correctly(kind, dtype):
    # Hidden 40 and batch 6: the native loop's register tiles (4 rows x 32/64 columns) cover
    # part of each product and the leftover rows/columns take the plain path; both must be
    # right, forward (against the equations) and backward (against the composite form).
    from ferrograd.nn._functional import rnn as F_rnn

    fg.manual_seed(5)
    m = make(kind, 5, 40, dtype=dtype, bidirectional=True)
    rng = np.random.default_rng(5)
    npdt = np.float32 if dtype == fg.float32 else np.float64
    x = rng.standard_normal((7, 6, 5)).astype(npdt)
    out, _ = m(fg.tensor(x))
    zeros = [np.zeros((2, 6, 40))] * len(state_sizes(m))
    ref, _ = np_rnn(m, x.astype(np.float64), zeros)
    tol = 2e-5 if dtype == fg.float32 else 1e-10
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=tol, atol=tol)
    # Packed, unequal lengths: gradients of the fused node against the composite recurrence.
    xt = fg.tensor(x, requires_grad=True)
    packed = R.pack_padded_sequence(xt, [7, 5, 5, 3, 2, 1])
    pout, _ = m(packed)
    (pout.data * pout.data).sum().backward()
    fused = [xt.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad()
    xt.grad = None
    packed = R.pack_padded_sequence(xt, [7, 5, 5, 3, 2, 1])
    sizes = packed.batch_sizes.tolist()
    outs = []
    for sfx, reverse in (("_l0", False), ("_l0_reverse", True)):
        w = {n: getattr(m, n + sfx) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        gi = nn.functional.linear(packed.data, w["weight_ih"], w["bias_ih"])
        z = fg.zeros(6, 40, dtype=dtype)
        state = (z, z) if kind == "LSTM" else (z,)
        step = F_rnn.make_step(kind, w["weight_hh"], w["bias_hh"])
        outs.append(F_rnn.run_direction(step, gi, sizes, state, reverse)[0])
    cout = fg.cat(outs, 1)
    np.testing.assert_allclose(pout.data.detach().numpy(), cout.detach().numpy(), rtol=tol,
                               atol=tol)  # fmt: skip
    (cout * cout).sum().backward()
    composite = [xt.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
    for a, b in zip(fused, composite):
        np.testing.assert_allclose(a, b, rtol=10 * tol, atol=10 * tol)


def test_native_loops_refuse_bad_shapes_with_an_exception():
    from ferrograd import _C

    h = fg.zeros(2, 3)
    w = fg.zeros(12, 3)
    x = fg.zeros(4, 5)
    w_ih = fg.zeros(12, 5)
    with pytest.raises(RuntimeError, match="expected input of shape"):
        _C._lstm_layer_forward(fg.zeros(4, 4), h, h, w_ih, w, None, None, [2, 2], False)
    with pytest.raises(RuntimeError, match="weight_ih"):
        _C._lstm_layer_forward(x, h, h, fg.zeros(11, 5), w, None, None, [2, 2], False)
    with pytest.raises(RuntimeError, match="bias_hh"):
        _C._lstm_layer_forward(x, h, h, w_ih, w, None, fg.zeros(11), [2, 2], False)
    with pytest.raises(RuntimeError, match="non-increasing"):
        _C._lstm_layer_forward(x, h, h, w_ih, w, None, None, [1, 2], False)
    with pytest.raises(RuntimeError, match="previous hidden states"):
        _C._lstm_layer_backward(
            x, fg.zeros(4, 3), h, h, [fg.zeros(4, 12), x[:, :3], x[:, :3], fg.zeros(3, 3)],
            w_ih, w, [2, 2], False, (True, True, True, True),
        )  # fmt: skip
    with pytest.raises(RuntimeError, match="one floating-point dtype"):
        _C._gru_layer_forward(fg.zeros(4, 9), h.double(), fg.zeros(9, 3), None, [2, 2], False)
    with pytest.raises(RuntimeError, match="saved gates"):
        _C._gru_layer_backward(h, h, fg.zeros(4, 9), fg.zeros(4, 3), fg.zeros(9, 3), [2, 2], False)

"""The native LSTM loops split the batch across the pool when it has at least two 4-row
chunks (each task carries its rows through every step, with `W_hh` packed once per call);
smaller batches keep the split by hidden units. These checks run batches of 8-12 rows,
so the row split is taken, with chunks left partly idle by packed sequences and hidden
sizes that leave a partial register block, against a NumPy implementation of the LSTM
equations (PyTorch's documented ones):

    i, f, g, o = split(W_ih x + b_ih + W_hh h + b_hh); i, f, o = sigmoid; g = tanh
    c' = f c + i g;  h' = o tanh(c');  with proj_size, h' = W_hr h'

and, for gradients, against finite differences (float64 gradcheck and gradgradcheck) and
the composite recurrence.
"""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
from ferrograd import nn
from ferrograd.autograd import gradcheck, gradgradcheck
from ferrograd.nn.utils import rnn as R


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _np(t):
    return None if t is None else t.detach().numpy().astype(np.float64)


def np_lstm(m, x, lengths=None, h0=None, c0=None):
    """The whole stack of ``m`` (an ``nn.LSTM``) on time-major padded ``x`` [T, B, I] in
    float64. Sequence ``b`` runs for ``lengths[b]`` steps; outputs past its end are zero
    and its final states are those after its own last step. Returns (out, h_n, c_n)."""
    steps, batch = x.shape[:2]
    lengths = [steps] * batch if lengths is None else lengths
    dirs = 2 if m.bidirectional else 1
    hd, hout = m.hidden_size, m.proj_size or m.hidden_size
    h_n = np.zeros((m.num_layers * dirs, batch, hout))
    c_n = np.zeros((m.num_layers * dirs, batch, hd))
    layer_in = x.astype(np.float64)
    for layer in range(m.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh = _np(getattr(m, "weight_ih" + sfx)), _np(getattr(m, "weight_hh" + sfx))
            b_ih = _np(getattr(m, "bias_ih" + sfx, None))
            b_hh = _np(getattr(m, "bias_hh" + sfx, None))
            w_hr = _np(getattr(m, "weight_hr" + sfx, None)) if m.proj_size else None
            out = np.zeros((steps, batch, hout))
            idx = layer * dirs + d
            for b, n in enumerate(lengths):
                h = np.zeros(hout) if h0 is None else h0[idx, b].astype(np.float64)
                c = np.zeros(hd) if c0 is None else c0[idx, b].astype(np.float64)
                for t in reversed(range(n)) if d else range(n):
                    z = w_ih @ layer_in[t, b] + w_hh @ h
                    z = z + (0.0 if b_ih is None else b_ih) + (0.0 if b_hh is None else b_hh)
                    i, f, g, o = np.split(z, 4)
                    c = _sig(f) * c + _sig(i) * np.tanh(g)
                    h = _sig(o) * np.tanh(c)
                    if w_hr is not None:
                        h = w_hr @ h
                    out[t, b] = h
                h_n[idx, b], c_n[idx, b] = h, c
            outs.append(out)
        layer_in = np.concatenate(outs, 2)
    return layer_in, h_n, c_n


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    old = fg.get_num_threads()
    fg.set_num_threads(request.param)
    try:
        yield request.param
    finally:
        fg.set_num_threads(old)


CONFIGS = [
    # layers, bidirectional, batch_first, proj_size, bias, give state, batch, hidden
    (1, False, False, 0, True, False, 8, 9),
    (1, True, True, 0, True, True, 10, 70),
    (2, False, False, 0, False, True, 11, 33),
    (2, True, False, 0, True, False, 12, 16),
    (2, True, True, 5, True, True, 9, 7),
]


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(map(str, c)))
def test_padded_layers_match_numpy(threads, dtype, cfg):
    layers, bidir, batch_first, proj, bias, give_state, batch, hidden = cfg
    fg.manual_seed(11)
    m = nn.LSTM(
        4, hidden, num_layers=layers, bias=bias, batch_first=batch_first,
        bidirectional=bidir, proj_size=proj, dropout=0.4 if layers > 1 else 0.0, dtype=dtype,
    )  # fmt: skip
    m.eval()  # dropout between layers is off in eval mode
    rng = np.random.default_rng(11)
    npdt = np.float32 if dtype == fg.float32 else np.float64
    x = rng.standard_normal((5, batch, 4)).astype(npdt)
    dirs = 2 if bidir else 1
    h0 = c0 = None
    if give_state:
        h0 = (rng.standard_normal((layers * dirs, batch, proj or hidden)) * 0.5).astype(npdt)
        c0 = (rng.standard_normal((layers * dirs, batch, hidden)) * 0.5).astype(npdt)
    xin = fg.tensor(x.transpose(1, 0, 2).copy() if batch_first else x)
    if give_state:
        out, (h_n, c_n) = m(xin, (fg.tensor(h0), fg.tensor(c0)))
    else:
        out, (h_n, c_n) = m(xin)
    ref_out, ref_h, ref_c = np_lstm(m, x, h0=h0, c0=c0)
    got = out.detach().numpy()
    if batch_first:
        got = got.transpose(1, 0, 2)
    tol = 2e-5 if dtype == fg.float32 else 1e-12
    np.testing.assert_allclose(got, ref_out, rtol=tol, atol=tol)
    np.testing.assert_allclose(h_n.detach().numpy(), ref_h, rtol=tol, atol=tol)
    np.testing.assert_allclose(c_n.detach().numpy(), ref_c, rtol=tol, atol=tol)


@pytest.mark.parametrize("bidir", [False, True])
def test_packed_rows_ending_inside_chunks_match_numpy(threads, bidir):
    # Lengths end in the middle of 4-row chunks, so at late steps (early ones in reverse)
    # a task runs only some of its rows or none.
    lengths = [7, 7, 6, 6, 5, 4, 4, 3, 2, 1, 1]
    fg.manual_seed(5)
    m = nn.LSTM(3, 20, bidirectional=bidir, dtype=fg.float64)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, len(lengths), 3))
    dirs = 2 if bidir else 1
    h0 = rng.standard_normal((dirs, len(lengths), 20)) * 0.5
    c0 = rng.standard_normal((dirs, len(lengths), 20)) * 0.5
    packed = R.pack_padded_sequence(fg.tensor(x), lengths)
    pout, (h_n, c_n) = m(packed, (fg.tensor(h0), fg.tensor(c0)))
    padded, got_lengths = R.pad_packed_sequence(pout)
    assert got_lengths.tolist() == lengths
    ref_out, ref_h, ref_c = np_lstm(m, x, lengths, h0, c0)
    np.testing.assert_allclose(padded.detach().numpy(), ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h_n.detach().numpy(), ref_h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c_n.detach().numpy(), ref_c, rtol=1e-12, atol=1e-12)


def _grads(m, x, lengths, h0, c0, wts):
    m.zero_grad()
    xt, h, c = (fg.tensor(a, requires_grad=True) for a in (x, h0, c0))
    pout, (h_n, c_n) = m(R.pack_padded_sequence(xt, lengths), (h, c))
    ((pout.data * wts).sum() + (h_n * h_n).sum() + c_n.sum()).backward()
    return [t.grad.numpy().copy() for t in (xt, h, c)] + [
        p.grad.numpy().copy() for p in m.parameters()
    ]


def test_row_split_gradients_match_composite_and_thread_counts():
    # The fused layer's gradients (row split) against the composite recurrence, and
    # bitwise equal on one and two threads: a task owns whole rows, so the split does
    # not change any sum's order.
    from ferrograd.nn._functional import rnn as F_rnn

    lengths = [6, 6, 5, 5, 5, 3, 3, 2, 1]
    fg.manual_seed(8)
    m = nn.LSTM(3, 70, bidirectional=True, dtype=fg.float64)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((6, 9, 3))
    h0 = rng.standard_normal((2, 9, 70)) * 0.5
    c0 = rng.standard_normal((2, 9, 70)) * 0.5
    wts = fg.tensor(rng.standard_normal((sum(lengths), 140)))
    old = fg.get_num_threads()
    try:
        fg.set_num_threads(1)
        one = _grads(m, x, lengths, h0, c0, wts)
        fg.set_num_threads(2)
        two = _grads(m, x, lengths, h0, c0, wts)
    finally:
        fg.set_num_threads(old)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)

    # The same loss through the composite cell, step by step.
    m.zero_grad()
    xt, h, c = (fg.tensor(a, requires_grad=True) for a in (x, h0, c0))
    packed = R.pack_padded_sequence(xt, lengths)
    sizes = packed.batch_sizes.tolist()
    outs, loss = [], 0
    for d, sfx in enumerate(("_l0", "_l0_reverse")):
        w = {n: getattr(m, n + sfx) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        gi = nn.functional.linear(packed.data, w["weight_ih"], w["bias_ih"])
        step = F_rnn.make_step("LSTM", w["weight_hh"], w["bias_hh"])
        out, (hn, cn) = F_rnn.run_direction(step, gi, sizes, (h[d], c[d]), bool(d))
        outs.append(out)
        loss = loss + (hn * hn).sum() + cn.sum()
    loss = loss + (fg.cat(outs, 1) * wts).sum()
    loss.backward()
    composite = [t.grad.numpy() for t in (xt, h, c)] + [p.grad.numpy() for p in m.parameters()]
    for a, b in zip(one, composite):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("reverse", [False, True])
def test_row_split_gradcheck_and_gradgradcheck(reverse):
    # Batch 9: two full chunks and a single-row one; lengths make the last chunk idle
    # for most steps.
    lengths = [4, 4, 3, 3, 3, 2, 2, 1, 1]
    fg.manual_seed(2)
    m = nn.LSTM(2, 3, bidirectional=reverse, dtype=fg.float64)
    rng = np.random.default_rng(2)
    x = fg.tensor(rng.standard_normal((4, 9, 2)), requires_grad=True)
    dirs = 2 if reverse else 1
    h0 = fg.tensor(rng.standard_normal((dirs, 9, 3)) * 0.5, requires_grad=True)
    c0 = fg.tensor(rng.standard_normal((dirs, 9, 3)) * 0.5, requires_grad=True)
    w_hh = m.weight_hh_l0_reverse if reverse else m.weight_hh_l0

    def f(x, h0, c0, w_hh_arg):
        with_w = {("weight_hh_l0_reverse" if reverse else "weight_hh_l0"): w_hh_arg}
        pout, (h_n, c_n) = fg.func.functional_call(
            m, with_w, (R.pack_padded_sequence(x, lengths), (h0, c0))
        )
        return pout.data, h_n, c_n

    inputs = (x, h0, c0, w_hh.detach().clone().requires_grad_(True))
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)

"""The native GRU loops split the batch across the pool when it has at least two 4-row
chunks, like the LSTM's (see tests/test_lstm_paths.py); smaller batches with a large
hidden size keep the per-step product split by columns. Checked on batches of 9-11 rows
against a NumPy implementation of PyTorch's documented equations:

    r, z = sigmoid(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z})
    n = tanh(W_in x + b_in + r (W_hn h + b_hn));  h' = (1 - z) n + z h

and, for gradients, against finite differences and the composite recurrence.
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


def np_gru_direction(x, w_ih, w_hh, b_ih, b_hh, lengths, h0, reverse):
    """One GRU direction over padded [T, B, I] with per-sequence lengths, in float64."""
    steps, batch = x.shape[:2]
    hd = w_hh.shape[1]
    out = np.zeros((steps, batch, hd))
    h_n = np.zeros((batch, hd))
    for b, n in enumerate(lengths):
        h = h0[b].copy()
        for t in reversed(range(n)) if reverse else range(n):
            gi = w_ih @ x[t, b] + b_ih
            gh = w_hh @ h + b_hh
            r = _sig(gi[:hd] + gh[:hd])
            z = _sig(gi[hd : 2 * hd] + gh[hd : 2 * hd])
            nn_ = np.tanh(gi[2 * hd :] + r * gh[2 * hd :])
            h = (1 - z) * nn_ + z * h
            out[t, b] = h
        h_n[b] = h
    return out, h_n


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_packed_bidirectional_matches_numpy(threads, dtype):
    lengths = [6, 6, 5, 4, 4, 3, 2, 1, 1, 1]
    fg.manual_seed(6)
    m = nn.GRU(3, 37, bidirectional=True, dtype=dtype)
    rng = np.random.default_rng(6)
    npdt = np.float32 if dtype == fg.float32 else np.float64
    x = rng.standard_normal((6, 10, 3)).astype(npdt)
    h0 = (rng.standard_normal((2, 10, 37)) * 0.5).astype(npdt)
    old = fg.get_num_threads()
    fg.set_num_threads(threads)
    try:
        pout, h_n = m(R.pack_padded_sequence(fg.tensor(x), lengths), fg.tensor(h0))
    finally:
        fg.set_num_threads(old)
    padded, _ = R.pad_packed_sequence(pout)
    refs = [
        np_gru_direction(
            x.astype(np.float64),
            *(
                getattr(m, n + sfx).detach().numpy().astype(np.float64)
                for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            ),
            lengths,
            h0[d].astype(np.float64),
            bool(d),
        )
        for d, sfx in enumerate(("_l0", "_l0_reverse"))
    ]
    tol = 2e-5 if dtype == fg.float32 else 1e-12
    np.testing.assert_allclose(
        padded.detach().numpy(), np.concatenate([o for o, _ in refs], 2), rtol=tol, atol=tol
    )
    np.testing.assert_allclose(
        h_n.detach().numpy(), np.stack([h for _, h in refs]), rtol=tol, atol=tol
    )


def test_row_split_gradients_match_composite():
    from ferrograd.nn._functional import rnn as F_rnn

    lengths = [5, 5, 4, 4, 3, 3, 2, 1, 1]
    fg.manual_seed(9)
    m = nn.GRU(3, 70, dtype=fg.float64)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 9, 3))
    h0 = rng.standard_normal((1, 9, 70)) * 0.5
    wts = fg.tensor(rng.standard_normal((sum(lengths), 70)))

    def grads(run):
        m.zero_grad()
        xt, h = fg.tensor(x, requires_grad=True), fg.tensor(h0, requires_grad=True)
        out, h_n = run(R.pack_padded_sequence(xt, lengths), h)
        ((out * wts).sum() + (h_n * h_n).sum()).backward()
        return [xt.grad.numpy(), h.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]

    def fused(packed, h):
        pout, h_n = m(packed, h)
        return pout.data, h_n

    def composite(packed, h):
        gi = nn.functional.linear(packed.data, m.weight_ih_l0, m.bias_ih_l0)
        step = F_rnn.make_step("GRU", m.weight_hh_l0, m.bias_hh_l0)
        out, (h_n,) = F_rnn.run_direction(step, gi, packed.batch_sizes.tolist(), (h[0],), False)
        return out, h_n

    for a, b in zip(grads(fused), grads(composite)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_row_split_gradcheck_and_gradgradcheck():
    lengths = [3, 3, 3, 2, 2, 2, 1, 1, 1]
    fg.manual_seed(1)
    m = nn.GRU(2, 3, dtype=fg.float64)
    rng = np.random.default_rng(1)
    x = fg.tensor(rng.standard_normal((3, 9, 2)), requires_grad=True)
    h0 = fg.tensor(rng.standard_normal((1, 9, 3)) * 0.5, requires_grad=True)

    def f(x, h0, w_hh):
        pout, h_n = fg.func.functional_call(
            m, {"weight_hh_l0": w_hh}, (R.pack_padded_sequence(x, lengths), h0)
        )
        return pout.data, h_n

    inputs = (x, h0, m.weight_hh_l0.detach().clone().requires_grad_(True))
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)

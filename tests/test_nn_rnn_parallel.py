"""The native LSTM loop splits each step's hidden units across the pool (one part per
thread, whole register tiles per part, the leftover units in the last part). These
checks run it on two threads with layers wide enough to split, packed sequences of
unequal lengths in both directions, against the NumPy equations (forward) and the
composite recurrence (gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
from ferrograd import nn
from ferrograd.nn.utils import rnn as R


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_lstm_direction(x, w_ih, w_hh, b_ih, b_hh, lengths, reverse):
    """One direction over padded [T, B, I] with per-sequence lengths; zeros past a
    sequence's end, as pad_packed_sequence gives."""
    t_max, batch = x.shape[:2]
    hd = w_hh.shape[1]
    out = np.zeros((t_max, batch, hd))
    for b, n in enumerate(lengths):
        h, c = np.zeros(hd), np.zeros(hd)
        for t in reversed(range(n)) if reverse else range(n):
            z = w_ih @ x[t, b] + b_ih + w_hh @ h + b_hh
            i, f, g, o = np.split(z, 4)
            c = _sig(f) * c + _sig(i) * np.tanh(g)
            h = _sig(o) * np.tanh(c)
            out[t, b] = h
    return out


@pytest.fixture
def two_threads():
    old = fg.get_num_threads()
    fg.set_num_threads(2)
    try:
        yield
    finally:
        fg.set_num_threads(old)


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
@pytest.mark.parametrize("hidden", [136, 64])
def test_split_steps_match_equations_and_composite(two_threads, dtype, hidden):
    from ferrograd.nn._functional import rnn as F_rnn

    fg.manual_seed(3)
    m = nn.LSTM(6, hidden, bidirectional=True, dtype=dtype)
    rng = np.random.default_rng(3)
    npdt = np.float32 if dtype == fg.float32 else np.float64
    lengths = [6, 5, 5, 3, 2]  # batch 5: one row past the 4-row tiles
    x = rng.standard_normal((6, 5, 6)).astype(npdt)
    xt = fg.tensor(x, requires_grad=True)
    packed = R.pack_padded_sequence(xt, lengths)
    pout, _ = m(packed)
    padded, _ = R.pad_packed_sequence(pout)
    ref = [
        np_lstm_direction(
            x.astype(np.float64),
            *(
                getattr(m, n + sfx).detach().numpy().astype(np.float64)
                for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            ),
            lengths,
            reverse,
        )  # fmt: skip
        for sfx, reverse in (("_l0", False), ("_l0_reverse", True))
    ]
    tol = 3e-5 if dtype == fg.float32 else 1e-10
    np.testing.assert_allclose(padded.detach().numpy(), np.concatenate(ref, 2), rtol=tol, atol=tol)

    (pout.data * pout.data).sum().backward()
    fused = [xt.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad()
    xt.grad = None
    packed = R.pack_padded_sequence(xt, lengths)
    sizes = packed.batch_sizes.tolist()
    outs = []
    for sfx, reverse in (("_l0", False), ("_l0_reverse", True)):
        w = {n: getattr(m, n + sfx) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        gi = nn.functional.linear(packed.data, w["weight_ih"], w["bias_ih"])
        z = fg.zeros(5, hidden, dtype=dtype)
        step = F_rnn.make_step("LSTM", w["weight_hh"], w["bias_hh"])
        outs.append(F_rnn.run_direction(step, gi, sizes, (z, z), reverse)[0])
    cout = fg.cat(outs, 1)
    (cout * cout).sum().backward()
    composite = [xt.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
    for a, b in zip(fused, composite):
        np.testing.assert_allclose(a, b, rtol=10 * tol, atol=10 * tol)


def test_split_final_states_and_their_gradients(two_threads):
    # h_n and c_n (and gradients flowing in only through them) of a split layer, with
    # initial states, in float64 against finite differences.
    fg.manual_seed(4)
    m = nn.LSTM(3, 136, dtype=fg.float64)
    rng = np.random.default_rng(4)
    x = fg.tensor(rng.standard_normal((4, 5, 3)), requires_grad=True)
    h0 = fg.tensor(rng.standard_normal((1, 5, 136)) * 0.5, requires_grad=True)
    c0 = fg.tensor(rng.standard_normal((1, 5, 136)) * 0.5, requires_grad=True)
    wts = fg.tensor(rng.standard_normal((1, 5, 136)))

    def loss(x, h0, c0):
        _, (h, c) = m(x, (h0, c0))
        return (h * wts).sum() + (c * c).sum()

    loss(x, h0, c0).backward()
    for t in (x, h0, c0):
        a = t.detach().numpy()
        g = t.grad.numpy()
        for idx in [(0,) * a.ndim, tuple(s - 1 for s in a.shape), tuple(s // 2 for s in a.shape)]:
            e = np.zeros_like(a)
            e[idx] = 1e-6
            with fg.no_grad():
                hi = loss(
                    *(fg.tensor(u.detach().numpy() + (e if u is t else 0)) for u in (x, h0, c0))
                )
                lo = loss(
                    *(fg.tensor(u.detach().numpy() - (e if u is t else 0)) for u in (x, h0, c0))
                )
            fd = (hi.item() - lo.item()) / 2e-6
            assert abs(fd - g[idx]) < 1e-6 * max(1.0, abs(fd)), (idx, fd, g[idx])

"""The recurrent layers' arithmetic: one time step of each cell and the loop over a sequence.

Every function here is built from differentiable ops, so gradients of any order come from the
graph they record. The sequence loop works on the packed layout (time steps stacked along dim
0, step ``t`` holding ``batch_sizes[t]`` rows, sorted by decreasing length), so padded input
is the special case where every step has the whole batch. For the GRU and the composite
forms, the input projection of every time step is one matrix product before the loop; the
fused LSTM node takes the input itself and projects it step by step inside the native loop.
"""

from __future__ import annotations

from ... import _C
from ...autograd import Function
from ...autograd import grad as _autograd_grad
from .. import functional as F


def _fused_lstm_cell():
    return getattr(_C, "_lstm_cell", None)


def _fused_gru_cell():
    return getattr(_C, "_gru_cell", None)


def lstm_gates(gi, gh, c):
    """LSTM pointwise part: gate pre-activations ``gi + gh`` (order i, f, g, o) and the old cell
    state give ``(h, c)``; ``h`` is before any projection."""
    fused = _fused_lstm_cell()
    if fused is not None:
        return fused(gi, gh, c)
    i, f, g, o = (gi + gh).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_gates(gi, gh, h):
    """GRU pointwise part (gate order r, z, n): ``n = tanh(i_n + r * h_n)``,
    ``h' = (1 - z) * n + z * h``."""
    fused = _fused_gru_cell()
    if fused is not None:
        return fused(gi, gh, h)
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (h - n)


def _lstm_step(w_hh, b_hh, w_hr):
    def step(gi, h, c):
        h, c = lstm_gates(gi, F.linear(h, w_hh, b_hh), c)
        if w_hr is not None:
            h = F.linear(h, w_hr)
        return h, c

    return step


def _gru_step(w_hh, b_hh):
    def step(gi, h):
        return (gru_gates(gi, F.linear(h, w_hh, b_hh), h),)

    return step


def _rnn_step(w_hh, b_hh, relu):
    def step(gi, h):
        pre = gi + F.linear(h, w_hh, b_hh)
        return (pre.relu() if relu else pre.tanh(),)

    return step


def make_step(mode, w_hh, b_hh, w_hr=None):
    """The one-step function of ``mode`` ('LSTM', 'GRU', 'RNN_TANH', 'RNN_RELU') taking the
    precomputed input projection of that step and the state tensors, returning the new states
    (the first being the output)."""
    if mode == "LSTM":
        return _lstm_step(w_hh, b_hh, w_hr)
    if mode == "GRU":
        return _gru_step(w_hh, b_hh)
    return _rnn_step(w_hh, b_hh, mode == "RNN_RELU")


def run_direction(step, gi, batch_sizes, state, reverse):
    """Runs ``step`` over a packed sequence whose input projections are ``gi`` (rows of step
    ``t`` contiguous, ``batch_sizes`` a list of ints, non-increasing). ``state`` is a tuple of
    initial states with ``batch_sizes[0]`` rows. Returns the packed outputs and the final states
    (each row's state after its own last step)."""
    steps = len(batch_sizes)
    uniform = all(b == batch_sizes[0] for b in batch_sizes)
    gis = gi.split(batch_sizes[0], 0) if uniform else gi.split(list(batch_sizes), 0)
    outs = [None] * steps
    if not reverse:
        finished = []
        for t in range(steps):
            bs, rows = batch_sizes[t], state[0].shape[0]
            if bs < rows:
                # Sequences longer than bs rows ended at t-1: their state is final.
                finished.append(tuple(s.narrow(0, bs, rows - bs) for s in state))
                state = tuple(s.narrow(0, 0, bs) for s in state)
            state = step(gis[t], *state)
            outs[t] = state[0]
        if finished:
            state = tuple(
                _C.cat([state[k]] + [f[k] for f in reversed(finished)], 0)
                for k in range(len(state))
            )
    else:
        init, state, rows = state, None, 0
        for t in reversed(range(steps)):
            bs = batch_sizes[t]
            if state is None:
                state = init if bs == init[0].shape[0] else tuple(s.narrow(0, 0, bs) for s in init)
            elif bs > rows:
                # Shorter sequences start here, from their own initial state.
                state = tuple(
                    _C.cat([s, s0.narrow(0, rows, bs - rows)], 0) for s, s0 in zip(state, init)
                )
            rows = bs
            state = step(gis[t], *state)
            outs[t] = state[0]
    return _C.cat(outs, 0) if steps > 1 else outs[0], state


def _composite_backward(mode, inputs, needs, batch_sizes, reverse, grads):
    """Backward of a fused layer while a graph of the backward is being built: runs the
    composite recurrence on the saved inputs and differentiates it with graph, so higher
    derivatives are exact. LSTM ``inputs`` are ``(x, w_ih, b_ih, h0, c0, w_hh, b_hh)``, GRU
    ones ``(gi, h0, None, w_hh, b_hh)``."""
    # An input wanted without requiring grad (forward mode asks for the gradients of every
    # input with a tangent) is differentiated through a leaf standing in for it.
    inputs = tuple(
        t.detach().requires_grad_() if need and t is not None and not t.requires_grad else t
        for t, need in zip(inputs, needs)
    )
    if mode == "LSTM":
        x, w_ih, b_ih, h0, c0, w_hh, b_hh = inputs
        gi, state = F.linear(x, w_ih, b_ih), (h0, c0)
    else:
        gi, h0, _, w_hh, b_hh = inputs
        state = (h0,)
    out, finals = run_direction(make_step(mode, w_hh, b_hh), gi, batch_sizes, state, reverse)
    wrt = [t for t, need in zip(inputs, needs) if need]
    got = iter(
        _autograd_grad((out, *finals), wrt, grads, create_graph=True, allow_unused=True)
        if wrt
        else ()
    )
    return tuple(next(got) if need else None for need in needs)


def _weight_grads(d_gh, h_prev, need_w, need_b):
    # One product over every step instead of one per step.
    d_w = d_gh.t().mm(h_prev) if need_w else None
    d_b = d_gh.sum(0) if need_b else None
    return d_w, d_b


class _LSTMLayer(Function):
    """One LSTM layer direction over a packed sequence as a single node: the input
    projection, the loop and, in backward, the weight gradients of all steps run in the
    native kernel."""

    @staticmethod
    def forward(ctx, x, w_ih, b_ih, h0, c0, w_hh, b_hh, batch_sizes, reverse):
        out, h_n, c_n, *saved = _C._lstm_layer_forward(
            x, h0, c0, w_ih, w_hh, b_ih, b_hh, batch_sizes, reverse
        )
        ctx.save_for_backward(x, w_ih, b_ih, h0, c0, w_hh, b_hh, *saved)
        ctx.batch_sizes, ctx.reverse = batch_sizes, reverse
        return out, h_n, c_n

    @staticmethod
    def backward(ctx, g_out, g_hn, g_cn):
        x, w_ih, b_ih, h0, c0, w_hh, b_hh, *saved = ctx.saved_tensors
        needs = ctx.needs_input_grad[:7]
        if _C.is_grad_enabled():
            grads = _composite_backward(
                "LSTM", (x, w_ih, b_ih, h0, c0, w_hh, b_hh), needs, ctx.batch_sizes,
                ctx.reverse, (g_out, g_hn, g_cn),
            )  # fmt: skip
            return (*grads, None, None)
        need_x, need_ih, need_bih, _, _, need_hh, need_bhh = needs
        d_x, d_h0, d_c0, d_ih, d_hh, d_b = _C._lstm_layer_backward(
            x, g_out, g_hn, g_cn, saved, w_ih, w_hh, ctx.batch_sizes, ctx.reverse,
            (need_x, need_ih, need_hh, need_bih or need_bhh),
        )  # fmt: skip
        # Both biases get the same gradient; each its own tensor, as either may be
        # accumulated into in place later.
        d_bih = d_b if need_bih else None
        d_bhh = (d_b.clone() if need_bih else d_b) if need_bhh else None
        return d_x, d_ih, d_bih, d_h0, d_c0, d_hh, d_bhh, None, None


class _GRULayer(Function):
    """One GRU layer direction over a packed sequence as a single node (see _LSTMLayer)."""

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_hh, batch_sizes, reverse):
        out, h_n, gates, h_prev = _C._gru_layer_forward(gi, h0, w_hh, b_hh, batch_sizes, reverse)
        ctx.save_for_backward(gi, h0, w_hh, b_hh, gates, h_prev)
        ctx.batch_sizes, ctx.reverse = batch_sizes, reverse
        return out, h_n

    @staticmethod
    def backward(ctx, g_out, g_hn):
        gi, h0, w_hh, b_hh, gates, h_prev = ctx.saved_tensors
        needs = ctx.needs_input_grad[:4]
        if _C.is_grad_enabled():
            d_gi, d_h0, _, d_w, d_b = _composite_backward(
                "GRU", (gi, h0, None, w_hh, b_hh), (needs[0], needs[1], False, *needs[2:]),
                ctx.batch_sizes, ctx.reverse, (g_out, g_hn),
            )  # fmt: skip
            return d_gi, d_h0, d_w, d_b, None, None
        d_gi, d_gh, d_h0 = _C._gru_layer_backward(
            g_out, g_hn, gates, h_prev, w_hh, ctx.batch_sizes, ctx.reverse
        )
        d_w, d_b = _weight_grads(d_gh, h_prev, needs[2], needs[3])
        return d_gi, d_h0, d_w, d_b, None, None


def _fused_direction(mode, x, batch_sizes, state, weights, reverse):
    w_ih, w_hh, b_ih, b_hh, _ = weights
    if mode == "LSTM":
        out, h_n, c_n = _LSTMLayer.apply(
            x, w_ih, b_ih, state[0], state[1], w_hh, b_hh, batch_sizes, reverse
        )
        return out, (h_n, c_n)
    gi = F.linear(x, w_ih, b_ih)
    out, h_n = _GRULayer.apply(gi, state[0], w_hh, b_hh, batch_sizes, reverse)
    return out, (h_n,)


def rnn_packed(mode, data, batch_sizes, hx, weights, num_layers, bidirectional, dropout, training):
    """The whole stack of layers on packed ``data`` [N, input]. ``weights`` is a list per layer
    and direction of ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` (absent ones None). ``hx`` is a tuple of
    state tensors [layers * directions, batch, size]. Returns the packed output of the last
    layer and the tuple of final states, stacked like ``hx``."""
    dirs = 2 if bidirectional else 1
    finals = [[] for _ in hx]
    layer_in = data
    for layer in range(num_layers):
        outputs = []
        for d in range(dirs):
            idx = layer * dirs + d
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[idx]
            state = tuple(h[idx] for h in hx)
            if mode in ("LSTM", "GRU") and w_hr is None:
                out, state = _fused_direction(
                    mode, layer_in, batch_sizes, state, weights[idx], reverse=d == 1
                )
            else:
                gi = F.linear(layer_in, w_ih, b_ih)
                step = make_step(mode, w_hh, b_hh, w_hr)
                out, state = run_direction(step, gi, batch_sizes, state, reverse=d == 1)
            outputs.append(out)
            for k, s in enumerate(state):
                finals[k].append(s)
        layer_in = outputs[0] if dirs == 1 else _C.cat(outputs, 1)
        if dropout > 0 and training and layer < num_layers - 1:
            layer_in = F.dropout(layer_in, dropout, True)
    return layer_in, tuple(_C.stack(f, 0) if len(f) > 1 else f[0].unsqueeze(0) for f in finals)

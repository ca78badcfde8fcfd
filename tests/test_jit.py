"""``ferrograd.jit``: ``trace`` records a model's ops and replays them through
``ferrograd.compile``; ``save``/``load`` round-trip a traced module in a
safetensors file that holds no code; ``script`` and the decorators keep code
working eagerly."""

from __future__ import annotations

import json
import math
import struct
import warnings
import zipfile

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from helpers import run_isolated


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        x = x.view(x.size(0), -1)
        return self.fc(x)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return F.log_softmax(self.fc2(torch.tanh(self.fc1(x))), dim=-1)


def _same(a, b):
    return a.shape == b.shape and np.array_equal(a.detach().numpy(), b.detach().numpy())


# ----- trace ----------------------------------------------------------------------------------


def test_trace_cnn_matches_eager_bit_for_bit():
    torch.manual_seed(0)
    m = Net().eval()
    x = torch.randn(2, 1, 14, 14)
    t = torch.jit.trace(m, x)
    assert isinstance(t, torch.jit.ScriptModule) and isinstance(t, nn.Module)
    assert t.original_name == "Net"
    assert repr(t).startswith("Net(\n  original_name=Net")
    assert list(t.state_dict()) == list(m.state_dict())
    for _ in range(4):  # eager, capture, then replays
        assert _same(t(x), m(x))
    # The batch size read with x.size(0) stays symbolic: other batches work.
    for n in (1, 5):
        x2 = torch.randn(n, 1, 14, 14)
        assert _same(t(x2), m(x2))
    code = t.code
    assert "conv2d" in code and "batch_norm" in code and ".view(size(" in code


def test_traced_module_shares_parameters_and_trains():
    torch.manual_seed(0)
    m = MLP()
    x = torch.randn(8, 5)
    y = torch.randint(0, 3, (8,))
    t = torch.jit.trace(m, x)
    assert t.fc1.weight is m.fc1.weight
    opt = torch.optim.SGD(t.parameters(), lr=0.5)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = F.nll_loss(t(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    # The module trained too (same tensors), and agrees with the traced module.
    assert _same(t(x), m(x))


def test_trace_replays_through_compile():
    m = MLP()
    x = torch.randn(4, 5)
    t = torch.jit.trace(m, x)
    for _ in range(3):
        t(x)
    tapes = t._compiled.tapes
    assert tapes and tapes[0].ops == ["linear", "tanh", "linear", "log_softmax"]


def test_trace_function():
    def f(a, b):
        return torch.relu(a @ b) + a.sum()

    a, b = torch.randn(3, 4), torch.randn(4, 2)
    tf = torch.jit.trace(f, (a, b))
    assert isinstance(tf, torch.jit.ScriptFunction)
    for _ in range(3):
        assert _same(tf(a, b), f(a, b))
    a2, b2 = torch.randn(3, 4), torch.randn(4, 2)
    assert _same(tf(a2, b2), f(a2, b2))


def test_trace_records_factories_and_sizes():
    class Causal(nn.Module):
        def __init__(self):
            super().__init__()
            self.wpe = nn.Embedding(16, 4)

        def forward(self, idx):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long)
            mask = torch.tril(torch.ones(t, t))
            return (self.wpe(pos) + idx.float().unsqueeze(-1)).sum(-1) @ mask

    m = Causal()
    t = torch.jit.trace(m, torch.zeros(2, 8, dtype=torch.long))
    for T in (8, 5, 11):
        idx = torch.randint(0, 5, (3, T))
        assert _same(t(idx), m(idx))


def test_trace_training_mode_randomness_and_buffers():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 2))
    x = torch.randn(6, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch.jit.TracerWarning)
        t = torch.jit.trace(m, x)  # check_trace replays from the same random state
    before = m[1].running_mean.clone()
    nb = int(m[1].num_batches_tracked)
    torch.manual_seed(5)
    a = t(x)
    torch.manual_seed(5)
    b = m(x)
    assert _same(a, b)  # the same dropout mask from the same seed
    # Each call updates the running statistics in place, as eagerly.
    assert int(m[1].num_batches_tracked) == nb + 2
    assert not np.array_equal(m[1].running_mean.numpy(), before.numpy())
    torch.manual_seed(6)
    c = t(x)
    assert not _same(a, c)  # fresh dropout masks on every call


def test_tracer_warnings_for_values_read_in_python():
    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x * 3

    with pytest.warns(torch.jit.TracerWarning, match="Converting a tensor to a Python boolean"):
        t = torch.jit.trace(Branchy(), torch.ones(3))
    # The branch taken while tracing is fixed, as with PyTorch's tracer.
    np.testing.assert_array_equal(t(-torch.ones(3)).numpy(), [-2.0, -2.0, -2.0])

    class Item(nn.Module):
        def forward(self, x):
            return x / x.max().item()

    with pytest.warns(torch.jit.TracerWarning, match="Python number"):
        torch.jit.trace(Item(), torch.ones(3))

    class Len(nn.Module):
        def forward(self, x):
            return x * len(x)

    with pytest.warns(torch.jit.TracerWarning, match="Using len to get tensor shape"):
        t = torch.jit.trace(Len(), torch.ones(3))
    # x.shape[0] stays symbolic; len() is baked, as PyTorch warns.
    np.testing.assert_array_equal(t(torch.ones(2)).numpy(), [3.0, 3.0])


def test_trace_parametrized_module_reads_originals():
    m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
    x = torch.randn(4, 3)
    t = torch.jit.trace(m, x)
    assert _same(t(x), m(x))
    with torch.no_grad():
        m.parametrizations.weight.original0.mul_(2.0)
    # The weight is recomputed from g and v on every call, not baked in.
    assert _same(t(x), m(x))


def test_trace_lstm_and_nanogpt_style_attention():
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 6, batch_first=True)
    t = torch.jit.trace(lstm, torch.randn(2, 5, 4))
    # Another batch size; the sequence length of the trace is fixed for recurrent layers.
    x = torch.randn(3, 5, 4)
    (out, (h, c)), (eo, (eh, ec)) = t(x), lstm(x)
    assert _same(out, eo) and _same(h, eh) and _same(c, ec)

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(8, 24)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(8, dim=2)
            q = q.view(B, T, 2, C // 2).transpose(1, 2)
            k = k.view(B, T, 2, C // 2).transpose(1, 2)
            v = v.view(B, T, 2, C // 2).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return y.transpose(1, 2).contiguous().view(B, T, C)

    a = Attn()
    ta = torch.jit.trace(a, torch.randn(2, 6, 8))
    x = torch.randn(3, 4, 8)
    assert _same(ta(x), a(x))


def test_trace_errors():
    with pytest.raises(RuntimeError, match="example_inputs"):
        torch.jit.trace(MLP())
    m = MLP()
    t = torch.jit.trace(m, torch.randn(2, 5))
    with pytest.raises(RuntimeError, match="expected 1 tensor argument"):
        t(torch.randn(2, 5), torch.randn(2, 5))
    with pytest.raises(RuntimeError, match="only the top-level forward"):
        t.fc1(torch.randn(2, 5))
    assert torch.jit.trace_module(m, {"forward": torch.randn(2, 5)})(torch.ones(1, 5)).shape == (1, 3)
    with pytest.raises(RuntimeError, match="only the 'forward' method"):
        torch.jit.trace_module(m, {"predict": torch.randn(2, 5)})


# ----- script and the decorators --------------------------------------------------------------


def test_script_and_decorators_keep_code_working():
    @torch.jit.script
    def double(x):
        return x * 2

    np.testing.assert_array_equal(double(torch.ones(2)).numpy(), [2.0, 2.0])

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        @torch.jit.export
        def extra(self, x):
            return x + 1

        @torch.jit.ignore
        def debug(self, x):
            return x.tolist()

        @torch.jit.ignore(drop=True)
        def dropped(self):
            return 7

        @torch.jit.unused
        def unused(self, x):
            return x

        def forward(self, x):
            if torch.jit.is_scripting():
                raise AssertionError("never scripting")
            return self.fc(torch.jit.annotate(torch.Tensor, x))

    m = M()
    s = torch.jit.script(m)
    assert s is m and s.dropped() == 7 and s(torch.ones(1, 2)).shape == (1, 2)
    assert torch.jit.freeze(s.eval()) is s
    assert torch.jit.optimize_for_inference(s) is s
    fut = torch.jit.fork(double, torch.ones(1))
    assert float(torch.jit.wait(fut)) == 2.0
    assert torch.jit.isinstance([1, 2], list) and not torch.jit.is_tracing()
    with pytest.raises(RuntimeError, match="trace the model first"):
        torch.jit.save(s, "never-written.pt")


# ----- save and load --------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path):
    torch.manual_seed(0)
    m = Net().eval()
    x = torch.randn(3, 1, 14, 14)
    t = torch.jit.trace(m, x)
    path = tmp_path / "net.pt"
    torch.jit.save(t, path)
    loaded = torch.jit.load(path)
    assert isinstance(loaded, torch.jit.TracedModule) and loaded.original_name == "Net"
    assert list(loaded.state_dict()) == list(m.state_dict())
    assert loaded.training is False
    for _ in range(3):
        assert _same(loaded(x), m(x))
    x5 = torch.randn(5, 1, 14, 14)
    assert _same(loaded(x5), m(x5))
    loaded2 = torch.jit.load(str(path))
    assert _same(loaded2(x), m(x))
    # A loaded module saves again.
    torch.jit.save(loaded, tmp_path / "again.pt")
    assert _same(torch.jit.load(tmp_path / "again.pt")(x), m(x))


def test_load_in_a_fresh_process_without_the_class(tmp_path):
    torch.manual_seed(0)

    class Secret(nn.Module):  # not importable from the other process
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 6)
            self.ln = nn.LayerNorm(6)
            self.head = nn.Linear(6, 4)
            self.register_buffer("scale", torch.tensor(0.5), persistent=False)

        def forward(self, idx):
            h = self.ln(self.emb(idx)) * self.scale
            return F.gelu(self.head(h)).mean(1)

    m = Secret().eval()
    idx = torch.randint(0, 10, (2, 7))
    t = torch.jit.trace(m, idx)
    path = tmp_path / "secret.pt"
    torch.jit.save(t, path)
    np.save(tmp_path / "idx.npy", idx.numpy())
    expected = m(idx).detach().numpy()
    idx9 = torch.randint(0, 10, (3, 9))
    np.save(tmp_path / "idx9.npy", idx9.numpy())
    expected9 = m(idx9).detach().numpy()
    code = f"""
import sys
import numpy as np
import ferrograd
m = ferrograd.jit.load({str(path)!r})
out = m(ferrograd.from_numpy(np.load({str(tmp_path / 'idx.npy')!r})))
out9 = m(ferrograd.from_numpy(np.load({str(tmp_path / 'idx9.npy')!r})))
np.save({str(tmp_path / 'out.npy')!r}, out.detach().numpy())
np.save({str(tmp_path / 'out9.npy')!r}, out9.detach().numpy())
assert "Secret" not in sys.modules and m.original_name == "Secret"
"""
    r = run_isolated(code)
    assert r.returncode == 0, r.stderr
    # Bit for bit.
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), expected)
    np.testing.assert_array_equal(np.load(tmp_path / "out9.npy"), expected9)


def _write_st(path, tree_json, program):
    """A safetensors file as ferrograd.save writes it, with a given program."""
    meta = {"ferrograd.tree": tree_json % json.dumps(json.dumps(program)),
            "ferrograd.format": "1"}  # fmt: skip
    header = {"__metadata__": meta}
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def test_corrupt_and_foreign_files_are_refused(tmp_path):
    m = MLP()
    t = torch.jit.trace(m, torch.randn(2, 5))
    good = tmp_path / "good.pt"
    torch.jit.save(t, good)
    data = good.read_bytes()

    bad = tmp_path / "truncated.pt"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="is not a module saved by ferrograd.jit.save"):
        torch.jit.load(bad)

    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x00" * 64)
    with pytest.raises(RuntimeError, match="not a valid safetensors file"):
        torch.jit.load(garbage)

    ts = tmp_path / "torchscript.pt"
    with zipfile.ZipFile(ts, "w") as z:
        z.writestr("archive/code/__torch__.py", "def forward(self, x): return x")
    with pytest.raises(RuntimeError, match="PyTorch's TorchScript"):
        torch.jit.load(ts)

    ckpt = tmp_path / "ckpt.pt"
    torch.save(m.state_dict(), ckpt)
    with pytest.raises(RuntimeError, match="holds no ferrograd.jit program"):
        torch.jit.load(ckpt)


def _tampered(tmp_path, edit):
    """The saved MLP with its program JSON edited by ``edit``."""
    m = MLP()
    t = torch.jit.trace(m, torch.randn(2, 5))
    path = tmp_path / "m.pt"
    torch.jit.save(t, path)
    tree = torch.load(path)
    program = json.loads(tree["program"])
    edit(program)
    tree["program"] = json.dumps(program)
    torch.save(tree, path)
    return path


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda p: p["ops"][0].update(fn=["function", "ferrograd", "save"]), "may call"),
        (lambda p: p["ops"][0].update(fn=["function", "builtins", "eval"]), "may call"),
        (lambda p: p["ops"][0].update(fn=["method", "__reduce_ex__"]), "may call"),
        (lambda p: p["ops"][0].update(fn=["method", "register_hook"]), "may call"),
        (lambda p: p["ops"][0].update(fn=["autograd_function", "os", "system"]), "may call"),
        (lambda p: p["ops"][0].update(args=[{"v": 999}]), "slot reference"),
        (lambda p: p["ops"][0].update(args=[{"pickle": "gASV"}]), "unknown argument tag"),
        (lambda p: p.update(constants=3), "constant 0 is missing"),
        (lambda p: p.update(ops="rm -rf"), "'ops' must be a list"),
    ],
)
def test_tampered_programs_are_refused(tmp_path, edit, why):
    path = _tampered(tmp_path, edit)
    with pytest.raises(RuntimeError, match=why):
        torch.jit.load(path)


def test_loading_runs_no_code_from_the_file(tmp_path):
    marker = tmp_path / "ran"

    def edit(p):
        # An op that would run Python code if names were resolved freely.
        p["ops"][0]["fn"] = ["function", "ferrograd", "load"]
        p["ops"][0]["args"] = [str(marker)]

    path = _tampered(tmp_path, edit)
    with pytest.raises(RuntimeError):
        torch.jit.load(path)
    assert not marker.exists()


def test_unsavable_programs_are_refused_with_the_reason(tmp_path):
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class UsesFunction(nn.Module):
        def forward(self, x):
            return Twice.apply(x)

    t = torch.jit.trace(UsesFunction(), torch.ones(2))
    np.testing.assert_array_equal(t(torch.ones(2)).numpy(), [2.0, 2.0])
    with pytest.raises(RuntimeError, match="custom autograd.Function .*Twice cannot be saved"):
        torch.jit.save(t, tmp_path / "x.pt")


def test_saved_lstm_round_trip(tmp_path):
    torch.manual_seed(0)
    m = nn.GRU(3, 5, num_layers=2)
    t = torch.jit.trace(m, torch.randn(4, 3, 3))
    x = torch.randn(4, 2, 3)
    torch.jit.save(t, tmp_path / "gru.pt")
    out, h = torch.jit.load(tmp_path / "gru.pt")(x)
    eo, eh = m(x)
    assert _same(out, eo) and _same(h, eh)
    assert math.isfinite(float(out.sum()))

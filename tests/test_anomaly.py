"""Anomaly detection: the mode switches, the NaN check, the forward stack in
the warning (the user's own file and line), and the "modified by an inplace
operation" error naming the write that caused it."""

from __future__ import annotations

import inspect
import math
import threading
import warnings

import pytest

import ferrograd as torch
from ferrograd import autograd

ENABLED_MSG = (
    "Anomaly Detection has been enabled. This mode will increase the runtime "
    "and should only be enabled for debugging."
)
INPLACE_HEAD = (
    "one of the variables needed for gradient computation has been modified by an "
    "inplace operation: "
)


def _here():
    """The caller's line number."""
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture(autouse=True)
def _anomaly_off():
    yield
    torch.set_anomaly_enabled(False)


def _messages(record):
    return [str(w.message) for w in record]


def test_detect_anomaly_warns_and_restores_the_mode():
    assert not torch.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled") as rec:
        ctx = autograd.detect_anomaly(check_nan=False)
    assert _messages(rec) == [ENABLED_MSG]
    assert not torch.is_anomaly_enabled()
    with ctx:
        assert torch.is_anomaly_enabled()
        assert not torch.is_anomaly_check_nan_enabled()
    assert not torch.is_anomaly_enabled()
    assert torch.is_anomaly_check_nan_enabled()


def test_set_detect_anomaly_as_call_and_as_block():
    autograd.set_detect_anomaly(True)
    assert autograd.anomaly_mode.is_anomaly_enabled()
    with autograd.set_detect_anomaly(False):
        assert not torch.is_anomaly_enabled()
    assert torch.is_anomaly_enabled()
    autograd.set_detect_anomaly(False)
    assert not torch.is_anomaly_enabled()


def test_decorator_form():
    with pytest.warns(UserWarning, match="Anomaly Detection"):

        @autograd.detect_anomaly()
        def f():
            return torch.is_anomaly_enabled()

    assert not torch.is_anomaly_enabled()
    assert f() is True
    assert not torch.is_anomaly_enabled()


def test_the_mode_is_per_thread():
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly():
            t = threading.Thread(target=lambda: seen.append(torch.is_anomaly_enabled()))
            t.start()
            t.join()
            assert torch.is_anomaly_enabled()
    assert seen == [False]


def test_nan_gradient_raises_and_the_warning_shows_the_users_line():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with autograd.detect_anomaly():
            line = _here() + 1
            y = x.sqrt()
            loss = y.sum()
            with pytest.raises(RuntimeError) as err:
                loss.backward()
    assert str(err.value) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    msgs = [m for m in _messages(rec) if m.startswith("Error detected in")]
    assert len(msgs) == 1
    assert msgs[0].startswith(
        "Error detected in SqrtBackward0. Traceback of forward call that caused the error:\n"
    )
    assert f'File "{__file__}", line {line}, in test_nan_gradient' in msgs[0]
    assert "    y = x.sqrt()" in msgs[0]
    # Nothing reached .grad: the failing backward leaves it untouched.
    assert x.grad is None


def test_check_nan_false_lets_nan_through():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly(check_nan=False):
            x.sqrt().sum().backward()
    assert math.isnan(x.grad[0].item())
    assert x.grad[1].item() == pytest.approx(0.25)


def test_without_anomaly_mode_nan_is_not_checked_and_nothing_is_warned():
    x = torch.tensor([-1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.sqrt().sum().backward()
    assert math.isnan(x.grad.item())


def test_nodes_made_outside_the_mode_record_no_stack():
    # Backward runs in anomaly mode, but the forward ran before it was enabled:
    # the NaN is still caught, and the report has no frame of this file because
    # nothing was captured while the mode was off.
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    y = x.sqrt()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="'SqrtBackward0' returned nan values"):
                y.sum().backward()
    msgs = [m for m in _messages(rec) if m.startswith("Error detected in SqrtBackward0")]
    assert len(msgs) == 1
    assert "No forward pass information available. Enable detect anomaly during forward pass" in msgs[0]
    assert f'File "{__file__}"' not in msgs[0]


def test_nan_check_in_autograd_grad_names_the_output_index():
    a = torch.tensor([math.inf, 1.0], requires_grad=True)
    b = torch.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.set_detect_anomaly(True):
            prod = a * b
            out = prod.sum() * 0.0
            # d/db of a * b is a: 0 * inf gives NaN in output 1 only.
            with pytest.raises(RuntimeError) as err:
                autograd.grad(out, [a, b])
    assert str(err.value) == "Function 'MulBackward0' returned nan values in its 1th output."


def test_error_in_a_custom_function_backward_shows_its_forward_line():
    class Boom(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    w = torch.ones(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with autograd.set_detect_anomaly(True):
            line = _here() + 1
            out = Boom.apply(w)
            with pytest.raises(ValueError, match="boom in backward"):
                out.sum().backward()
    msgs = [m for m in _messages(rec) if m.startswith("Error detected in BoomBackward")]
    assert len(msgs) == 1
    assert f'File "{__file__}", line {line}, in test_error_in_a_custom' in msgs[0]
    assert "out = Boom.apply(w)" in msgs[0]


def test_a_node_made_by_a_backward_names_the_node_that_induced_it():
    x = torch.tensor([1.0, 4.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with autograd.set_detect_anomaly(True):
            fwd_line = _here() + 1
            y = x.sqrt().sum()
            bwd_line = _here() + 1
            (g,) = autograd.grad(y, x, create_graph=True)
            # g's node was recorded by SqrtBackward0's backward; a NaN fed into
            # it makes that node fail first.
            name = g.grad_fn.name()
            with pytest.raises(RuntimeError, match=f"^Function '{name}' returned nan"):
                autograd.grad(g, x, grad_outputs=torch.tensor([math.nan, 1.0]))
    msgs = _messages(rec)
    detected = [m for m in msgs if m.startswith(f"Error detected in {name}.")]
    assert len(detected) == 1
    assert f'File "{__file__}", line {bwd_line}' in detected[0]
    induced = [m for m in msgs if "Previous calculation was induced by SqrtBackward0" in m]
    assert len(induced) == 1
    assert f'File "{__file__}", line {fwd_line}' in induced[0]
    assert "y = x.sqrt().sum()" in induced[0]


def test_a_warnings_error_filter_does_not_replace_the_error():
    x = torch.tensor([-1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        autograd.set_detect_anomaly(True)
    y = x.sqrt().sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="returned nan values"):
            y.backward()


# ----- the in-place error -----------------------------------------------------------


def test_inplace_error_keeps_pytorchs_sentence_and_names_the_op():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = (a * 2).exp()
    c.mul_(2)
    with pytest.raises(RuntimeError) as err:
        c.sum().backward()
    msg = str(err.value)
    assert msg.startswith(
        INPLACE_HEAD + "[ferrograd.FloatTensor [3]], which is output 0 of ExpBackward0, "
        "is at version 1; expected version 0 instead."
    )
    assert "It was modified by mul_ (version 0 -> 1)." in msg
    assert "set_detect_anomaly(True)" in msg


@pytest.mark.parametrize(
    ("write", "name"),
    [
        (lambda t: t.add_(1), "add_"),
        (lambda t: t.__iadd__(1), "add_"),
        (lambda t: t.copy_(torch.zeros(3)), "copy_"),
        (lambda t: t.zero_(), "zero_"),
        (lambda t: t.fill_(2.0), "fill_"),
        (lambda t: t.clamp_(0, 1), "clamp_"),
        (lambda t: t.exp_(), "exp_"),
        (lambda t: t.__setitem__(0, 5.0), "__setitem__"),
        (lambda t: t.uniform_(), "uniform_"),
    ],
)
def test_each_inplace_op_is_named(write, name):
    w = torch.ones(3, requires_grad=True)
    x = torch.tensor([1.0, 2.0, 3.0])
    y = (w * x).sum()  # saves x for w's gradient
    write(x)
    with pytest.raises(RuntimeError) as err:
        y.backward()
    assert str(err.value).startswith(INPLACE_HEAD)
    assert f"It was modified by {name} (version 0 -> 1)." in str(err.value)


def test_an_inplace_op_written_in_python_is_named_after_its_node():
    a = torch.tensor([-1.0, 2.0], requires_grad=True)
    h = a * 2
    y = h.sin().sum()  # saves h
    torch.nn.functional.relu(h, inplace=True)
    with pytest.raises(RuntimeError) as err:
        y.backward()
    assert "It was modified by relu_ (version 0 -> 1)." in str(err.value)
    w = torch.ones(2, 2, requires_grad=True)
    x = torch.ones(2, 2)
    y = (w * x).sum()
    x.tril_()
    with pytest.raises(RuntimeError) as err:
        y.backward()
    assert "It was modified by tril_ (version 0 -> 1)." in str(err.value)


def test_several_writes_name_the_last_one():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    c = a.exp()
    with torch.no_grad():
        c.mul_(2)
        c.add_(1)
    with pytest.raises(RuntimeError) as err:
        c.sum().backward()
    assert "is at version 2; expected version 0 instead. It was last modified by add_ (version 1 -> 2)." in str(err.value)


def test_an_optimizer_step_is_named():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    opt.step()
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    assert "which is a leaf Variable, is at version 1; expected version 0 instead." in str(err.value)
    assert "It was modified by an optimizer step (version 0 -> 1)." in str(err.value)


def test_in_anomaly_mode_the_error_shows_where_each_write_ran():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with autograd.set_detect_anomaly(True):
            fwd_line = _here() + 1
            c = (a * 2).exp()
            line1 = _here() + 1
            c.mul_(3)
            line2 = _here() + 1
            c += 1
            with pytest.raises(RuntimeError) as err:
                c.sum().backward()
    msg = str(err.value)
    assert msg.startswith(
        INPLACE_HEAD + "[ferrograd.FloatTensor [3]], which is output 0 of ExpBackward0, "
        "is at version 2; expected version 0 instead."
    )
    assert "It was modified by mul_ (version 0 -> 1), at:" in msg
    assert f'File "{__file__}", line {line1}, in test_in_anomaly_mode' in msg
    assert "c.mul_(3)" in msg
    assert "Then by add_ (version 1 -> 2), at:" in msg
    assert f'File "{__file__}", line {line2}' in msg
    assert "Good luck" not in msg
    detected = [m for m in _messages(rec) if m.startswith("Error detected in ExpBackward0")]
    assert len(detected) == 1
    assert f'File "{__file__}", line {fwd_line}' in detected[0]


def test_writes_before_anomaly_mode_are_named_but_not_located():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    c = a.exp()
    c.mul_(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        autograd.set_detect_anomaly(True)
        with pytest.raises(RuntimeError) as err:
            c.sum().backward()
    msg = str(err.value)
    assert "It was modified by mul_ (version 0 -> 1)." in msg
    assert "before anomaly detection was enabled" in msg


def test_anomaly_mode_gives_the_same_gradients():
    x = torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64, requires_grad=True)

    def f():
        return (x.sin() * x.exp()).sum()

    (g0,) = autograd.grad(f(), x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly():
            (g1,) = autograd.grad(f(), x)
    assert torch.equal(g0, g1)


def test_metadata_holds_the_forward_traceback_in_anomaly_mode():
    # PyTorch puts traceback.format_stack()'s entries under metadata["traceback_"].
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with autograd.detect_anomaly():
        y = x.exp()  # the line the last entry names
    line = inspect.currentframe().f_lineno - 1
    tb = y.grad_fn.metadata["traceback_"]
    assert isinstance(tb, list) and all(isinstance(e, str) for e in tb)
    assert tb[-1].startswith(f'  File "{__file__}", line {line}, in ')
    assert "y = x.exp()" in tb[-1]
    # Outside the mode nothing is recorded, and the dict is the user's alone.
    assert "traceback_" not in x.exp().grad_fn.metadata

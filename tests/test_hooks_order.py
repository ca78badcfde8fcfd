"""Order in which autograd hooks run, against PyTorch's documented sequence
("Backward Hooks execution" in its autograd notes, written out in ARCHITECTURE.md):
tensor hooks, then the node's pre-hooks (if it runs), then retain_grad, then the
node, then its post-hooks; a leaf's post-accumulate hooks after its .grad is written."""

import numpy as np
import pytest

import ferrograd as torch
from ferrograd.autograd.graph import saved_tensors_hooks


def _leaf(vals=(1.0, 2.0, 3.0)):
    return torch.tensor(list(vals), requires_grad=True)


def test_documented_sequence_around_one_node():
    log = []
    a = _leaf()
    b = a * 2
    c = b.exp()
    fn = c.grad_fn
    c.register_hook(lambda g: log.append("tensor hook c"))
    fn.register_prehook(lambda go: log.append("node prehook exp"))
    c.retain_grad()
    fn.register_hook(lambda gi, go: log.append("node posthook exp"))
    b.grad_fn.register_prehook(lambda go: log.append("node prehook mul"))
    a.register_hook(lambda g: log.append("tensor hook a"))
    a.register_post_accumulate_grad_hook(lambda t: log.append("post accumulate a"))
    c.sum().backward()
    assert log == [
        "tensor hook c",
        "node prehook exp",
        "node posthook exp",
        "node prehook mul",
        "tensor hook a",
        "post accumulate a",
    ]


def test_saved_tensor_hooks_in_the_sequence():
    # Pack runs in forward, when the op saves; unpack when the node reads what it
    # saved, i.e. as the node executes (step 4): after its pre-hooks and the
    # retain_grad update (step 3), before its post-hooks.
    log = []
    a = _leaf()
    b = a * 2

    def pack(t):
        log.append("pack")
        return t

    def unpack(t):
        log.append(("unpack", None if c.grad is None else c.grad.tolist()))
        return t

    with saved_tensors_hooks(pack, unpack):
        c = b.exp()  # saves its result
    d = c * 3.0  # a Python number: nothing saved that needs hooks
    log.append("forward done")
    c.register_hook(lambda g: log.append("tensor hook c"))
    c.grad_fn.register_prehook(lambda go: log.append("node prehook exp"))
    c.retain_grad()
    c.grad_fn.register_hook(lambda gi, go: log.append("node posthook exp"))
    b.grad_fn.register_prehook(lambda go: log.append("node prehook mul"))
    a.register_post_accumulate_grad_hook(lambda t: log.append("post accumulate a"))
    d.sum().backward()
    assert log == [
        "pack",
        "forward done",
        "tensor hook c",
        "node prehook exp",
        ("unpack", [3.0, 3.0, 3.0]),
        "node posthook exp",
        "node prehook mul",
        "post accumulate a",
    ]


def test_retain_grad_sees_tensor_hooks_and_node_prehooks():
    # Step 3 (.grad of a retain_grad tensor) comes after steps 1 and 2, whatever the
    # registration order, and sees what they returned.
    a = _leaf()
    c = a.exp()
    c.retain_grad()
    c.register_hook(lambda g: g * 2)
    c.grad_fn.register_prehook(lambda go: (go[0] * 3,))
    c.backward(torch.ones(3))
    np.testing.assert_allclose(c.grad.numpy(), np.full(3, 6.0))
    np.testing.assert_allclose(a.grad.numpy(), 6 * np.exp([1.0, 2.0, 3.0]), rtol=1e-6)


def test_hooks_of_one_kind_run_in_registration_order_and_chain():
    log = []
    a = _leaf()
    c = a * a
    c.grad_fn.register_prehook(lambda go: (log.append(("p1", go[0].tolist())), (go[0] + 1,))[1])
    c.grad_fn.register_prehook(lambda go: (log.append(("p2", go[0].tolist())), None)[1])
    c.grad_fn.register_hook(lambda gi, go: (log.append("h1"), (gi[0] * 0, gi[1]))[1])
    c.grad_fn.register_hook(lambda gi, go: log.append(("h2", gi[0].tolist(), go[0].tolist())))
    c.backward(torch.ones(3))
    assert log == [
        ("p1", [1.0, 1.0, 1.0]),
        ("p2", [2.0, 2.0, 2.0]),
        "h1",
        ("h2", [0.0, 0.0, 0.0], [2.0, 2.0, 2.0]),
    ]
    # a*a: gradient 2 * a from the second input only (the first was zeroed by h1).
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0, 6.0])


def test_post_accumulate_hook_sees_grad_written_and_runs_before_backward_ends():
    # The leaf's .grad is written as soon as its last contribution arrives, so the hook
    # of an early leaf runs while later nodes have not run yet.
    log = []
    w1 = _leaf()
    w2 = _leaf((4.0, 5.0, 6.0))
    h = (w1 * 2).sum()
    out = (h * w2).sum()
    w2.register_post_accumulate_grad_hook(lambda t: log.append(("w2", t.grad.tolist())))
    w1.register_post_accumulate_grad_hook(lambda t: log.append(("w1", t.grad.tolist())))
    h.grad_fn.register_prehook(lambda go: log.append("sum node of w1 branch"))
    out.backward()
    assert log[0][0] == "w2" and log[1] == "sum node of w1 branch" and log[2][0] == "w1"
    np.testing.assert_allclose(log[0][1], [12.0, 12.0, 12.0])
    np.testing.assert_allclose(log[2][1], [30.0, 30.0, 30.0])


def test_post_accumulate_hook_after_all_contributions_and_accumulation():
    seen = []
    a = _leaf()
    a.grad = torch.ones(3)
    a.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (a * 2 + a * 3).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], np.full(3, 6.0))


def test_post_accumulate_hook_can_update_the_parameter_in_place():
    # PyTorch's documented use: an optimizer step fused into backward.
    v = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    lr = 0.01

    def step(p):
        with torch.no_grad():
            p.add_(p.grad, alpha=-lr)

    v.register_post_accumulate_grad_hook(step)
    v.backward(torch.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(v.detach().numpy(), [-0.01, -0.02, -0.03], rtol=1e-6)


def test_post_accumulate_hooks_do_not_run_for_autograd_grad():
    calls = []
    a = _leaf()
    a.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    (g,) = torch.autograd.grad((a * a).sum(), a)
    assert calls == [] and a.grad is None
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0, 6.0])


def test_backward_inputs_runs_the_post_accumulate_hook_of_that_input():
    calls = []
    a, b = _leaf(), _leaf()
    a.register_post_accumulate_grad_hook(lambda t: calls.append("a"))
    b.register_post_accumulate_grad_hook(lambda t: calls.append("b"))
    (a * b).sum().backward(inputs=[a])
    assert calls == ["a"] and b.grad is None


def test_node_hooks_fire_only_when_the_node_runs():
    # autograd.grad with a non-leaf input: the input's own node does not run.
    calls = []
    a = _leaf()
    b = a.exp()
    c = (b * 2).sum()
    b.grad_fn.register_prehook(lambda go: calls.append("pre"))
    b.grad_fn.register_hook(lambda gi, go: calls.append("post"))
    b.register_hook(lambda g: calls.append("tensor"))
    torch.autograd.grad(c, b)
    assert calls == ["tensor"]


def test_post_accumulate_hook_refuses_a_non_leaf_and_a_return_value():
    a = _leaf()
    with pytest.raises(RuntimeError, match="non-leaf"):
        (a * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        torch.ones(2).register_post_accumulate_grad_hook(lambda t: None)
    a.register_post_accumulate_grad_hook(lambda t: t.grad)
    with pytest.raises(RuntimeError, match="should return None"):
        a.sum().backward()

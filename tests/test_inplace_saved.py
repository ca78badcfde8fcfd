"""In-place ops whose backward needs a value the write destroys, views taken
before their base is written, and views taken under ``no_grad()``.

Expected numbers were computed with PyTorch on the same inputs."""

import re

import numpy as np
import pytest

import ferrograd as fg
from ferrograd.autograd import gradcheck, gradgradcheck

F = fg.nn.functional


def d(*v, rg=True):
    return fg.tensor(list(v), dtype=fg.float64, requires_grad=rg)


def close(t, expected):
    np.testing.assert_allclose(np.asarray(t.tolist(), dtype=np.float64), expected, rtol=1e-12, atol=1e-12)


def rnd(seed, *shape):
    a = np.random.default_rng(seed).uniform(0.5, 2.0, shape)
    return fg.tensor(a, dtype=fg.float64, requires_grad=True)


# ----- the value of self from before the write ------------------------------------------


def test_mul_by_a_tensor_that_requires_grad():
    x, y = d(1.0, 2.0, 3.0), d(4.0, 5.0, 6.0)
    b = x * 1
    b.mul_(y)
    assert b.grad_fn.name() == "MulBackward0"
    (b * b).sum().backward()
    close(x.grad, [32, 100, 216])
    close(y.grad, [8, 40, 108])


def test_div_and_pow_by_tensors_that_require_grad():
    x, y = d(1.0, 2.0, 3.0), d(4.0, 5.0, 6.0)
    b = x * 1
    b.div_(y)
    b.sum().backward()
    close(x.grad, [0.25, 0.2, 1 / 6])
    close(y.grad, [-0.0625, -0.08, -1 / 12])

    x, y = d(1.0, 2.0, 3.0), d(1.5, 2.0, 0.5)
    b = x * 1
    b.pow_(y)
    assert b.grad_fn.name() == "PowBackward1"
    b.sum().backward()
    close(x.grad, [1.5, 4.0, 0.28867513459481287])
    close(y.grad, [0.0, 2.772588722239781, 1.902852301792692])


def test_pow_by_a_number_and_imul():
    x = d(1.0, 2.0, 3.0)
    b = x * 1
    b.pow_(3)
    assert b.grad_fn.name() == "PowBackward0"
    b.sum().backward()
    close(x.grad, [3, 12, 27])

    x, y = d(1.0, 2.0, 3.0), d(4.0, 5.0, 6.0)
    b = x * 1
    b *= y
    b.sum().backward()
    close(x.grad, [4, 5, 6])
    close(y.grad, [1, 2, 3])


def test_mul_by_a_non_leaf():
    x, y = d(1.0, 2.0, 3.0), d(4.0, 5.0, 6.0)
    b = x * 1
    b.mul_(y * 2)
    b.sum().backward()
    close(x.grad, [8, 10, 12])
    close(y.grad, [2, 4, 6])


def test_nothing_is_copied_when_no_other_gradient_needs_self():
    # With a number, or an operand outside the graph, mul_ saves nothing of
    # self: the node list stays as short as out of place.
    x = d(1.0, 2.0, 3.0)
    b = x * 1
    before = fg._C._live_nodes()
    b.mul_(2)
    b.mul_(fg.tensor([1.0, 2.0, 3.0], dtype=fg.float64))
    assert fg._C._live_nodes() - before == 2
    y = d(4.0, 5.0, 6.0)
    before = fg._C._live_nodes()
    b.mul_(y)
    # MulBackward0 plus the recorded copy of self (CloneBackward0).
    assert fg._C._live_nodes() - before == 2


def test_a_chain_of_inplace_ops_on_one_non_leaf():
    x, y = d(1.0, 2.0, 3.0), d(4.0, 5.0, 6.0)
    b = x * 1
    b.mul_(y)
    b.add_(y)
    b.mul_(y)
    b.div_(y + 1)
    b.pow_(2)
    b.sum().backward()
    close(x.grad, [40.96, 104.16666666666669, 211.5918367346939])
    close(y.grad, [24.576, 72.91666666666669, 161.2128279883382])


def test_inplace_on_a_view_of_a_non_leaf_first_and_second_order():
    x, y = d(1.0, 2.0, 3.0), d(4.0)
    b = x * 1
    b[0].mul_(y[0])
    assert b.grad_fn.name() == "CopySlices"
    (b * b).sum().backward()
    close(x.grad, [32, 4, 6])
    close(y.grad, [8])

    x, y = d(1.0, 2.0, 3.0), d(4.0)
    b = x * 1
    b[0].mul_(y[0])
    gx, gy = fg.autograd.grad((b * b * b).sum(), (x, y), create_graph=True)
    close(gx, [192, 12, 27])
    close(gy, [48])
    hx, hy = fg.autograd.grad((gx * gx).sum() + (gy * gy).sum(), (x, y))
    close(hx, [161280, 288, 972])
    close(hy, [57600])


def test_second_order_through_mul_():
    x, y = d(1.0, 2.0, 3.0), d(4.0, 5.0, 6.0)
    b = x * x
    b.mul_(y)
    gx, gy = fg.autograd.grad((b * b).sum(), (x, y), create_graph=True)
    close(gx, [64, 800, 3888])
    close(gy, [8, 160, 972])
    hx, hy = fg.autograd.grad((gx * gy).sum(), (x, y))
    close(hx, [3584, 448000, 8817984])
    close(hy, [384, 76800, 1889568])


def test_unary_inplace_ops():
    for name, expected in [
        ("exp_", [2.718281828459045, 7.38905609893065, 20.085536923187668]),
        ("sigmoid_", [0.19661193324148185, 0.10499358540350662, 0.045176659730912]),
        ("tanh_", [0.41997434161402614, 0.07065082485316443, 0.009866037165440166]),
        ("neg_", [-1.0, -1.0, -1.0]),
        ("relu_", [1.0, 1.0, 1.0]),
    ]:
        x = d(1.0, 2.0, 3.0)
        b = x * 1
        getattr(b, name)()
        b.sum().backward()
        np.testing.assert_allclose(x.grad.tolist(), expected, rtol=1e-12, err_msg=name)


def test_an_output_saved_by_an_inplace_op_is_self():
    # exp_ saves its result, which is self: writing self again is refused, as in PyTorch.
    x = d(1.0, 2.0, 3.0)
    b = x * 1
    b.exp_()
    b.mul_(2)
    msg = "which is output 0 of ExpBackward0, is at version 2; expected version 1 instead."
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        b.sum().backward()


def test_a_tensor_saved_by_an_earlier_op_still_refuses():
    x, y = d(1.0, 2.0, 3.0), d(4.0, 5.0, 6.0)
    b = x * 1
    z = b * b
    b.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    b = x * 1
    b.add_(y * b, alpha=2)  # y * b saved b before add_ was called
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_clamp_and_masked_fill_in_place():
    x = d(-1.0, 0.5, 3.0)
    b = x * 1
    b.clamp_(0, 1)
    assert b.grad_fn.name() == "ClampBackward1"
    b.sum().backward()
    close(x.grad, [0, 1, 0])

    x = d(-1.0, 2.0, 3.0)
    b = x * 1
    b.masked_fill_(x > 0, 0.0)
    b.mul_(x)
    b.sum().backward()
    close(x.grad, [-2, 0, 0])


def test_copy_sends_zeros_to_the_overwritten_history():
    x, y = d(1.0, 2.0, 3.0), d(4.0, 5.0, 6.0)
    b = x * 1
    b.copy_(y * y)
    assert b.grad_fn.name() == "CopyBackwards"
    b.sum().backward()
    close(x.grad, [0, 0, 0])
    close(y.grad, [8, 10, 12])


def test_functional_activations_in_place():
    expected = {
        "relu": [0.0, 1.0, 4.0],
        "relu6": [0.0, 1.0, 4.0],
        "leaky_relu": [-0.030000000000000006, 1.0, 4.0],
        "elu": [-0.34668618356113173, 1.0, 4.0],
        "silu": [0.02259932318448496, 0.4605957457637389, 3.843038316136142],
        "hardtanh": [0.0, 1.0, 0.0],
    }
    calls = {
        "relu": lambda b: F.relu(b, inplace=True),
        "relu6": lambda b: F.relu6(b, inplace=True),
        "leaky_relu": lambda b: F.leaky_relu(b, 0.1, inplace=True),
        "elu": lambda b: F.elu(b, inplace=True),
        "silu": lambda b: F.silu(b, inplace=True),
        "hardtanh": lambda b: F.hardtanh(b, inplace=True),
    }
    for name, call in calls.items():
        x = d(-1.5, 0.5, 2.0)
        b = x * 1
        assert call(b) is b
        (b * b).sum().backward()
        np.testing.assert_allclose(x.grad.tolist(), expected[name], rtol=1e-12, err_msg=name)


def test_gradcheck_inplace_with_operands_that_require_grad():
    def f(a, y, z):
        b = a * 1
        b.mul_(y)
        b.div_(z)
        b[1:].mul_(y[:2] * z[1:])
        F.silu(b, inplace=True)
        b.pow_(z)
        return b

    args = (rnd(0, 3), rnd(1, 3), rnd(2, 3))
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


# ----- views taken before their base is written -----------------------------------------


def _base_then_view(make_view, write):
    x = fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=fg.float64, requires_grad=True)
    y = fg.tensor([[2.0, 3.0, 4.0]], dtype=fg.float64, requires_grad=True)
    a = x * 1
    e = make_view(a)
    write(a, y)
    w = fg.arange(e.numel(), dtype=fg.float64).reshape(tuple(e.shape)) + 1
    (e * e * w).sum().backward()
    assert e.grad_fn.name() == "AsStridedBackward0"
    return x.grad.tolist(), None if y.grad is None else y.grad.tolist()


VIEWS = {
    "expand": lambda a: a.expand(3, 2, 3),
    "expand_column": lambda a: a[:, 0:1].expand(2, 4),
    "unsqueeze_expand": lambda a: a.unsqueeze(1).expand(2, 2, 3),
    "t_expand": lambda a: a.t().expand(2, 3, 2),
    "transpose": lambda a: a.transpose(0, 1),
    "permute": lambda a: a.permute(1, 0),
    "t": lambda a: a.t(),
    "unsqueeze": lambda a: a.unsqueeze(0),
    "step": lambda a: a[:, ::2],
    "flat_step": lambda a: a.view(6)[1::2],
}

# (x.grad, y.grad) from PyTorch for a.mul_(y) and a[0].mul_(y[0]).
EXPECTED = {
    "expand": (
        ([[168, 864, 2592], [960, 2970, 6912]], [[2004, 5526, 12312]]),
        ([[168, 864, 2592], [240, 330, 432]], [[84, 576, 1944]]),
    ),
    "expand_column": (
        ([[80, 0, 0], [832, 0, 0]], [[1704, 0, 0]]),
        ([[80, 0, 0], [208, 0, 0]], [[40, 0, 0]]),
    ),
    "unsqueeze_expand": (
        ([[40, 252, 864], [544, 1710, 4032]], [[1108, 3018, 6696]]),
        ([[40, 252, 864], [136, 190, 252]], [[20, 168, 648]]),
    ),
    "t_expand": (
        ([[64, 432, 1536], [320, 1260, 3456]], [[672, 2388, 6336]]),
        ([[64, 432, 1536], [80, 140, 216]], [[32, 288, 1152]]),
    ),
    "transpose": (
        ([[8, 108, 480], [64, 360, 1152]], [[132, 672, 2088]]),
        ([[8, 108, 480], [16, 40, 72]], [[4, 72, 360]]),
    ),
    "permute": (
        ([[8, 108, 480], [64, 360, 1152]], [[132, 672, 2088]]),
        ([[8, 108, 480], [16, 40, 72]], [[4, 72, 360]]),
    ),
    "t": (
        ([[8, 108, 480], [64, 360, 1152]], [[132, 672, 2088]]),
        ([[8, 108, 480], [16, 40, 72]], [[4, 72, 360]]),
    ),
    "unsqueeze": (
        ([[8, 72, 288], [128, 450, 1152]], [[260, 798, 1944]]),
        ([[8, 72, 288], [32, 50, 72]], [[4, 48, 216]]),
    ),
    "step": (
        ([[8, 0, 192], [96, 0, 768]], [[196, 0, 1296]]),
        ([[8, 0, 192], [24, 0, 48]], [[4, 0, 144]]),
    ),
    "flat_step": (
        ([[0, 36, 0], [64, 0, 576]], [[128, 24, 864]]),
        ([[0, 36, 0], [16, 0, 36]], [[0, 24, 0]]),
    ),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_taken_before_its_base_was_written(name):
    whole, row = EXPECTED[name]
    got = _base_then_view(VIEWS[name], lambda a, y: a.mul_(y))
    assert got == whole
    got = _base_then_view(VIEWS[name], lambda a, y: a[0].mul_(y[0]))
    assert got == row


def test_expanded_view_of_a_written_base_second_order():
    x = d(1.0, 2.0, 3.0)
    a = x * x
    e = a.expand(2, 3)
    a.mul_(3)
    (g,) = fg.autograd.grad((e * e).sum(), x, create_graph=True)
    close(g, [72, 576, 1944])
    (h,) = fg.autograd.grad((g * g).sum(), x)
    close(h, [31104, 995328, 7558272])


def test_gradcheck_expanded_view_after_base_write():
    def f(x, y):
        a = x * 1
        e = a.unsqueeze(0).expand(3, 2, 3)
        et = a.t().expand(2, 3, 2)
        a.mul_(y)
        return (e * e).sum(0) + (et * et).sum(0).t()

    args = (rnd(3, 2, 3), rnd(4, 3))
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


def test_writing_through_an_expanded_view_is_still_refused():
    x = d(1.0)
    e = (x * 1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.mul_(fg.tensor([1.0, 2.0, 3.0], dtype=fg.float64))


# ----- views taken under no_grad() ------------------------------------------------------

ADVICE = (
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
    "moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace "
    "to be tracked) or both outside (if you want the inplace to be tracked)."
)
DIRECT = "A view was created in no_grad mode and is being modified inplace with grad mode enabled. " + ADVICE
INDIRECT = (
    "A view was created in no_grad mode and its base or another view of its base has been modified inplace "
    "with grad mode enabled. " + ADVICE
)


def of_view(op):
    return (
        f"Output 0 of {op} is a view of a view which was created in no_grad mode and is being modified inplace "
        "with grad mode enabled. " + ADVICE
    )


def test_inplace_on_a_no_grad_view_in_grad_mode_is_refused():
    x, y = d(1.0, 2.0, 3.0), d(5.0)
    cases = [
        (lambda: x, lambda v: v.mul_(y)),
        (lambda: x, lambda v: v.mul_(2)),
        (lambda: x, lambda v: v.fill_(0)),
        (lambda: x * 1, lambda v: v.mul_(2)),
        (lambda: x * 1, lambda v: v.mul_(y)),
        (lambda: x * 1, lambda v: v.copy_(y.expand(2))),
        (lambda: x * 1, lambda v: v.__iadd__(y)),
        # The base needs no grad, but the written value does.
        (lambda: fg.zeros(3, dtype=fg.float64), lambda v: v.mul_(y)),
    ]
    for make_base, write in cases:
        base = make_base()
        with fg.no_grad():
            v = base[0:2]
        with pytest.raises(RuntimeError, match=re.escape(DIRECT)):
            write(v)


def test_views_of_a_no_grad_view_name_their_op():
    x, y = d(1.0, 2.0, 3.0), d(5.0)
    b = x * 1
    with fg.no_grad():
        v = b[0:2]
    with pytest.raises(RuntimeError, match=re.escape(of_view("Slice"))):
        v[0:1].mul_(y)
    with pytest.raises(RuntimeError, match=re.escape(of_view("Select"))):
        v[0] = y[0]
    with pytest.raises(RuntimeError, match=re.escape(of_view("Unsqueeze"))):
        v.unsqueeze(0).mul_(y)
    with pytest.raises(RuntimeError, match=re.escape(of_view("Squeeze1"))):
        v.unsqueeze(0).squeeze(0).mul_(y)
    with fg.no_grad():
        w = v.t()
    with pytest.raises(RuntimeError, match=re.escape(DIRECT)):
        w.mul_(y)


def test_no_grad_views_are_fine_without_grad_mode_or_outside_the_graph():
    x, y = d(1.0, 2.0, 3.0), d(5.0)
    b = x * 1
    with fg.no_grad():
        v = b[0:2]
        v.mul_(y)
    assert b.tolist() == [5.0, 10.0, 3.0]
    # The base needs no grad and neither does the value.
    a = fg.zeros(3)
    with fg.no_grad():
        v = a[0:2]
    v.add_(1)
    assert a.tolist() == [1.0, 1.0, 0.0]
    # .detach() and .data are not views for autograd.
    v = x.detach()[0:2]
    v.mul_(y)
    assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"
    v = x.data[0:2]
    v.mul_(y)
    assert v.requires_grad


def test_a_no_grad_view_requires_grad_but_is_outside_the_graph():
    # PyTorch: the view requires grad through its base, is a leaf with no
    # grad_fn, and its gradient goes nowhere (no edge, no .grad of its own).
    for make_base in (lambda x: x, lambda x: x * 1):
        x = d(1.0, 2.0, 3.0)
        base = make_base(x)
        with fg.no_grad():
            v = base[0:2]
            w = v * 2
        assert v.requires_grad and v.is_leaf and v.grad_fn is None and not v.retains_grad
        assert not w.requires_grad
        y = v * 3
        assert y.requires_grad and y.grad_fn.name() == "MulBackward0"
        assert y.grad_fn.next_functions == ((None, 0), (None, 0))
        y.sum().backward()
        assert x.grad is None and v.grad is None
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            fg.autograd.grad((v * 2).sum(), v)
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            fg.autograd.grad((v * 2).sum(), x)
        assert fg.autograd.grad((v * 2).sum(), x, allow_unused=True) == (None,)
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
            v.backward(fg.ones(2, dtype=fg.float64))
        # A view of it taken in grad mode is recorded, with no edge either.
        u = v[0:1]
        assert u.requires_grad and not u.is_leaf and u.grad_fn.name() == "SliceBackward0"
        assert u.grad_fn.next_functions == ((None, 0),)
        # Its own requires_grad flag only decides whether it accumulates a .grad.
        v.requires_grad_(False)
        assert v.requires_grad
        v.requires_grad_(True)
        (v * 2).sum().backward()
        close(v.grad, [2.0, 2.0])
        assert x.grad is None
    # Without grad mode it converts to NumPy, as any tensor that requires grad does.
    with fg.no_grad():
        assert x[0:2].numpy().tolist() == [1.0, 2.0]
        assert np.asarray(x).tolist() == [1.0, 2.0, 3.0]


def test_no_grad_view_used_after_its_memory_was_written_refuses_at_use():
    # PyTorch raises when the view is next used in the graph, whether the write
    # went through the base, another view or the view itself, with or without
    # grad mode; the view keeps requiring grad, and uses without grad mode or
    # outside the graph still work.
    writes = [
        lambda b, v: b.mul_(2),
        lambda b, v: b[2:].mul_(2),
        lambda b, v: v.mul_(2),
    ]
    for write in writes:
        for grad_mode in (True, False):
            x = d(1.0, 2.0, 3.0)
            b = x * 1
            with fg.no_grad():
                v = b[0:2]
            if grad_mode and write is writes[2]:
                continue  # refused outright (DIRECT)
            with fg.set_grad_enabled(grad_mode):
                write(b, v)
            uses = (lambda t: t * 2, lambda t: t.sum(), lambda t: t.clone(), lambda t: t.grad_fn, lambda t: t.is_leaf)
            for use in uses:
                with pytest.raises(RuntimeError, match=re.escape(INDIRECT)):
                    use(v)
            assert v.requires_grad and v.grad is None
            assert "grad_fn=<Invalid>" in repr(v)
            with fg.no_grad():
                assert not (v * 2).requires_grad
            assert not v.detach().requires_grad
            # The base itself is unaffected.
            assert fg.autograd.grad(b.sum(), x)[0].shape == (3,)


def test_view_of_a_no_grad_view_used_after_a_write_names_its_op():
    x = d(1.0, 2.0, 3.0)
    b = x * 1
    with fg.no_grad():
        v = b[0:2]
    u = v[0:1]
    b.mul_(2)
    msg = INDIRECT.replace("A view was created", "Output 0 of Slice is a view of a view which was created")
    for use in (lambda: u.grad_fn, lambda: u * 2):
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            use()
    with pytest.raises(RuntimeError, match=re.escape(INDIRECT)):
        v * 2


def test_custom_function_refuses_a_no_grad_view_used_after_a_write():
    class Double(fg.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = d(1.0, 2.0, 3.0)
    with fg.no_grad():
        v = x[0:2]
    assert Double.apply(v).grad_fn.next_functions == ((None, 0),)
    with fg.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape(INDIRECT)):
        Double.apply(v)


def test_a_refused_use_does_not_leak_into_the_next_call():
    x = d(1.0, 2.0, 3.0)
    with fg.no_grad():
        v = x[0:2]
        x.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape(INDIRECT)):
        v + x[0:2].detach()
    assert (x * 2).grad_fn.name() == "MulBackward0"

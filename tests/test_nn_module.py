"""``nn.Module``: registration and its errors, traversal, modes, conversion,
repr, state dicts, hooks and ``__call__``; the containers; Linear-family layers."""

from __future__ import annotations

import copy
import pickle
import weakref
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ferrograd as torch
from ferrograd import nn
from ferrograd.autograd import gradcheck, gradgradcheck
from ferrograd.nn import functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.out = nn.Linear(4, 2)
        self.register_buffer("scale", torch.ones(2))

    def forward(self, x):
        return self.out(self.act(self.fc(x))) * self.scale


def _np(t):
    return t.detach().numpy()


# ----- registration -------------------------------------------------------------------------


def test_attribute_assignment_registers_parameters_modules_buffers():
    m = nn.Module()
    m.w = nn.Parameter(torch.zeros(2))
    m.sub = nn.Linear(2, 2)
    m.register_buffer("b", torch.ones(3))
    m.plain = torch.zeros(1)
    assert list(m._parameters) == ["w"]
    assert list(m._modules) == ["sub"]
    assert list(m._buffers) == ["b"]
    assert "plain" in m.__dict__ and "w" not in m.__dict__
    assert m.w is m._parameters["w"] and m.b is m._buffers["b"] and m.sub is m._modules["sub"]
    # A tensor assigned to a buffer's name stays a buffer.
    new = torch.zeros(3)
    m.b = new
    assert m._buffers["b"] is new


def test_missing_attribute_error_names_the_class():
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        Net().nope  # noqa: B018


def test_assign_tensor_to_parameter_name_is_refused():
    m = nn.Module()
    m.w = nn.Parameter(torch.zeros(2))
    with pytest.raises(TypeError) as e:
        m.w = torch.ones(2)
    assert str(e.value) == (
        "cannot assign 'ferrograd.FloatTensor' as parameter 'w' "
        "(ferrograd.nn.Parameter or None expected)"
    )
    assert torch.equal(m.w, torch.zeros(2))
    m.w = None
    assert m._parameters["w"] is None and m.w is None


def test_assign_non_module_to_module_name_is_refused():
    m = nn.Module()
    m.sub = nn.ReLU()
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'sub' "
                       r"\(ferrograd.nn.Module or None expected\)"):
        m.sub = 3
    with pytest.raises(TypeError, match="cannot assign 'str' as buffer"):
        m.register_buffer("b", None)
        m.b = "x"


def test_parameter_assigned_over_a_buffer_becomes_a_parameter():
    m = nn.Module()
    m.register_buffer("x", torch.zeros(2), persistent=False)
    m.x = nn.Parameter(torch.ones(2))
    assert "x" in m._parameters and "x" not in m._buffers
    assert "x" not in m._non_persistent_buffers_set


def test_module_assigned_over_a_plain_attribute_replaces_it():
    m = nn.Module()
    m.a = 5
    m.a = nn.ReLU()
    assert "a" not in m.__dict__ and isinstance(m.a, nn.ReLU)


def test_errors_before_super_init():
    class Bad(nn.Module):
        def __init__(self, what):
            if what == "module":
                self.sub = nn.ReLU()
            elif what == "param":
                self.p = nn.Parameter(torch.zeros(1))
            elif what == "buffer":
                self.register_buffer("b", torch.zeros(1))
            super().__init__()

    with pytest.raises(AttributeError, match=r"^cannot assign module before Module.__init__\(\) call$"):
        Bad("module")
    with pytest.raises(
        AttributeError, match=r"^cannot assign parameters before Module.__init__\(\) call$"
    ):
        Bad("param")
    with pytest.raises(AttributeError, match=r"^cannot assign buffer before Module.__init__\(\) call$"):
        Bad("buffer")


def test_module_init_rejects_arguments():
    with pytest.raises(TypeError, match=r"Module.__init__\(\) got an unexpected keyword argument 'x'"):
        nn.Module(x=1)
    with pytest.raises(TypeError, match=r"takes 1 positional argument but 2 were given"):
        nn.Module(1)


def test_register_buffer_errors():
    m = nn.Module()
    m.attr = 1
    with pytest.raises(KeyError) as e:
        m.register_buffer("a.b", torch.zeros(1))
    assert e.value.args[0] == 'buffer name can\'t contain "."'
    with pytest.raises(KeyError) as e:
        m.register_buffer("", torch.zeros(1))
    assert e.value.args[0] == 'buffer name can\'t be empty string ""'
    with pytest.raises(KeyError) as e:
        m.register_buffer("attr", torch.zeros(1))
    assert e.value.args[0] == "attribute 'attr' already exists"
    with pytest.raises(TypeError, match="buffer name should be a string. Got int"):
        m.register_buffer(1, torch.zeros(1))
    with pytest.raises(TypeError, match=r"cannot assign 'list' object to buffer 'b' "
                       r"\(ferrograd Tensor or None required\)"):
        m.register_buffer("b", [1.0])
    assert len(m._buffers) == 0


def test_register_parameter_errors():
    m = nn.Module()
    with pytest.raises(KeyError) as e:
        m.register_parameter("a.b", nn.Parameter(torch.zeros(1)))
    assert e.value.args[0] == 'parameter name can\'t contain "."'
    m.attr = 1
    with pytest.raises(KeyError) as e:
        m.register_parameter("attr", None)
    assert e.value.args[0] == "attribute 'attr' already exists"
    with pytest.raises(TypeError, match=r"cannot assign 'ferrograd.FloatTensor' object to "
                       r"parameter 'w' \(ferrograd.nn.Parameter or None required\)"):
        m.register_parameter("w", torch.zeros(1))
    leaf = torch.zeros(2, requires_grad=True)
    p = nn.Parameter(leaf)
    m.register_parameter("ok", p)
    assert m.ok is p
    m.register_parameter("none", None)
    assert "none" in m._parameters and m.none is None


def test_add_module_errors():
    m = nn.Module()
    m.x = 1
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("a", 3)
    with pytest.raises(KeyError) as e:
        m.add_module("x", nn.ReLU())
    assert e.value.args[0] == "attribute 'x' already exists"
    with pytest.raises(KeyError) as e:
        m.add_module("a.b", nn.ReLU())
    assert e.value.args[0] == 'module name can\'t contain ".", got: a.b'
    with pytest.raises(KeyError) as e:
        m.register_module("", nn.ReLU())
    assert e.value.args[0] == 'module name can\'t be empty string ""'
    with pytest.raises(TypeError, match="module name should be a string. Got float"):
        m.add_module(1.5, nn.ReLU())
    m.register_module("r", nn.ReLU())
    assert isinstance(m.r, nn.ReLU)


def test_delattr_removes_from_the_right_dict():
    m = Net()
    m.register_buffer("np_buf", torch.zeros(1), persistent=False)
    del m.fc
    del m.scale
    del m.np_buf
    assert "fc" not in m._modules and "scale" not in m._buffers
    assert "np_buf" not in m._non_persistent_buffers_set
    m.extra = 1
    del m.extra
    assert not hasattr(m, "extra")
    lin = nn.Linear(2, 2)
    del lin.bias
    assert "bias" not in lin._parameters


def test_dir_lists_registered_names():
    names = dir(Net())
    for n in ("fc", "act", "out", "scale", "forward", "training"):
        assert n in names
    assert "0" not in dir(nn.Sequential(nn.ReLU()))


def test_forward_missing():
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(torch.zeros(1))


# ----- traversal --------------------------------------------------------------------------


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 2)
        self.b.weight = self.a.weight
        self.shared = self.a


def test_named_parameters_order_and_prefixes():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["fc.weight", "fc.bias", "out.weight", "out.bias"]
    assert [n for n, _ in net.named_parameters(prefix="model")] == [
        "model.fc.weight", "model.fc.bias", "model.out.weight", "model.out.bias"
    ]
    assert list(net.named_parameters(recurse=False)) == []
    assert [n for n, _ in net.named_buffers()] == ["scale"]
    assert len(list(net.parameters())) == 4 and len(list(net.buffers())) == 1


def test_shared_weights_and_modules_come_once():
    t = Tied()
    names = [n for n, _ in t.named_parameters()]
    assert names == ["a.weight", "a.bias", "b.bias"]
    dup = [n for n, _ in t.named_parameters(remove_duplicate=False)]
    assert dup == ["a.weight", "a.bias", "b.weight", "b.bias", "shared.weight", "shared.bias"]
    assert [n for n, _ in t.named_modules()] == ["", "a", "b"]
    assert [n for n, _ in t.named_modules(remove_duplicate=False)] == ["", "a", "b", "shared"]
    assert [n for n, _ in t.named_children()] == ["a", "b"]
    assert list(t.children()) == [t.a, t.b]
    assert list(t.modules()) == [t, t.a, t.b]
    # The state dict keeps every name of a tied weight, as PyTorch's does.
    assert list(t.state_dict()) == [
        "a.weight", "a.bias", "b.weight", "b.bias", "shared.weight", "shared.bias"
    ]


def test_get_submodule_parameter_buffer():
    net = nn.Sequential(OrderedDict(block=Net()))
    assert net.get_submodule("") is net
    assert net.get_submodule("block.fc") is net.block.fc
    assert net.get_parameter("block.fc.weight") is net.block.fc.weight
    assert net.get_buffer("block.scale") is net.block.scale
    with pytest.raises(AttributeError, match="Net has no attribute `nope`"):
        net.get_submodule("block.nope")
    with pytest.raises(AttributeError, match="`training` is not an nn.Module"):
        net.get_submodule("block.training")
    with pytest.raises(AttributeError, match="`scale` is not an nn.Parameter"):
        net.get_parameter("block.scale")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        net.get_buffer("block.fc.weight")
    with pytest.raises(AttributeError, match="Linear has no attribute `w`"):
        net.get_parameter("block.fc.w")


def test_apply_visits_children_first():
    net = Net()
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "ReLU", "Linear", "Net"]


def test_train_eval_propagate():
    net = nn.Sequential(nn.Dropout(), Net())
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)


def test_requires_grad_and_zero_grad():
    net = Net()
    net(torch.randn(2, 3)).sum().backward()
    grads = [p.grad for p in net.parameters()]
    assert all(g is not None for g in grads)
    net.zero_grad(set_to_none=False)
    for p, g in zip(net.parameters(), grads):
        assert p.grad is g and float(p.grad.abs().sum()) == 0.0
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    assert all(p.requires_grad for p in net.parameters())


# ----- conversion --------------------------------------------------------------------------


def test_to_dtype_keeps_parameter_objects_and_converts_grads_and_buffers():
    net = Net()
    net.register_buffer("steps", torch.tensor([3]))
    params = list(net.parameters())
    net(torch.randn(2, 3)).sum().backward()
    assert net.to(torch.float64) is net
    assert all(a is b for a, b in zip(net.parameters(), params))
    for p in net.parameters():
        assert isinstance(p, nn.Parameter) and p.dtype == torch.float64
        assert p.grad.dtype == torch.float64 and p.requires_grad
    assert net.scale.dtype == torch.float64
    # Integer buffers keep their dtype.
    assert net.steps.dtype == torch.int64
    out = net(torch.randn(2, 3, dtype=torch.float64))
    assert out.dtype == torch.float64
    net.float()
    assert all(p.dtype == torch.float32 for p in net.parameters())
    net.double()
    assert all(p.dtype == torch.float64 for p in net.parameters())
    net.to(torch.zeros(1))
    assert net.fc.weight.dtype == torch.float32
    net.to("cpu", torch.float64)
    assert net.fc.weight.dtype == torch.float64
    net.to(device="cpu", dtype=torch.float32)
    assert net.fc.weight.dtype == torch.float32
    assert net.cpu() is net and net.to("cpu") is net
    net.type(torch.float64)
    assert net.fc.weight.dtype == torch.float64 and net.steps.dtype == torch.float64
    net.type("ferrograd.FloatTensor")
    assert net.fc.weight.dtype == torch.float32


def test_to_refuses_integer_dtype_and_other_devices_without_changes():
    net = Net()
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex "
                       "dtypes, but got desired dtype=ferrograd.int64"):
        net.to(torch.int64)
    with pytest.raises(RuntimeError, match="CPU only"):
        net.to("cuda", torch.float64)
    assert net.fc.weight.dtype == torch.float32


def test_optimizer_style_reference_survives_to():
    net = nn.Linear(2, 1)
    held = net.weight
    net.double()
    assert held is net.weight and held.dtype == torch.float64


# ----- repr -------------------------------------------------------------------------------


def test_repr_tree():
    assert repr(Net()) == (
        "Net(\n"
        "  (fc): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (act): ReLU()\n"
        "  (out): Linear(in_features=4, out_features=2, bias=True)\n"
        ")"
    )
    seq = nn.Sequential(nn.Linear(2, 3, bias=False), nn.Sequential(nn.Flatten(), nn.Identity()))
    assert repr(seq) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=False)\n"
        "  (1): Sequential(\n"
        "    (0): Flatten(start_dim=1, end_dim=-1)\n"
        "    (1): Identity()\n"
        "  )\n"
        ")"
    )


def test_repr_extra_repr_multiline_with_children():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = nn.ReLU()

        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(M()) == "M(\n  a=1\n  b=2\n  (sub): ReLU()\n)"

    class One(nn.Module):
        def extra_repr(self):
            return "k=3"

    assert repr(One()) == "One(k=3)"
    assert repr(nn.Module()) == "Module()"


def test_module_list_repr_compresses_runs():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)])
    assert repr(ml) == (
        "ModuleList(\n"
        "  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n"
        "  (2): ReLU()\n"
        "  (3): Linear(in_features=2, out_features=2, bias=True)\n"
        ")"
    )
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_parameter_container_reprs():
    pl = nn.ParameterList([torch.zeros(2, 3), torch.zeros(4, dtype=torch.float64), "x"])
    assert repr(pl) == (
        "ParameterList(\n"
        "    (0): Parameter containing: [ferrograd.float32 of size 2x3]\n"
        "    (1): Parameter containing: [ferrograd.float64 of size 4]\n"
        "    (2): Object of type: str\n"
        ")"
    )
    pd = nn.ParameterDict({"b": torch.zeros(2), "a": torch.zeros(1, 1, dtype=torch.float64)})
    assert repr(pd) == (
        "ParameterDict(\n"
        "    (a): Parameter containing: [ferrograd.DoubleTensor of size 1x1]\n"
        "    (b): Parameter containing: [ferrograd.FloatTensor of size 2]\n"
        ")"
    )


def test_parameter_repr_and_copies():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    q = nn.Parameter(torch.tensor([1.0]), requires_grad=False)
    assert repr(q) == "Parameter containing:\ntensor([1.])"
    d = copy.deepcopy(p)
    assert type(d) is nn.Parameter and d.requires_grad and torch.equal(d, p)
    d.data.add_(1)
    assert float(p[0]) == 1.0
    r = pickle.loads(pickle.dumps(q))
    assert type(r) is nn.Parameter and not r.requires_grad and torch.equal(r, q)
    assert nn.Parameter().shape == (0,)


def test_deepcopy_of_a_model_keeps_ties_and_types():
    t = Tied()
    c = copy.deepcopy(t)
    assert c.b.weight is c.a.weight and c.shared is c.a
    assert isinstance(c.a.weight, nn.Parameter)
    assert c.a.weight is not t.a.weight
    x = torch.randn(3, 2)
    assert torch.equal(c.a(x), t.a(x))


# ----- state dict ----------------------------------------------------------------------------


def test_state_dict_contents():
    net = Net()
    net.register_buffer("tmp", torch.zeros(1), persistent=False)
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "fc.weight", "fc.bias", "out.weight", "out.bias"]
    assert not sd["fc.weight"].requires_grad and sd["fc.weight"].grad_fn is None
    assert type(sd["fc.weight"]) is torch.Tensor
    # Detached, yet the same memory.
    with torch.no_grad():
        net.fc.weight.fill_(0.5)
    assert float(sd["fc.weight"][0, 0]) == 0.5
    kv = net.state_dict(keep_vars=True)
    assert kv["fc.weight"] is net.fc.weight
    assert list(net.state_dict(prefix="m.")) == [
        "m.scale", "m.fc.weight", "m.fc.bias", "m.out.weight", "m.out.bias"
    ]
    dest = OrderedDict()
    assert net.state_dict(destination=dest) is dest and len(dest) == 5
    assert sd._metadata[""] == {"version": 1} and "fc" in sd._metadata


def test_state_dict_round_trip_reproduces_outputs():
    torch.manual_seed(0)
    a = Net()
    with torch.no_grad():
        a.scale.copy_(torch.tensor([2.0, -1.0]))
    torch.manual_seed(1)
    b = Net()
    x = torch.randn(5, 3)
    assert not torch.allclose(a(x), b(x))
    params_before = list(b.parameters())
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert torch.equal(a(x), b(x))
    # Copied in place: the Parameter objects are the same.
    assert all(p is q for p, q in zip(b.parameters(), params_before))
    assert b.fc.weight.is_leaf and b.fc.weight.requires_grad


def test_load_state_dict_from_pickled_checkpoint():
    torch.manual_seed(3)
    a = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 1))
    sd = pickle.loads(pickle.dumps(a.state_dict()))
    b = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 1))
    b.load_state_dict(sd)
    x = torch.randn(4, 3)
    assert torch.equal(a(x), b(x))


def test_load_state_dict_keeps_optimizer_updates_effective():
    net = nn.Linear(2, 1)
    held = list(net.parameters())
    other = nn.Linear(2, 1)
    net.load_state_dict(other.state_dict())
    # An optimizer step on the held objects changes the model.
    with torch.no_grad():
        for p in held:
            p.sub_(1.0)
    assert torch.allclose(net.weight, other.weight - 1.0)


def _snapshot(m):
    return {k: v.clone() for k, v in m.state_dict().items()}


def _unchanged(m, snap):
    return all(torch.equal(v, snap[k]) for k, v in m.state_dict().items())


def test_size_mismatch_message_and_module_unchanged():
    net = Net()
    snap = _snapshot(net)
    sd = Net().state_dict()
    sd["out.weight"] = torch.zeros(3, 4)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    assert str(e.value) == (
        "Error(s) in loading state_dict for Net:\n\t"
        "size mismatch for out.weight: copying a param with shape ferrograd.Size([3, 4]) "
        "from checkpoint, the shape in current model is ferrograd.Size([2, 4])."
    )
    # fc.* came before out.weight and matched, yet nothing was copied.
    assert _unchanged(net, snap)
    # strict=False still refuses a wrong shape.
    with pytest.raises(RuntimeError, match="size mismatch for out.weight"):
        net.load_state_dict(sd, strict=False)
    assert _unchanged(net, snap)


def test_missing_and_unexpected_keys():
    net = Net()
    snap = _snapshot(net)
    sd = Net().state_dict()
    del sd["fc.bias"]
    del sd["scale"]
    sd["fc.extra"] = torch.zeros(1)
    sd["nothere.weight"] = torch.zeros(1)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    assert str(e.value) == (
        "Error(s) in loading state_dict for Net:\n\t"
        'Missing key(s) in state_dict: "scale", "fc.bias". \n\t'
        'Unexpected key(s) in state_dict: "nothere.weight", "fc.extra". '
    )
    assert _unchanged(net, snap)
    res = net.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["scale", "fc.bias"]
    assert res.unexpected_keys == ["nothere.weight", "fc.extra"]
    assert repr(res) == (
        "_IncompatibleKeys(missing_keys=['scale', 'fc.bias'], "
        "unexpected_keys=['nothere.weight', 'fc.extra'])"
    )
    assert torch.equal(net.fc.weight, sd["fc.weight"])
    assert torch.equal(net.fc.bias, snap["fc.bias"])


def test_load_state_dict_non_tensor_value_and_non_mapping():
    net = nn.Linear(2, 2)
    sd = net.state_dict()
    sd["bias"] = [0.0, 0.0]
    with pytest.raises(RuntimeError, match='While copying the parameter named "bias", expected '
                       "ferrograd.Tensor or Tensor-like object from checkpoint but received "
                       "<class 'list'>"):
        net.load_state_dict(sd)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        net.load_state_dict([1])


def test_load_state_dict_casts_dtype_and_ignores_non_persistent():
    net = Net()
    net.register_buffer("tmp", torch.full((1,), 7.0), persistent=False)
    src = Net().double()
    net.load_state_dict(src.state_dict())
    assert net.fc.weight.dtype == torch.float32
    assert np.allclose(_np(net.fc.weight), _np(src.fc.weight).astype(np.float32))
    assert float(net.tmp) == 7.0


def test_load_state_dict_assign():
    net = nn.Linear(2, 2)
    net.weight.requires_grad_(False)
    w = torch.randn(2, 2)
    sd = {"weight": w, "bias": torch.zeros(2)}
    net.load_state_dict(sd, assign=True)
    assert isinstance(net.weight, nn.Parameter) and not net.weight.requires_grad
    assert torch.equal(net.weight, w)
    assert net.bias.requires_grad


def test_load_state_dict_scalar_from_old_one_element_vector():
    m = nn.Module()
    m.register_buffer("count", torch.tensor(0.0))
    m.load_state_dict({"count": torch.tensor([4.0])})
    assert float(m.count) == 4.0 and m.count.shape == ()


def test_load_from_state_dict_override_and_hooks():
    class Renamed(nn.Linear):
        # Old checkpoints called the weight "w".
        def _load_from_state_dict(self, state_dict, prefix, *args):
            if prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, *args)

    outer = nn.Sequential(Renamed(2, 2))
    w = torch.randn(2, 2)
    outer.load_state_dict({"0.w": w, "0.bias": torch.zeros(2)})
    assert torch.equal(outer[0].weight, w)

    seen = []
    m = nn.Linear(2, 2)
    h = m.register_load_state_dict_post_hook(lambda mod, keys: seen.append(list(keys.missing_keys)))
    m.load_state_dict({"weight": torch.zeros(2, 2)}, strict=False)
    assert seen == [["bias"]]
    h.remove()
    m.load_state_dict(m.state_dict())
    assert len(seen) == 1

    def drop_bias(module, sd, prefix, meta):
        del sd[prefix + "bias"]

    m.register_state_dict_post_hook(drop_bias)
    assert list(m.state_dict()) == ["weight"]


def test_extra_state_round_trip():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.n = 0

        def get_extra_state(self):
            return {"n": self.n}

        def set_extra_state(self, state):
            self.n = state["n"]

    a = Counter()
    a.n = 5
    sd = a.state_dict()
    assert sd["_extra_state"] == {"n": 5}
    b = Counter()
    b.load_state_dict(sd)
    assert b.n == 5
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state"'):
        b.load_state_dict({})
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "_extra_state"'):
        nn.Module().load_state_dict({"_extra_state": 1})


# ----- hooks and __call__ --------------------------------------------------------------------


class Scale(nn.Module):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def forward(self, x, k=1.0):
        self.log.append("forward")
        return x * 2.0 * k


def test_forward_hooks_order_and_replacement():
    """PyTorch's order: global pre-hooks, pre-hooks (prepended first), forward,
    global forward hooks, forward hooks; a pre-hook's result replaces args, a
    forward hook's result replaces the output."""
    log = []
    m = Scale(log)
    m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
    m.register_forward_pre_hook(lambda mod, args: (args[0] + 1.0,))
    m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)
    m.register_forward_hook(lambda mod, args, out: log.append("post1"))
    m.register_forward_hook(lambda mod, args, out: out + 100.0)
    m.register_forward_hook(lambda mod, args, out: log.append("post0"), prepend=True)
    from ferrograd.nn.modules.module import register_module_forward_hook

    g = register_module_forward_hook(lambda mod, args, out: log.append("global"))
    try:
        out = m(torch.tensor([1.0]))
    finally:
        g.remove()
    assert log == ["pre0", "pre1", "forward", "global", "post0", "post1"]
    assert float(out) == (1.0 + 1.0) * 2.0 + 100.0


def test_forward_hooks_with_kwargs():
    log = []
    m = Scale(log)

    def pre(mod, args, kwargs):
        return args, {**kwargs, "k": 3.0}

    m.register_forward_pre_hook(pre, with_kwargs=True)
    seen = {}

    def post(mod, args, kwargs, out):
        seen["kwargs"] = kwargs
        return out - 1.0

    m.register_forward_hook(post, with_kwargs=True)
    out = m(torch.tensor([1.0]), k=1.0)
    assert float(out) == 1.0 * 2.0 * 3.0 - 1.0
    assert seen["kwargs"] == {"k": 3.0}
    m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of "
                       r"\(new_args, new_kwargs\), but got 5."):
        m(torch.tensor([1.0]))


def test_hook_handles_remove_and_context_manager():
    log = []
    m = Scale(log)
    h = m.register_forward_hook(lambda mod, args, out: log.append("hook"))
    with m.register_forward_pre_hook(lambda mod, args: log.append("pre")):
        m(torch.zeros(1))
    m(torch.zeros(1))
    h.remove()
    h.remove()  # twice is harmless
    m(torch.zeros(1))
    assert log == ["pre", "forward", "hook", "forward", "hook", "forward"]
    assert not m._forward_hooks and not m._forward_pre_hooks


def test_always_call_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    log = []
    m = Boom()
    m.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: log.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(torch.zeros(1))
    assert log == [("always", None)]


def test_handle_does_not_keep_module_alive():
    m = nn.Linear(2, 2)
    h = m.register_forward_hook(lambda *a: None)
    ref = weakref.ref(m)
    del m
    import gc

    gc.collect()
    assert ref() is None
    h.remove()


def test_full_backward_hooks_see_and_replace_gradients():
    """Order: backward pre-hooks on grad_output (may replace it), then the
    backward hooks on (grad_input, grad_output) (may replace grad_input)."""
    log = []
    lin = nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)

    def pre(mod, grad_output):
        log.append(("pre", tuple(g.shape for g in grad_output)))
        return (grad_output[0] * 2.0,)

    def hook(mod, grad_input, grad_output):
        log.append(("hook", tuple(g.shape for g in grad_input),
                    tuple(g.shape for g in grad_output)))
        seen_out.append(grad_output[0])
        return (grad_input[0] * 10.0,)

    seen_out = []
    lin.register_full_backward_pre_hook(pre)
    lin.register_full_backward_hook(hook)
    out = lin(x)
    assert out.grad_fn.name() == "BackwardHookFunctionBackward"
    out.sum().backward()
    assert log == [("pre", ((4, 2),)), ("hook", ((4, 3),), ((4, 2),))]
    # grad_output as the pre-hook left it.
    assert np.allclose(_np(seen_out[0]), 2.0)
    w = _np(lin.weight)
    assert np.allclose(_np(x.grad), 10.0 * 2.0 * np.ones((4, 2)) @ w, atol=1e-5)
    # The parameter gradients see the pre-hook's doubled grad_output only.
    assert np.allclose(_np(lin.bias.grad), 2.0 * 4)


def test_full_backward_hook_when_input_needs_no_grad():
    calls = []
    lin = nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda m, gi, go: calls.append((gi, go[0].shape)))
    lin(torch.randn(3, 2)).sum().backward()
    assert calls == [((None,), (3, 2))]
    bad = nn.Linear(2, 2)
    bad.register_full_backward_hook(lambda m, gi, go: (torch.zeros(3, 2),))
    with pytest.raises(RuntimeError, match="Backward hook for Modules where no input requires "
                       "gradient should always return None or None for all gradients."):
        bad(torch.randn(3, 2)).sum().backward()


def test_full_backward_hook_with_non_tensor_args_and_wrong_count():
    class Mix(nn.Module):
        def forward(self, x, k, y):
            return x * k + y

    m = Mix()
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append(gi))
    x = torch.randn(2, requires_grad=True)
    y = torch.randn(2, requires_grad=True)
    m(x, 3.0, y).sum().backward()
    assert got[0][1] is None and np.allclose(_np(got[0][0]), 3.0)
    assert np.allclose(_np(got[0][2]), 1.0)

    m2 = Mix()
    m2.register_full_backward_hook(lambda mod, gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                       "grad_input, got 1, but expected 3"):
        m2(x, 3.0, y).sum().backward()


def test_backward_hooks_removed_leave_plain_graph():
    lin = nn.Linear(2, 2)
    h = lin.register_full_backward_hook(lambda *a: None)
    h.remove()
    out = lin(torch.randn(1, 2, requires_grad=True))
    assert out.grad_fn.name() != "BackwardHookFunctionBackward"
    with pytest.raises(NotImplementedError, match="register_full_backward_hook"):
        lin.register_backward_hook(lambda *a: None)


def test_module_hooks_in_nested_model_order():
    """Forward hooks of a container run around those of its children; its
    backward hook runs last, when the gradient reaches its own input."""
    log = []
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    for name, mod in net.named_modules():
        mod.register_forward_pre_hook(lambda m, a, n=name: log.append("pre:" + n))
        mod.register_forward_hook(lambda m, a, o, n=name: log.append("post:" + n))
        mod.register_full_backward_hook(lambda m, gi, go, n=name: log.append("bwd:" + n))
    net(torch.randn(1, 2, requires_grad=True)).sum().backward()
    assert log == [
        "pre:", "pre:0", "post:0", "pre:1", "post:1", "post:",
        "bwd:1", "bwd:0", "bwd:",
    ]


# ----- containers -----------------------------------------------------------------------------


def test_sequential_indexing_and_mutation():
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Tanh()
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c
    assert list(s) == [a, b, c]
    sl = s[1:]
    assert isinstance(sl, nn.Sequential) and list(sl._modules) == ["1", "2"]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        s[-4]
    d = nn.Sigmoid()
    s[1] = d
    assert s[1] is d
    del s[0]
    assert list(s._modules) == ["0", "1"] and s[0] is d
    s.append(a)
    assert s[2] is a
    s.insert(0, b)
    assert list(s) == [b, d, c, a] and list(s._modules) == ["0", "1", "2", "3"]
    s.insert(-1, nn.Identity())
    assert isinstance(s[3], nn.Identity) and s[4] is a
    with pytest.raises(IndexError, match="Index out of range: 9"):
        s.insert(9, nn.ReLU())
    assert s.pop(0) is b and len(s) == 4
    s.extend([nn.ReLU(), nn.ReLU()])
    assert len(s) == 6
    del s[1:3]
    assert len(s) == 4 and list(s._modules) == ["0", "1", "2", "3"]
    t = s + nn.Sequential(nn.ReLU())
    assert len(t) == 5 and t[0] is s[0]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        s + nn.ReLU()
    assert len(nn.Sequential(nn.ReLU()) * 3) == 3


def test_sequential_ordered_dict_and_forward():
    s = nn.Sequential(OrderedDict([("lin", nn.Linear(2, 3)), ("act", nn.ReLU())]))
    assert list(s._modules) == ["lin", "act"] and s.lin is s[0]
    x = torch.randn(4, 2)
    assert torch.equal(s(x), F.relu(s.lin(x)))
    assert [n for n, _ in s.named_parameters()] == ["lin.weight", "lin.bias"]


def test_module_list():
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    assert len(ml) == 2 and isinstance(ml[-1], nn.Tanh)
    ml.append(nn.Linear(1, 1))
    ml.extend([nn.Sigmoid()])
    ml += [nn.Identity()]
    assert len(ml) == 5
    ml.insert(1, nn.ELU())
    assert isinstance(ml[1], nn.ELU) and isinstance(ml[2], nn.Tanh)
    assert isinstance(ml.pop(1), nn.ELU) and isinstance(ml[1], nn.Tanh)
    sub = ml[1:3]
    assert isinstance(sub, nn.ModuleList) and len(sub) == 2
    del ml[0]
    assert list(ml._modules) == [str(i) for i in range(len(ml))]
    ml[0] = nn.ReLU()
    assert isinstance(ml[0], nn.ReLU)
    with pytest.raises(IndexError, match="index 10 is out of range"):
        ml[10]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, "
                       "but got ReLU"):
        ml.extend(nn.ReLU())
    assert len(ml + nn.ModuleList([nn.ReLU()])) == len(ml) + 1
    assert len(list(nn.ModuleList([nn.Linear(2, 2)] * 2).parameters())) == 2
    with pytest.raises(NotImplementedError):
        ml(torch.zeros(1))


def test_module_dict():
    md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    assert list(md.keys()) == ["b", "a"] and "a" in md and len(md) == 2
    md["c"] = nn.Linear(1, 1)
    assert list(md) == ["b", "a", "c"]
    assert isinstance(md.pop("a"), nn.Tanh) and "a" not in md
    md.update([("d", nn.ELU())])
    assert list(md.values())[-1] is md["d"]
    assert dict(md.items())["c"] is md.c
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; "
                       "2 is required"):
        md.update([("x",)])
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable "
                       "of key/value pairs, but got int"):
        md.update(3)
    md.clear()
    assert len(md) == 0


def test_parameter_list():
    pl = nn.ParameterList([torch.zeros(2), nn.Parameter(torch.ones(1))])
    assert all(isinstance(p, nn.Parameter) for p in pl)
    pl.append(torch.zeros(3))
    pl.extend([torch.zeros(4)])
    assert [p.shape[0] for p in pl] == [2, 1, 3, 4]
    assert len(list(pl.parameters())) == 4
    assert pl[-1].shape == (4,)
    assert [p.shape[0] for p in pl[1:3]] == [1, 3]
    pl[0] = torch.full((2,), 5.0)
    assert isinstance(pl[0], nn.Parameter) and float(pl[0][0]) == 5.0
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an "
                       "iterable, but got Tensor"):
        pl.extend(torch.zeros(2))
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(1)
    net = nn.Module()
    net.pl = pl
    assert [n for n, _ in net.named_parameters()] == ["pl.0", "pl.1", "pl.2", "pl.3"]


def test_parameter_dict():
    pd = nn.ParameterDict(OrderedDict([("z", torch.zeros(1)), ("a", torch.ones(1))]))
    assert list(pd) == ["z", "a"] and isinstance(pd["a"], nn.Parameter)
    pd["m"] = torch.zeros(2)
    assert "m" in pd and len(pd) == 3
    assert pd.get("nope") is None and pd.get("nope", 1) == 1
    assert pd.pop("z").shape == (1,) and "z" not in pd
    k, v = pd.popitem()
    assert k == "m" and v.shape == (2,)
    pd.setdefault("d", torch.zeros(5))
    assert pd["d"].shape == (5,)
    both = pd | nn.ParameterDict({"q": torch.zeros(1)})
    assert list(both) == ["a", "d", "q"]
    assert list(reversed(pd)) == ["d", "a"]
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key"):
        pd[1]
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd(1)
    assert [n for n, _ in pd.named_parameters()] == ["a", "d"]
    pd.clear()
    assert len(pd) == 0 and len(list(pd.parameters())) == 0


# ----- Linear family -----------------------------------------------------------------------


def test_linear_init_bounds_and_reset():
    lin = nn.Linear(16, 64)
    bound = 1 / 4.0
    w, b = _np(lin.weight).copy(), _np(lin.bias)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # 1024 uniform draws fill the interval: the extremes come within 2%.
    assert w.max() > 0.98 * bound and w.min() < -0.98 * bound
    lin.reset_parameters()
    assert not np.array_equal(w, _np(lin.weight))
    assert nn.Linear(3, 2, bias=False).bias is None
    assert "bias" in nn.Linear(3, 2, bias=False)._parameters
    assert nn.Linear(3, 2, dtype=torch.float64).weight.dtype == torch.float64


def test_linear_draws_are_seeded():
    torch.manual_seed(7)
    a = nn.Linear(5, 3)
    torch.manual_seed(7)
    w = torch.empty(3, 5).uniform_(-1 / 5**0.5, 1 / 5**0.5)
    bias = torch.empty(3).uniform_(-1 / 5**0.5, 1 / 5**0.5)
    assert torch.equal(a.weight, w) and torch.equal(a.bias, bias)


def test_bilinear_values_and_errors():
    m = nn.Bilinear(3, 4, 2)
    assert repr(m) == "Bilinear(in1_features=3, in2_features=4, out_features=2, bias=True)"
    x1, x2 = torch.randn(5, 3), torch.randn(5, 4)
    ref = np.einsum("ni,oij,nj->no", _np(x1), _np(m.weight), _np(x2)) + _np(m.bias)
    assert np.allclose(_np(m(x1, x2)), ref, atol=1e-5)
    # Extra leading dimensions.
    y = m(x1.reshape(5, 1, 3), x2.reshape(5, 1, 4))
    assert y.shape == (5, 1, 2)
    assert np.abs(_np(m.weight)).max() <= 1 / 3**0.5
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input dimensions do not match: got 2 and 3"):
        m(x1, x2.reshape(5, 1, 4))
    with pytest.raises(RuntimeError, match="input batch dimensions do not match: got 5 and 4"):
        m(x1, x2[:4])
    with pytest.raises(RuntimeError, match="input1 size does not match weight size: got 4 but "
                       "expected 3"):
        m(x2, x2)
    with pytest.raises(RuntimeError, match="input2 size does not match weight size: got 3 but "
                       "expected 4"):
        m(x1, x1)
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 3 but "
                       "expected 2"):
        F.bilinear(x1, x2, m.weight, torch.zeros(3))
    assert nn.Bilinear(2, 2, 1, bias=False)(torch.ones(1, 2), torch.ones(1, 2)).shape == (1, 1)


@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    in1=st.integers(1, 3),
    in2=st.integers(1, 3),
    out=st.integers(1, 3),
    bias=st.booleans(),
)
def test_bilinear_gradcheck(lead, in1, in2, out, bias):
    rng = np.random.default_rng(len(lead) * 100 + in1 * 10 + in2)
    shape = tuple(lead) or (2,)

    def t(*s):
        return torch.tensor(rng.standard_normal(s), dtype=torch.float64, requires_grad=True)

    inputs = [t(*shape, in1), t(*shape, in2), t(out, in1, in2)]
    if bias:
        inputs.append(t(out))
    assert gradcheck(F.bilinear, inputs)
    assert gradgradcheck(F.bilinear, inputs)


def test_identity_flatten_unflatten():
    x = torch.randn(2, 3, 4)
    assert nn.Identity(54, unused="x")(x) is x
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    u = nn.Unflatten(1, (3, 1))
    assert u(torch.randn(2, 3)).shape == (2, 3, 1)
    assert repr(u) == "Unflatten(dim=1, unflattened_size=(3, 1))"
    assert nn.Unflatten(-1, [2, -1])(torch.randn(3, 8)).shape == (3, 2, 4)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found "
                       "element of type float at pos 1"):
        nn.Unflatten(1, (2, 2.0))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found "
                       "type int"):
        nn.Unflatten(1, 4)
    with pytest.raises(TypeError, match="invalid argument type for dim parameter"):
        nn.Unflatten(1.0, (2, 2))


def test_training_loop_with_state_dict_transfer():
    """A small model trains (loss falls) and its state dict reproduces it."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    x = torch.randn(32, 2)
    y = (x[:, :1] * 2.0 - x[:, 1:]).detach()
    first = None
    for _ in range(60):
        loss = F.mse_loss(model(x), y)
        first = first if first is not None else float(loss)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.sub_(p.grad * 0.1)
    assert float(loss) < 0.5 * first
    clone = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    clone.load_state_dict(model.state_dict())
    assert torch.equal(clone(x), model(x))


def test_set_submodule():
    net = nn.Sequential(OrderedDict(block=Net()))
    new = nn.Linear(3, 4, bias=False)
    net.set_submodule("block.fc", new)
    assert net.block.fc is new
    net.set_submodule("block.extra", nn.ReLU())
    assert isinstance(net.block.extra, nn.ReLU)
    with pytest.raises(AttributeError, match="Net has no attribute `nope`"):
        net.set_submodule("block.nope", nn.ReLU(), strict=True)
    with pytest.raises(AttributeError, match="`training` is not an nn.Module"):
        net.set_submodule("block.training", nn.ReLU())
    with pytest.raises(ValueError, match="Cannot set the submodule without a target name!"):
        net.set_submodule("", nn.ReLU())
    with pytest.raises(ValueError, match="`module` is not an nn.Module"):
        net.set_submodule("block.fc", 3)


def test_global_forward_pre_hook_runs_before_module_hooks():
    from ferrograd.nn.modules.module import register_module_forward_pre_hook

    log = []
    m = Scale(log)
    m.register_forward_pre_hook(lambda mod, args: log.append("own"))
    with register_module_forward_pre_hook(lambda mod, args: log.append("global")):
        m(torch.zeros(1))
    m(torch.zeros(1))
    assert log == ["global", "own", "forward", "own", "forward"]


def test_pickled_model_round_trip():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    m.register_buffer("steps", torch.tensor([4]))
    m.eval()
    r = pickle.loads(pickle.dumps(m))
    assert repr(r) == repr(m) and not r.training
    assert type(r[0].weight) is nn.Parameter and r[0].weight.requires_grad
    x = torch.randn(4, 2)
    assert torch.equal(r(x), m(x)) and torch.equal(r.steps, m.steps)


def test_backward_hook_module_supports_double_backward():
    lin = nn.Linear(2, 2)
    calls = []
    lin.register_full_backward_hook(lambda mod, gi, go: calls.append(1))
    x = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    lin.double()
    (g,) = torch.autograd.grad(lin(x).pow(2).sum(), x, create_graph=True)
    g.sum().backward()
    w = _np(lin.weight)
    # d/dx sum(2 (W x + b) W) = 2 W^T W 1 for every row.
    assert np.allclose(_np(x.grad), np.tile(2 * (w.T @ w).sum(axis=1), (3, 1)))
    # The second backward reaches x through the module's output again (pow
    # saved it), so the hook runs once per backward.
    assert calls == [1, 1]


def test_parameter_is_the_graph_leaf_object():
    lin = nn.Linear(2, 2)
    node = (lin.weight * 2).grad_fn.next_functions[0][0]
    assert node.variable is lin.weight
    p = copy.deepcopy(lin).weight
    assert (p * 2).grad_fn.next_functions[0][0].variable is p


def test_load_post_hook_decides_strict_errors_and_failed_load_rolls_back():
    m = nn.Linear(2, 2)
    w = torch.randn(2, 2)
    # Clearing the missing keys in place makes a strict load succeed.
    h = m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    res = m.load_state_dict({"weight": w})
    assert res.missing_keys == [] and torch.equal(m.weight, w)
    h.remove()

    # A hook that adds a key fails the strict load, which is then undone.
    snap = _snapshot(m)
    seen = {}

    def add_key(mod, keys):
        seen["weight during hook"] = mod.weight.clone()
        keys.unexpected_keys.append("made.up")

    m.register_load_state_dict_post_hook(add_key)
    new = {"weight": torch.ones(2, 2), "bias": torch.ones(2)}
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "made.up"'):
        m.load_state_dict(new)
    # The hook saw the loaded values; the module is back as it was.
    assert torch.equal(seen["weight during hook"], torch.ones(2, 2))
    assert _unchanged(m, snap)


def test_load_pre_hook_renames_keys():
    m = nn.Linear(2, 2)

    def rename(module, sd, prefix, *rest):
        if prefix + "W" in sd:
            sd[prefix + "weight"] = sd.pop(prefix + "W")

    m.register_load_state_dict_pre_hook(rename)
    w = torch.randn(2, 2)
    m.load_state_dict({"W": w, "bias": torch.zeros(2)})
    assert torch.equal(m.weight, w)


_ops = st.lists(
    st.tuples(
        st.sampled_from(["append", "insert", "pop", "del", "delslice", "set", "extend"]),
        st.integers(-6, 6),
        st.integers(-6, 6),
    ),
    max_size=12,
)


@pytest.mark.parametrize("cls", [nn.Sequential, nn.ModuleList])
@given(ops=_ops)
def test_sequential_and_module_list_behave_like_lists(cls, ops):
    """Any mix of edits keeps the container equal to the same edits on a
    Python list, with keys renumbered "0".."n-1"."""
    mods = [nn.Identity() for _ in range(3)]
    c = cls(mods) if cls is nn.ModuleList else cls(*mods)
    ref = list(mods)
    for op, i, j in ops:
        n = len(ref)
        new = nn.Identity()
        if op == "append":
            c.append(new)
            ref.append(new)
        elif op == "extend":
            c.extend([new, nn.ReLU()])
            ref.extend(list(c)[-2:])
        elif op == "insert":
            # ModuleList.insert takes 0..n; Sequential's also -n..-1.
            if cls is nn.ModuleList and not 0 <= i <= n:
                continue
            if not -n <= i <= n:
                with pytest.raises(IndexError):
                    c.insert(i, new)
                continue
            c.insert(i, new)
            ref.insert(i if i >= 0 else i + n, new)
        elif op in ("pop", "del", "set"):
            if not -n <= i < n:
                with pytest.raises(IndexError):
                    c[i]
                continue
            if op == "pop":
                assert c.pop(i) is ref.pop(i)
            elif op == "del":
                del c[i]
                del ref[i]
            else:
                c[i] = new
                ref[i] = new
        else:
            del c[i:j]
            del ref[i:j]
        assert list(c) == ref
        assert len(c) == len(ref)
        assert list(c._modules) == [str(k) for k in range(len(ref))]
        assert all(c[k] is ref[k] for k in range(-len(ref), len(ref)))


def test_backward_hook_leaves_tensors_without_grad_alone():
    class Mix(nn.Module):
        def forward(self, x, y):
            return x * y, y

    m = Mix()
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((gi, go)))
    x = torch.randn(2, requires_grad=True)
    y = torch.randn(2)
    a, b = m(x, y)
    # y needs no gradient: it is passed through as is, and its places hold None.
    assert b is y and not b.requires_grad
    a.sum().backward()
    (gx, gy), (ga, gb) = got[0]
    assert gy is None and gb is None
    assert np.allclose(_np(gx), _np(y)) and np.allclose(_np(ga), 1.0)


def test_linear_default_init_is_pytorchs_for_seed_0():
    # PyTorch 2.x: torch.manual_seed(0); nn.Linear(2, 2) prints these (4 decimals).
    torch.manual_seed(0)
    lin = nn.Linear(2, 2)
    assert np.allclose(_np(lin.weight), [[-0.0053, 0.3793], [-0.5820, -0.5204]], atol=5e-5)
    assert np.allclose(_np(lin.bias), [-0.2723, 0.1896], atol=5e-5)


@st.composite
def _mlp_specs(draw):
    widths = draw(st.lists(st.integers(1, 4), min_size=2, max_size=4))
    acts = draw(st.lists(st.sampled_from(["relu", "tanh", "none"]), min_size=len(widths) - 1,
                         max_size=len(widths) - 1))
    bias = draw(st.lists(st.booleans(), min_size=len(widths) - 1, max_size=len(widths) - 1))
    return widths, acts, bias


def _build(spec):
    widths, acts, bias = spec
    layers = []
    for i, (act, b) in enumerate(zip(acts, bias)):
        layers.append(nn.Linear(widths[i], widths[i + 1], bias=b))
        if act == "relu":
            layers.append(nn.ReLU())
        elif act == "tanh":
            layers.append(nn.Tanh())
    model = nn.Sequential(*layers)
    model.register_buffer("count", torch.zeros(widths[-1]))
    return model


@given(spec=_mlp_specs(), corrupt=st.sampled_from(["none", "shape", "drop", "extra", "list"]),
       pick=st.integers(0, 100))
def test_state_dict_transfer_and_corruption(spec, corrupt, pick):
    """A state dict loads into a freshly built model and reproduces it; a
    corrupted one raises and leaves the target exactly as it was."""
    src = _build(spec)
    with torch.no_grad():
        src.count.fill_(3.0)
    dst = _build(spec)
    sd = src.state_dict()
    keys = list(sd)
    key = keys[pick % len(keys)]
    if corrupt == "shape":
        sd[key] = torch.zeros(*sd[key].shape, 2)
    elif corrupt == "drop":
        del sd[key]
    elif corrupt == "extra":
        sd[key + "_x"] = torch.zeros(1)
    elif corrupt == "list":
        sd[key] = sd[key].tolist()
    snap = _snapshot(dst)
    if corrupt == "none":
        dst.load_state_dict(sd)
        x = torch.randn(3, spec[0][0])
        assert torch.equal(dst(x), src(x)) and torch.equal(dst.count, src.count)
        return
    with pytest.raises(RuntimeError, match="Error\\(s\\) in loading state_dict for Sequential"):
        dst.load_state_dict(sd)
    assert _unchanged(dst, snap)

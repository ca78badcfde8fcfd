"""Python attributes on tensors (``t.name = "w"``), as PyTorch allows: stored in
the instance ``__dict__``, seen by the garbage collector, not carried by
``detach()``, kept by pickling and ``copy.deepcopy``."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref

import pytest

import ferrograd as fg
from ferrograd import nn


def test_plain_tensor_takes_attributes():
    t = fg.ones(3)
    assert t.__dict__ == {}
    t.name = "w"
    t.tag = [1, 2]
    assert t.name == "w" and t.tag == [1, 2]
    assert t.__dict__ == {"name": "w", "tag": [1, 2]}
    assert getattr(t, "missing", None) is None
    del t.tag
    assert not hasattr(t, "tag")
    with pytest.raises(AttributeError, match="object has no attribute 'missing'"):
        t.missing  # noqa: B018
    # A result of an op, and a tensor that requires grad, take them too.
    y = (fg.ones(2, requires_grad=True) * 2).sum()
    y.step = 3
    assert y.step == 3 and y.grad_fn is not None


def test_properties_keep_their_rules():
    t = fg.ones(2)
    with pytest.raises(AttributeError):
        t.shape = (3,)
    t.requires_grad = True  # a settable property, not an attribute
    assert t.requires_grad and "requires_grad" not in t.__dict__
    t.grad = fg.zeros(2)
    assert "grad" not in t.__dict__ and t.grad.tolist() == [0.0, 0.0]


def test_the_same_object_keeps_its_attributes():
    x = fg.ones(2, requires_grad=True)
    x.name = "x"
    (x * 3).sum().backward()
    # AccumulateGrad.variable is the tensor itself, so it has the attribute.
    y = x * 1
    assert y.grad_fn.next_functions[0][0].variable.name == "x"
    assert x.to(x.dtype) is x and x.to(x.dtype).name == "x"


def test_detach_and_ops_do_not_carry_attributes():
    # As in PyTorch: detach() and op results are new Python objects.
    x = fg.ones(2)
    x.name = "x"
    assert not hasattr(x.detach(), "name")
    assert not hasattr(x + 1, "name")
    assert not hasattr(x.clone(), "name")


def test_reference_cycle_through_an_attribute_is_collected():
    t = fg.ones(3)
    t.me = t
    t.box = {"again": t}
    r = weakref.ref(t)
    del t
    gc.collect()
    assert r() is None


def test_cycle_with_grad_fn_and_attribute_is_collected():
    x = fg.ones(3, requires_grad=True)
    y = x * 2
    y.keep = [y, x]
    ry, rx = weakref.ref(y), weakref.ref(x)
    del x, y
    gc.collect()
    assert ry() is None and rx() is None


def test_parameter_cycle_is_collected_and_uses_the_same_slot():
    p = nn.Parameter(fg.ones(2))
    p.owner = p
    p.tag = "bias"
    assert p.__dict__["tag"] == "bias"
    r = weakref.ref(p)
    del p
    gc.collect()
    assert r() is None


def test_pickle_keeps_attributes():
    t = fg.tensor([1.0, 2.0], requires_grad=True)
    t.name = "w"
    t.meta = {"lr": 0.1}
    u = pickle.loads(pickle.dumps(t))
    assert u.name == "w" and u.meta == {"lr": 0.1} and u.requires_grad
    assert u.tolist() == [1.0, 2.0]
    # Without attributes the pickle has no state.
    assert pickle.loads(pickle.dumps(fg.ones(1))).__dict__ == {}


def test_deepcopy_keeps_attributes_and_self_references():
    t = fg.tensor([1.0, 2.0])
    t.tags = ["a"]
    t.me = t
    c = copy.deepcopy(t)
    assert c.tags == ["a"] and c.tags is not t.tags
    assert c.me is c
    p = nn.Parameter(fg.ones(2))
    p.tag = "w"
    assert copy.deepcopy(p).tag == "w"
    assert pickle.loads(pickle.dumps(p)).tag == "w"


def test_module_parameters_can_be_tagged():
    m = nn.Linear(2, 2)
    for name, p in m.named_parameters():
        p.param_name = name
    assert [p.param_name for p in m.parameters()] == ["weight", "bias"]
    m2 = copy.deepcopy(m)
    assert m2.weight.param_name == "weight"

"""A transform call leaves no reference cycles behind: its tensors (per-sample
gradients can be megabytes) are freed when the call returns, not when Python's
cyclic collector happens to run. A recursive closure in the pytree walk once
kept every flattened tensor of every call alive until a collection."""

from __future__ import annotations

import gc

import pytest

import ferrograd as torch
from ferrograd import nn
from ferrograd.autograd.functional import hessian as af_hessian
from ferrograd.autograd.functional import jacobian as af_jacobian
from ferrograd.func import functional_call, grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

torch.manual_seed(0)
_model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
_params = {k: v.detach() for k, v in _model.named_parameters()}
_x, _y = torch.randn(5, 4), torch.randint(0, 3, (5,))
_v = torch.randn(4)


def _loss(p, xb, yb):
    return nn.functional.cross_entropy(functional_call(_model, p, (xb,)), yb)


def _f(t):
    return (t.sin() * t).sum()


CALLS = {
    "vmap(grad) over functional_call": lambda: vmap(grad(_loss), in_dims=(None, 0, 0))(
        _params, _x, _y
    ),
    "grad": lambda: grad(_f)(_v),
    "vjp": lambda: vjp(torch.sin, _v)[1](torch.ones(4)),
    "jvp": lambda: jvp(torch.sin, (_v,), (torch.ones(4),)),
    "jacrev": lambda: jacrev(torch.sin)(_v),
    "jacfwd": lambda: jacfwd(torch.sin)(_v),
    "hessian": lambda: hessian(_f)(_v),
    "vmap(vmap)": lambda: vmap(vmap(torch.sin))(torch.randn(2, 3, 4)),
    "autograd.functional.jacobian": lambda: af_jacobian(torch.sin, _v, vectorize=True),
    "autograd.functional.hessian": lambda: af_hessian(_f, _v),
    "load_state_dict": lambda: _model.load_state_dict(_model.state_dict()),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_call_leaves_no_cyclic_garbage(name):
    call = CALLS[name]
    call()  # first call: lazy imports and caches
    gc.collect()
    gc.disable()
    try:
        out = call()
        del out
        found = gc.collect()
    finally:
        gc.enable()
    assert found == 0, f"{name}: {found} objects were only reachable through cycles"

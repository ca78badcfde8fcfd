"""Every public function and method has a docstring that help() shows."""

from __future__ import annotations

import inspect

import pytest

import ferrograd

PENDING: set[str] = set()


def _public(obj):
    return [n for n in dir(obj) if not n.startswith("_")]


@pytest.mark.parametrize("name", [n for n in _public(ferrograd) if n not in PENDING], ids=str)
def test_module_function_has_a_docstring(name):
    obj = getattr(ferrograd, name)
    if inspect.ismodule(obj) or isinstance(obj, ferrograd.dtype) or not callable(obj):
        pytest.skip("not a function or class")
    assert (obj.__doc__ or "").strip(), f"ferrograd.{name} has no docstring"


@pytest.mark.parametrize("name", _public(ferrograd.Tensor), ids=str)
def test_tensor_member_has_a_docstring(name):
    obj = getattr(ferrograd.Tensor, name)
    assert (getattr(obj, "__doc__", None) or "").strip(), f"Tensor.{name} has no docstring"


def test_help_says_what_an_op_does():
    assert "exponential" in inspect.getdoc(ferrograd.exp)
    assert "sum of the elements" in inspect.getdoc(ferrograd.Tensor.sum)
    assert "In-place version of `exp()`" in inspect.getdoc(ferrograd.Tensor.exp_)
    assert "`prod(input, ...)` is `input.prod(...)`" in inspect.getdoc(ferrograd.prod)

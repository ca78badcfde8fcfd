"""The Tensor methods written in Python all reach the class through ``_methods.attach``,
and the stub declares every one of them (a method attached without a stub entry would
be invisible to type checkers)."""

from __future__ import annotations

import ast
from pathlib import Path

import ferrograd
from ferrograd import _methods

STUB = Path(ferrograd.__file__).with_name("_C.pyi")


def _stub_tensor_names() -> set[str]:
    tree = ast.parse(STUB.read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor"]
    names = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_every_attached_method_is_on_tensor_and_in_the_stub():
    attached = _methods.ATTACHED
    # The composed ops, the tensor-API additions, linalg's legacy methods, the
    # compatibility flags, cuda and mvlgamma.
    assert len(attached) > 100
    assert {"addmm", "index_put", "det", "cuda", "mvlgamma", "pin_memory"} <= set(attached)
    for name in attached:
        assert hasattr(ferrograd.Tensor, name), name
    missing = sorted(set(attached) - _stub_tensor_names())
    assert missing == [], missing


def test_python_methods_are_attached_only_through_the_registry():
    # Every Python function on the class came through attach (Rust methods are builtins).
    import types

    python_defined = {
        name
        for name, value in vars(ferrograd.Tensor).items()
        if isinstance(value, (types.FunctionType, property))
    }
    assert python_defined - set(_methods.ATTACHED) == set()


def test_attach_keeps_an_existing_method_unless_told_to_replace():
    before = ferrograd.Tensor.add
    _methods.attach({"add": lambda self, other: None}, "tests")
    assert ferrograd.Tensor.add is before
    assert _methods.ATTACHED.get("add") != "tests"

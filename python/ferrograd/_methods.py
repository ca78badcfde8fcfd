"""The one way Python-defined methods reach ``Tensor``.

The class is Rust's (``_C.Tensor``); the methods written in Python are kept in the
module of their topic (composed ops in ``_composite``, the tensor-API additions in
``_tensor_api``, linalg's legacy methods in ``linalg._aliases``, compatibility flags in
``_compat``, ``cuda`` in ``_device``, ``mvlgamma`` in the package), and each of those
hands its table to :func:`attach`. ``ATTACHED`` records which module set each name, so
tests can hold the stub (``_C.pyi``) to the same set.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._C import Tensor

__all__ = ["ATTACHED", "attach"]

#: Method (or attribute) name -> the module that attached it.
ATTACHED: dict[str, str] = {}


def attach(methods: Mapping[str, object], owner: str, *, replace: bool = False) -> None:
    """Sets each ``name: value`` of ``methods`` on ``Tensor``. Without ``replace`` a
    name the class already has (a Rust method, or one attached earlier) is kept: Rust's
    implementation wins where both exist."""
    for name, value in methods.items():
        if not replace and hasattr(Tensor, name):
            continue
        setattr(Tensor, name, value)
        ATTACHED[name] = owner

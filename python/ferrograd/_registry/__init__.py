"""The op registry: one declaration per public op (see ``schema.py`` for what
a declaration says). Declarations live in modules by family; this module
collects them and answers questions about them.

>>> from ferrograd._registry import op
>>> op("exp").nodes
{'ExpBackward0': ('diagonal', 'self_adjoint', 'static_vjp')}
"""

from __future__ import annotations

from . import (
    _gaps,
    arith,
    composed,
    creation,
    elementwise,
    indexing,
    linalg,
    nn_more,  # noqa: F401  (declares into nn_ops.OPS)
    nn_ops,
    products,
    reductions,
    remaining,
    utilities,
    views,
)
from .schema import AUTOCAST_POLICIES, NODE_TRAITS, Op

_FAMILIES = (elementwise, arith, reductions, products, views, indexing, nn_ops, linalg, creation,
             composed, remaining)

OPS: dict = {}
#: Every name (op or alias) -> its op.
BY_NAME: dict = {}
#: Node name -> its traits, merged over the declarations that record it.
NODES: dict = {}


def _disjoint(a, b, name: str) -> bool:
    """Whether ops `a` and `b` reach `name` on different surfaces (as PyTorch's
    `F.unfold`, im2col, and `Tensor.unfold`, sliding windows): then both may
    hold it, and `op(name)` is the one named so."""
    sa, sb = dict(a.alias_surfaces())[name], dict(b.alias_surfaces())[name]
    return not set(sa) & set(sb)


def _collect() -> None:
    for fam in _FAMILIES:
        for o in fam.OPS:
            o = _gaps.apply(o)
            if o.name in OPS:
                raise RuntimeError(f"op registry: {o.name!r} is declared twice")
            OPS[o.name] = o
            if o.autocast not in (None, *AUTOCAST_POLICIES):
                raise RuntimeError(f"op registry: {o.name}: unknown autocast policy {o.autocast!r}")
            for n in o.names:
                if n in BY_NAME and BY_NAME[n] is not o and not _disjoint(BY_NAME[n], o, n):
                    raise RuntimeError(
                        f"op registry: the name {n!r} belongs to {BY_NAME[n].name!r} and {o.name!r}"
                    )
                if n not in BY_NAME or BY_NAME[n].name != n:
                    BY_NAME[n] = o
            for node, traits in o.nodes.items():
                bad = set(traits) - set(NODE_TRAITS)
                if bad:
                    raise RuntimeError(f"op registry: {o.name}: unknown node traits {sorted(bad)}")
                if node in NODES and NODES[node] and traits and set(NODES[node]) != set(traits):
                    raise RuntimeError(
                        f"op registry: node {node} is declared with traits {NODES[node]} "
                        f"and {tuple(traits)}"
                    )
                if traits or node not in NODES:
                    NODES[node] = tuple(traits)


_collect()


def op(name: str) -> Op:
    """The declaration of the op (or alias) ``name``."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no op named {name!r} in the registry") from None


def ops() -> list:
    """Every declared op, in declaration order."""
    return list(OPS.values())


__all__ = ["BY_NAME", "NODES", "OPS", "Op", "op", "ops", "utilities"]

"""Pytrees for the function transforms: tuples, lists, dicts and namedtuples
of leaves (anything else is a leaf), as ``torch.utils._pytree`` sees them."""

from __future__ import annotations

__all__ = ["TreeSpec", "tree_flatten", "tree_unflatten", "tree_map", "broadcast_to_flat"]


class TreeSpec:
    """The structure of a pytree: a node kind, its context (dict keys or the
    namedtuple type) and the specs of its children; a leaf has kind None."""

    __slots__ = ("kind", "context", "children")

    def __init__(self, kind, context, children):
        self.kind = kind
        self.context = context
        self.children = children

    @property
    def num_leaves(self):
        """How many leaves the tree has."""
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)

    def __eq__(self, other):
        return (
            isinstance(other, TreeSpec)
            and self.kind == other.kind
            and self.context == other.context
            and self.children == other.children
        )

    def __repr__(self):
        if self.kind is None:
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children))
            return "{" + inner + "}"
        if self.kind == "list":
            return "[" + inner + "]"
        if self.kind == "namedtuple":
            return f"{self.context.__name__}({inner})"
        return "(" + inner + ("," if len(self.children) == 1 else "") + ")"


_LEAF = TreeSpec(None, None, ())


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


# The walks below are module-level functions taking their accumulator, not
# recursive closures: a closure that calls itself is a reference cycle (function
# -> cell -> function) that holds every leaf it collected, so each transform
# call's tensors would wait for the cyclic garbage collector instead of being
# freed when the call returns.


def _flatten(x, leaves):
    if _is_namedtuple(x):
        return TreeSpec("namedtuple", type(x), tuple(_flatten(v, leaves) for v in x))
    if isinstance(x, tuple):
        return TreeSpec("tuple", None, tuple(_flatten(v, leaves) for v in x))
    if isinstance(x, list):
        return TreeSpec("list", None, tuple(_flatten(v, leaves) for v in x))
    if isinstance(x, dict):
        keys = tuple(x.keys())
        return TreeSpec("dict", keys, tuple(_flatten(x[k], leaves) for k in keys))
    leaves.append(x)
    return _LEAF


def tree_flatten(tree):
    """Returns ``(leaves, spec)`` of a pytree."""
    leaves = []
    spec = _flatten(tree, leaves)
    return leaves, spec


def _unflatten(s, it):
    if s.kind is None:
        return next(it)
    vals = [_unflatten(c, it) for c in s.children]
    if s.kind == "tuple":
        return tuple(vals)
    if s.kind == "list":
        return vals
    if s.kind == "namedtuple":
        return s.context(*vals)
    return dict(zip(s.context, vals))


def tree_unflatten(leaves, spec):
    """Rebuilds the pytree of ``spec`` from its leaves, in order."""
    return _unflatten(spec, iter(leaves))


def tree_map(fn, tree):
    """Applies ``fn`` to every leaf of ``tree``."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def _broadcast_prefix(p, s, out):
    if s.kind is None:
        if isinstance(p, (tuple, list, dict)):
            return False
        out.append(p)
        return True
    if not isinstance(p, (tuple, list, dict)):
        out.extend([p] * s.num_leaves)
        return True
    if s.kind == "dict":
        if not isinstance(p, dict) or set(p.keys()) != set(s.context):
            return False
        return all(_broadcast_prefix(p[k], c, out) for k, c in zip(s.context, s.children))
    if isinstance(p, dict) or len(p) != len(s.children):
        return False
    if (s.kind == "list") != isinstance(p, list):
        return False
    return all(_broadcast_prefix(pv, c, out) for pv, c in zip(p, s.children))


def broadcast_to_flat(prefix, spec):
    """Flattens ``prefix`` (a pytree that is a prefix of ``spec``: a leaf there
    stands for the whole subtree) to one value per leaf of ``spec``; None when
    the structures do not match."""
    out = []
    return out if _broadcast_prefix(prefix, spec, out) else None

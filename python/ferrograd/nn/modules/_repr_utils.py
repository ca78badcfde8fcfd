"""Helpers for ``Module.__repr__`` and the containers' reprs."""

from __future__ import annotations

__all__: list[str] = []


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)

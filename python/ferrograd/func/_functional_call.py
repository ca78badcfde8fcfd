"""``functional_call``: a module's forward with its parameters and buffers
replaced for one call."""

from __future__ import annotations

__all__ = ["functional_call"]


def _owner(module, name):
    parts = name.split(".")
    for p in parts[:-1]:
        module = getattr(module, p)
    return module, parts[-1]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):  # fmt: skip
    """Calls ``module(*args, **kwargs)`` with the parameters and buffers named
    in ``parameter_and_buffer_dicts`` (a dict, or a tuple of dicts) replaced
    by the given values (tensors, or batched values under ``vmap``) for this
    call only; the module is restored afterwards, also when it raises.
    ``strict=True`` requires exactly the module's parameters and buffers;
    with ``tie_weights`` a value given for a shared parameter replaces it
    under every name."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        merged = dict(dicts)
    else:
        merged = {}
        for d in dicts:
            for k in d:
                if k in merged:
                    raise ValueError(
                        f"{k} appeared in multiple dictionaries; behavior of functional call "
                        "is ambiguous"
                    )
            merged.update(d)
    known = {}
    for kind, named in (("_parameters", module.named_parameters(remove_duplicate=False)),
                        ("_buffers", module.named_buffers(remove_duplicate=False))):  # fmt: skip
        for n, t in named:
            known[n] = (kind, t)
    if strict:
        missing = sorted(k for k in known if k not in merged)
        unexpected = sorted(k for k in merged if k not in known)
        if missing or unexpected:
            msg = f"Error(s) in reparametrizing for {type(module).__name__}:\n"
            if unexpected:
                msg += "\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".\n"
            if missing:
                msg += "\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".\n"
            raise RuntimeError(msg)
    if tie_weights:
        # A value given under one name of a shared tensor applies to all its names.
        by_id = {}
        for n, (_, t) in known.items():
            by_id.setdefault(id(t), []).append(n)
        for names in by_id.values():
            given = [n for n in names if n in merged]
            for n in names:
                if n not in merged and given:
                    merged[n] = merged[given[0]]
    saved = []
    try:
        for name, value in merged.items():
            owner, attr = _owner(module, name)
            kind = known[name][0] if name in known else None
            if kind is not None and attr in getattr(owner, kind):
                saved.append((owner, kind, attr, getattr(owner, kind)[attr]))
                getattr(owner, kind)[attr] = value
            else:
                saved.append((owner, None, attr, owner.__dict__.get(attr, _MISSING)))
                object.__setattr__(owner, attr, value)
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for owner, kind, attr, old in reversed(saved):
            if kind is not None:
                getattr(owner, kind)[attr] = old
            elif old is _MISSING:
                owner.__dict__.pop(attr, None)
            else:
                owner.__dict__[attr] = old


_MISSING = object()

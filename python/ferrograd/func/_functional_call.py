"""``functional_call``: a module's forward with its parameters and buffers
replaced for one call."""

from __future__ import annotations

__all__ = ["functional_call", "stack_module_state"]


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


def _stacked_leaf(tensors, name):
    from .. import _C

    all_rg = all(t.requires_grad for t in tensors)
    none_rg = all(not t.requires_grad for t in tensors)
    if not all_rg and not none_rg:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = _C.stack([t.detach() if all_rg else t for t in tensors], 0)
    if all_rg:
        result = result.detach().requires_grad_()
    return result


def stack_module_state(models):
    """``(params, buffers)``: each parameter and buffer of the models stacked
    along a new first dimension, by name, for ``vmap`` over an ensemble
    (``vmap(lambda p, b, x: functional_call(base, (p, b), (x,)))``). The
    stacked parameters are new leaves that require grad when the models'
    parameters do. The models must be of one class and in one mode."""
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    model0_typ = type(models[0])
    if not all(type(m) is model0_typ for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(model.named_parameters()) for model in models]
    params = {
        k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]
    }
    all_buffers = [dict(model.named_buffers()) for model in models]
    buffers = {
        k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]
    }
    return params, buffers

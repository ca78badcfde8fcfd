"""The op registry is complete and true: every public name is declared (as an
op, an alias, or a listed non-op), every declared surface exists, every node
kind the core records is declared, and the files generated from the
registry are up to date."""

from __future__ import annotations

import inspect
import pathlib
import re
import subprocess
import sys

import pytest

import ferrograd as fg
import ferrograd.nn.functional as F
from ferrograd import _registry
from ferrograd._registry import schema, utilities

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _declared():
    out = set()
    for op in _registry.ops():
        for name, surf in op.alias_surfaces():
            for s in surf:
                out.add((s, name))
                if s == schema.INPLACE:
                    out.add((schema.METHOD, name + "_"))
    return out


def _public():
    """``(surface, name)`` of every public callable that is not a class or module."""
    out = set()
    for n in fg.__all__:
        o = getattr(fg, n)
        if not (inspect.isclass(o) or inspect.ismodule(o)) and callable(o):
            out.add((schema.FUNCTION, n))
    for n in dir(fg.Tensor):
        if n.startswith("_"):
            continue
        a = inspect.getattr_static(fg.Tensor, n)
        # TensorAttribute: a user's attribute (`t.persistent = ...`), installed on first write.
        if type(a).__name__ not in ("getset_descriptor", "property", "TensorAttribute"):
            out.add((schema.METHOD, n))
    for mod, surf in ((F, schema.F_FUNCTION), (fg.linalg, schema.LINALG)):
        for n in dir(mod):
            o = getattr(mod, n)
            if n.startswith("_") or inspect.isclass(o) or inspect.ismodule(o) or not callable(o):
                continue
            if getattr(o, "__module__", "").startswith("ferrograd.return_types"):
                continue
            out.add((surf, n))
    return out


def test_every_public_name_is_declared():
    declared = _declared()
    listed = {(schema.FUNCTION, n) for n in utilities.names("function")}
    listed |= {(schema.METHOD, n) for n in utilities.names("method")}
    missing = sorted(_public() - declared - listed)
    assert not missing, f"{len(missing)} public names are not in the registry: {missing}"


def test_every_declared_surface_exists():
    where = {
        schema.FUNCTION: fg,
        schema.METHOD: fg.Tensor,
        schema.F_FUNCTION: F,
        schema.LINALG: fg.linalg,
    }
    absent = []
    for op in _registry.ops():
        for name, surf in op.alias_surfaces():
            for s in surf:
                target = where.get(s)
                if s == schema.INPLACE:
                    if not hasattr(fg.Tensor, name + "_"):
                        absent.append(f"Tensor.{name}_")
                elif target is not None and not hasattr(target, name):
                    absent.append(f"{s}:{name}")
    assert not absent, f"declared but missing: {absent}"


def test_every_op_has_samples_or_refuses_with_a_reason():
    bad = [op.name for op in _registry.ops() if op.sample is None and not op.refuse]
    assert not bad, bad
    for op in _registry.ops():
        for feature, why in op.refuse.items():
            assert feature in schema.FEATURES, f"{op.name}: unknown feature {feature}"
            assert isinstance(why, str) and len(why) > 10, f"{op.name}: give a reason for {feature}"


def _nodes_in_sources():
    names = set()
    for path in (ROOT / "src").rglob("*.rs"):
        names |= set(re.findall(r'"([A-Z][A-Za-z0-9]*Backward[0-9]+)"', path.read_text()))
    return names


def test_traits_name_only_recorded_nodes():
    stale = sorted(n for n in _registry.NODES if _registry.NODES[n] and n not in _nodes_in_sources())
    assert not stale, f"the registry gives traits to node kinds no source records: {stale}"


@pytest.mark.skipif(sys.version_info < (3, 9), reason="the generator needs Python 3.9+")
def test_generated_files_are_up_to_date():
    r = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_registry.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_nn_modules_all_is_the_union_of_its_submodules():
    import importlib

    import ferrograd.nn.modules as modules

    union = []
    for sub in ("activation batchnorm channelshuffle container conv distance dropout fold "
                "instancenorm lazy linear loss module normalization padding pixelshuffle "
                "pooling rnn sparse transformer upsampling").split():
        for name in importlib.import_module(f"ferrograd.nn.modules.{sub}").__all__:
            if name not in union:
                union.append(name)
    assert modules.__all__ == union


def test_every_op_pytorch_autocasts_is_declared_with_its_policy():
    """PyTorch's CPU autocast lists (tests/autocast_lists.py, from its
    documentation): every listed op ferrograd has declares that policy."""
    from autocast_lists import POLICY, PUBLIC

    where = {"function": fg, "method": fg.Tensor, "F": F, "linalg": fg.linalg}
    wrong = []
    for aten, policy in POLICY.items():
        places = PUBLIC.get(aten) or [(s, aten) for s in ("function", "method", "F")]
        for surface, name in places:
            if not hasattr(where[surface], name):
                continue
            declared = _registry.BY_NAME.get(name)
            if declared is None or declared.autocast != policy:
                got = None if declared is None else declared.autocast
                wrong.append(f"{surface}:{name} ({aten}) is {got}, PyTorch says {policy}")
    assert not wrong, wrong

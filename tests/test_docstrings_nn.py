"""Every public ``nn`` class and every public function of ``nn.functional``,
``nn.init`` and ``nn.utils`` has a docstring of its own that names each of its
arguments under ``Args:`` and shows an example; every example runs as a
doctest. ``Tensor`` methods attached from Python show their real arguments.

The names are found from the modules, not listed by hand, so a new layer or
function without documentation fails here.
"""

from __future__ import annotations

import doctest
import inspect
import re
import types
import warnings

import pytest

import ferrograd
import ferrograd.nn.functional as F
from ferrograd import nn

# Accepting anything is the documented behaviour of these (as in PyTorch):
# Identity ignores its arguments, Module and the lazy mixin pass them on to
# cooperative base classes.
TAKES_ANYTHING = {"nn.Identity", "nn.Module", "nn.LazyModuleMixin"}


def _defined_here(obj):
    return (getattr(obj, "__module__", None) or "").startswith("ferrograd")


def _public(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return sorted(set(names) | {n for n in dir(module) if not n.startswith("_")})


def _members(module, prefix, want):
    out = {}
    for name in _public(module):
        obj = getattr(module, name, None)
        if obj is None or inspect.ismodule(obj) or not want(obj) or not _defined_here(obj):
            continue
        out[f"{prefix}.{name}"] = obj
    return out


def _collect():
    found = {}
    found.update(_members(nn, "nn", inspect.isclass))
    found.update(_members(nn.parallel, "nn.parallel", inspect.isclass))
    found.update(_members(F, "F", callable))
    found.update(_members(nn.init, "nn.init", inspect.isfunction))
    found.update(_members(nn.utils, "nn.utils", callable))
    found.update(_members(nn.utils.rnn, "nn.utils.rnn", callable))
    # One object under two names (an alias) is documented once, under the
    # first name in sorted order.
    seen, unique = set(), {}
    for name in sorted(found):
        if id(found[name]) not in seen:
            seen.add(id(found[name]))
            unique[name] = found[name]
    return unique


DOCUMENTED = _collect()
NAMES = sorted(DOCUMENTED)


def test_the_enumeration_finds_the_whole_family():
    # Landmarks of each family, so a broken enumeration cannot pass silently.
    for name in ("nn.Conv2d", "nn.ReLU", "nn.CrossEntropyLoss", "nn.Sequential",
                 "nn.Parameter", "nn.parallel.DistributedDataParallel", "F.relu",
                 "F.conv2d", "F.cross_entropy", "F.interpolate", "nn.init.kaiming_uniform_",
                 "nn.utils.clip_grad_norm_", "nn.utils.rnn.pack_padded_sequence",
                 "nn.utils.rnn.PackedSequence"):  # fmt: skip
        assert name in DOCUMENTED, name
    assert sum(n.startswith("nn.") and n.count(".") == 1 for n in NAMES) >= 150
    assert sum(n.startswith("F.") for n in NAMES) >= 110


def _own_doc(obj):
    if inspect.isclass(obj):
        return vars(obj).get("__doc__") or ""
    return obj.__doc__ or ""


def _signature(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _documented_params(obj):
    """The parameters a reader must find under ``Args:`` (not ``self``, not
    the private ``_stacklevel``-style ones)."""
    sig = _signature(obj)
    if sig is None:
        return []
    return [p for p in sig.parameters.values() if p.name != "self" and not p.name.startswith("_")]


def _args_section(doc):
    """The text of the ``Args:`` section: its indented lines after the header."""
    lines = inspect.cleandoc(doc).splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(r"(Args|Arguments|Keyword args|Keyword Args):", line.strip()):
            body = []
            for nxt in lines[i + 1 :]:
                if nxt.strip() and not nxt.startswith(" "):
                    break
                body.append(nxt)
            return "\n".join(body)
    return None


@pytest.mark.parametrize("name", NAMES)
def test_has_its_own_docstring_with_args_and_an_example(name):
    obj = DOCUMENTED[name]
    doc = _own_doc(obj)
    assert doc.strip(), f"{name} has no docstring of its own (help() shows its base class's)"
    summary = inspect.cleandoc(doc).splitlines()[0]
    assert len(summary) > 10, f"{name}: the first line should say what it does: {summary!r}"
    params = _documented_params(obj)
    if params:
        section = _args_section(doc)
        assert section is not None, f"{name} takes arguments but its docstring has no Args:"
        for p in params:
            pattern = rf"^\s+\**{re.escape(p.name)}\b"
            assert re.search(pattern, section, re.M), f"{name}: Args does not describe {p.name!r}"
    assert ">>>" in doc, f"{name} has no example"


@pytest.mark.parametrize("name", NAMES)
def test_signature_names_the_arguments(name):
    if name in TAKES_ANYTHING:
        return
    sig = _signature(DOCUMENTED[name])
    assert sig is not None, f"inspect.signature fails on {name}"
    kinds = {p.kind for p in sig.parameters.values() if p.name != "self"}
    bare = {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}
    assert not kinds or kinds != bare, f"{name}{sig}: help() shows no argument names"


def _globs():
    return {"torch": ferrograd, "nn": nn, "F": F}


_PARSER = doctest.DocTestParser()
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _run_examples(name, doc):
    test = _PARSER.get_doctest(doc, _globs(), name, None, 0)
    assert test.examples, f"{name}: no example to run"
    report = []
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    # Seeded, so random draws are the same on every run; the generator's state is put
    # back afterwards, so other tests see no difference.
    state = ferrograd.get_rng_state()
    try:
        ferrograd.manual_seed(0)
        with warnings.catch_warnings():
            # Deprecated names warn when their example calls them, as they should.
            warnings.simplefilter("ignore")
            result = runner.run(test, out=report.append, clear_globs=True)
    finally:
        ferrograd.set_rng_state(state)
    assert result.failed == 0, "".join(report)
    return result.attempted


@pytest.mark.parametrize("name", NAMES)
def test_examples_run(name):
    _run_examples(name, _own_doc(DOCUMENTED[name]))


# ----- Tensor methods attached from Python ---------------------------------------------------


def _python_tensor_methods():
    out = {}
    for name in dir(ferrograd.Tensor):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(ferrograd.Tensor, name)
        fn = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
        if isinstance(fn, types.FunctionType):
            out[name] = getattr(ferrograd.Tensor, name)
    return out


TENSOR_METHODS = _python_tensor_methods()


def test_python_tensor_methods_are_found():
    assert {"scatter_", "index_add_", "addmm_", "eq_", "unsqueeze_"} <= set(TENSOR_METHODS)


@pytest.mark.parametrize("name", sorted(TENSOR_METHODS))
def test_tensor_method_shows_its_arguments(name):
    fn = TENSOR_METHODS[name]
    sig = _signature(fn)
    assert sig is not None
    rest = [p for p in sig.parameters.values() if p.name != "self"]
    bare = [p.kind for p in rest] == [inspect.Parameter.VAR_POSITIONAL,
                                      inspect.Parameter.VAR_KEYWORD]  # fmt: skip
    assert not bare, f"help(Tensor.{name}) shows {sig}"
    doc = inspect.getdoc(fn) or ""
    assert doc.strip(), f"Tensor.{name} has no docstring"
    assert not doc.startswith("In-place form of"), f"Tensor.{name}: {doc.splitlines()[0]}"
    if doc.startswith("In-place version of"):
        # The in-place forms say what they compute, with which arguments, and show it.
        assert ("Args:" in doc) == bool(rest), f"Tensor.{name}: Args does not match {sig}"
        assert ">>>" in doc, f"Tensor.{name} has no example"


def test_scatter_inplace_help_names_its_arguments():
    sig = inspect.signature(ferrograd.Tensor.scatter_)
    assert list(sig.parameters)[:4] == ["self", "dim", "index", "src"]
    doc = inspect.getdoc(ferrograd.Tensor.scatter_)
    assert "In-place version of" in doc and "Args:" in doc and ">>>" in doc


INPLACE_WITH_EXAMPLES = sorted(
    n for n, fn in TENSOR_METHODS.items() if ">>>" in (inspect.getdoc(fn) or "")
)


@pytest.mark.parametrize("name", INPLACE_WITH_EXAMPLES)
def test_tensor_method_examples_run(name):
    _run_examples(f"Tensor.{name}", inspect.getdoc(TENSOR_METHODS[name]))

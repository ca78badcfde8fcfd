"""Writes the API reference's pages from the code, before Sphinx reads the sources.

Each public module in :data:`MODULES` gets a page ``api/<module>.rst``: its
docstring, an autosummary table of its classes (one generated page each,
``api/generated/<module>.<Class>.rst``), a table of its functions and the
full description of each function, and its constants. What a module exports
is its ``__all__``, so a function added to the code appears here without an
edit. ``Tensor`` has a page of its own with every method and attribute.
"""

from __future__ import annotations

import importlib
import inspect
import types
from pathlib import Path

# (module, what the page is about), in the order of the reference's table of contents.
MODULES = [
    ("ferrograd", "tensors, creation and math functions, random numbers, settings"),
    ("ferrograd.nn", "layers, containers and losses"),
    ("ferrograd.nn.functional", "the layers as functions"),
    ("ferrograd.nn.init", "parameter initialisation"),
    ("ferrograd.nn.utils", "gradient clipping and parameter vectors"),
    ("ferrograd.nn.utils.rnn", "packed sequences"),
    ("ferrograd.nn.parallel", "data-parallel modules"),
    ("ferrograd.optim", "optimizers"),
    ("ferrograd.optim.functional", "the optimizers' update rules as functions"),
    ("ferrograd.optim.lr_scheduler", "learning-rate schedules"),
    ("ferrograd.optim.swa_utils", "stochastic weight averaging"),
    ("ferrograd.utils.data", "datasets, samplers and the DataLoader"),
    ("ferrograd.utils.checkpoint", "activation checkpointing"),
    ("ferrograd.autograd", "reverse-mode differentiation and custom Functions"),
    ("ferrograd.autograd.functional", "Jacobians, Hessians and their products"),
    ("ferrograd.autograd.forward_ad", "forward-mode differentiation"),
    ("ferrograd.autograd.graph", "the graph, its nodes and saved-tensor hooks"),
    ("ferrograd.func", "composable function transforms"),
    ("ferrograd.linalg", "linear algebra"),
    ("ferrograd.distributed", "collectives and process groups over MPI"),
    ("ferrograd.testing", "comparing tensors and checking gradients"),
    ("ferrograd.testing.strategies", "hypothesis strategies for tensors"),
    ("ferrograd.viz", "pictures of the graph"),
    ("ferrograd.random", "the random number generator"),
    ("ferrograd.__config__", "how this build was made and what it runs"),
]


def _exports(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", "") == module.__name__
        ]
    # One entry per name, in the module's own order, submodules left to their own pages.
    seen: dict[str, None] = {}
    for n in names:
        if n not in seen and not isinstance(getattr(module, n, None), types.ModuleType):
            seen[n] = None
    return list(seen)


def _underline(title: str, char: str) -> str:
    return f"{title}\n{char * len(title)}\n"


def module_page(name: str, about: str, documented: dict[int, str]) -> str:
    """The page of module ``name``; ``documented`` maps each class already given a page
    (by ``id``) to the name it was documented under, and gains this page's classes."""
    module = importlib.import_module(name)
    exports = _exports(module)
    classes = [n for n in exports if inspect.isclass(getattr(module, n))]
    functions = [
        n for n in exports if n not in classes and callable(getattr(module, n))
    ]
    data = [n for n in exports if n not in classes and n not in functions]
    if name == "ferrograd":
        # ferrograd.Tensor has its own page, with all its methods.
        classes.remove("Tensor")
    out = [_underline(name, "="), f"*{about[0].upper()}{about[1:]}.*\n"]
    out.append(f".. automodule:: {name}\n   :no-members:\n")
    out.append(f".. currentmodule:: {name}\n")
    if name == "ferrograd":
        out.append("The tensor class and its methods: :doc:`tensor`.\n")
    # A class exported by several modules has one page, under the first of them in
    # MODULES (two would describe one object twice); the others link to it.
    own = [n for n in classes if id(getattr(module, n)) not in documented]
    elsewhere = sorted((n for n in classes if n not in own), key=str.lower)
    for n in own:
        documented[id(getattr(module, n))] = f"{name}.{n}"
    if classes:
        out.append(_underline("Classes", "-"))
    if own:
        out.append(".. autosummary::\n   :toctree: generated\n   :nosignatures:\n")
        out += [f"   {n}" for n in sorted(own, key=str.lower)]
        out.append("")
    if elsewhere:
        links = ", ".join(
            f"``{n}`` (:class:`{documented[id(getattr(module, n))]}`)" for n in elsewhere
        )
        out.append(f"Also exported here: {links}.\n")
    if functions:
        out.append(_underline("Functions", "-"))
        out.append(".. autosummary::\n   :nosignatures:\n")
        ordered = sorted(functions, key=str.lower)
        out += [f"   {n}" for n in ordered]
        out.append("")
        for n in ordered:
            out.append(f".. autofunction:: {n}\n")
    if data:
        out.append(_underline("Constants", "-"))
        out.append(".. list-table::\n   :header-rows: 1\n\n   * - name\n     - value")
        for n in data:
            value = repr(getattr(module, n)).replace("\\", "\\\\").replace("`", "\\`")
            out.append(f"   * - ``{name}.{n}``\n     - ``{value}``")
        out.append("")
    return "\n".join(out) + "\n"


def tensor_page() -> str:
    import ferrograd

    members = sorted(
        (n for n in dir(ferrograd.Tensor) if not n.startswith("_")), key=str.lower
    )
    out = [
        _underline("ferrograd.Tensor", "="),
        "*The tensor: a view of shared storage, with its autograd state.*\n",
        ".. currentmodule:: ferrograd\n",
        ".. autosummary::\n   :nosignatures:\n",
        *[f"   Tensor.{n}" for n in members],
        "",
        ".. autoclass:: Tensor\n   :members:\n   :undoc-members:\n",
    ]
    return "\n".join(out) + "\n"


def write_pages(api_dir: Path) -> list[str]:
    """Write every page into ``api_dir``; returns the page names in order."""
    api_dir.mkdir(parents=True, exist_ok=True)
    pages: dict[str, str] = {"tensor": tensor_page()}
    import ferrograd

    documented: dict[int, str] = {id(ferrograd.Tensor): "ferrograd.Tensor"}
    for name, about in MODULES:
        pages[name] = module_page(name, about, documented)
    for stem, text in pages.items():
        path = api_dir / f"{stem}.rst"
        # Unchanged pages keep their time stamp, so Sphinx does not reread them.
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    # A module dropped from MODULES must not leave its page behind.
    for stale in api_dir.glob("*.rst"):
        if stale.stem not in pages:
            stale.unlink()
    return ["ferrograd", "tensor", *[n for n, _ in MODULES[1:]]]

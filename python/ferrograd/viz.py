"""``ferrograd.viz``: pictures of backward graphs, in the spirit of torchviz.

:func:`make_dot` walks ``grad_fn.next_functions`` from the given outputs and
returns a :class:`Digraph` holding Graphviz DOT text. Outputs are green, the
leaves that receive gradients blue (with their parameter names when
``params`` is given), the tensors nodes saved for backward orange
(``show_saved=True``), and views are marked with the shape of their base.
``Digraph.render`` runs Graphviz's ``dot`` program, which is the only thing
drawing needs; without it, ``source`` still gives the DOT text.

Graphs with more than ``max_nodes`` nodes are summarised: one box per kind of
node with its count, and the edges between kinds with theirs, so a model
unrolled over thousands of steps still gives a readable picture.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from . import _C
from .autograd.graph import AccumulateGrad, walk

__all__ = ["Digraph", "make_dot", "GraphvizNotFoundError"]

_OUTPUT = "darkolivegreen1"
_LEAF = "lightblue"
_SAVED = "orange"
_VIEW = "lightgrey"

_INSTALL_HINT = (
    "Graphviz's `dot` program was not found on PATH, so the graph cannot be drawn. "
    "Install Graphviz: `apt-get install graphviz` (Debian/Ubuntu), `dnf install graphviz` "
    "(Fedora), `brew install graphviz` (macOS) or `conda install graphviz`. "
    "The DOT text is available without it as `.source`."
)


class GraphvizNotFoundError(RuntimeError):
    """Raised by :meth:`Digraph.render` when Graphviz's ``dot`` is not installed."""


def _quote(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(attrs):
    if not attrs:
        return ""
    return " [" + " ".join(f"{k}={_quote(v)}" for k, v in attrs.items()) + "]"


class Digraph:
    """A directed graph as Graphviz DOT text: what :func:`make_dot` returns.

    ``source`` is the DOT text; ``render(path, format="svg")`` writes a
    picture with Graphviz's ``dot``; ``save(path)`` writes the DOT text.
    """

    def __init__(self, name="ferrograd", graph_attr=None, node_attr=None):
        self.name = name
        self.graph_attr = dict(graph_attr or {})
        self.node_attr = dict(node_attr or {})
        self.body = []

    def node(self, name, label=None, **attrs):
        if label is not None:
            attrs = {"label": label, **attrs}
        self.body.append(f"\t{_quote(name)}{_attrs(attrs)}")

    def edge(self, tail, head, **attrs):
        self.body.append(f"\t{_quote(tail)} -> {_quote(head)}{_attrs(attrs)}")

    def subgraph_lines(self, lines):
        self.body.extend(lines)

    @property
    def source(self):
        lines = [f"digraph {_quote(self.name)} {{"]
        if self.graph_attr:
            lines.append(f"\tgraph{_attrs(self.graph_attr)}")
        if self.node_attr:
            lines.append(f"\tnode{_attrs(self.node_attr)}")
        lines.extend(self.body)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def __str__(self):
        return self.source

    def save(self, filename):
        """Writes the DOT text to ``filename`` and returns the path."""
        with open(filename, "w", encoding="utf-8") as f:
            f.write(self.source)
        return filename

    def pipe(self, format="svg"):
        """The picture as bytes, drawn by Graphviz's ``dot``."""
        dot = shutil.which("dot")
        if dot is None:
            raise GraphvizNotFoundError(_INSTALL_HINT)
        proc = subprocess.run(
            [dot, f"-T{format}"], input=self.source.encode(), capture_output=True, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"dot failed: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout

    def render(self, filename="graph", format=None, cleanup=True):
        """Draws the graph with Graphviz's ``dot`` into ``filename``.

        The format comes from ``format`` or else from the file's extension
        (``graph.svg``, ``graph.png``); a name without one gets ``.svg``. The
        file is written atomically. Returns the path written.
        """
        filename = os.fspath(filename)
        root, ext = os.path.splitext(filename)
        if format is None:
            format = ext[1:] if ext else "svg"
        if not ext:
            filename = f"{root}.{format}"
        data = self.pipe(format)
        directory = os.path.dirname(os.path.abspath(filename))
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".viz-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            # mkstemp makes the file private; give it the mode a plain open() would.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, filename)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        if not cleanup:
            self.save(f"{root}.dot")
        return filename

    def _repr_svg_(self):
        try:
            return self.pipe("svg").decode()
        except GraphvizNotFoundError:
            return None


def _size(shape):
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _dtype(t):
    return str(t.dtype).replace("ferrograd.", "")


def _human(n):
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _flatten_outputs(var):
    if isinstance(var, _C.Tensor):
        return [("output", var)]
    if isinstance(var, dict):
        return [(str(k), v) for k, v in var.items() if isinstance(v, _C.Tensor)]
    if isinstance(var, (list, tuple)):
        return [(f"output {i}", v) for i, v in enumerate(var) if isinstance(v, _C.Tensor)]
    raise TypeError(f"make_dot expects a Tensor or a sequence of Tensors, got {type(var).__name__}")


def _legend(dot, show_saved):
    items = [
        ("legend_out", "output", _OUTPUT),
        ("legend_leaf", "leaf (gets .grad)", _LEAF),
        ("legend_op", "backward node", "white"),
    ]
    if show_saved:
        items.append(("legend_saved", "saved tensor", _SAVED))
    items.append(("legend_view", "view base", _VIEW))
    lines = ['\tsubgraph "cluster_legend" {', '\t\tlabel="legend"; fontsize=10; color=grey;']
    for name, label, color in items:
        lines.append(
            f"\t\t{_quote(name)} [label={_quote(label)} shape=box style=filled "
            f"fillcolor={_quote(color)} fontsize=9 height=0.2]"
        )
    for a, b in zip(items, items[1:]):
        lines.append(f"\t\t{_quote(a[0])} -> {_quote(b[0])} [style=invis]")
    lines.append("\t}")
    dot.subgraph_lines(lines)


def make_dot(var, params=None, show_attrs=False, show_saved=False, max_nodes=400, legend=True):
    """The backward graph of ``var`` (a tensor, or a list/tuple/dict of them) as a
    :class:`Digraph`.

    ``params`` maps names to tensors (``dict(model.named_parameters())``) so
    leaves are labelled with their names. ``show_saved`` adds the tensors each
    node keeps for its backward, with their shapes and sizes (``show_attrs`` is
    torchviz's name for the same thing and is accepted as an alias). Graphs of
    more than ``max_nodes`` nodes are summarised by kind of node.
    """
    show_saved = show_saved or show_attrs
    outputs = _flatten_outputs(var)
    if params is not None:
        if not isinstance(params, dict):
            params = dict(params)
        for name, p in params.items():
            if not isinstance(p, _C.Tensor):
                raise TypeError(f"params[{name!r}] is {type(p).__name__}, not a Tensor")
        param_names = {id(p): name for name, p in params.items()}
    else:
        param_names = {}

    nodes = []
    index = {}
    truncated = False
    for fn in walk([t for _, t in outputs]):
        index[fn] = len(nodes)
        nodes.append(fn)
        if len(nodes) > max_nodes:
            truncated = True
            break

    dot = Digraph(
        graph_attr={"rankdir": "BT", "size": "14,24", "ranksep": "0.3"},
        node_attr={
            "style": "filled",
            "shape": "box",
            "align": "left",
            "fontsize": "10",
            "height": "0.2",
            "fontname": "monospace",
            "fillcolor": "white",
        },
    )
    if truncated:
        _summary(dot, outputs)
    else:
        _draw(dot, outputs, nodes, index, param_names, show_saved)
    if legend:
        _legend(dot, show_saved)
    return dot


def _leaf_label(t, param_names):
    name = param_names.get(id(t))
    head = name if name is not None else "leaf"
    return f"{head}\n{_size(t.shape)} {_dtype(t)}"


def _draw(dot, outputs, nodes, index, param_names, show_saved):
    def nid(fn):
        return f"n{index[fn]}"

    for i, fn in enumerate(nodes):
        name = nid(fn)
        if isinstance(fn, AccumulateGrad):
            dot.node(name, _leaf_label(fn.variable, param_names), fillcolor=_LEAF)
        else:
            label = fn.name()
            shapes = fn._output_shapes
            if len(shapes) > 1:
                label += f"\n{len(shapes)} outputs"
            dot.node(name, label)
            if show_saved:
                try:
                    saved = fn._saved_tensors
                except RuntimeError:
                    saved = None
                if saved is None:
                    dot.node(f"s{i}", "saved tensors freed", fillcolor=_SAVED, fontsize="8")
                    dot.edge(f"s{i}", name, style="dashed")
                else:
                    for k, t in enumerate(saved):
                        sname = f"s{i}_{k}"
                        nbytes = t.numel() * t.dtype.itemsize
                        dot.node(
                            sname,
                            f"saved {k}\n{_size(t.shape)} {_dtype(t)}\n{_human(nbytes)}",
                            fillcolor=_SAVED,
                        )
                        dot.edge(sname, name, style="dashed", arrowhead="none")
        for nxt, nr in fn.next_functions:
            if nxt is None or nxt not in index:
                continue
            attrs = {}
            if not isinstance(nxt, AccumulateGrad) and len(nxt._output_shapes) > 1:
                attrs["label"] = f" {nr}"
                attrs["fontsize"] = "8"
            dot.edge(nid(nxt), name, **attrs)

    for k, (label, t) in enumerate(outputs):
        oname = f"out{k}"
        text = f"{label}\n{_size(t.shape)} {_dtype(t)}"
        dot.node(oname, text, fillcolor=_OUTPUT)
        fn = t.grad_fn
        if fn is not None and fn in index:
            dot.edge(nid(fn), oname)
        base = t._base
        if base is not None:
            bname = f"base{k}"
            dot.node(bname, f"view of base\n{_size(base.shape)} {_dtype(base)}", fillcolor=_VIEW)
            dot.edge(bname, oname, style="dotted", arrowhead="none")


def _summary(dot, outputs):
    # Counting a huge graph is cheap; drawing it node by node is not readable.
    counts = {}
    edges = {}
    total = 0
    for fn in walk([t for _, t in outputs]):
        kind = "AccumulateGrad (leaves)" if isinstance(fn, AccumulateGrad) else fn.name()
        counts[kind] = counts.get(kind, 0) + 1
        total += 1
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            src = "AccumulateGrad (leaves)" if isinstance(nxt, AccumulateGrad) else nxt.name()
            edges[(src, kind)] = edges.get((src, kind), 0) + 1
    dot.graph_attr["label"] = f"summary of a graph of {total} nodes (one box per kind of node)"
    dot.graph_attr["labelloc"] = "t"
    names = {kind: f"k{i}" for i, kind in enumerate(counts)}
    for kind, n in counts.items():
        fill = _LEAF if kind.startswith("AccumulateGrad") else "white"
        dot.node(names[kind], f"{kind}\nx {n}", fillcolor=fill)
    for (a, b), n in edges.items():
        dot.edge(names[a], names[b], label=f" {n}", fontsize="8")
    for k, (label, t) in enumerate(outputs):
        oname = f"out{k}"
        dot.node(oname, f"{label}\n{_size(t.shape)} {_dtype(t)}", fillcolor=_OUTPUT)
        if t.grad_fn is not None:
            dot.edge(names[t.grad_fn.name()], oname)

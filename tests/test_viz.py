"""Graph pictures (``ferrograd.viz.make_dot``) and saved-tensor memory summaries."""

from __future__ import annotations

import re
import shutil

import pytest

import ferrograd as fg
from ferrograd import nn
from ferrograd.autograd.graph import saved_tensors_summary, walk
from ferrograd.viz import GraphvizNotFoundError, make_dot

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot is not installed (apt-get install graphviz; CI installs it)",
)


def labels(dot):
    return re.findall(r'label="((?:[^"\\]|\\.)*)"', dot.source)


def edges(dot):
    return re.findall(r'"(\w+)" -> "(\w+)"', dot.source)


def test_nodes_outputs_and_named_leaves():
    w = fg.ones(3, 2, requires_grad=True)
    b = fg.zeros(2, requires_grad=True)
    x = fg.ones(4, 3)
    y = (x @ w + b).tanh().sum()
    dot = make_dot(y, params={"w": w, "b": b})
    text = labels(dot)
    assert "output\\n() float32" in text
    assert "w\\n(3, 2) float32" in text
    assert "b\\n(2) float32" in text
    for name in ("SumBackward0", "TanhBackward0", "AddBackward0", "MmBackward0"):
        assert name in text
    # Edges run forward: from each leaf towards the output.
    ids = dict(re.findall(r'"(\w+)" \[label="([^\\"]+)', dot.source))
    named = {(ids.get(a), ids.get(b)) for a, b in edges(dot)}
    assert ("w", "MmBackward0") in named
    assert ("b", "AddBackward0") in named
    assert ("TanhBackward0", "SumBackward0") in named


def test_a_leaf_reached_twice_is_one_node():
    x = fg.ones(3, requires_grad=True)
    y = (x * x + x).sum()
    dot = make_dot(y, params={"x": x})
    assert sum(1 for t in labels(dot) if t.startswith("x\\n")) == 1
    # x feeds MulBackward0 twice and AddBackward0 once.
    leaf = [
        n
        for n, lab in re.findall(r'"(\w+)" \[label="([^"]+)"', dot.source)
        if lab.startswith("x\\n")
    ]
    assert len([e for e in edges(dot) if e[0] == leaf[0]]) == 3


def test_unnamed_leaves_and_integer_inputs():
    x = fg.ones(2, 2, requires_grad=True)
    y = x.gather(1, fg.tensor([[0], [1]])).sum()
    text = labels(make_dot(y))
    assert "leaf\\n(2, 2) float32" in text
    assert "GatherBackward0" in text


def test_show_saved_lists_sizes_and_freed_state():
    x = fg.ones(8, 4, dtype=fg.float64, requires_grad=True)
    y = x.exp().sum()
    text = labels(make_dot(y, show_saved=True))
    assert "saved 0\\n(8, 4) float64\\n256 B" in text
    y.backward()
    text = labels(make_dot(y, show_saved=True))
    assert "saved tensors freed" in text
    assert not any(t.startswith("saved 0") for t in text)


def test_show_attrs_is_an_alias_of_show_saved():
    x = fg.ones(3, requires_grad=True)
    y = x.sin().sum()
    assert make_dot(y, show_attrs=True).source == make_dot(y, show_saved=True).source


def test_multi_output_nodes_label_their_outputs():
    x = fg.arange(6.0).requires_grad_()
    a, b, c = x.split(2)
    y = (a * 1 + c * 2).sum()
    dot = make_dot(y)
    text = labels(dot)
    assert "SplitBackward0\\n3 outputs" in text
    # The edges leaving the split node are labelled with the output they carry.
    assert " 0" in text and " 2" in text


def test_view_outputs_show_their_base():
    x = fg.ones(2, 3, requires_grad=True)
    v = (x * 2).t()
    text = labels(make_dot(v))
    assert "view of base\\n(2, 3) float32" in text
    assert "output\\n(3, 2) float32" in text


def test_custom_function_nodes():
    class Cube(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    x = fg.ones(5, requires_grad=True)
    y = Cube.apply(x).sum()
    text = labels(make_dot(y, show_saved=True))
    assert "CubeBackward" in text
    assert "saved 0\\n(5) float32\\n20 B" in text


def test_several_outputs_and_dicts():
    x = fg.ones(2, requires_grad=True)
    dot = make_dot({"loss": (x * 2).sum(), "aux": x.exp()})
    text = labels(dot)
    assert "loss\\n() float32" in text and "aux\\n(2) float32" in text
    assert text.count("leaf\\n(2) float32") == 1


def test_module_parameters_are_named():
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    params = {f"{i}.{n}": p for i, m in enumerate(model) for n, p in m._parameters.items()}
    y = model(fg.ones(5, 4)).sum()
    text = labels(make_dot(y, params=params))
    for name in ("0.weight\\n(3, 4) float32", "0.bias\\n(3) float32", "2.weight\\n(2, 3) float32"):
        assert name in text


def test_huge_graphs_are_summarised_by_kind():
    x = fg.ones(2, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0001
    dot = make_dot(y.sum(), max_nodes=200)
    src = dot.source
    assert "summary of a graph of 3002 nodes" in src
    assert "MulBackward0\\nx 3000" in src
    assert "AccumulateGrad (leaves)\\nx 1" in src
    assert len(src) < 5000


def test_bad_arguments():
    x = fg.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="Tensor"):
        make_dot(3.0)
    with pytest.raises(TypeError, match="params\\['w'\\]"):
        make_dot(x * 2, params={"w": 1.0})


def test_a_tensor_outside_any_graph_draws_only_itself():
    dot = make_dot(fg.ones(3))
    assert "output\\n(3) float32" in labels(dot)
    assert not [e for e in edges(dot) if not e[0].startswith("legend")]


@needs_dot
def test_render_svg_and_png(tmp_path):
    x = fg.ones(3, requires_grad=True)
    dot = make_dot((x.exp() * x).sum(), params={"x": x}, show_saved=True)
    svg = dot.render(tmp_path / "g.svg")
    text = open(svg, encoding="utf-8").read()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "ExpBackward0" in text
    png = dot.render(tmp_path / "g", format="png")
    assert png.endswith("g.png")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_render_without_graphviz_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    dot = make_dot(fg.ones(1, requires_grad=True) * 2)
    with pytest.raises(GraphvizNotFoundError, match="apt-get install graphviz"):
        dot.render(tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()
    dot.save(tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text().startswith('digraph "ferrograd"')


# ----- saved_tensors_summary ------------------------------------------------------------


def test_summary_counts_bytes_per_node():
    x = fg.ones(10, 10, dtype=fg.float64, requires_grad=True)
    w = fg.ones(10, 5, dtype=fg.float64, requires_grad=True)
    h = (x @ w).tanh()  # mm saves x and w; tanh saves its output
    s = saved_tensors_summary(h.sum())
    rows = {name: (count, nbytes) for name, count, nbytes, _ in s.rows}
    assert rows["MmBackward0"] == (2, 800 + 400)
    assert rows["TanhBackward0"] == (1, 400)
    assert s.total_bytes == 1600
    assert s.unique_bytes == 1600
    assert s.by_op()[0] == ("MmBackward0", 1200)
    assert "MmBackward0" in str(s) and "1.6 KiB" in str(s)


def test_summary_counts_a_shared_buffer_once():
    x = fg.ones(100, requires_grad=True)
    y = x * x  # MulBackward0 saves x twice: one buffer
    s = saved_tensors_summary(y)
    assert s.total_bytes == 800
    assert s.unique_bytes == 400


def test_summary_after_backward_holds_nothing():
    x = fg.ones(100, requires_grad=True)
    y = x.exp().sum()
    assert saved_tensors_summary(y).total_bytes == 400
    y.backward()
    s = saved_tensors_summary(y)
    assert s.total_bytes == 0 and s.released_nodes == 1


def test_walk_visits_each_node_once_iteratively():
    x = fg.ones(1, requires_grad=True)
    y = x
    for _ in range(20000):
        y = y + 1
    nodes = list(walk(y))
    assert len(nodes) == 20001
    assert len(set(nodes)) == 20001

"""ARCHITECTURE.md's worked example stays true: every code snippet of the
"Adding an op" section is in the source file the text names."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _section():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    start = text.index("### Adding an op: a worked example")
    return text[start : text.index("\n## ", start)]


def _normalise(code):
    return "\n".join(line.strip() for line in code.strip().splitlines())


def test_each_snippet_is_in_its_file():
    section = _section()
    blocks = []
    for item in re.split(r"\n\d+\. ", section)[1:]:
        code = re.search(r"```(?:rust|python)\n(.*?)```", item, re.S)
        if code:
            path = re.search(r"`([\w/.]+\.(?:rs|py))`", item).group(1)
            blocks.append((path, code.group(1)))
    assert len(blocks) == 2, "the example names a file before each of its two snippets"
    for path, code in blocks:
        source = _normalise((ROOT / path).read_text())
        assert _normalise(code) in source, f"the snippet for {path} is not in it"


def test_the_example_op_is_declared_and_generated():
    from ferrograd import _registry

    op = _registry.op("sinh")
    assert op.impl == "table:unary:ops::sinh" and "SinhBackward0" in op.nodes
    table = (ROOT / "src" / "py" / "ops_table.rs").read_text()
    assert re.search(r"unary\s+sinh\(\)\s+\[method function inplace\(sinh_\)\] = ops::sinh", table)

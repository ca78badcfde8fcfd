"""Writes python/ferrograd/_C.pyi from the op table and the hand-written stub.

The regular ops are one line each in src/py/ops_table.rs (the syntax is in
src/py/table.rs); their stub lines follow from the line's kind, argument and
surfaces. Everything else (classes, aliases, irregular methods and functions)
is written by hand in tools/stub/_C.pyi.in, which has three markers the
generated text replaces:

* ``# @generated: __all__``: every module-level name of the finished stub;
* ``# @generated: Tensor methods``: the table's methods, inside ``class Tensor``;
* ``# @generated: functions``: the table's module functions.

It also fills two marked blocks of python/ferrograd/__init__.py: the import
of the table's module functions from ``_C`` and their ``__all__`` entries.

Run ``python tools/gen_stub.py`` after changing either input; ``--check``
exits with status 1 when _C.pyi or __init__.py is not what it would write
(tests/test_stub_generated.py runs it in CI).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "src" / "py" / "ops_table.rs"
TEMPLATE = ROOT / "tools" / "stub" / "_C.pyi.in"
STUB = ROOT / "python" / "ferrograd" / "_C.pyi"
INIT = ROOT / "python" / "ferrograd" / "__init__.py"

LINE = re.compile(
    r"^\s*(?P<kind>unary|binary_like|binary|product)\s+(?P<name>\w+)\((?P<arg>\w*)\)\s*"
    r"\[(?P<surf>[^\]]*)\]\s*=\s*(?P<op>[\w:]+)\s*,\s*\"(?P<doc>(?:[^\"\\]|\\.)*)\"\s*;",
    re.M,
)
INPLACE = re.compile(r"inplace\((\w+)\)")


def table_lines(text: str) -> list[dict[str, str]]:
    """The table's lines as dicts (kind, name, arg, surf, op, doc)."""
    body = text[text.index("op_table! {") :]
    rows = [m.groupdict() for m in LINE.finditer(body)]
    # Every non-comment line inside the invocation must have parsed.
    inner = body[body.index("{") + 1 : body.rindex("}")]
    lines = [ln for ln in inner.splitlines() if ln.strip() and not ln.strip().startswith("//")]
    if len(lines) != len(rows):
        bad = [ln for ln in lines if not LINE.match(ln)]
        raise SystemExit(f"gen_stub: cannot parse table line(s): {bad}")
    return rows


def method_lines(rows: list[dict[str, str]]) -> list[str]:
    out = []
    for r in rows:
        surf = r["surf"].split()
        if "method" in surf:
            if r["kind"] == "unary":
                out.append(f"def {r['name']}(self) -> Tensor: ...")
            elif r["kind"] == "binary_like":
                out.append(f"def {r['name']}(self, {r['arg']}: _TensorLike) -> Tensor: ...")
            else:
                out.append(f"def {r['name']}(self, {r['arg']}: Tensor) -> Tensor: ...")
        for inplace in INPLACE.findall(r["surf"]):
            out.append(f"def {inplace}(self) -> Self: ...")
    return out


def function_lines(rows: list[dict[str, str]]) -> list[str]:
    out = []
    for r in rows:
        if "function" not in r["surf"].split():
            continue
        if r["kind"] == "unary":
            out.append(f"def {r['name']}(input: Tensor) -> Tensor: ...")
        else:
            out.append(
                f"def {r['name']}(input: _TensorLike, {r['arg']}: _TensorLike) -> Tensor: ..."
            )
    return out


TOP_NAME = re.compile(r"^(?:def (\w+)|class (\w+)|(\w+): (?:dtype|Generator|_str)$)", re.M)


def render(table_text: str, template: str) -> str:
    rows = table_lines(table_text)
    methods = "\n".join("    " + ln for ln in method_lines(rows))
    functions = "\n".join(function_lines(rows))
    text = template.replace("    # @generated: Tensor methods", methods)
    text = text.replace("# @generated: functions", functions)
    names: list[str] = []
    for m in TOP_NAME.finditer(text):
        name = next(g for g in m.groups() if g)
        if name not in names:
            names.append(name)
    all_block = "__all__ = [\n" + "".join(f'    "{n}",\n' for n in names) + "]"
    text = text.replace("# @generated: __all__", all_block)
    if "# @generated" in text:
        raise SystemExit("gen_stub: a marker was not replaced (check its indentation)")
    return text


def _fill(text: str, marker: str, body: str) -> str:
    """Replaces what lies between ``# @generated-begin: MARKER`` and its end line."""
    begin = f"# @generated-begin: {marker}\n"
    end = f"# @generated-end: {marker}\n"
    i = text.index(begin)
    j = text.index(end, i)
    return text[: i + len(begin)] + body + text[j:]


def _natural(name: str) -> list:
    """Sort key with digit runs compared as numbers (``log2`` before ``log10``), the
    order ruff's import sorting expects."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def render_init(table_text: str, init_text: str) -> str:
    """``__init__.py`` with the table's module functions imported from ``_C`` and
    listed in ``__all__`` (two marked blocks; the rest of the file is by hand)."""
    names = sorted(
        (r["name"] for r in table_lines(table_text) if "function" in r["surf"].split()),
        key=_natural,
    )
    imports = "from ._C import (  # noqa: E402\n" + "".join(f"    {n},\n" for n in names) + ")\n\n"
    text = _fill(init_text, "op table imports", imports)
    listed = "__all__ += [\n" + "".join(f'    "{n}",\n' for n in names) + "]\n"
    return _fill(text, "op table __all__", listed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if _C.pyi is stale")
    args = ap.parse_args()
    table = TABLE.read_text()
    outputs = {
        STUB: render(table, TEMPLATE.read_text()),
        INIT: render_init(table, INIT.read_text()),
    }
    if args.check:
        stale = [p for p, text in outputs.items() if p.read_text() != text]
        for p in stale:
            print(
                f"{p.relative_to(ROOT)} is stale: run `python tools/gen_stub.py`", file=sys.stderr
            )
        return 1 if stale else 0
    for p, text in outputs.items():
        p.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

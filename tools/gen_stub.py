"""Writes python/ferrograd/_C.pyi from the op table and the hand-written stub.

The regular ops are one line each in src/py/ops_table.rs (the syntax is in
src/py/table.rs); their stub lines follow from the line's kind, argument and
surfaces. Everything else (classes, aliases, irregular methods and functions)
is written by hand in tools/stub/_C.pyi.in, which has three markers the
generated text replaces:

* ``# @generated: __all__``: every module-level name of the finished stub;
* ``# @generated: Tensor methods``: the table's methods, inside ``class Tensor``;
* ``# @generated: functions``: the table's module functions.

Run ``python tools/gen_stub.py`` after changing either input; ``--check``
exits with status 1 when python/ferrograd/_C.pyi is not what it would write
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


TOP_NAME = re.compile(r"^(?:def (\w+)|class (\w+)|(\w+): (?:dtype|Generator)$)", re.M)


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if _C.pyi is stale")
    args = ap.parse_args()
    text = render(TABLE.read_text(), TEMPLATE.read_text())
    if args.check:
        if STUB.read_text() != text:
            print(
                f"{STUB.relative_to(ROOT)} is stale: run `python tools/gen_stub.py`",
                file=sys.stderr,
            )
            return 1
        return 0
    STUB.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The annotations users see through mypy (``py.typed``, ``_C.pyi`` and the annotated
Python layer): an ordinary training script type-checks, the revealed types of the
common objects are the precise ones (no ``Any``), and real misuses are errors.

The scripts are in tests/typing_cases/; each is checked by mypy in a subprocess
(default options, strict off, as a user would run it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).resolve().parent / "typing_cases"
# The examples that are plain training scripts.
EXAMPLES = ["train_spirals.py", "digits.py", "fit_line.py"]

pytestmark = pytest.mark.slow


def _public_names() -> list[str]:
    import ferrograd

    return list(ferrograd.__all__)


@pytest.fixture(scope="module")
def all_names_script(tmp_path_factory) -> Path:
    """One attribute access per name in ``ferrograd.__all__``, generated at run time, so a
    name attached to the module only when it runs (invisible to type checkers) fails."""
    path = tmp_path_factory.mktemp("typing") / "all_names.py"
    body = "".join(f"_{i} = ferrograd.{n}\n" for i, n in enumerate(_public_names()))
    path.write_text("import ferrograd\n\n" + body)
    return path


@pytest.fixture(scope="module")
def mypy_output(all_names_script) -> tuple[int, str]:
    """One mypy run over every case and the examples (a run costs seconds)."""
    pytest.importorskip("mypy", reason="mypy is not installed (pip install '.[test]')")
    paths = [CASES / n for n in ("train_ok.py", "reveal.py", "errors.py")]
    paths.append(all_names_script)
    paths += [ROOT / "examples" / name for name in EXAMPLES]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--no-error-summary",
            "--show-error-codes",
            "--hide-error-context",
            # digits.py uses scikit-learn and tqdm, which ship no type information.
            "--ignore-missing-imports",
            *map(str, paths),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _messages(out: str, path: Path) -> dict[int, list[str]]:
    by_line: dict[int, list[str]] = {}
    for m in re.finditer(rf"^.*{re.escape(path.name)}:(\d+): (.*)$", out, re.M):
        by_line.setdefault(int(m.group(1)), []).append(m.group(2))
    return by_line


def test_a_training_script_type_checks(mypy_output):
    code, out = mypy_output
    assert "Traceback" not in out and code in (0, 1), out
    assert _messages(out, CASES / "train_ok.py") == {}, out


def test_revealed_types_are_precise(mypy_output):
    path = CASES / "reveal.py"
    _, out = mypy_output
    got = _messages(out, path)
    expected = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("reveal_type("):
            expected[i] = line.split("  # ", 1)[1].strip()
    assert len(expected) >= 30
    for line, want in expected.items():
        assert not [m for m in got.get(line, []) if m.startswith("error:")], got[line]
        notes = [m for m in got.get(line, []) if m.startswith("note: Revealed type is")]
        assert notes == [f'note: Revealed type is "{want}"'], (line, want, got.get(line))


def test_misuses_are_errors(mypy_output):
    path = CASES / "errors.py"
    code, out = mypy_output
    assert code == 1, out
    got = _messages(out, path)
    expected = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if "  # E: " in line:
            expected[i] = line.split("  # E: ", 1)[1].strip()
    assert len(expected) >= 10
    for line, errcode in expected.items():
        errors = [m for m in got.get(line, []) if m.startswith("error:")]
        assert errors and all(m.endswith(f"[{errcode}]") for m in errors), (
            line,
            errcode,
            got.get(line),
        )
    # Nothing else is reported: every error is one the script expects.
    assert set(got) <= set(expected), {k: v for k, v in got.items() if k not in expected}


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_training_examples_type_check(mypy_output, name):
    _, out = mypy_output
    assert _messages(out, ROOT / "examples" / name) == {}, out


def test_every_public_name_is_visible_to_mypy(mypy_output, all_names_script):
    _, out = mypy_output
    names = _public_names()
    assert len(names) > 400
    got = _messages(out, all_names_script)
    # Line i + 3 of the script reads names[i].
    missing = {names[line - 3]: msgs for line, msgs in got.items()}
    assert missing == {}, missing

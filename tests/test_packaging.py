"""What a package index needs: metadata, license, changelog, typing markers, and (when
``tools/build-wheel`` has run, as CI does before the suite) a wheel in ``dist/`` that is
abi3, tagged manylinux2014 and carries all of it."""

from __future__ import annotations

import os
import re
import tarfile
import zipfile
from pathlib import Path

import pytest

import ferrograd

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def project_table() -> str:
    return (ROOT / "pyproject.toml").read_text().split("[project]")[1].split("\n[build")[0]


def test_metadata_an_index_needs():
    project = project_table()
    assert 'license = "MIT"' in project and 'license-files = ["LICENSE"]' in project
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    for classifier in ("Programming Language :: Python :: 3", "Operating System :: POSIX :: Linux",
                       "Typing :: Typed", "Programming Language :: Rust"):
        assert f'"{classifier}"' in project, classifier
    assert "[project.urls]" in project
    assert re.search(r'^readme = "README.md"', project, re.M)


def test_the_changelog_names_the_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{ferrograd.__version__}]" in changelog
    assert "## [Unreleased]" in changelog


def test_the_package_is_typed():
    package = Path(ferrograd.__file__).parent
    assert (package / "py.typed").exists() and (package / "_C.pyi").exists()


def test_the_test_requirements_match_the_test_extra():
    # The README's test command installs tests/requirements.txt beside an installed
    # ferrograd; `pip install ".[test]"` installs the extra: the two lists are one.
    extra = re.search(r"^test = \[(.*?)\n\]", project_table(), re.M | re.S)
    assert extra is not None
    listed = re.findall(r'"([^"]+)"', extra.group(1))
    lines = (ROOT / "tests" / "requirements.txt").read_text().splitlines()
    required = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
    assert required == listed


def test_the_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    command = re.findall(r"```sh\n(.*?)```", readme, re.S)[1].strip()
    ci = (ROOT / ".ci" / "run").read_text().replace(" --quiet", "").replace(" -q\n", "\n")
    assert command.replace("pip ", "python3 -m pip ").replace("python -m", "python3 -m") in ci


def test_the_docs_extra_builds_the_site():
    docs = re.search(r"^docs = \[(.*?)\]", project_table(), re.M | re.S)
    assert docs is not None
    for dep in ("sphinx", "pydata-sphinx-theme", "myst-parser"):
        assert f'"{dep}' in docs.group(1), dep


def test_readme_stays_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    # Exactly the two set-up commands a newcomer copies.
    commands = re.findall(r"```sh\n(.*?)```", readme, re.S)
    assert commands == ['pip install ".[examples]" && python examples/digits.py\n',
                        'pip install -r tests/requirements.txt && python -m pytest\n']
    # Its links into the documentation resolve.
    for target in re.findall(r"\]\(((?:docs/|CHANGELOG|LICENSE)[^)#]*)", readme):
        assert (ROOT / target).exists(), target


def _built(pattern: str) -> Path:
    found = sorted(DIST.glob(pattern)) if DIST.exists() else []
    if not found:
        if IN_CI:
            pytest.fail(f"CI runs tools/build-wheel before the suite; no {pattern} in dist/")
        pytest.skip(f"no {pattern} in dist/ (run tools/build-wheel)")
    return found[-1]


def test_the_wheel_is_abi3_manylinux2014_and_complete():
    wheel = _built("ferrograd-*.whl")
    version = ferrograd.__version__
    name, ver, python, abi, platforms = wheel.name.removesuffix(".whl").split("-")
    assert (name, ver, python, abi) == ("ferrograd", version, "cp39", "abi3"), wheel.name
    assert set(platforms.split(".")) == {"manylinux_2_17_x86_64", "manylinux2014_x86_64"}
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(f"ferrograd-{version}.dist-info/METADATA").decode()
        wheel_file = z.read(f"ferrograd-{version}.dist-info/WHEEL").decode()
    for member in ("ferrograd/__init__.py", "ferrograd/__config__.py", "ferrograd/__main__.py",
                   "ferrograd/py.typed", "ferrograd/_C.pyi", "ferrograd/_C.abi3.so"):
        assert member in names, member
    assert any(n.endswith("licenses/LICENSE") for n in names), sorted(names)[:10]
    assert f"\nVersion: {version}\n" in meta
    assert "License-Expression: MIT" in meta
    assert "Classifier: Typing :: Typed" in meta
    assert "Requires-Dist: numpy" in meta
    assert "Provides-Extra: docs" in meta
    assert "Tag: cp39-abi3-manylinux_2_17_x86_64" in wheel_file


def test_the_sdist_holds_what_the_build_needs():
    sdist = _built("ferrograd-*.tar.gz")
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for member in ("pyproject.toml", "Cargo.toml", "Cargo.lock", "build.rs", "src/lib.rs",
                   "src/kernels/simd.rs", "python/ferrograd/__init__.py", "LICENSE",
                   "README.md", "PKG-INFO"):
        assert member in names, member

"""Shared pytest configuration: hypothesis profiles, markers, grad-mode hygiene.

Hypothesis profiles:

* ``dev`` (the default locally): quick, ~25 examples per property.
* ``ci`` (chosen when the environment variable ``CI`` is ``"true"``): ~200
  examples, derandomized (seeded, so a CI failure reproduces), no deadline,
  and the reproduction blob printed on failure.

``HYPOTHESIS_PROFILE=<name>`` overrides both.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent

settings.register_profile(
    "dev",
    max_examples=25,
    deadline=None,
)
settings.register_profile(
    "ci",
    max_examples=200,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _profile_name() -> str:
    explicit = os.environ.get("HYPOTHESIS_PROFILE")
    if explicit:
        return explicit
    return "ci" if os.environ.get("CI", "").lower() == "true" else "dev"


settings.load_profile(_profile_name())


def _rust_source_hash(root: Path) -> str:
    # build.rs's hash: FNV-1a over each Rust source's relative path and bytes.
    files = [root / "build.rs", *(root / "src").rglob("*.rs")]
    h = 0xCBF29CE484222325
    for name, path in sorted((p.relative_to(root).as_posix(), p) for p in files):
        for chunk in (name.encode(), b"\0", path.read_bytes(), b"\0"):
            for b in chunk:
                h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def _stale_install() -> str | None:
    """Why the installed ferrograd is not this checkout's, or None when it is."""
    try:
        import ferrograd
    except ImportError as e:
        return f"ferrograd does not import ({e})"
    installed = Path(ferrograd.__file__).resolve().parent
    source = ROOT / "python" / "ferrograd"
    if installed != source.resolve():
        for path in source.rglob("*.py*"):
            if path.suffix not in (".py", ".pyi"):
                continue
            twin = installed / path.relative_to(source)
            if not twin.exists() or twin.read_bytes() != path.read_bytes():
                return f"the installed {twin} differs from {path}"
    if (ROOT / "src").is_dir():
        built = ferrograd._C._build_info().get("source_hash")
        if built != _rust_source_hash(ROOT):
            return f"its extension was built from other Rust sources (hash {built})"
    return None


def pytest_configure(config):
    # Tests of a stale install would pass or fail for code that is not here.
    stale = _stale_install()
    if stale and os.environ.get("FERROGRAD_TEST_ANY_INSTALL") != "1":
        pytest.exit(
            f"the installed ferrograd is not this checkout's: {stale}.\n"
            'Install it first: pip install ".[examples]" (or maturin develop --release, or '
            "the wheel tools/build-wheel writes).",
            returncode=4,
        )
    config.addinivalue_line(
        "markers",
        "slow: a long-running test (seconds, not minutes); still part of every run, CI included",
    )


def pytest_report_header(config):
    return f"hypothesis profile: {settings.get_current_profile_name()}"


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    """Every test starts with grad mode on, and a test that leaves it off fails."""
    import ferrograd as fg

    fg._C._set_grad_enabled(True)
    fg._C._set_inference_mode(False)
    yield
    leaked = not fg.is_grad_enabled() or fg.is_inference_mode_enabled()
    fg._C._set_grad_enabled(True)
    fg._C._set_inference_mode(False)
    assert not leaked, "the test left grad mode disabled (or inference mode on)"

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

import pytest
from hypothesis import HealthCheck, settings

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


def pytest_configure(config):
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

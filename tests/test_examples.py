"""The scripts in examples/ run and do what they say (the README's first command runs
examples/digits.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ferrograd

ROOT = Path(__file__).resolve().parent.parent
# Where the ferrograd under test was imported from (the source tree in a development
# install, site-packages in a plain one), so child processes import the same build.
PACKAGE_ROOT = str(Path(ferrograd.__file__).resolve().parent.parent)
EXAMPLES = ROOT / "examples"


def run(script, *args, cwd=None, timeout=600, stderr=False):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p
    )
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (proc.stdout, proc.stderr) if stderr else proc.stdout


def test_fit_line_recovers_the_line():
    out = run("fit_line.py")
    last = out.strip().splitlines()[-1]
    w, b = (float(v) for v in last.split("=")[1].split("(")[0].replace("x +", "").split())
    assert abs(w - 3.0) < 0.05 and abs(b - 0.5) < 0.05
    losses = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step")]
    assert losses[0] > 10 * losses[-1]


def test_sin_derivative_is_cos(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is in the examples/test extras")
    out = run("sin_derivative.py", "--out", str(tmp_path / "sin.png"))
    assert "max |x.grad - cos(x)| = 0.00e+00" in out
    assert (tmp_path / "sin.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_digits_demo_trains_saves_reloads_and_draws(tmp_path):
    for mod in ("sklearn", "matplotlib", "tqdm"):
        pytest.importorskip(mod, reason=f"{mod} is in the examples/test extras")
    out, err = run("digits.py", "--no-torch", "--out", str(tmp_path), cwd=tmp_path, stderr=True)
    assert "identical predictions" in out
    accuracy = float(out.split("held-out accuracy ")[1].split("%")[0])
    assert accuracy >= 97.0
    # tqdm redraws with carriage returns; the last state of each epoch's bar is
    # complete and carries that epoch's validation accuracy.
    finals = {}
    for line in err.replace("\r", "\n").splitlines():
        if line.startswith("epoch ") and "22/22" in line:
            finals[line.split(":")[0]] = line
    assert sorted(finals) == [f"epoch {e:2d}/25" for e in range(1, 26)]
    assert all("100%" in v and "loss=" in v and "acc=" in v for v in finals.values())
    last_val = float(finals["epoch 25/25"].split("val_acc=")[1].rstrip("]").strip())
    assert last_val == pytest.approx(accuracy / 100, abs=6e-4)
    for name in ("loss.png", "predictions.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "digits_cnn.safetensors").stat().st_size > 10_000
    drawn = list(tmp_path.glob("graph.*"))
    assert drawn and drawn[0].stat().st_size > 1000

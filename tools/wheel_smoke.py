"""Smoke test of an installed ferrograd wheel, run by CI in a fresh virtual environment
with no Rust on PATH (``.ci/run``): import, a backward pass, ``compile``, ``save``/``load``
and the build report. Exits non-zero on the first failure.

Usage: python tools/wheel_smoke.py
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path


def main() -> int:
    for tool in ("cargo", "rustc"):
        assert shutil.which(tool) is None, f"{tool} is on PATH: this test must run without Rust"

    import ferrograd as torch

    where = Path(torch.__file__).resolve()
    assert "site-packages" in where.parts, f"ferrograd imported from {where}, not the wheel"
    assert torch.__version__ == importlib.metadata.version("ferrograd"), torch.__version__
    assert (where.parent / "py.typed").exists() and (where.parent / "_C.pyi").exists()

    # A backward pass, checked against the closed form d/dx sum(x^3) = 3x^2.
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x ** 3).sum().backward()
    assert x.grad.tolist() == [3.0, 12.0, 27.0], x.grad

    # A compiled training step: eager, recorded, then replayed; it must learn.
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @torch.compile
    def step(xb, yb):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    xb = torch.randn(32, 4)
    yb = xb.sum(1, keepdim=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager would warn
        losses = [step(xb, yb).item() for _ in range(50)]
    assert step.tapes, "the step was never recorded"
    assert losses[-1] < 0.05 * losses[0], losses

    # save / load round trip.
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.safetensors"
        torch.save(model.state_dict(), path)
        again = torch.nn.Linear(4, 1)
        again.load_state_dict(torch.load(path))
        assert torch.equal(again(xb), model(xb))

    # The build report, as `python -m ferrograd` prints it.
    out = subprocess.run([sys.executable, "-m", "ferrograd"], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith(f"ferrograd {torch.__version__}\n"), out
    assert "SIMD paths:" in out and "threads:" in out, out
    print(out, end="")
    print(f"wheel smoke test passed: ferrograd {torch.__version__} from {where.parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

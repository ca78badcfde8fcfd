"""``python -m ferrograd``: print how this ferrograd was built and what it uses here."""

from __future__ import annotations

from .__config__ import show

if __name__ == "__main__":
    print(show(), end="")

"""Draws the performance page's plot from the table on that page.

The table that follows the line ``<!-- perfplot: TITLE -->`` in
``performance.md`` is read (its ``workload`` and ``vs PyTorch`` columns), and
each row's ratio becomes a bar: the picture cannot disagree with the table.
"""

from __future__ import annotations

import re
from pathlib import Path


def read_table(page: Path) -> tuple[str, list[tuple[str, float]]]:
    """The plot's title and ``(workload, ratio)`` rows of the marked table."""
    lines = page.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("<!-- perfplot:"))
    title = lines[start].removeprefix("<!-- perfplot:").removesuffix("-->").strip()
    table = []
    for ln in lines[start + 1 :]:
        if not ln.strip():
            if table:
                break
            continue
        table.append([c.strip() for c in ln.strip().strip("|").split("|")])
    header, rows = table[0], table[2:]
    w, r = header.index("workload"), header.index("vs PyTorch")
    out = []
    for row in rows:
        m = re.match(r"([0-9.]+)x", row[r])
        if m:
            out.append((row[w].replace("`", ""), float(m.group(1))))
    return title, out


def draw(page: Path, png: Path) -> None:
    """Writes the plot to ``png`` unless it is newer than the page."""
    if png.exists() and png.stat().st_mtime >= page.stat().st_mtime:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    title, rows = read_table(page)
    rows = rows[::-1]  # the table's first row on top
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.4), dpi=110)
    colors = ["#2a7ab0" if v >= 1 else "#c0504d" for _, v in rows]
    ax.barh([name for name, _ in rows], [v for _, v in rows], color=colors)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("speed (or memory) relative to PyTorch, > 1: ferrograd ahead (log scale)")
    ax.set_title(title.replace(", ", ",\n", 1), fontsize=10)
    for i, (_, v) in enumerate(rows):
        ax.text(v * 1.03, i, f"{v:g}x", va="center", fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    plt.close(fig)

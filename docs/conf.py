"""Sphinx configuration of ferrograd's documentation site.

Build it strictly, as CI does (any warning, a broken link or reference
among them, fails the build)::

    pip install ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html

The pages are the Markdown files in ``docs/`` (MyST); every ``docs/*.md`` is
in the table of contents, in the order of :data:`GUIDES` or after those
pages. The API reference is written from the code (``_ext/apigen.py``), and
the performance plot from the table on the performance page
(``_ext/perfplot.py``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

try:  # the ferrograd installed in this environment (a wheel, or a development install)
    import ferrograd
except ImportError:  # a source checkout with the extension built in place
    sys.path.insert(0, str(HERE.parent / "python"))
    import ferrograd

import apigen  # noqa: E402
import perfplot  # noqa: E402

project = "ferrograd"
author = "The ferrograd developers"
copyright = "2026, The ferrograd developers"  # noqa: A001 - Sphinx's name
release = ferrograd.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx_copybutton",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build", "_generated", "Thumbs.db", ".DS_Store"]
root_doc = "index"

# Getting-started pages and guides, in their order in the navigation. Any other
# docs/*.md page is appended to the guides (see _add_other_pages), so a page
# added to docs/ is on the site without an edit here.
GETTING_STARTED = ["install", "quickstart", "coming-from-pytorch"]
GUIDES = [
    "autograd",
    "training",
    "hooks",
    "func",
    "compile",
    "distributed",
    "performance",
    "testing",
]
ABOUT = ["changelog"]

myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"member-order": "alphabetical"}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autoclass_content = "class"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

html_theme = "pydata_sphinx_theme"
html_title = f"ferrograd {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navbar_align": "left",
    "header_links_before_dropdown": 4,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "changelog": []}
html_show_sourcelink = False
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True

# The API pages, written before Sphinx looks for sources.
apigen.write_pages(HERE / "api")
perfplot.draw(HERE / "performance.md", HERE / "_generated" / "performance.png")


def _add_other_pages(app, docname, source):
    """Lists every ``docs/*.md`` page that ``index.md`` does not name in the guides' toctree."""
    if docname != root_doc:
        return
    named = set(GETTING_STARTED) | set(GUIDES) | set(ABOUT) | {root_doc}
    others = sorted(p.stem for p in HERE.glob("*.md") if p.stem not in named)
    entries = "\n".join(GUIDES + others)
    source[0] = source[0].replace("{guides}", entries)
    source[0] = source[0].replace("{getting_started}", "\n".join(GETTING_STARTED))
    source[0] = source[0].replace("{about}", "\n".join(ABOUT))


def _strip_doctest_flags(app, what, name, obj, options, lines):
    """Drops ``# doctest: +FLAG`` comments from docstring examples shown on the pages."""
    for i, line in enumerate(lines):
        lines[i] = re.sub(r"\s*# doctest:.*$", "", line)


def setup(app):
    app.connect("source-read", _add_other_pages)
    app.connect("autodoc-process-docstring", _strip_doctest_flags)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Sphinx configuration of the amkspec spec site (built with -W in the test command)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath("_ext"))
sys.path.insert(0, os.path.abspath(".."))

project = "amkspec"
author = "The amkspec authors"
copyright = "2026, The amkspec authors"
release = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "amkspec_tables",
    "amkspec_figures",
    "amkspec_rules",
    "amkspec_architecture",
]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "differences/*.md"]
html_theme = "furo"
html_title = "amkspec — the AMK megakernel IR specification"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
nitpicky = False
suppress_warnings = ["myst.header"]

"""Sphinx configuration of the RCCLX documentation (`nox -s docs` builds it, warnings as errors).

The knob table of configuration.rst is generated at build time from the installed libraries'
registry (``ctran.config_dump()``, and ``rcclx_core.config_dump()`` where that exists) by the
local extension _ext/knobs.py, into generated/knobs.rst (not checked in). Headline figures come
from claims.toml through the local extension _ext/claims.py (the :claim: role and the
claims-table directive), which also checks README.md and every page against that file.
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "RCCLX"
author = "the RCCLX developers"
copyright = "the RCCLX developers"
# The version of every package: the top-level CMake project's.
_cmake = (Path(__file__).resolve().parent.parent / "CMakeLists.txt").read_text()
release = re.search(r"project\(rcclx VERSION ([0-9.]+)", _cmake).group(1)
version = release

extensions = ["knobs", "claims"]

root_doc = "index"
# generated/ holds fragments pulled in with `.. include::`, not pages of their own.
exclude_patterns = ["_build", "generated", "Thumbs.db", ".DS_Store"]

# furo (pinned in constraints.txt), with _theme/rcclx.css giving the page the width a 1280 px
# window leaves it.
html_theme = "furo"
html_title = "RCCLX"
html_static_path = ["_theme"]
html_css_files = ["rcclx.css"]

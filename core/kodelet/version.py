"""kodelet's version, read from the package's one ``VERSION`` file, which pyproject.toml
and the warm kodelet's standard-library protocol read too: importing it costs no
third-party module, so ``from kodelet import hookkit`` stays light."""

from __future__ import annotations

import os

with open(os.path.join(os.path.dirname(__file__), "VERSION"), encoding="ascii") as _file:
    VERSION = _file.read().strip()

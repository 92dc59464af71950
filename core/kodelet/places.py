"""Where kodelet looks for things: the repo-local root and the global root, nowhere else."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs


@attrs.frozen
class Places:
    cwd: Path
    global_root: Path

    @property
    def local_root(self) -> Path:
        return self.cwd / ".kodelet"

    @classmethod
    def resolve(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Places:
        """``home`` wins, then ``$KODELET_HOME``, then ``~/.kodelet``."""
        env = os.environ if env is None else env
        if home is None:
            home = env.get("KODELET_HOME") or Path(env.get("HOME") or Path.home()) / ".kodelet"
        return cls(cwd=Path(cwd or os.getcwd()).absolute(), global_root=Path(home).absolute())

    def roots(self) -> list[tuple[str, Path]]:
        """(location, root) in precedence order: repo-local first."""
        return [("local", self.local_root), ("global", self.global_root)]

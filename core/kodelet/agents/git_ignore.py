"""A file of this machine's own (``--scope local``: absolute paths, with the HTTP
transport a secret) must not reach the team through git: a teammate who got it would
find every prompt blocked by paths that do not exist on their machine. Claude Code
keeps its own ``settings.local.json`` out of git for the same reason; kodelet does it
in the clone's ``info/exclude``, which is never committed or shared, and says so."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["keep_out_of_git"]


def _git(top: Path, *args: str) -> subprocess.CompletedProcess[str]:
    git = shutil.which("git") or "git"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        [git, "-C", str(top), *args], capture_output=True, text=True, env=env, timeout=60
    )


def keep_out_of_git(path: Path) -> str | None:
    """Make sure git ignores ``path``; what the user should know about it, or None."""
    if shutil.which("git") is None:
        return None
    try:
        found = _git(path.parent, "rev-parse", "--show-toplevel")
        if found.returncode != 0:
            return None  # not in a git work tree
        top = Path(found.stdout.strip())
        rel = path.resolve().relative_to(top.resolve()).as_posix()
        if _git(top, "ls-files", "--error-unmatch", "--", rel).returncode == 0:
            return (
                f"{rel} is tracked by git, so it reaches everyone who clones this repository:"
                f" `git rm --cached {rel}` and commit, to keep it on this machine only"
            )
        if _git(top, "check-ignore", "-q", "--", rel).returncode == 0:
            return None
        where = _git(top, "rev-parse", "--git-path", "info/exclude").stdout.strip()
        exclude = Path(where) if os.path.isabs(where) else top / where
        exclude.parent.mkdir(parents=True, exist_ok=True)
        before = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        joint = "" if not before or before.endswith("\n") else "\n"
        with open(exclude, "a", encoding="utf-8") as f:
            f.write(f"{joint}/{rel}\n")
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return f"could not make git ignore {path} ({exc}): add it to .gitignore yourself"
    return f"git now ignores {rel} (added to {exclude}): it holds this machine's paths"

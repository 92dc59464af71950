"""Where recorded sessions come from: paths, directories and globs, and which format each is.

A file's format is read from its content, not its name: a kodelet session is
one JSON object with ``version`` and ``items``; a Claude Code transcript is
JSON lines. A corpus is named the way a shell user names files, so
``~/.claude/projects/`` (a directory, searched recursively) and
``'~/.claude/projects/*/*.jsonl'`` (a quoted glob) both work. Subagent files
(``<session>/subagents/agent-*.jsonl``) are left out of a directory when their
parent session is there too: the parent replays them where they ran.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import attrs

from .format import RecordedSession, SessionFormatError, loads, read_text

Format = Literal["auto", "kodelet", "claude"]
SUFFIXES = (".json", ".jsonl")


@attrs.frozen
class Source:
    """One session to replay: a path, or (shipped to another machine) its text."""

    name: str
    path: str = ""
    text: str | None = None

    def read(self) -> str:
        return self.text if self.text is not None else read_text(self.path, "a session file")


def detect(text: str) -> Literal["kodelet", "claude"]:
    """Which format ``text`` is in, by content."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            # One JSON value and more after it, or a first line that is a whole object:
            # JSON lines. Anything else is a broken session file, and is reported as one.
            if exc.msg == "Extra data":
                return "claude"
            try:
                json.loads(stripped.splitlines()[0])
            except json.JSONDecodeError:
                return "kodelet"
            return "claude"
        # A transcript line has a "version" too (the client's), but never "items".
        own = "items" in data if isinstance(data, dict) else False
        if own or (isinstance(data, dict) and isinstance(data.get("version"), int)):
            return "kodelet"
        return "claude"
    return "kodelet"


def parse(text: str, name: str, fmt: Format = "auto") -> RecordedSession:
    """A session from a file's text; :class:`SessionFormatError` names ``name`` and the place."""
    if not text.strip():
        raise SessionFormatError(f"{name}: empty file")
    kind = detect(text) if fmt == "auto" else fmt
    if kind == "claude":
        from .claude import import_text

        return import_text(text, name)
    return loads(text, name)


def load(source: Source, fmt: Format = "auto") -> RecordedSession:
    return parse(source.read(), source.name, fmt)


def _is_glob(arg: str) -> bool:
    return any(c in arg for c in "*?[")


def _parent_present(path: Path, found: set[Path]) -> bool:
    """A ``<id>/subagents/agent-*.jsonl`` whose ``<id>.jsonl`` is in the corpus too."""
    if path.parent.name != "subagents":
        return False
    session_dir = path.parent.parent
    return session_dir.with_name(session_dir.name + ".jsonl") in found


def _walk(directory: Path) -> list[Path]:
    files = sorted(p for p in directory.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    found = set(files)
    return [p for p in files if not _parent_present(p, found)]


def expand(args: Iterable[str]) -> tuple[list[Source], bool]:
    """Sources for the PATH arguments, in order, each once; and whether they name a corpus
    (a directory, a glob or several files) rather than one session.

    A name that matches nothing is a :class:`SessionFormatError`: a typo must
    not turn into an empty report that looks like a clean one.
    """
    sources: list[Source] = []
    seen: set[str] = set()
    corpus = False
    given = list(args)
    for arg in given:
        path = Path(arg).expanduser()
        base: Path | None = None
        if path.is_dir():
            corpus = True
            paths = _walk(path)
            base = path if len(given) == 1 else None
            if not paths:
                raise SessionFormatError(f"{arg}: no .json or .jsonl files in this directory")
        elif _is_glob(arg) and not path.exists():
            corpus = True
            paths = [Path(p) for p in sorted(glob.glob(str(path), recursive=True))]
            paths = [p for p in paths if p.is_file()]
            if not paths:
                raise SessionFormatError(f"{arg}: matches no file")
        else:
            paths = [path]
        for p in paths:
            key = str(p.resolve()) if p.exists() else str(p)
            if key not in seen:
                seen.add(key)
                name = str(p.relative_to(base)) if base is not None else str(p)
                sources.append(Source(name=arg if p == path else name, path=str(p)))
    return sources, corpus or len(sources) > 1

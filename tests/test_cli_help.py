"""Help as a user sees it: printed once, and flags shown without a value."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import typer.main
from kodelet.cli.app import app


def kodelet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kodelet", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("group", [[], ["plugins"], ["hooks"], ["config"]])
def test_a_bare_group_prints_its_help_once(group: list[str]) -> None:
    done = kodelet(*group)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Usage:") == 1, done.stdout
    assert done.stdout == kodelet(*group, "--help").stdout
    assert done.stderr == ""


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            paths += _command_paths(sub, (*path, name))
    return paths


def test_no_flag_is_shown_as_taking_a_value() -> None:
    paths = _command_paths(typer.main.get_command(app))
    assert ("hooks", "run") in paths and ("replay",) in paths
    with ThreadPoolExecutor(4) as pool:
        helps = pool.map(lambda path: kodelet(*path, "--help").stdout, paths)
    for path, text in zip(paths, helps, strict=True):
        assert "Usage: " in text, path
        assert "<bool>" not in text, (path, text)
    replay = kodelet("replay", "--help").stdout
    assert re.search(r"^ +--json +Print the report", replay, re.M), replay


def _helps() -> dict[tuple[str, ...], str]:
    paths = _command_paths(typer.main.get_command(app))
    with ThreadPoolExecutor(4) as pool:
        texts = pool.map(lambda path: kodelet(*path, "--help").stdout, paths)
    return dict(zip(paths, texts, strict=True))


def _names(text: str) -> list[str]:
    """The usage line's words after the command, and the name column of every row
    under Arguments and Options: where a value is named."""
    usage = text.splitlines()[0]
    names = [usage]
    section = None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line
        elif section in ("Arguments:", "Options:") and re.match(r"  \S", line):
            names.append(re.split(r"\s{2,}", line.strip())[0])
    return names


def test_every_value_is_named_in_capitals_as_click_does() -> None:
    """``{event}``, ``<list[str]>`` or ``<float>`` name the parser's types, not what
    to type: ``EVENT``, ``PACKAGE...``, ``SECONDS``."""
    helps = _helps()
    assert len(helps) > 20
    for path, text in helps.items():
        for name in _names(text):
            assert not re.search(r"[{}<>]|\[\[", name), (path, name)
    run = _names(helps[("hooks", "run")])
    assert run[0].endswith(" kodelet hooks run [OPTIONS] EVENT")
    assert "EVENT" in run and "-p, --payload FILE" in run and "--timeout SECONDS" in run
    assert _names(helps[("plugins", "install")])[0].endswith("[OPTIONS] PACKAGE...")
    assert _names(helps[("replay",)])[0].endswith("[OPTIONS] [PATH]...")


JARGON = re.compile(r"\bseeds?\b|Spec 07|DESIGN\.md|\bADR \d|\.\./shared", re.I)


def test_help_names_no_document_outside_the_repository() -> None:
    for path, text in _helps().items():
        assert not JARGON.search(text), (path, JARGON.findall(text))

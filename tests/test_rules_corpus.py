"""The labelled corpus of bench/rules_corpus.py: its size, its classes, its shapes, and
the recommended rule set meeting its targets on it (through the engine, as the guard
runs it)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def bench_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rules_corpus", BENCH / "rules_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("rules_corpus", module)
    spec.loader.exec_module(module)
    return module


rc = bench_module()


def test_the_corpus_is_big_enough_and_covers_every_class() -> None:
    cases = rc.load()
    assert len(cases) >= 300
    labels = Counter(c.label for c in cases)
    assert labels["benign"] >= labels["dangerous"] > 0
    classes = Counter(c.cls for c in cases)
    for cls in (*rc.DANGEROUS, *rc.BENIGN):
        assert classes[cls] >= 10, f"class {cls} has only {classes[cls]} calls"
    assert len({c.id for c in cases}) == len(cases)
    # Every class in many spellings: no two calls of the corpus are the same call.
    calls = Counter(json.dumps([c.tool, c.input, c.cwd], sort_keys=True) for c in cases)
    assert [k for k, n in calls.items() if n > 1] == []


def test_every_tool_and_cwd_of_the_corpus_is_used() -> None:
    cases = rc.load()
    assert {c.tool for c in cases} >= {"bash", "file_write", "file_edit", "file_read"}
    assert {c.cwd for c in cases} == set(rc.CWDS)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("not json", "not JSON"),
        ('{"id": "a"}', "missing key(s)"),
        (
            '{"id": "a", "class": "delete", "label": "benign", "tool": "bash",'
            ' "input": {"command": "ls"}, "cwd": "project"}',
            "benign class 'delete'",
        ),
        (
            '{"id": "a", "class": "delete", "label": "dangerous", "tool": "bash",'
            ' "input": {"cmd": "ls"}, "cwd": "project"}',
            "needs a non-empty string 'command'",
        ),
        (
            '{"id": "a", "class": "delete", "label": "dangerous", "tool": "bash",'
            ' "input": {"command": "ls"}, "cwd": "/"}',
            "cwd '/'",
        ),
    ],
)
def test_a_bad_corpus_line_is_named(tmp_path: Path, line: str, error: str) -> None:
    (tmp_path / "x.jsonl").write_text(line + "\n")
    with pytest.raises(ValueError, match=r"x\.jsonl:1: ") as caught:
        rc.load(tmp_path)
    assert error in str(caught.value)


def test_the_layout_resolves_the_placeholders(tmp_path: Path) -> None:
    layout = rc.make_layout(tmp_path)
    case = rc.Case("i", "delete", "dangerous", "file_write", {"file_path": "{home}/.x"}, "home")
    assert layout.input(case) == {"file_path": f"{layout.home}/.x"}
    assert layout.cwd(case) == layout.home
    assert (layout.project / "homelink").resolve() == layout.home
    assert layout.project.is_relative_to(layout.home)


def test_the_readme_guard_is_the_readme_s_script() -> None:
    script = rc.readme_hook()
    assert script.startswith("#!/bin/bash\n")
    assert "grep -q 'rm -rf'" in script

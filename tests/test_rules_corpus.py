"""The labelled corpus of bench/rules_corpus.py: its size, its classes, its shapes, and
the recommended rule set meeting its targets on it (through the engine, as the guard
runs it)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
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


def test_the_recommended_set_meets_its_targets_on_the_corpus(tmp_path: Path) -> None:
    """At least 95 % of the dangerous calls denied or asked, at least 98 % of the
    everyday calls let through, judged through the engine as the guard judges them."""
    cases = rc.load()
    layout = rc.make_layout(tmp_path)
    judged = rc.kodelet_guard(layout)(cases)
    score = rc.score(cases, judged)
    missed = "\n".join(rc.miss_lines(rc.misses(cases, judged)))
    assert score.caught_rate >= rc.TARGET_CAUGHT, missed
    assert score.allowed_rate >= rc.TARGET_ALLOWED, missed
    # Every dangerous class is caught, not just the corpus as a whole.
    for cls in rc.DANGEROUS:
        right, of = score.per_class[cls]
        assert right / of >= 0.9, f"{cls}: {right}/{of}\n{missed}"


def test_the_recommended_set_passes_its_own_rule_tests(tmp_path: Path) -> None:
    """The [[tests]] cases shipped in recommended.toml, run by `kodelet rules test` as a
    team's CI would run them."""
    shipped = Path(rc.REPO / "core" / "kodelet" / "rules" / "recommended.toml")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-m", "kodelet", "rules", "test", "--json", str(shipped)],
        capture_output=True,
        text=True,
        cwd=project,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["failed"] == 0
    assert result["passed"] >= 25


def test_the_cli_agrees_with_the_engine_on_a_sample(tmp_path: Path) -> None:
    """`kodelet rules explain --json` gives the engine's decision (the bench's check)."""
    cases = rc.load()
    layout = rc.make_layout(tmp_path)
    by_id = {c.id: c for c in cases}
    ids = ("delete-002", "git-history-014", "clean-001", "write-outside-001", "read-search-033")
    sample = [by_id[i] for i in ids]
    through_cli = rc.kodelet_cli(layout, sample)
    through_engine = rc.kodelet_guard(layout)(sample)
    assert [j.decision for j in through_cli] == [j.decision for j in through_engine]
    assert [j.blocked for j in through_cli] == [True, True, False, True, False]

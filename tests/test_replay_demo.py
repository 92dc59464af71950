"""The first run: bare `kodelet replay` shows every kind of action, through the demo's own hooks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kodelet.payloads import StructuredToolResult
from kodelet.replay.demo import demo_runtime
from kodelet.replay.demo.guard import DemoGuard, _deletes_root
from kodelet.replay.demo.redact import redact
from kodelet.replay.format import UserItem, load_demo
from kodelet.testing import write_hook

from tests.kit.cli import in_terminal
from tests.kit.replay import HOOKS

DEMO_HOOKS = {"demo-guard", "demo-redact", "builtin:compact-trigger", "builtin:protect-kodelet"}


@pytest.fixture
def hooked(project: Path) -> Path:
    """A project with hooks of its own, which the demo must leave alone."""
    for name, text in HOOKS.items():
        write_hook(project / ".kodelet" / "hooks", name, text)
    return project


def kodelet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kodelet", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def demo_json(cwd: Path, *args: str) -> dict[str, Any]:
    done = kodelet("replay", *args, "--json", cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_bare_replay_shows_every_kind_of_action_through_the_demo_hooks(hooked: Path) -> None:
    data = demo_json(hooked)  # the project's own hooks are there, and not used
    summary = data["summary"]
    assert summary["messages_blocked"] == 1
    assert summary["calls_blocked"] == 1
    assert summary["inputs_rewritten"] >= 1
    assert summary["outputs_rewritten"] == 1
    assert summary["follow_ups"] == 1
    assert summary["compactions"] == 1
    assert summary["hook_failures"] == 0
    assert summary["wall_time_ms"] < 3000
    records = [r for s in data["timeline"] for r in s["hooks"]]
    assert {r["name"] for r in records} == DEMO_HOOKS
    assert not {r["name"] for r in records} & set(HOOKS)
    sources = {r["name"]: r["source"] for r in records}
    assert sources["demo-guard"] == "python" and sources["demo-redact"] == "executable"
    blocked = next(
        s for s in data["timeline"] if any(r["outcome"] == "blocked" for r in s["hooks"])
    )
    assert blocked["subject"] == "bash: rm -rf / build/"


def test_the_secrets_never_reach_the_model() -> None:
    with demo_runtime() as runtime:
        from kodelet.replay.player import Player

        player = Player(runtime, load_demo(), name="demo")
        player.play()
        messages = player.driver.messages
    text = "\n".join(m.content for m in messages)
    assert "AKIAIOSFODNN7EXAMPLE" not in text and "bPxRfiCYEXAMPLEKEY" not in text
    assert "[redacted]" in text
    assert "You changed tasks/cli.py after the last test run: run the tests." in text


def test_my_hooks_replays_the_demo_through_the_projects_hooks(hooked: Path) -> None:
    data = demo_json(hooked, "--my-hooks")
    names = {r["name"] for s in data["timeline"] for r in s["hooks"]}
    assert not names & {"demo-guard", "demo-redact"}
    assert {"10-guard", "30-secrets", "builtin:compact-trigger"} <= names


def test_no_hooks_leaves_the_demo_with_the_builtins_only(tmp_path: Path) -> None:
    done = kodelet("--no-hooks", "replay", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {r["name"] for s in data["timeline"] for r in s["hooks"]} == {
        "builtin:compact-trigger",
        "builtin:protect-kodelet",
    }


def test_only_acted_shows_only_what_hooks_did(tmp_path: Path) -> None:
    every = demo_json(tmp_path)
    acted = demo_json(tmp_path, "--only-acted")
    kept = [
        s
        for s in every["timeline"]
        if s.get("effects") or any(r["outcome"] != "no-action" for r in s["hooks"])
    ]
    assert [s["step"] for s in acted["timeline"]] == [s["step"] for s in kept]
    assert 0 < len(kept) < len(every["timeline"])
    assert acted["summary"] == {
        **every["summary"],
        **{k: acted["summary"][k] for k in ("total_hook_time_ms", "wall_time_ms")},
    }

    text = kodelet("replay", "--only-acted", cwd=tmp_path).stdout
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Turn "))
    end = next(i for i, line in enumerate(lines) if line.startswith("Summary"))
    rows = [line for line in lines[header + 2 : end] if line.strip()]
    hook_rows = sum(1 for s in kept for r in s["hooks"] if r["outcome"] != "no-action") + sum(
        len(s.get("effects", [])) for s in kept
    )
    assert len(rows) == hook_rows
    assert not any("no-action" in row or "no hooks" in row for row in rows)
    for kind in (
        "blocked",
        "modified",
        "action",
        "call-blocked",
        "input-rewritten",
        "output-rewritten",
        "message-blocked",
        "follow-up",
        "compacted",
    ):
        assert any(f" {kind} " in row for row in rows), kind


def test_a_pipe_gets_every_detail_whole_and_a_terminal_fits_its_width(tmp_path: Path) -> None:
    pasted = next(
        i.content for i in load_demo().items if isinstance(i, UserItem) and "AKIA" in i.content
    )
    assert len(pasted) > 80
    piped = kodelet("replay", cwd=tmp_path).stdout
    assert pasted in piped  # whole, not cut at 80 columns or at 72 characters
    assert "demo-redact" in piped and "--my-hooks" in piped
    assert all(line == line.rstrip() for line in piped.splitlines())
    shown = in_terminal("replay", columns=100, cwd=tmp_path)
    assert all(len(line) <= 100 for line in shown.splitlines())
    assert pasted not in shown


def test_json_subjects_and_details_are_whole(tmp_path: Path) -> None:
    data = demo_json(tmp_path)
    subjects = [s["subject"] for s in data["timeline"]]
    assert any(len(s) > 72 for s in subjects)
    assert not any(s.endswith("…") for s in subjects)
    rewritten = next(
        e["detail"]
        for s in data["timeline"]
        for e in s.get("effects", [])
        if e["kind"] == "output-rewritten"
    )
    assert json.loads(rewritten)["metadata"]["content"].startswith("AWS_ACCESS_KEY_ID=[redacted]")


# -- the demo hooks on their own -------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "deletes"),
    [
        ("rm -rf / build/", True),
        ("rm -r -f /", True),
        ("rm --recursive --force /", True),
        ("rm -rf build/", False),
        ("rm -rf ./", False),
        ("rm / x", False),  # not recursive: rm refuses a directory anyway
        ("echo rm -rf /", False),
        ("rm -rf '/'", True),
    ],
)
def test_demo_guard_blocks_only_recursive_removal_of_root(command: str, deletes: bool) -> None:
    assert _deletes_root(command) is deletes


def test_demo_guard_follows_up_once_per_set_of_untested_changes() -> None:
    guard = DemoGuard()
    ok = StructuredToolResult(tool_name="file_edit", success=True)
    guard.after_tool_call("file_edit", {"file_path": "a.py"}, ok)
    first = guard.agent_stop("main")
    assert first is not None and first.follow_up_messages == [
        "You changed a.py after the last test run: run the tests."
    ]
    assert guard.agent_stop("main") is None
    guard.after_tool_call("file_edit", {"file_path": "a.py"}, ok)
    assert guard.agent_stop("subagent") is None
    guard.after_tool_call("bash", {"command": "timeout 300 python -m pytest -q"}, ok)
    assert guard.agent_stop("main") is None


def test_demo_redact_masks_keys_and_leaves_clean_output_alone() -> None:
    clean = {"tool_output": {"toolName": "bash", "success": True, "metadata": {"output": "ok"}}}
    assert redact(clean) is None
    dirty = {
        "tool_output": {
            "toolName": "bash",
            "success": False,
            "error": "denied for AKIAIOSFODNN7EXAMPLE",
            "metadata": {"lines": ["aws_secret_access_key = " + "a" * 40]},
        }
    }
    out = redact(dirty)
    assert out is not None
    assert out["output"]["error"] == "denied for [redacted]"
    assert out["output"]["metadata"]["lines"] == ["aws_secret_access_key = [redacted]"]

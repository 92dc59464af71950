"""`kodelet replay`: recorded sessions through real hooks, the report, imports and bad input."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kodelet import load_runtime
from kodelet.recipes.callbacks import CallbackRegistry
from kodelet.replay import report
from kodelet.replay.claude import NO_RESULT, import_file, import_lines
from kodelet.replay.format import (
    AssistantItem,
    NoteItem,
    SessionFormatError,
    UserItem,
    dumps,
    load,
    load_demo,
    loads,
)
from kodelet.replay.player import Player
from kodelet.testing import write_hook

from tests.kit.cli import in_terminal
from tests.kit.cli import run_kodelet as kodelet
from tests.kit.replay import (
    HOOKS,
    PY,
    replay_json,
    without_timings,
)

FIXTURES = Path(__file__).parent / "fixtures" / "replay"
OUTCOMES = FIXTURES / "outcomes.json"
TRANSCRIPT = FIXTURES / "claude_transcript.jsonl"


@pytest.fixture
def hooked(project: Path) -> Path:
    """A project whose .kodelet/hooks yields every outcome on the outcomes fixture."""
    for name, text in HOOKS.items():
        write_hook(project / ".kodelet" / "hooks", name, text)
    return project


# -- every outcome -------------------------------------------------------------


def test_every_outcome_appears_and_the_counts_add_up(hooked: Path) -> None:
    with load_runtime(cwd=hooked) as rt:
        player = Player(
            rt,
            load(OUTCOMES),
            name="outcomes.json",
            registry=CallbackRegistry.default(rt.places, env={}),
        )
        result = player.play()
    data = report.summary(result)
    assert data["outcomes"] == {
        "no-action": 8,  # 6 of the hooks', 2 of builtin:protect-kodelet on the calls they let be
        "blocked": 2,
        "modified": 2,
        "action": 2,
        "context": 0,
        "error": 3,
    }
    expected = {
        "events": 12,
        "hook_calls": 17,
        "turns": 3,
        "turns_skipped": 2,
        "tool_calls": 3,
        "messages_blocked": 1,
        "calls_blocked": 1,
        "inputs_rewritten": 1,
        "outputs_rewritten": 1,
        "follow_ups": 1,
        "compactions": 1,
        "warnings": 0,
        "hook_failures": 3,
    }
    assert {k: data[k] for k in expected} == expected
    assert data["total_hook_time_ms"] > 0

    by_event = [(s.event.value, [(r.name, r.outcome.value) for r in s.hooks]) for s in result.steps]
    assert by_event[1] == (
        "before_tool_call",
        [("10-guard", "modified"), ("builtin:protect-kodelet", "no-action")],
    )
    assert by_event[3] == ("before_tool_call", [("10-guard", "blocked")])
    assert by_event[2] == ("after_tool_call", [("20-redact", "modified")])
    assert by_event[5] == (
        "after_turn",
        [("40-broken", "error"), ("builtin:compact-trigger", "no-action")],
    )
    assert by_event[8] == (
        "after_turn",
        [("40-broken", "error"), ("builtin:compact-trigger", "action")],
    )
    assert by_event[10] == ("agent_stop", [("50-reminder", "action")])
    assert by_event[11] == ("user_message_send", [("30-secrets", "blocked")])
    broken = result.steps[5].hooks[0]
    assert broken.error is not None and "broken on purpose" in broken.error

    # What the host did: the model saw the redacted output and the blocked result, the
    # compaction replaced the history, the follow-up was appended, the secret never was.
    messages = player.driver.messages
    assert messages[0].role == "user" and messages[0].content.startswith("## Summary")
    assert messages[-1].content == "Please run the linter"
    assert not any("AKIA" in m.content or "hunter2" in m.content for m in messages)


def test_blocked_call_and_compaction_show_in_the_timeline(hooked: Path) -> None:
    data = replay_json(hooked, str(OUTCOMES))
    steps = data["timeline"]
    blocked = steps[3]
    assert blocked["event"] == "before_tool_call" and blocked["subject"] == "bash: rm -rf / build"
    assert blocked["effects"][0]["kind"] == "call-blocked"
    assert steps[4]["subject"] == "bash error: Security policy: 'rm -rf' is not allowed"
    assert [e["kind"] for e in steps[8]["effects"]] == ["compacted"]
    assert steps[1]["effects"] == [{"kind": "input-rewritten", "detail": '{"command": "ls -la"}'}]
    assert data["hooks"]["after_turn"] == ["40-broken", "builtin:compact-trigger"]
    assert data["summary"]["outcomes"]["error"] == 3


def test_json_is_stable_across_runs_except_timings(hooked: Path) -> None:
    first = replay_json(hooked, str(OUTCOMES))
    second = replay_json(hooked, str(OUTCOMES))
    assert without_timings(first) == without_timings(second)
    timings = [s["duration_ms"] for s in first["timeline"]]
    assert len(timings) == first["summary"]["events"]
    assert "total_hook_time_ms" in first["summary"] and "wall_time_ms" in first["summary"]


def test_text_report_has_timeline_and_summary(hooked: Path) -> None:
    proc = kodelet("--cwd", str(hooked), "replay", str(OUTCOMES), env={"COLUMNS": "160"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for text in (
        "Turn",
        "Event",
        "Hook",
        "Outcome",
        "Time",
        "10-guard",
        "call-blocked",
        "message-blocked",
        "compacted",
        "Summary",
        "calls blocked",
        "hook failures",
        "total hook time",
    ):
        assert text in out, text
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("columns", [80, 100, 120, 200])
def test_timeline_is_one_line_per_row_at_any_width(hooked: Path, columns: int) -> None:
    data = replay_json(hooked, str(OUTCOMES))
    rows = sum(max(len(s["hooks"]), 1) + len(s.get("effects", [])) for s in data["timeline"])
    out = in_terminal("--cwd", str(hooked), "replay", str(OUTCOMES), columns=columns)
    lines = out.splitlines()
    assert all(len(line) <= columns for line in lines)
    header = next(i for i, line in enumerate(lines) if line.startswith("Turn "))
    end = next(i for i, line in enumerate(lines) if line.startswith("Summary"))
    timeline = [line for line in lines[header + 2 : end] if line.strip()]
    assert len(timeline) == rows  # nothing wrapped onto a second line
    assert lines[header].split() == ["Turn", "Event", "Hook", "Outcome", "Time", "Detail"]
    blocked = next(line for line in timeline if " blocked " in line)
    assert "10-guard" in blocked and "bash: rm -rf" in blocked
    if columns >= 120:
        assert "builtin:compact-trigger" in out
    if columns >= 200:
        assert "Security policy: 'rm -rf' is not allowed" in out


def test_no_hooks_flag_keeps_only_the_builtin(hooked: Path) -> None:
    proc = kodelet("--cwd", str(hooked), "--no-hooks", "replay", str(OUTCOMES), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    names = {r["name"] for s in data["timeline"] for r in s["hooks"]}
    assert names == {"builtin:compact-trigger", "builtin:protect-kodelet"}
    assert data["summary"]["calls_blocked"] == 0
    assert data["summary"]["compactions"] == 1


# -- the demo --------------------------------------------------------------------


def test_demo_through_your_own_hooks_with_none_only_compacts(project: Path) -> None:
    proc = kodelet("replay", "--my-hooks", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "demo_session.json" in proc.stdout
    assert "builtin:compact-trigger" in proc.stdout
    assert "compacted" in proc.stdout
    assert "demo-guard" not in proc.stdout
    data = replay_json(project, "--my-hooks")
    assert data["session"]["name"] == "demo_session.json"
    assert data["summary"]["compactions"] == 1
    assert data["summary"]["calls_blocked"] == 0  # nothing installed to block it


def test_demo_has_a_dangerous_command_and_a_secret() -> None:
    demo = load_demo()
    assert demo.auto_compact.enabled
    commands = [c.input.get("command", "") for t in demo.turns for c in t.tool_calls]
    assert any("rm -rf /" in c or c.startswith("sudo ") for c in commands)
    users = [i.content for i in demo.items if isinstance(i, UserItem)]
    assert any("AKIA" in u for u in users)
    assert demo.event_count() < 300  # small enough to read, no progress bar


def test_guardrail_style_hooks_block_the_demo_dangers(hooked: Path) -> None:
    data = replay_json(hooked, "--my-hooks")
    assert "demo-guard" not in {r["name"] for s in data["timeline"] for r in s["hooks"]}
    assert data["summary"]["calls_blocked"] == 1
    assert data["summary"]["messages_blocked"] == 1
    assert data["summary"]["turns_skipped"] == 2
    assert data["summary"]["compactions"] == 1


# -- Claude Code transcripts ------------------------------------------------------


def test_claude_transcript_imports_into_the_session_format() -> None:
    session = import_file(TRANSCRIPT)
    assert session.conv_id == "5f0c9e1a-7b2d-4c3e-9f10-2a4b6c8d0e1f"
    assert session.model == "claude-sonnet-4-20250514"
    kinds = [type(i).__name__ for i in session.items]
    assert kinds == [
        "UserItem",
        "AssistantItem",
        "AssistantItem",
        "AssistantItem",
        "AssistantItem",
        "NoteItem",
        "UserItem",
        "AssistantItem",
    ]
    first = session.items[1]
    assert isinstance(first, AssistantItem)
    assert first.content == "I'll read the test first."  # two lines, one message id
    assert first.usage.input_tokens == 4 + 1200 + 13000 and first.usage.output_tokens == 58
    (read,) = first.tool_calls
    assert (read.id, read.name) == ("toolu_01R", "file_read")
    # after_tool_call gets what the bridge hands it: Claude Code's tool_response
    # (the transcript's toolUseResult), under kodelet's keys.
    response = {
        "type": "text",
        "file": {
            "filePath": "/home/dev/app/tests/test_api.py",
            "numLines": 4,
            "startLine": 1,
            "totalLines": 4,
        },
    }
    assert read.output.success and read.output.metadata == {
        "output": json.dumps(response),
        "tool_response": response,
    }
    rm = session.turns[1].tool_calls[0]
    assert rm.name == "bash" and rm.input["command"] == "rm -rf / tmp/pytest-cache"
    assert not rm.output.success and rm.output.error is not None
    assert rm.output.error.startswith("rm: it is dangerous")
    test_run = session.turns[2].tool_calls[0]
    response = (test_run.output.metadata or {})["tool_response"]
    assert test_run.output.success and "3 passed" in response["stdout"]
    assert session.turns[3].tool_calls == () and "stale cache" in session.turns[3].content
    caveat = session.items[5]
    assert isinstance(caveat, NoteItem) and caveat.kind == "command"  # an isMeta line
    assert session.items[6] == UserItem(content="Thanks, that's all.")
    assert session.cwd == "/home/dev/app"
    # The one side-chain line answers no Task call: left out, and said so.
    assert session.warnings == (f"{TRANSCRIPT}: 1 subagent lines match no Task call; left out",)
    # What an import writes reads back as the same session.
    assert loads(dumps(session)) == session


def test_claude_transcript_replays_through_the_hooks(hooked: Path) -> None:
    data = replay_json(hooked, "--from-claude", str(TRANSCRIPT))
    summary = data["summary"]
    assert summary["calls_blocked"] == 1
    assert summary["turns"] == 5 and summary["tool_calls"] == 3
    assert summary["follow_ups"] == 2  # agent_stop after each answer without tools
    assert data["session"]["name"] == str(TRANSCRIPT)


def test_tool_use_without_result_gets_a_failed_output() -> None:
    lines = [
        json.dumps({"type": "user", "message": {"role": "user", "content": "go"}}),
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "id": "m1",
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "x"}}
                    ],
                },
            }
        ),
    ]
    session = import_lines(lines, "cut.jsonl")
    call = session.turns[0].tool_calls[0]
    assert call.name == "grep_tool" and not call.output.success and call.output.error == NO_RESULT


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], "cut.jsonl: no user or assistant messages found (skipped line 1: "),
        (["[1, 2]"], "cut.jsonl: no user or assistant messages found (skipped line 1: "),
        (['{"type": "user"}'], "cut.jsonl: no user or assistant messages found (skipped line 1"),
        (['{"type": "summary", "summary": "x"}'], "cut.jsonl: no user or assistant messages found"),
    ],
)
def test_transcripts_with_nothing_usable_are_refused(lines: list[str], message: str) -> None:
    with pytest.raises(SessionFormatError) as exc:
        import_lines(lines, "cut.jsonl")
    assert str(exc.value).startswith(message), str(exc.value)
    assert "\n" not in str(exc.value)


# -- malformed session files -------------------------------------------------------


def session_text(**changes: Any) -> str:
    data = json.loads(OUTCOMES.read_text())
    data.update(changes)
    return json.dumps(data)


def bad_item(path: list[Any], value: Any) -> str:
    data = json.loads(OUTCOMES.read_text())
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "s.json: not valid JSON: Expecting property name"),
        ("[]", "s.json: session: expected an object, got list"),
        (session_text(version=2), "s.json: version: unsupported version 2"),
        (bad_item(["version"], KeyError), "s.json: version: missing required field"),
        (session_text(turns=[]), "s.json: session: unknown field 'turns'"),
        (session_text(max_context_window=-1), "s.json: max_context_window: must not be negative"),
        (
            session_text(auto_compact={"enabled": True, "threshold": 80}),
            "s.json: auto_compact.threshold: must be in (0, 1], got 80",
        ),
        (session_text(items={}), "s.json: items: expected a list, got object"),
        (
            bad_item(["items", 1, "type"], "tool"),
            "s.json: items[1].type: expected one of 'user', 'assistant', 'note', 'compaction', "
            "got 'tool'",
        ),
        (
            bad_item(["items", 0, "content"], 3),
            "s.json: items[0].content: expected a string, got number",
        ),
        (bad_item(["items", 1, "tool_call"], []), "s.json: items[1]: unknown field 'tool_call'"),
        (
            bad_item(["items", 1, "usage", "input_tokens"], "many"),
            "s.json: items[1].usage.input_tokens: expected an integer, got string",
        ),
        (
            bad_item(["items", 1, "tool_calls", 1, "output", "success"], "no"),
            "s.json: items[1].tool_calls[1].output.success: expected a boolean, got string",
        ),
        (
            bad_item(["items", 1, "tool_calls", 0, "output", "toolName"], KeyError),
            "s.json: items[1].tool_calls[0].output.toolName: missing required field",
        ),
        (
            bad_item(["items", 2, "tool_calls", 0, "input"], "notes.md"),
            "s.json: items[2].tool_calls[0].input: expected an object, got string",
        ),
    ],
)
def test_malformed_sessions_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(SessionFormatError) as exc:
        loads(text, "s.json")
    assert str(exc.value).startswith(message), str(exc.value)
    assert "\n" not in str(exc.value)


def test_malformed_session_on_the_command_line_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(bad_item(["items", 1, "tool_calls", 1, "output", "success"], "no"))
    proc = kodelet("--cwd", str(tmp_path), "replay", str(bad))
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert lines == [
        f"kodelet: error: {bad}: items[1].tool_calls[1].output.success: "
        "expected a boolean, got string"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.json"], "kodelet: error: missing.json: no such file"),
        (["--from-claude", "missing.jsonl"], "kodelet: error: missing.jsonl: no such file"),
        (
            [str(OUTCOMES), "--from-claude", str(TRANSCRIPT)],
            "kodelet: error: give either SESSION or --from-claude FILE, not both",
        ),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    proc = kodelet("--cwd", str(tmp_path), "replay", *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [message]


# -- long sessions -------------------------------------------------------------------


def long_session(turns: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"type": "user", "content": "start"}]
    for i in range(turns):
        items.append(
            {
                "type": "assistant",
                "content": f"step {i}",
                "usage": {"input_tokens": 100 + i, "output_tokens": 10},
                "tool_calls": [
                    {
                        "id": f"t{i}",
                        "name": "bash",
                        "input": {"command": f"echo {i}"},
                        "output": {"toolName": "bash", "success": True, "timestamp": "T"},
                    }
                ],
            }
        )
    items.append({"type": "assistant", "content": "done", "usage": {"input_tokens": 1}})
    return {"version": 1, "conv_id": "long", "max_context_window": 100000, "items": items}


def test_long_session_shows_a_progress_bar_on_stderr_only(tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    path.write_text(json.dumps(long_session(120)))  # 1 + 120 * 3 + 2 = 363 events
    proc = kodelet(
        "--cwd",
        str(tmp_path),
        "replay",
        str(path),
        "--json",
        env={"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["summary"]["events"] == 363
    assert "replaying" in proc.stderr

    short = tmp_path / "short.json"
    short.write_text(json.dumps(long_session(10)))
    proc = kodelet(
        "--cwd",
        str(tmp_path),
        "replay",
        str(short),
        "--json",
        env={"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"},
    )
    assert proc.returncode == 0 and "replaying" not in proc.stderr


UNKNOWN_MODEL_HINT = "(`llm models` lists the installed ones)"


# -- --model ----------------------------------------------------------------------


def test_model_option_runs_the_compact_recipe_through_llm(project: Path) -> None:
    pytest.importorskip("llm_echo")
    data = replay_json(project, str(OUTCOMES), "--model", "echo")
    assert data["summary"]["compactions"] == 1 and data["summary"]["warnings"] == 0

    with load_runtime(cwd=project) as rt:
        player = Player(rt, load(OUTCOMES), registry=CallbackRegistry.default(rt.places, "echo"))
        player.play()
    summary = player.driver.messages[0].content
    # llm-echo answers with the prompt it got: the conversation and the compact recipe.
    assert '"prompt"' in summary and "Tidy the repo" in summary and "summar" in summary.lower()


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["--model", "no-such-model"],
            {},
            "kodelet: error: --model no-such-model: unknown model " + UNKNOWN_MODEL_HINT,
        ),
        (
            [],
            {"KODELET_MODEL": "no-such-model"},
            "kodelet: error: KODELET_MODEL no-such-model: unknown model " + UNKNOWN_MODEL_HINT,
        ),
    ],
)
def test_unknown_model_is_refused_before_the_replay(
    project: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    pytest.importorskip("llm")
    proc = kodelet("--cwd", str(project), "replay", *args, env=env)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [message]


# -- docs/REPLAY.md ------------------------------------------------------------------

DOC = Path(__file__).parent.parent / "docs" / "REPLAY.md"


def doc_blocks(lang: str) -> list[str]:
    parts = DOC.read_text().split(f"```{lang}\n")[1:]
    return [part.split("```", 1)[0] for part in parts]


def test_the_docs_json_examples_are_what_they_say(project: Path) -> None:
    blocked, session, report_doc = (json.loads(b) for b in doc_blocks("json")[:3])
    from kodelet.payloads import StructuredToolResult
    from kodelet.wire import structure

    assert structure(blocked, StructuredToolResult).success is False
    assert set(report_doc) == {"session", "hooks", "timeline", "summary"}
    (project / "session.json").write_text(json.dumps(session))
    data = replay_json(project, str(project / "session.json"))
    assert set(data) == set(report_doc)
    assert set(data["summary"]) == set(report_doc["summary"])
    assert set(data["timeline"][0]) >= set(report_doc["timeline"][0])


def test_the_docs_shell_examples_run(project: Path, isolated_home: Path) -> None:
    """Both ``bash`` blocks, run as written, with the files they name put in place."""
    first, claude = doc_blocks("bash")
    (project / "session.json").write_text(doc_blocks("json")[1])
    for directory, name in (("-home-me-app", "5f0c….jsonl"), ("-home-me-src-app", "0b1d.jsonl")):
        target = isolated_home / ".claude" / "projects" / directory / name
        target.parent.mkdir(parents=True)
        target.write_text(TRANSCRIPT.read_text())
    (isolated_home / "src" / "app" / ".kodelet").mkdir(parents=True)
    claude = claude.replace("<id>", "0b1d")
    assert "--save fixture.json" in claude
    script = f'set -e\nkodelet() {{ "{PY}" -m kodelet "$@"; }}\n{first}{claude}'
    proc = subprocess.run(
        ["bash", "-c", script],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.count("Summary") == 9, proc.stdout  # nine text reports, one --json
    assert "0b1d.jsonl" in proc.stdout
    assert json.loads((project / "fixture.json").read_text())["version"] == 1

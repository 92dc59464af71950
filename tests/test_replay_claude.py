"""Claude Code transcripts replay as recorded: compactions, notes, Stop-hook feedback,
subagents, bad lines, non-text content, format detection, the payload cwd and --save.

Real transcripts come from tests/fixtures/claude_transcripts (sources in SOURCES.md there);
the two things no public transcript shows (a Stop hook's feedback line, image blocks) are
built here line by line, in the shape Claude Code writes them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest
from kodelet import hookimpl, load_runtime
from kodelet.payloads import Message, UsageInfo
from kodelet.recipes.callbacks import CallbackRegistry
from kodelet.replay.claude import import_file, import_lines
from kodelet.replay.format import AutoCompact, CompactionItem, NoteItem, UserItem, dumps, loads
from kodelet.replay.player import Player, Replay
from kodelet.testing import write_hook

from tests.kit.cli import bridge as claude_hook
from tests.kit.cli import run_kodelet as kodelet
from tests.kit.replay import PY, replay_json, without_timings

# Public Claude Code transcripts (marot/spotter, MIT) are not kept in this repository:
# point KODELET_CLAUDE_TRANSCRIPTS at a local copy of them to run these tests.
REAL = Path(os.environ.get("KODELET_CLAUDE_TRANSCRIPTS", "/nonexistent")) / "marot__spotter"
needs_real = pytest.mark.skipif(
    not REAL.is_dir(), reason="public transcripts not present (KODELET_CLAUDE_TRANSCRIPTS)"
)
BIG = REAL / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
AGENT = REAL / "8463c716-a2ea-4c14-9efa-87158ebd9f20" / "subagents" / "agent-a7be2f0.jsonl"
TOOL_HEAVY = REAL / "tool_heavy.jsonl"
SHORT = REAL / "short.jsonl"
COMMANDS = REAL / "subagent.jsonl"


class Seen:
    """A native plugin that keeps what the hooks were shown."""

    def __init__(self) -> None:
        self.prompts: list[tuple[str, str]] = []
        self.calls: list[tuple[str, str]] = []
        self.usage: list[UsageInfo] = []
        self.cwds: set[str] = set()

    @hookimpl
    def user_message_send(self, message: str, invoked_by: str, cwd: str) -> None:
        self.prompts.append((invoked_by, message))
        self.cwds.add(cwd)

    @hookimpl
    def before_tool_call(self, tool_name: str, invoked_by: str) -> None:
        self.calls.append((invoked_by, tool_name))

    @hookimpl
    def after_turn(self, usage: UsageInfo, messages: list[Message] | None) -> None:
        self.usage.append(usage)


def play(session: Any, tmp_path: Path, seen: Seen | None = None) -> Replay:
    plugins = [("seen", seen)] if seen is not None else []
    with load_runtime(cwd=tmp_path, entry_points=False, plugins=plugins) as rt:
        player = Player(rt, session, registry=CallbackRegistry.default(rt.places, env={}))
        return player.play()


def line(kind: str, content: Any, **extra: Any) -> str:
    entry: dict[str, Any] = {"type": kind, "sessionId": "s1", "cwd": "/nowhere", **extra}
    if kind == "assistant":
        entry["message"] = {"id": extra.pop("mid", f"m{len(content)}"), "role": kind}
        entry["message"]["content"] = content
        entry.pop("mid", None)
    else:
        entry["message"] = {"role": kind, "content": content}
    return json.dumps(entry)


# -- 1. a recorded compaction resets the replay's accounting -------------------------------


@needs_real
def test_token_counts_after_a_recorded_compaction_are_the_recorded_ones(tmp_path: Path) -> None:
    session = import_file(BIG)
    (boundary,) = [i for i in session.items if isinstance(i, CompactionItem)]
    assert boundary.trigger == "auto" and boundary.pre_tokens == 167731
    assert boundary.summary.startswith("This session is being continued")
    seen = Seen()
    replay = play(session, tmp_path, seen)
    notes = [i for i, s in enumerate(replay.steps) if s.note == "recorded-compaction"]
    compacted = [
        i for i, s in enumerate(replay.steps) if any(e.kind == "compacted" for e in s.effects)
    ]
    # The replay's own trigger fired first (at 80% of 200k), then the recording compacted.
    assert len(notes) == 1 and compacted and compacted[0] < notes[0]
    main = [s for s in replay.steps if s.event is not None and s.event.value == "after_turn"]
    main = [s for s in main if not s.agent]
    turn_of_note = replay.steps[notes[0]].turn
    after = [s for s in main if s.turn > turn_of_note]
    counts = [int(s.subject.split()[1].split("/")[0]) for s in after]
    assert counts and all(c > 0 for c in counts)
    assert counts[0] > 42_000  # the first recorded turn after the boundary: 42,603 prompt tokens
    assert max(counts) > 80_000  # and the count grows again as recorded


@needs_real
def test_the_trigger_fires_again_after_a_recorded_compaction(tmp_path: Path) -> None:
    """With the threshold at 25% (50k tokens) the recording crosses it on both sides of its
    own compaction, and the built-in fires on both sides."""
    session = attrs.evolve(import_file(BIG), auto_compact=AutoCompact(enabled=True, threshold=0.25))
    replay = play(session, tmp_path)
    note = next(i for i, s in enumerate(replay.steps) if s.note == "recorded-compaction")
    fired = [
        i
        for i, s in enumerate(replay.steps)
        if not s.agent and any(e.kind == "compacted" for e in s.effects)
    ]
    assert any(i < note for i in fired) and any(i > note for i in fired)


@needs_real
def test_cli_shows_the_recorded_compaction_and_nonzero_context_after_it(project: Path) -> None:
    data = replay_json(project, str(BIG))
    timeline = data["timeline"]
    note = next(i for i, s in enumerate(timeline) if s.get("note") == "recorded-compaction")
    assert "167731 tokens before" in timeline[note]["subject"]
    after = [s for s in timeline[note:] if s.get("event") == "after_turn" and "agent" not in s]
    assert after and all(not s["subject"].startswith("context 0/") for s in after)
    assert data["summary"]["compactions"] == 1  # the replay's own, before the recorded one


# -- 2. notes are not prompts --------------------------------------------------------------


@needs_real
def test_interrupts_commands_and_the_compact_summary_never_fire_user_message_send(
    tmp_path: Path,
) -> None:
    seen = Seen()
    play(import_file(TOOL_HEAVY), tmp_path, seen)
    assert seen.prompts == [
        ("main", "start phoenix in background"),
        (
            "main",
            "scrolling back in xterm.js still does not work (maybe because outer web catches "
            "it)? websearch xterm.js tmux interactions",
        ),
    ]
    kinds = [i.kind for i in import_file(TOOL_HEAVY).items if isinstance(i, NoteItem)]
    assert kinds.count("interrupt") == 2 and "command" in kinds and "command-output" in kinds

    seen = Seen()
    play(import_file(BIG), tmp_path, seen)
    mains = [m for who, m in seen.prompts if who == "main"]
    assert len(mains) == 1 and mains[0].startswith("Work on bead spotter-fum")


@needs_real
def test_notes_show_in_the_timeline_as_what_they_are(project: Path) -> None:
    data = replay_json(project, str(COMMANDS))
    notes = [s["note"] for s in data["timeline"] if "note" in s]
    assert notes[:2] == ["command", "meta"] and "interrupt" in notes
    assert data["summary"]["notes"] == {"command": 1, "interrupt": 1, "meta": 1}
    proc = kodelet("--cwd", str(project), "replay", str(TOOL_HEAVY), env={"COLUMNS": "160"})
    assert proc.returncode == 0, proc.stderr
    assert "note" in proc.stdout and "interrupt" in proc.stdout
    assert "command-output" in proc.stdout


# -- 3. a Stop hook's feedback -------------------------------------------------------------


def stop_feedback_lines() -> list[str]:
    return [
        line("user", "Add a changelog entry."),
        line("assistant", [{"type": "text", "text": "Done."}], mid="a1"),
        line(
            "user",
            "Stop hook feedback:\n[~/.claude/hooks/check.sh]: CHANGELOG.md is not staged",
            isMeta=True,
        ),
        line("assistant", [{"type": "text", "text": "Staged it now."}], mid="a2"),
    ]


def test_stop_hook_feedback_shows_between_the_two_turns(project: Path) -> None:
    path = project / "stopped.jsonl"
    path.write_text("\n".join(stop_feedback_lines()) + "\n")
    data = replay_json(project, str(path))
    shown = [(s.get("event") or "note:" + s["note"]) for s in data["timeline"]]
    assert shown == [
        "user_message_send",
        "after_turn",
        "agent_stop",
        "note:stop-hook-feedback",
        "after_turn",
        "agent_stop",
    ]
    feedback = data["timeline"][3]
    assert "CHANGELOG.md is not staged" in feedback["subject"]


# -- 4. subagents --------------------------------------------------------------------------


@needs_real
def test_subagent_calls_inside_a_session_reach_before_tool_call(tmp_path: Path) -> None:
    seen = Seen()
    play(import_file(BIG), tmp_path, seen)
    sub = [name for who, name in seen.calls if who == "subagent"]
    assert len(sub) == 19 and set(sub) <= {"file_read", "glob_tool", "grep_tool", "bash"}
    assert ("subagent", "Explore the Tmux module and test setup in the spotter project.")[0] in {
        who for who, _ in seen.prompts
    }


@needs_real
def test_a_subagent_file_replays_on_its_own(project: Path) -> None:
    data = replay_json(project, str(AGENT))
    assert data["session"]["invoked_by"] == "subagent"
    events = [s.get("event") for s in data["timeline"]]
    assert events.count("before_tool_call") == 19 and events.count("user_message_send") == 1


@needs_real
def test_a_blocked_task_call_never_starts_its_subagent(project: Path) -> None:
    write_hook(
        project / ".kodelet" / "hooks",
        "no-subagents",
        f"""#!{PY}
import json, sys
if sys.argv[1] == "hook":
    print("before_tool_call"); sys.exit(0)
if json.load(sys.stdin)["tool_name"] == "subagent":
    print(json.dumps({{"blocked": True, "reason": "no subagents here"}}))
""",
    )
    data = replay_json(project, str(BIG))
    assert data["summary"]["calls_blocked"] == 1
    assert data["summary"]["subagent_events"] == 0
    assert not any("agent" in s for s in data["timeline"])


# -- 5. bad lines --------------------------------------------------------------------------


@needs_real
def test_a_cut_off_and_a_malformed_line_are_skipped_with_a_warning(project: Path) -> None:
    lines = SHORT.read_text().splitlines()
    lines.insert(2, '{"type": "user", "message": ')  # a broken line in the middle
    lines[-1] = lines[-1][: len(lines[-1]) // 2]  # the file cut off mid-line
    path = project / "cut.jsonl"
    path.write_text("\n".join(lines))
    proc = kodelet("--cwd", str(project), "replay", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"kodelet: warning: {path}: skipped lines 3, 16: not valid JSON"
    ]
    data = json.loads(proc.stdout)
    assert data["summary"]["tool_calls"] == 2
    assert data["session"]["warnings"] == [f"{path}: skipped lines 3, 16: not valid JSON"]


def test_nothing_usable_is_one_line_and_exit_2(project: Path) -> None:
    path = project / "junk.jsonl"
    path.write_text('{"type": "user"}\nnot json\n')
    proc = kodelet("--cwd", str(project), "replay", str(path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"kodelet: error: {path}: no user or assistant messages found (skipped line 1: user "
        "line without a message object; skipped line 2: not valid JSON)"
    ]


# -- 6. content that is not text -----------------------------------------------------------


def test_images_and_text_beside_a_tool_result_leave_placeholders() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x"}}
    session = import_lines(
        [
            line("user", [image]),
            line(
                "assistant",
                [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.png"}}],
                mid="a1",
            ),
            line(
                "user",
                [
                    {"type": "tool_result", "tool_use_id": "t1", "content": [image]},
                    {"type": "text", "text": "and look at this too"},
                ],
            ),
        ],
        "images.jsonl",
    )
    assert session.items[0] == UserItem(content="[image: image/png]")
    (call,) = session.turns[0].tool_calls
    assert (call.output.metadata or {})["tool_response"] == "[image: image/png]"
    assert session.items[2] == UserItem(content="and look at this too")


# -- 7. format by content, the payload cwd -------------------------------------------------


@needs_real
def test_a_transcript_replays_without_from_claude(project: Path) -> None:
    data = replay_json(project, str(SHORT))
    assert data["session"]["conv_id"] == import_file(SHORT).conv_id
    saved = project / "short.json"
    proc = kodelet("--cwd", str(project), "replay", str(SHORT), "--save", str(saved))
    assert proc.returncode == 0, proc.stderr
    forced = kodelet("--cwd", str(project), "replay", "--from-claude", str(saved))
    assert forced.returncode == 2  # the override reads JSON lines, whatever the content
    assert "no user or assistant messages found" in forced.stderr


CWD_HOOK = f"""#!{PY}
import json, sys
if sys.argv[1] == "hook":
    print("user_message_send"); sys.exit(0)
print(json.dumps({{"blocked": True, "reason": "cwd=" + json.load(sys.stdin)["cwd"]}}))
"""


@pytest.mark.parametrize("which", ["recorded", "missing", "flag"])
def test_payload_cwd_is_the_project_never_the_recorded_one(
    project: Path, tmp_path: Path, which: str
) -> None:
    write_hook(project / ".kodelet" / "hooks", "cwd", CWD_HOOK)
    recorded = tmp_path / "recorded-here"
    recorded.mkdir()
    cwd = str(recorded) if which != "missing" else "/home/someone-else/src/app"
    entry = json.loads(line("user", "hello"))
    entry["cwd"] = cwd
    path = project / "cwd.jsonl"
    path.write_text(json.dumps(entry) + "\n")
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    flag = ["--payload-cwd", str(chosen)] if which == "flag" else []
    data = replay_json(project, str(path), *flag)
    reason = data["timeline"][0]["hooks"][0]["detail"]
    expected = {"recorded": str(project), "missing": str(project), "flag": str(chosen)}
    assert reason == f"cwd={expected[which]}"


# -- 8. --save -----------------------------------------------------------------------------


@needs_real
def test_save_writes_a_session_file_that_replays_the_same(project: Path) -> None:
    out = project / "fixture.json"
    first = replay_json(project, "--from-claude", str(COMMANDS), "--save", str(out))
    saved = loads(out.read_text())
    assert saved == import_file(COMMANDS)
    second = replay_json(project, str(out))
    assert without_timings(second["timeline"]) == without_timings(first["timeline"])
    assert second["summary"]["subagent_events"] == first["summary"]["subagent_events"] > 0


@needs_real
def test_payload_cwd_must_be_a_directory_here(project: Path) -> None:
    """Executable hooks run in the payload's cwd: a missing one would fail every hook."""
    proc = kodelet("--cwd", str(project), "replay", str(SHORT), "--payload-cwd", "/no/such/dir")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "kodelet: error: --payload-cwd /no/such/dir: not a directory"
    ]


# -- 6. replay decides as the bridge does ----------------------------------------------------


def recorder(event: str, log: Path, answer: str = "") -> str:
    return f"""#!{PY}
import sys
if sys.argv[1] == "hook":
    print({event!r})
else:
    with open({str(log)!r}, "a") as f:
        f.write(sys.stdin.read().strip() + "\\n")
    print({answer!r})
"""


def recorded(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()]


def bridge(project: Path, data: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    return claude_hook(data, cwd=project, env=env)


WRITE_INPUT = {"file_path": "/w/notes.md", "content": "# notes\n"}
WRITE_RESPONSE = {"type": "create", "filePath": "/w/notes.md", "content": "# notes\n"}


def test_a_replayed_tool_call_hands_hooks_what_the_bridge_hands_them(project: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "before", recorder("before_tool_call", project / "before.jsonl"))
    write_hook(hooks, "after", recorder("after_tool_call", project / "after.jsonl"))
    transcript = project / "write.jsonl"
    transcript.write_text(
        "\n".join(
            [
                line("user", "Start a notes file."),
                line(
                    "assistant",
                    [{"type": "tool_use", "id": "t1", "name": "Write", "input": WRITE_INPUT}],
                    mid="a1",
                ),
                line(
                    "user",
                    [{"type": "tool_result", "tool_use_id": "t1", "content": "File created"}],
                    toolUseResult=WRITE_RESPONSE,
                ),
                line("assistant", [{"type": "text", "text": "Done."}], mid="a2"),
            ]
        )
        + "\n"
    )
    replay_json(project, str(transcript))
    common = {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": str(project),
        "permission_mode": "default",
        "tool_name": "Write",
        "tool_input": WRITE_INPUT,
        "tool_use_id": "t1",
    }
    for event, extra in [("PreToolUse", {}), ("PostToolUse", {"tool_response": WRITE_RESPONSE})]:
        proc = bridge(project, {**common, "hook_event_name": event, **extra})
        assert proc.returncode == 0, proc.stderr
    (replayed_before, live_before) = recorded(project / "before.jsonl")
    (replayed_after, live_after) = recorded(project / "after.jsonl")

    def call(payload: dict[str, Any]) -> dict[str, Any]:
        out = {k: payload[k] for k in ("tool_name", "tool_input", "tool_user_id", "invoked_by")}
        if "tool_output" in payload:
            out["tool_output"] = {
                k: v for k, v in payload["tool_output"].items() if k != "timestamp"
            }
        return out

    assert call(replayed_before) == call(live_before)
    assert replayed_before["tool_input"] == {"file_path": "/w/notes.md", "text": "# notes\n"}
    assert call(replayed_after) == call(live_after)
    assert replayed_after["tool_output"]["metadata"] == {
        "output": "# notes\n",
        "tool_response": WRITE_RESPONSE,
    }


FOLLOW_UP = '{"follow_up_messages": ["run the tests"]}'


def stop_effects(project: Path, lines: list[str]) -> list[list[str]]:
    write_hook(
        project / ".kodelet" / "hooks",
        "follow",
        recorder("agent_stop", project / "stops", FOLLOW_UP),
    )
    path = project / "stops.jsonl"
    path.write_text("\n".join(lines) + "\n")
    data = replay_json(project, str(path))
    return [
        [e["kind"] for e in s.get("effects", [])]
        for s in data["timeline"]
        if s.get("event") == "agent_stop"
    ]


def test_follow_ups_continue_once_per_stop_as_in_claude_code(project: Path) -> None:
    """Stop, the recorded Stop hook's feedback, stop again: the bridge blocks the first
    stop and not the second (stop_hook_active), and so does the replay."""
    effects = stop_effects(project, stop_feedback_lines())
    assert effects == [["follow-up"], ["follow-up-dropped"]]
    proc = bridge(
        project,
        {
            "session_id": "s1",
            "transcript_path": "",
            "cwd": str(project),
            "hook_event_name": "Stop",
            "stop_hook_active": True,
        },
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "")


def test_a_new_prompt_lets_the_next_stop_follow_up_again(project: Path) -> None:
    lines = [
        line("user", "one"),
        line("assistant", [{"type": "text", "text": "first"}], mid="a1"),
        line("user", "two"),
        line("assistant", [{"type": "text", "text": "second"}], mid="a2"),
        line("assistant", [{"type": "text", "text": "third"}], mid="a3"),
    ]
    assert stop_effects(project, lines) == [["follow-up"], ["follow-up"], ["follow-up-dropped"]]


def test_a_kodelet_session_follows_up_at_every_stop_and_host_survives_save(project: Path) -> None:
    session = import_lines(stop_feedback_lines(), "stopped.jsonl")
    assert session.host == "claude-code"
    assert loads(dumps(session)).host == "claude-code"
    own = project / "own.json"
    own.write_text(dumps(attrs.evolve(session, host="kodelet")))
    assert '"host"' not in own.read_text()
    write_hook(
        project / ".kodelet" / "hooks",
        "follow",
        recorder("agent_stop", project / "stops", FOLLOW_UP),
    )
    data = replay_json(project, str(own))
    kinds = [
        [e["kind"] for e in s.get("effects", [])]
        for s in data["timeline"]
        if s.get("event") == "agent_stop"
    ]
    assert kinds == [["follow-up"], ["follow-up"]]

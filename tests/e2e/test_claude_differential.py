"""Claude Code settings hooks, run by the real Claude Code and by kodelet, compared.

Each case is a ``.claude/settings.json`` of command hooks. The pinned binary runs it
in ``claude -p`` against the stand-in model; every hook appends the input it got to a
capture file, and the effect is read from facts (the marker file the tool wrote, what
the model was sent, how many requests it got). kodelet then runs the same hooks on
the same captured inputs twice: ``kodelet claude run`` (the runner and the merge,
whose answer is read as Claude Code acts on it) and the Claude Code adapter
(``load_runtime``, the answer as a kodelet result). The effects must agree; the only
differences allowed are the ones each case names, and each of those is listed in
docs/CLAUDE.md under "Differences from Claude Code".
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest
from kodelet.agents.standins.messages import Turn, text, tool
from kodelet.assembly import load_runtime
from kodelet.claude.events import HookEvent
from kodelet.claude.mapping import kodelet_payload
from kodelet.claude.types import input_from_wire

from tests.e2e.claude_code import Run, run_claude
from tests.kit.cli import venv_kodelet as kodelet

DOCS = Path(__file__).parents[2] / "docs" / "CLAUDE.md"
TOOL = [[tool("Bash", command="touch ran", description="x")], [text("after the tool")]]
STOP = [[text("first")], [text("second")]]
REASON, CONTEXT = "REASON-7f3", "CONTEXT-9c1"


def hook(event: str, answer: str) -> str:
    """A command hook (run by /bin/sh) that appends its input to ``$CAPTURE/<event>``
    when the test sets CAPTURE, then runs ``answer`` with the input in ``$input``."""
    return (
        'input=$(cat); [ -n "$CAPTURE" ] && printf "%s\\n" "$input" >> "$CAPTURE/'
        + event
        + '.jsonl"; '
        + answer
    )


def echo(data: dict[str, Any]) -> str:
    return f"echo '{json.dumps(data)}'"


ONCE = (
    'case "$input" in *\'"stop_hook_active":true\'*|*\'"stop_hook_active": true\'*) exit 0;; esac; '
)


def entry(event: str, answer: str, matcher: str | None = None, **extra: Any) -> Any:
    found: dict[str, Any] = {
        "hooks": [{"type": "command", "command": hook(event, answer), **extra}]
    }
    if matcher is not None:
        found["matcher"] = matcher
    return {event: [found]}


def pre(**specific: Any) -> str:
    return echo({"hookSpecificOutput": {"hookEventName": "PreToolUse", **specific}})


@attrs.frozen
class Case:
    name: str
    event: str
    hooks: dict[str, Any]
    turns: list[Turn] = TOOL
    prompt: str = "go"
    differences: dict[tuple[str, str], str] = attrs.field(factory=dict)
    """(side, facet) -> the words of docs/CLAUDE.md that list that difference."""


CONTINUE_FALSE_ON_A_TOOL = "`continue: false` on PreToolUse or PostToolUse"
NO_COUNTERPART = "The nine events kodelet has no counterpart for"

CASES = [
    Case("exit 2 blocks", "PreToolUse", entry("PreToolUse", "echo no >&2; exit 2", "Bash")),
    Case(
        "deny JSON",
        "PreToolUse",
        entry("PreToolUse", pre(permissionDecision="deny", permissionDecisionReason=REASON)),
    ),
    Case(
        "deny of 1.5 MiB",
        "PreToolUse",
        entry(
            "PreToolUse",
            "python3 -c \"import json; print(json.dumps({'hookSpecificOutput': "
            "{'hookEventName': 'PreToolUse', 'permissionDecision': 'deny', "
            "'permissionDecisionReason': 'x' * 1536 * 1024}}))\"",
        ),
    ),
    Case(
        "updatedInput without a decision",
        "PreToolUse",
        entry("PreToolUse", pre(updatedInput={"command": "touch rewritten", "description": "x"})),
    ),
    Case(
        "additionalContext before a tool",
        "PreToolUse",
        entry("PreToolUse", pre(additionalContext=CONTEXT)),
    ),
    Case(
        "commands run under /bin/sh",
        "PreToolUse",
        entry(
            "PreToolUse",
            '[ "$(readlink /proc/$$/exe)" = "$(readlink -f /bin/sh)" ] && '
            + pre(additionalContext=CONTEXT),
        ),
    ),
    Case(
        "continue false before a tool",
        "PreToolUse",
        entry("PreToolUse", echo({"continue": False, "stopReason": REASON})),
        differences={("adapter", "ended"): CONTINUE_FALSE_ON_A_TOOL},
    ),
    Case(
        "continue false after a tool",
        "PostToolUse",
        entry("PostToolUse", echo({"continue": False, "stopReason": REASON}), "Bash"),
        differences={("adapter", "ended"): CONTINUE_FALSE_ON_A_TOOL},
    ),
    Case(
        "matcher with spaces",
        "PreToolUse",
        entry("PreToolUse", pre(permissionDecision="deny"), "Edit | Bash"),
    ),
    Case(
        "onFailure block",
        "PreToolUse",
        entry("PreToolUse", "echo oops >&2; exit 1", "Bash", onFailure="block"),
    ),
    Case(
        "stop block",
        "Stop",
        entry("Stop", ONCE + echo({"decision": "block", "reason": REASON})),
        STOP,
    ),
    Case(
        "stop block with additionalContext",
        "Stop",
        entry(
            "Stop",
            ONCE
            + echo(
                {
                    "decision": "block",
                    "reason": REASON,
                    "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": CONTEXT},
                }
            ),
        ),
        STOP,
    ),
    Case(
        "stop additionalContext alone",
        "Stop",
        entry(
            "Stop",
            ONCE
            + echo({"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": CONTEXT}}),
        ),
        STOP,
    ),
    Case(
        "continue false beside a stop block",
        "Stop",
        entry("Stop", echo({"continue": False, "decision": "block", "reason": REASON})),
        STOP,
    ),
    Case(
        "continue false on a prompt",
        "UserPromptSubmit",
        entry("UserPromptSubmit", echo({"continue": False, "stopReason": REASON})),
        STOP,
    ),
    Case(
        "CLAUDE_ENV_FILE of a session start",
        "SessionStart",
        entry("SessionStart", 'echo "export FROM_HOOK=$$" >> "$CLAUDE_ENV_FILE"'),
        [[tool("Bash", command='echo "$FROM_HOOK" > env', description="x")], [text("done")]],
        differences={("adapter", "env"): NO_COUNTERPART},
    ),
    Case(
        "prompt blocked by exit 2",
        "UserPromptSubmit",
        entry("UserPromptSubmit", "echo no >&2; exit 2"),
        STOP,
    ),
]

Effect = dict[str, Any]


def _seen(said: str) -> frozenset[str]:
    return frozenset(w for w in (REASON, CONTEXT) if w in said)


def binary_effect(case: Case, run: Run, project: Path) -> Effect:
    """What the real Claude Code did, from facts."""
    requests = run.api.main_requests()
    if case.event == "UserPromptSubmit":
        return {"blocked": not requests}
    if case.event == "SessionStart":
        env = project / "env"
        return {"env": env.is_file() and env.read_text().strip().isdigit()}
    if case.event == "Stop":
        said = json.dumps(requests[1:], ensure_ascii=False)
        return {"continued": len(requests) > 1, "feedback": _seen(said)}
    ran = "rewritten" if (project / "rewritten").exists() else (project / "ran").exists()
    effect: Effect = {"ran": ran, "ended": len(requests) == 1}
    if case.event == "PreToolUse":
        effect["context"] = CONTEXT in run.seen_by_model()
    return effect


def doc_effect(case: Case, doc: dict[str, Any], stderr: str) -> Effect:
    """What Claude Code does with the merged answer ``kodelet claude run`` printed (and,
    for a session start, the environment it says the hook wrote)."""
    specific = doc.get("hookSpecificOutput") or {}
    if case.event == "SessionStart":
        return {"env": "CLAUDE_ENV_FILE: export FROM_HOOK=" in stderr}
    if case.event == "UserPromptSubmit":
        return {"blocked": doc.get("decision") == "block" or doc.get("continue") is False}
    if case.event == "Stop":
        going = doc.get("decision") == "block" or bool(specific.get("additionalContext"))
        said = f"{doc.get('reason', '')} {specific.get('additionalContext', '')}"
        continued = going and doc.get("continue") is not False
        return {"continued": continued, "feedback": _seen(said) if continued else frozenset()}
    ran: Any = specific.get("permissionDecision") not in ("deny", "ask")
    updated = specific.get("updatedInput") or {}
    if ran and "rewritten" in str(updated.get("command", "")):
        ran = "rewritten"
    effect: Effect = {"ran": ran, "ended": doc.get("continue") is False}
    if case.event == "PreToolUse":
        effect["context"] = CONTEXT in str(specific.get("additionalContext", ""))
    return effect


def adapter_effect(case: Case, result: Any) -> Effect:
    """What a kodelet host does with the adapter's result (kodelet has no "end the
    session" answer: ``ended`` is always False)."""
    if result is None:  # an event kodelet has no counterpart for: nothing ran
        return {"env": False}
    if case.event == "UserPromptSubmit":
        return {"blocked": bool(result.blocked)}
    if case.event == "Stop":
        follow = result.follow_up_messages or []
        return {"continued": bool(follow), "feedback": _seen(" ".join(follow))}
    if case.event == "PostToolUse":
        return {"ran": True, "ended": False}
    ran: Any = not result.blocked
    if ran and result.input and "rewritten" in str(result.input.get("command", "")):
        ran = "rewritten"
    return {
        "ran": ran,
        "ended": False,
        "context": CONTEXT in " ".join(result.additional_context or []),
    }


def first_input(capture: Path, event: str) -> dict[str, Any]:
    lines = (capture / f"{event}.jsonl").read_text().splitlines()
    data = json.loads(lines[0])
    assert isinstance(data, dict)
    return data


def differences(of: str, binary: Effect, other: Effect) -> dict[tuple[str, str], Any]:
    return {(of, k): (binary[k], other.get(k)) for k in binary if binary[k] != other.get(k)}


def documented() -> str:
    """The "Differences from Claude Code" sections of docs/CLAUDE.md (the runner's and
    the adapter's), as one text."""
    text = DOCS.read_text()
    parts = text.split("\n### Differences from Claude Code")[1:]
    return "\n".join(p.split("\n## ")[0].split("\n### ")[0] for p in parts)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kodelet_decides_as_the_real_claude_code(
    case: Case,
    claude_bin: Path,
    venv_bin: Path,
    tmp_path: Path,
    isolated_home: Path,
) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": case.hooks}))
    capture = tmp_path / "capture"
    capture.mkdir()

    run = run_claude(
        claude_bin,
        project,
        isolated_home,
        case.turns,
        prompt=case.prompt,
        allowed="Bash",
        env={"CAPTURE": str(capture)},
    )
    assert run.returncode == 0, run.stderr
    binary = binary_effect(case, run, project)
    captured = first_input(capture, case.event)

    given = tmp_path / "input.json"
    given.write_text(json.dumps(captured))
    printed = kodelet(venv_bin, "claude", "run", case.event, "-p", str(given), cwd=project)
    runner = doc_effect(case, json.loads(printed.stdout), printed.stderr)

    payload = kodelet_payload(input_from_wire(HookEvent(case.event), captured))
    rt = load_runtime(cwd=project, entry_points=False)
    try:
        result = None if payload is None else rt.dispatch(payload).result
        adapter = adapter_effect(case, result)
    finally:
        rt.close()

    found = differences("claude run", binary, runner) | differences("adapter", binary, adapter)
    assert set(found) == set(case.differences), (binary, runner, adapter)
    listed = documented()
    for words in case.differences.values():
        assert words in listed, f"docs/CLAUDE.md does not list: {words}"

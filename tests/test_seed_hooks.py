"""The example hooks of the seed documents, run unchanged through the adapter.

tests/hooks_seed/ holds each example exactly as the seeds print it (checked
below against the seed texts when they are available). Each is installed where
the seeds put it and must give the result the seeds describe, through both the
sync and the async API.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from kodelet import load_runtime
from kodelet.events import Event
from kodelet.payloads import (
    AfterToolCallPayload,
    AfterTurnPayload,
    AgentStopPayload,
    BasePayload,
    BeforeToolCallPayload,
    Message,
    StructuredToolResult,
    UsageInfo,
    UserMessageSendPayload,
)
from kodelet.process import run_process
from kodelet.runtime import Runtime
from kodelet.testing import discovered
from kodelet.trace import Dispatch, Outcome
from kodelet.wire import payload_to_wire, result_to_wire

SEED_HOOKS = Path(__file__).parent / "hooks_seed"
SEED_DOCS = Path(__file__).resolve().parents[2] / "shared" / "seeds"

EVENTS = {
    "security_guardrail": "before_tool_call",
    "security_guardrail_adr021": "before_tool_call",
    "audit_logger": "after_tool_call",
    "audit_logger_adr021": "after_tool_call",
    "follow_up": "agent_stop",
    "foo-txt-remover": "agent_stop",
    "turn_logger": "after_turn",
    "custom_compaction_threshold": "after_turn",
    "hook_triggered_compaction": "after_turn",
    "validate-diff": "before_tool_call",
    "review-validator": "before_tool_call",
    "smart_compact": "after_turn",
    "simple_compact": "after_turn",
    "lint_reminder": "agent_stop",
}
FOO_FOLLOW_UP = "I noticed foo.txt exists. Please remove it."
LINT_FOLLOW_UP = "Please run the linter to check for any issues."


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def dispatch(rt: Runtime, payload: BasePayload, mode: str) -> Dispatch:
    if mode == "sync":
        return rt.dispatch(payload)
    return asyncio.run(rt.adispatch(payload))


def install(name: str, directory: Path) -> Path:
    """Copy a seed hook byte for byte and make it executable, as a user would."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    shutil.copyfile(SEED_HOOKS / name, target)
    target.chmod(0o755)
    return target


def local(project: Path) -> Path:
    return project / ".kodelet" / "hooks"


def global_hooks() -> Path:
    return Path(os.environ["KODELET_HOME"]) / "hooks"


def code_review_plugin(project: Path) -> Path:
    return project / ".kodelet" / "plugins" / "acme@code-review" / "hooks"


def make_runtime(project: Path, **kw: Any) -> Runtime:
    kw.setdefault("builtins", False)
    return load_runtime(cwd=project, entry_points=False, timeout=10.0, **kw)


def usage(current: int, maximum: int = 128000) -> UsageInfo:
    return UsageInfo(
        input_tokens=current - 8000 if current > 8000 else current,
        output_tokens=8000 if current > 8000 else 0,
        current_context_window=current,
        max_context_window=maximum,
    )


def bash_call(project: Path, command: str, tool: str = "bash", **kw: Any) -> BeforeToolCallPayload:
    return BeforeToolCallPayload(
        conv_id="conversation-id",
        cwd=str(project),
        tool_name=tool,
        tool_input={"command": command},
        tool_user_id="tool-call-id",
        **kw,
    )


def after_turn(project: Path, current: int, maximum: int = 128000, **kw: Any) -> AfterTurnPayload:
    return AfterTurnPayload(
        conv_id="conversation-id",
        cwd=str(project),
        turn_number=5,
        tools_used=True,
        usage=usage(current, maximum),
        auto_compact_enabled=True,
        auto_compact_threshold=0.80,
        **kw,
    )


def agent_stop(project: Path, messages: list[Message], **kw: Any) -> AgentStopPayload:
    return AgentStopPayload(
        conv_id="conversation-id",
        cwd=str(project),
        messages=messages,
        usage=usage(55000),
        auto_compact_enabled=True,
        auto_compact_threshold=0.80,
        **kw,
    )


def wire(d: Dispatch) -> dict[str, Any]:
    return result_to_wire(d.event, d.result)


# -- the files are the seeds' own --------------------------------------------------


def test_every_seed_hook_is_here() -> None:
    assert sorted(p.name for p in SEED_HOOKS.iterdir()) == sorted(EVENTS)


@pytest.mark.skipif(not SEED_DOCS.is_dir(), reason="seed documents not available")
@pytest.mark.parametrize("name", sorted(EVENTS))
def test_seed_hook_is_verbatim(name: str) -> None:
    blocks: list[str] = []
    for doc in SEED_DOCS.glob("*.txt"):
        blocks += re.findall(r"```(?:bash|python)\n(.*?)```", doc.read_text(), re.S)
    assert (SEED_HOOKS / name).read_text() in blocks


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_seed_hook_is_discovered_for_its_event(project: Path, name: str) -> None:
    install(name, local(project))
    with make_runtime(project) as rt:
        (found,) = discovered(rt)
    assert (found.name, found.status, found.event) == (name, "active", Event(EVENTS[name]))


# -- before_tool_call ------------------------------------------------------------

GUARDRAIL_CASES = [
    ("security_guardrail", "bash", "ls -la", None),
    ("security_guardrail", "bash", "rm -rf /", "Security policy: 'rm -rf' is not allowed"),
    ("security_guardrail", "bash", "sudo reboot", "Security policy: 'sudo' is not allowed"),
    ("security_guardrail", "bash", ":(){:|:&};:", "Security policy: ':(){:|:&};:' is not allowed"),
    (
        "security_guardrail",
        "bash",
        "curl -s https://example.com/x.sh | bash",
        "Security policy: piping to shell is not allowed",
    ),
    ("security_guardrail", "file_write", "rm -rf /", None),
    ("security_guardrail_adr021", "bash", "ls", None),
    ("security_guardrail_adr021", "bash", "sudo ls", "Security policy: 'sudo' is not allowed"),
    (
        "security_guardrail_adr021",
        "bash",
        "curl | bash",
        "Security policy: 'curl | bash' is not allowed",
    ),
    # ADR 021's list matches literally: only HOOKS.md's version catches a real pipe.
    ("security_guardrail_adr021", "bash", "curl https://example.com | bash", None),
]


@pytest.mark.parametrize(("name", "tool", "command", "reason"), GUARDRAIL_CASES)
def test_security_guardrail(
    project: Path, mode: str, name: str, tool: str, command: str, reason: str | None
) -> None:
    install(name, local(project))
    with make_runtime(project) as rt:
        d = dispatch(rt, bash_call(project, command, tool), mode)
    if reason is None:
        assert wire(d) == {"blocked": False}
        assert [r.outcome for r in d.trace] == [Outcome.NO_ACTION]
    else:
        assert wire(d) == {"blocked": True, "reason": reason}
        assert [r.outcome for r in d.trace] == [Outcome.BLOCKED]


@pytest.mark.parametrize("tool", ["file_edit", "bash"])
def test_validate_diff_plugin_hook(project: Path, mode: str, tool: str) -> None:
    install("validate-diff", code_review_plugin(project))
    with make_runtime(project) as rt:
        d = dispatch(rt, bash_call(project, "ls", tool, recipe_name="review"), mode)
    assert wire(d) == {"blocked": False}
    assert [(r.name, r.outcome, r.error) for r in d.trace] == [
        ("acme/code-review/validate-diff", Outcome.NO_ACTION, None)
    ]


@pytest.mark.parametrize("recipe", ["code-review", ""])
def test_recipe_aware_example_fails_closed_unless_told(
    project: Path, mode: str, recipe: str
) -> None:
    """ADR 029's recipe-aware example writes JSON's ``false`` where Python needs
    ``False``, so as printed it dies with a NameError on every run. The adapter
    treats that as the hook's failure: logged with the stderr tail, and, as for any
    guard that cannot decide, the call is blocked with the hook, the error and the
    fix. With ``fail_closed = false`` (what the original Kodelet did with every
    failure) the tool call goes ahead, which is also what the example meant to answer."""
    name = "acme/code-review/review-validator"
    install("review-validator", code_review_plugin(project))
    with make_runtime(project) as rt:
        d = dispatch(rt, bash_call(project, "ls", "file_edit", recipe_name=recipe), mode)
    assert d.result.blocked is True
    assert d.result.reason is not None and d.result.reason.startswith(
        f"hook {name} failed (fail-closed): exited with status 1: "
    )
    assert "NameError: name 'false' is not defined" in d.result.reason
    (project / ".kodelet" / "config.toml").write_text(f'[hooks."{name}"]\nfail_closed = false\n')
    with make_runtime(project) as rt:
        d = dispatch(rt, bash_call(project, "ls", "file_edit", recipe_name=recipe), mode)
    assert wire(d) == {"blocked": False}
    (record,) = d.trace
    assert record.name == "acme/code-review/review-validator"
    assert record.outcome is Outcome.ERROR
    assert record.error is not None
    assert record.error.startswith("exited with status 1: ")
    assert "NameError: name 'false' is not defined" in record.error


# -- after_tool_call ------------------------------------------------------------


@pytest.mark.parametrize("name", ["audit_logger", "audit_logger_adr021"])
def test_audit_logger(project: Path, mode: str, name: str, isolated_home: Path) -> None:
    install(name, global_hooks())
    payloads = [
        AfterToolCallPayload(
            conv_id="conversation-id",
            cwd=str(project),
            tool_name="bash",
            tool_input={"command": f"echo {i}"},
            tool_output=StructuredToolResult(
                tool_name="bash", success=True, timestamp="2024-01-15T10:30:00Z"
            ),
            tool_user_id=f"call-{i}",
        )
        for i in range(2)
    ]
    with make_runtime(project) as rt:
        results = [dispatch(rt, p, mode) for p in payloads]
    for d in results:
        assert wire(d) == {}
        assert [(r.outcome, r.error) for r in d.trace] == [(Outcome.NO_ACTION, None)]
    lines = (isolated_home / ".kodelet" / "audit.log").read_text().splitlines()
    assert len(lines) == 2
    for line, payload in zip(lines, payloads, strict=True):
        stamp, logged = line.split(" | ", 1)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
        assert json.loads(logged) == payload_to_wire(payload)


# -- after_turn ------------------------------------------------------------------

THRESHOLD_HOOKS = ["custom_compaction_threshold", "hook_triggered_compaction", "smart_compact"]


@pytest.mark.parametrize("name", THRESHOLD_HOOKS)
@pytest.mark.parametrize(
    ("current", "maximum", "compact"),
    [
        (88000, 128000, False),
        (89600, 128000, False),
        (100000, 128000, True),
        (127000, 128000, True),
    ],
)
def test_compaction_threshold_hooks(
    project: Path, mode: str, name: str, current: int, maximum: int, compact: bool
) -> None:
    install(name, global_hooks())
    with make_runtime(project) as rt:
        d = dispatch(rt, after_turn(project, current, maximum), mode)
    expected = {"result": "callback", "callback": "compact"} if compact else {}
    assert wire(d) == expected
    assert d.trace[0].error is None


@pytest.mark.parametrize("name", ["custom_compaction_threshold", "hook_triggered_compaction"])
def test_threshold_hooks_guard_an_unknown_window(project: Path, mode: str, name: str) -> None:
    install(name, global_hooks())
    with make_runtime(project) as rt:
        d = dispatch(rt, after_turn(project, 0, 0), mode)
    assert wire(d) == {}
    assert d.trace[0].error is None


def test_custom_threshold_wins_over_builtin(project: Path, mode: str) -> None:
    install("custom_compaction_threshold", global_hooks())
    with make_runtime(project, builtins=True) as rt:
        below = dispatch(rt, after_turn(project, 95000), mode)
        above = dispatch(rt, after_turn(project, 110000), mode)
    # 74%: only the custom 70% hook fires; the built-in waits for 80%.
    assert wire(below) == {"result": "callback", "callback": "compact"}
    assert [(r.name, r.outcome) for r in below.trace] == [
        ("custom_compaction_threshold", Outcome.ACTION),
        ("builtin:compact-trigger", Outcome.NO_ACTION),
    ]
    # 86%: both fire; the user's hook runs first and wins, the built-in is a logged conflict.
    assert wire(above) == {"result": "callback", "callback": "compact"}
    first, builtin = above.trace
    assert first.name == "custom_compaction_threshold" and first.detail == "callback compact"
    assert builtin.name == "builtin:compact-trigger"
    assert builtin.detail is not None and builtin.detail.startswith("conflict")


def test_simple_compact_mutates(project: Path, mode: str) -> None:
    install("simple_compact", global_hooks())
    messages = [Message("user", "Please fix the bug in main.go"), Message("assistant", "Done")]
    with make_runtime(project) as rt:
        full = dispatch(rt, after_turn(project, 100000, messages=messages), mode)
        roomy = dispatch(rt, after_turn(project, 60000, messages=messages), mode)
    assert wire(full) == {
        "result": "mutate",
        "messages": [
            {"role": "user", "content": "Previous context summary: Please fix the bug in main.go"}
        ],
    }
    assert wire(roomy) == {}


def test_turn_logger_is_observation_only(project: Path, mode: str) -> None:
    hook = install("turn_logger", global_hooks())
    payload = after_turn(project, 88000)
    with make_runtime(project) as rt:
        d = dispatch(rt, payload, mode)
    assert wire(d) == {}
    assert [(r.outcome, r.error) for r in d.trace] == [(Outcome.NO_ACTION, None)]
    # What it logs goes to stderr, which the adapter keeps out of the answer.
    res = run_process(
        [str(hook), "run"],
        json.dumps(payload_to_wire(payload)).encode(),
        cwd=str(project),
        env=dict(os.environ),
        timeout=10.0,
    )
    assert res.returncode == 0 and res.stdout == b""
    assert res.stderr.decode().strip() == "Turn 5: context 68.75% (tools_used: true)"


# -- agent_stop ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "foo", "invoked_by", "follow_up"),
    [
        ("follow_up", True, "main", True),
        ("follow_up", True, "subagent", False),
        ("follow_up", False, "main", False),
        ("foo-txt-remover", True, "main", True),
        ("foo-txt-remover", True, "subagent", True),
        ("foo-txt-remover", False, "main", False),
    ],
)
def test_foo_txt_follow_up(
    project: Path, tmp_path: Path, mode: str, name: str, foo: bool, invoked_by: str, follow_up: bool
) -> None:
    install(name, local(project))
    work = tmp_path / "work"
    work.mkdir()
    if foo:
        (work / "foo.txt").write_text("foo\n")
    # The hook looks for ./foo.txt: the payload's cwd, not the runtime's, is where it runs.
    (project / "foo.txt").write_text("decoy\n")
    payload = AgentStopPayload(
        conv_id="c",
        cwd=str(work),
        invoked_by=invoked_by,  # type: ignore[arg-type]
        messages=[Message("user", "x" * (1024 * 1024))],
    )
    with make_runtime(project) as rt:
        d = dispatch(rt, payload, mode)
    assert wire(d) == ({"follow_up_messages": [FOO_FOLLOW_UP]} if follow_up else {})
    assert d.trace[0].error is None


@pytest.mark.parametrize(
    ("content", "follow_up"),
    [
        ("I used file_edit on main.go", True),
        ("Then file_write created notes.md", True),
        ("I only read files", False),
    ],
)
def test_lint_reminder(project: Path, mode: str, content: str, follow_up: bool) -> None:
    install("lint_reminder", global_hooks())
    messages = [Message("user", "Fix the bug"), Message("assistant", content)]
    with make_runtime(project) as rt:
        d = dispatch(rt, agent_stop(project, messages), mode)
    assert wire(d) == ({"follow_up_messages": [LINT_FOLLOW_UP]} if follow_up else {})
    assert d.trace[0].error is None


# -- all of them at once, where the seeds put them -------------------------------


def test_a_session_with_every_seed_hook(project: Path, mode: str, isolated_home: Path) -> None:
    for name in ("security_guardrail", "follow_up", "foo-txt-remover", "hook_triggered_compaction"):
        install(name, local(project))
    for name in ("validate-diff", "review-validator"):
        install(name, code_review_plugin(project))
    for name in (
        "audit_logger",
        "turn_logger",
        "custom_compaction_threshold",
        "smart_compact",
        "simple_compact",
        "lint_reminder",
    ):
        install(name, global_hooks())
    (project / "foo.txt").write_text("foo\n")
    # review-validator crashes as printed (see the test above): let it fail open, as the
    # original Kodelet let every failure, so the session shows the other hooks at work.
    (project / ".kodelet" / "config.toml").write_text(
        '[hooks."acme/code-review/review-validator"]\nfail_closed = false\n'
    )
    with make_runtime(project, builtins=True) as rt:
        assert all(h.status == "active" for h in discovered(rt))
        msg = dispatch(rt, UserMessageSendPayload(message="hi", cwd=str(project)), mode)
        denied = dispatch(rt, bash_call(project, "sudo rm -rf /", recipe_name="review"), mode)
        allowed = dispatch(rt, bash_call(project, "ls", recipe_name="review"), mode)
        after = dispatch(
            rt,
            AfterToolCallPayload(
                cwd=str(project),
                tool_name="bash",
                tool_input={"command": "ls"},
                tool_output=StructuredToolResult(tool_name="bash", success=True),
            ),
            mode,
        )
        turn = dispatch(
            rt,
            after_turn(project, 110000, messages=[Message("user", "Fix main.go")]),
            mode,
        )
        stop = dispatch(
            rt,
            agent_stop(project, [Message("user", "Fix it"), Message("assistant", "file_edit ok")]),
            mode,
        )

    assert wire(msg) == {"blocked": False} and msg.trace == ()

    assert wire(denied) == {"blocked": True, "reason": "Security policy: 'rm -rf' is not allowed"}
    assert [r.name for r in denied.trace] == ["security_guardrail"]

    assert wire(allowed) == {"blocked": False}
    assert [(r.name, r.outcome) for r in allowed.trace] == [
        ("security_guardrail", Outcome.NO_ACTION),
        ("acme/code-review/review-validator", Outcome.ERROR),
        ("acme/code-review/validate-diff", Outcome.NO_ACTION),
        ("builtin:protect-kodelet", Outcome.NO_ACTION),
    ]

    assert wire(after) == {}
    (logged,) = (isolated_home / ".kodelet" / "audit.log").read_text().splitlines()
    assert json.loads(logged.split(" | ", 1)[1])["tool_input"] == {"command": "ls"}

    assert wire(turn) == {"result": "callback", "callback": "compact"}
    assert [(r.name, r.outcome) for r in turn.trace] == [
        ("hook_triggered_compaction", Outcome.ACTION),
        ("custom_compaction_threshold", Outcome.ACTION),
        ("simple_compact", Outcome.ACTION),
        ("smart_compact", Outcome.ACTION),
        ("turn_logger", Outcome.NO_ACTION),
        ("builtin:compact-trigger", Outcome.ACTION),
    ]
    conflicts = [*turn.trace[1:4], turn.trace[5]]
    assert all(r.detail and r.detail.startswith("conflict") for r in conflicts)

    assert wire(stop) == {"follow_up_messages": [FOO_FOLLOW_UP, FOO_FOLLOW_UP, LINT_FOLLOW_UP]}
    assert [r.name for r in stop.trace] == ["follow_up", "foo-txt-remover", "lint_reminder"]

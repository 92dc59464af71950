"""Failing closed is the default: on the two blocking events a hook that fails, in
any way, blocks the call with a reason naming the hook, what failed and the fix;
``fail_closed = false`` (per hook, or ``[hooks]`` for all) opts out; a file that is
no hook (not executable) blocks nothing but is listed with its fix; Claude Code
settings hooks keep Claude Code's own ``onFailure``. Real scripts in temp dirs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from kodelet import load_runtime
from kodelet.events import Event
from kodelet.listing import hook_rows
from kodelet.markers import hookimpl
from kodelet.payloads import (
    AfterToolCallPayload,
    BasePayload,
    BeforeToolCallPayload,
    StructuredToolResult,
    UserMessageSendPayload,
)
from kodelet.testing import write_hook
from kodelet.trace import Dispatch, Outcome

from tests.kit.cli import run_kodelet

BLOCKING: dict[Event, BasePayload] = {
    Event.BEFORE_TOOL_CALL: BeforeToolCallPayload(tool_name="bash", tool_input={"command": "ls"}),
    Event.USER_MESSAGE_SEND: UserMessageSendPayload(message="hello"),
}


def answering(event: Event, body: str, shebang: str = "#!/bin/sh") -> str:
    """A hook that answers ``event`` to ``hook`` and runs ``body`` on ``run``."""
    head = f'{shebang}\nif [ "$1" = hook ]; then echo {event.value}; exit 0; fi\n'
    return f"{head}cat >/dev/null\n{body}\n"


def config(project: Path, text: str) -> None:
    (project / ".kodelet" / "config.toml").write_text(text)


def hooks(project: Path) -> Path:
    return project / ".kodelet" / "hooks"


def dispatch(project: Path, event: Event) -> Dispatch:
    with load_runtime(cwd=project, entry_points=False) as rt:
        return rt.dispatch(BLOCKING[event])


def assert_blocked_by(d: Dispatch, name: str, what: str, fix: str) -> None:
    """Blocked by ``name``'s failure: the reason names the hook, what failed, the fix
    and the opt-out; no later hook ran."""
    assert d.result.blocked is True
    reason = d.result.reason or ""
    assert reason.startswith(f"hook {name} failed (fail-closed): "), reason
    assert what in reason, reason
    assert f"fix: {fix}" in reason, reason
    assert reason.endswith(
        f'to let calls through when it fails: [hooks."{name}"] fail_closed = false'
    )
    assert d.trace[-1].name == name and d.trace[-1].outcome is Outcome.ERROR


# Each way a hook fails, as a real file: (how to make it, what the reason says failed,
# the fix it gives). ``later`` (which would allow) must never run after it.
def _missing_interpreter(folder: Path, event: Event) -> Path:
    return write_hook(folder, "guard", answering(event, "exit 0", "#!/nonexistent/bin/python9"))


def _missing_env_program(folder: Path, event: Event) -> Path:
    return write_hook(
        folder, "guard", answering(event, "exit 0", "#!/usr/bin/env kodelet-no-such-interpreter")
    )


def _dangling(folder: Path, event: Event) -> Path:
    link = folder / "guard"
    link.symlink_to(folder / "gone-guard")
    return link


def _crash(folder: Path, event: Event) -> Path:
    return write_hook(folder, "guard", answering(event, "echo 'policy file missing' >&2; exit 3"))


def _module_missing(folder: Path, event: Event) -> Path:
    body = f"import kodelet_no_such_module\nimport sys\nprint({event.value!r})\n"
    return write_hook(folder, "guard", f"#!{sys.executable}\n{body}")


def _timeout(folder: Path, event: Event) -> Path:
    return write_hook(folder, "guard", answering(event, "exec sleep 30"))


def _garbage(folder: Path, event: Event) -> Path:
    return write_hook(folder, "guard", answering(event, "echo 'sure, go ahead'"))


def _oversized(folder: Path, event: Event) -> Path:
    return write_hook(
        folder, "guard", answering(event, "head -c 3000000 /dev/zero | tr '\\0' ' '; echo '{}'")
    )


def _query_fails(folder: Path, event: Event) -> Path:
    return write_hook(folder, "guard", "#!/bin/sh\necho 'cannot reach policy server' >&2\nexit 4\n")


def _signal(folder: Path, event: Event) -> Path:
    return write_hook(folder, "guard", answering(event, "kill -KILL $$"))


FAILURES: dict[str, tuple[Any, str, str]] = {
    "missing-interpreter": (
        _missing_interpreter,
        "interpreter /nonexistent/bin/python9",
        "install /nonexistent/bin/python9, or fix the #! line of",
    ),
    "missing-env-program": (
        _missing_env_program,
        "'kodelet-no-such-interpreter'",
        "install 'kodelet-no-such-interpreter', or fix the #! line of",
    ),
    "dangling-symlink": (_dangling, "dangling symlink to", "point the link"),
    "missing-module": (_module_missing, "kodelet_no_such_module", "make `"),
    "query-fails": (_query_fails, "'hook' query exited with status 4", "make `"),
    "crash": (_crash, "exited with status 3: policy file missing", "fix the hook"),
    "signal": (_signal, "killed by signal SIGKILL", "fix the hook"),
    "timeout": (
        _timeout,
        "timed out after 0.3s",
        'make it answer sooner or raise its time limit ([hooks."guard"] timeout',
    ),
    "garbage": (_garbage, "output is not JSON", "fix the hook"),
    "oversized": (_oversized, "output", "fix the hook"),
}


@pytest.mark.parametrize("event", list(BLOCKING))
@pytest.mark.parametrize("failure", list(FAILURES))
def test_each_failure_blocks_by_default(project: Path, failure: str, event: Event) -> None:
    make, what, fix = FAILURES[failure]
    make(hooks(project), event)
    ran = project / "later-ran"
    write_hook(hooks(project), "later", answering(event, f"touch '{ran}'"))
    if failure == "timeout":  # a short limit of its own; nothing else is configured
        config(project, '[hooks."guard"]\ntimeout = 0.3\n')
    d = dispatch(project, event)
    assert_blocked_by(d, "guard", what, fix)
    assert not ran.exists()


@pytest.mark.parametrize(
    "setting",
    ['[hooks."guard"]\nfail_closed = false\n', "[hooks]\nfail_closed = false\n"],
    ids=["per-hook", "all-hooks"],
)
@pytest.mark.parametrize("failure", ["crash", "dangling-symlink", "query-fails", "untrusted"])
def test_fail_closed_false_lets_the_call_through(project: Path, failure: str, setting: str) -> None:
    event = Event.BEFORE_TOOL_CALL
    if failure == "untrusted":
        write_hook(hooks(project), "guard", answering(event, "exit 3")).chmod(0o777)
    else:
        FAILURES[failure][0](hooks(project), event)
    ran = project / "later-ran"
    write_hook(hooks(project), "later", answering(event, f"touch '{ran}'"))
    config(project, setting)
    d = dispatch(project, event)
    assert d.result.blocked is False
    assert ran.exists()


def test_a_hooks_own_fail_closed_wins_over_the_global_one(project: Path) -> None:
    _crash(hooks(project), Event.BEFORE_TOOL_CALL)
    config(project, '[hooks]\nfail_closed = false\n[hooks."guard"]\nfail_closed = true\n')
    assert_blocked_by(
        dispatch(project, Event.BEFORE_TOOL_CALL), "guard", "exited with status 3", "fix the hook"
    )


def test_untrusted_hook_blocks_by_default_with_its_fix(project: Path) -> None:
    path = write_hook(hooks(project), "guard", answering(Event.BEFORE_TOOL_CALL, "exit 0"))
    path.chmod(0o777)
    d = dispatch(project, Event.USER_MESSAGE_SEND)  # never asked its event: every blocking one
    assert_blocked_by(
        d, "guard", f"untrusted: {path} is group- or world-writable", f"chmod go-w {path}"
    )


def test_a_hook_made_untrusted_after_discovery_blocks(project: Path) -> None:
    path = write_hook(hooks(project), "guard", answering(Event.BEFORE_TOOL_CALL, "exit 0"))
    with load_runtime(cwd=project, entry_points=False) as rt:
        path.chmod(0o777)
        d = rt.dispatch(BLOCKING[Event.BEFORE_TOOL_CALL])
    assert d.result.blocked is True and "untrusted" in (d.result.reason or "")


def test_a_file_without_x_is_no_hook_but_is_listed_with_its_fix(project: Path) -> None:
    notes = hooks(project) / "README.md"
    notes.write_text("# our guards\n")
    forgotten = hooks(project) / "guard"
    forgotten.write_text(answering(Event.BEFORE_TOOL_CALL, "echo '{\"blocked\": true}'"))
    forgotten.chmod(0o644)
    for event in BLOCKING:
        d = dispatch(project, event)
        assert d.result.blocked is False
        assert [r.name for r in d.trace if not r.name.startswith("builtin:")] == []
    res = run_kodelet("--cwd", str(project), "hooks", "list", "--json")
    assert res.returncode == 0, res.stderr
    rows = {r["name"]: r for r in json.loads(res.stdout)}
    for path in (notes, forgotten):
        row = rows[path.name]
        assert (row["status"], row["reason"], row["fix"]) == (
            "skipped",
            "not executable",
            f"chmod +x {path}",
        )
    text = run_kodelet("--cwd", str(project), "hooks", "list").stdout
    assert f"not executable; fix: chmod +x {forgotten}" in text


def test_a_directory_in_the_hooks_folder_blocks_nothing(project: Path) -> None:
    (hooks(project) / "lib").mkdir()
    assert dispatch(project, Event.BEFORE_TOOL_CALL).result.blocked is False


def test_a_not_executable_file_named_a_guard_in_config_still_blocks(project: Path) -> None:
    guard = hooks(project) / "guard"
    guard.write_text(answering(Event.BEFORE_TOOL_CALL, "exit 0"))
    guard.chmod(0o644)
    config(project, '[hooks."guard"]\nfail_closed = true\n')
    d = dispatch(project, Event.BEFORE_TOOL_CALL)
    assert_blocked_by(d, "guard", "not run: not executable", f"chmod +x {guard}")


def test_a_leftover_table_naming_no_hook_blocks_nothing(project: Path) -> None:
    config(project, '[hooks."gone"]\ntimeout = 5\n')
    assert dispatch(project, Event.BEFORE_TOOL_CALL).result.blocked is False


def test_other_events_only_record_the_failure(project: Path) -> None:
    write_hook(hooks(project), "logger", answering(Event.AFTER_TOOL_CALL, "exit 5"))
    payload = AfterToolCallPayload(
        tool_name="bash", tool_output=StructuredToolResult(tool_name="bash", success=True)
    )
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(payload)
    (rec,) = d.trace
    assert rec.outcome is Outcome.ERROR and rec.error == "exited with status 5"
    assert rec.detail is None and d.result.output is None


def test_a_raising_native_plugin_blocks_by_default(project: Path) -> None:
    class Guard:
        @hookimpl
        def before_tool_call(self, tool_input: dict[str, Any]) -> None:
            raise OSError("policy file missing")

    with load_runtime(
        cwd=project, entry_points=False, executables=False, plugins=[("policy", Guard())]
    ) as rt:
        d = rt.dispatch(BLOCKING[Event.BEFORE_TOOL_CALL])
    assert_blocked_by(d, "policy", "OSError: policy file missing", "fix the hook")


def test_listing_says_which_hooks_fail_open(project: Path) -> None:
    write_hook(hooks(project), "audit", answering(Event.BEFORE_TOOL_CALL, "exit 0"))
    write_hook(hooks(project), "guard", answering(Event.BEFORE_TOOL_CALL, "exit 0"))
    write_hook(hooks(project), "log", answering(Event.AFTER_TOOL_CALL, "exit 0"))
    config(project, '[hooks."audit"]\nfail_closed = false\n')
    with load_runtime(cwd=project, entry_points=False) as rt:
        rows = {r["name"]: r["on_failure"] for r in hook_rows(rt) if r["kind"] == "executable"}
    assert rows == {"audit": "allow", "guard": "block", "log": None}
    text = run_kodelet("--cwd", str(project), "hooks", "list").stdout
    audit = next(line for line in text.splitlines() if " audit " in line)
    assert "fails open" in audit
    guard = next(line for line in text.splitlines() if " guard " in line)
    assert "fails open" not in guard


# -- Claude Code settings hooks keep Claude Code's rule ---------------------------------


def claude_settings(project: Path, entry: dict[str, Any]) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [entry]}]}}))
    path.chmod(0o600)


@pytest.mark.parametrize(("on_failure", "blocked"), [(None, False), ("block", True)])
def test_claude_settings_hook_keeps_on_failure(
    project: Path, on_failure: str | None, blocked: bool
) -> None:
    entry: dict[str, Any] = {"type": "command", "command": "exit 1"}
    if on_failure:
        entry["onFailure"] = on_failure
    claude_settings(project, entry)
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(BLOCKING[Event.BEFORE_TOOL_CALL])
        (row,) = [r for r in hook_rows(rt) if r["kind"] == "claude"]
    assert d.result.blocked is blocked
    assert row["on_failure"] == ("block" if blocked else "allow")


def test_status_lists_hooks_that_will_not_run_and_fail_open(project: Path) -> None:
    forgotten = hooks(project) / "guard"
    forgotten.write_text(answering(Event.BEFORE_TOOL_CALL, "exit 0"))
    forgotten.chmod(0o644)
    write_hook(hooks(project), "audit", answering(Event.BEFORE_TOOL_CALL, "exit 0"))
    config(project, '[hooks."audit"]\nfail_closed = false\n')
    res = run_kodelet("--cwd", str(project), "claude", "status", "--json")
    status = json.loads(res.stdout)
    (audit,) = [r for r in status["hooks"] if r["name"] == "audit"]
    assert audit["on_failure"] == "allow"
    (guard,) = [r for r in status["not_running"] if r["name"] == "guard"]
    assert (guard["reason"], guard["fix"]) == ("not executable", f"chmod +x {forgotten}")
    text = run_kodelet("--cwd", str(project), "claude", "status").stdout
    assert "audit (executable) fails open: a failure lets the call through" in text
    assert f"fix: chmod +x {forgotten}" in text

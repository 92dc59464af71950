"""Fail-closed guardrails: a hook marked ``fail_closed`` that fails on a blocking event
blocks it, whatever the failure and whichever kind of hook, with the reason
``hook <name> failed (fail-closed): <why>``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kodelet import load_runtime
from kodelet.events import Event
from kodelet.markers import hookimpl
from kodelet.payloads import (
    AfterToolCallPayload,
    BasePayload,
    BeforeToolCallPayload,
    StructuredToolResult,
    UserMessageSendPayload,
)
from kodelet.runtime import Runtime
from kodelet.testing import discovered, write_hook
from kodelet.trace import Dispatch, Outcome
from kodelet.wire import result_to_wire

BLOCKING: dict[Event, Callable[[], BasePayload]] = {
    Event.BEFORE_TOOL_CALL: lambda: BeforeToolCallPayload(
        tool_name="bash", tool_input={"command": "ls"}
    ),
    Event.USER_MESSAGE_SEND: lambda: UserMessageSendPayload(message="hello"),
}

# name -> (script body after the `hook` answer, expected failure text)
EXECUTABLE_FAILURES: dict[str, tuple[str, str]] = {
    "crash": ("exit 3", "exited with status 3"),
    "crash-stderr": (
        "echo 'policy server down' >&2; exit 1",
        "exited with status 1: policy server down",
    ),
    "signal": ("kill -KILL $$", "killed by signal SIGKILL"),
    "timeout": ("exec sleep 30", "timed out after 0.3s"),
    "not-json": ("echo nope", "output is not JSON (Expecting value): 'nope'"),
    "wrong-type": ('echo \'{"blocked": "yes"}\'', "blocked"),
    "not-an-object": ("echo '[true]'", "returned list, expected None, a dict"),
    "not-utf8": ("printf '\\377\\376'", "output is not UTF-8"),
}

PROTECT = "builtin:protect-kodelet"  # in every assembled runtime, on before_tool_call


def guard_script(event: Event, body: str) -> str:
    head = f'#!/bin/sh\nif [ "$1" = hook ]; then echo {event.value}; exit 0; fi\n'
    return f"{head}cat >/dev/null\n{body}\n"


def configure(project: Path, name: str, *, fail_closed: bool = True, timeout: float = 0.3) -> None:
    (project / ".kodelet" / "config.toml").write_text(
        f'[hooks."{name}"]\nfail_closed = {str(fail_closed).lower()}\ntimeout = {timeout}\n'
    )


def assert_failed_closed(d: Dispatch, name: str, why_part: str) -> None:
    rec = next(r for r in d.trace if r.name == name)
    assert rec.outcome is Outcome.ERROR
    assert rec.error is not None and why_part in rec.error
    assert rec.detail == "fail-closed: blocked"
    assert d.result.blocked is True
    assert d.result.reason is not None
    assert d.result.reason.startswith(f"hook {name} failed (fail-closed): {rec.error}; fix: ")
    assert d.result.reason.endswith(f'[hooks."{name}"] fail_closed = false')
    assert result_to_wire(d.event, d.result) == {"blocked": True, "reason": d.result.reason}
    assert d.trace[-1] is rec, "no hook runs after a fail-closed block"


async def adispatch(rt: Runtime, payload: BasePayload) -> Dispatch:
    return await rt.adispatch(payload)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("event", list(BLOCKING))
@pytest.mark.parametrize("failure", list(EXECUTABLE_FAILURES))
def test_failing_executable_blocks(project: Path, failure: str, event: Event, mode: str) -> None:
    body, why = EXECUTABLE_FAILURES[failure]
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "guard", guard_script(event, body))
    after = project / "after-ran"
    write_hook(hooks, "later", guard_script(event, f"touch '{after}'"))
    configure(project, "guard")
    with load_runtime(cwd=project, entry_points=False) as rt:
        payload = BLOCKING[event]()
        d = rt.dispatch(payload) if mode == "sync" else asyncio.run(adispatch(rt, payload))
    if failure == "wrong-type":
        why = "result.blocked"
    assert_failed_closed(d, "guard", why)
    assert not after.exists()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("event", list(BLOCKING))
@pytest.mark.parametrize("change", ["deleted", "directory"])
def test_hook_deleted_or_replaced_after_discovery_blocks(
    project: Path, change: str, event: Event, mode: str
) -> None:
    hooks = project / ".kodelet" / "hooks"
    guard = write_hook(hooks, "guard", guard_script(event, "exit 0"))
    configure(project, "guard")
    with load_runtime(cwd=project, entry_points=False) as rt:
        protect = [PROTECT] if event is Event.BEFORE_TOOL_CALL else []
        assert [e.name for e in rt.hooks(event)] == ["guard", *protect]
        guard.unlink()
        if change == "directory":
            guard.mkdir()
        payload = BLOCKING[event]()
        d = rt.dispatch(payload) if mode == "sync" else asyncio.run(adispatch(rt, payload))
    why = "No such file or directory" if change == "deleted" else "Permission denied"
    assert_failed_closed(d, "guard", why)


class Boom(BaseException):
    """Not an Exception: a plugin bug that must still not escape the dispatch."""


def native(event: Event, behaviour: Callable[[], Any]) -> Any:
    class Guard:
        pass

    if event is Event.BEFORE_TOOL_CALL:

        def before_tool_call(tool_name: str) -> Any:
            return behaviour()

        Guard.before_tool_call = staticmethod(hookimpl(before_tool_call))  # type: ignore[attr-defined]
    else:

        def user_message_send(message: str) -> Any:
            return behaviour()

        Guard.user_message_send = staticmethod(hookimpl(user_message_send))  # type: ignore[attr-defined]
    return Guard()


def _raise(exc: BaseException) -> Callable[[], Any]:
    def go() -> Any:
        raise exc

    return go


async def _sleep_forever() -> None:
    await asyncio.sleep(30)


NATIVE_FAILURES: dict[str, tuple[Callable[[], Any], str]] = {
    "exception": (_raise(ValueError("policy file missing")), "ValueError: policy file missing"),
    "base-exception": (_raise(Boom("deep")), "Boom: deep"),
    "generator-exit": (_raise(GeneratorExit()), "GeneratorExit"),
    "cancelled": (_raise(asyncio.CancelledError()), "CancelledError"),
    "bad-dict": (lambda: {"blocked": "yes"}, "result.blocked"),
    "bad-type": (lambda: "block it", "returned str, expected None, a dict"),
    "async-timeout": (_sleep_forever, "timed out after 0.3s"),
}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("event", list(BLOCKING))
@pytest.mark.parametrize("failure", list(NATIVE_FAILURES))
def test_failing_native_blocks(project: Path, failure: str, event: Event, mode: str) -> None:
    behaviour, why = NATIVE_FAILURES[failure]
    later: list[str] = []
    configure(project, "guard")
    # Registered last, called first (pluggy's order).
    plugins = [
        ("later", native(event, lambda: later.append("ran"))),
        ("guard", native(event, behaviour)),
    ]
    with load_runtime(
        cwd=project, entry_points=False, builtins=False, executables=False, plugins=plugins
    ) as rt:
        assert [e.name for e in rt.hooks(event)] == ["guard", "later"]
        payload = BLOCKING[event]()
        d = rt.dispatch(payload) if mode == "sync" else asyncio.run(adispatch(rt, payload))
    assert_failed_closed(d, "guard", why)
    assert later == []


def test_without_fail_closed_a_failure_is_no_action(project: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "guard", guard_script(Event.USER_MESSAGE_SEND, "exit 3"))
    after = project / "after-ran"
    write_hook(hooks, "later", guard_script(Event.USER_MESSAGE_SEND, f"touch '{after}'"))
    configure(project, "guard", fail_closed=False)
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(UserMessageSendPayload(message="hi"))
    assert d.result.blocked is False
    assert [(r.name, r.outcome) for r in d.trace] == [
        ("guard", Outcome.ERROR),
        ("later", Outcome.NO_ACTION),
    ]
    assert d.trace[0].detail is None
    assert after.exists()


def test_fail_closed_hook_that_succeeds_does_not_block(project: Path) -> None:
    write_hook(
        project / ".kodelet" / "hooks",
        "guard",
        guard_script(Event.BEFORE_TOOL_CALL, "echo '{\"blocked\": false}'"),
    )
    configure(project, "guard")
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(BLOCKING[Event.BEFORE_TOOL_CALL]())
    assert d.result.blocked is False
    assert d.trace[0].outcome is Outcome.NO_ACTION


def test_fail_closed_on_a_non_blocking_event_only_records_the_failure(project: Path) -> None:
    write_hook(
        project / ".kodelet" / "hooks", "guard", guard_script(Event.AFTER_TOOL_CALL, "exit 9")
    )
    configure(project, "guard")
    payload = AfterToolCallPayload(
        tool_name="bash", tool_output=StructuredToolResult(tool_name="bash", success=True)
    )
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(payload)
    (rec,) = d.trace
    assert rec.outcome is Outcome.ERROR and rec.detail is None
    assert d.result.output is None


def test_fail_closed_guard_blocks_even_after_an_earlier_rewrite(project: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    write_hook(
        hooks,
        "a-rewrite",
        guard_script(Event.BEFORE_TOOL_CALL, 'echo \'{"input": {"command": "ls -l"}}\''),
    )
    write_hook(hooks, "b-guard", guard_script(Event.BEFORE_TOOL_CALL, "exit 2"))
    configure(project, "b-guard")
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(BLOCKING[Event.BEFORE_TOOL_CALL]())
    assert_failed_closed(d, "b-guard", "exited with status 2")
    assert d.result.input is None


# -- a fail-closed hook that cannot even be loaded still guards ----------------------


def _unloadable(project: Path, how: str) -> None:
    hooks = project / ".kodelet" / "hooks"
    if how == "not-executable":
        write_hook(hooks, "guard", guard_script(Event.BEFORE_TOOL_CALL, "exit 0")).chmod(0o644)
    elif how == "untrusted":
        write_hook(hooks, "guard", guard_script(Event.BEFORE_TOOL_CALL, "exit 0")).chmod(0o777)
    elif how == "query-fails":
        write_hook(hooks, "guard", "#!/bin/sh\nexit 4\n")
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["not-executable", "untrusted", "query-fails"])
@pytest.mark.parametrize("event", list(BLOCKING))
def test_unloadable_fail_closed_hook_blocks_in_its_place(project, how, event):
    _unloadable(project, how)
    configure(project, "guard")
    with load_runtime(cwd=project) as rt:
        skipped = [h for h in discovered(rt) if h.name == "guard"]
        assert [h.status for h in skipped] == ["skipped"]
        d = rt.dispatch(BLOCKING[event]())
    assert d.result.blocked is True
    assert d.result.reason == (
        f"hook guard failed (fail-closed): not run: {skipped[0].reason}; fix: {skipped[0].fix}"
        '; to let calls through when it fails: [hooks."guard"] fail_closed = false'
    )
    assert [(r.name, r.outcome) for r in d.trace] == [("guard", Outcome.ERROR)]


def test_unloadable_hook_without_fail_closed_guards_nothing(project):
    _unloadable(project, "not-executable")
    configure(project, "guard", fail_closed=False)
    with load_runtime(cwd=project) as rt:
        d = rt.dispatch(BLOCKING[Event.BEFORE_TOOL_CALL]())
    assert d.result.blocked is False
    assert [(r.name, r.outcome) for r in d.trace] == [(PROTECT, Outcome.NO_ACTION)]


def test_stand_in_only_covers_blocking_events(project):
    _unloadable(project, "not-executable")
    configure(project, "guard")
    with load_runtime(cwd=project) as rt:
        assert [e.name for e in rt.hooks(Event.AFTER_TOOL_CALL)] == []
        assert "guard" not in [e.name for e in rt.hooks(Event.AGENT_STOP)]


def test_disabled_or_shadowed_fail_closed_hook_gets_no_stand_in(project, kodelet_home):
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "off.disable", guard_script(Event.BEFORE_TOOL_CALL, "exit 3"))
    write_hook(hooks, "guard", guard_script(Event.BEFORE_TOOL_CALL, "exit 0"))
    write_hook(kodelet_home / "hooks", "guard", guard_script(Event.BEFORE_TOOL_CALL, "exit 3"))
    (project / ".kodelet" / "config.toml").write_text(
        '[hooks."guard"]\nfail_closed = true\n[hooks."off.disable"]\nfail_closed = true\n'
    )
    with load_runtime(cwd=project) as rt:
        d = rt.dispatch(BLOCKING[Event.BEFORE_TOOL_CALL]())
    assert d.result.blocked is False
    assert [(r.name, r.outcome) for r in d.trace] == [
        ("guard", Outcome.NO_ACTION),
        (PROTECT, Outcome.NO_ACTION),
    ]


@pytest.mark.parametrize(
    "switch_off", ['[hooks]\ndisabled = ["guard"]\n', '[hooks."guard"]\nenabled = false\n']
)
def test_fail_closed_hook_switched_off_in_config_gets_no_stand_in(project, switch_off):
    _unloadable(project, "query-fails")
    (project / ".kodelet" / "config.toml").write_text(
        switch_off
        + ('[hooks."guard"]\n' if "enabled" not in switch_off else "")
        + "fail_closed = true\n"
    )
    with load_runtime(cwd=project) as rt:
        d = rt.dispatch(BLOCKING[Event.USER_MESSAGE_SEND]())
    assert d.result.blocked is False
    assert d.trace == ()

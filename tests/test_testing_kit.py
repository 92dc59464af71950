"""kodelet.testing: the fixtures and helpers plugin authors build their tests on."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kodelet import (
    AfterToolCallPayload,
    AgentStopPayload,
    BeforeToolCallResult,
    Event,
    Runtime,
    Session,
    hookimpl,
)
from kodelet.adapters.executable import HookFailure
from kodelet.testing import (
    Approvals,
    RuntimeFactory,
    after_tool_call_payload,
    after_turn_payload,
    agent_stop_payload,
    before_tool_call_payload,
    make_payload,
    run_executable_hook,
    unblocked_shells,
    user_message_send_payload,
    write_hook,
)
from kodelet.wire import payload_to_wire


class Recorder:
    def __init__(self) -> None:
        self.config: dict[str, Any] | None = None

    @hookimpl
    def configure(self, config: dict[str, Any]) -> None:
        self.config = config

    @hookimpl
    def before_tool_call(self, tool_input: dict[str, Any]) -> BeforeToolCallResult | None:
        if "danger" in str(tool_input):
            return BeforeToolCallResult(blocked=True, reason="recorded danger")
        return None


# -- payload factories ---------------------------------------------------------


@pytest.mark.parametrize("event", list(Event))
def test_make_payload_gives_a_valid_payload_for_every_event(event):
    payload = make_payload(event)
    assert payload.EVENT is event
    assert payload.invoked_by == "main"
    assert payload_to_wire(payload)["event"] == event.value


def test_make_payload_accepts_wire_names_and_forms():
    payload = make_payload(
        "turn_end", usage={"max_context_window": 100}, messages=[{"role": "user", "content": "x"}]
    )
    assert payload.EVENT is Event.AFTER_TURN
    assert payload.usage.max_context_window == 100


def test_make_payload_refuses_what_a_host_could_not_send():
    with pytest.raises(ValueError, match="turn_number"):
        make_payload(Event.AFTER_TURN, turn_number="three")
    with pytest.raises(ValueError, match="unknown event"):
        make_payload("before_tool")


def test_per_event_factories():
    before = before_tool_call_payload("file_write", {"path": "a"}, recipe_name="review")
    assert (before.tool_name, before.tool_input, before.recipe_name) == (
        "file_write",
        {"path": "a"},
        "review",
    )
    after = after_tool_call_payload("grep")
    assert isinstance(after, AfterToolCallPayload)
    assert after.tool_output.tool_name == "grep"
    assert after.tool_output.success
    failed = after_tool_call_payload(
        tool_output={"toolName": "bash", "success": False, "error": "x"}
    )
    assert failed.tool_output.error == "x"
    assert user_message_send_payload("hi").message == "hi"
    assert after_turn_payload(7, tools_used=True).turn_number == 7
    stop = agent_stop_payload([("user", "a"), {"role": "assistant", "content": "b"}])
    assert isinstance(stop, AgentStopPayload)
    assert [m.content for m in stop.messages] == ["a", "b"]


# -- kodelet_runtime -----------------------------------------------------------


def test_runtime_holds_only_the_plugins_under_test(kodelet_runtime, tmp_path):
    project = tmp_path / "project"
    write_hook(project / ".kodelet" / "hooks", "blocker", "#!/bin/sh\necho before_tool_call\n")
    runtime = kodelet_runtime(("recorder", Recorder()), cwd=project)
    assert isinstance(runtime, Runtime)
    assert [p.name for p in runtime.plugins] == ["recorder"]
    assert [h.name for h in runtime.hooks(Event.BEFORE_TOOL_CALL)] == ["recorder"]
    assert [h.name for h in runtime.hooks(Event.AFTER_TURN)] == []


def test_runtime_dispatches_through_the_merge_policy(kodelet_runtime):
    runtime = kodelet_runtime(("recorder", Recorder()))
    blocked = runtime.dispatch(before_tool_call_payload(tool_input={"command": "danger"}))
    assert blocked.result == BeforeToolCallResult(blocked=True, reason="recorded danger")
    assert [r.name for r in blocked.trace] == ["recorder"]


def test_config_tables_reach_configure(kodelet_runtime):
    plugin, other = Recorder(), Recorder()
    kodelet_runtime(("mine", plugin), ("other", other), config={"mine": {"level": 3}})
    assert plugin.config == {"level": 3}
    assert other.config == {}


def test_config_toml_goes_through_the_real_loader(kodelet_runtime):
    plugin = Recorder()
    runtime = kodelet_runtime(
        ("mine", plugin), config_toml='[plugin.mine]\nwords = ["a", "b"]\n[hooks]\ntimeout = 4\n'
    )
    assert plugin.config == {"words": ["a", "b"]}
    assert runtime.config.timeout == 4


def test_runtimes_are_closed_when_the_factory_closes(tmp_path):
    factory = RuntimeFactory(tmp_path)
    runtime = factory(Recorder())
    factory.close()
    with pytest.raises(RuntimeError, match="closed"):
        runtime.dispatch(before_tool_call_payload())


def test_runtimes_never_read_the_users_global_config(kodelet_runtime, kodelet_home):
    kodelet_home.mkdir(parents=True, exist_ok=True)
    (kodelet_home / "config.toml").write_text("[plugin.mine]\nleak = true\n")
    plugin = Recorder()
    kodelet_runtime(("mine", plugin))
    assert plugin.config == {}


# -- run_executable_hook ---------------------------------------------------------

BLOCKER = """#!/bin/sh
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q danger; then echo '{"blocked": true, "reason": "no danger"}'; fi ;;
  *) exit 1 ;;
esac
"""


def test_runs_an_executable_through_the_real_adapter(tmp_path):
    hook = write_hook(tmp_path, "blocker", BLOCKER)
    result = run_executable_hook(hook, before_tool_call_payload(tool_input={"command": "danger"}))
    assert result == BeforeToolCallResult(blocked=True, reason="no danger")
    assert run_executable_hook(hook, before_tool_call_payload()) is None


ASKER = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'rm '; then echo '{"ask": true, "reason": "deletes files"}'; fi ;;
esac
"""


def test_an_executables_ask_and_the_approvals_stand_in(tmp_path, kodelet_runtime):
    hook = write_hook(tmp_path, "asker", ASKER)
    asked = run_executable_hook(hook, tool_input={"command": "rm -rf build"})
    assert asked == BeforeToolCallResult(ask=True, reason="deletes files")
    project = tmp_path / "project"
    write_hook(project / ".kodelet" / "hooks", "asker", ASKER)
    runtime = kodelet_runtime(cwd=project, executables=True)
    assert unblocked_shells(runtime, "rm -rf build", ["bash"]) == []
    approvals = Approvals(False)
    result = Session(runtime, approver=approvals).before_tool_call("bash", {"command": "rm x"})
    assert result.blocked and [r.reason for r in approvals.requests] == ["deletes files"]


def test_builds_the_payload_from_fields_for_the_declared_event(tmp_path):
    hook = write_hook(tmp_path, "blocker", BLOCKER)
    assert run_executable_hook(hook, tool_input={"command": "danger"}).blocked
    wire = {"tool_name": "bash", "tool_input": {"command": "danger"}}
    assert run_executable_hook(hook, wire).blocked


def test_turn_end_hooks_are_after_turn_hooks(tmp_path):
    hook = write_hook(
        tmp_path,
        "compactor",
        '#!/bin/sh\n[ "$1" = hook ] && { echo turn_end; exit 0; }\n'
        'cat >/dev/null; echo \'{"result": "callback", "callback": "compact"}\'\n',
    )
    result = run_executable_hook(hook, after_turn_payload(2))
    assert (result.result, result.callback) == ("callback", "compact")


def test_failures_surface_as_the_runtime_sees_them(tmp_path):
    bad_json = write_hook(
        tmp_path, "bad", '#!/bin/sh\n[ "$1" = hook ] && echo agent_stop && exit 0\necho nope\n'
    )
    with pytest.raises(HookFailure, match="not JSON"):
        run_executable_hook(bad_json)
    crash = write_hook(
        tmp_path, "crash", '#!/bin/sh\n[ "$1" = hook ] && echo agent_stop && exit 0\nexit 3\n'
    )
    with pytest.raises(HookFailure):
        run_executable_hook(crash)
    wrong_shape = write_hook(
        tmp_path,
        "shape",
        '#!/bin/sh\n[ "$1" = hook ] && echo user_message_send && exit 0\n'
        'echo \'{"blocked": "yes"}\'\n',
    )
    with pytest.raises(ValueError, match="blocked"):
        run_executable_hook(wrong_shape)


def test_a_payload_for_another_event_is_refused(tmp_path):
    hook = write_hook(tmp_path, "blocker", BLOCKER)
    with pytest.raises(ValueError, match="handles before_tool_call"):
        run_executable_hook(hook, agent_stop_payload())


def test_a_file_that_is_not_a_hook_is_refused(tmp_path):
    not_hook = write_hook(tmp_path, "silent", "#!/bin/sh\nexit 0\n")
    with pytest.raises(ValueError, match="printed nothing"):
        run_executable_hook(not_hook)


# -- the pytest plugin itself ------------------------------------------------------


def test_fixtures_reach_any_pytest_run_through_the_entry_point(tmp_path):
    """A plugin author's test file, with no conftest: the fixtures come from ``pytest11``."""
    (tmp_path / "test_author.py").write_text(
        textwrap.dedent(
            """
            import os
            from kodelet import hookimpl

            class Block:
                @hookimpl
                def user_message_send(self, message):
                    return {"blocked": "secret" in message, "reason": "secret"}

            def test_it(kodelet_runtime, kodelet_payload, kodelet_run_hook, kodelet_home):
                rt = kodelet_runtime(("block", Block()))
                payload = kodelet_payload("user_message_send", message="a secret")
                assert rt.dispatch(payload).result.blocked
                assert os.environ["KODELET_HOME"] == str(kodelet_home)
                assert callable(kodelet_run_hook)
            """
        )
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_kodelet_home_is_isolated(kodelet_home: Path):
    assert os.environ["KODELET_HOME"] == str(kodelet_home)

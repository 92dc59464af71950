"""The reminder through a real runtime, merged with another follow-up hook."""

from __future__ import annotations

import pytest
from kodelet import hookimpl
from kodelet.testing import agent_stop_payload
from kodelet_plugin_lint_reminder import MESSAGE, LintReminder

EDITED = [("user", "fix the bug"), ("assistant", "Used file_edit on main.py; fixed.")]


@pytest.fixture
def runtime(kodelet_runtime):
    return kodelet_runtime(("lint-reminder", LintReminder()))


@pytest.mark.parametrize("tool", ["file_edit", "file_write"])
def test_reminds_after_edits(runtime, tool):
    payload = agent_stop_payload([("assistant", f"I called {tool} twice")])
    result = runtime.dispatch(payload).result
    assert result.follow_up_messages == [MESSAGE]


def test_quiet_without_edits(runtime):
    result = runtime.dispatch(agent_stop_payload([("assistant", "I read main.py")])).result
    assert not result.follow_up_messages


def test_only_the_main_agent_is_reminded(runtime):
    result = runtime.dispatch(agent_stop_payload(EDITED, invoked_by="subagent")).result
    assert not result.follow_up_messages


def test_follow_ups_accumulate_with_other_hooks(kodelet_runtime):
    class Other:
        @hookimpl
        def agent_stop(self):
            return {"follow_up_messages": ["and update the changelog"]}

    runtime = kodelet_runtime(("other", Other()), ("lint-reminder", LintReminder()))
    result = runtime.dispatch(agent_stop_payload(EDITED)).result
    assert sorted(result.follow_up_messages) == sorted([MESSAGE, "and update the changelog"])


def test_message_and_tools_come_from_its_config_table(kodelet_runtime):
    runtime = kodelet_runtime(
        ("lint-reminder", LintReminder()),
        config={"lint-reminder": {"message": "Run make lint.", "tools": ["apply_patch"]}},
    )
    assert not runtime.dispatch(agent_stop_payload(EDITED)).result.follow_up_messages
    patched = agent_stop_payload([("assistant", "apply_patch done")])
    assert runtime.dispatch(patched).result.follow_up_messages == ["Run make lint."]

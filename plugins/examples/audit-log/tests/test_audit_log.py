"""The audit log through a real runtime, including the disks that say no."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from kodelet.testing import after_tool_call_payload, after_turn_payload, agent_stop_payload
from kodelet_plugin_audit_log import AuditLog


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_event_appends_one_json_line(kodelet_runtime, kodelet_home):
    runtime = kodelet_runtime(("audit-log", AuditLog()))
    runtime.dispatch(after_tool_call_payload("bash", {"command": "ls"}, conv_id="c1"))
    runtime.dispatch(after_turn_payload(3, tools_used=True, recipe_name="review"))
    runtime.dispatch(agent_stop_payload([("user", "hi"), ("assistant", "done")]))
    tool, turn, stop = lines(kodelet_home / "audit.log")
    assert tool["event"] == "after_tool_call"
    assert tool["conv_id"] == "c1"
    assert tool["tool_input"] == {"command": "ls"}
    assert tool["tool_output"]["toolName"] == "bash"
    assert tool["time"].endswith("Z")
    assert "recipe_name" not in tool
    assert (turn["event"], turn["turn_number"], turn["recipe_name"]) == ("after_turn", 3, "review")
    assert (stop["event"], stop["message_count"]) == ("agent_stop", 2)


def test_path_comes_from_its_config_table(kodelet_runtime, kodelet_home, tmp_path):
    target = tmp_path / "elsewhere.log"
    runtime = kodelet_runtime(
        ("audit-log", AuditLog()), config={"audit-log": {"path": str(target)}}
    )
    runtime.dispatch(after_turn_payload(1))
    assert lines(target)[0]["event"] == "after_turn"
    assert not (kodelet_home / "audit.log").exists()


def test_full_disk_never_raises(kodelet_runtime, caplog):
    runtime = kodelet_runtime(
        ("audit-log", AuditLog()), config={"audit-log": {"path": "/dev/full"}}
    )
    with caplog.at_level(logging.WARNING):
        dispatch = runtime.dispatch(after_turn_payload(1))
    assert [r.outcome.value for r in dispatch.trace] == ["no-action"]
    assert any("cannot write" in r.getMessage() for r in caplog.records)


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory nobody may create files in; root ignores modes, so root gets sysfs."""
    if os.geteuid() == 0:
        yield Path("/sys")
        return
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    yield locked
    locked.chmod(0o700)


def test_read_only_directory_never_raises(kodelet_runtime, read_only_dir, caplog):
    runtime = kodelet_runtime(("audit-log", AuditLog(read_only_dir / "audit.log")))
    with caplog.at_level(logging.WARNING):
        dispatch = runtime.dispatch(after_turn_payload(1))
    assert [r.outcome.value for r in dispatch.trace] == ["no-action"]
    assert any("cannot write" in r.getMessage() for r in caplog.records)
    assert not (read_only_dir / "audit.log").exists()


def test_unwritable_path_never_raises(kodelet_runtime, tmp_path, caplog):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    runtime = kodelet_runtime(("audit-log", AuditLog(not_a_dir / "audit.log")))
    with caplog.at_level(logging.WARNING):
        dispatch = runtime.dispatch(agent_stop_payload())
    assert [r.outcome.value for r in dispatch.trace] == ["no-action"]
    assert any("cannot write" in r.getMessage() for r in caplog.records)

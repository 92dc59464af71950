"""kodelet's hooks on MCP tools inside the real Claude Code.

Claude Code names an MCP tool ``mcp__<server>__<tool>`` and hands PostToolUse hooks
its result in the MCP shape, not a built-in tool's: the list of content blocks, or
the structured content as a JSON string. An MCP tool's input schema may allow any
object, so, unlike Bash's, a hostile input reaches the hooks. The stand-in server
(``mcp_server.py``) logs every call it runs, which is the fact these tests read.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from kodelet.agents.standins.messages import Turn, text, tool

from tests.e2e.claude_agent import DANGER_HOOK, REDACT_HOOK, Agent, payloads, recorder
from tests.e2e.claude_code import Run
from tests.kit import redaction

SERVER = Path(__file__).with_name("mcp_server.py")
TOOLS = "mcp__srv__echo mcp__srv__lookup mcp__srv__store"


@attrs.define
class MCPAgent(Agent):
    """An agent whose Claude Code has the stand-in MCP server ``srv``, which logs its
    calls to ``calls``."""

    calls: Path

    def run(self, turns: Any, **kw: Any) -> Run:
        config = self.calls.with_name("mcp.json")
        server = {
            "type": "stdio",
            "command": sys.executable,
            "args": [str(SERVER), str(self.calls)],
        }
        config.write_text(json.dumps({"mcpServers": {"srv": server}}))
        kw.setdefault("allowed", TOOLS)
        kw.setdefault("args", ["--mcp-config", str(config), "--strict-mcp-config"])
        try:
            return super().run(turns, **kw)
        finally:
            _server_ended(Path(f"{self.calls}.pid"))

    def tool_calls(self) -> list[dict[str, Any]]:
        return payloads(self.calls) if self.calls.exists() else []


def _server_ended(pid_file: Path) -> None:
    """Claude Code closes the server's stdin when it ends; a server left running fails."""
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    pid_file.unlink()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    raise AssertionError(f"the MCP server (pid {pid}) outlived Claude Code")


@pytest.fixture
def agent(claude_bin: Path, cc_project: Path, isolated_home: Path, venv_bin: Path) -> MCPAgent:
    a = MCPAgent(claude_bin, cc_project, isolated_home, venv_bin, cc_project.parent / "calls.jsonl")
    a.install()
    return a


def mcp(name: str, **tool_input: Any) -> Turn:
    return [tool(f"mcp__srv__{name}", **tool_input)]


SHAPES = [
    pytest.param("echo", [{"type": "text", "text": "key=SECRET123"}], id="content-blocks"),
    pytest.param(
        "lookup", json.dumps({"text": "key=SECRET123"}, separators=(",", ":")), id="string"
    ),
]


@pytest.mark.parametrize(("name", "response"), SHAPES)
def test_after_tool_call_hooks_get_an_mcp_tools_output(
    agent: MCPAgent, tmp_path: Path, name: str, response: Any
) -> None:
    log = tmp_path / "after.jsonl"
    agent.hook("record", recorder("after_tool_call", log))
    agent.run([mcp(name, text="key=SECRET123"), [text("fin")]])
    (seen,) = payloads(log)
    assert seen["tool_name"] == f"mcp__srv__{name}"
    assert seen["tool_input"] == {"text": "key=SECRET123"}
    assert seen["tool_output"]["success"] is True
    shown = "key=SECRET123" if isinstance(response, list) else response
    assert seen["tool_output"]["metadata"] == {"output": shown, "tool_response": response}


@pytest.mark.parametrize(("name", "response"), SHAPES)
def test_redaction_of_an_mcp_result_reaches_the_model(
    agent: MCPAgent, name: str, response: Any
) -> None:
    agent.hook("redact", REDACT_HOOK)
    run = agent.run([mcp(name, text="key=SECRET123"), [text("fin")]])
    assert len(agent.tool_calls()) == 1
    got = json.dumps(run.tool_results()[0])
    assert "SECRET123" not in got and "[redacted]" in got, got
    assert "SECRET123" not in json.dumps(run.api.main_requests()[1]["messages"][-1])


@pytest.mark.parametrize(("name", "response"), SHAPES)
def test_the_events_md_redaction_of_an_mcp_result_keeps_the_key_from_the_model(
    agent: MCPAgent, name: str, response: Any
) -> None:
    agent.hook("redact", redaction.HOOK)
    run = agent.run([mcp(name, text=f"id={redaction.KEY}"), [text("fin")]])
    got = json.dumps(run.tool_results()[0])
    assert redaction.KEY not in got and "[redacted]" in got, got
    assert redaction.KEY not in json.dumps(run.api.main_requests()[1]["messages"][-1])


def test_a_deeply_nested_mcp_input_is_blocked_and_the_tool_never_runs(agent: MCPAgent) -> None:
    agent.hook("no-danger", DANGER_HOOK)
    deep: dict[str, Any] = {"leaf": "x"}
    for _ in range(70):
        deep = {"d": deep}
    run = agent.run([mcp("store", data=deep), [text("fin")]])
    assert agent.tool_calls() == [], "the MCP tool ran"
    assert run.tool_results()[0].get("is_error") is True
    assert "kodelet" in run.tool_result_text()
    fine = agent.run([mcp("store", data={"d": {"leaf": "x"}}), [text("fin")]])
    assert len(agent.tool_calls()) == 1, fine.tool_result_text()

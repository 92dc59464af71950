"""Each pinned CLI's own tool list against docs/AGENTS.md's table of every path to a shell
or a file: a tool the table names must be one the CLI offers, and every tool the CLI
offers is in the table or in :data:`OTHER`, the tools that reach no shell and no file.
A new or renamed tool in a future pin fails here until it is placed.

The list is what the CLI offers the model in its first request to the stand-in model API,
deferred tools included (Claude Code and Qwen Code name them in a reminder and load them
on demand). Codex gives a model it knows its tools inside a JavaScript ``exec`` (code
mode), and opencode gives a GPT model ``apply_patch`` in place of ``edit`` and ``write``:
both sets are read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents.standins.messages import text

from tests.e2e import agent_clis, claude_code
from tests.e2e.agent_clis import Agent, Pin, connected
from tests.kit.paths import rows_of

OTHER = {
    "Claude Code": {
        "ListAgents",
        "ReportFindings",
        "ScheduleWakeup",
        "ToolSearch",
        "DeferredToolPlaceholder",
        "CronCreate",
        "CronDelete",
        "CronList",
        "SendMessage",
        "TaskStop",
        "WebFetch",
        "WebSearch",
    },
    "Codex": {
        "request_user_input",
        "request_user_input_async",
        "get_goal",
        "create_goal",
        "update_goal",
        "web_search",
        "close_agent",
        "resume_agent",
        "send_input",
        "wait_agent",
        "wait",
        "sleep",
        "followup_task",
        "interrupt_agent",
        "list_agents",
        "send_message",
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
        "clock__curr_time",
    },
    "Qwen Code": {
        "get_goal",
        "update_goal",
        "list_agents",
        "tool_search",
        "cron_create",
        "cron_delete",
        "cron_list",
        "loop_wakeup",
        "read_mcp_resource",
        "record_artifact",
        "report_findings",
        "send_message",
        "task_stop",
        "web_fetch",
    },
    "Gemini CLI": {
        "update_topic",
        "web_fetch",
        "google_web_search",
        "list_background_processes",
        "write_todos",
        "enter_plan_mode",
    },
    "Copilot CLI": {
        "stop_bash",
        "list_bash",
        "fetch_copilot_cli_documentation",
        "sql",
        "session_store_sql",
        "read_agent",
        "list_agents",
        "write_agent",
    },
    "opencode": {"todowrite", "webfetch"},
}
"""Per agent: the tools that reach no shell and read or write no file (questions, goals,
schedules, messages to subagents, the web, MCP resources)."""


def _leaves(tools: list[Any]) -> Iterator[str]:
    """Tool names in a Responses API tool list: functions, the members of namespaces,
    built-ins by their type, and the nested tools Codex's ``exec`` describes."""
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            yield from _leaves(tool.get("tools") or [])
            continue
        name = tool.get("name") or (tool.get("function") or {}).get("name") or tool.get("type")
        yield str(name)
        described = str(tool.get("description") or "")
        if tool.get("type") == "custom" and name == "exec":
            yield from re.findall(r"^### `([^`]+)`", described, re.MULTILINE)


def offered(request: dict[str, Any]) -> set[str]:
    """Every tool a first main-loop request offers the model, in any of the four APIs."""
    names = set()
    for tool in request.get("tools") or []:
        for declared in tool.get("functionDeclarations") or []:  # Gemini's
            names.add(str(declared["name"]))
    names |= {n for n in _leaves(request.get("tools") or []) if n != "None"}
    names.discard("function")  # a Gemini tool entry without a name of its own
    for item in request.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            names |= set(_leaves(item.get("tools") or []))
    said = json.dumps(request, ensure_ascii=False)
    claude = re.search(r"available via ToolSearch\.[^\n]*?\\n((?:[A-Za-z_]+\\n)+)", said)
    if claude:  # Claude Code's deferred tools, one a line
        names |= set(claude.group(1).split("\\n")) - {""}
    qwen = said.split("reachable through `tool_search`", 1)
    if len(qwen) == 2:  # Qwen Code's deferred tools: - "name": "description"
        block = qwen[1].split("</system-reminder>", 1)[0]
        names |= set(re.findall(r'\\n- \\"([a-z_]+)\\":', block))
    return names


def first_request(agent: Agent, args: tuple[str, ...] = ()) -> dict[str, Any]:
    run = agent.run([[text("done")]], args=args)
    requests = run.api.main_requests()
    assert requests, run.stderr
    return requests[0]


def gpt_opencode(api: Any, agent: Agent, args: Any) -> tuple[list[str], dict[str, str]]:
    """opencode with a GPT model: it offers ``apply_patch`` in place of ``edit`` and
    ``write``."""
    command, env = agent_clis.opencode(api, agent, args)
    config = agent.home / ".config" / "opencode" / "opencode.json"
    data = json.loads(config.read_text())
    data["provider"]["standin"]["models"] = {"gpt-5.1-codex": {"name": "gpt-5.1-codex"}}
    data["model"] = data["small_model"] = "standin/gpt-5.1-codex"
    config.write_text(json.dumps(data))
    return command, env


def check(title: str, names: set[str]) -> None:
    rows = {r.tool for r in rows_of(title)}
    assert rows - names == set(), f"{title} offers no such tool: fix docs/AGENTS.md"
    unplaced = names - rows - OTHER[title]
    assert unplaced == set(), f"{title} offers tools the table does not place"


CLIS: dict[str, tuple[str, Pin, Any, Any]] = {
    "Codex": ("codex", agent_clis.CODEX, agent_clis.codex, agent_clis.openai),
    "Qwen Code": ("qwen", agent_clis.QWEN, agent_clis.qwen, agent_clis.openai),
    "Gemini CLI": ("gemini", agent_clis.GEMINI, agent_clis.gemini, agent_clis.gemini_generate),
    "Copilot CLI": ("copilot", agent_clis.COPILOT, agent_clis.copilot, agent_clis.openai),
    "opencode": ("opencode", agent_clis.OPENCODE, agent_clis.opencode, agent_clis.openai),
}


@pytest.mark.parametrize("title", list(CLIS))
def test_each_tool_of_the_pinned_cli_is_placed(
    title: str, cc_project: Path, isolated_home: Path, venv_bin: Path
) -> None:
    name, pin, launch, stand_in = CLIS[title]
    agent = connected(name, pin, launch, cc_project, isolated_home, venv_bin, stand_in)
    names = offered(first_request(agent))
    if title == "Codex":  # a model from Codex's own catalogue: code mode
        names |= offered(first_request(agent, ("-m", "gpt-6.1-sol")))
    if title == "opencode":
        agent.launch = gpt_opencode
        names |= offered(first_request(agent))
    check(title, names)


def test_each_tool_of_the_pinned_claude_code_is_placed(
    claude_bin: Path, cc_project: Path, isolated_home: Path
) -> None:
    run = claude_code.run_claude(claude_bin, cc_project, isolated_home, [[text("done")]])
    requests = run.api.main_requests()
    assert requests, run.stderr
    check("Claude Code", offered(requests[0]))

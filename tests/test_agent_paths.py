"""docs/AGENTS.md's table of every path to a shell or a file, against kodelet's tables:
what each agent's tool is seen as after its dialect's and Claude Code's names, and the
guard that covers that name, so the docs cannot drift from the mapping. That each row's
tool is the pinned CLI's own is tests/e2e/test_agent_tools.py's."""

from __future__ import annotations

import pytest
from kodelet.agents import DIALECTS
from kodelet.claude.mapping import to_kodelet_tool

from tests.kit.paths import Row, tables

GUARDS = {
    "bash": "bash",
    "file_write": "file-write",
    "file_edit": "file-write",
    "file_multi_edit": "file-write",
    "file_read": "file-read",
}
"""kodelet tool name -> the guard that covers it; any other name: none."""

TITLES = {d.title: d for d in DIALECTS.values()}
TOOLS, OTHERS = tables()


def seen(agent: str, tool: str) -> str:
    dialect = TITLES[agent]
    return to_kodelet_tool(dialect.claude_tool(tool), {})[0]


def test_the_table_names_every_agent() -> None:
    assert {r.cells[0] for r in TOOLS} == set(TITLES)


@pytest.mark.parametrize("row", TOOLS, ids=lambda r: f"{r.cells[0]}:{r.tool}")
def test_each_tool_is_seen_as_the_table_says(row: Row) -> None:
    name = seen(row.cells[0], row.tool)
    assert row.seen == name
    assert row.guard == GUARDS.get(name, "none")


@pytest.mark.parametrize("row", OTHERS, ids=lambda r: r.tool)
def test_a_name_no_table_knows_passes_unguarded_in_every_agent(row: Row) -> None:
    for agent in TITLES:
        assert seen(agent, row.tool) == row.seen == row.tool
    assert row.guard == "none"

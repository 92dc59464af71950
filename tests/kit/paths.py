"""docs/AGENTS.md's table of every path to a shell or a file, read for the tests that
hold it to kodelet's tables (tests/test_agent_paths.py) and to the pinned CLIs' own tool
lists (tests/e2e/test_agent_tools.py)."""

from __future__ import annotations

from pathlib import Path

import attrs

AGENTS_MD = Path(__file__).resolve().parents[2] / "docs" / "AGENTS.md"
SECTION = "### Every path to a shell or a file"


@attrs.frozen
class Row:
    cells: tuple[str, ...]

    @property
    def tool(self) -> str:
        """The tool's name, from the first code cell after the agent (or the name's)."""
        return _code(self.cells[1] if len(self.cells) == 5 else self.cells[0])

    @property
    def seen(self) -> str:
        return _code(self.cells[-2])

    @property
    def guard(self) -> str:
        """``bash``, ``file-write``, ``file-read`` or ``none``: what the row says covers it."""
        return self.cells[-1].split(":", 1)[0].strip().strip("*`")


def _code(cell: str) -> str:
    return cell.strip().split("`")[1] if "`" in cell else cell.strip()


def tables(path: Path = AGENTS_MD) -> tuple[list[Row], list[Row]]:
    """(the agents' tools, the names no table knows): the section's two tables, their
    header rows left out."""
    text = path.read_text(encoding="utf-8")
    section = text[text.index(SECTION) + len(SECTION) :].split("\n## ", 1)[0]
    section = section.split("\n### ", 1)[0]
    found: list[list[Row]] = []
    current: list[Row] | None = None
    for line in section.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = tuple(c.strip() for c in line.strip().strip("|").split("|"))
        if current is None:
            current = []
            found.append(current)
            continue  # the header
        if set(cells[0]) <= {"-"}:
            continue
        current.append(Row(cells))
    tools, others = found
    return tools, others


def rows_of(title: str) -> list[Row]:
    """The agent's rows (by its title: "Claude Code", "Codex", ...)."""
    return [r for r in tables()[0] if r.cells[0] == title]

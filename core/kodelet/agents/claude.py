"""Claude Code (``@anthropic-ai/claude-code``): the dialect every other one is said in.

Claude Code reads command hooks from ``~/.claude/settings.json`` (user),
``.claude/settings.json`` (project, shared with the team) and
``.claude/settings.local.json`` (local, this machine's), sends the hook input that
:mod:`kodelet.claude.types` reads and acts on the answer :mod:`kodelet.claude.mapping`
writes. Its tables are therefore the identity: every event and tool keeps its name.
An entry with ``onFailure: "block"`` makes Claude Code block the call when the hook
command itself fails (not found, crashed, timed out), so kodelet's entries on the
blocking events carry it.
"""

from __future__ import annotations

from ..claude.events import HookEvent
from .base import Dialect

CLAUDE = Dialect(
    name="claude",
    title="Claude Code",
    binary="claude",
    package="@anthropic-ai/claude-code",
    verified="2.1.332",
    gaps=(
        (
            "2.1.332",
            "skill and slash-command shell lines (!`cmd` in a skill or a .claude/commands"
            " file) run unguarded: no hook sees them before Claude Code 2.1.332"
            " (PreSkillShellCommand)",
        ),
    ),
    config={
        "user": "~/.claude/settings.json",
        "project": ".claude/settings.json",
        "local": ".claude/settings.local.json",
    },
    # HookEvent lists the events kodelet answers first, in the order installs write them.
    events={e.value: e.value for e in HookEvent},
    fails_open=False,
    on_failure_key=True,
    transports=("command", "http"),
    file_kind="Claude settings",
    cannot_apply=(
        (
            "after_tool_call",
            "a rewritten error of a failed tool call: Claude Code can neither replace nor withhold"
            " it, so the model gets the original error (a redaction does not hold there)",
        ),
    ),
    status_notes=(
        "Claude Code runs the hooks of its own settings files itself (`kodelet hooks list`"
        " shows them).",
    ),
    project_env="CLAUDE_PROJECT_DIR",
    project_where_started=True,
    start_vars=("CLAUDE_PROJECT_DIR",),
    sources_flag="--setting-sources",
    sure_when=(
        "`kodelet` is on its PATH outside the project, the entry blocks on failure, and"
        " no --setting-sources leaves the project out"
    ),
    empty_prompt_typed=True,
)

"""A Claude Agent SDK host whose every tool call and prompt goes through kodelet's hooks.

    pip install 'kodelet[claude-agent-sdk]'
    python host.py --check            # fire a PreToolUse through the hooks, no model call;
                                      # stderr says why the answer is what it is
    python host.py "tidy the README"  # a real agent run (needs the SDK's credentials)

kodelet loads the hooks for the current directory: native plugins, .kodelet/hooks,
installed plugin repositories and the built-ins (docs/HOSTS.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Literal

from kodelet import Event, Source, load_runtime
from kodelet.integrations.claude_agent_sdk import hooks


async def check() -> None:
    cwd = os.getcwd()
    # As hooks() does on its own: in an SDK run, Claude Code runs the hooks of its
    # settings files itself, so only plugin repositories' Claude hooks run here.
    with load_runtime(cwd=cwd, claude="plugins") as runtime:
        (matcher,) = hooks(runtime)["PreToolUse"]
        data = {
            "session_id": "check",
            "transcript_path": "",
            "cwd": cwd,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "rm -rf /"},
        }
        answer = await matcher.hooks[0](data, None, {})
        print(json.dumps(answer))
        guards = [
            h.name for h in runtime.hooks(Event.BEFORE_TOOL_CALL) if h.source is not Source.BUILTIN
        ]
    left_to_claude = sorted(set(_claude_hooks(cwd, True)) - set(_claude_hooks(cwd, "plugins")))
    if left_to_claude:
        say(
            f"Claude Code hooks of the settings files not run here: {', '.join(left_to_claude)}"
            " (in an agent run Claude Code runs them itself; `kodelet claude run PreToolUse"
            " --payload -` fires them alone)"
        )
    if answer:
        return
    if guards:
        say(f"{{}} means allowed: the before_tool_call hooks {', '.join(guards)} let it through")
    else:
        say(
            f"{{}} means allowed: no before_tool_call hook of yours is loaded for {cwd}, so"
            " nothing guards `rm -rf /` (add one: `kodelet hooks new no-rm-rf -e"
            " before_tool_call`; `kodelet hooks list` shows what is loaded)"
        )


def _claude_hooks(cwd: str, claude: bool | Literal["plugins"]) -> list[str]:
    """The Claude Code hooks kodelet would run for ``cwd`` with ``load_runtime(claude=...)``."""
    with load_runtime(
        cwd=cwd, claude=claude, entry_points=False, builtins=False, executables=False
    ) as runtime:
        return [h.name for e in Event for h in runtime.hooks(e) if h.source is Source.CLAUDE]


def say(line: str) -> None:
    print(f"host.py --check: {line}", file=sys.stderr)


async def run(prompt: str) -> None:
    from claude_agent_sdk import ClaudeAgentOptions, query

    with load_runtime(cwd=os.getcwd(), claude="plugins") as runtime:
        options = ClaudeAgentOptions(hooks=hooks(runtime), cwd=os.getcwd())
        async for message in query(prompt=prompt, options=options):
            print(message)


if __name__ == "__main__":
    if sys.argv[1:] in ([], ["--check"]):
        asyncio.run(check())
    else:
        asyncio.run(run(" ".join(sys.argv[1:])))

"""A Claude Agent SDK host whose every tool call and prompt goes through kodelet's hooks.

    pip install 'kodelet[claude-agent-sdk]'
    python host.py --check            # fire a PreToolUse through the hooks, no model call
    python host.py "tidy the README"  # a real agent run (needs the SDK's credentials)

kodelet loads the hooks for the current directory: native plugins, .kodelet/hooks,
installed plugin repositories and the built-ins (docs/HOSTS.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from kodelet import load_runtime
from kodelet.integrations.claude_agent_sdk import hooks


async def check() -> None:
    with load_runtime(cwd=os.getcwd(), claude=False) as runtime:
        (matcher,) = hooks(runtime)["PreToolUse"]
        data = {
            "session_id": "check",
            "transcript_path": "",
            "cwd": os.getcwd(),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "rm -rf /"},
        }
        print(json.dumps(await matcher.hooks[0](data, None, {})))


async def run(prompt: str) -> None:
    from claude_agent_sdk import ClaudeAgentOptions, query

    with load_runtime(cwd=os.getcwd(), claude=False) as runtime:
        options = ClaudeAgentOptions(hooks=hooks(runtime), cwd=os.getcwd())
        async for message in query(prompt=prompt, options=options):
            print(message)


if __name__ == "__main__":
    if sys.argv[1:] in ([], ["--check"]):
        asyncio.run(check())
    else:
        asyncio.run(run(" ".join(sys.argv[1:])))

"""The Claude Code harness the end-to-end tests share: one project and HOME with
kodelet installed into Claude Code's project settings, and the hooks the tests give it
(a guard, a rewrite, a redactor, a recorder of payloads)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
from kodelet.agents.standins.messages import Script, Turn
from kodelet.testing import write_hook

from tests.e2e.claude_code import Run, run_claude
from tests.kit.cli import venv_kodelet as kodelet

DANGER_HOOK = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'danger'; then echo '{"blocked": true, "reason": "no danger here"}'; fi ;;
esac
"""


@attrs.define
class Agent:
    """One project and HOME with kodelet installed into Claude Code's project settings."""

    binary: Path
    project: Path
    home: Path
    venv_bin: Path

    def kodelet(self, *args: str, check: bool = True, cwd: Path | None = None) -> Any:
        return kodelet(self.venv_bin, *args, cwd=cwd or self.project, check=check)

    def install(self, *args: str) -> None:
        self.kodelet("claude", "install", "--scope", "project", *args)

    def hook(self, name: str, text_: str) -> Path:
        return write_hook(self.project / ".kodelet" / "hooks", name, text_)

    def config(self, toml: str) -> None:
        (self.project / ".kodelet" / "config.toml").write_text(toml)

    def run(self, turns: list[Turn] | Script, **kw: Any) -> Run:
        kw.setdefault("path_prefix", [str(self.venv_bin)])
        return run_claude(self.binary, self.project, self.home, turns, **kw)


def recorder(event: str, out: Path, answer: str = "") -> str:
    """An executable hook that appends each payload to ``out`` and prints ``answer``."""
    return f"""#!/bin/bash
case "$1" in
  hook) echo {event} ;;
  run) cat >> {out}; echo >> {out}; printf '%s' '{answer}' ;;
esac
"""


def payloads(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


REWRITE_HOOK = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'touch original'; then echo '{"input": {"command": "touch rewritten"}}'; fi ;;
esac
"""


REDACT_HOOK = """#!/usr/bin/env python3
import json, sys
if sys.argv[1] == "hook":
    print("after_tool_call")
else:
    payload = json.load(sys.stdin)
    text = json.dumps(payload["tool_output"])
    if "SECRET123" in text:
        print(json.dumps({"output": json.loads(text.replace("SECRET123", "[redacted]"))}))
"""


NO_RM_RF = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call ;;
  run) payload=$(cat)
       case "$payload" in
         *'"tool_name": "bash"'*'rm -rf'*) echo '{"blocked": true, "reason": "no rm -rf"}' ;;
       esac ;;
esac
"""

BOOM = """---
allowed-tools: Bash(rm:*)
---
Result: !`rm -rf victim`
"""


def boom(project: Path) -> Path:
    """A project command whose shell line deletes ``victim/`` as ``/boom`` loads, with no
    tool call the model makes; the victim, made beside it."""
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True, exist_ok=True)
    (commands / "boom.md").write_text(BOOM)
    victim = project / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    return victim

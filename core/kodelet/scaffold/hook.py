"""``kodelet hooks new``: an executable hook that runs as written, in Python or bash.

It starts with a ``#!/usr/bin/env`` line and a Python one imports only the standard
library: ``.kodelet/hooks`` is shared with a team, and a path into this machine's
venv would not exist on a teammate's checkout, where the guard would then not run.

The file is created executable (0700) in directories made 0700 whatever the umask,
so kodelet trusts it, because a hook that discovery skips is the first thing a new
author would otherwise trip on.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import attrs

from ..errors import KodeletError
from ..eventdocs import EXAMPLES
from ..events import Event
from ..jsonio import make_private_dirs
from ..payloads import PAYLOAD_TYPES
from ..places import DISABLE_SUFFIX

__all__ = ["LANGS", "HookScaffoldError", "create_hook", "try_command"]

LANGS = {"python": "hook.py.tmpl", "bash": "hook.sh.tmpl"}
HOOK_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Besides the required fields, what the hint's payload keeps of the event's example.
_SHOWN = ("tool_input",)


# What each event's answer can do, as the comment the new hook shows: an event that
# cannot block shows what it can do instead, since a {"blocked": true} there is ignored.
PY_EXAMPLES = {
    Event.BEFORE_TOOL_CALL: """\
    # Return a result dict, or None for no action. To refuse the call:
    #   return {"blocked": True, "reason": "why, for the model"}
    # To rewrite its input:
    #   return {"input": {**payload["tool_input"], "command": "pytest -q"}}""",
    Event.AFTER_TOOL_CALL: """\
    # Return a result dict, or None for no action. The tool has run: this event
    # cannot block. To rewrite the text the model sees (metadata.output, the same
    # field in every agent; metadata.tool_response is the agent's raw result):
    #   return {"output": {**payload["tool_output"], "metadata": {"output": "..."}}}
    # To add a note for the model's next call:
    #   return {"additional_context": ["run the formatter before committing"]}""",
    Event.USER_MESSAGE_SEND: """\
    # Return a result dict, or None for no action. To keep the message from the model:
    #   return {"blocked": True, "reason": "why, for the user"}
    # To add a note for the model's next call:
    #   return {"additional_context": ["the user prefers short answers"]}""",
    Event.AFTER_TURN: """\
    # Return a result dict, or None for no action. This event cannot block. To
    # replace the conversation (as compaction does):
    #   return {"result": "mutate", "messages": [{"role": "user", "content": "summary"}]}""",
    Event.AGENT_STOP: """\
    # Return a result dict, or None for no action. This event cannot block. To keep
    # the agent going with more messages:
    #   return {"follow_up_messages": ["run the tests before stopping"]}""",
}
SH_EXAMPLES = {
    Event.BEFORE_TOOL_CALL: """\
# For example, to refuse the call (plain shell matching, no jq needed):
#   case "$payload" in *'"rm -rf /'*)
#       echo '{"blocked": true, "reason": "no rm -rf /"}'; exit 0 ;;
#   esac
# A result with "input" rewrites the tool's arguments instead.""",
    Event.AFTER_TOOL_CALL: """\
# The tool has run: this event cannot block. For example, to add a note for
# the model's next call (plain shell matching, no jq needed):
#   case "$payload" in *'"success": false'*)
#       echo '{"additional_context": ["the tool failed; say so"]}'; exit 0 ;;
#   esac
# A result with "output" rewrites what the model sees of the tool's output.""",
    Event.USER_MESSAGE_SEND: """\
# For example, to keep a message from the model (plain shell matching, no jq needed):
#   case "$payload" in *AKIA*)
#       echo '{"blocked": true, "reason": "that looks like an AWS key"}'; exit 0 ;;
#   esac""",
    Event.AFTER_TURN: """\
# This event cannot block. A result can replace the conversation, e.g.
#   echo '{"result": "mutate", "messages": [{"role": "user", "content": "summary"}]}'; exit 0""",
    Event.AGENT_STOP: """\
# This event cannot block. For example, to keep the agent going:
#   echo '{"follow_up_messages": ["run the tests before stopping"]}'; exit 0""",
}
EXAMPLES_BY_LANG = {"python": PY_EXAMPLES, "bash": SH_EXAMPLES}


class HookScaffoldError(KodeletError):
    """A hook that cannot be created as asked; nothing was written."""


class HookExists(HookScaffoldError):
    """The file (or its ``.disable`` twin) is already there; it is never overwritten."""


def try_command(event: Event) -> str:
    """A shell line sending a short, valid payload through every enabled hook (the
    example's required fields; ``hooks run`` fills in the rest)."""
    required = {f.name for f in attrs.fields(PAYLOAD_TYPES[event]) if f.default is attrs.NOTHING}
    keep = required | set(_SHOWN)
    payload = {k: _trimmed(v) for k, v in EXAMPLES[event][0].items() if k in keep}
    text = json.dumps(payload, separators=(", ", ": "))
    return f"echo {shlex.quote(text)} | kodelet hooks run {event.value} --payload -"


def _trimmed(value: Any) -> Any:
    """Strings without their trailing newlines: some ``echo``s would turn ``\\n`` into one."""
    if isinstance(value, str):
        return value.rstrip("\n")
    if isinstance(value, dict):
        return {k: _trimmed(v) for k, v in value.items()}
    return value


def failure_note(name: str, event: Event, comment: str) -> str:
    """What a failure of the new hook does, as its header says it (lines prefixed with
    ``comment``): on a blocking event it blocks the call unless the hook opts out."""
    if event.blocking:
        lines = [
            "If this hook fails (crashes, times out, prints something that is not a",
            "result, cannot start), kodelet blocks the call: a guard that cannot decide",
            "says no. A hook that must never stop the agent opts out in config.toml:",
            f'[hooks."{name}"] fail_closed = false',
        ]
    else:
        lines = [
            "If this hook fails, kodelet records it (kodelet hooks run --trace) and",
            f"the other hooks still run: {event.value} cannot block.",
        ]
    return "\n".join(f"{comment} {line}".rstrip() if comment else line for line in lines)


def create_hook(directory: Path, name: str, event: Event, lang: str) -> Path:
    """Write hook ``name`` into ``directory`` (created 0755); never overwrites."""
    if not HOOK_NAME_RE.fullmatch(name) or name.endswith(DISABLE_SUFFIX):
        raise HookScaffoldError(
            f"invalid hook name {name!r}: use letters, digits, '.', '_' and '-', "
            f"without a {DISABLE_SUFFIX} suffix"
        )
    if lang not in LANGS:
        raise HookScaffoldError(f"unknown language {lang!r} (choose {' or '.join(LANGS)})")
    target = directory / name
    if os.path.lexists(target) or os.path.lexists(f"{target}{DISABLE_SUFFIX}"):
        raise HookExists(f"{target} already exists; not overwritten")
    text = Template(resources.files(__package__).joinpath(LANGS[lang]).read_text("utf-8"))
    body = text.substitute(
        name=name,
        event=event.value,
        try_=try_command(event),
        example=EXAMPLES_BY_LANG[lang][event],
        failure=failure_note(name, event, "#" if lang == "bash" else ""),
    )
    make_private_dirs(directory)  # a group-writable hooks dir may not be trusted
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o700)  # whatever the umask says
        fh.write(body)
    return target

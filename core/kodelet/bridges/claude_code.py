"""kodelet behind Claude Code's command hooks: ``kodelet claude hook``.

Claude Code runs a command for each hook event with one JSON object on stdin and
acts on the JSON the command prints. This module reads that input through the
Claude dialect's translator (:func:`kodelet.claude.mapping.kodelet_payload`),
dispatches the payload through the project's runtime and answers through the
translator the other way (:func:`kodelet.claude.mapping.claude_answer`).

It never fails open. When kodelet itself cannot answer (a config typo, a plugin
that does not import, an input over kodelet's bounds), a tool call or prompt is
blocked with a reason that names the problem and the fix, and other events show
the problem to the user; ``[claude] on_failure = "allow"`` opts out. It is on the
agent's hot path, so it imports no CLI framework (:mod:`kodelet.cli.entry`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import attrs

from ..claude.events import HookEvent
from ..claude.mapping import EVENT_MAP, claude_answer, kodelet_payload, to_kodelet_event
from ..errors import KodeletError
from ..events import Event

__all__ = [
    "EVENTS",
    "Call",
    "HookInputError",
    "failure_answer",
    "main",
    "read_call",
    "run_hook",
]

# Claude Code event -> (kodelet event, invoked_by), from the one mapping table.
EVENTS: dict[str, tuple[Event, str]] = {
    m.claude.value: (m.kodelet, m.invoked_by) for m in EVENT_MAP
}
BLOCKING = (HookEvent.PRE_TOOL_USE.value, HookEvent.USER_PROMPT_SUBMIT.value)
INPUT_CAP = 64 * 1024 * 1024


class HookInputError(KodeletError, ValueError):
    """Claude Code's input is not a hook input this bridge can read."""


@attrs.frozen
class Call:
    """One hook input, read: Claude's view, kodelet's payload, and the project it is in."""

    hook_input: Any
    payload: Any
    project: Path


def read_call(data: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Call | None:
    """The call for a Claude hook input; None when kodelet has no such event. Raises
    :class:`KodeletError` (with the field named) for an input kodelet cannot take; one
    over kodelet's bounds is refused by the dispatch, as any payload is."""
    from ..claude.types import HookDataError, input_from_wire
    from ..places import find_project

    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookInputError("hook input has no 'hook_event_name'")
    try:
        event = HookEvent(name)
    except ValueError:
        return None
    if to_kodelet_event(event) is None:
        return None
    try:
        hook_input = input_from_wire(event, dict(data))
    except HookDataError as exc:
        raise HookInputError(str(exc)) from None
    payload = kodelet_payload(hook_input)
    project = find_project(hook_input.cwd or None, os.environ if env is None else env)
    return Call(hook_input, payload, project)


def run_hook(
    data: Mapping[str, Any],
    *,
    trace: IO[str] | None = None,
    no_hooks: bool | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """Dispatch one Claude hook input through its project's runtime; the answer or None."""
    call = read_call(data, env)
    if call is None:
        return None
    from ..assembly import hooks_die_with_host, load_runtime

    # Claude Code reads stdout as the answer (and, for some events, as text for
    # the model): a plugin's stray print must not end up there. Claude Code runs
    # the settings files' hooks itself; kodelet adds the plugin repositories'.
    with (
        contextlib.redirect_stdout(sys.stderr),
        load_runtime(
            cwd=call.project,
            no_hooks=no_hooks,
            env=env,
            claude="plugins",
            transcript_path=call.hook_input.transcript_path,
        ) as runtime,
        hooks_die_with_host(runtime),
    ):
        dispatch = runtime.dispatch(call.payload)
    if trace is not None:
        for rec in dispatch.trace:
            trace.write(json.dumps(rec.to_json(), ensure_ascii=False) + "\n")
        trace.flush()
    return claude_answer(call.hook_input, dispatch.result)


FIX = (
    'fix it (`kodelet claude status` shows the state), or set [claude] on_failure = "allow"'
    " in .kodelet/config.toml to let calls through while kodelet cannot answer"
)


def on_failure(data: Mapping[str, Any] | None, env: Mapping[str, str] | None = None) -> str:
    """``[claude] on_failure`` of the input's project: "block" unless plainly "allow"."""
    try:
        from ..config import on_failure as configured
        from ..places import Places, find_project

        env = os.environ if env is None else env
        cwd = data.get("cwd") if isinstance(data, Mapping) else None
        project = find_project(cwd if isinstance(cwd, str) and cwd else None, env)
        return configured(Places.resolve(project, None, env))
    except Exception:  # whatever stops us reading it, the safe answer stands
        return "block"


def failure_answer(name: Any, problem: str) -> tuple[dict[str, Any] | None, int]:
    """(stdout document, exit code) for a call kodelet could not answer: a block on the
    events that can block, the problem shown to the user on the others."""
    if name == HookEvent.PRE_TOOL_USE.value:
        reason = f"kodelet could not check this tool call, so it is blocked: {problem}; {FIX}"
        specific = {
            "hookEventName": name,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
        return {"hookSpecificOutput": specific}, 0
    if name == HookEvent.USER_PROMPT_SUBMIT.value:
        reason = f"kodelet could not check this prompt, so it is blocked: {problem}; {FIX}"
        return {"decision": "block", "reason": reason}, 0
    if isinstance(name, str) and name:
        return {"systemMessage": f"kodelet could not run its {name} hooks: {problem}"}, 0
    return None, 2  # no event known: exit 2 blocks where Claude Code can, shows stderr elsewhere


def _setup_logging() -> None:
    name = os.environ.get("KODELET_LOG_LEVEL", "warning").strip().upper() or "WARNING"
    level = logging.getLevelNamesMapping().get(name, logging.WARNING)
    logging.basicConfig(level=level, format="kodelet: %(levelname)s: %(message)s")


USAGE = "kodelet claude hook [--trace] [--trace-file PATH] [--no-hooks]"
HELP = f"""Usage: {USAGE}

  The command Claude Code runs: one hook input on stdin, kodelet's answer on
  stdout in Claude Code's hook output format (docs/CLAUDE.md). When kodelet
  cannot answer, a tool call or prompt is blocked with the reason.

Options:
  --trace            One JSON line per hook called, on stderr.
  --trace-file PATH  The same lines, appended to PATH.
  --no-hooks         Only the built-ins run.
  -h, --help         Show this message and exit.
"""


def _read_input() -> dict[str, Any]:
    raw = sys.stdin.buffer.read(INPUT_CAP + 1)
    if len(raw) > INPUT_CAP:
        raise HookInputError(f"hook input is over {INPUT_CAP // (1024 * 1024)} MiB")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookInputError(f"hook input on stdin is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HookInputError(f"hook input must be a JSON object, not {type(data).__name__}")
    return data


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KodeletError | OSError):
        return str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {exc}"


def main(argv: Sequence[str] | None = None) -> int:
    """``kodelet claude hook``: stdin in, Claude Code's JSON out. Never a traceback at the
    agent, and never a silent "go ahead" when kodelet itself failed."""
    args = list(sys.argv[3:] if argv is None else argv)
    trace: IO[str] | None = None
    no_hooks: bool | None = None
    data: dict[str, Any] | None = None
    try:
        while args:
            arg = args.pop(0)
            if arg == "--trace":
                trace = trace or sys.stderr
            elif arg == "--trace-file" and args:
                trace = open(args.pop(0), "a", encoding="utf-8")  # noqa: SIM115
            elif arg == "--no-hooks":
                no_hooks = True
            elif arg in ("-h", "--help"):
                sys.stdout.write(HELP)
                return 0
            else:
                raise HookInputError(f"unknown option {arg!r} (usage: {USAGE})")
        _setup_logging()
        data = _read_input()
        out = run_hook(data, trace=trace, no_hooks=no_hooks)
    except Exception as exc:
        problem = _describe(exc)
        sys.stderr.write(f"kodelet: error: {problem}\n")
        if on_failure(data) == "allow":
            return 1  # a non-blocking error for Claude Code: the opt-out
        name = data.get("hook_event_name") if data is not None else None
        out, code = failure_answer(name, problem)
        if out is None:
            return code
    finally:
        if trace is not None and trace is not sys.stderr:
            trace.close()
    if out is not None:
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    return 0

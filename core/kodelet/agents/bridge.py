"""kodelet behind Claude Code's command hooks: ``kodelet claude hook``.

Claude Code runs a command for each hook event with one JSON object on stdin and
acts on the JSON the command prints. This module reads that input through the
agent's dialect (:meth:`kodelet.agents.base.Dialect.to_claude`, then
:func:`kodelet.claude.mapping.kodelet_payload`), dispatches the payload through the
project's runtime, decodes the merged result once (:class:`kodelet.agents.base.Answer`)
and says it in the agent's words (:meth:`kodelet.agents.base.Dialect.speak`). Claude
Code is the dialect without ``--agent``.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any

import attrs

from ..claude.events import HookEvent
from ..claude.mapping import EVENT_MAP, kodelet_payload, to_kodelet_event
from ..errors import KodeletError
from ..events import Event
from . import DEFAULT
from .base import PRE_TOOL, PROMPT, SKILL_SHELL, Answer, Dialect

__all__ = [
    "EVENTS",
    "Call",
    "HookInputError",
    "Options",
    "answer",
    "failure_answer",
    "fresh_runtime",
    "main",
    "parse_args",
    "read_call",
    "run_hook",
]

# Claude Code event -> (kodelet event, invoked_by), from the one mapping table.
EVENTS: dict[str, tuple[Event, str]] = {
    m.claude.value: (m.kodelet, m.invoked_by) for m in EVENT_MAP
}
BLOCKING = (
    HookEvent.PRE_TOOL_USE.value,
    HookEvent.PRE_SKILL_SHELL_COMMAND.value,
    HookEvent.USER_PROMPT_SUBMIT.value,
)
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


RuntimeSource = Callable[[Call, "bool | None"], AbstractContextManager[Any]]
"""Lends the runtime that answers a call: a fresh one per call in-process, the kept one
in a warm kodelet (:mod:`kodelet.warm.server`)."""


@contextlib.contextmanager
def fresh_runtime(
    call: Call, no_hooks: bool | None, env: Mapping[str, str] | None = None
) -> Iterator[Any]:
    """The project's runtime, loaded for this one call, its hooks killed with this process."""
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
        yield runtime


def run_hook(
    data: Mapping[str, Any],
    *,
    trace: IO[str] | None = None,
    no_hooks: bool | None = None,
    env: Mapping[str, str] | None = None,
    runtimes: RuntimeSource | None = None,
    agent: str = DEFAULT.name,
) -> Answer | None:
    """Dispatch one Claude hook input through its project's runtime; the answer, or None
    when kodelet has no such event. ``agent`` (a dialect's name) is who asked, for the
    decision log."""
    call = read_call(data, env)
    if call is None:
        return None
    lend = runtimes or (lambda c, n: fresh_runtime(c, n, env))
    with lend(call, no_hooks) as runtime:
        dispatch = runtime.dispatch(call.payload, agent=agent)
    if trace is not None:
        for rec in dispatch.trace:
            trace.write(json.dumps(rec.to_json(), ensure_ascii=False) + "\n")
        trace.flush()
    return Answer.of(call.hook_input, dispatch.result)


FIX = (
    "fix it (`kodelet {agent} status` shows the state), or set [claude] on_failure ="
    ' "allow"'
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


def _opted_out(agent: Dialect, data: Mapping[str, Any], env: Mapping[str, str] | None) -> bool:
    """The input's project config lets the call :meth:`Dialect.unguardable` refuses go to
    the hooks; a config that cannot be read keeps the refusal."""
    try:
        from ..config import load_config
        from ..places import Places, find_project

        env = os.environ if env is None else env
        cwd = data.get("cwd")
        project = find_project(cwd if isinstance(cwd, str) and cwd else None, env)
        return agent.unguardable_allowed(load_config(Places.resolve(project, None, env), env))
    except Exception:  # whatever stops us reading it, the refusal stands
        return False


def failure_answer(name: Any, problem: str, agent: str = "claude") -> tuple[Answer | None, int]:
    """(answer, exit code) for a call kodelet could not answer: a block on the events
    that can block, the problem shown to the user on the others."""
    fix = FIX.format(agent=agent)
    if name in (PRE_TOOL, SKILL_SHELL):
        what = "tool call" if name == PRE_TOOL else "skill's shell line"
        reason = f"kodelet could not check this {what}, so it is blocked: {problem}; {fix}"
        return Answer(name, blocked=True, reason=reason), 0
    if name == PROMPT:
        reason = f"kodelet could not check this prompt, so it is blocked: {problem}; {fix}"
        return Answer(name, blocked=True, reason=reason), 0
    if isinstance(name, str) and name:
        return Answer(name, message=f"kodelet could not run its {name} hooks: {problem}"), 0
    return None, 2  # no event known: exit 2 blocks where Claude Code can, shows stderr elsewhere


def _setup_logging() -> None:
    name = os.environ.get("KODELET_LOG_LEVEL", "warning").strip().upper() or "WARNING"
    level = logging.getLevelNamesMapping().get(name, logging.WARNING)
    logging.basicConfig(level=level, format="kodelet: %(levelname)s: %(message)s")


USAGE = (
    "kodelet claude hook [--agent NAME] [--scope SCOPE] [--trace] [--trace-file PATH] [--no-hooks]"
)
HELP = f"""Usage: {USAGE}

  The command Claude Code runs: one hook input on stdin, kodelet's answer on
  stdout in Claude Code's hook output format (docs/CLAUDE.md). When kodelet
  cannot answer, a tool call or prompt is blocked with the reason.

Options:
  --agent NAME       The input and answer are agent NAME's (codex, qwen, ...;
                     docs/AGENTS.md), not Claude Code's.
  --scope SCOPE      This is the agent's entry of SCOPE (user, local): it answers
                     nothing when an entry of an earlier scope does the work, so
                     kodelet installed twice runs each hook once.
  --trace            One JSON line per hook called, on stderr.
  --trace-file PATH  The same lines, appended to PATH.
  --no-hooks         Only the built-ins run.
  -h, --help         Show this message and exit.
"""


@attrs.frozen
class Options:
    """``kodelet claude hook``'s options; the warm kodelet's client passes them along."""

    trace: bool = False
    trace_file: str | None = None
    no_hooks: bool | None = None
    help: bool = False
    agent: Dialect = DEFAULT
    """The :class:`kodelet.agents.Dialect` of ``--agent NAME``; Claude Code's without."""
    scope: str | None = None
    """``--scope``: the scope of the agent's hook file this entry is in (:mod:`.installs`)."""


def parse_args(argv: Sequence[str]) -> Options:
    args = list(argv)
    trace, trace_file, no_hooks, wants_help, agent = False, None, None, False, DEFAULT
    scope = None
    while args:
        arg = args.pop(0)
        if arg == "--trace":
            trace = True
        elif arg == "--trace-file" and args:
            trace_file = args.pop(0)
        elif arg == "--no-hooks":
            no_hooks = True
        elif arg == "--agent" and args:
            from . import dialect

            try:
                agent = dialect(args.pop(0))
            except LookupError as exc:
                raise HookInputError(str(exc)) from None
        elif arg == "--scope" and args:
            scope = args.pop(0)
        elif arg in ("-h", "--help"):
            wants_help = True
        else:
            raise HookInputError(f"unknown option {arg!r} (usage: {USAGE})")
    return Options(trace, trace_file, no_hooks, wants_help, agent, scope)


def read_input(raw: bytes) -> dict[str, Any]:
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


def answer(
    raw: bytes,
    argv: Sequence[str],
    *,
    stderr: IO[str],
    env: Mapping[str, str] | None = None,
    runtimes: RuntimeSource | None = None,
    caller: int | None = None,
) -> tuple[str, int]:
    """(stdout, exit code) for one hook input: what ``kodelet claude hook`` prints, in
    this process or in a warm kodelet. Never a traceback, and never a silent "go ahead"
    when kodelet itself failed. ``caller`` is the process the agent started for the call
    (None: not known), which says what the agent was told to load (:mod:`.installs`)."""
    trace: IO[str] | None = None
    data: dict[str, Any] | None = None
    agent = DEFAULT
    raw_input: dict[str, Any] = {}
    try:
        options = parse_args(argv)
        agent = options.agent
        if options.help:
            return HELP, 0
        if options.trace_file is not None:
            trace = open(options.trace_file, "a", encoding="utf-8")  # noqa: SIM115
        elif options.trace:
            trace = stderr
        raw_input = read_input(raw)
        if options.scope is not None:
            from .installs import stands_down

            where = os.environ if env is None else env
            if stands_down(agent, options.scope, raw_input, where, caller):
                return agent.speak(None, 0, raw_input)  # that entry answers this call
        data = agent.to_claude(raw_input)
        refused = agent.unguardable(raw_input)
        if refused is not None and not _opted_out(agent, data, env):
            return agent.speak(Answer(PRE_TOOL, blocked=True, reason=refused), 0, raw_input)
        out = run_hook(
            data,
            trace=trace,
            no_hooks=options.no_hooks,
            env=env,
            runtimes=runtimes,
            agent=agent.name,
        )
    except Exception as exc:
        problem = _describe(exc)
        stderr.write(f"kodelet: error: {problem}\n")
        if on_failure(data, env) == "allow":
            return agent.speak(None, 1, raw_input)  # non-blocking: the opt-out
        name = agent.claude_event(data.get("hook_event_name")) if data is not None else None
        failed, code = failure_answer(name, problem, agent.name)
        return agent.speak(failed, code, raw_input)
    finally:
        if trace is not None and trace is not stderr:
            trace.close()
    return agent.speak(out, 0, raw_input)


def main(argv: Sequence[str] | None = None, raw: bytes | None = None) -> int:
    """``kodelet claude hook``: stdin in, Claude Code's JSON out."""
    argv = list(sys.argv[3:] if argv is None else argv)
    _setup_logging()
    if raw is None:
        wants_help = any(a in ("-h", "--help") for a in argv)
        raw = b"" if wants_help else sys.stdin.buffer.read(INPUT_CAP + 1)
    out, code = answer(raw, argv, stderr=sys.stderr, caller=os.getpid())
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()
    return code

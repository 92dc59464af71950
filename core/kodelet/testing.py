"""Test helpers for plugin authors, loaded into pytest by the ``pytest11`` entry point.

A plugin's tests should exercise the same code paths a host does: a real
:class:`~kodelet.runtime.Runtime` (so ``configure``, call order and the merge
policy apply), payloads validated by the wire converter, and executables run
through the real adapter (so a hook that prints bad JSON fails its test the way
it would fail in production). Everything here is importable as plain functions
too, for authors who prefer them to fixtures.

Fixtures: ``kodelet_runtime`` (factory of isolated runtimes), ``kodelet_payload``
(:func:`make_payload`), ``kodelet_run_hook`` (:func:`run_executable_hook`) and
``kodelet_home`` (HOME and KODELET_HOME in a temp dir). :class:`Approvals` stands in
for the user a host asks when a hook answers ``ask``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from .adapters.discovery import DiscoveredHook, query_event
from .adapters.executable import ExecutableHook
from .adapters.executables import NAME as EXECUTABLES
from .assembly import load_runtime
from .config import Config
from .errors import HookFailure
from .events import Event, parse_event
from .host.approval import ApprovalRequest
from .payloads import (
    AfterToolCallPayload,
    AfterTurnPayload,
    AgentStopPayload,
    BasePayload,
    BeforeToolCallPayload,
    UserMessageSendPayload,
)
from .policy import coerce_result
from .runtime import Runtime
from .wire import build_payload, converter, payload_to_wire

__all__ = [
    "SHELL_TOOL_NAMES",
    "Approvals",
    "HookFailure",
    "RuntimeFactory",
    "after_tool_call_payload",
    "after_turn_payload",
    "agent_stop_payload",
    "before_tool_call_payload",
    "discovered",
    "executables",
    "isolated_runtime",
    "make_payload",
    "per_call_runtime",
    "run_executable_hook",
    "unblocked_shells",
    "user_message_send_payload",
    "write_hook",
]

TIMESTAMP = "2024-01-15T10:30:00Z"

_DEFAULTS: dict[Event, dict[str, Any]] = {
    Event.BEFORE_TOOL_CALL: {
        "tool_name": "bash",
        "tool_input": {"command": "ls -la"},
        "tool_user_id": "tool-call-id",
    },
    Event.AFTER_TOOL_CALL: {
        "tool_name": "bash",
        "tool_input": {"command": "ls -la"},
        "tool_user_id": "tool-call-id",
    },
    Event.USER_MESSAGE_SEND: {"message": "hello"},
    Event.AFTER_TURN: {"turn_number": 1},
    Event.AGENT_STOP: {"messages": []},
}


def make_payload(event: Event | str, **fields: Any) -> BasePayload:
    """A valid payload for ``event``: example values, overridden by ``fields``.

    Values may be model objects or their wire form (``{"toolName": ...}``,
    ``{"role": ..., "content": ...}``); the result went through the same
    converter a host's payload does, so a typo in a field name is a ``ValueError``."""
    ev = parse_event(event) if isinstance(event, str) else event
    data: dict[str, Any] = {
        "conv_id": "test-conversation",
        "cwd": os.getcwd(),
        "invoked_by": "main",
        **_DEFAULTS[ev],
    }
    data.update({k: v for k, v in fields.items() if v is not None})
    if ev is Event.AFTER_TOOL_CALL and "tool_output" not in data:
        data["tool_output"] = {
            "toolName": data["tool_name"],
            "success": True,
            "timestamp": TIMESTAMP,
        }
    return build_payload(ev, data)


def before_tool_call_payload(
    tool_name: str = "bash", tool_input: Mapping[str, Any] | None = None, **fields: Any
) -> BeforeToolCallPayload:
    if tool_input is not None:
        fields["tool_input"] = dict(tool_input)
    payload = make_payload(Event.BEFORE_TOOL_CALL, tool_name=tool_name, **fields)
    return cast(BeforeToolCallPayload, payload)


SHELL_TOOL_NAMES = (
    "bash",
    "Bash",
    "BASH",
    "shell",
    "sh",
    "run_shell_command",
    "execute_command",
    "mcp__shell__bash",
    "mcp__shell__execute_command",
    "mcp__desktop-commander__start_process",
)
"""Names under which agents and MCP servers offer a shell. kodelet maps the names of
Claude Code's built-in tools (``Bash`` → ``bash``); any other spelling reaches hooks
as the agent wrote it (docs/SECURITY.md, "Matching every shell")."""


def unblocked_shells(
    runtime: Runtime, command: str = "rm -rf /", names: Iterable[str] = SHELL_TOOL_NAMES
) -> list[str]:
    """The tool names in ``names`` under which ``runtime``'s hooks let a call running
    ``command`` through: ``[]`` for a guard that matches every shell. Each call is a
    ``before_tool_call`` with ``{"command": command}`` as its input; a call the hooks
    ask the user about is not let through (it is ``blocked`` until approved)."""
    let_through = []
    for name in names:
        payload = before_tool_call_payload(name, {"command": command})
        if not runtime.dispatch(payload).result.blocked:
            let_through.append(name)
    return let_through


def after_tool_call_payload(
    tool_name: str = "bash", tool_input: Mapping[str, Any] | None = None, **fields: Any
) -> AfterToolCallPayload:
    if tool_input is not None:
        fields["tool_input"] = dict(tool_input)
    payload = make_payload(Event.AFTER_TOOL_CALL, tool_name=tool_name, **fields)
    return cast(AfterToolCallPayload, payload)


def user_message_send_payload(message: str = "hello", **fields: Any) -> UserMessageSendPayload:
    payload = make_payload(Event.USER_MESSAGE_SEND, message=message, **fields)
    return cast(UserMessageSendPayload, payload)


def after_turn_payload(turn_number: int = 1, **fields: Any) -> AfterTurnPayload:
    return cast(AfterTurnPayload, make_payload(Event.AFTER_TURN, turn_number=turn_number, **fields))


def agent_stop_payload(messages: Iterable[Any] = (), **fields: Any) -> AgentStopPayload:
    """``messages`` may be ``Message`` objects, dicts or ``(role, content)`` pairs."""
    wire = [
        {"role": m[0], "content": m[1]} if isinstance(m, tuple) else converter.unstructure(m)
        for m in messages
    ]
    return cast(AgentStopPayload, make_payload(Event.AGENT_STOP, messages=wire, **fields))


def run_executable_hook(
    path: str | os.PathLike[str],
    payload: BasePayload | Mapping[str, Any] | None = None,
    *,
    timeout: float = 10.0,
    env: Mapping[str, str] | None = None,
    **fields: Any,
) -> Any:
    """Run an executable hook as the runtime would, and return its converted result.

    The file is first asked ``hook`` (through discovery's own query), then run
    with the payload on stdin by :class:`~kodelet.adapters.executable.ExecutableHook`.
    Returns the event's result object, or ``None`` when the hook printed nothing.
    Raises :class:`HookFailure` for a failed run and ``ValueError`` for an answer
    that does not convert or a payload for another event. Without ``payload``,
    one is made for the event the hook declares, from ``fields``."""
    exe_path = Path(path)
    run_env = dict(os.environ if env is None else env)
    event, _ = query_event(exe_path, run_env)
    if payload is None:
        payload = make_payload(event, **fields)
    wire = payload_to_wire(payload) if isinstance(payload, BasePayload) else dict(payload)
    given = wire.get("event", event.value)
    if parse_event(str(given)) is not event:
        raise ValueError(f"{exe_path.name} handles {event.value}, but the payload is for {given}")
    wire["event"] = event.value
    hook = ExecutableHook(exe_path.name, exe_path, event, env=run_env)
    try:
        raw = hook.run(wire, timeout=timeout)
    finally:
        hook.close()
    return coerce_result(event, raw)


class Approvals:
    """An approver for a :class:`~kodelet.host.session.Session` under test: answers
    ``answer`` to every ``ask`` and keeps the requests, so a test can check what the
    user would have been asked (``approvals.requests[0].reason``)."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.requests.append(request)
        return self.answer


def isolated_runtime(cwd: str | os.PathLike[str], *plugins: Any, **kwargs: Any) -> Runtime:
    """A runtime with only ``plugins`` (objects or ``(name, object)`` pairs): no entry
    points, no built-ins, no executables unless ``kwargs`` ask for them."""
    for flag in ("entry_points", "builtins", "executables", "audit"):
        kwargs.setdefault(flag, False)  # a plugin's tests stay out of the user's decision log
    return load_runtime(cwd=cwd, plugins=plugins, **kwargs)


def write_hook(directory: str | os.PathLike[str], name: str, text: str) -> Path:
    """Write an executable hook file (mode 0755) into ``directory``, made if absent."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def discovered(runtime: Runtime) -> list[DiscoveredHook]:
    """Every executable hook file ``runtime`` looked at, active or not, in precedence order."""
    adapter = runtime.adapters.get(EXECUTABLES)
    return [] if adapter is None else list(adapter.discovered)


def executables(runtime: Runtime) -> list[ExecutableHook]:
    """The runners of ``runtime``'s active executable hooks."""
    adapter = runtime.adapters.get(EXECUTABLES)
    return [] if adapter is None else adapter.executables()


def per_call_runtime(**kwargs: Any) -> Runtime:
    """:func:`~kodelet.assembly.load_runtime`, but with every executable hook spawned per
    call (the ``hook``/``run`` protocol), even one that offers a persistent ``serve``."""
    return load_runtime(**kwargs, persistent=False)


class RuntimeFactory:
    """Builds isolated runtimes and closes them all when the test ends.

    ``factory(plugin, ("name", other), config={"name": {...}})`` registers only the
    given plugins: no entry points, no built-ins, no executable hooks, and a
    project directory and global root of its own. A plugin given as
    ``(name, obj)`` is registered under that name, which is the name its
    ``[plugin.<name>]`` table is looked up by. ``config`` gives those tables
    directly; ``config_toml`` instead writes ``.kodelet/config.toml`` in the
    project directory and lets the real loader read it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._made: list[Runtime] = []

    def __call__(
        self,
        *plugins: Any,
        config: Mapping[str, Mapping[str, Any]] | None = None,
        config_toml: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> Runtime:
        n = len(self._made)
        project = Path(cwd) if cwd is not None else self.root / f"project-{n}"
        project.mkdir(parents=True, exist_ok=True)
        global_root = Path(home) if home is not None else self.root / f"global-{n}"
        if config_toml is not None:
            (project / ".kodelet").mkdir(exist_ok=True)
            (project / ".kodelet" / "config.toml").write_text(config_toml)
        if config is not None:
            kwargs["config"] = Config(plugin_tables={k: dict(v) for k, v in config.items()})
        kwargs.setdefault("entry_points", False)
        kwargs.setdefault("builtins", False)
        kwargs.setdefault("executables", False)
        runtime = load_runtime(cwd=project, home=global_root, plugins=plugins, **kwargs)
        self._made.append(runtime)
        return runtime

    def close(self) -> None:
        while self._made:
            self._made.pop().close()


@pytest.fixture
def kodelet_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeFactory]:
    """A factory of isolated runtimes with only the plugins under test."""
    factory = RuntimeFactory(tmp_path_factory.mktemp("kodelet-runtime"))
    yield factory
    factory.close()


@pytest.fixture
def kodelet_payload() -> Any:
    """:func:`make_payload`: ``kodelet_payload("before_tool_call", tool_input={...})``."""
    return make_payload


@pytest.fixture
def kodelet_run_hook() -> Any:
    """:func:`run_executable_hook`."""
    return run_executable_hook


@pytest.fixture
def kodelet_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME and KODELET_HOME in a temp dir, so a plugin that writes to the global
    root (``$KODELET_HOME``, else ``~/.kodelet``) never touches the real one."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KODELET_HOME", str(home / ".kodelet"))
    return home / ".kodelet"

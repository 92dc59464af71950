"""The Claude Code adapter: Claude Code's own hooks, run as kodelet hooks.

Each command of each matcher of each settings file (:mod:`.claude_settings`) is one
seam entry, ranked after kodelet's own hooks and before the built-ins, in file
order (user, project, local, plugins), so the merged answer never depends on
timing. An entry turns the kodelet payload into Claude Code's input, runs its one
command through a :class:`~kodelet.claude.Runner` (which tests the matcher against
the Claude tool name) and turns the merged Claude answer into a kodelet result.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from ..claude import CommandHook, HookMatcher, Runner, merge
from ..claude.events import HookEvent
from ..claude.mapping import claude_input, to_kodelet_event, to_kodelet_result
from ..claude.results import HookResult, Outcome
from ..claude.runner import MAX_ASYNC
from ..claude.types import HookInput
from ..config import Config
from ..errors import HookFailure
from ..events import Event
from ..kinds import Source, Status
from ..payloads import BasePayload
from ..places import find_project
from ..seam import Adapter, AdapterHook, Rank
from .claude_settings import ClaudeHookSpec
from .standin import blocking_stand_in, stand_in_events

NAME = "kodelet:claude"  # assembly.CLAUDE_ADAPTER spells it too, to import this lazily
DISABLED = "disabled in config.toml"


@attrs.frozen(kw_only=True)
class ClaudeRow:
    """A Claude Code hook as ``kodelet hooks list`` shows it when it does not run."""

    name: str
    event: Event | None
    claude_event: HookEvent | None
    path: Path
    status: Status
    reason: str | None = None


def matcher_of(spec: ClaudeHookSpec, default_timeout: float | None = None) -> HookMatcher:
    """The runner's matcher for one runnable settings entry: its one command hook."""
    return HookMatcher(spec.matcher, [command_of(spec, default_timeout)])  # type: ignore[list-item]


def command_of(spec: ClaudeHookSpec, default_timeout: float | None = None) -> CommandHook:
    """The command hook of one runnable settings entry."""
    assert spec.command is not None
    return CommandHook(
        spec.command,
        timeout=spec.timeout or default_timeout,
        async_=spec.async_,
        plugin_root=spec.plugin_root,
        name=spec.name,
        on_failure=spec.on_failure,
    )


def note(spec: ClaudeHookSpec) -> str:
    """What ``hooks list`` says of a Claude Code hook that runs: its event, matcher and
    command, and that its files passed the trust check (docs/SECURITY.md)."""
    assert spec.event is not None
    on = spec.event.value if spec.matcher in (None, "", "*") else f"{spec.event} {spec.matcher}"
    said = "".join(f"; {w}" for w in spec.warnings)
    return f"{on}; trusted; runs: {spec.command}{said}"


def _no_counterpart(event: HookEvent) -> str:
    return f"{event.value} has no kodelet counterpart"


class ClaudeCodeAdapter(Adapter):
    """Claude Code hooks as seam entries; ``discovered`` lists the ones that do not run."""

    def __init__(
        self,
        specs: Sequence[ClaudeHookSpec],
        config: Config,
        *,
        cwd: str,
        transcript_path: str = "",
    ) -> None:
        super().__init__()
        self.cwd = cwd
        # CLAUDE_PROJECT_DIR: the project, as git finds its root (or as Claude Code
        # says, when kodelet runs inside it), not whichever subfolder the host is in.
        self.project_dir = str(find_project(cwd))
        self.transcript_path = transcript_path
        self.specs = list(specs)
        self.discovered: list[ClaudeRow] = []
        self._runners: dict[str, Runner] = {}
        self.blocks_on_failure: set[str] = set()
        """The hooks that run and whose own failure blocks (Claude Code's ``onFailure``,
        as the runner applies it), for the listings."""
        self._async_slots = threading.BoundedSemaphore(MAX_ASYNC)  # shared by its runners
        self._entries: dict[Event, list[AdapterHook]] = {e: [] for e in Event}
        self._inputs: tuple[BasePayload | None, HookInput | None] = (None, None)
        # A shadowed plugin's hooks share their names with the ones that run instead.
        runs = {s.name for s in self.specs if s.problem is None}
        for spec in self.specs:
            mapping = None if spec.event is None else to_kodelet_event(spec.event)
            event = None if mapping is None else mapping.kodelet
            reason = spec.problem
            status = Status.SKIPPED
            if reason is None and spec.event is not None and mapping is None:
                reason = _no_counterpart(spec.event)
            elif reason is None and not config.hook_enabled(spec.name):
                reason, status = DISABLED, Status.DISABLED
            if (
                spec.problem is not None
                and spec.name not in runs
                and (spec.event is None or event is not None)  # a kodelet event it guards
                and config.fails_closed(spec.name, by_default=False)
                and config.hook_enabled(spec.name)
            ):
                # A fail-closed Claude guard that cannot run still guards (as an
                # executable's stand-in does): it blocks in its place.
                guard = blocking_stand_in(
                    spec.name, Source.CLAUDE, Rank.CLAUDE, str(spec.path), spec.problem
                )
                for blocking in stand_in_events(event):
                    self._entries[blocking].append(guard)
                continue
            if reason is not None or event is None or spec.command is None:
                self.discovered.append(
                    ClaudeRow(
                        name=spec.name,
                        event=event,
                        claude_event=spec.event,
                        path=spec.path,
                        status=status,
                        reason=reason,
                    )
                )
                continue
            self._entries[event].append(self._entry(spec, config.timeout_for(spec.name)))

    def _input(self, payload: BasePayload) -> HookInput | None:
        seen, hook_input = self._inputs
        if seen is not payload:
            hook_input = claude_input(payload, transcript_path=self.transcript_path)
            self._inputs = (payload, hook_input)
        return hook_input

    def _entry(self, spec: ClaudeHookSpec, timeout: float) -> AdapterHook:
        event = spec.event
        assert event is not None
        # Built with its entry (a runner starts no thread before its first fire), so
        # two threads' first calls share one runner and close() reaches every one.
        command = command_of(spec, timeout)
        runner = self._runners[spec.name] = Runner(
            {event: [HookMatcher(spec.matcher, [command])]},  # type: ignore[list-item]
            cwd=self.project_dir,
            async_slots=self._async_slots,
        )
        if command.blocks_on_failure(event):
            self.blocks_on_failure.add(spec.name)

        def applies(payload: BasePayload) -> HookInput | None:
            hook_input = self._input(payload)
            return hook_input if hook_input is not None and hook_input.event == event else None

        def run(payload: BasePayload, _: float) -> Any:
            hook_input = applies(payload)
            if hook_input is None:
                return None
            return _answer(event, hook_input, runner.fire(event, hook_input))

        async def arun(payload: BasePayload, _: float) -> Any:
            hook_input = applies(payload)
            if hook_input is None:
                return None
            results = await runner.afire(event, hook_input)
            return _answer(event, hook_input, results)

        return AdapterHook(
            name=spec.name,
            source=Source.CLAUDE,
            rank=Rank.CLAUDE,
            run=run,
            arun=arun,
            path=str(spec.path),
            note=note(spec),
        )

    def kodelet_hooks(self, event: Event) -> Sequence[AdapterHook]:
        return self._entries[event]

    def close(self) -> None:
        for runner in self._runners.values():
            with contextlib.suppress(Exception):
                runner.close()


def _answer(event: HookEvent, hook_input: HookInput, results: list[HookResult]) -> Any:
    """The hook's kodelet result; a failed run raises, so the runtime records it (and a
    fail-closed hook blocks) instead of the failure passing for "no objection"."""
    for r in results:
        if not r.late and r.outcome in (Outcome.ERROR, Outcome.TIMEOUT, Outcome.CANCELLED):
            raise HookFailure(r.error or f"Claude Code hook {r.outcome.value}")
    tool_name = getattr(hook_input, "tool_name", "")
    return to_kodelet_result(event, merge(event, results), tool_name=tool_name)

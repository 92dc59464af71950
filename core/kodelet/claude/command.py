"""Shell-command hooks, run the way Claude Code runs them.

The command goes through ``/bin/sh -c``, as Claude Code 2.1.332 runs it, in the
input's ``cwd``, reads the input JSON on stdin and sees ``CLAUDE_PROJECT_DIR`` (and
``CLAUDE_PLUGIN_ROOT`` for a plugin's hook, ``CLAUDE_ENV_FILE`` for a SessionStart
or Setup hook). Exit 0: stdout is the hook's JSON output if it parses as a JSON
object, else plain text. Exit 2: a blocking error whose reason is stderr. Any other
exit (127 for a missing command included): a non-blocking error, recorded, and the
call goes on, unless the hook says ``onFailure: "block"``: then a failure (that
exit, a timeout, an answer that does not read) blocks as exit 2 would, except on
the events where a block keeps the agent going (Stop, SubagentStop, TeammateIdle,
TaskCompleted), as Claude Code does. The last 4 KiB of stderr are kept; past its
timeout the hook's whole process group is killed.

Claude Code reads a hook's stdout whatever its size. kodelet reads up to
:data:`STDOUT_CAP` (16 MiB); past it the hook is killed, and on an event that
gates something (PreToolUse, PermissionRequest, UserPromptSubmit) the answer is a
block: a cap never turns a deny it could not read into an allow.

Async: a command configured with ``async_=True`` (Claude Code's ``"async": true``)
answers at once and runs on in the background; a command whose first stdout line
is ``{"async": true, ...}`` does the same from that moment. Either way the process
keeps running, its late result is read from the rest of its stdout and exit code
when it exits, and it is killed if it outlives its async timeout. Claude Code
does not bound an async command; kodelet does, so nothing it starts runs forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ..config import check_timeout
from ..process import STDERR_TAIL, ProcessResult, SpawnError, arun_process
from .events import HookEvent
from .results import HookResult, Outcome, blocking_result, failed_result, result_from_output
from .types import AsyncOutput, HookDataError, output_from_wire

# A run's own deadline is enforced by cancelling it (which kills the process group),
# since an async hook may outlive the timeout it started with.
_CEILING = 7 * 24 * 3600.0

LineSink = Callable[[str, str], None]
"""``(stream, line)``: one line of a running command's stdout or stderr."""

SHELL = ("/bin/sh", "-c")
STDOUT_CAP = 16 * 1024 * 1024
GATES = frozenset(
    {
        HookEvent.PRE_TOOL_USE,
        HookEvent.PRE_SKILL_SHELL_COMMAND,
        HookEvent.PERMISSION_REQUEST,
        HookEvent.USER_PROMPT_SUBMIT,
    }
)
"""Events whose hook decides whether something happens: an answer kodelet cannot
read there blocks."""
KEEPS_GOING = frozenset(
    {HookEvent.STOP, HookEvent.SUBAGENT_STOP, HookEvent.TEAMMATE_IDLE, HookEvent.TASK_COMPLETED}
)
"""Events where a block keeps the agent working: Claude Code never turns an
``onFailure: "block"`` hook's failure into a block there (it could loop forever)."""
ENV_FILE_EVENTS = frozenset({HookEvent.SESSION_START, HookEvent.SETUP})
ON_FAILURE = ("block", "continue")


class _Lines:
    """Splits a stream's chunks into lines for the progress sink."""

    def __init__(self, sink: LineSink | None) -> None:
        self.sink = sink
        self.partial: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        self.first_stdout: str | None = None
        self.first_line = asyncio.Event()

    def feed(self, stream: str, chunk: bytes) -> None:
        buf = self.partial[stream]
        buf.extend(chunk)
        while (end := buf.find(b"\n")) >= 0:
            self._line(stream, bytes(buf[:end]))
            del buf[: end + 1]
        if stream == "stderr":
            del buf[:-STDERR_TAIL]

    def _line(self, stream: str, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if stream == "stdout" and self.first_stdout is None:
            self.first_stdout = line
            self.first_line.set()
        if self.sink is not None:
            self.sink(stream, line)

    def close(self) -> None:
        for stream, buf in self.partial.items():
            if buf:
                self._line(stream, bytes(buf))
                buf.clear()
        self.first_line.set()


def _async_marker(line: str | None) -> AsyncOutput | None:
    """The first stdout line, if it is ``{"async": true, ...}``."""
    if not line or not line.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("async") is not True:
        return None
    try:
        output, _ = output_from_wire(HookEvent.STOP, data)
    except HookDataError:
        return None
    return output if isinstance(output, AsyncOutput) else None


@attrs.frozen
class CommandHook:
    """A shell command hook. ``timeout`` (seconds) overrides its matcher's;
    ``on_failure`` is Claude Code's ``onFailure`` (``"block"`` or ``"continue"``)."""

    command: str
    timeout: float | None = None
    async_: bool = False
    plugin_root: str | None = None
    name: str | None = None
    on_failure: str | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.command, str) or not self.command.strip():
            raise ValueError("a command hook needs a non-empty command string")
        if self.timeout is not None:
            check_timeout(self.timeout, "command hook timeout")
        if self.on_failure is not None and self.on_failure not in ON_FAILURE:
            raise ValueError(f'onFailure must be "block" or "continue", not {self.on_failure!r}')

    @property
    def label(self) -> str:
        return self.name or self.command

    def environment(self, project_dir: str, env_file: str | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("CLAUDE_ENV_FILE", None)
        env["CLAUDE_PROJECT_DIR"] = project_dir
        if self.plugin_root is not None:
            env["CLAUDE_PLUGIN_ROOT"] = self.plugin_root
        if env_file is not None:
            env["CLAUDE_ENV_FILE"] = env_file
        return env

    def blocks_on_failure(self, event: HookEvent) -> bool:
        return self.on_failure == "block" and not self.async_ and event not in KEEPS_GOING

    def failed(
        self,
        event: HookEvent,
        error: str,
        *,
        duration: float,
        outcome: Outcome = Outcome.ERROR,
        exit_code: int | None = None,
        stderr: str = "",
        late: bool = False,
    ) -> HookResult:
        """A failed run: recorded and let through, or, for an ``onFailure: "block"``
        hook, a block with Claude Code's reason."""
        common: dict[str, Any] = {
            "hook": self.label,
            "kind": "command",
            "duration": duration,
            "late": late,
        }
        if self.blocks_on_failure(event) and not late:
            what = "timed out" if outcome == Outcome.TIMEOUT else "failed"
            reason = f'[{self.command}]: {what}; blocking because onFailure is "block"'
            detail = stderr or error
            reason = f"{reason}\n{detail}" if detail else reason
            return blocking_result(event, reason, exit_code=exit_code, **common)
        return failed_result(event, error, outcome=outcome, exit_code=exit_code, **common)

    def interpret(
        self, event: HookEvent, proc: ProcessResult, *, skip_first_line: bool = False
    ) -> HookResult:
        """What the finished process means, by Claude Code's exit code rules."""
        late = skip_first_line or self.async_
        common: dict[str, Any] = {
            "hook": self.label,
            "kind": "command",
            "duration": proc.duration,
            "late": late,
        }
        stderr = proc.stderr.decode("utf-8", "replace").strip()

        def failed(why: str) -> HookResult:
            return self.failed(
                event,
                why,
                duration=proc.duration,
                exit_code=proc.returncode,
                stderr=stderr,
                late=late,
            )

        if proc.overflow and event in GATES and not late:
            why = (
                f"answer over {proc.stdout_cap} bytes: kodelet reads no further, "
                "so it counts as a block"
            )
            return blocking_result(event, why, exit_code=proc.returncode, **common)
        if proc.overflow or (proc.returncode is not None and proc.returncode < 0):
            return failed(proc.failure(0) or "failed")
        if proc.returncode == 2:
            return blocking_result(event, stderr, exit_code=2, **common)
        if proc.returncode != 0:
            return failed(proc.failure(0) or f"exited with status {proc.returncode}")
        text = proc.stdout.decode("utf-8", "replace")
        if skip_first_line:
            text = text.partition("\n")[2]
        stripped = text.strip()
        if stripped.startswith("{"):
            try:
                data = json.loads(stripped)
            except ValueError:
                data = None
            if isinstance(data, dict):
                try:
                    output, ignored = output_from_wire(event, data)
                except HookDataError as exc:
                    return failed(str(exc))
                return result_from_output(
                    event, output, exit_code=0, ignored=tuple(ignored), **common
                )
        return result_from_output(event, None, exit_code=0, message=stripped or None, **common)

    async def start(
        self,
        event: HookEvent,
        hook_input: Mapping[str, Any],
        *,
        timeout: float,
        project_dir: str,
        on_line: LineSink | None = None,
        env_file: str | None = None,
    ) -> tuple[HookResult, asyncio.Task[HookResult] | None]:
        """Run the command: its result, and the task that yields its late result if it
        went async (that task kills the process group when it is cancelled).
        ``env_file`` is the ``CLAUDE_ENV_FILE`` a SessionStart or Setup hook gets."""
        timeout = self.timeout or timeout
        cwd = str(hook_input.get("cwd") or project_dir) or None
        lines = _Lines(on_line)
        started = time.monotonic()
        data = json.dumps(hook_input, ensure_ascii=False).encode()
        run = asyncio.ensure_future(
            arun_process(
                (*SHELL, self.command),
                data,
                cwd=cwd,
                env=self.environment(project_dir, env_file if event in ENV_FILE_EVENTS else None),
                timeout=_CEILING,
                stdout_cap=STDOUT_CAP,
                on_output=lines.feed,
            )
        )

        async def finish(
            limit: float, skip_first_line: bool, allowed: float | None = None
        ) -> HookResult:
            late = skip_first_line or self.async_

            def failed(error: str, outcome: Outcome = Outcome.ERROR) -> HookResult:
                duration = time.monotonic() - started
                return self.failed(event, error, duration=duration, outcome=outcome, late=late)

            try:
                proc = await asyncio.wait_for(run, limit)
            except TimeoutError:
                return failed(f"timed out after {allowed or limit:g}s", Outcome.TIMEOUT)
            except asyncio.CancelledError:
                run.cancel()
                with contextlib.suppress(BaseException):
                    await run
                raise
            except SpawnError as exc:
                return failed(str(exc))
            finally:
                lines.close()
            return self.interpret(event, proc, skip_first_line=skip_first_line)

        if self.async_:
            marker = result_from_output(
                event, AsyncOutput(), hook=self.label, kind="command", duration=0.0
            )
            return marker, asyncio.ensure_future(finish(timeout, False))

        first = asyncio.ensure_future(lines.first_line.wait())
        try:
            await asyncio.wait({run, first}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            went_async = _async_marker(lines.first_stdout)
        except BaseException:
            run.cancel()
            raise
        finally:
            first.cancel()
        if went_async is not None:
            marker = result_from_output(
                event,
                went_async,
                hook=self.label,
                kind="command",
                duration=time.monotonic() - started,
            )
            limit = went_async.async_timeout / 1000 if went_async.async_timeout else timeout
            return marker, asyncio.ensure_future(finish(limit, True))
        remaining = max(0.0, started + timeout - time.monotonic())
        return await finish(remaining, False, timeout), None

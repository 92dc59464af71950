"""One executable hook file: the seeds' ``hook``/``run`` protocol, per call.

:class:`~kodelet.adapters.executables.ExecutableAdapter` wraps all of them in one
plugin; this class only knows how to run one file and read its answer.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import jsonio
from ..errors import HookFailure
from ..events import Event
from ..process import ProcessGroups, ProcessResult, SpawnError, arun_process, run_process
from .discovery import DiscoveredHook, UserDatabase, stat_problem
from .interpreter import Launcher, explain

__all__ = ["ExecutableHook", "HookFailure", "parse_answer"]

log = logging.getLogger("kodelet.executable")


def parse_answer(data: bytes, *, note: str = "", empty: str | None = None) -> Any:
    """A hook's answer as JSON; blank means no action unless ``empty`` says why it may not be.

    Parsed strictly (:func:`kodelet.jsonio.loads`): a duplicate key, NaN, a lone
    surrogate or nesting past the payload bounds is this hook's failure."""
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise HookFailure("output is not UTF-8" + note) from None
    if not text:
        if empty is not None:
            raise HookFailure(empty)
        return None
    try:
        return jsonio.loads(text, "output")
    except jsonio.JSONError as exc:
        if exc.syntax:
            snippet = text[:80].replace("\n", " ")
            raise HookFailure(f"{exc}: {snippet!r}") from None
        raise HookFailure(str(exc)) from None


class ExecutableHook:
    """One executable file handling one event."""

    def __init__(
        self,
        name: str,
        path: str | Path,
        event: Event,
        *,
        plugin_root: Path | None = None,
        default_cwd: str = "",
        env: Mapping[str, str] | None = None,
        groups: ProcessGroups | None = None,
        users: UserDatabase | None = None,
    ) -> None:
        self.name = name
        self.groups = groups
        self.users = users or UserDatabase()
        self.file = os.fspath(path)
        self.event = event
        self.plugin_root = plugin_root
        self.default_cwd = default_cwd
        self._given_env = env
        self._built_env: dict[str, str] | None = None
        self._launcher = Launcher(self.file)

    @functools.cached_property
    def path(self) -> Path:
        """Made on first use; the process is started from ``file``, the text discovery listed."""
        return Path(self.file)

    @property
    def _env(self) -> dict[str, str]:
        """The hook's environment, built on first run: a runtime with many hooks that
        never fire does not copy the environment once per hook at start-up."""
        if self._built_env is None:
            base = dict(os.environ if self._given_env is None else self._given_env)
            base["KODELET_HOOK_EVENT"] = self.event.value
            if self.plugin_root is not None:
                base["KODELET_PLUGIN_ROOT"] = str(self.plugin_root)
            self._built_env = base
        return self._built_env

    @classmethod
    def from_discovered(cls, hook: DiscoveredHook, **kw: Any) -> ExecutableHook:
        assert hook.event is not None
        cand = hook.candidate
        return cls(hook.name, cand.file, hook.event, plugin_root=cand.plugin_root, **kw)

    def check_trust(self) -> None:
        """Fail if the file or its directory could now be written by someone else.

        Discovery judged the whole chain; this re-check (two ``stat`` calls) catches
        a file or directory made group/world-writable, or handed to another user,
        since then, before anything is run or started from it. A symlink is judged by
        what it leads to."""
        me = os.geteuid()
        for where in (self.file, os.path.dirname(self.file) or "."):  # no Path per call
            try:
                st = os.stat(where)
            except OSError:
                return  # gone: running it reports that in its own words
            problem = stat_problem(where, st, me, users=self.users)
            if problem:
                raise HookFailure(f"untrusted: {problem}")

    def _cwd(self, payload: Mapping[str, Any]) -> str | None:
        cwd = payload.get("cwd") or self.default_cwd
        return str(cwd) if cwd else None

    def _process(self, payload: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """``<exe> run`` with the payload on stdin: the same call, sync or asyncio."""
        return {
            "argv": self._launcher.argv("run"),
            "data": self._encode(payload),
            "cwd": self._cwd(payload),
            "env": self._env,
            "timeout": timeout,
            "groups": self.groups,
        }

    def _interpret(self, res: ProcessResult, timeout: float) -> Any:
        problem = res.failure(timeout)
        if problem:
            raise HookFailure(explain(problem, self.file))
        if res.stderr and log.isEnabledFor(logging.DEBUG):
            log.debug(
                "hook %s stderr: %s", self.name, res.stderr.decode("utf-8", "replace").strip()
            )
        return parse_answer(res.stdout, note=res.stderr_note())

    def _encode(self, payload: Mapping[str, Any]) -> bytes:
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")

    def run(self, payload: Mapping[str, Any], *, timeout: float) -> Any:
        """Run ``<exe> run`` with the payload; the parsed JSON answer, or None."""
        try:
            res = run_process(**self._process(payload, timeout))
        except SpawnError as exc:
            raise HookFailure(str(exc.strerror)) from None
        return self._interpret(res, timeout)

    async def arun(self, payload: Mapping[str, Any], *, timeout: float) -> Any:
        try:
            res = await arun_process(**self._process(payload, timeout))
        except SpawnError as exc:
            raise HookFailure(str(exc.strerror)) from None
        return self._interpret(res, timeout)

    def close(self) -> None:
        """Per-call hooks hold nothing; persistent ones override this."""

    def __repr__(self) -> str:
        return f"<ExecutableHook {self.name} ({self.event.value}) {self.path}>"

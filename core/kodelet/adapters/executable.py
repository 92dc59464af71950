"""An executable hook as a kodelet plugin: the seeds' ``hook``/``run`` protocol.

Each discovered executable is registered with the plugin manager like any
native plugin, so ordering, merging and tracing treat both kinds the same.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import jsonio
from ..config import DEFAULT_TIMEOUT
from ..events import Event
from ..markers import hookimpl
from ..payloads import PAYLOAD_TYPES, field_names
from ..wire import payload_to_wire
from .discovery import DiscoveredHook
from .process import ProcessResult, SpawnError, arun_process, run_process

log = logging.getLogger("kodelet.executable")


class HookFailure(Exception):
    """The hook ran but its answer cannot be used (exit status, timeout, bad output)."""


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
        path: Path,
        event: Event,
        *,
        plugin_root: Path | None = None,
        default_cwd: str = "",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.path = Path(path)
        self.event = event
        self.plugin_root = plugin_root
        self.default_cwd = default_cwd
        base = dict(os.environ if env is None else env)
        base["KODELET_HOOK_EVENT"] = event.value
        if plugin_root is not None:
            base["KODELET_PLUGIN_ROOT"] = str(plugin_root)
        self._env = base
        setattr(self, event.value, self._make_impl())

    @classmethod
    def from_discovered(cls, hook: DiscoveredHook, **kw: Any) -> ExecutableHook:
        assert hook.event is not None
        return cls(hook.name, hook.path, hook.event, plugin_root=hook.candidate.plugin_root, **kw)

    def _make_impl(self) -> Callable[..., Any]:
        """A hookimpl taking the whole payload, so a raw ``pm.hook`` call runs it too.

        pluggy reads argument names from the function's code object, so the
        function is compiled with the event's field names as real parameters."""
        names = field_names(self.event)
        fields = ", ".join(f"{n!r}: {n}" for n in names if n != "event")
        source = f"def {self.event.value}({', '.join(names)}):\n    return call({{{fields}}})\n"

        def call(fields: dict[str, Any]) -> Any:
            payload = PAYLOAD_TYPES[self.event](**fields)
            return self.run(payload_to_wire(payload), timeout=DEFAULT_TIMEOUT)

        namespace: dict[str, Any] = {"call": call}
        exec(source, namespace)  # names come from our own payload models
        impl: Callable[..., Any] = namespace[self.event.value]
        return hookimpl(impl)

    def _cwd(self, payload: Mapping[str, Any]) -> str | None:
        cwd = payload.get("cwd") or self.default_cwd
        return str(cwd) if cwd else None

    def _interpret(self, res: ProcessResult, timeout: float) -> Any:
        problem = res.failure(timeout)
        if problem:
            raise HookFailure(problem)
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
            res = run_process(
                [str(self.path), "run"],
                self._encode(payload),
                cwd=self._cwd(payload),
                env=self._env,
                timeout=timeout,
            )
        except SpawnError as exc:
            raise HookFailure(str(exc.strerror)) from None
        return self._interpret(res, timeout)

    async def arun(self, payload: Mapping[str, Any], *, timeout: float) -> Any:
        try:
            res = await arun_process(
                [str(self.path), "run"],
                self._encode(payload),
                cwd=self._cwd(payload),
                env=self._env,
                timeout=timeout,
            )
        except SpawnError as exc:
            raise HookFailure(str(exc.strerror)) from None
        return self._interpret(res, timeout)

    def close(self) -> None:
        """Per-call hooks hold nothing; persistent ones override this."""

    def __repr__(self) -> str:
        return f"<ExecutableHook {self.name} ({self.event.value}) {self.path}>"

"""Configuration: global config.toml, then repo-local, then environment, then CLI flags.

Core keys are validated strictly so a typo in a security setting is an error,
not a silently ignored guardrail. ``[plugin.<name>]`` tables are opaque to the
core and handed to the plugin of that entry-point name via ``configure``.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from . import jsonio
from .bounds import MAX_DEPTH, BoundsError, check_bounds
from .errors import KodeletError
from .places import Places, config_file

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 1_000_000.0
"""About 11.5 days: any longer and timers overflow (selectors and asyncio stop near
2,147,483 s), so every call would fail, which for a guardrail means fail open."""
CONFIG_CAP = 1024 * 1024


class ConfigError(KodeletError, ValueError):
    """An invalid configuration file or value; the message names file and key."""


@attrs.frozen(kw_only=True)
class HookSettings:
    timeout: float | None = None
    fail_closed: bool | None = None
    """This hook's own ``fail_closed``; None leaves it to ``[hooks] fail_closed``."""
    enabled: bool = True


_DEFAULT_HOOK = HookSettings()  # frozen: one for every hook without a table

AUDIT_MAX_BYTES = 10 * 1024 * 1024
AUDIT_KEEP = 5
AUDIT_KEYS = ("enabled", "max_bytes", "keep", "otlp_endpoint", "otel")


@attrs.frozen(kw_only=True)
class AuditSettings:
    """``[audit]`` of the global config.toml only: the decision log (docs/RULES.md, Audit).

    A project's own config.toml may not set it: a cloned repository must neither switch
    off the record of what its calls were refused nor send that record elsewhere."""

    enabled: bool = True
    max_bytes: int = AUDIT_MAX_BYTES
    """The log is rotated once it reaches this size."""
    keep: int = AUDIT_KEEP
    """Rotated files kept (``decisions.jsonl.1`` ... ``.N``)."""
    otlp_endpoint: str = ""
    """Where OpenTelemetry spans of the same records go (OTLP/HTTP), or "" for nowhere."""
    otel: bool = False
    """Export to ``OTEL_EXPORTER_OTLP_ENDPOINT`` when ``otlp_endpoint`` is not set."""


_DEFAULT_AUDIT = AuditSettings()


@attrs.frozen(kw_only=True)
class Config:
    timeout: float = DEFAULT_TIMEOUT
    fail_closed: bool = True
    """``[hooks] fail_closed``: whether a hook that fails on a blocking event blocks
    it, for every hook without its own ``fail_closed``. A guard that cannot decide
    says no; an audit logger that must never stop the agent opts out."""
    disabled_hooks: tuple[str, ...] = ()
    hooks: Mapping[str, HookSettings] = attrs.field(factory=dict)
    disabled_plugins: tuple[str, ...] = ()
    plugin_tables: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    no_hooks: bool = False
    claude_hooks: bool = True
    """``[claude] hooks``: run Claude Code's hooks from its settings files and plugins."""
    claude_on_failure: str = "block"
    """``[claude] on_failure``: what a bridge answers when kodelet itself cannot
    ("block", the default, or "allow")."""
    codex_interactive_shells: str = "refuse"
    """``[codex] interactive_shells``: whether kodelet refuses a Codex ``exec_command``
    that opens an interactive shell or REPL ("refuse", the default, or "allow"): what is
    typed into one reaches no hook (:mod:`kodelet.agents.interactive`)."""
    audit: AuditSettings = _DEFAULT_AUDIT
    sources: Mapping[str, str] = attrs.field(factory=dict)

    def claude_off(self) -> str | None:
        """Why no Claude Code hook may run (``--no-hooks``, ``KODELET_NO_HOOKS=1``,
        ``[claude] hooks = false``), or None: the one rule for every place that runs them."""
        if self.no_hooks:
            return self.sources.get("no_hooks", "--no-hooks")
        if not self.claude_hooks:
            return f"[claude] hooks = false ({self.sources.get('claude.hooks', 'config.toml')})"
        return None

    def hook(self, name: str) -> HookSettings:
        return self.hooks.get(name) or _DEFAULT_HOOK

    def fails_closed(self, name: str, *, by_default: bool = True) -> bool:
        """Whether hook ``name`` failing on a blocking event blocks it: its own
        ``fail_closed``, else ``[hooks] fail_closed`` (true unless set). The one rule
        for every kind of hook and every place that asks (the runtime's entries, the
        stand-ins, the discovery cache). ``by_default=False`` for what blocks only
        when its own table says so: a Claude Code settings hook, which keeps Claude
        Code's ``onFailure``, and what is no hook (a file without ``x``, a table naming
        nothing), which claims a guard only by ``fail_closed = true``."""
        own = self.hook(name).fail_closed
        if own is not None:
            return own
        return self.fail_closed and by_default

    def timeout_for(self, name: str) -> float:
        """A hook's own timeout from a file, unless the environment or a flag set one:
        those override files, per-hook tables included."""
        own = self.hook(name).timeout
        overridden = self.sources.get("hooks.timeout", "").startswith(("--", "env "))
        if own is not None and not overridden:
            return own
        return self.timeout

    def named_hooks(self) -> list[str]:
        """Every hook name config.toml gives: ``[hooks."<name>"]`` tables and ``[hooks]
        disabled`` entries."""
        return [*self.hooks, *self.disabled_hooks]

    def hook_enabled(self, name: str) -> bool:
        return name not in self.disabled_hooks and self.hook(name).enabled

    def plugin_config(self, name: str) -> dict[str, Any]:
        return dict(self.plugin_tables.get(name, {}))

    def to_json(self) -> dict[str, Any]:
        """The effective configuration with where each value came from."""
        values: dict[str, Any] = {
            "hooks.timeout": self.timeout,
            "hooks.fail_closed": self.fail_closed,
            "hooks.disabled": list(self.disabled_hooks),
            "plugins.disabled": list(self.disabled_plugins),
            "no_hooks": self.no_hooks,
            "claude.hooks": self.claude_hooks,
            "claude.on_failure": self.claude_on_failure,
            "codex.interactive_shells": self.codex_interactive_shells,
        }
        for key in AUDIT_KEYS:
            values[f"audit.{key}"] = getattr(self.audit, key)
        for name, hs in self.hooks.items():
            for key in ("timeout", "fail_closed", "enabled"):
                values[_spell(("hook", name, key))] = getattr(hs, key)
        for name, table in self.plugin_tables.items():
            for key, value in table.items():
                values[_spell(("plugin", name, key))] = value
        return {
            k: {"value": v, "source": self.sources.get(k, "default")} for k, v in values.items()
        }


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _bare(name: str) -> str:
    """A key as TOML spells it, so ``plugin."a.b".key`` stays unambiguous."""
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name, ensure_ascii=False)


# Values are kept under tuple keys (("hook", name, field), ("plugin", name, field)...),
# so a name holding dots or quotes never has to be parsed back out of a string;
# the dotted spelling is only for showing where a value came from.
_Key = tuple[str, ...]


def _spell(key: _Key) -> str:
    if key[0] == "hook":
        return f"hooks.{json.dumps(key[1], ensure_ascii=False)}.{key[2]}"
    if key[0] == "plugin":
        return f"plugin.{_bare(key[1])}.{_bare(key[2])}"
    return ".".join(key)


def _toml(value: Any) -> str:
    """A value as the user wrote it in TOML, not as Python prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)[:80]


def _number(value: Any, where: str) -> float:
    """A timeout: positive, finite, and short enough for every timer that must honour it
    (the selectors' and asyncio's limits are near 2,147,483 s; past them a call fails)."""
    bad = isinstance(value, bool) or not isinstance(value, int | float)
    if bad or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{where}: expected a positive number of seconds, got {_toml(value)}")
    if value > MAX_TIMEOUT:
        raise ConfigError(f"{where}: at most {MAX_TIMEOUT:g} seconds, got {_toml(value)}")
    return float(value)


def check_timeout(value: Any, where: str = "timeout") -> float:
    """A timeout given in code, on the command line or in a Claude Code settings file,
    checked as one from config.toml."""
    return _number(value, where)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {_toml(value)}")
    return value


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of names, got {_toml(value)}")
    return tuple(value)


def _read(path: Path) -> dict[str, Any]:
    """One config file: a regular file of at most CONFIG_CAP bytes, nested within bounds.

    A repository writes its own ``.kodelet/config.toml``: a FIFO there must not hang
    even ``--no-hooks`` commands, nor a link to ``/dev/zero`` exhaust memory."""
    try:
        raw = jsonio.read_file(path, "a config file", cap=CONFIG_CAP)
    except FileNotFoundError:
        return {}
    except jsonio.FileError as exc:
        raise ConfigError(str(exc)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 at byte {exc.start}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
    try:
        check_bounds(data, str(path), json_only=False)
    except BoundsError as exc:
        raise ConfigError(str(exc)) from None
    return data


ON_FAILURE = ("block", "allow")
INTERACTIVE_SHELLS = ("refuse", "allow")


def on_failure_value(value: Any, where: str) -> str:
    if value not in ON_FAILURE:
        raise ConfigError(f'{where}: expected "block" or "allow", got {value!r}')
    return str(value)


def on_failure(places: Places) -> str:
    """``[claude] on_failure`` read on its own, for when the whole configuration cannot
    be (a typo elsewhere): "allow" only where a file that parses says so plainly;
    a file that cannot be read keeps the fail-closed default."""
    answer = "block"
    for _, path in places.config_files():
        try:
            data = tomllib.loads(jsonio.read_file(path, "config").decode("utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError, jsonio.FileError):
            return "block"
        table = data.get("claude")
        value = table.get("on_failure") if isinstance(table, dict) else None
        if value in ON_FAILURE:
            answer = str(value)
    return answer


def _count(value: Any, where: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(
            f"{where}: expected a whole number of at least {least}, got {_toml(value)}"
        )
    return value


def _endpoint(value: Any, where: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"https?://[^\s/]+(/\S*)?", value):
        raise ConfigError(f"{where}: expected an http:// or https:// URL, got {_toml(value)}")
    return value


def _audit(path: Path, table: dict[str, Any], flat: dict[_Key, Any]) -> None:
    for key, value in table.items():
        where = f"{path}: audit.{key}"
        if key in ("enabled", "otel"):
            flat[("audit", key)] = _bool(value, where)
        elif key == "max_bytes":
            flat[("audit", key)] = _count(value, where, 4096)
        elif key == "keep":
            flat[("audit", key)] = _count(value, where, 0)
        elif key == "otlp_endpoint":
            flat[("audit", key)] = _endpoint(value, where)
        else:
            raise ConfigError(f"{path}: unknown key 'audit.{key}' (known: {', '.join(AUDIT_KEYS)})")


def _flatten(path: Path, data: dict[str, Any], *, own: bool = True) -> dict[_Key, Any]:
    """Validate one file and flatten it to keys so files merge key by key. ``own``: the
    user's global file, the only one that may set ``[audit]``."""
    flat: dict[_Key, Any] = {}
    for top, table in data.items():
        where = f"{path}: [{top}]"
        if top not in ("hooks", "plugins", "plugin", "claude", "codex", "audit"):
            raise ConfigError(
                f"{path}: unknown key {top!r} (known: hooks, plugins, plugin, claude, codex, audit)"
            )
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: expected a table")
        if top == "audit":
            if not own:
                raise ConfigError(
                    f"{path}: [audit] is read from the global config.toml only (a project may"
                    " not switch off or redirect the decision log); move it there"
                )
            _audit(path, table, flat)
        elif top == "codex":
            for key, value in table.items():
                if key != "interactive_shells":
                    raise ConfigError(
                        f"{path}: unknown key 'codex.{key}' (known: interactive_shells)"
                    )
                if value not in INTERACTIVE_SHELLS:
                    raise ConfigError(
                        f'{path}: codex.interactive_shells: expected "refuse" or "allow",'
                        f" got {value!r}"
                    )
                flat[("codex", key)] = value
        elif top == "claude":
            for key, value in table.items():
                if key == "on_failure":
                    flat[("claude", key)] = on_failure_value(value, f"{path}: claude.on_failure")
                    continue
                if key != "hooks":
                    raise ConfigError(
                        f"{path}: unknown key 'claude.{key}' (known: hooks, on_failure)"
                    )
                flat[("claude", "hooks")] = _bool(value, f"{path}: claude.hooks")
        elif top == "plugins":
            for key, value in table.items():
                if key != "disabled":
                    raise ConfigError(f"{path}: unknown key {_spell(('plugins', key))!r}")
                flat[("plugins", "disabled")] = _names(value, f"{path}: plugins.disabled")
        elif top == "plugin":
            for name, own in table.items():
                if not isinstance(own, dict):
                    raise ConfigError(f"{path}: plugin.{_bare(name)}: expected a table")
                for key, value in own.items():
                    flat[("plugin", name, key)] = value
        else:
            for key, value in table.items():
                # A table is a hook's own, whatever its name: a hook may be called "timeout".
                if isinstance(value, dict):
                    for hk, hv in value.items():
                        w = f"{path}: {_spell(('hook', key, hk))}"
                        if hk == "timeout":
                            flat[("hook", key, "timeout")] = _number(hv, w)
                        elif hk in ("fail_closed", "enabled"):
                            flat[("hook", key, hk)] = _bool(hv, w)
                        else:
                            raise ConfigError(
                                f"{w}: unknown key (known: timeout, fail_closed, enabled)"
                            )
                elif key == "timeout":
                    flat[("hooks", "timeout")] = _number(value, f"{path}: hooks.timeout")
                elif key == "fail_closed":
                    flat[("hooks", "fail_closed")] = _bool(value, f"{path}: hooks.fail_closed")
                elif key == "disabled":
                    flat[("hooks", "disabled")] = _names(value, f"{path}: hooks.disabled")
                else:
                    raise ConfigError(
                        f"{path}: unknown key {_spell(('hooks', key))!r} (known: timeout, "
                        f'fail_closed, disabled, or a [hooks."<hook name>"] table)'
                    )
    return flat


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


def load_config(
    places: Places,
    env: Mapping[str, str] | None = None,
    *,
    timeout: float | None = None,
    no_hooks: bool | None = None,
    extra: Sequence[Path] = (),
) -> Config:
    """Read both files, then ``extra`` files (a replay's baseline config), then environment,
    then explicit arguments (the CLI flags)."""
    env = os.environ if env is None else env
    values: dict[_Key, Any] = {}
    sources: dict[str, str] = {}
    mine = config_file(places.global_root)  # also a project's when the project is $HOME
    files = [(p == mine, p) for _, p in places.config_files()]
    for own, path in (*files, *((False, p) for p in extra)):
        for key, value in _flatten(path, _read(path), own=own).items():
            values[key] = value
            sources[_spell(key)] = str(path)
    raw_timeout = env.get("KODELET_HOOK_TIMEOUT")
    if raw_timeout:
        try:
            seconds = float(raw_timeout)
        except ValueError:
            raise ConfigError(
                f"KODELET_HOOK_TIMEOUT: expected seconds, got {raw_timeout[:40]!r}"
            ) from None
        values[("hooks", "timeout")] = _number(seconds, "KODELET_HOOK_TIMEOUT")
        sources["hooks.timeout"] = "env KODELET_HOOK_TIMEOUT"
    if timeout is not None:
        values[("hooks", "timeout")] = _number(timeout, "--timeout")
        sources["hooks.timeout"] = "--timeout"
    if _truthy(env.get("KODELET_NO_HOOKS")):
        values[("no_hooks",)], sources["no_hooks"] = True, "env KODELET_NO_HOOKS"
    if no_hooks:
        values[("no_hooks",)], sources["no_hooks"] = True, "--no-hooks"

    hooks: dict[str, dict[str, Any]] = {}
    tables: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        if key[0] == "hook":
            hooks.setdefault(key[1], {})[key[2]] = value
        elif key[0] == "plugin":
            tables.setdefault(key[1], {})[key[2]] = value
    return Config(
        timeout=values.get(("hooks", "timeout"), DEFAULT_TIMEOUT),
        fail_closed=values.get(("hooks", "fail_closed"), True),
        disabled_hooks=values.get(("hooks", "disabled"), ()),
        hooks={name: HookSettings(**kw) for name, kw in hooks.items()},
        disabled_plugins=values.get(("plugins", "disabled"), ()),
        plugin_tables=tables,
        no_hooks=values.get(("no_hooks",), False),
        claude_hooks=values.get(("claude", "hooks"), True),
        claude_on_failure=values.get(("claude", "on_failure"), "block"),
        codex_interactive_shells=values.get(("codex", "interactive_shells"), "refuse"),
        audit=AuditSettings(
            **{k: values[("audit", k)] for k in AUDIT_KEYS if ("audit", k) in values}
        ),
        sources=sources,
    )

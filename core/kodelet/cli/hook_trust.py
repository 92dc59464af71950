"""The trust records an agent keeps for its hooks, for kodelet's own entries only.

Codex runs no hook of a ``hooks.json`` the user has not reviewed: the review is a
``[hooks.state."<key>"] trusted_hash`` in the user's ``config.toml`` (``/hooks`` in
Codex writes it; ``codex exec`` cannot ask). Running ``kodelet codex install`` is the
user asking for exactly these entries, so install records their trust beside them and
uninstall takes back exactly what install recorded: a record is removed only while it
still holds kodelet's hash, and every other line of the file stays as it was (tomlkit).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from .. import jsonio
from ..agents import Dialect
from ..agents.codex import recorded as codex_records
from .hook_files import SettingsError, check_writable, diff, read_text


def trust_file(dialect: Dialect) -> Path | None:
    """The agent's file of trust records, or None when it keeps none."""
    if not dialect.trust_config:
        return None
    return dialect.user_path(dialect.trust_config, os.environ)


def _read(path: Path) -> str:
    return read_text(path, "trust records") or ""


def recorded(text: str, path: Path) -> dict[str, str]:
    """key -> trusted_hash of every trust record in ``text`` (the file ``path``)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} is not valid TOML: {exc}") from None
    return {
        k: v["trusted_hash"]
        for k, v in codex_records(data).items()
        if isinstance(v.get("trusted_hash"), str)
    }


def change(
    dialect: Dialect,
    hooks_path: Path,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    dry_run: bool,
) -> str | None:
    """Swap the trust records of kodelet's entries in ``before`` for those in ``after``;
    a message (the diff with ``dry_run``), None when the agent keeps no trust."""
    path = trust_file(dialect)
    if path is None:
        return None
    old_keys = dialect.trust(hooks_path, before)
    new_keys = dialect.trust(hooks_path, after)
    check_writable(path)
    text = _read(path)
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise SettingsError(f"{path} is not valid TOML: {exc}") from None
    hooks = doc.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    for key, digest in old_keys.items():
        record = state.get(key) if isinstance(state, dict) else None
        if (
            isinstance(record, dict)
            and record.get("trusted_hash") == digest
            and key not in new_keys
        ):
            del record["trusted_hash"]
            if not record:
                del state[key]  # type: ignore[union-attr]
    if new_keys:
        if hooks is None:
            doc["hooks"] = hooks = tomlkit.table(is_super_table=True)
        if state is None:
            hooks["state"] = state = tomlkit.table(is_super_table=True)
        for key, digest in new_keys.items():
            record = state.get(key)
            if not isinstance(record, dict):
                state[key] = record = tomlkit.table()
            record["trusted_hash"] = digest
    if isinstance(state, dict) and not state and isinstance(hooks, dict):
        del hooks["state"]
        if not hooks:
            del doc["hooks"]
    new = tomlkit.dumps(doc)
    if not new_keys and new != text:  # tomlkit keeps the blank line install put before
        new = new.rstrip("\n") + "\n" if new.strip() else ""
    if new == text:
        return None
    kept = {k: v for k, v in recorded(text, path).items() if old_keys.get(k) != v}
    if recorded(new, path) != {**kept, **new_keys}:
        raise SettingsError(f"{path}: cannot update its [hooks.state] safely; left unchanged")
    if dry_run:
        return diff(path, text or None, new)
    jsonio.write_atomically(path, new)
    what = "recorded" if new_keys else "removed"
    return f"{what} {dialect.title}'s trust in kodelet's entries: {path}"

"""Changing config.toml from the CLI without losing what the user wrote.

tomlkit keeps comments, order and layout, so ``kodelet hooks disable`` rewrites
one key and nothing else. The result is parsed again before it replaces the file:
if it does not mean exactly what was intended, the file is left alone.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from .config import ConfigError
from .jsonio import write_atomically


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None


def set_key(path: Path, table: str, key: str, value: Any) -> None:
    """Set ``[table] key = value`` in ``path`` (created if absent), atomically."""
    text = _read(path)
    try:
        before = tomllib.loads(text)
        doc = tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.ParseError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    shown = tomlkit.item(value).as_string()
    try:
        section = doc.get(table)
        if section is None:
            doc[table] = tomlkit.table()
            section = doc[table]
        section[key] = value
        new = tomlkit.dumps(doc)
        ok = tomllib.loads(new) == {**before, table: {**before.get(table, {}), key: value}}
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError, TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(
            f"{path}: cannot update [{table}] {key} safely; set it by hand to {shown}"
        )
    write_atomically(path, new)

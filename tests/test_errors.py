"""Every error kodelet raises on purpose shares one base, so a host catches kodelet's
own errors in one ``except KodeletError`` without swallowing its own bugs; each keeps
the builtin base its callers already catch (``ValueError``, ``OSError``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import kodelet
import pytest
from kodelet.adapters.discovery import NotStarted
from kodelet.bounds import BoundsError
from kodelet.claude.matchers import MatcherError
from kodelet.claude.types import HookDataError
from kodelet.cli.hook_files import SettingsError
from kodelet.errors import KodeletError
from kodelet.jsonio import ChangedError, FileError, JSONError
from kodelet.process import SpawnError


def modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(kodelet.__path__, "kodelet."):
        # The warm kodelet's protocol is standard library only: its lean client never
        # imports kodelet, so its errors cannot share kodelet's base.
        if info.name.startswith("kodelet.warm") or info.name == "kodelet.__main__":
            continue
        yield importlib.import_module(info.name)


def test_every_public_error_class_is_a_kodelet_error() -> None:
    outside = [
        f"{cls.__module__}.{name}"
        for module in modules()
        for name, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__
        and issubclass(cls, BaseException)
        and not name.startswith("_")
        and not issubclass(cls, KodeletError)
    ]
    assert outside == []


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (BoundsError, ValueError),
        (MatcherError, ValueError),
        (HookDataError, ValueError),
        (JSONError, ValueError),
        (FileError, ValueError),
        (NotStarted, ValueError),
        (ChangedError, OSError),
        (SpawnError, OSError),
        (SettingsError, Exception),
    ],
)
def test_each_keeps_the_builtin_base_its_callers_catch(
    error: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(error, KodeletError) and issubclass(error, builtin)

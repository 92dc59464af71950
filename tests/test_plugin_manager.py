"""kodelet's plugin manager turns away module attributes that cannot be hooks before
pluggy looks at them; it must still find exactly the hooks plain pluggy finds."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pluggy
import pytest
from kodelet import hookspecs
from kodelet.markers import PROJECT, PluginManager

PLUGIN = '''
    import functools
    from kodelet import hookimpl

    SEEN = []

    class Tripwire:
        """A module attribute whose attribute lookups must never run."""
        def __getattr__(self, name):
            SEEN.append(name)
            raise AttributeError(name)

    tripwire = Tripwire()

    @hookimpl
    def before_tool_call(tool_name):
        return None

    class _Holder:
        @hookimpl
        def after_turn(self):
            return None

    after_turn = _Holder().after_turn   # a bound method at module level

    agent_stop = hookimpl(specname="agent_stop")(lambda: None)

    @functools.wraps(before_tool_call)
    def wrapped(tool_name):
        return None

    not_a_hook = 42
'''


@pytest.fixture
def plugin_module(tmp_path: Path) -> ModuleType:
    path = tmp_path / "kodelet_test_manager_plugin.py"
    path.write_text(textwrap.dedent(PLUGIN))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(path.stem, None)


def _impls(pm: pluggy.PluginManager) -> set[tuple[str, str]]:
    return {
        (caller.name, impl.function.__name__)
        for caller in pm.get_hookcallers(pm.get_plugin("p")) or []
        for impl in caller.get_hookimpls()
    }


def test_it_finds_the_same_hooks_as_pluggy(plugin_module: ModuleType) -> None:
    ours, plain = PluginManager(), pluggy.PluginManager(PROJECT)
    for pm in (ours, plain):
        pm.add_hookspecs(hookspecs)
        pm.register(plugin_module, name="p")
    assert _impls(ours) == _impls(plain)
    assert ("after_turn", "after_turn") in _impls(ours), "a bound method is still a hook"
    assert ("wrapped", "before_tool_call") in _impls(ours), "a marker copied by wraps counts"
    assert ("agent_stop", "<lambda>") in _impls(ours), "specname= is honoured"
    assert {c.name for c in ours.hook.__dict__.values() if hasattr(c, "name")} == {
        c.name for c in plain.hook.__dict__.values() if hasattr(c, "name")
    }


def test_non_routines_are_never_asked_for_attributes(plugin_module: ModuleType) -> None:
    pm = PluginManager()
    pm.add_hookspecs(hookspecs)
    pm.register(plugin_module, name="p")
    assert plugin_module.SEEN == []


def test_a_class_plugin_is_left_to_pluggy() -> None:
    from kodelet import hookimpl

    class Plugin:
        @hookimpl
        def before_tool_call(self, tool_name: str) -> None:
            return None

        @property
        def boom(self) -> None:
            raise AssertionError("properties never run")

    pm = PluginManager()
    pm.add_hookspecs(hookspecs)
    pm.register(Plugin(), name="p")
    assert _impls(pm) == {("before_tool_call", "before_tool_call")}

"""The composition root: one function that assembles a ready runtime.

:class:`~kodelet.runtime.Runtime` loads nothing by itself; this is where the
built-ins, the ``kodelet.plugins`` entry points, the adapters and the
configuration come together, the way ``llm.load_plugins()`` does for llm. The CLI,
the testing kit, replay and hosts all build their runtimes here, so every one of
them sees the same hooks in the same order.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from .adapters.executables import NAME as EXECUTABLES
from .adapters.executables import ExecutableAdapter
from .config import Config, load_config
from .events import Event
from .loading import entry_points as installed_entry_points
from .loading import load
from .markers import PROJECT
from .places import Places
from .process import killing_on_signals
from .runtime import SLOW_AFTER, Runtime
from .version import VERSION

__all__ = ["guard_with_rules", "hooks_die_with_host", "load_runtime", "protect_kodelet"]

CLAUDE_ADAPTER = "kodelet:claude"  # adapters.claude_hooks.NAME, without importing it


def hooks_die_with_host(runtime: Runtime) -> contextlib.AbstractContextManager[None]:
    """While inside, a SIGTERM or SIGHUP to this process first kills every hook process
    ``runtime`` has running, so none is left orphaned (docs/SECURITY.md). The CLI uses
    it for every command; a host should wrap its own loop in it."""
    return killing_on_signals(runtime)


def protect_kodelet(runtime: Runtime) -> None:
    """Register ``builtin:protect-kodelet`` (:mod:`kodelet.selfguard`) on ``runtime``.

    From the core, not through an entry point: a built-in that guards kodelet's own
    files must not depend on distribution metadata or an import that may fail."""
    from . import selfguard

    guard = selfguard.SelfGuard(runtime.places.cwd, runtime.places.global_root, runtime.env)
    info = runtime.register(guard, name=selfguard.NAME, builtin=True)
    info.path = os.path.dirname(selfguard.__file__)
    info.version, info.distribution = VERSION, PROJECT


def guard_with_rules(runtime: Runtime) -> None:
    """Register ``builtin:rules`` (:mod:`kodelet.rules.guard`) on ``runtime`` when some
    rule file exists (managed, user or project; :mod:`kodelet.rule_files`).

    Without one nothing of :mod:`kodelet.rules` is imported: a project without rules
    pays nothing. No configuration switches it off (a cloned repository's config.toml
    must not remove the user's or the machine's rules); the rule files themselves do."""
    from . import rule_files

    found = rule_files.find(runtime.places, runtime.env)
    if not found:
        return
    from .rules import guard

    home = runtime.env.get("HOME") or os.path.expanduser("~")
    rules = guard.RulesGuard(
        [guard.Source(f.tier, f.path, f.text, f.problem) for f in found],  # type: ignore[arg-type]
        project=str(runtime.places.cwd),
        home=home,
        kodelet_home=str(runtime.places.global_root),
    )
    info = runtime.register(rules, name=guard.NAME, builtin=True, always=True)
    info.path = os.path.dirname(guard.__file__)
    info.version, info.distribution = VERSION, PROJECT


def load_runtime(
    *,
    cwd: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
    config: Config | None = None,
    no_hooks: bool | None = None,
    entry_points: bool = True,
    builtins: bool = True,
    executables: bool = True,
    persistent: bool = True,
    claude: bool | Literal["plugins"] = True,
    transcript_path: str = "",
    plugins: Iterable[Any] = (),
    disabled: Iterable[str] = (),
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    slow_after: float = SLOW_AFTER,
    audit: bool = True,
    agent: str = "",
) -> Runtime:
    """A runtime with every hook that applies to ``cwd``, configured and ready.

    ``entry_points=False`` and ``executables=False`` give an isolated runtime with
    only the ``plugins`` passed in (each an object, or a ``(name, object)`` pair),
    which is what plugin authors' tests want. ``persistent=False`` runs every
    executable per call, even one that offers ``serve`` (for comparisons).
    ``no_hooks`` (or ``KODELET_NO_HOOKS=1``) keeps only the built-ins. ``claude=False``
    (or ``[claude] hooks = false``) leaves Claude Code's hooks out; ``claude="plugins"``
    keeps only those of plugin repositories (inside Claude Code, which runs its own
    settings files' hooks itself); ``transcript_path``
    is what they see as theirs. ``config`` replaces the config files and environment;
    ``timeout`` and ``no_hooks`` are the CLI flags on top of them. ``audit=False`` keeps
    its decisions out of the decision log, which ``[audit]`` otherwise decides on
    (docs/RULES.md, Audit); ``agent`` is the agent its records name by default."""
    env = dict(os.environ if env is None else env)
    places = Places.resolve(cwd, home, env)
    if config is None:
        config = load_config(places, env, timeout=timeout, no_hooks=no_hooks)
    elif no_hooks:
        config = attrs.evolve(config, no_hooks=True)
    runtime = Runtime(
        config=config, places=places, env=env, disabled=disabled, slow_after=slow_after
    )
    if audit and config.audit.enabled:
        from .audit import Audit

        runtime.audit = Audit.of(
            config.audit, places.global_root, env, project=str(places.cwd), agent=agent
        )
    third_party = entry_points and not config.no_hooks
    found = installed_entry_points(builtins_only=not third_party) if third_party or builtins else []
    if builtins:
        for ep in (ep for builtin, ep in found if builtin):
            runtime.add_plugin(load(ep, True))
        protect_kodelet(runtime)  # listed with the built-ins, before the rest
        guard_with_rules(runtime)
    for ep in (ep for builtin, ep in found if not builtin):
        # a disabled plugin is recorded, never imported
        runtime.add_plugin(load(ep, False, disabled=runtime.is_disabled(ep.name)))
    for plugin in plugins:
        name, obj = plugin if isinstance(plugin, tuple) else (None, plugin)
        runtime.register(obj, name=name)
    claude_hooks = None
    if claude and config.claude_off() is None:
        # Reading the settings files is cheap; the adapter (the Spec 07 runner and its
        # types) is imported only when they hold a hook, so no one else pays for it.
        from .adapters.claude_settings import load_hooks

        specs = load_hooks(places, env)
        if claude == "plugins":
            specs = [s for s in specs if s.scope.startswith("plugin:")]
        if specs:
            from .adapters.claude_hooks import ClaudeCodeAdapter

            claude_hooks = ClaudeCodeAdapter(
                specs, config, cwd=str(places.cwd), transcript_path=transcript_path
            )
    if executables and not config.no_hooks:

        def natives() -> set[str]:
            """Every name a [hooks."<name>"] table may mean besides the hook files."""
            names = {p.name for p in runtime.plugins} | {
                ep.name for _, ep in installed_entry_points()
            }
            if claude_hooks is not None:
                names |= {row.name for row in claude_hooks.discovered}
                names |= {h.name for e in Event for h in claude_hooks.kodelet_hooks(e)}
            return names

        adapter = ExecutableAdapter.load(
            places, config, env, persistent=persistent, natives=natives
        )
        runtime.add_adapter(adapter, EXECUTABLES)
    if claude_hooks is not None:  # the call order comes from ranks, not from this order
        runtime.add_adapter(claude_hooks, CLAUDE_ADAPTER)
    runtime.configure()
    return runtime

"""`kodelet plugins` commands: native plugins (pip) and plugin repositories (git or a directory)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import importlib_metadata
import typer

from .. import repos
from ..assembly import load_runtime
from ..config import ConfigError, load_config
from ..listing import plugin_rows
from ..loading import entry_points
from ..places import Places
from .common import fail, listing_quietly, print_json, printable, render_table, state
from .hooks_cmd import toggle_plugin, unknown_name

app = typer.Typer(
    help="List, add and remove plugins: Python packages and plugin repositories.",
    no_args_is_help=True,
)


def _native_rows(cwd: Path) -> list[dict[str, Any]]:
    """Every installed native plugin, whatever ``--no-hooks`` says: this is an inventory."""
    env = {k: v for k, v in os.environ.items() if k != "KODELET_NO_HOOKS"}
    try:
        with listing_quietly():
            rt = load_runtime(cwd=cwd, executables=False, env=env)
    except ConfigError as exc:
        fail(str(exc), 2)
    try:
        rows = plugin_rows(rt)
        for row in rows:
            row["_disabled"] = row.pop("disabled")
            row["_version"] = row["version"] or ""
        return rows
    finally:
        rt.close()


def _repo_row(repo: repos.InstalledRepo) -> dict[str, Any]:
    return {
        "name": repo.name,
        "kind": "repo",
        "location": repo.location,
        "path": str(repo.path),
        "version": None,
        "distribution": None,
        "hooks": list(repo.hooks),
        "skills": list(repo.skills),
        "recipes": list(repo.recipes),
        "error": repo.error,
        "warnings": [],
        "_disabled": False,
        "_version": repo.version_label,
        "_installed": _installed_from(repo.manifest),
    }


def _installed_from(manifest: Any) -> str | None:
    """The manifest in one line: where a repository came from, and when."""
    if not manifest:
        return None
    text = str(manifest.get("source") or "?")
    if manifest.get("ref"):
        text += f" @ {manifest['ref']}"
    if manifest.get("commit"):
        text += f" ({str(manifest['commit'])[:12]})"
    if manifest.get("installed_at"):
        text += f", installed {manifest['installed_at']}"
    return text


@app.command("list")
def list_plugins(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list for scripts."),
) -> None:
    """List native plugins (built-in and installed) and plugin repositories (local and global)."""
    st = state(ctx)
    rows = _native_rows(st.cwd)
    rows += [_repo_row(r) for r in repos.list_repos(Places.resolve(st.cwd))]
    if as_json:
        print_json([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows])
        return
    table = [
        [
            r["name"],
            r["kind"],
            r["location"],
            r["_version"] or "-",
            r["distribution"] or "-",
            str(len(r["skills"])),
            str(len(r["recipes"])),
            str(len(r["hooks"])),
        ]
        for r in rows
    ]
    typer.echo(
        render_table(
            ["NAME", "KIND", "LOCATION", "VERSION", "DISTRIBUTION", "SKILLS", "RECIPES", "HOOKS"],
            table,
        )
    )
    sources = [
        "  " + printable(f"{r['name']}: {r['_installed']}") for r in rows if r.get("_installed")
    ]
    if sources:
        typer.echo("\nInstalled from:")
        typer.echo("\n".join(sources))
    # A multi-line error (pluggy's, for a misspelt argument) is printed as its lines.
    notes = [
        "\n".join(
            ("  " if i == 0 else "    ") + printable(line)
            for i, line in enumerate(f"{r['name']}: {r['error']}".splitlines())
        )
        for r in rows
        if r["error"]
    ]
    notes += [
        "  " + printable(f"{r['name']}: warning: {why}")
        for r in rows
        for why in r.get("warnings", ())
    ]
    notes += [
        "  " + printable(f"{r['name']}: disabled in config.toml") for r in rows if r["_disabled"]
    ]
    if notes:
        typer.echo("\nNotes:")
        typer.echo("\n".join(notes))


@app.command("add")
def add(
    ctx: typer.Context,
    source: str = typer.Argument(
        ..., help="org/repo (cloned from $KODELET_PLUGIN_GIT_BASE), a git URL, or a directory."
    ),
    global_: bool = typer.Option(
        False, "--global", help="Install into the global root instead of <cwd>/.kodelet."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an installed plugin of that name."),
    ref: str = typer.Option(None, "--ref", help="Tag, branch or commit to install (git only)."),
    name: str = typer.Option(
        None,
        "--name",
        metavar="ORG/REPO",
        help="Install as org/repo (default: the source's last two path parts).",
    ),
) -> None:
    """Install a plugin repository's skills/, recipes/ and hooks/."""
    st = state(ctx)
    places = Places.resolve(st.cwd)
    try:
        src = repos.parse_source(source, name=name)
        installed = repos.add(
            src,
            repos.plugins_dir(places, global_=global_),
            location="global" if global_ else "local",
            ref=ref,
            force=force,
            on_wait=lambda: typer.echo(
                f"kodelet: waiting for another install of {src.name} to finish", err=True
            ),
        )
    except repos.RepoError as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"cannot install {source}: {exc.strerror or exc}", 1)
    typer.echo(printable(f"Installed {installed.name}:"))
    typer.echo(f"  Skills:  {len(installed.skills)}")
    typer.echo(f"  Recipes: {len(installed.recipes)}")
    typer.echo(f"  Hooks:   {len(installed.hooks)}")


@app.command("remove")
def remove(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The plugin repository to remove, as org/repo."),
    global_: bool = typer.Option(
        False, "--global", help="Remove from the global root instead of <cwd>/.kodelet."
    ),
) -> None:
    """Remove an installed plugin repository."""
    places = Places.resolve(state(ctx).cwd)
    try:
        path = repos.remove(name, repos.plugins_dir(places, global_=global_))
    except repos.RepoError as exc:
        _native_hint(name)
        if not isinstance(exc, repos.UnknownPlugin):
            fail(str(exc), 1)
        other = repos.plugins_dir(places, global_=not global_)
        hint = ""
        if os.path.lexists(other / repos.dir_name(name)):
            hint = " (it is installed " + ("locally" if global_ else "globally: use --global") + ")"
        fail(f"{exc}{hint}", 1)
    except OSError as exc:
        fail(f"cannot remove {name}: {exc.strerror or exc}", 1)
    typer.echo(f"Removed {repos.check_name(name)} ({path})")


def _natives() -> dict[str, tuple[bool, str | None]]:
    """Native plugin name -> (is built in, distribution to uninstall)."""
    return {
        ep.name: (builtin, None if ep.dist is None else ep.dist.metadata["Name"])
        for builtin, ep in entry_points()
    }


def _native_hint(name: str) -> None:
    """``remove`` is for plugin repositories: point a native plugin's name, or its
    package's as ``plugins list`` shows it, to what works."""
    natives = _natives()
    found = natives.get(name)
    if found is not None:
        builtin, dist = found
        if builtin or dist is None:
            fail(f"{name} is built in; turn it off with: kodelet plugins disable {name}", 1)
        fail(f"{name} is a native plugin (Python package {dist}): kodelet plugins uninstall {dist}")
    package = _canonical(name)
    for plugin, (builtin, dist) in natives.items():
        if not builtin and dist is not None and _canonical(dist) == package:
            what = f"{name} is the Python package of native plugin {plugin}"
            fail(f"{what}: kodelet plugins uninstall {dist}", 1)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _is_distribution(name: str) -> bool:
    try:
        importlib_metadata.distribution(name)
    except (importlib_metadata.PackageNotFoundError, ValueError):
        return False
    return True


def _resolve_uninstall(args: list[str]) -> list[str]:
    """Plugin names become their distributions; what pip would skip fails here, non-zero.

    pip says "not installed" and exits 0 for a name it does not know, and the
    plugin stays: an entry-point name is the natural thing to type."""
    natives = _natives()
    out: list[str] = []
    takes_value = False
    for arg in args:
        if takes_value or arg.startswith("-"):
            takes_value = arg in ("-r", "--requirement")
            out.append(arg)
            continue
        if _is_distribution(re.split(r"[<>=!~;\[\s@]", arg, maxsplit=1)[0]):
            out.append(arg)
            continue
        builtin, dist = natives.get(arg, (False, None))
        if builtin:
            fail(f"{arg} ships with kodelet; turn it off with: kodelet plugins disable {arg}", 1)
        if dist is None:
            fail(f"no installed package or native plugin named {arg!r} (see: kodelet plugins list)")
        typer.echo(f"kodelet: plugin {arg} is in the package {dist}: uninstalling it", err=True)
        out.append(dist)
    return out


def _pip(action: str, packages: list[str]) -> None:
    """pip's ``action`` in kodelet's own environment, as ``llm install`` does, so new
    plugins are importable; by pipx or uv when they made it (:mod:`kodelet.installer`)."""
    from ..installer import Unavailable, plan

    try:
        run = plan(action, packages)
    except Unavailable as exc:
        fail(str(exc), 1)
    typer.echo(f"kodelet: {action} with {run.how}", err=True)
    sys.stdout.flush()
    try:
        code = subprocess.run(run.argv, check=False, env=run.env).returncode
    except OSError as exc:
        fail(f"cannot run {run.argv[0]}: {exc.strerror or exc}", 1)
    if code != 0:
        fail(f"{shlex.join(run.argv)} failed (exit status {code})", 1)


_PIP_ARGS = {"ignore_unknown_options": True}


@app.command("install", context_settings=_PIP_ARGS)
def install(
    packages: list[str] = typer.Argument(
        ...,
        metavar="PACKAGE...",
        help="Packages (and pip options), e.g. kodelet-plugin-foo or -e ./my-plugin.",
    ),
) -> None:
    """Install native plugins into kodelet's own environment (pip, pipx inject or uv pip:
    whichever made it)."""
    _pip("install", packages)


@app.command("uninstall", context_settings=_PIP_ARGS)
def uninstall(
    packages: list[str] = typer.Argument(
        ...,
        metavar="PACKAGE...",
        help="Packages, or native plugin names (resolved to their package).",
    ),
) -> None:
    """Uninstall native plugins from kodelet's own environment (no confirmation).

    A plugin name (as plugins list shows it) is resolved to its package."""
    _pip("uninstall", _resolve_uninstall(packages))


@app.command("new")
def new(
    name: str = typer.Argument(..., help="Plugin name, e.g. secret-scanner."),
    directory: Path = typer.Option(
        None,
        "--dir",
        metavar="DIR",
        help="Project directory to create (default: ./kodelet-plugin-NAME).",
        file_okay=False,
        show_default=False,
    ),
) -> None:
    """Create a native plugin project that passes its own tests as generated."""
    from ..scaffold import ScaffoldError, create, next_steps

    try:
        names, target = create(name, directory)
    except ScaffoldError as exc:
        fail(str(exc), 2)
    typer.echo(f"Created {names.dist} (entry point {names.name!r}) in {target}")
    # Not the active pip's: under pipx or uv tool that is not kodelet's environment.
    typer.echo(f"Use it: kodelet plugins install -e {shlex.quote(str(target))}")
    typer.echo(f"Next: {next_steps(target)}")


def _toggle(ctx: typer.Context, name: str, enable: bool) -> None:
    places = Places.resolve(state(ctx).cwd)
    try:
        config = load_config(places)
    except ConfigError as exc:
        fail(str(exc), 2)
    names = list(_natives())
    if name not in names:
        fail(unknown_name(name, "native plugin", names, "kodelet plugins list"), 1)
    toggle_plugin(places, config, name, enable)


@app.command("enable")
def enable(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A native plugin's name, as plugins list shows it."),
) -> None:
    """Enable a native plugin again (in .kodelet/config.toml)."""
    _toggle(ctx, name, True)


@app.command("disable")
def disable(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A native plugin's name, as plugins list shows it."),
) -> None:
    """Disable a native plugin, still installed ([plugins] disabled in .kodelet/config.toml)."""
    _toggle(ctx, name, False)

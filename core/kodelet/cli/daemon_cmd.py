"""`kodelet daemon`: the warm kodelets that answer agents' hook calls (docs/HOSTS.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from ..places import find_project
from ..warm import control, native_client, protocol
from .common import fail

app = typer.Typer(
    help="The warm kodelet: one process per project keeping its hooks loaded, so a "
    "guarded tool call costs milliseconds. Agents start it on demand.",
    no_args_is_help=True,
)

CwdOpt = Annotated[
    Path | None, typer.Option("--cwd", help="A directory of the project (default: here).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


@app.command("start")
def start(cwd: CwdOpt = None, as_json: JsonOpt = False) -> None:
    """Start the project's warm kodelet (if none runs) and wait until it answers."""
    project = find_project(cwd)
    try:
        info = control.start(project)
    except protocol.Unavailable as exc:
        fail(f"cannot start a warm kodelet for {project}: {exc}")
    if as_json:
        typer.echo(json.dumps(info, indent=2))
    else:
        typer.echo(f"warm kodelet {info['pid']} answers for {info['project']}")


@app.command("stop")
def stop(
    cwd: CwdOpt = None,
    all_: Annotated[bool, typer.Option("--all", help="Stop every warm kodelet of yours.")] = False,
) -> None:
    """Stop the project's warm kodelet (or all of them); its hook processes end with it.
    One holding the port of an installed HTTP transport restarts instead: a port left
    free could be taken by another local user. Uninstalling the transport frees it."""
    project = None if all_ else str(find_project(cwd))
    mine = [i for i in control.running() if "pid" in i and project in (None, i.get("project"))]
    if not mine:
        typer.echo(f"no warm kodelet runs for {project}" if project else "no warm kodelet runs")
        return
    for info in mine:
        where = info["project"]
        if control.stop(info):
            typer.echo(f"stopped warm kodelet {info['pid']} of {where}")
            continue
        ports = ", ".join(control.keeps_port(info)) or "its HTTP port"
        typer.echo(
            f"restarted warm kodelet {info['pid']} of {where}: it keeps {ports} for the "
            "installed HTTP transport (a free port could be taken by another user); "
            "`kodelet claude uninstall` with that scope frees it"
        )


@app.command("status")
def status(as_json: JsonOpt = False) -> None:
    """Every warm kodelet of yours: project, age, calls answered, last reload."""
    found = control.running()
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    typer.echo(f"hook client: {native_client.installed().describe()}")
    if not found:
        typer.echo("no warm kodelet runs (agents start one on their first hook call)")
        return
    now = time.time()
    for info in found:
        if "problem" in info:
            typer.echo(f"?      {info['socket']}: {info['problem']}")
            continue
        reload = info["last_reload"]
        last = f"{_age(now - reload)} ago" if reload else "never"
        typer.echo(
            f"{info['pid']:<6} {info['project']}  age {_age(info['age'])}  "
            f"calls {info['calls']}{_by_client(info)}  reloads {info['reloads']} (last {last})  "
            f"log {info['log']}"
        )


CLIENTS = {"native": "native client", "python": "Python client", "http": "HTTP"}


def _by_client(info: dict[str, object]) -> str:
    """Which clients sent the calls, so that calls paying for the Python client show."""
    clients = info.get("clients")
    if not isinstance(clients, dict) or not clients:
        return ""
    parts = [f"{CLIENTS.get(k, k)} {n}" for k, n in sorted(clients.items())]
    return f" ({', '.join(parts)})"

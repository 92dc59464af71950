"""``kodelet verify``: prove, in the agent's own terms, that the installed guard holds.

It finds the pre-tool entries kodelet installed where the agent reads them when started
in the current folder, runs each as the agent does (:mod:`kodelet.agents.verify`) on a
few dangerous calls and on the user's own, and prints what the agent would do with each.
Nothing but the hook runs: the calls themselves never do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import typer

from ..agents import DIALECTS
from ..agents import verify as probing
from ..claude.installed import own_entries
from ..config import ConfigError, load_config
from ..places import Places
from .common import fail, listing_quietly, make_runtime, print_json, printable, state
from .hook_files import SettingsError, read_settings
from .plugin_files import GeneratesPlugin, installed_command

AGENTS = tuple(DIALECTS)
TITLES = {n: d.title for n, d in DIALECTS.items()}

HELP = """Run the hook entry kodelet installed for an agent exactly as that agent runs it,
and say what the agent would do with each call: blocked, asks, rewritten or allowed.

The entry is found where the agent reads it when started in the current folder, run
through /bin/sh -c from this folder with the environment the agent gives hooks (this
shell's, with the agent's project variable), on the agent's own pre-tool input, and its
answer read as that agent reads it (exit codes, decisions, what happens when the hook
crashes or times out). The calls themselves never run: only the hook does.

Every run puts a few built-in dangerous calls (rm -rf /, rm -rf ~, writes to
.kodelet/config.toml) and reports what happens to them, without expecting anything:
which calls your guards must stop is yours to say, with --expect-block COMMAND (and
--expect-allow COMMAND for calls they must let through).

With --live the installed agent binary itself (Claude Code or Gemini CLI) starts here,
non-interactively, against a stand-in model that asks it to run each call in a
sacrificial temporary folder (your command as `cd FOLDER && ( COMMAND ); touch MARKER`,
the built-in deletion as `rm -rf FOLDER/victim`), and what happened is judged from the
files there.

Exit status: 0 when every expectation holds; 1 when a call expected to be blocked is
allowed (or one expected to be allowed is not), or when no kodelet entry runs from this
folder (the fix is printed: `kodelet AGENT install`); 2 on a usage error."""


def _here(ctx: typer.Context) -> Path:
    """The folder the agent would start in: --cwd as given, else the current folder (not
    the project root that other commands work from)."""
    given = ctx.find_root().params.get("cwd")
    return Path(given if given is not None else os.getcwd()).absolute()


def _entry(agent: str, scope: str, path: Path, hook: dict[str, Any], **extra: Any) -> Any:
    timeout = hook.get("timeout")
    return probing.Entry(
        agent,
        scope,
        path,
        command=hook.get("command") if hook.get("type", "command") == "command" else None,
        url=hook.get("url") if hook.get("type") == "http" else None,
        headers={str(k): str(v) for k, v in (hook.get("headers") or {}).items()},
        timeout=float(timeout) if isinstance(timeout, int | float) and timeout > 0 else None,
        blocks_on_failure=hook.get("onFailure") == "block",
        **extra,
    )


def _settings_entries(
    agent: str, scope: str, path: Path, event: str, keys: tuple[str, ...] = ()
) -> tuple[list[probing.Entry], str | None]:
    """kodelet's entries for ``event`` in one settings file, and the problem reading it."""
    what = f"{TITLES[agent]} settings"
    try:
        _, data = read_settings(path, what, keys)
    except SettingsError as exc:
        return [], str(exc)
    dialect = DIALECTS[agent]
    untrusted = dialect.untrusted(path, data, os.environ) or set()
    out = []
    for own in own_entries(data, event):
        matcher = own.matcher if isinstance(own.matcher, str) else None
        extra: dict[str, Any] = {"matcher": matcher}
        if untrusted and dialect.trust_key(path, own) in untrusted:
            extra["runs"] = False
            extra["why_not"] = (
                f"not trusted by {TITLES[agent]}, which does not run it"
                f" (`kodelet {agent} install --scope {scope}` records the trust)"
            )
        out.append(_entry(agent, scope, path, own.hook, **extra))
    return out, None


def _scopes(agent: str, base: Path) -> list[tuple[str, Path]]:
    """(scope, file) where ``agent`` reads kodelet's entries, project files from ``base``."""
    dialect = DIALECTS[agent]
    return [(s, dialect.config_path(s, base, os.environ)) for s in dialect.config]


def find_entries(agent: str, base: Path) -> tuple[list[probing.Entry], list[str]]:
    """kodelet's pre-tool entries for ``agent`` (project files read from ``base``), and
    the problems met reading its files."""
    entries: list[probing.Entry] = []
    problems: list[str] = []
    dialect = DIALECTS[agent]
    event = probing.pre_tool_event(agent)
    for scope, path in _scopes(agent, base):
        found_before = len(entries)
        if isinstance(dialect, GeneratesPlugin):
            command, problem = installed_command(path, dialect.marker)
            if command:
                entries.append(probing.Entry(agent, scope, path, command=command))
        else:
            found, problem = _settings_entries(agent, scope, path, event, dialect.settings_keys)
            entries += found
        if problem:
            problems.append(problem)
        if scope == "project" and not dialect.trusts(base, os.environ):
            how = f" (or {dialect.project_trust_env}=true)" if dialect.project_trust_env else ""
            why = (
                f"{dialect.title} does not trust {base}, so it does not read this file there:"
                f" trust the folder in {dialect.binary}{how}, or `kodelet {agent} install"
                " --scope user`"
            )
            entries[found_before:] = [
                attrs.evolve(e, runs=False, why_not=why) for e in entries[found_before:]
            ]
    return entries, problems


def _start_folder(agent: str, here: Path, project: Path) -> Path:
    """Where the agent reads a project's file when started in ``here``: ``here`` for the
    agents that read it only where they start, the project's root for the others."""
    return here if DIALECTS[agent].project_where_started else project


def subfolder_problem(agent: str, here: Path, project: Path) -> str | None:
    """Why a project-scope entry at the project's root does not hold in ``here``, or None."""
    if not DIALECTS[agent].project_where_started or here == project:
        return None
    at_root = [e for e in find_entries(agent, project)[0] if e.scope != "user"]
    if not at_root:
        return None
    title = TITLES[agent]
    return (
        f"kodelet is installed for {title} in {at_root[0].path}, which {title} reads only"
        f" when started in {project}; started here ({here}) it never calls kodelet: start"
        f" {title} in {project}, or `kodelet {agent} install --scope user` to hold from"
        " every folder"
    )


def not_held_here(ctx: typer.Context, agent: str) -> str | None:
    """Why ``agent`` started in the current folder never calls kodelet although it is
    installed (its entries are not trusted, or are at the project's root and the agent
    reads them only where it starts), or None: what ``status`` reports and exits 1 for."""
    here, project = _here(ctx), state(ctx).cwd
    entries = find_entries(agent, _start_folder(agent, here, project))[0]
    if any(e.runs for e in entries):
        return None
    if entries:  # installed, and the agent runs none of it
        return "; ".join(sorted({f"{e.path}: {e.why_not}" for e in entries}))
    return subfolder_problem(agent, here, project)


BLOCKING_EVENTS = ("before_tool_call", "user_message_send")


def hooks_not_running(ctx: typer.Context) -> list[dict[str, Any]]:
    """The project's hooks that were meant to run inside an agent but will not (not
    executable, untrusted, cannot start, import error), each with its event (None when
    it could not be asked), reason, fix, whether kodelet stands in for it (failing
    closed), and whether it is a guard that will not hold: one on a blocking event, or
    on an event nobody could learn, with no stand-in (not executable, ``fail_closed =
    false``)."""
    from ..listing import hook_rows, skipped_hooks
    from .common import listing_quietly, make_runtime

    with listing_quietly():
        try:
            rt = make_runtime(ctx, claude="plugins")
        except Exception:  # a config error: status shows it, and every call is blocked
            return []
        try:
            skipped = skipped_hooks(rt)
            rows = hook_rows(rt)
        finally:
            rt.close()
    events = {r["path"]: r["event"] for r in rows if r["status"] != "active"}
    # A hook that cannot run is stood in for, failing closed, on the blocking events
    # (listed there as running): it holds, by blocking every call it guards.
    stood_in = {
        r["name"] for r in rows if r["status"] == "active" and r["event"] in BLOCKING_EVENTS
    }
    out = []
    for hook in skipped:
        event = events.get(hook["path"])
        guard = event is None or event in BLOCKING_EVENTS
        out.append(
            {
                "name": hook["name"],
                "event": event,
                "path": hook["path"],
                "reason": hook["reason"],
                "fix": hook["fix"],
                "stand_in": guard and hook["name"] in stood_in,
                "blocking": guard and hook["name"] not in stood_in,
            }
        )
    return out


def not_running_lines(rows: list[dict[str, Any]]) -> list[str]:
    """What ``status`` says of :func:`hooks_not_running`."""
    if not rows:
        return []
    lines = ["", "kodelet hooks that will NOT run:"]
    for r in rows:
        held = " (a guard that does not hold)" if r["blocking"] else ""
        if r["stand_in"]:
            held = " (fails closed: every call it guards is blocked until fixed)"
        lines.append(f"  {r['event'] or '?':18} {r['name']}: {r['reason']}{held}")
        if r["fix"]:
            lines.append(f"  {'':18} fix: {r['fix']}")
    return lines


def cannot_apply(agent: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The active hooks on events where ``agent`` cannot apply some answer, with what.
    kodelet's own built-ins are left out: on these events they only block."""
    out = []
    for event, what in DIALECTS[agent].cannot_apply:
        for r in rows:
            if r["event"] == event and not str(r["name"]).startswith("builtin:"):
                out.append({"name": r["name"], "event": event, "answer": what})
    return out


def cannot_apply_lines(title: str, found: list[dict[str, Any]]) -> list[str]:
    if not found:
        return []
    lines = ["", f"answers {title} cannot apply as asked:"]
    lines += [f"  {f['event']:18} {f['name']}: {f['answer']}" for f in found]
    return lines


def start_folder_note(agent: str, scope: str, project: Path) -> str | None:
    """What ``install`` says of a project-file scope in an agent that reads it only where
    it starts."""
    if not DIALECTS[agent].project_where_started or scope == "user":
        return None
    title = TITLES[agent]
    return (
        f"{title} reads this file only when started in {project}: started in a subfolder"
        f" it never calls kodelet (`kodelet verify` there says so); --scope user holds from"
        " every folder"
    )


def check_agent(
    agent: str, here: Path, project: Path, probes: list[probing.Probe], live: bool = False
) -> dict[str, Any]:
    """What ``verify`` says of one agent, as JSON-ready data."""
    entries, problems = find_entries(agent, _start_folder(agent, here, project))
    row: dict[str, Any] = {
        "agent": agent,
        "title": TITLES[agent],
        "cwd": str(here),
        "entries": [
            {
                "scope": e.scope,
                "path": str(e.path),
                "command": e.command,
                "url": e.url,
                "runs": e.runs,
                "why_not": e.why_not or None,
            }
            for e in entries
        ],
        "problems": problems,
        "problem": None,
        "fix": None,
        "calls": [],
    }
    if not any(e.runs for e in entries):
        where = subfolder_problem(agent, here, project)
        row["problem"] = where or (
            f"no kodelet entry runs before {TITLES[agent]}'s tool calls from {here}"
        )
        row["fix"] = (
            f"`kodelet {agent} install --scope user`"
            if where
            else f"`kodelet {agent} install` (or --scope user)"
        )
        if not entries and not live:  # --live asks the agent itself, entry or none
            return row
    row["live"] = live
    if live:
        from ..agents.live import LiveError, run_live

        try:
            verdicts = run_live(agent, probes, here, os.environ)
        except LiveError as exc:
            row["problem"] = f"--live: {exc}"
            row["fix"] = f"`kodelet verify --agent {agent}` without --live runs the entry alone"
            return row
    else:
        verdicts = probing.verify(agent, entries, probes, here, os.environ)
    row["calls"] = [v.to_json() for v in verdicts]
    return row


def _installed_anywhere(agent: str, here: Path, project: Path) -> bool:
    if find_entries(agent, _start_folder(agent, here, project))[0]:
        return True
    return subfolder_problem(agent, here, project) is not None


def _lines(row: dict[str, Any]) -> list[str]:
    how = ", live" if row.get("live") else ""
    lines = [f"{row['title']} (started in {row['cwd']}{how}):"]
    for e in row["entries"]:
        what = e["command"] or e["url"]
        lines.append(f"  entry: {e['scope']} {e['path']}: {what}")
        if not e["runs"]:
            lines.append(f"    does not run: {e['why_not']}")
    lines += [f"  problem: {p}" for p in row["problems"]]
    if row["problem"]:
        lines.append(f"  NOT HELD: {row['problem']}")
        lines.append(f"  fix: {row['fix']}")
    for call in row["calls"]:
        mark = ""
        if call["expect"] is not None:
            wanted = "blocked" if call["expect"] == probing.BLOCK else "allowed"
            mark = f" [expected {wanted}: {'ok' if call['held'] else 'FAILS'}]"
        lines.append(f"  {call['outcome']:9} {call['call']}{mark}")
        lines.append(f"  {'':9}   {call['reason']}")
    return lines


def verify(
    ctx: typer.Context,
    agent: str = typer.Option(
        None,
        "--agent",
        metavar="NAME",
        help=f"The agent ({', '.join(AGENTS)}); default: every agent kodelet is installed"
        " in for this folder or user, else Claude Code.",
        show_default=False,
    ),
    expect_block: list[str] = typer.Option(
        [],
        "--expect-block",
        metavar="COMMAND",
        help="A shell command your guards must stop (blocked, asked or rewritten);"
        " repeatable. verify exits 1 when it is let through.",
    ),
    expect_allow: list[str] = typer.Option(
        [],
        "--expect-allow",
        metavar="COMMAND",
        help="A shell command your guards must let through; repeatable. verify exits 1"
        " when it is stopped.",
    ),
    live: bool = typer.Option(
        False,
        "--live",
        help="Drive the installed agent itself (Claude Code, Gemini CLI) against a stand-in"
        " model that asks it to run each call in a sacrificial temporary folder, and judge"
        " from the files there.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document for scripts."),
) -> None:
    here = _here(ctx)
    project = state(ctx).cwd
    if agent is not None and agent not in AGENTS:
        fail(f"--agent {agent}: unknown agent (known: {', '.join(AGENTS)})", 2)
    agents = [agent] if agent else [a for a in AGENTS if _installed_anywhere(a, here, project)]
    probes = probing.builtin_probes(project) + probing.user_probes(expect_block, expect_allow)
    rows = [check_agent(a, here, project, probes, live) for a in agents or ["claude"]]
    hooks = bridged_hooks(ctx)[2]
    for row in rows:
        # What the agent cannot apply of the project's hooks' answers (a redaction that
        # does not hold there), as its status says.
        row["cannot_apply"] = cannot_apply(row["agent"], hooks)
    failed = [c for r in rows for c in r["calls"] if c["held"] is False]
    ok = not failed and not any(r["problem"] for r in rows)
    if as_json:
        print_json({"cwd": str(here), "project": str(project), "ok": ok, "agents": rows})
    else:
        lines: list[str] = []
        for row in rows:
            lines += [*_lines(row), *cannot_apply_lines(row["title"], row["cannot_apply"]), ""]
        if not expect_block and not expect_allow:
            lines.append(
                "nothing expected: built-in calls are reported only; --expect-block COMMAND"
                " makes verify fail when COMMAND is let through"
            )
        if failed:
            lines.append(f"FAILED: {len(failed)} call(s) not as expected")
        elif ok:
            lines.append("ok: every expectation holds")
        typer.echo("\n".join(printable(line) for line in lines))
    if not ok:
        raise typer.Exit(1)


def bridged_hooks(ctx: typer.Context) -> tuple[str, str | None, list[dict[str, Any]]]:
    """(``[claude] on_failure``, the config error if any, the kodelet hooks the bridge
    runs): what every agent's ``status`` shows of the project."""
    from ..agents.bridge import EVENTS
    from ..listing import hook_rows

    cwd = state(ctx).cwd
    config_error = None
    try:
        on_failure = load_config(Places.resolve(cwd), dict(os.environ)).claude_on_failure
    except ConfigError as exc:
        on_failure, config_error = "block", str(exc)
    wanted = {event.value for event, _ in EVENTS.values()}
    rows: list[dict[str, Any]] = []
    if config_error is None:
        with listing_quietly():
            # The agent runs its own settings files' hooks itself; kodelet runs these.
            rt = make_runtime(ctx, claude="plugins")
            try:
                rows = [
                    r for r in hook_rows(rt) if r["event"] in wanted and r["status"] == "active"
                ]
            finally:
                rt.close()
    return on_failure, config_error, rows

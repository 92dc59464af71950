"""`kodelet hooks` commands: what runs for each event, in which order, and trying it out."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import typer

from .. import jsonio
from ..adapters.cache import DiscoveryCache, cache_disabled
from ..adapters.claude_settings import load_hooks
from ..adapters.discovery import DiscoveredHook, inspect, scan
from ..config import Config, ConfigError, load_config
from ..config_edit import set_key
from ..events import Event, parse_event
from ..listing import hook_rows, suggest
from ..loading import entry_points
from ..places import DISABLE_SUFFIX, Places, hook_file, hooks_dir
from ..runtime import Runtime
from ..wire import WireError, payload_from_wire, result_to_wire
from .common import (
    fail,
    listing_quietly,
    make_runtime,
    print_json,
    printable,
    render_table,
    state,
)

app = typer.Typer(
    help="List, run, enable and disable hooks.",
    no_args_is_help=True,
)

# What a Claude Code command hook exits with to block, so shell scripts read the same.
BLOCKED_EXIT = 2
EVENT_NAMES = ", ".join(e.value for e in Event)


def _event(name: str) -> Event:
    try:
        return parse_event(name)
    except ValueError as exc:
        fail(str(exc), 2)


@app.command("list")
def list_hooks(
    ctx: typer.Context,
    event: str = typer.Option(None, "--event", "-e", help=f"Only this event ({EVENT_NAMES})."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list for scripts."),
    no_exec: bool = typer.Option(
        False,
        "--no-exec",
        help="Run no executable hook, not even to ask its event: list the files, "
        "their trust verdicts and the events cached from earlier runs. "
        "The first look at a checkout you do not trust.",
    ),
) -> None:
    """Show, per event, the hooks in call order and the ones that will not run, with why."""
    only = _event(event) if event is not None else None
    with listing_quietly():
        rt = make_runtime(ctx, executables=not no_exec)
        try:
            files = None
            if no_exec or rt.no_hooks:
                why = "--no-exec" if no_exec else rt.config.sources.get("no_hooks", "--no-hooks")
                files = _files(rt, why)
            rows = hook_rows(rt, only, files)
        finally:
            rt.close()
    if as_json:
        print_json(rows)
        return
    blocks: list[str] = []
    if rt.no_hooks:
        why = rt.config.sources.get("no_hooks", "--no-hooks")
        blocks.append(
            printable(
                f"({why}: native plugins and executable hooks are switched off; only built-ins run)"
            )
        )
    for ev in Event:
        if only is not None and ev is not only:
            continue
        mine = [r for r in rows if r["event"] == ev.value]
        blocks.append(ev.value + ("" if mine else "\n  (no hooks)"))
        if mine:
            blocks[-1] += "\n" + _table(mine)
        if any(r["kind"] != "builtin" and r["status"] == "active" for r in mine):
            blocks[-1] += "".join(f"\n{line}" for line in not_holding(ev.value))
    unknown = [r for r in rows if r["event"] is None]
    if unknown:
        blocks.append("not run (event unknown)\n" + _table(unknown))
    typer.echo("\n\n".join(blocks))


def not_holding(event: str) -> list[str]:
    """What an answer on ``event`` does in no agent it reaches as the original would be
    kept from the model: a redaction written once must not look as if it held there."""
    from ..agents import DIALECTS

    found: dict[str, list[str]] = {}
    for dialect in DIALECTS.values():
        for where, what in dialect.cannot_apply:
            if where == event and "does not hold" in what:
                found.setdefault(what.split(":", 1)[0], []).append(dialect.title)
    return [
        f"  does not hold in {', '.join(titles)}: {answer} (the model gets the original;"
        " `kodelet AGENT status`)"
        for answer, titles in found.items()
    ]


def _files(rt: Runtime, why: str) -> list[DiscoveredHook]:
    """Hook files looked at without running any (events from a trusted cache only)."""
    cache = None
    if not cache_disabled(os.environ):
        cache = DiscoveryCache.for_root(rt.places.global_root, env=os.environ)
    natives = {p.name for p in rt.plugins} | {ep.name for _, ep in entry_points()}
    return inspect(
        rt.places, rt.config, why=why, peek=None if cache is None else cache.peek, natives=natives
    )


def _table(rows: list[dict[str, Any]]) -> str:
    headers = ["#", "NAME", "KIND", "STATUS", "PATH"]
    cells = [
        [
            "-" if r["order"] is None else str(r["order"]),
            r["name"],
            r["kind"],
            r["status"],
            r["path"] or "-",
        ]
        for r in rows
    ]
    notes = [_note(r) for r in rows]
    if any(notes):
        headers.append("REASON")
        for line, note in zip(cells, notes, strict=True):
            line.append(note)
    return render_table(headers, cells, indent="  ")


def _note(row: dict[str, Any]) -> str:
    """A row's reason, its fix, and whether a failure of it lets the call through."""
    parts = [row["reason"]] if row["reason"] else []
    if row.get("fix"):
        parts.append(f"fix: {row['fix']}")
    if row.get("on_failure") == "allow":
        parts.append("fails open: a failure lets the call through")
    return "; ".join(parts)


def _read_payload(source: str | None) -> dict[str, Any]:
    """The payload JSON, read with the same caps and strictness as everything from disk:
    a FIFO, /dev/zero, a huge or deeply nested file is a one-line error, not a hang."""
    if source is None:
        return {}
    where = "stdin" if source == "-" else source
    try:
        raw = (
            jsonio.read_stream(sys.stdin.buffer, "the payload on stdin")
            if source == "-"
            else jsonio.read_file(source, f"payload {source}")
        )
        data = jsonio.loads(raw, f"payload {where}")
    except jsonio.JSONError as exc:
        fail(f"payload {where} is not valid JSON: {exc.detail}" if exc.syntax else str(exc), 2)
    except (jsonio.FileError, ValueError) as exc:
        fail(str(exc), 2)
    except OSError as exc:
        fail(f"cannot read payload {source}: {exc.strerror or exc}", 2)
    if not isinstance(data, dict):
        fail(f"payload {where} must be a JSON object, not {type(data).__name__}", 2)
    return data


@app.command("run")
def run(
    ctx: typer.Context,
    event: str = typer.Argument(..., help=f"The event to dispatch ({EVENT_NAMES})."),
    payload: str = typer.Option(
        None,
        "--payload",
        "-p",
        metavar="FILE",
        help="Payload JSON file, or - for stdin (default: {}).",
    ),
    timeout: float = typer.Option(
        None, "--timeout", metavar="SECONDS", help="Per-hook timeout in seconds."
    ),
    trace: bool = typer.Option(False, "--trace", help="One JSON line per hook called, on stderr."),
    exit_code: bool = typer.Option(
        False, "--exit-code", help="Exit 2 when the merged result is blocked (for shell scripts)."
    ),
    transcript: Path = typer.Option(
        None,
        "--transcript",
        help="Claude Code transcript (.jsonl) Claude Code hooks get as transcript_path "
        "(default: one written from the payload's messages).",
    ),
    daemon: bool = typer.Option(
        False,
        "--daemon",
        help="Dispatch through the project's warm kodelet (started if none runs).",
    ),
) -> None:
    """Dispatch one event through every enabled hook and print the merged result as JSON.

    The payload may be partial: conv_id, cwd (--cwd), invoked_by, tool_user_id and
    tool_input get defaults. Exit status is 0 whatever the hooks decided, unless
    --exit-code asks for 2 on a block. Hooks that cannot run are named on stderr.
    Claude Code hooks get ``transcript_path``: --transcript, else a transcript written
    from the payload's conversation, so a hook that reads it finds the turns."""
    ev = _event(event)
    data = _read_payload(payload)
    given = data.get("event")
    if given is not None:
        if not isinstance(given, str) or _event_or_none(given) is not ev:
            fail(f"payload is for event {given!r}, not {ev.value!r}", 2)
        data["event"] = ev.value
    # The other defaults (conv_id "", invoked_by "main", tool_user_id "", tool_input {})
    # are the payload models' own.
    data.setdefault("cwd", str(state(ctx).cwd))
    try:
        model = payload_from_wire(ev, data, strict=True)
    except WireError as exc:
        fail(f"invalid payload: {exc}", 2)
    model = _with_shown_text(model)
    if transcript is not None and not transcript.is_file():
        fail(f"--transcript {transcript}: not a file", 2)
    path = str(transcript.absolute()) if transcript else _payload_transcript(ctx, model)
    if daemon:
        _run_warm(ctx, ev, model, path, trace=trace, exit_code=exit_code, timeout=timeout)
        return
    rt = make_runtime(ctx, timeout=timeout, warn_skipped=True, transcript_path=path)
    try:
        result = rt.dispatch(model)
    except ValueError as exc:  # over the payload bounds: refused before any hook ran
        fail(f"invalid payload: {exc}", 2)
    finally:
        rt.close()
    if trace:
        for rec in result.trace:
            sys.stderr.write(json.dumps(rec.to_json(), ensure_ascii=False) + "\n")
        sys.stderr.flush()
    print_json(result_to_wire(ev, result.result), one_line=True)
    if exit_code and getattr(result.result, "blocked", False):
        raise typer.Exit(BLOCKED_EXIT)


def _run_warm(
    ctx: typer.Context,
    ev: Event,
    model: Any,
    transcript: str,
    *,
    trace: bool,
    exit_code: bool,
    timeout: float | None,
) -> None:
    """``hooks run --daemon``: the same dispatch, answered by the warm kodelet."""
    from ..warm import control, protocol
    from ..wire import payload_to_wire

    if timeout is not None:
        fail("--timeout cannot be used with --daemon (the warm kodelet's hooks keep theirs)", 2)
    if state(ctx).no_hooks:
        fail("--no-hooks cannot be used with --daemon", 2)
    project = state(ctx).cwd
    body = json.dumps(payload_to_wire(model), ensure_ascii=False).encode()
    try:
        code, out, err = control.dispatch(project, ev.value, body, transcript)
    except protocol.Unavailable as exc:
        fail(f"no warm kodelet for {project}: {exc}", 1)
    if out is None:
        fail(err or "the warm kodelet gave no answer", code or 1)
    if trace:
        for rec in out["trace"]:
            sys.stderr.write(json.dumps(rec, ensure_ascii=False) + "\n")
        sys.stderr.flush()
    print_json(out["result"], one_line=True)
    if exit_code and out["result"].get("blocked"):
        raise typer.Exit(BLOCKED_EXIT)


def _with_shown_text(model: Any) -> Any:
    """An after_tool_call payload as the agents hand it to hooks: a result that carries an
    agent's ``metadata.tool_response`` (as a payload copied from a Claude Code hook
    input does) but no ``metadata.output`` gets the text the model would be shown there,
    so a redaction is tried on the field it rewrites inside the agents."""
    from ..payloads import AfterToolCallPayload
    from ..tooltext import model_text

    if not isinstance(model, AfterToolCallPayload):
        return model
    metadata = model.tool_output.metadata
    if not isinstance(metadata, dict) or "tool_response" not in metadata or "output" in metadata:
        return model
    shown = {"output": model_text(metadata["tool_response"]), **metadata}
    return attrs.evolve(model, tool_output=attrs.evolve(model.tool_output, metadata=shown))


def _payload_transcript(ctx: typer.Context, model: Any) -> str:
    """A transcript of the payload's conversation in a directory removed when the
    command ends; Claude Code never hands a hook an empty ``transcript_path``."""
    import tempfile

    from ..claude.transcript import write_transcript
    from ..payloads import Message

    messages = list(getattr(model, "messages", None) or [])
    if model.event == Event.USER_MESSAGE_SEND:
        messages.append(Message(role="user", content=model.message))
    directory = ctx.with_resource(tempfile.TemporaryDirectory(prefix="kodelet-transcript-"))
    path = os.path.join(directory, f"{model.conv_id or 'session'}.jsonl".replace(os.sep, "_"))
    write_transcript(path, messages, session_id=model.conv_id, cwd=model.cwd)
    return path


def _event_or_none(name: str) -> Event | None:
    try:
        return parse_event(name)
    except ValueError:
        return None


# -- enable / disable -----------------------------------------------------------


def _hook_file(places: Places, name: str) -> tuple[Path, Path] | None:
    """(enabled path, disabled path) of the first place holding hook ``name``, local first."""
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts) or len(parts) not in (1, 3):
        return None
    for _, root in places.roots():
        on = hook_file(root, name)
        off = on.with_name(on.name + DISABLE_SUFFIX)
        if os.path.lexists(on) or os.path.lexists(off):
            return on, off
    return None


def _toggle_file(on: Path, off: Path, enable: bool) -> str:
    src, dst = (off, on) if enable else (on, off)
    verb = "enabled" if enable else "disabled"
    if not os.path.lexists(src):
        return f"already {verb}: {dst}"
    if os.path.lexists(dst):
        fail(f"both {on} and {off} exist; remove one of them by hand", 1)
    try:
        os.rename(src, dst)
    except OSError as exc:
        fail(f"cannot rename {src}: {exc.strerror or exc}", 1)
    return f"{verb.capitalize()} {dst}"


def _toggle(ctx: typer.Context, name: str, enable: bool) -> None:
    st = state(ctx)
    places = Places.resolve(st.cwd)
    try:
        config = load_config(places)
    except ConfigError as exc:
        fail(str(exc), 2)
    found = _hook_file(places, name)
    if found is not None:
        typer.echo(_toggle_file(*found, enable))
        _warn_config_disabled(config, name, enable)
        return
    if name.startswith("claude:"):
        _toggle_claude(places, config, name, enable)
        return
    if name not in {ep.name for _, ep in entry_points()}:
        fail(unknown_name(name, "hook or plugin", _all_names(places), "kodelet hooks list"), 1)
    toggle_plugin(places, config, name, enable)


def unknown_name(name: str, what: str, names: list[str], see: str) -> str:
    """No such name, with the ones the user may have meant (``org/repo/NAME`` for ``NAME``)."""
    close = suggest(name, names)
    hint = f"; did you mean {' or '.join(close)}?" if close else f" (see: {see})"
    return f"no {what} named {name!r}{hint}"


def _all_names(places: Places) -> list[str]:
    """Every hook file name (found without asking any hook) and native plugin name."""
    todo, skipped = scan(places)
    names = [c.name for c, _ in todo] + [h.name.removesuffix(DISABLE_SUFFIX) for h in skipped]
    return names + [ep.name for _, ep in entry_points()]


def toggle_plugin(places: Places, config: Config, name: str, enable: bool) -> None:
    """Enable or disable native plugin ``name`` in the local config.toml, keeping the rest."""
    _toggle_listed(
        places, config, "plugins", config.disabled_plugins, name, enable, f"plugin {name}"
    )


def _toggle_claude(places: Places, config: Config, name: str, enable: bool) -> None:
    """A Claude Code hook lives in a file kodelet does not own: it is switched in
    ``[hooks] disabled`` of the repo-local config.toml instead."""
    if name not in {h.name for h in load_hooks(places, os.environ)}:
        fail(f"no Claude Code hook named {name!r} (see: kodelet hooks list)", 1)
    _toggle_listed(places, config, "hooks", config.disabled_hooks, name, enable, name)


def _toggle_listed(
    places: Places,
    config: Config,
    table: str,
    current: Sequence[str],
    name: str,
    enable: bool,
    label: str,
) -> None:
    """Add ``name`` to, or take it from, ``[<table>] disabled`` of the local config.toml
    (``current``: the effective list). The local key replaces the global one, so it
    carries the whole effective list."""
    if enable == (name not in current):
        typer.echo(f"already {'enabled' if enable else 'disabled'}: {label}")
        _warn_config_disabled(config, name, enable)
        return
    wanted = [n for n in current if n != name] if enable else [*current, name]
    path = places.local_root / "config.toml"
    try:
        set_key(path, table, "disabled", wanted)
    except ConfigError as exc:
        fail(str(exc), 2)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", 1)
    typer.echo(f"{'Enabled' if enable else 'Disabled'} {label} in {path}")
    if table != "hooks":  # [hooks] was just rewritten: ``config`` no longer says what it holds
        _warn_config_disabled(config, name, enable)


def _warn_config_disabled(config: Config, name: str, enable: bool) -> None:
    """Enabling must not look like it worked while a ``[hooks]`` setting still stops the hook."""
    if enable and not config.hook_enabled(name):
        typer.echo(f"kodelet: note: {name} is still disabled by [hooks] in config.toml", err=True)


@app.command("enable")
def enable(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A hook file name, org/repo/name, or a plugin name."),
) -> None:
    """Enable a hook (undo the .disable rename) or a native plugin (in .kodelet/config.toml)."""
    _toggle(ctx, name, True)


@app.command("disable")
def disable(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A hook file name, org/repo/name, or a plugin name."),
) -> None:
    """Disable a hook (renamed to NAME.disable) or a native plugin (in .kodelet/config.toml)."""
    _toggle(ctx, name, False)


@app.command("new")
def new(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The hook's file name, e.g. no-force-push."),
    event: str = typer.Option(..., "--event", "-e", help=f"The event it runs on ({EVENT_NAMES})."),
    lang: str = typer.Option("python", "--lang", help="python (with kodelet.hookkit) or bash."),
    global_: bool = typer.Option(
        False, "--global", help="Write into the global root's hooks/ instead of <cwd>/.kodelet."
    ),
) -> None:
    """Write an executable hook that runs as written, and say how to try it."""
    from ..scaffold.hook import HookExists, HookScaffoldError, create_hook, try_command

    ev = _event(event)
    places = Places.resolve(state(ctx).cwd)
    root = places.global_root if global_ else places.local_root
    try:
        path = create_hook(hooks_dir(root), name, ev, lang)
    except HookExists as exc:
        fail(str(exc), 1)
    except HookScaffoldError as exc:
        fail(str(exc), 2)
    except OSError as exc:
        fail(f"cannot write {hooks_dir(root) / name}: {exc.strerror or exc}", 1)
    typer.echo(f"Created {path} ({lang}, {ev.value})")
    typer.echo(f"Try it: {try_command(ev)}")

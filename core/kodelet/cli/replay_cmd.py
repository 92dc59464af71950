"""``kodelet replay``'s options; the replay machinery is in :mod:`.replay_run`, imported
only when the command runs, so no other command pays for importing it."""

from __future__ import annotations

from pathlib import Path

import typer


def replay(
    ctx: typer.Context,
    paths: list[str] = typer.Argument(
        None,
        metavar="[PATH]...",
        help="Recorded sessions: kodelet session files (JSON, see docs/REPLAY.md) or Claude "
        "Code transcripts (.jsonl), directories (searched recursively) or globs. "
        "Default: the shipped demo.",
        show_default=False,
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON document."),
    model: str = typer.Option(
        None,
        "--model",
        metavar="MODEL",
        help="Model for recipe callbacks such as compact (default: "
        "$KODELET_MODEL, else the offline summarizer).",
        show_default=False,
    ),
    from_claude: Path = typer.Option(
        None,
        "--from-claude",
        metavar="FILE",
        help="Read FILE as a Claude Code transcript, whatever its content looks like.",
        show_default=False,
    ),
    my_hooks: bool = typer.Option(
        False,
        "--my-hooks",
        help="Replay the demo through your own hooks instead of the demo's "
        "(a SESSION or --from-claude always uses yours).",
    ),
    save: Path = typer.Option(
        None,
        "--save",
        metavar="OUT.json",
        help="Also write the (imported) session as a kodelet session file.",
        show_default=False,
    ),
    payload_cwd: str = typer.Option(
        None,
        "--payload-cwd",
        metavar="DIR",
        help="The cwd hooks see in payloads and run in (default: the project, never "
        "the transcript's recorded one).",
        show_default=False,
    ),
    jobs: int = typer.Option(
        None,
        "--jobs",
        "-j",
        metavar="N",
        min=1,
        help="Sessions replayed in parallel processes (default: the number of cores).",
        show_default=False,
    ),
    only_acted: bool = typer.Option(
        False, "--only-acted", help="Show only rows where a hook did something."
    ),
    baseline: Path = typer.Option(
        None,
        "--baseline",
        metavar="CONFIG",
        help="Replay twice, the baseline run reading CONFIG (a config.toml) after the "
        "project's config, and report every call whose outcome changes.",
        show_default=False,
    ),
    compare_without: list[str] = typer.Option(
        None,
        "--compare-without",
        metavar="NAME",
        help="Replay twice, the baseline run without hook or plugin NAME (repeatable), and "
        "report every call whose outcome changes.",
        show_default=False,
    ),
    html: Path = typer.Option(
        None,
        "--html",
        metavar="FILE",
        help="Also write a self-contained HTML report.",
        show_default=False,
    ),
    top: int = typer.Option(10, "--top", metavar="N", min=1, help="Block reasons to list."),
    executor: str = typer.Option(
        "processes",
        "--executor",
        metavar="KIND",
        help="Where sessions replay: 'processes' (this machine) or 'dask' (a cluster).",
    ),
    scheduler: str = typer.Option(
        None,
        "--scheduler",
        metavar="ADDRESS",
        help="The Dask scheduler for --executor dask (tcp://host:8786).",
        show_default=False,
    ),
) -> None:
    """Replay recorded agent sessions through your hooks and show what they decided.

    With no PATH, the shipped demo runs through the demo's own hooks, so every kind
    of action shows; --my-hooks runs it through yours."""
    from .replay_run import replay as run  # the replay machinery, for this command only

    run(
        ctx,
        paths=paths,
        as_json=as_json,
        model=model,
        from_claude=from_claude,
        my_hooks=my_hooks,
        save=save,
        payload_cwd=payload_cwd,
        jobs=jobs,
        only_acted=only_acted,
        baseline=baseline,
        compare_without=compare_without,
        html=html,
        top=top,
        executor=executor,
        scheduler=scheduler,
    )

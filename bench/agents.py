"""kodelet's cost per tool call inside the real Claude Code, Codex and Gemini CLI (the
pinned CLIs of tests/e2e): sessions of many shell calls against the stand-in model
APIs, with kodelet installed each way, against the same hook entries running ``true``.

    python bench/agents.py [--calls 150] [--runs 5] [--agents claude,codex,gemini]
                           [--quick] [--output FILE]

Each agent's project is installed by ``kodelet AGENT install`` (project scope, the
shared default entry ``kodelet-hook claude hook [--agent AGENT]``: the native client on
PATH). The other variants are the same file with each of kodelet's commands replaced:
by ``true`` (the baseline: the agent starts a process per hook, which does nothing),
by this interpreter's lean Python client (``python -I -S .../warm/hook.py`` with the
same arguments); and for Claude Code, ``--scope local --transport http`` (no process
per hook). Every variant's warm kodelet is up and warmed before timing; each session
must make all its calls, none refused, every hook answered by the warm kodelet.

Runs interleave the variants in a rotating order; a variant's cost per tool call is the
median over runs of (its session - that run's ``true`` session) / calls (paired). The
machine's load average is printed before and after each agent. Needs the npm registry
the first time (the CLIs are cached like the e2e tests' ones); not part of
``nox -s bench``, which carries BENCHMARKS.md's section 8c over.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import load_average  # noqa: E402
from kodelet.agents import installs  # noqa: E402
from kodelet.agents.standins import gemini as gemini_api  # noqa: E402
from kodelet.agents.standins import messages  # noqa: E402
from kodelet.agents.standins.base import StandIn  # noqa: E402
from kodelet.claude.installed import unguarded  # noqa: E402
from kodelet.warm import control  # noqa: E402
from kodelet.warm.native_client import NAME as NATIVE  # noqa: E402

from tests.e2e import agent_clis, claude_code  # noqa: E402
from tests.e2e.agent_clis import Agent  # noqa: E402

BIN = Path(sys.executable).parent
BASELINE = "`true` command hook"
NATIVE_ROW = "native client `kodelet-hook` (as installed)"
LEAN_ROW = "lean Python client"
HTTP_ROW = "HTTP transport (`--scope local --transport http`)"
TARGET_MS = 10.0
"""The issue's target per tool call in Codex and Gemini CLI, under this machine's load."""


def claude_launch(api: Any, agent: Agent, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``claude -p go`` against the stand-in Messages API (tests/e2e's environment)."""
    env = claude_code.claude_env(api, agent.home)
    extra = {k: v for k, v in env.items() if k not in ("PATH", "HOME")}
    argv = [str(agent.entry), "-p", "go", "--output-format", "json", "--allowedTools", "Bash"]
    return [*argv, *args], extra


def claude_api(turns: list[Any]) -> StandIn:
    return messages.MessagesAPI(messages.Script(turns))


@attrs.frozen
class Subject:
    """One agent CLI: how to have it, run it, and script one shell call."""

    name: str
    """kodelet's name for it (``kodelet NAME install``)."""
    title: str
    entry: Callable[[], Path]
    launch: agent_clis.Launch
    stand_in: agent_clis.StandInFor
    shell: Callable[[int], Any]
    """The model turn making shell call ``i``: ``true i`` (no two alike, or Gemini CLI
    stops the session as a loop)."""
    done: Any
    args: tuple[str, ...] = ()
    http: bool = False
    settings: Callable[[Agent], None] | None = None
    """Changes the agent's user settings once its launch has written them."""


def no_loop_detection(agent: Agent) -> None:
    """After 30 turns Gemini CLI asks the model how sure it is that the session loops,
    and the stand-in's answer (the smallest its schema takes: 1, with no minimum) ends
    the session: switched off (``model.disableLoopDetection``)."""
    agent.command(types.SimpleNamespace(url="http://127.0.0.1:9"))  # writes the settings
    path = agent.home / ".gemini" / "settings.json"
    settings = json.loads(path.read_text())
    settings.setdefault("model", {})["disableLoopDetection"] = True
    path.write_text(json.dumps(settings))


SUBJECTS = {
    "claude": Subject(
        "claude",
        f"Claude Code {claude_code.VERSION}",
        claude_code.install,
        claude_launch,
        claude_api,
        lambda i: [messages.tool("Bash", command=f"true {i}")],
        [messages.text("done")],
        http=True,
    ),
    "codex": Subject(
        "codex",
        f"Codex {agent_clis.CODEX.version}",
        lambda: agent_clis.install(agent_clis.CODEX),
        agent_clis.codex,
        agent_clis.openai,
        lambda i: [messages.tool("exec_command", cmd=f"true {i}")],
        [messages.text("done")],
        # The rewritten entries carry no review of Codex's; every variant alike.
        args=("--dangerously-bypass-hook-trust",),
    ),
    "gemini": Subject(
        "gemini",
        f"Gemini CLI {agent_clis.GEMINI.version}",
        lambda: agent_clis.install(agent_clis.GEMINI),
        agent_clis.gemini,
        agent_clis.gemini_generate,
        lambda i: [gemini_api.call("run_shell_command", command=f"true {i}", description="run")],
        [gemini_api.text("done")],
        settings=no_loop_detection,
    ),
}


def rewrite(doc: Any, replace: Callable[[str, list[str]], str]) -> int:
    """Replace, in place, the command of every hook entry of ``doc`` (an agent's hook
    file, any layout) that runs ``kodelet-hook`` (behind install's check that it is on
    PATH, or not) with ``replace(the command, the words it runs)``; how many."""
    count = 0
    if isinstance(doc, dict):
        command = doc.get("command")
        words = shlex.split(unguarded(command)) if isinstance(command, str) else []
        if words and words[0] == NATIVE:
            doc["command"] = replace(str(command), words)
            count += 1
        for value in doc.values():
            count += rewrite(value, replace)
    elif isinstance(doc, list):
        for value in doc:
            count += rewrite(value, replace)
    return count


def lean(command: str, words: list[str]) -> str:
    """The same entry (install's check kept) run by this interpreter's lean Python
    client."""
    check = command.removesuffix(unguarded(command))
    return check + shlex.join(installs.python_words(*words[1:]))


def events(doc: Any) -> list[str]:
    """The events a hook file's ``hooks`` table names."""
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    return list(hooks) if isinstance(hooks, dict) else []


def paired(times: Sequence[float], baseline: Sequence[float], calls: int) -> list[float]:
    """Seconds per tool call over the baseline, one figure per run (same run, paired)."""
    return [(t - b) / calls for t, b in zip(times, baseline, strict=True)]


def rotated(names: Sequence[str], run: int) -> list[str]:
    """Run ``run``'s order of the variants: each leads in turn."""
    k = run % len(names)
    return [*names[k:], *names[:k]]


def fail(message: str) -> None:
    raise SystemExit(f"bench/agents.py: {message}")


@attrs.define
class Variant:
    agent: Agent
    client: str | None
    """The client (``native``, ``python``, ``http``) the warm kodelet must count every
    hook of a session as sent by; None: no kodelet (the baseline)."""


def project(root: Path, name: str) -> Path:
    proj = root / name
    (proj / ".kodelet" / "hooks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    return proj


def hook_file(subject: Subject, proj: Path) -> Path:
    return {
        "claude": proj / ".claude" / "settings.json",
        "codex": proj / ".codex" / "hooks.json",
        "gemini": proj / ".gemini" / "settings.json",
    }[subject.name]


def variants(subject: Subject, root: Path) -> tuple[dict[str, Variant], list[str]]:
    """Each way of installing kodelet in its own project and HOME (an agent's user
    settings name one trusted project); and the events installed."""
    entry = subject.entry()
    out: dict[str, Variant] = {}

    def make(name: str, client: str | None, *install: str) -> Agent:
        proj = project(root, f"{subject.name}-{len(out)}")
        home = root / f"home-{subject.name}-{len(out)}"
        home.mkdir()
        agent = Agent(subject.name, entry, proj, home, BIN, subject.launch, subject.stand_in)
        argv = [str(BIN / "kodelet"), subject.name, "install", *install]
        env = {**os.environ, "HOME": str(home)}
        done = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"{' '.join(argv[1:])}: {done.stderr.strip()[-300:]}")
        if subject.settings:
            subject.settings(agent)
        out[name] = Variant(agent, client)
        return agent

    native = make(NATIVE_ROW, "native")
    path = hook_file(subject, native.project)
    doc = json.loads(path.read_text())
    if not rewrite(doc, lambda command, _: command):
        fail(f"`kodelet {subject.name} install` wrote no `{NATIVE}` entry in {path.name}")
    found = shutil.which(NATIVE, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None or Path(found).read_bytes()[:4] != b"\x7fELF":
        fail(f"the `{NATIVE}` on PATH ({found}) is not the native client")
    for name, replace, client in ((BASELINE, lambda *_: "true", None), (LEAN_ROW, lean, "python")):
        agent = make(name, client)
        doc = json.loads(hook_file(subject, agent.project).read_text())
        rewrite(doc, replace)
        hook_file(subject, agent.project).write_text(json.dumps(doc, indent=2) + "\n")
    if subject.http:
        make(HTTP_ROW, "http", "--scope", "local", "--transport", "http")
    out = {BASELINE: out.pop(BASELINE), **out}
    return out, events(json.loads(path.read_text()))


def calls_of(project: Path, env: Mapping[str, str], client: str) -> tuple[int, float]:
    """The hook calls ``client`` sent the project's warm kodelet (-1: none runs), and the
    CPU seconds that kodelet has used (with its waited-for children)."""
    for info in control.running(env):
        if info.get("project") == str(project):
            return int((info.get("clients") or {}).get(client, 0)), cpu(int(info["pid"]))
    return -1, 0.0


def cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and its reaped children (/proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime, stime, cutime, cstime: fields 14-17 of proc(5), counted after the name.
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def session(subject: Subject, variant: Variant, calls: int) -> tuple[float, float]:
    """Seconds of one session of ``calls`` shell calls; the session must make them all,
    none refused, and the warm kodelet must have had its hooks from ``variant.client``."""
    agent = variant.agent
    turns = [subject.shell(i) for i in range(calls)] + [subject.done]
    client = variant.client
    before, cpu_before = calls_of(agent.project, os.environ, client) if client else (0, 0.0)
    with agent.stand_in(turns) as api:
        command, env = agent.command(api, args=subject.args)
        started = time.perf_counter()
        done = subprocess.run(
            command,
            cwd=agent.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120 + 5 * calls,
            stdin=subprocess.DEVNULL,
        )
        took = time.perf_counter() - started
        outputs = api.tool_outputs()
    refused = [o for o in outputs if "kodelet" in o]
    if done.returncode != 0 or len(outputs) != calls or refused:
        fail(
            f"{subject.title} made {len(outputs)} of {calls} calls (exit {done.returncode}, "
            f"refused: {refused[:1]}): {done.stderr[-300:]!r}"
        )
    if client:
        after, cpu_after = calls_of(agent.project, os.environ, client)
        got = after - before
        if got < calls:
            fail(
                f"{subject.title}: the warm kodelet had {got} hooks from {client} for {calls} calls"
            )
    return took, (cpu_after - cpu_before if client else 0.0)


def warm_up(subject: Subject, table: Mapping[str, Variant]) -> None:
    """A short session per variant, which starts its warm kodelet; then wait for each to
    have built its runtime."""
    for variant in table.values():
        if variant.client:
            control.start(variant.agent.project, os.environ)
        session(subject, variant, 3)
    deadline = time.monotonic() + 120
    wanted = {str(v.agent.project) for v in table.values() if v.client}
    while True:
        ready = {i.get("project") for i in control.running(os.environ) if i.get("warmed")}
        if wanted <= ready:
            return
        if time.monotonic() > deadline:
            fail(f"{subject.title}: no warmed kodelet for {sorted(wanted - ready)}")
        time.sleep(0.2)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:+.1f} ms"


def measure(subject: Subject, root: Path, calls: int, runs: int) -> list[str]:
    table, installed = variants(subject, root)
    warm_up(subject, table)
    names = list(table)
    times: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    before = load_average()
    print(f"{subject.title}: load average before {before}", file=sys.stderr)
    for run in range(runs):
        for name in rotated(names, run):
            took, used = session(subject, table[name], calls)
            times[name].append(took)
            cpus[name].append(used)
        print(f"  run {run + 1}/{runs}: {load_average()}", file=sys.stderr)
    after = load_average()
    base = times[BASELINE]
    lines = [
        f"### {subject.title}",
        "",
        f"{calls} shell calls (`true N`) per session, median of {runs} interleaved runs per "
        f"row; kodelet's entries on {', '.join(installed)}; load average (1, 5, 15 min) "
        f"{before} before, {after} after.",
        "",
        "| kodelet installed as | session | per tool call vs `true` (paired) | range over runs "
        "| warm kodelet's CPU per tool call |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in names:
        session_s = statistics.median(times[name])
        if name == BASELINE:
            lines.append(f"| {name} | {session_s:.2f} s | 0 | | |")
            continue
        per = paired(times[name], base, calls)
        used = statistics.median(cpus[name]) / calls * 1000
        lines.append(
            f"| {name} | {session_s:.2f} s | **{ms(statistics.median(per))}** | "
            f"{ms(min(per))} … {ms(max(per))} | {used:.1f} ms |"
        )
    if subject.name in ("codex", "gemini"):
        verdicts = []
        for name in (NATIVE_ROW, LEAN_ROW):
            got = statistics.median(paired(times[name], base, calls)) * 1000
            verdicts.append(f"{name} {'met' if got <= TARGET_MS else '**not met**'}")
        lines += ["", f"Target ≤ +{TARGET_MS:.0f} ms per tool call: {'; '.join(verdicts)}."]
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=150, help="shell calls per session")
    parser.add_argument("--runs", type=int, default=5, help="sessions per variant")
    parser.add_argument("--agents", default="claude,codex,gemini")
    parser.add_argument("--quick", action="store_true", help="20 calls, 2 runs (a smoke run)")
    parser.add_argument("--output", help="also write the rows to this file")
    args = parser.parse_args()
    calls, runs = (20, 2) if args.quick else (args.calls, args.runs)
    chosen = [a.strip() for a in args.agents.split(",") if a.strip()]
    unknown = [a for a in chosen if a not in SUBJECTS]
    if unknown or calls < 1 or runs < 1:
        fail(f"--agents takes {', '.join(SUBJECTS)}; --calls and --runs at least 1")
    root = Path(tempfile.mkdtemp(prefix="kab", dir="/tmp")).resolve()
    os.environ.update(
        {
            "HOME": str(root / "home"),
            "KODELET_HOME": str(root / "kodelet-home"),
            "KODELET_DAEMON_DIR": str(root / "run"),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )
    for var in ("KODELET_DAEMON", "KODELET_NO_HOOKS", "KODELET_NO_CACHE"):
        os.environ.pop(var, None)
    lines: list[str] = []
    try:
        for name in chosen:
            lines += measure(SUBJECTS[name], root, calls, runs)
    finally:
        # An HTTP entry's record goes first, or its warm kodelet restarts to keep the port.
        shutil.rmtree(Path(os.environ["KODELET_HOME"]) / "warm" / "http", ignore_errors=True)
        control.stop_all(os.environ)
        shutil.rmtree(root, ignore_errors=True)
    out = "\n".join(lines)
    print(out)
    if args.output:
        Path(args.output).write_text(out)


if __name__ == "__main__":
    main()

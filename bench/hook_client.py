"""The hook command's own cost per invocation: ``/bin/sh -c true`` (the floor of any
command hook), the lean Python client and the native client (``kodelet-hook``), each
answering the same ``PreToolUse`` call through the same warm kodelet.

    python bench/hook_client.py [--rounds 200] [--instructions] [--no-hooks]

Paired and interleaved: each round runs the three commands in a rotating order, and
each client's figure is the median over rounds of its time minus that round's
``/bin/sh -c true``; the machine's load average is printed before and after. With
``--instructions``, valgrind (cachegrind) counts the instructions of one invocation of
each, client side only (the warm kodelet is another process). The native client is
compiled here from the repository's source, as setup.py builds it. The project has one
executable guard that blocks the call (``--no-hooks``: none, and the call goes ahead),
so the figures include the warm kodelet's answer, the same for every client.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "core"))

from harness import load_average  # noqa: E402
from kodelet.warm import client, control  # noqa: E402

PACKAGE = Path(client.__file__).resolve().parent.parent
CLIENT = str(PACKAGE / "warm" / "hook.py")
GUARD = """#!/bin/sh
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'rm -rf'; then echo '{"blocked": true, "reason": "no rm"}'; fi ;;
esac
"""


def native(where: Path) -> str:
    target = where / "kodelet-hook"
    defines = [f"-DKODELET_PACKAGE={json.dumps(str(PACKAGE))}"]
    defines.append(f"-DKODELET_PYTHON={json.dumps(sys.executable)}")
    source = PACKAGE / "warm" / "native" / "kodelet_hook.c"
    subprocess.run(["cc", "-O2", "-std=c99", "-o", str(target), str(source), *defines], check=True)
    return str(target)


def setup(root: Path, hooks: bool) -> tuple[Path, dict[str, str], bytes]:
    project = root / "project"
    (project / ".kodelet" / "hooks").mkdir(parents=True)
    (project / ".git").mkdir()
    if hooks:
        guard = project / ".kodelet" / "hooks" / "guard"
        guard.write_text(GUARD)
        guard.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KODELET_")}
    env.update(HOME=str(root / "home"), KODELET_DAEMON_DIR=str(root / "run"))
    call = {
        "hook_event_name": "PreToolUse",
        "session_id": "bench",
        "transcript_path": "",
        "cwd": str(project),
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"},
        "tool_use_id": "t",
    }
    return project, env, json.dumps(call).encode()


def once(argv: list[str], project: Path, env: dict[str, str], data: bytes, block: bool) -> float:
    """One invocation's wall time; the answer must block the call when ``block``."""
    start = time.perf_counter()
    done = subprocess.run(argv, input=data, cwd=project, env=env, capture_output=True)
    took = time.perf_counter() - start
    if argv[0] != "/bin/sh" and (done.returncode or bool(done.stdout) != block):
        raise SystemExit(f"{argv[0]} did not answer: {done.stdout!r} {done.stderr!r}")
    return took


def instructions(
    argv: list[str], project: Path, env: dict[str, str], data: bytes, block: bool
) -> int:
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = subprocess.run([*cmd, *argv], input=data, cwd=project, env=env, capture_output=True)
    found = re.search(rb"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None or (argv[0] != "/bin/sh" and bool(done.stdout) != block):
        raise SystemExit(f"valgrind: {done.stderr[-2000:]!r}")
    return int(found.group(1).replace(b",", b""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--no-hooks", action="store_true")
    args = parser.parse_args()
    block = not args.no_hooks
    root = Path(tempfile.mkdtemp(prefix="kodelet-bench-client-"))
    project, env, data = setup(root, hooks=not args.no_hooks)
    commands = {
        "/bin/sh -c true": ["/bin/sh", "-c", "true"],
        "lean Python client": [sys.executable, "-I", "-S", CLIENT, "claude", "hook"],
        "native client": [native(root), "claude", "hook"],
    }
    try:
        once(commands["lean Python client"], project, env, data, block)  # starts the warm kodelet
        deadline = time.monotonic() + 60
        while not [i for i in control.running(env) if i.get("warmed")]:
            if time.monotonic() > deadline:
                raise SystemExit("no warm kodelet started")
            time.sleep(0.1)
        for argv in commands.values():
            once(argv, project, env, data, block)
        print(f"load average before: {load_average()}")
        names = list(commands)
        times: dict[str, list[float]] = {n: [] for n in names}
        for r in range(args.rounds):
            order = names[r % 3 :] + names[: r % 3]
            for name in order:
                times[name].append(once(commands[name], project, env, data, block))
        print(f"load average after:  {load_average()}")
        floor = times[names[0]]
        print(f"{args.rounds} rounds, median per invocation (and over /bin/sh -c true, paired)")
        for name in names:
            own = statistics.median(times[name]) * 1000
            over = statistics.median(t - f for t, f in zip(times[name], floor, strict=True))
            extra = "" if name == names[0] else f"  (+{over * 1000:.2f} ms)"
            print(f"  {name:<20} {own:7.2f} ms{extra}")
        if args.instructions:
            print("instructions per invocation (valgrind, client side)")
            for name, argv in commands.items():
                count = instructions(argv, project, env, data, block)
                print(f"  {name:<20} {count / 1e6:8.2f} M")
    finally:
        control.stop_all(env)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

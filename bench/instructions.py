"""Instructions one warm ``load_runtime()`` costs, counted by valgrind: a figure that
does not move with the machine's load, for comparing two versions of the code.

    python bench/instructions.py [--hooks 50] [--pythonpath DIR]

Runs this file under ``valgrind --tool=cachegrind`` twice (2 and 22 runtimes built
and closed, after one that fills the discovery cache) and prints the difference
divided by 20. ``--pythonpath`` puts another checkout's ``core`` first (e.g. a
``git worktree`` of an older commit). Needs valgrind; not part of ``nox -s bench``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BASH_HOOK = """#!/bin/bash
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null; echo '{}'
"""


def build(runs: int, hooks: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="kodelet-instructions-")).resolve()
    os.environ["HOME"] = str(root / "home")
    os.environ["KODELET_HOME"] = str(root / "home" / ".kodelet")
    from kodelet import load_runtime

    project = root / "project"
    hooks_dir = project / ".kodelet" / "hooks"
    hooks_dir.mkdir(parents=True)
    for i in range(hooks):
        path = hooks_dir / f"h{i:02}"
        path.write_text(BASH_HOOK)
        path.chmod(0o755)
    home = root / "home-build"
    for _ in range(runs + 1):
        load_runtime(cwd=project, home=home, entry_points=False).close()
    shutil.rmtree(root)


def count(runs: int, hooks: int, pythonpath: str | None) -> int:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    argv += [sys.executable, __file__, "--child", str(runs), "--hooks", str(hooks)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hooks", type=int, default=50)
    parser.add_argument("--pythonpath", help="a checkout's core/ to import kodelet from")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        build(args.child, args.hooks)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    few, many = (count(n, args.hooks, args.pythonpath) for n in (2, 22))
    print(f"{(many - few) // 20:,} instructions per warm load_runtime() with {args.hooks} hooks")


if __name__ == "__main__":
    main()

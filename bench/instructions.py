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


def build(runs: int, hooks: int) -> None:
    """The child: the same 50 bash hooks as the discovery benchmark in bench/run.py."""
    from harness import write_hook
    from run import BASH_HOOK, load_runtime, project

    root = Path(tempfile.mkdtemp(prefix="kodelet-instructions-")).resolve()
    os.environ["HOME"] = str(root / "home")
    os.environ["KODELET_HOME"] = str(root / "home" / ".kodelet")
    proj = project(root, "project")
    for i in range(hooks):
        write_hook(proj / ".kodelet" / "hooks", f"h{i:02}", BASH_HOOK)
    home = root / "home-build"
    for _ in range(runs + 1):
        load_runtime(cwd=proj, home=home, entry_points=False).close()
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

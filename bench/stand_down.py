"""kodelet installed at two scopes of one agent: what the user-scope entry pays, on every
hook call, to learn that the project's entry does the work (and stand down), against
the one read any such check must make: the project's hook file read and parsed.

Part of ``nox -s bench`` (section 7b of BENCHMARKS.md); ``python bench/stand_down.py``
prints it alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import X, compare, us
from kodelet.adapters.claude_settings import read_settings_file
from kodelet.agents import DIALECTS
from kodelet.agents.installs import worker

PY = sys.executable


def _agent(root: Path, name: str) -> tuple[dict[str, Any], dict[str, str], Path]:
    """A git project with kodelet installed for ``name`` at project and user scope, as the
    agent would see it: (a hook input, the hook's environment, the project's hook file)."""
    project = root / f"stand-{name}"
    (project / ".kodelet" / "hooks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {**os.environ, "PATH": f"{Path(PY).parent}:/usr/bin:/bin"}
    for scope in ("project", "user"):
        argv = [PY, "-m", "kodelet", name, "install", "--scope", scope]
        subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True)
    dialect = DIALECTS[name]
    if name == "codex":  # what Codex writes once the user trusts the folder
        config = dialect.user_path(dialect.trust_config, env)
        trust = f'[projects."{project}"]\ntrust_level = "trusted"\n\n'
        config.write_text(trust + config.read_text())
    if dialect.project_env:
        env[dialect.project_env] = str(project)
    data = {
        "hook_event_name": dialect.agent_event("PreToolUse"),
        "cwd": str(project),
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }
    return data, env, dialect.config_path("project", project, env)


def stand_down(root: Path, scale: float) -> list[str]:
    out = [
        "## 7b. Which entry does the work (kodelet installed at two scopes)",
        "",
        "Per hook call, in one process (as in the warm kodelet): the user-scope entry's "
        "check that the project entry runs (`kodelet.agents.installs.worker`) vs reading "
        "and parsing the project's hook file once.",
        "",
        "| agent | stand-down check | one read of the project file | ratio |",
        "|---|---:|---:|---:|",
    ]
    ops = max(50, int(200 * scale))
    for name in ("claude", "codex"):
        data, env, path = _agent(root, name)
        dialect = DIALECTS[name]

        def lines(dialect: Any = dialect) -> list[list[str]]:
            return [[dialect.process_names[0], "exec"]]

        def check(data: Any = data, env: Any = env, dialect: Any = dialect) -> Any:
            return worker(dialect, data, env, lines, ("project",))

        def read(path: Path = path) -> Any:
            return read_settings_file(path)

        assert check() == "project", f"{name}: the project entry is not sure to run"
        pair = compare(check, read, ops=ops, runs=9)
        out.append(
            f"| {dialect.title} | {us(pair.subject)} | {us(pair.baseline)} | {pair.ratio:.1f}{X} |"
        )
    out.append("")
    return out


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="kodelet-bench-") as tmp:
        where = Path(tmp).resolve()
        os.environ["HOME"] = str(where / "home")
        os.environ["KODELET_HOME"] = str(where / "home" / ".kodelet")
        print("\n".join(stand_down(where, 1.0)))

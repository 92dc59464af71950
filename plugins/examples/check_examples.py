"""Check the example plugins as a user meets them: installed from wheels, driven by the CLI.

Run by ``nox -s examples`` inside a venv where kodelet and the three native
examples were installed from freshly built wheels. Every command runs with
HOME and KODELET_HOME in a temp dir, in a temp project directory. Exits
non-zero, naming the failed check, on the first problem.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXPECTED = {
    "guardrail": "kodelet-plugin-guardrail",
    "audit-log": "kodelet-plugin-audit-log",
    "lint-reminder": "kodelet-plugin-lint-reminder",
}
BIN = Path(sys.executable).parent


class CheckFailed(Exception):
    pass


def run(
    args: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        args, input=stdin, env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        raise CheckFailed(
            f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def kodelet(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> str:
    return run([str(BIN / "kodelet"), *args], env, cwd, stdin).stdout


def check(condition: bool, what: str, detail: Any = "") -> None:
    if not condition:
        raise CheckFailed(f"{what}\n{detail}")
    print(f"ok: {what}")


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="kodelet-examples-"))
    try:
        home = tmp / "home"
        home.mkdir()
        project = tmp / "project"
        project.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("KODELET_")}
        env.update(HOME=str(home), KODELET_HOME=str(home / ".kodelet"), PYTHONDONTWRITEBYTECODE="1")
        checks(env, project, tmp)
    except CheckFailed as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("examples: all checks passed")
    return 0


def checks(env: dict[str, str], project: Path, tmp: Path) -> None:
    listed = json.loads(kodelet(env, project, "plugins", "list", "--json"))
    by_name = {row["name"]: row for row in listed}
    for name, dist in EXPECTED.items():
        row = by_name.get(name)
        check(
            row is not None and row["version"] == "0.1.0" and not row["error"],
            f"plugins list --json shows {name} ({dist}) 0.1.0",
            json.dumps(listed, indent=1),
        )

    payload = {"tool_name": "bash", "tool_input": {"command": "rm -rf /"}}
    out = json.loads(
        kodelet(
            env, project, "hooks", "run", "before_tool_call", "-p", "-", stdin=json.dumps(payload)
        )
    )
    check(
        out == {"blocked": True, "reason": "Security policy: 'rm -rf' is not allowed"},
        "hooks run before_tool_call with rm -rf / is blocked by the guardrail",
        out,
    )

    kodelet(
        env,
        project,
        "hooks",
        "run",
        "after_tool_call",
        "-p",
        "-",
        stdin=json.dumps(
            {"tool_name": "bash", "tool_output": {"toolName": "bash", "success": True}}
        ),
    )
    log = Path(env["KODELET_HOME"]) / "audit.log"
    lines = log.read_text().splitlines() if log.exists() else []
    check(
        any(json.loads(line)["event"] == "after_tool_call" for line in lines),
        f"the audit log received a line ({log})",
        lines,
    )

    stop = {"messages": [{"role": "assistant", "content": "used file_edit on a.py"}]}
    out = json.loads(
        kodelet(env, project, "hooks", "run", "agent_stop", "-p", "-", stdin=json.dumps(stop))
    )
    check(
        out.get("follow_up_messages") == ["Please run the linter to check for any issues."],
        "lint-reminder follows up on agent_stop after edits",
        out,
    )

    added = kodelet(
        env,
        project,
        "plugins",
        "add",
        str(HERE / "code-review-repo"),
        "--name",
        "examples/code-review",
    )
    check("Hooks:   2" in added, "plugins add installs the example repository", added)
    conflict = {
        "tool_name": "file_write",
        "tool_input": {"path": "a.py", "content": "<<<<<<< HEAD\n"},
    }
    proc = run(
        [str(BIN / "kodelet"), "hooks", "run", "before_tool_call", "-p", "-", "--trace"],
        env,
        project,
        json.dumps(conflict),
    )
    trace = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    check(
        json.loads(proc.stdout).get("blocked") is True
        and any(
            t["name"] == "examples/code-review/validate-diff" and t["outcome"] == "blocked"
            for t in trace
        ),
        "examples/code-review/validate-diff runs under its org/repo name and blocks",
        proc.stdout + proc.stderr,
    )
    review = {
        "recipe_name": "examples/code-review/review",
        "messages": [{"role": "assistant", "content": "Fine.\n## Summary\nApprove."}],
    }
    proc = run(
        [str(BIN / "kodelet"), "hooks", "run", "agent_stop", "-p", "-", "--trace"],
        env,
        project,
        json.dumps(review),
    )
    posted = Path(env["KODELET_HOME"]) / "review-summaries.jsonl"
    check(
        '"examples/code-review/post-review-summary"' in proc.stderr and posted.exists(),
        "examples/code-review/post-review-summary acts for examples/code-review/review",
        proc.stderr,
    )

    kodelet(env, tmp, "plugins", "new", "demo")
    demo = tmp / "kodelet-plugin-demo"
    run(
        [sys.executable, "-m", "pip", "install", "--no-deps", str(demo)],
        env,
        tmp,
    )
    try:
        tests = run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], env, demo
        )
        check(
            " passed" in tests.stdout, "the scaffolded plugin's generated tests pass", tests.stdout
        )
        listed = json.loads(kodelet(env, project, "plugins", "list", "--json"))
        check(
            any(r["name"] == "demo" and r["version"] == "0.1.0" for r in listed),
            "the scaffolded plugin, installed, shows in plugins list",
            listed,
        )
    finally:
        run([sys.executable, "-m", "pip", "uninstall", "-y", "kodelet-plugin-demo"], env, tmp)


if __name__ == "__main__":
    sys.exit(main())

"""Python hook files as the docs and ``kodelet hooks new`` show them, a ``python3`` that
cannot import kodelet, and the commands that run them as users and agents do."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from kodelet.testing import write_hook

from .claude import pre_tool
from .cli import CLIENT, bridge, decision

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "docs" / "PROTOCOL.md"
REDACT = ROOT / "core" / "kodelet" / "replay" / "demo" / "redact.py"
KEY = "AKIAIOSFODNN7EXAMPLE"
ENV_PYTHON = "#!/usr/bin/env python3\n"

GUARD_BODY = """\
    if "rm -rf /" in payload.get("tool_input", {}).get("command", ""):
        return {"blocked": True, "reason": "template guard says no"}
"""
REDACT_BODY = """\
    import re
    output = payload.get("tool_output") or {}
    text = json.dumps(output)
    masked = re.sub(r"AKIA[0-9A-Z]{16}", "[redacted]", text)
    if masked != text:
        return {"output": json.loads(masked)}
"""


def protocol_guard() -> str:
    """docs/PROTOCOL.md's ``kodelet.hookkit`` hook, as a user copies it."""
    text = PROTOCOL.read_text(encoding="utf-8")
    section = text.split("## Writing a hook in Python", 1)[1]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)[:1]
    assert block.startswith(ENV_PYTHON) and "from kodelet import hookkit" in block
    return str(block)


def demo_redaction() -> str:
    """The demo's redaction on ``kodelet.hookkit`` (docs/REPLAY.md), as a hook file."""
    return ENV_PYTHON + REDACT.read_text(encoding="utf-8")


def foreign_python(where: Path) -> Path:
    """A directory whose ``python3`` is a working Python that cannot import kodelet."""
    where.mkdir(parents=True, exist_ok=True)
    base = getattr(sys, "_base_executable", "") or shutil.which("python3") or sys.executable
    stub = where / "python3"
    stub.write_text(f'#!/bin/sh\nexec {base} -I -S "$@"\n')
    stub.chmod(0o755)
    probe = subprocess.run([str(stub), "-c", "import kodelet"], capture_output=True, text=True)
    assert "No module named 'kodelet'" in probe.stderr, probe.stderr
    return where


def path_without_kodelet(tmp_path: Path) -> str:
    return f"{foreign_python(tmp_path / 'foreign')}:/usr/bin:/bin"


def filled_template(kodelet: list[str], project: Path, name: str, event: str, body: str) -> Path:
    """``kodelet hooks new`` as a user runs it, its handler then filled in."""
    done = subprocess.run(
        [*kodelet, "hooks", "new", name, "--event", event],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    path = project / ".kodelet" / "hooks" / name
    text = path.read_text(encoding="utf-8")
    assert text.startswith(ENV_PYTHON)
    marker = "    return None\n\n\ndef main"
    assert marker in text
    path.write_text(text.replace(marker, body + marker, 1), encoding="utf-8")
    return path


def bash_payload(command: str) -> dict[str, Any]:
    return {"tool_name": "bash", "tool_input": {"command": command}}


def read_payload(output: str) -> dict[str, Any]:
    return {
        "tool_name": "bash",
        "tool_input": {"command": "cat .env"},
        "tool_output": {"toolName": "bash", "success": True, "metadata": {"output": output}},
    }


def hooks_run(
    kodelet: list[str],
    project: Path,
    event: str,
    payload: dict[str, Any],
    env: dict[str, str],
    *flags: str,
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """``kodelet hooks run EVENT --trace``: the merged result, the trace, stderr."""
    done = subprocess.run(
        [*kodelet, "hooks", "run", event, "-p", "-", "--trace", *flags],
        input=json.dumps(payload),
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    trace = [json.loads(x) for x in done.stderr.splitlines() if x.startswith("{")]
    return json.loads(done.stdout), trace, done.stderr


def outcomes(trace: list[dict[str, Any]]) -> dict[str, str]:
    return {r["name"]: r["outcome"] for r in trace}


def assert_guarded(
    kodelet: list[str], project: Path, env: dict[str, str], guards: dict[str, str]
) -> None:
    """Each hook in ``guards`` (its name, then its event), run alone (the others renamed
    ``.disable``): a ``before_tool_call`` one blocks ``rm -rf /``, an ``after_tool_call``
    one masks the AWS key in the output, and no hook is skipped."""
    hooks = project / ".kodelet" / "hooks"
    for name, event in guards.items():
        others = [n for n in guards if n != name]
        for other in others:
            (hooks / other).rename(hooks / f"{other}.disable")
        try:
            if event == "before_tool_call":
                result, trace, err = hooks_run(
                    kodelet, project, event, bash_payload("rm -rf /"), env
                )
                assert result["blocked"] is True, err
                assert outcomes(trace) == {name: "blocked"}, err
            else:
                output = f"KEY={KEY}\n"
                result, trace, err = hooks_run(kodelet, project, event, read_payload(output), env)
                assert KEY not in json.dumps(result), err
                assert result["output"]["metadata"]["output"] == "KEY=[redacted]\n", err
                assert outcomes(trace) == {name: "modified"}, err
            assert "skipped" not in err, err
        finally:
            for other in others:
                (hooks / f"{other}.disable").rename(hooks / other)


def env_for(path: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PATH"] = path
    env.update(extra)
    return env


def docs_hooks(project: Path) -> dict[str, str]:
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "protocol-guard", protocol_guard())
    write_hook(hooks, "demo-redact", demo_redaction())
    return {"protocol-guard": "before_tool_call", "demo-redact": "after_tool_call"}


def lean_client(
    project: Path,
    env: dict[str, str],
    command: str,
    python: str = sys.executable,
    lean: str = CLIENT,
) -> str | None:
    """One Claude Code ``PreToolUse`` call through the lean client (``lean``, run by
    ``python``), as Claude Code makes it: the permission decision's reason, or None when
    the call may go ahead."""
    done = bridge(
        pre_tool(project, command), cwd=project, env=env, lean=True, python=python, client=lean
    )
    return decision(done)

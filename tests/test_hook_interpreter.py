"""Python hooks as the docs and ``kodelet hooks new`` show them run whatever ``python3``
the PATH holds: kodelet's kind of hook (``#!/usr/bin/env python3`` importing kodelet)
runs under kodelet's own Python, per call and served, in-process, through the warm
kodelet and the lean client, in a project's hooks and a plugin repository's; the rest
run as written; and a hook that still cannot import says which module and the fix.

The hooks themselves are the docs' own (docs/PROTOCOL.md's guard, the demo's redaction)
and what ``kodelet hooks new`` writes, filled in; tests/test_installs.py runs the same
hooks under kodelet installed from its wheel by venv, pipx and ``uv tool``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kodelet.warm import client

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "docs" / "PROTOCOL.md"
REDACT = ROOT / "core" / "kodelet" / "replay" / "demo" / "redact.py"
CLIENT = os.path.join(os.path.dirname(os.path.realpath(client.__file__)), "hook.py")
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


def put(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


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


KODELET = [sys.executable, "-m", "kodelet"]


@pytest.fixture
def repo(project: Path) -> Path:
    (project / ".git").mkdir()
    return project


def docs_hooks(project: Path) -> dict[str, str]:
    hooks = project / ".kodelet" / "hooks"
    put(hooks, "protocol-guard", protocol_guard())
    put(hooks, "demo-redact", demo_redaction())
    return {"protocol-guard": "before_tool_call", "demo-redact": "after_tool_call"}


def test_the_docs_hookkit_hooks_run_when_python3_cannot_import_kodelet(
    repo: Path, tmp_path: Path
) -> None:
    env = env_for(path_without_kodelet(tmp_path))
    assert_guarded(KODELET, repo, env, docs_hooks(repo))


def test_hooks_new_python_hooks_run_when_python3_cannot_import_kodelet(
    repo: Path, tmp_path: Path
) -> None:
    filled_template(KODELET, repo, "tpl-guard", "before_tool_call", GUARD_BODY)
    filled_template(KODELET, repo, "tpl-redact", "after_tool_call", REDACT_BODY)
    env = env_for(path_without_kodelet(tmp_path))
    assert_guarded(
        KODELET, repo, env, {"tpl-guard": "before_tool_call", "tpl-redact": "after_tool_call"}
    )


def test_a_plugin_repositorys_hookkit_hooks_run_under_kodelets_python(
    repo: Path, tmp_path: Path, kodelet_home: Path
) -> None:
    hooks = kodelet_home / "plugins" / "acme@guards" / "hooks"
    put(hooks, "guard", protocol_guard())
    env = env_for(path_without_kodelet(tmp_path))
    result, trace, err = hooks_run(KODELET, repo, "before_tool_call", bash_payload("rm -rf /"), env)
    assert result["blocked"] is True, err
    assert outcomes(trace) == {"acme/guards/guard": "blocked"}, err


WHICH = """#!/usr/bin/env python3
import os, sys
IMPORT


def seen():
    name = os.path.basename(sys.argv[0]) + "-" + sys.argv[1]
    with open(os.path.join(os.environ["SEEN"], name), "w") as fh:
        fh.write(sys.executable)


if sys.argv[1] == "hook":
    print("before_tool_call", *os.environ.get("KODELET_HOOK_PROTOCOLS", "").split()[:1])
elif sys.argv[1] == "run":
    sys.stdin.read()
    seen()
else:
    for line in sys.stdin:
        seen()
        print("{}", flush=True)
"""


@pytest.mark.parametrize("persistent", [True, False])
def test_only_hooks_importing_kodelet_change_interpreter(
    repo: Path, tmp_path: Path, persistent: bool
) -> None:
    """A Python hook that imports no kodelet keeps the PATH's ``python3`` (and its
    packages); one that does runs under kodelet's own, per call and served."""
    from kodelet import load_runtime
    from kodelet.payloads import BeforeToolCallPayload

    foreign = foreign_python(tmp_path / "foreign")
    seen = tmp_path / "seen"
    seen.mkdir()
    hooks = repo / ".kodelet" / "hooks"
    put(hooks, "plain", WHICH.replace("IMPORT", ""))
    put(hooks, "kit", WHICH.replace("IMPORT", "from kodelet import hookkit"))
    env = env_for(f"{foreign}:/usr/bin:/bin", SEEN=str(seen))
    with load_runtime(cwd=repo, env=env, persistent=persistent, entry_points=False) as runtime:
        done = runtime.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={}))
    assert [(r.name, r.outcome.value) for r in done.trace] == [
        ("kit", "no-action"),
        ("plain", "no-action"),
    ]
    verb = "serve" if persistent else "run"
    plain = (seen / f"plain-{verb}").read_text()
    assert plain != sys.executable and "python" in os.path.basename(plain)
    assert (seen / f"kit-{verb}").read_text() == sys.executable


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
    data = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "transcript_path": "",
        "cwd": str(project),
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "toolu_1",
    }
    done = subprocess.run(
        [python, "-I", "-S", lean, "claude", "hook"],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return None
    return str(json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"])


def test_the_lean_client_and_the_warm_kodelet_run_the_docs_hook(repo: Path, tmp_path: Path) -> None:
    """The lean client answers the first call in-process (importing kodelet only then)
    and starts the warm kodelet, which answers the next: both run the hook under
    kodelet's Python, whatever ``python3`` the agent's PATH holds."""
    from kodelet.warm import control

    put(repo / ".kodelet" / "hooks", "protocol-guard", protocol_guard())
    env = env_for(path_without_kodelet(tmp_path))
    env.pop("KODELET_DAEMON", None)
    reason = "refusing to delete everything"
    assert lean_client(repo, env, "rm -rf /") == reason  # in-process; starts the warm one
    deadline = 60.0
    start = time.monotonic()
    while not [i for i in control.running(env) if "pid" in i]:
        assert time.monotonic() - start < deadline, "no warm kodelet started"
        time.sleep(0.05)
    assert lean_client(repo, env, "rm -rf /") == reason
    assert lean_client(repo, env, "ls") is None
    (info,) = [i for i in control.running(env) if "pid" in i]
    assert control.ask(info["socket"], "status")["calls"] >= 2
    for flags in ((), ("--daemon",)):
        result, trace, err = hooks_run(
            KODELET, repo, "before_tool_call", bash_payload("rm -rf /"), env, *flags
        )
        assert result == {"blocked": True, "reason": reason}, err
        assert outcomes(trace) == {"protocol-guard": "blocked"}, err


def test_a_hook_that_cannot_import_kodelet_names_the_module_and_the_fix(
    repo: Path, tmp_path: Path
) -> None:
    """A hook whose ``#!`` line names a Python by path runs as written; when that Python
    lacks kodelet, the reason names the module and the fix, not a traceback."""
    foreign = foreign_python(tmp_path / "foreign") / "python3"
    put(repo / ".kodelet" / "hooks", "pinned", f"#!{foreign}\n" + protocol_guard())
    env = env_for(path_without_kodelet(tmp_path))
    _, _, err = hooks_run(KODELET, repo, "before_tool_call", bash_payload("rm -rf /"), env)
    (line,) = [x for x in err.splitlines() if "pinned" in x]
    assert "cannot import 'kodelet'" in line, err
    assert "fix: make its first line #!/usr/bin/env python3" in line, err
    assert "Traceback" not in line and "File " not in line, err


def test_a_hook_importing_a_module_kodelets_python_lacks_names_it_and_the_fix(
    repo: Path, tmp_path: Path
) -> None:
    text = protocol_guard().replace(
        "from kodelet import hookkit", "import nosuchmod_xyz\nfrom kodelet import hookkit"
    )
    put(repo / ".kodelet" / "hooks", "needs-more", text)
    env = env_for(path_without_kodelet(tmp_path))
    _, _, err = hooks_run(KODELET, repo, "before_tool_call", bash_payload("rm -rf /"), env)
    (line,) = [x for x in err.splitlines() if "needs-more" in x]
    assert f"kodelet's own Python ({sys.executable})" in line, err
    assert "cannot import 'nosuchmod_xyz'" in line, err
    assert "pipx inject kodelet nosuchmod_xyz" in line, err


def test_a_hook_no_longer_executable_is_not_run_by_kodelets_python(
    repo: Path, tmp_path: Path
) -> None:
    """kodelet's Python starts nothing the system would refuse to: a hook whose
    execute bit is gone since discovery fails as it would have, and is not run."""
    from kodelet import load_runtime
    from kodelet.payloads import BeforeToolCallPayload

    seen = tmp_path / "seen"
    seen.mkdir()
    hook = put(repo / ".kodelet" / "hooks", "kit", WHICH.replace("IMPORT", "import kodelet"))
    env = env_for(path_without_kodelet(tmp_path), SEEN=str(seen))
    with load_runtime(cwd=repo, env=env, persistent=False, entry_points=False) as runtime:
        hook.chmod(0o644)
        done = runtime.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={}))
    (record,) = done.trace
    assert record.name == "kit" and "Permission denied" in str(record.error)
    assert not (seen / "kit-run").exists()


def test_a_failed_import_cached_by_an_older_kodelet_is_asked_again(
    repo: Path, tmp_path: Path, kodelet_home: Path
) -> None:
    """An older kodelet cached the guard's failed ``hook`` query (its Python could not
    import kodelet) under the file's stat key: after the upgrade the guard is asked
    again and runs, rather than staying skipped until someone touches the file."""
    from kodelet.adapters.cache import CACHE_FILE, _key_of
    from kodelet.places import cache_dir

    guard = put(repo / ".kodelet" / "hooks", "protocol-guard", protocol_guard())
    stale = {
        "format": 1,
        "entries": {
            os.path.realpath(guard): {
                "stat": _key_of(os.stat(guard)),
                "error": "'hook' query exited with status 1: No module named 'kodelet'",
            }
        },
    }
    directory = cache_dir(kodelet_home)
    directory.mkdir(parents=True, mode=0o700)
    (directory / CACHE_FILE).write_text(json.dumps(stale))
    env = env_for(path_without_kodelet(tmp_path))
    result, trace, err = hooks_run(KODELET, repo, "before_tool_call", bash_payload("rm -rf /"), env)
    assert result["blocked"] is True, err
    assert outcomes(trace) == {"protocol-guard": "blocked"}, err


def test_a_caught_import_error_is_not_taken_for_the_cause(repo: Path, tmp_path: Path) -> None:
    """A hook that logs a failed optional import and then fails for another reason
    keeps that reason: only a traceback ending in the import is explained."""
    text = protocol_guard().replace(
        "from kodelet import hookkit",
        "from kodelet import hookkit\n"
        "import sys\n"
        "sys.stderr.write(\"ModuleNotFoundError: No module named 'ujson'\\n\")\n"
        "sys.exit('the real reason')",
    )
    put(repo / ".kodelet" / "hooks", "noisy", text)
    env = env_for(path_without_kodelet(tmp_path))
    _, _, err = hooks_run(KODELET, repo, "before_tool_call", bash_payload("rm -rf /"), env)
    (line,) = [x for x in err.splitlines() if "noisy" in x]
    assert "the real reason" in line and "fix:" not in line, err


@pytest.mark.parametrize("persistent", [True, False])
def test_an_import_failing_in_a_call_names_the_module_served_or_per_call(
    repo: Path, tmp_path: Path, persistent: bool
) -> None:
    from kodelet import load_runtime
    from kodelet.payloads import BeforeToolCallPayload

    text = protocol_guard().replace(
        "def check(payload):\n", "def check(payload):\n    import nosuchmod_lazy  # noqa\n"
    )
    assert "nosuchmod_lazy" in text
    put(repo / ".kodelet" / "hooks", "lazy", text)
    env = env_for(path_without_kodelet(tmp_path))
    with load_runtime(cwd=repo, env=env, persistent=persistent, entry_points=False) as runtime:
        done = runtime.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={}))
    (record,) = done.trace
    assert "cannot import 'nosuchmod_lazy'" in str(record.error), record
    assert f"kodelet's own Python ({sys.executable})" in str(record.error), record
    assert "pipx inject kodelet nosuchmod_lazy" in str(record.error), record

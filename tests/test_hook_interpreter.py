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
import sys
import time
from pathlib import Path

import pytest
from kodelet.testing import write_hook

from tests.kit.python_hooks import (
    GUARD_BODY,
    REDACT_BODY,
    assert_guarded,
    bash_payload,
    docs_hooks,
    env_for,
    filled_template,
    foreign_python,
    hooks_run,
    lean_client,
    outcomes,
    path_without_kodelet,
    protocol_guard,
)

KODELET = [sys.executable, "-m", "kodelet"]


@pytest.fixture
def repo(project: Path) -> Path:
    (project / ".git").mkdir()
    return project


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
    write_hook(hooks, "guard", protocol_guard())
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
    write_hook(hooks, "plain", WHICH.replace("IMPORT", ""))
    write_hook(hooks, "kit", WHICH.replace("IMPORT", "from kodelet import hookkit"))
    env = env_for(f"{foreign}:/usr/bin:/bin", SEEN=str(seen))
    with load_runtime(cwd=repo, env=env, persistent=persistent, entry_points=False) as runtime:
        done = runtime.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={}))
    assert [(r.name, r.outcome.value) for r in done.trace] == [
        ("kit", "no-action"),
        ("plain", "no-action"),
        ("builtin:protect-kodelet", "no-action"),
    ]
    verb = "serve" if persistent else "run"
    plain = (seen / f"plain-{verb}").read_text()
    assert plain != sys.executable and "python" in os.path.basename(plain)
    assert (seen / f"kit-{verb}").read_text() == sys.executable


def test_the_lean_client_and_the_warm_kodelet_run_the_docs_hook(repo: Path, tmp_path: Path) -> None:
    """The lean client answers the first call in-process (importing kodelet only then)
    and starts the warm kodelet, which answers the next: both run the hook under
    kodelet's Python, whatever ``python3`` the agent's PATH holds."""
    from kodelet.warm import control

    write_hook(repo / ".kodelet" / "hooks", "protocol-guard", protocol_guard())
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
    write_hook(repo / ".kodelet" / "hooks", "pinned", f"#!{foreign}\n" + protocol_guard())
    env = env_for(path_without_kodelet(tmp_path))
    _, _, err = hooks_run(KODELET, repo, "before_tool_call", bash_payload("rm -rf /"), env)
    # The skip says why and the fix once; the block in its place (fail-closed) follows.
    (line,) = [x for x in err.splitlines() if "pinned" in x and " skipped: " in x]
    assert "cannot import 'kodelet'" in line, err
    assert "fix: make its first line #!/usr/bin/env python3" in line, err
    assert "Traceback" not in line and "File " not in line, err


def test_a_hook_importing_a_module_kodelets_python_lacks_names_it_and_the_fix(
    repo: Path, tmp_path: Path
) -> None:
    text = protocol_guard().replace(
        "from kodelet import hookkit", "import nosuchmod_xyz\nfrom kodelet import hookkit"
    )
    write_hook(repo / ".kodelet" / "hooks", "needs-more", text)
    env = env_for(path_without_kodelet(tmp_path))
    _, _, err = hooks_run(KODELET, repo, "before_tool_call", bash_payload("rm -rf /"), env)
    # The skip says why and the fix once; the block in its place (fail-closed) follows.
    (line,) = [x for x in err.splitlines() if "needs-more" in x and " skipped: " in x]
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
    hook = write_hook(repo / ".kodelet" / "hooks", "kit", WHICH.replace("IMPORT", "import kodelet"))
    env = env_for(path_without_kodelet(tmp_path), SEEN=str(seen))
    with load_runtime(cwd=repo, env=env, persistent=False, entry_points=False) as runtime:
        hook.chmod(0o644)
        done = runtime.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={}))
    (record,) = done.trace
    assert record.name == "kit" and "Permission denied" in str(record.error)
    assert not (seen / "kit-run").exists()


def test_an_edit_or_a_chmod_between_calls_counts_from_the_next_call(
    repo: Path, tmp_path: Path
) -> None:
    """The interpreter is chosen again whenever the file changed since the last call:
    a hook that stops importing kodelet runs as written from its next call, and one
    whose execute bit is gone is not run at all, though an earlier call ran it."""
    from kodelet import load_runtime
    from kodelet.payloads import BeforeToolCallPayload

    foreign = foreign_python(tmp_path / "foreign")
    seen = tmp_path / "seen"
    seen.mkdir()
    hook = write_hook(repo / ".kodelet" / "hooks", "kit", WHICH.replace("IMPORT", "import kodelet"))
    env = env_for(f"{foreign}:/usr/bin:/bin", SEEN=str(seen))
    payload = BeforeToolCallPayload(tool_name="bash", tool_input={})
    with load_runtime(cwd=repo, env=env, persistent=False, entry_points=False) as runtime:
        runtime.dispatch(payload)
        assert (seen / "kit-run").read_text() == sys.executable
        hook.write_text(WHICH.replace("IMPORT", ""))
        runtime.dispatch(payload)
        assert (seen / "kit-run").read_text() != sys.executable
        hook.write_text(WHICH.replace("IMPORT", "import kodelet"))
        runtime.dispatch(payload)
        assert (seen / "kit-run").read_text() == sys.executable
        (seen / "kit-run").unlink()
        hook.chmod(0o644)
        done = runtime.dispatch(payload)
    record = done.trace[0]
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

    guard = write_hook(repo / ".kodelet" / "hooks", "protocol-guard", protocol_guard())
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
    write_hook(repo / ".kodelet" / "hooks", "noisy", text)
    env = env_for(path_without_kodelet(tmp_path))
    _, _, err = hooks_run(KODELET, repo, "before_tool_call", bash_payload("rm -rf /"), env)
    (line,) = [x for x in err.splitlines() if "noisy" in x and " skipped: " in x]
    assert "the real reason" in line and "cannot import" not in line, err
    # Only the generic fix of a failing query, no import advice.
    assert "fix: make `" in line and "pip" not in line and "#!/usr/bin/env" not in line, err


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
    write_hook(repo / ".kodelet" / "hooks", "lazy", text)
    env = env_for(path_without_kodelet(tmp_path))
    with load_runtime(cwd=repo, env=env, persistent=persistent, entry_points=False) as runtime:
        done = runtime.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={}))
    (record,) = done.trace
    assert "cannot import 'nosuchmod_lazy'" in str(record.error), record
    assert f"kodelet's own Python ({sys.executable})" in str(record.error), record
    assert "pipx inject kodelet nosuchmod_lazy" in str(record.error), record

"""What a command or a runtime does not need, it does not import.

Start-up is what a user pays on every tool call when an agent spawns kodelet, so
the heavy parts (the Claude Code runner and its types, the replay machinery, the
CLI framework on Claude Code's hot path) are imported only where they are used.
Each case runs in a fresh interpreter and reads ``sys.modules`` at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CLAUDE_RUNNER = ("kodelet.claude.runner", "kodelet.claude.types", "kodelet.adapters.claude_hooks")
REPLAY = ("kodelet.replay.player", "kodelet.replay.corpus", "kodelet.replay.pool")


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HOME=str(tmp_path / "home"), KODELET_HOME=str(tmp_path / "home" / ".kodelet"))
    (tmp_path / "home").mkdir(exist_ok=True)
    return env


def _modules_after(code: str, tmp_path: Path, cwd: Path) -> set[str]:
    script = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def _cli_modules(args: list[str], tmp_path: Path, cwd: Path, stdin: str = "") -> set[str]:
    """The modules loaded by a whole ``kodelet`` command, seen at interpreter exit."""
    code = f"""
        import atexit, json, sys
        atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
        sys.argv = ["kodelet", *{args!r}]
        from kodelet.cli.app import main
        main()
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=_env(tmp_path),
        input=stdin,
        capture_output=True,
        text=True,
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kodelet" / "hooks").mkdir(parents=True)
    return path


def test_a_runtime_without_claude_settings_does_not_import_the_claude_runner(
    tmp_path: Path, project: Path
) -> None:
    loaded = _modules_after(
        "from kodelet import load_runtime\nload_runtime(entry_points=False).close()",
        tmp_path,
        project,
    )
    assert "kodelet.assembly" in loaded
    assert not loaded & set(CLAUDE_RUNNER)


def test_a_runtime_with_a_claude_hook_imports_the_adapter(tmp_path: Path, project: Path) -> None:
    (project / ".claude").mkdir()
    settings = {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    loaded = _modules_after(
        "from kodelet import load_runtime\nload_runtime(entry_points=False).close()",
        tmp_path,
        project,
    )
    assert "kodelet.adapters.claude_hooks" in loaded


def test_hooks_run_imports_neither_replay_nor_the_claude_runner(
    tmp_path: Path, project: Path
) -> None:
    payload = json.dumps({"tool_name": "bash", "tool_input": {"command": "ls"}})
    loaded = _cli_modules(["hooks", "run", "before_tool_call"], tmp_path, project, payload)
    assert "kodelet.runtime" in loaded
    assert not loaded & {*REPLAY, *CLAUDE_RUNNER}


def test_replay_imports_the_replay_machinery(tmp_path: Path, project: Path) -> None:
    loaded = _cli_modules(["replay", "--json"], tmp_path, project)
    assert set(REPLAY) <= loaded


def test_the_package_names_its_exports_once_for_runtime_and_once_for_type_checkers() -> None:
    """``kodelet/__init__.py`` imports its public names on first use (``_EXPORTS``) and
    spells them again, as explicit re-exports, only for type checkers: the two lists
    must be one, and ``__all__`` is derived from the first."""
    import ast

    import kodelet

    source = Path(kodelet.__file__).read_text()
    checked = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                for alias in imp.names:
                    assert alias.asname == alias.name, "an explicit re-export: X as X"
                    checked[alias.name] = "." * imp.level + (imp.module or "")
    assert checked == kodelet._EXPORTS
    assert kodelet.__all__ == sorted(kodelet._EXPORTS)
    for name in kodelet.__all__:
        assert getattr(kodelet, name) is not None


def test_importing_the_package_imports_no_third_party_module() -> None:
    """``from kodelet import hookkit`` runs in every Python hook: the package face and the
    version it carries cost nothing beyond the standard library."""
    code = (
        "import sys, kodelet\n"
        "print(sorted(m for m in ('pluggy', 'attrs', 'cattrs') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"

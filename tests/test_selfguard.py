"""``builtin:protect-kodelet``: the agent may read kodelet's own files, never change them.

The classification tests call the guard's own function on a real project folder (real
symbolic links, a real global root); the end-to-end ones run ``kodelet hooks run`` and
``kodelet claude hook`` as processes, the way an agent does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kodelet import load_runtime
from kodelet.agents import DIALECTS
from kodelet.events import Event
from kodelet.selfguard import NAME, SelfGuard, check_call
from kodelet.selfguard.shell import MAX_NESTING

from tests.kit.cli import run_before_tool_call, run_kodelet


@pytest.fixture
def home(isolated_home: Path) -> Path:
    (isolated_home / ".kodelet").mkdir(exist_ok=True)
    (isolated_home / ".claude").mkdir(exist_ok=True)
    (isolated_home / ".claude" / "settings.json").write_text("{}")
    return isolated_home


@pytest.fixture
def proj(project: Path, home: Path) -> Path:
    (project / ".kodelet" / "config.toml").write_text("")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{}")
    (project / "src" / "deep").mkdir(parents=True)
    (project / "README.md").write_text("hi\n")
    return project


def verdict(
    proj: Path, tool: str, tool_input: dict[str, Any], cwd: Path | None = None
) -> str | None:
    return check_call(
        tool,
        tool_input,
        str(cwd or proj),
        project=str(proj),
        global_root=os.environ["KODELET_HOME"],
        env=dict(os.environ),
    )


def bash(proj: Path, command: str, cwd: Path | None = None) -> str | None:
    return verdict(proj, "bash", {"command": command}, cwd)


BLOCKED = [
    # deleting, moving, writing, changing the mode
    "rm -rf .kodelet",
    "rm .kodelet/config.toml",
    "rm -r -f ./.kodelet/",
    "rm -rf ~/.kodelet",
    "rm -rf $HOME/.kodelet",
    'rm -rf "${HOME}/.kodelet"',
    "rm -rf $KODELET_HOME",
    "rm -rf ..",  # run from src: the project's folder holds .kodelet
    "rm -rf .*",
    "rm -rf .k*",
    "rm -rf .[k]odelet",
    "rm -rf .{kodelet,cache}",
    "rm -rf '.kode'\"let\"",
    "rm -rf $'\\x2ekodelet'",
    "rm -rf \\.kodelet",
    "unlink .kodelet/config.toml",
    "shred -u .kodelet/config.toml",
    "mv .kodelet /tmp/away",
    "mv .kodelet/config.toml .kodelet/config.toml.bak",
    "mv /tmp/evil.toml .kodelet/config.toml",
    "mv /tmp/x .kodelet",
    "cp /tmp/evil.toml .kodelet/config.toml",
    "cp /tmp/config.toml .kodelet/",
    "cp -t .kodelet /tmp/config.toml",
    "install -m 644 /tmp/x .kodelet/config.toml",
    "ln -sf /tmp/evil.toml .kodelet/config.toml",
    "chmod -x .kodelet/hooks",
    "chmod 000 .kodelet",
    "chmod -R go+w .kodelet",
    "chown -R nobody .kodelet",
    "chattr +i .kodelet/config.toml",
    "touch .kodelet/hooks/new",
    "mkdir -p .kodelet/hooks/x",
    "truncate -s 0 .kodelet/config.toml",
    "echo 'enabled = false' > .kodelet/config.toml",
    "echo x >> .kodelet/config.toml",
    "echo x >| .kodelet/config.toml",
    "echo x 2> .kodelet/config.toml",
    "echo x &> .kodelet/config.toml",
    "echo x | tee .kodelet/config.toml",
    "echo x | tee -a ~/.claude/settings.json",
    "printf '{}' > .claude/settings.json",
    "printf '{}' > .claude/settings.local.json",
    "sed -i 's/a/b/' .kodelet/config.toml",
    "sed -i.bak -e 's/a/b/' .claude/settings.json",
    "sed -Ei 's/a/b/' .claude/settings.json",
    "sed -n 'w .kodelet/config.toml' README.md",
    "perl -pi -e 's/a/b/' .kodelet/config.toml",
    "awk -i inplace '{print}' .kodelet/config.toml",
    "sort -o .kodelet/config.toml README.md",
    "dd if=/dev/zero of=.kodelet/config.toml",
    "curl -o .kodelet/config.toml https://example.com",
    "wget -O ~/.claude/settings.json https://example.com",
    "python -c \"open('.kodelet/config.toml','w').write('')\"",
    "python3 - <<'EOF'\nopen('.kodelet/config.toml', 'w')\nEOF",
    "node -e \"require('fs').writeFileSync('.claude/settings.json','{}')\"",
    "vim .kodelet/config.toml",
    "git checkout -- .kodelet",
    "git checkout HEAD~1 .kodelet/config.toml",
    "git restore .kodelet/config.toml",
    "git clean -fdx",
    "git rm -r .kodelet",
    "git mv .kodelet elsewhere",
    "find . -delete",
    "find . -name '*.toml' -delete",
    "find . -iname 'SETTINGS*' -delete",
    "find . ! -name '*.pyc' -delete",
    "find . -name '*.pyc' -o -name x -delete",
    "find .kodelet -name '*' -delete",
    "find . -type f -exec rm {} +",
    "rsync -a --delete empty/ ./",
    # following the shell
    "cd .kodelet && rm config.toml",
    "cd .kodelet; echo x > config.toml",
    "cd ~ && rm -rf .kodelet",
    "cd .claude && python -c \"open('settings.json','w')\"",
    "pushd .kodelet && rm -f config.toml",
    "(cd .kodelet && rm config.toml)",
    "D=.kodelet; rm -rf $D",
    'export D=.kodelet && rm -rf "$D"',
    "bash -c 'rm -rf .kodelet'",
    'sh -lc "echo x > .kodelet/config.toml"',
    "eval 'rm -rf .kodelet'",
    "echo $(rm -rf .kodelet)",
    "echo `rm -rf .kodelet`",
    "cat <(rm -rf .kodelet)",
    "sudo rm -rf .kodelet",
    "env -i FOO=1 rm -rf .kodelet",
    "timeout 5 rm -rf .kodelet",
    "nice -n 5 rm -rf .kodelet",
    "xargs rm -rf < list  # .kodelet",
    "ls | xargs rm -rf .kodelet",
    "if true; then rm -rf .kodelet; fi",
    "for f in a b; do rm -rf .kodelet; done",
    "f() { rm -rf .kodelet; }; f",
    "true && { rm -rf .kodelet; }",
    "echo ok\nrm -rf .kodelet",
    "cat <<EOF\n$(rm -rf .kodelet)\nEOF",
    # kodelet's own commands that change its files
    "kodelet hooks disable guard",
    "kodelet hooks new guard",
    "kodelet plugins add org/repo",
    "kodelet plugins disable x",
    "kodelet plugins uninstall kodelet-plugin-x",
    "kodelet claude uninstall",
    "kodelet --cwd . gemini install",
    "python -m kodelet hooks disable guard",
    "kodelet rules disable recommended",
    "kodelet rules enable recommended --scope user",
    # what the guard cannot read fails closed when it names a protected path
    "echo 'unclosed .kodelet",
    "case x in x) rm -rf .kodelet;; esac",
    'rm -rf "$(pwd)/.kodelet"',
    'rm -rf "$(git rev-parse --show-toplevel)"/.kodelet',
    "X=$(echo .kodelet); rm -rf $X",
    "source ./script.sh .kodelet",
    "rm -rf .KODELET",  # a case-insensitive file system takes it for .kodelet
]

ALLOWED = [
    "cat .kodelet/config.toml",
    "less .kodelet/config.toml",
    "head -n 5 .claude/settings.json",
    "ls .claude",
    "ls -la .kodelet .kodelet/hooks",
    "grep -r x .",
    "grep -rn kodelet .kodelet/",
    "rg enabled .kodelet",
    "git status",
    "git diff .kodelet",
    "git log -- .kodelet/config.toml",
    "git add .kodelet/config.toml",
    "git commit -m 'x'",
    "git checkout main",
    "git pull",
    "cat .kodelet/config.toml | grep enabled",
    "diff .kodelet/config.toml /tmp/other.toml",
    "cp .kodelet/config.toml /tmp/backup.toml",
    "tar czf /tmp/backup.tgz README.md",
    "echo .kodelet > notes.txt",
    "find . -name '*.py'",
    "find .kodelet -type f",
    "find . -name '*.py' -exec grep -n TODO {} +",
    "find . -name '*.pyc' -delete",
    "find . -type d -name __pycache__ -exec rm -rf {} +",
    "jq . .claude/settings.json",
    "stat .kodelet",
    "wc -l .kodelet/config.toml",
    "sed -n 1,5p .kodelet/config.toml",
    "awk '{print $1}' .kodelet/config.toml",
    "rm -rf build dist",
    "rm -f src/deep/x.txt",
    "rm -rf *",
    "rm -rf node_modules && npm install",
    "mv README.md README.rst",
    "cp README.md src/",
    "chmod +x scripts/run.sh",
    "touch src/new.py",
    "mkdir -p src/a/b",
    "echo hi > /tmp/out.txt",
    "echo hi > /dev/null 2>&1",
    "python -m pytest -q tests",
    "python script.py > out.log",
    "npm test",
    "make -j2",
    "cd src && rm -rf build",
    "cd /tmp && rm -rf x",
    'rm -rf "$TMPDIR/build"',
    "rm -rf .claude/commands/old.md",
    "echo '{}' > .claude/agents.json",
    "kodelet hooks list",
    "kodelet hooks run before_tool_call --payload -",
    "kodelet claude status",
    "kodelet config show",
    "kodelet --version",
    "kodelet plugins list",
    "kodelet hooks disable --help",
    "kodelet rules explain 'rm -rf build'",
    "kodelet rules list --json",
    "kodelet rules test",
    ".kodelet/hooks/guard hook",
    "git clean -n",
    "X=1; echo $X",
    "for f in *.py; do echo $f; done",
]


@pytest.mark.parametrize("command", BLOCKED)
def test_blocked_commands(proj: Path, command: str) -> None:
    cwd = proj / "src" if command == "rm -rf .." else None
    assert bash(proj, command, cwd), command


@pytest.mark.parametrize("command", ALLOWED)
def test_allowed_commands(proj: Path, command: str) -> None:
    assert bash(proj, command) is None, command


def test_deleting_everything_is_left_to_the_users_guards(proj: Path) -> None:
    # Blocking these here would make a missing guard of the user's look present (to
    # `kodelet verify` and to anyone trying their guard with `rm -rf /`).
    for command in ("rm -rf /", "rm -rf ~", "rm -rf $HOME", "rm -rf ~/"):
        assert bash(proj, command) is None, command
    assert bash(proj, "rm -rf ~/.kodelet")
    assert bash(proj, "chmod -R 777 ~/.kodelet")


def test_rm_rf_dot_dot_is_fine_where_nothing_of_kodelets_is_above(proj: Path) -> None:
    outside = proj.parent / "elsewhere" / "sub"
    outside.mkdir(parents=True)
    assert bash(proj, "rm -rf ..", cwd=outside) is None
    assert bash(proj, "rm -rf ../..", cwd=outside)  # the project is below that


def test_a_nested_project_and_the_callers_own_folder(proj: Path) -> None:
    nested = proj / "vendor" / "lib"
    (nested / ".kodelet").mkdir(parents=True)
    (nested / "sub").mkdir()
    assert bash(proj, "rm -rf ..", cwd=nested / "sub")
    assert bash(proj, "echo x > config.toml", cwd=nested / ".kodelet")


def test_codex_argv_and_workdir(proj: Path) -> None:
    assert verdict(proj, "bash", {"command": ["rm", "-rf", ".kodelet"]})
    assert verdict(
        proj, "bash", {"command": ["bash", "-lc", "rm -rf config.toml"], "workdir": ".kodelet"}
    )
    assert verdict(proj, "bash", {"command": ["ls", ".kodelet"]}) is None


# -- file tools -------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool, key",
    [
        ("file_write", "file_path"),
        ("file_edit", "file_path"),
        ("file_multi_edit", "file_path"),
        ("NotebookEdit", "notebook_path"),
        ("Write", "file_path"),
        ("write", "filePath"),
    ],
)
def test_file_tools_that_write(proj: Path, tool: str, key: str) -> None:
    for path in [
        ".kodelet/config.toml",
        str(proj / ".kodelet" / "config.toml"),
        str(proj / "src" / ".." / ".kodelet" / "config.toml"),
        "src/../.kodelet/hooks/new",
        "./.kodelet/x.ipynb",
        "~/.kodelet/config.toml",
        "~/.claude/settings.json",
        ".claude/settings.local.json",
        ".KODELET/config.toml",
        ".kodelet/config.toml\0.txt",
        ".kodelet/config.toml \n",
        "/tmp/anywhere/.kodelet/config.toml",
        ".codex/hooks.json",
        ".gemini/settings.json",
        ".qwen/settings.json",
        ".github/hooks/kodelet.json",
        ".opencode/plugin/kodelet.js",
    ]:
        assert verdict(proj, tool, {key: path}), path
    for path in ["README.md", "src/a.py", ".claude/commands/x.md", "/tmp/kodelet.txt"]:
        assert verdict(proj, tool, {key: path}) is None, path


def test_relative_paths_resolve_against_the_calls_folder(proj: Path) -> None:
    deep = proj / "src" / "deep"
    assert verdict(proj, "file_write", {"file_path": "../../.kodelet/config.toml"}, deep)
    assert verdict(proj, "file_write", {"file_path": "../../README.md"}, deep) is None


def test_a_symbolic_link_into_kodelets_files_is_followed(proj: Path) -> None:
    (proj / "innocent.toml").symlink_to(proj / ".kodelet" / "config.toml")
    (proj / "src" / "cfg").symlink_to(proj / ".kodelet")
    assert verdict(proj, "file_write", {"file_path": "innocent.toml"})
    assert verdict(proj, "file_edit", {"file_path": "src/cfg/config.toml"})
    assert bash(proj, "echo x > innocent.toml")
    assert bash(proj, "rm -rf src/cfg/hooks")


def test_a_global_root_anywhere(proj: Path, tmp_path: Path) -> None:
    root = tmp_path / "kh"
    root.mkdir()
    env = {**os.environ, "KODELET_HOME": str(root)}
    for tool, tool_input in [
        ("bash", {"command": f"rm -rf {root}/hooks"}),
        ("file_write", {"file_path": str(root / "config.toml")}),
        ("bash", {"command": "python x.py $KODELET_HOME"}),
    ]:
        said = check_call(
            tool, tool_input, str(proj), project=str(proj), global_root=str(root), env=env
        )
        assert said, tool_input


@pytest.mark.parametrize("agent", sorted(DIALECTS))
def test_every_agents_files_holding_kodelets_entries_are_protected(proj: Path, agent: str) -> None:
    """The guard names the agents' files itself (it must not import every dialect on
    each call); this keeps that list from falling behind the dialects'."""
    dialect = DIALECTS[agent]
    home = Path(os.environ["HOME"])
    files = [dialect.config_path(scope, proj, os.environ) for scope in dialect.config]
    if dialect.trust_config:
        files.append(home / dialect.trust_config[2:])
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        assert verdict(proj, "file_write", {"file_path": str(path)}), path
        assert bash(proj, f"rm -f {path}"), path


def test_reading_tools_are_never_blocked(proj: Path) -> None:
    for tool, data in [
        ("file_read", {"file_path": ".kodelet/config.toml"}),
        ("grep_tool", {"pattern": "x", "path": ".kodelet"}),
        ("glob_tool", {"pattern": "**/*", "path": str(proj / ".claude")}),
    ]:
        assert verdict(proj, tool, data) is None


def test_unknown_tools_are_judged_by_the_paths_they_are_given(proj: Path) -> None:
    assert verdict(proj, "mcp__fs__move_file", {"source": "a", "destination": ".kodelet/x"})
    assert verdict(proj, "mcp__shell__run", {"command": "rm -rf .kodelet"})
    assert verdict(proj, "mcp__fs__write_file", {"path": "src/x.py", "content": "x"}) is None


def test_apply_patch(proj: Path) -> None:
    patch = "*** Begin Patch\n*** Update File: .kodelet/config.toml\n@@\n-a\n+b\n*** End Patch"
    assert verdict(proj, "apply_patch", {"input": patch})
    moved = "*** Begin Patch\n*** Update File: a.py\n*** Move to: .claude/settings.json\n"
    assert verdict(proj, "apply_patch", {"input": moved})
    fine = "*** Begin Patch\n*** Add File: src/new.py\n+x\n*** End Patch"
    assert verdict(proj, "apply_patch", {"input": fine}) is None


# -- hostile input: never a crash, and a crash blocks ------------------------------


def test_hostile_commands_do_not_crash(proj: Path) -> None:
    huge = "echo " + "a" * 2_000_000
    assert bash(proj, huge) is None
    assert bash(proj, huge + " .kodelet")
    deep = "echo " + "$(" * 200 + "x" + ")" * 200
    assert bash(proj, deep)  # too deep to check: blocked
    assert bash(proj, "echo " + "$(" * (MAX_NESTING - 2) + "ls" + ")" * (MAX_NESTING - 2)) is None
    assert bash(proj, "rm -rf .kodelet\0 harmless")
    assert bash(proj, "rm -rf .kode\u200blet") is None  # another file: not kodelet's
    assert bash(proj, "(" * 5000) is None
    assert bash(proj, "(" * 5000 + ".kodelet")
    assert bash(proj, "{" * 10000 + "a,b" + "}" * 10000) is None
    assert bash(proj, "echo " + "{a,b}" * 40) is None
    assert bash(proj, "rm -rf " + "*" * 100_000 + "x")  # too long a glob: it may match anything
    assert bash(proj, "rm -rf " + "[" * 500) is None


def test_a_guard_that_fails_blocks(proj: Path) -> None:
    guard = SelfGuard(proj, Path(os.environ["KODELET_HOME"]), os.environ)
    nested: Any = "src/x.py"
    for _ in range(100):
        nested = {"x": nested}
    result = guard.before_tool_call("mcp__x__y", {"arg": nested}, str(proj))
    assert result is not None and result.blocked
    assert "failed while checking" in result.reason and NAME in result.reason


def test_one_guard_sees_kodelets_files_as_they_are_at_each_call(proj: Path) -> None:
    """The guard of a long-lived runtime (the warm kodelet's) works its places out once,
    but asks on every call which of kodelet's files are there."""
    guard = SelfGuard(proj, Path(os.environ["KODELET_HOME"]), os.environ)
    inner = proj / "src" / "deep" / "x"
    inner.mkdir()
    assert guard.before_tool_call("bash", {"command": "rm -rf .."}, str(inner)) is None
    (proj / "src" / "deep" / ".kodelet").mkdir()  # a nested project, made by the user
    result = guard.before_tool_call("bash", {"command": "rm -rf .."}, str(inner))
    assert result is not None and result.blocked


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
_SHELLISH = st.text(
    alphabet=st.sampled_from(list(" \t\n;&|()<>$`'\"\\{}[]*?~=#!-./akodelt\0\u00e9\u200b")),
    max_size=80,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(command=_SHELLISH | st.text(max_size=80))
def test_any_command_gets_an_answer(proj: Path, command: str) -> None:
    assert bash(proj, command) is None or isinstance(bash(proj, command), str)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tool=st.sampled_from(["bash", "file_write", "apply_patch", "mcp__x__y", "file_read"]),
    data=st.dictionaries(
        st.sampled_from(["command", "file_path", "path", "input", "x"]), _JSON, max_size=4
    ),
)
def test_any_tool_input_gets_an_answer(proj: Path, tool: str, data: dict[str, Any]) -> None:
    guard = SelfGuard(proj, Path(os.environ["KODELET_HOME"]), os.environ)
    result = guard.before_tool_call(tool, data, str(proj))
    assert result is None or (result.blocked and "failed while checking" not in result.reason)


_QUOTED = st.sampled_from(
    [
        ".kodelet",
        "'.kodelet'",
        '".kodelet"',
        "./.kodelet",
        "\\.kodelet",
        ".kode'let'",
        "$'.kodelet'",
        "src/../.kodelet",
        ".kodelet/",
        ".kodelet/.",
        "$PWD/.kodelet",
        "~/.kodelet",
        "${HOME}/.kodelet",
        ".k*",
        ".kodele?",
        ".[k]odelet",
        ".{x,kodelet}",
    ]
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=_QUOTED,
    verb=st.sampled_from(
        [
            "rm -rf",
            "rm -r",
            "mv",
            "chmod -R 777",
            "shred -u",
            "touch",
            "truncate -s0",
            "cp /dev/null",
        ]
    ),
    prefix=st.sampled_from(["", "sudo ", "cd . && ", "true; ", "bash -c '", "env "]),
)
def test_spellings_of_a_write_to_kodelet_are_blocked(
    proj: Path, path: str, verb: str, prefix: str
) -> None:
    if prefix.endswith("'"):
        if "'" in path:
            return
        command = f"{prefix}{verb} {path}'"
    else:
        command = f"{prefix}{verb} {path}"
    if verb in ("touch", "truncate -s0", "cp /dev/null"):
        command += "/config.toml" if not command.endswith("'") else ""
    assert bash(proj, command), command


# -- in every runtime, and through the real CLI and the Claude Code bridge ----------


def test_the_guard_is_in_every_assembled_runtime(proj: Path) -> None:
    with load_runtime(cwd=proj) as runtime:
        names = [h.name for h in runtime.hooks(Event.BEFORE_TOOL_CALL)]
        assert names[-1] == NAME
    with load_runtime(cwd=proj, no_hooks=True) as runtime:
        assert [h.name for h in runtime.hooks(Event.BEFORE_TOOL_CALL)] == [NAME]
    (proj / ".kodelet" / "config.toml").write_text(f'[hooks."{NAME}"]\nenabled = false\n')
    with load_runtime(cwd=proj) as runtime:
        assert NAME not in [h.name for h in runtime.hooks(Event.BEFORE_TOOL_CALL)]
        assert [p.disabled for p in runtime.plugins if p.name == NAME] == [True]


def run_before(proj: Path, tool: str, tool_input: dict[str, Any], **kw: Any) -> dict[str, Any]:
    payload = {"tool_name": tool, "tool_input": tool_input, "cwd": str(proj)}
    proc = run_before_tool_call(proj, json.dumps(payload), cwd=proj, **kw)
    assert proc.returncode == 0, proc.stderr
    answer: dict[str, Any] = json.loads(proc.stdout)
    return answer


def test_cli_blocks_a_write_and_allows_a_read(proj: Path) -> None:
    out = run_before(proj, "file_write", {"file_path": ".kodelet/config.toml", "text": "x"})
    assert out["blocked"] is True
    assert out["reason"].startswith(f"{NAME}: `file_write` would write '.kodelet/config.toml'")
    assert "enabled = false" in out["reason"]
    out = run_before(proj, "bash", {"command": "rm -rf .kodelet"}, env={"KODELET_NO_HOOKS": "1"})
    assert out["blocked"] is True
    assert run_before(proj, "bash", {"command": "cat .kodelet/config.toml"}) == {"blocked": False}
    listing = run_kodelet("hooks", "list", cwd=proj)
    assert NAME in listing.stdout and "builtin" in listing.stdout


def test_cli_opt_out_is_knowing_and_the_opt_out_itself_is_protected(proj: Path) -> None:
    opt_out = f'[hooks."{NAME}"]\nenabled = false\n'
    out = run_before(proj, "bash", {"command": f"printf '{opt_out}' > .kodelet/config.toml"})
    assert out["blocked"] is True
    (proj / ".kodelet" / "config.toml").write_text(opt_out)  # the user, by hand
    assert run_before(proj, "bash", {"command": "rm -rf .kodelet"}) == {"blocked": False}


def claude_hook(proj: Path, tool: str, tool_input: dict[str, Any]) -> Any:
    data = {
        "session_id": "s1",
        "transcript_path": str(proj / "t.jsonl"),
        "cwd": str(proj),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
    }
    proc = run_kodelet("claude", "hook", cwd=proj, stdin=json.dumps(data))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def test_claude_code_bridge_denies_write_and_bash(proj: Path) -> None:
    out = claude_hook(
        proj, "Write", {"file_path": str(proj / ".kodelet" / "config.toml"), "content": "[hooks]\n"}
    )
    spec = out["hookSpecificOutput"]
    assert spec["permissionDecision"] == "deny"
    assert spec["permissionDecisionReason"].startswith(f"{NAME}: `file_write` would write")
    out = claude_hook(proj, "Bash", {"command": "rm -rf .kodelet", "description": "d"})
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    out = claude_hook(
        proj,
        "Edit",
        {
            "file_path": str(proj / ".claude" / "settings.json"),
            "old_string": "{}",
            "new_string": '{"x": 1}',
        },
    )
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert claude_hook(proj, "Bash", {"command": "cat .kodelet/config.toml"}) is None
    assert claude_hook(proj, "Read", {"file_path": str(proj / ".kodelet" / "config.toml")}) is None

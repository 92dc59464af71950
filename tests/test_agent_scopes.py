"""kodelet installed at two scopes of one agent runs every hook once per event.

Each test installs with the real ``python -m kodelet AGENT install`` and then does what
the agent does for one event: it runs every command its hook files hold for that event
through ``/bin/sh -c``, with the environment the agent gives hooks. A recording hook
counts how many times kodelet's hooks ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kodelet.testing import write_hook

from tests.kit.cli import run_kodelet as kodelet

RECORD = """#!/bin/sh
[ "$1" = hook ] && { echo before_tool_call; exit 0; }
cat >> "$(dirname "$0")/../ran.log"; echo >> "$(dirname "$0")/../ran.log"
case "$(tail -n 2 "$(dirname "$0")/../ran.log")" in
  *'rm -rf'*) echo '{"blocked": true, "reason": "no rm -rf"}' ;;
esac
"""


@pytest.fixture
def guarded(project: Path) -> Path:
    write_hook(project / ".kodelet" / "hooks", "record", RECORD)
    return project


def commands(path: Path, event: str) -> list[str]:
    data = json.loads(path.read_text())
    return [h["command"] for g in data["hooks"].get(event, []) for h in g["hooks"]]


def agent_env(project: Path, **extra: str) -> dict[str, str]:
    """What the agent gives its hooks: its project folder, and a PATH where the
    project file's ``kodelet`` is this test's."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"
    env["CLAUDE_PROJECT_DIR"] = str(project)
    env.update(extra)
    return env


def fire(project: Path, files: list[Path], call: dict[str, Any], env: dict[str, str],
         *argv: str) -> list[subprocess.CompletedProcess[str]]:  # fmt: skip
    """Every entry of ``files`` for the call's event, as the agent runs each one;
    ``argv`` is what the agent's own command line holds (``sh -c CMD NAME ARGS``)."""
    done = []
    for path in files:
        for command in commands(path, call["hook_event_name"]):
            done.append(
                subprocess.run(
                    ["/bin/sh", "-c", command, *argv],
                    input=json.dumps(call),
                    cwd=project,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
            )
    return done


def kodelet_status(project: Path, agent: str, *args: str) -> Any:
    """``kodelet AGENT status`` where the agent's ``kodelet`` is on PATH."""
    return kodelet(agent, "status", *args, cwd=project, env=agent_env(project))


def runs(project: Path) -> int:
    log = project / ".kodelet" / "ran.log"
    return sum(1 for line in log.read_text().splitlines() if line.strip()) if log.exists() else 0


def pre_tool(project: Path, command: str, tool: str = "Bash") -> dict[str, Any]:
    return {
        "session_id": "s",
        "transcript_path": "",
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": {"command": command},
        "tool_use_id": "t",
    }


def claude_files(project: Path, home: Path) -> list[Path]:
    return [project / ".claude" / "settings.json", home / ".claude" / "settings.json"]


def test_claude_at_project_and_user_scope_runs_each_hook_once(
    guarded: Path, isolated_home: Path
) -> None:
    for scope in ("project", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    done = fire(guarded, claude_files(guarded, isolated_home), pre_tool(guarded, "rm -rf /"),
                agent_env(guarded))  # fmt: skip
    assert len(done) == 2 and all(d.returncode == 0 for d in done), [d.stderr for d in done]
    assert runs(guarded) == 1
    answers = [json.loads(d.stdout) for d in done if d.stdout.strip()]
    assert [a["hookSpecificOutput"]["permissionDecision"] for a in answers] == ["deny"]

    status = kodelet_status(guarded, "claude")
    assert "does the work: yes (one run per event)" in status.stdout
    assert "does the work: no, the project entry does (this one stands down)" in status.stdout
    scopes = {
        s["scope"]: s
        for s in json.loads(kodelet_status(guarded, "claude", "--json").stdout)["scopes"]
    }
    assert (scopes["project"]["works"], scopes["user"]["works"]) == (True, False)


def test_the_user_entry_runs_when_the_project_entry_cannot(
    guarded: Path, isolated_home: Path
) -> None:
    """No ``kodelet`` on the agent's PATH: the project entry fails (and blocks, through
    ``onFailure``); the user entry still guards the call rather than standing down."""
    for scope in ("project", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    env = agent_env(guarded, PATH="/usr/bin:/bin")
    done = fire(guarded, claude_files(guarded, isolated_home), pre_tool(guarded, "rm -rf /"), env)
    assert runs(guarded) == 1
    assert any("no rm -rf" in d.stdout for d in done)
    status = kodelet("claude", "status", cwd=guarded, env={"PATH": "/usr/bin:/bin"}).stdout
    assert "does the work: no, kodelet cannot be sure it runs here, so the user entry does" in (
        status
    )
    assert "each hook runs twice; it is sure when `kodelet` is on its PATH" in status


def test_an_agent_told_to_skip_the_project_settings_keeps_the_user_entry(
    guarded: Path, isolated_home: Path
) -> None:
    """``claude --setting-sources user`` reads no project file: the user entry must not
    stand down for an entry Claude Code never runs."""
    for scope in ("project", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    user = [isolated_home / ".claude" / "settings.json"]
    done = fire(guarded, user, pre_tool(guarded, "rm -rf /"), agent_env(guarded),
                "claude", "--setting-sources", "user")  # fmt: skip
    assert runs(guarded) == 1
    assert "no rm -rf" in done[0].stdout
    stood_down = fire(guarded, user, pre_tool(guarded, "ls"), agent_env(guarded),
                      "claude", "--setting-sources", "user,project")  # fmt: skip
    assert runs(guarded) == 1 and stood_down[0].stdout == ""


def test_a_project_entry_in_another_folder_does_not_stand_the_user_entry_down(
    guarded: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """The project file that counts is the one the agent read (its project folder), not
    one a checkout planted in some folder below."""
    assert kodelet("claude", "install", "--scope", "user", cwd=guarded).returncode == 0
    entry = {"type": "command", "command": "kodelet claude hook", "onFailure": "block"}
    planted = guarded / "vendor" / ".claude" / "settings.json"
    planted.parent.mkdir(parents=True)
    planted.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [entry]}]}}))
    user = [isolated_home / ".claude" / "settings.json"]
    fire(guarded, user, pre_tool(guarded, "ls"), agent_env(guarded))
    assert runs(guarded) == 1


def test_local_and_user_entries_leave_the_work_to_one(guarded: Path, isolated_home: Path) -> None:
    for scope in ("local", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    files = [guarded / ".claude" / "settings.local.json", *claude_files(guarded, isolated_home)[1:]]
    fire(guarded, files, pre_tool(guarded, "ls"), agent_env(guarded))
    assert runs(guarded) == 1


def test_gemini_at_both_scopes_in_a_trusted_folder_runs_once(
    guarded: Path, isolated_home: Path
) -> None:
    for scope in ("project", "user"):
        assert kodelet("gemini", "install", "--scope", scope, cwd=guarded).returncode == 0
    files = [guarded / ".gemini" / "settings.json", isolated_home / ".gemini" / "settings.json"]
    call = {**pre_tool(guarded, "ls", "run_shell_command"), "hook_event_name": "BeforeTool"}
    fire(guarded, files, call, agent_env(guarded, GEMINI_CLI_TRUST_WORKSPACE="true"))
    assert runs(guarded) == 1
    # Without that trust Gemini CLI may not read the project file: both run, as before.
    fire(guarded, files, call, agent_env(guarded))
    assert runs(guarded) == 3


def test_the_warm_kodelet_stands_a_user_entry_down_as_in_process(
    guarded: Path, isolated_home: Path
) -> None:
    from kodelet.warm import control

    (guarded / ".git").mkdir()
    for scope in ("project", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    env = {k: v for k, v in agent_env(guarded).items() if k != "KODELET_DAEMON"}
    try:
        for n in range(1, 4):
            fire(guarded, claude_files(guarded, isolated_home), pre_tool(guarded, "ls"), env)
            assert runs(guarded) == n
    finally:
        control.stop_all(env)


@pytest.mark.parametrize("command", ["./kodelet claude hook", "kodelet claude hook"])
def test_a_kodelet_planted_in_the_checkout_never_stands_the_user_entry_down(
    guarded: Path, isolated_home: Path, command: str
) -> None:
    """A cloned repository writes ``.claude/settings.json`` and can ship an executable
    ``kodelet`` that lets everything through: its entry is not this kodelet, so the
    user's entry keeps guarding, even with the project folder on PATH."""
    assert kodelet("claude", "install", "--scope", "user", cwd=guarded).returncode == 0
    fake = guarded / "kodelet"
    fake.write_text("#!/bin/sh\ncat > /dev/null\n")
    fake.chmod(0o755)
    entry = {"type": "command", "command": command, "onFailure": "block"}
    (guarded / ".claude").mkdir()
    planted = guarded / ".claude" / "settings.json"
    planted.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [entry]}]}}))
    env = agent_env(guarded)
    env["PATH"] = f"{guarded}{os.pathsep}{env['PATH']}"
    done = fire(guarded, claude_files(guarded, isolated_home), pre_tool(guarded, "rm -rf /"), env)
    assert runs(guarded) == 1
    assert any("no rm -rf" in d.stdout for d in done)


# --- Codex, Qwen Code, Copilot CLI, opencode ------------------------------------------
#
# Each agent says differently where it read its project hook file, so each is fired as
# the pinned CLI runs its hooks: with the variables it sets, the input it sends, and
# its own command line above the hook (``sh -c CMD AGENT ARGS``).


def git_repo(folder: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=60)
    return folder


def install_both(agent: str, project: Path) -> None:
    for scope in ("project", "user"):
        done = kodelet(agent, "install", "--scope", scope, cwd=project)
        assert done.returncode == 0, done.stderr


def trust_codex_project(home: Path, root: Path) -> None:
    """What ``codex`` writes once the user trusts the folder."""
    config = home / ".codex" / "config.toml"
    config.write_text(f'[projects."{root}"]\ntrust_level = "trusted"\n\n' + config.read_text())


def codex_files(project: Path, home: Path) -> list[Path]:
    return [project / ".codex" / "hooks.json", home / ".codex" / "hooks.json"]


def plain_env(project: Path, **extra: str) -> dict[str, str]:
    """An agent's hook environment that names no project folder."""
    env = {k: v for k, v in agent_env(project).items() if k != "CLAUDE_PROJECT_DIR"}
    env.update(extra)
    return env


def test_codex_at_both_scopes_in_a_trusted_project_runs_once(
    guarded: Path, isolated_home: Path
) -> None:
    """Codex names no project folder; it reads ``.codex/`` of the repository root above
    the session's ``cwd``, once the user trusts that root."""
    git_repo(guarded)
    install_both("codex", guarded)
    trust_codex_project(isolated_home, guarded)
    files = codex_files(guarded, isolated_home)
    done = fire(guarded, files, pre_tool(guarded, "rm -rf /"), plain_env(guarded), "codex", "exec")
    assert runs(guarded) == 1
    answers = [json.loads(d.stdout) for d in done if d.stdout.strip()]
    assert [a["hookSpecificOutput"]["permissionDecision"] for a in answers] == ["deny"]
    deep = guarded / "src" / "deep"
    deep.mkdir(parents=True)
    fire(deep, files, pre_tool(deep, "ls"), plain_env(guarded), "codex", "exec")
    assert runs(guarded) == 2

    status = kodelet("codex", "status", cwd=guarded, env=plain_env(guarded))
    assert "does the work: yes (one run per event)" in status.stdout
    assert "does the work: no, the project entry does (this one stands down)" in status.stdout


def test_codex_outside_a_repository_reads_its_start_folder(
    guarded: Path, isolated_home: Path
) -> None:
    """No ``.git`` above: Codex's project root is the folder it starts in, and only
    that folder's ``.codex/`` is read (a subfolder's session reads none of it)."""
    install_both("codex", guarded)
    trust_codex_project(isolated_home, guarded)
    files = codex_files(guarded, isolated_home)
    fire(guarded, files, pre_tool(guarded, "ls"), plain_env(guarded), "codex", "exec")
    assert runs(guarded) == 1
    deep = guarded / "src"
    deep.mkdir()
    fire(deep, files[1:], pre_tool(deep, "ls"), plain_env(guarded), "codex", "exec")
    assert runs(guarded) == 2


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(("codex", "exec", "-c", 'projects."/x".trust_level="untrusted"'), id="-c"),
        pytest.param(("codex", "exec", "--profile", "ci"), id="profile"),
        pytest.param(("codex", "exec", "--ignore-user-config"), id="ignore-user-config"),
        pytest.param(("sh",), id="no-codex-above"),
    ],
)
def test_codex_run_in_a_way_that_may_skip_the_project_keeps_both(
    guarded: Path, isolated_home: Path, argv: tuple[str, ...]
) -> None:
    git_repo(guarded)
    install_both("codex", guarded)
    trust_codex_project(isolated_home, guarded)
    fire(guarded, codex_files(guarded, isolated_home), pre_tool(guarded, "ls"),
         plain_env(guarded), *argv)  # fmt: skip
    assert runs(guarded) == 2


def test_codex_keeps_both_where_the_project_or_its_entry_is_not_trusted(
    guarded: Path, isolated_home: Path
) -> None:
    git_repo(guarded)
    install_both("codex", guarded)
    files = codex_files(guarded, isolated_home)
    fire(guarded, files, pre_tool(guarded, "ls"), plain_env(guarded), "codex", "exec")
    assert runs(guarded) == 2  # the project folder is not trusted: Codex skips .codex/
    trust_codex_project(isolated_home, guarded)
    config = isolated_home / ".codex" / "config.toml"
    config.write_text(config.read_text().replace('trusted_hash = "sha256:', 'trusted_hash = "x'))
    fire(guarded, files[1:], pre_tool(guarded, "ls"), plain_env(guarded), "codex", "exec")
    assert runs(guarded) == 3  # the project entry is not reviewed: the user's runs


def test_qwen_at_both_scopes_runs_once(guarded: Path, isolated_home: Path) -> None:
    install_both("qwen", guarded)
    files = [guarded / ".qwen" / "settings.json", isolated_home / ".qwen" / "settings.json"]
    call = {**pre_tool(guarded, "ls", "run_shell_command")}
    env = plain_env(guarded, QWEN_PROJECT_DIR=str(guarded))
    fire(guarded, files, call, env, "qwen", "-p", "go")
    assert runs(guarded) == 1
    status = kodelet("qwen", "status", cwd=guarded, env=plain_env(guarded)).stdout
    assert "does the work: no, the project entry does (this one stands down)" in status
    # A user who turned folder trust on: Qwen Code may skip the project's file.
    user = json.loads(files[1].read_text())
    user["security"] = {"folderTrust": {"enabled": True}}
    files[1].write_text(json.dumps(user))
    fire(guarded, files, call, env, "qwen", "-p", "go")
    assert runs(guarded) == 3


def test_copilot_at_both_scopes_in_a_trusted_folder_runs_once(
    guarded: Path, isolated_home: Path
) -> None:
    install_both("copilot", guarded)
    files = [
        guarded / ".github" / "hooks" / "kodelet.json",
        isolated_home / ".copilot" / "hooks" / "kodelet.json",
    ]
    call = {**pre_tool(guarded, "ls"), "transcript_path": None}
    env = plain_env(guarded, COPILOT_PROJECT_DIR=str(guarded), COPILOT_ALLOW_ALL="true")
    fire(guarded, files, call, env, "copilot", "-p", "go")
    assert runs(guarded) == 1
    status = kodelet("copilot", "status", cwd=guarded, env=env).stdout
    assert "does the work: no, the project entry does (this one stands down)" in status
    # Settings that switch hooks off by name may switch off the project's: both run.
    settings = isolated_home / ".copilot" / "settings.json"
    settings.write_text('// User settings.\n{"disabledHooks": ["kodelet"]}\n')
    fire(guarded, files, call, env, "copilot", "-p", "go")
    assert runs(guarded) == 3
    settings.write_text('// User settings.\n{"model": "gpt-4.1"}\n')
    fire(guarded, files, call, env, "copilot", "-p", "go")
    assert runs(guarded) == 4
    # Without that trust Copilot CLI may not load .github/hooks: both run.
    env.pop("COPILOT_ALLOW_ALL")
    fire(guarded, files, call, env, "copilot", "-p", "go")
    assert runs(guarded) == 6
    status = kodelet("copilot", "status", cwd=guarded, env=env).stdout
    assert "it is sure when Copilot CLI trusts the folder (COPILOT_ALLOW_ALL=true" in status


def test_copilot_in_a_folder_it_was_told_to_trust_runs_once(
    guarded: Path, isolated_home: Path
) -> None:
    """Trusting a folder in Copilot CLI lists it in ``trustedFolders`` of its
    ``config.json`` (a file it writes with ``//`` comments)."""
    git_repo(guarded)
    install_both("copilot", guarded)
    files = [
        guarded / ".github" / "hooks" / "kodelet.json",
        isolated_home / ".copilot" / "hooks" / "kodelet.json",
    ]
    config = isolated_home / ".copilot" / "config.json"
    config.write_text(f"// Managed.\n{json.dumps({'trustedFolders': [str(guarded)]})}\n")
    env = plain_env(guarded, COPILOT_PROJECT_DIR=str(guarded))
    call = {**pre_tool(guarded, "ls"), "transcript_path": None}
    fire(guarded, files, call, env, "copilot", "-p", "go")
    assert runs(guarded) == 1
    # From a subfolder that is not listed itself, kodelet cannot tell: both run.
    deep = guarded / "src"
    deep.mkdir()
    fire(guarded, files, {**call, "cwd": str(deep)}, env, "copilot", "-p", "go")
    assert runs(guarded) == 3


def opencode_call(project: Path, plugins: list[Path], env: dict[str, str]) -> list[str]:
    """What each of kodelet's opencode plugins does for one tool call: its command through
    ``/bin/sh -c`` in opencode's folder, with the call on stdin."""
    from kodelet.cli.plugin_files import plugin_command

    call = {
        "hook_event_name": "tool.execute.before",
        "session_id": "s",
        "cwd": str(project),
        "tool_name": "bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "t",
    }
    out = []
    for plugin in plugins:
        command = plugin_command(plugin.read_text())
        assert command
        done = subprocess.run(["/bin/sh", "-c", command, "opencode"], input=json.dumps(call),
                              cwd=project, env=env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        out.append(done.stdout)
    return out


def test_opencode_at_both_scopes_runs_once(guarded: Path, isolated_home: Path) -> None:
    """opencode loads the plugins of every ``.opencode/`` from its folder up to the
    repository root, and its user folder's."""
    git_repo(guarded)
    install_both("opencode", guarded)
    plugins = [
        guarded / ".opencode" / "plugin" / "kodelet.js",
        isolated_home / ".config" / "opencode" / "plugin" / "kodelet.js",
    ]
    opencode_call(guarded, plugins, plain_env(guarded))
    assert runs(guarded) == 1
    status = kodelet("opencode", "status", cwd=guarded, env=plain_env(guarded)).stdout
    assert "does the work: no, the project entry does (this one stands down)" in status
    deep = guarded / "src"
    deep.mkdir()
    opencode_call(deep, plugins, plain_env(guarded))
    assert runs(guarded) == 2
    # Told to skip the project's config, opencode loads no project plugin: both run.
    opencode_call(guarded, plugins, plain_env(guarded, OPENCODE_DISABLE_PROJECT_CONFIG="1"))
    assert runs(guarded) == 4


def test_an_opencode_plugin_the_checkout_changed_never_stands_the_user_down(
    guarded: Path, isolated_home: Path
) -> None:
    """A cloned repository can ship ``.opencode/plugin/kodelet.js`` with kodelet's first
    line and command but a body that lets everything through: only the plugin exactly
    as kodelet writes it counts as doing the work."""
    git_repo(guarded)
    install_both("opencode", guarded)
    project = guarded / ".opencode" / "plugin" / "kodelet.js"
    project.write_text(project.read_text().replace('refuse("tool call", answer);', ""))
    user = isolated_home / ".config" / "opencode" / "plugin" / "kodelet.js"
    opencode_call(guarded, [user], plain_env(guarded))
    assert runs(guarded) == 1

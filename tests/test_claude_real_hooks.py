"""Published Claude Code hooks, downloaded from npm at test time and run unchanged.

The packages are pinned by version and by the registry's sha512 integrity, checked
before anything in them runs; the scripts are never committed here (docs/CLAUDE.md,
"Real hooks in the test suite"). Each hook runs both inside kodelet (``kodelet hooks
run``, the hooks placed where Claude Code itself would read them) and through the
Claude runner (``Runner``/``merge`` and ``kodelet claude run``). Without npm or the
registry the module is skipped, saying which.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from kodelet.claude import CommandHook, HookMatcher, Outcome, Runner, merge

from tests.kit.cli import no_traceback, run_kodelet


@attrs.frozen
class Pinned:
    """One npm tarball, pinned by version and by the registry's ``dist.integrity``."""

    name: str
    version: str
    integrity: str


SELFISH = Pinned(
    "selfish-pipeline",
    "1.3.0",
    "sha512-VvwhCwZss/379xp3/6yWCcA22HD3aZKqMZjur7ZlygPsiv2OkpiJZS2ry5xd60sphGUq1jJjwDcP+Wh9Wx15CQ==",
)
CANARY = Pinned(
    "@coo-quack/sensitive-canary",
    "0.8.1",
    "sha512-PRYk2XZRPQTXGMHLNMQiRDGkBvdzMoOvjFG1RhDBrwlvB+nopDPalOOubq0yuNq38Xsx7TXZlGmHqkPsK56ckw==",
)
QOL = Pinned(
    "@torka/claude-qol",
    "0.3.0",
    "sha512-xDI4Pm5DopqjYenqp6Vh6Dd3ecIImNd0tHAcdHaOfWe+DU/CafOWSBCqC7/X/YxtOM/WbtIswEVW0dBa5Vd2EQ==",
)
PINNED = (SELFISH, CANARY, QOL)

NEEDS = ("npm", "node", "bash", "jq", "git", "python3")
FAKE_AWS_SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"


def integrity_of(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def npm_pack(pkg: Pinned, dest: Path, cache: Path) -> Path:
    """The pinned tarball from the registry, checked against its integrity, extracted.

    A registry that cannot be reached skips the module; a tarball whose hash differs
    fails it, since that is exactly what the pin is there to catch."""
    env = {**os.environ, "npm_config_cache": str(cache), "HOME": str(cache)}
    try:
        done = subprocess.run(
            ["npm", "pack", f"{pkg.name}@{pkg.version}", "--pack-destination", str(dest)],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            cwd=dest,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm registry did not answer for {pkg.name}@{pkg.version}")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"npm pack {pkg.name}@{pkg.version} failed (registry unreachable?): {last}")
    tarball = dest / done.stdout.strip().splitlines()[-1]
    assert integrity_of(tarball.read_bytes()) == pkg.integrity, f"{tarball.name}: hash mismatch"
    root = dest / tarball.name.removesuffix(".tgz")
    with tarfile.open(tarball) as tar:
        tar.extractall(root, filter="data")
    return root / "package"


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    missing = [tool for tool in NEEDS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"real hooks need {', '.join(missing)} on PATH")
    dest = tmp_path_factory.mktemp("npm")
    cache = tmp_path_factory.mktemp("npm-cache")
    return {pkg.name: npm_pack(pkg, dest, cache) for pkg in PINNED}


# -- placing the hooks where Claude Code reads them ---------------------------------


def command(cmd: str, matcher: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"hooks": [{"type": "command", "command": cmd}]}
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


def canary_hooks(pkg: Path) -> dict[str, Any]:
    """The package's own hooks.json entries, run from its compiled ``dist/`` because
    its ``src/*.ts`` entry points need a newer node than the one this suite assumes."""
    return {
        "PreToolUse": [
            command(
                f'node "{pkg}/dist/pre-tool-use-hook.js"', "Read|NotebookRead|Bash|Grep|mcp__.*"
            )
        ],
        "UserPromptSubmit": [command(f'node "{pkg}/dist/user-prompt-submit-hook.js"')],
    }


def qol_hooks(pkg: Path) -> dict[str, Any]:
    """examples/settings.local.example.json's PreToolUse entry, pointed at the package."""
    return {
        "PreToolUse": [
            command(
                f'python3 "{pkg}/hooks/auto_approve_safe.py"',
                "Bash|Read|Grep|Glob|Write|Edit|MultiEdit",
            )
        ]
    }


def project_settings(project: Path, hooks: dict[str, Any]) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))


def install_selfish(packages: dict[str, Path], project: Path) -> None:
    """selfish-pipeline is a Claude Code plugin repository: placed, unchanged, where
    installed plugin repositories live (``plugins add`` leaves its scripts/ behind, see
    test_plugins_add_keeps_the_scripts_hooks_json_names)."""
    del project
    dest = Path(os.environ["KODELET_HOME"]) / "plugins" / "npm@selfish-pipeline"
    shutil.copytree(packages[SELFISH.name], dest)


def pipeline_active(project: Path, phase: str, feature: str = "login-form") -> None:
    """The state files selfish-pipeline's hooks read, as its /selfish commands write them."""
    claude = project / ".claude"
    claude.mkdir(parents=True, exist_ok=True)
    (claude / ".selfish-active").write_text(feature + "\n")
    (claude / ".selfish-phase").write_text(phase + "\n")


def hooks_run(project: Path, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    res = run_kodelet(
        "--cwd", str(project), "hooks", "run", event, "--payload", "-", stdin=json.dumps(payload)
    )
    assert res.returncode == 0, res.stderr
    no_traceback(res)
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def claude_run(project: Path, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    res = run_kodelet(
        "--cwd", str(project), "claude", "run", event, "--payload", "-", stdin=json.dumps(payload)
    )
    assert res.returncode == 0, res.stderr
    no_traceback(res)
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def fire(project: Path, event: str, cmd: str, payload: dict[str, Any], **kw: Any) -> Any:
    """One command hook through the Claude runner: (results, merged document)."""
    matcher = kw.pop("matcher", None)
    env = kw.pop("plugin_root", None)
    runner = Runner(
        {event: [HookMatcher(matcher, [CommandHook(cmd, plugin_root=env)])]},
        cwd=str(project),
        session_id="s1",
    )
    try:
        results = runner.fire(event, {"cwd": str(project), **payload})
    finally:
        runner.close()
    return results, merge(event, results)


def selfish_cmd(packages: dict[str, Path], script: str) -> tuple[str, str]:
    """The command line hooks.json gives ``script``, and the plugin root it expands in."""
    root = str(packages[SELFISH.name])
    return f'"${{CLAUDE_PLUGIN_ROOT}}/scripts/{script}"', root


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


# -- exit 2 -------------------------------------------------------------------------


def test_exit_2_on_pre_tool_use_denies_reading_a_secret(
    packages: dict[str, Path], work: Path
) -> None:
    """@coo-quack/sensitive-canary 0.8.1, dist/pre-tool-use-hook.js: exit 2 with the
    reason on stderr when a Read or a Bash ``cat`` would bring a .env into the chat."""
    (work / ".env").write_text(FAKE_AWS_SECRET)
    (work / "notes.txt").write_text("nothing secret\n")
    project_settings(work, canary_hooks(packages[CANARY.name]))

    read = hooks_run(
        work, "before_tool_call", {"tool_name": "file_read", "tool_input": {"file_path": ".env"}}
    )
    assert read["blocked"] is True and "sensitive-canary blocked" in read["reason"]
    assert ".env" in read["reason"]
    fine = hooks_run(
        work,
        "before_tool_call",
        {"tool_name": "file_read", "tool_input": {"file_path": str(work / "notes.txt")}},
    )
    assert fine == {"blocked": False}
    cat = hooks_run(
        work, "before_tool_call", {"tool_name": "bash", "tool_input": {"command": "cat .env"}}
    )
    assert cat["blocked"] is True and "sensitive-canary" in cat["reason"]

    doc = claude_run(work, "PreToolUse", {"tool_name": "Read", "tool_input": {"file_path": ".env"}})
    out = doc["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "sensitive-canary blocked" in out["permissionDecisionReason"]
    pkg = packages[CANARY.name]
    results, merged = fire(
        work,
        "PreToolUse",
        f'node "{pkg}/dist/pre-tool-use-hook.js"',
        {"tool_name": "Read", "tool_input": {"file_path": str(work / ".env")}},
    )
    assert [r.exit_code for r in results] == [2]
    assert merged["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_exit_2_on_user_prompt_submit_blocks_a_pasted_secret(
    packages: dict[str, Path], work: Path
) -> None:
    """@coo-quack/sensitive-canary 0.8.1, dist/user-prompt-submit-hook.js: exit 2 when the
    prompt itself carries a secret; a clean prompt passes."""
    project_settings(work, canary_hooks(packages[CANARY.name]))
    secret = f"please deploy with {FAKE_AWS_SECRET.strip()}"
    blocked = hooks_run(work, "user_message_send", {"message": secret})
    assert blocked["blocked"] is True and "sensitive-canary" in blocked["reason"]
    assert hooks_run(work, "user_message_send", {"message": "add a login form"}) == {
        "blocked": False
    }
    doc = claude_run(work, "UserPromptSubmit", {"prompt": secret})
    assert doc["decision"] == "block" and "sensitive-canary" in doc["reason"]


# -- permissionDecision deny, ask, allow ---------------------------------------------


def test_permission_decision_deny_ask_and_allow(packages: dict[str, Path], work: Path) -> None:
    """@torka/claude-qol 0.3.0, hooks/auto_approve_safe.py (with its rules file): allow for
    allowlisted commands, ask for anything else, deny for writes to sensitive paths."""
    project_settings(work, qol_hooks(packages[QOL.name]))

    def before(tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        return hooks_run(work, "before_tool_call", {"tool_name": tool, "tool_input": tool_input})

    assert before("bash", {"command": "git status"}) == {"blocked": False}
    ask = before("bash", {"command": "curl https://example.com"})
    assert ask == {
        "blocked": True,
        "ask": True,
        "reason": "Command not in allowlist: curl https://example.com",
    }
    deny = before("file_write", {"file_path": str(work / ".env"), "text": "X=1"})
    assert deny == {"blocked": True, "reason": "Cannot modify sensitive files"}

    def decision(tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        doc = claude_run(work, "PreToolUse", {"tool_name": tool, "tool_input": tool_input})
        out: dict[str, Any] = doc["hookSpecificOutput"]
        return out

    assert decision("Bash", {"command": "git log -1"})["permissionDecision"] == "allow"
    asked = decision("Bash", {"command": "curl https://example.com"})
    assert asked["permissionDecision"] == "ask"
    assert asked["permissionDecisionReason"] == "Command not in allowlist: curl https://example.com"
    denied = decision("Write", {"file_path": str(work / ".env"), "content": "X=1"})
    assert denied == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Cannot modify sensitive files",
    }


def test_deny_with_an_alternative_command_is_still_a_deny(
    packages: dict[str, Path], work: Path
) -> None:
    """selfish-pipeline 1.3.0, scripts/selfish-bash-guard.sh via the plugin's hooks.json:
    during a pipeline ``git push --force`` is denied. The hook also offers ``updatedInput``
    with a safe command; Claude Code applies updatedInput only when allowing, so the call
    stays denied and the input is not rewritten."""
    install_selfish(packages, work)
    push = {"tool_name": "bash", "tool_input": {"command": "git push --force origin main"}}
    assert hooks_run(work, "before_tool_call", push) == {"blocked": False}
    pipeline_active(work, "implement")
    denied = hooks_run(work, "before_tool_call", push)
    assert denied == {
        "blocked": True,
        "reason": "SELFISH GUARD: git push --force is blocked during pipeline. "
        "Safe alternative: git push",
    }
    assert hooks_run(
        work, "before_tool_call", {"tool_name": "bash", "tool_input": {"command": "git push"}}
    ) == {"blocked": False}

    cmd, root = selfish_cmd(packages, "selfish-bash-guard.sh")
    results, merged = fire(
        work,
        "PreToolUse",
        cmd,
        {"tool_name": "Bash", "tool_input": {"command": "git reset --hard HEAD~1"}},
        matcher="Bash",
        plugin_root=root,
    )
    assert [r.outcome for r in results] == [Outcome.SUCCESS]
    out = merged["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "updatedInput" not in out
    assert out["permissionDecisionReason"].startswith("SELFISH GUARD: git reset --hard")


# -- additionalContext and plain-text context ---------------------------------------


def test_additional_context_on_user_prompt_and_failed_tool(
    packages: dict[str, Path], work: Path
) -> None:
    """selfish-pipeline 1.3.0, scripts/selfish-user-prompt-submit.sh and
    scripts/selfish-failure-hint.sh: additionalContext naming the pipeline's phase, and a
    hint after a failed tool call."""
    install_selfish(packages, work)
    pipeline_active(work, "review", feature="checkout")
    prompt = hooks_run(work, "user_message_send", {"message": "go on"})
    assert prompt == {
        "blocked": False,
        "additional_context": ["[Pipeline: checkout] [Phase: review]"],
    }
    failed = {
        "tool_name": "bash",
        "tool_input": {"command": "cat missing.txt"},
        "tool_output": {
            "toolName": "bash",
            "success": False,
            "error": "cat: missing.txt: No such file or directory",
        },
    }
    after = hooks_run(work, "after_tool_call", failed)
    assert after["additional_context"] == [
        "[SELFISH HINT] Check that the file or directory exists. (tool: Bash)"
    ]
    log = (work / ".claude" / ".selfish-failures.log").read_text()
    assert "Bash: cat: missing.txt: No such file or directory" in log

    doc = claude_run(work, "UserPromptSubmit", {"prompt": "go on"})
    assert doc["hookSpecificOutput"]["additionalContext"] == "[Pipeline: checkout] [Phase: review]"
    cmd, root = selfish_cmd(packages, "selfish-failure-hint.sh")
    _, merged = fire(
        work,
        "PostToolUseFailure",
        cmd,
        {"tool_name": "Bash", "tool_input": {"command": "x"}, "error": "EACCES: permission"},
        plugin_root=root,
    )
    assert merged["hookSpecificOutput"]["additionalContext"] == (
        "[SELFISH HINT] Check file permissions. You may need chmod or sudo. (tool: Bash)"
    )


def test_plain_text_context_at_session_start_and_subagent_start(
    packages: dict[str, Path], work: Path
) -> None:
    """selfish-pipeline 1.3.0, scripts/session-start-context.sh (plain-text stdout) and
    scripts/selfish-subagent-context.sh (JSON additionalContext). Neither event has a
    kodelet counterpart, so they run through the Claude runner only."""
    install_selfish(packages, work)
    pipeline_active(work, "implement", feature="search")
    (work / ".claude" / ".selfish-ci-passed").write_text("1700000000\n")
    started = claude_run(work, "SessionStart", {"source": "startup"})
    assert started["hookSpecificOutput"]["additionalContext"] == (
        "[SELFISH PIPELINE ACTIVE] Feature: search | Last CI: PASSED (1700000000)"
    )
    sub = claude_run(work, "SubagentStart", {"agent_id": "a1", "agent_type": "Explore"})
    assert sub["hookSpecificOutput"]["additionalContext"] == (
        "[SELFISH PIPELINE] Feature: search | Phase: implement"
    )

    cmd, root = selfish_cmd(packages, "session-start-context.sh")
    results, merged = fire(work, "SessionStart", cmd, {"source": "resume"}, plugin_root=root)
    assert results[0].exit_code == 0
    assert merged["hookSpecificOutput"]["additionalContext"].startswith("[SELFISH PIPELINE ACTIVE]")
    listed = run_kodelet("--cwd", str(work), "hooks", "list", "--json")
    rows = [r for r in json.loads(listed.stdout) if r["kind"] == "claude"]
    skipped = {r["name"] for r in rows if r["status"] == "skipped"}
    assert any(":SessionStart:" in name for name in skipped)


# -- exit 2 on Stop and on TaskCompleted --------------------------------------------


def test_stop_gate_keeps_the_agent_going_until_ci_passed(
    packages: dict[str, Path], work: Path
) -> None:
    """selfish-pipeline 1.3.0, scripts/selfish-stop-gate.sh: exit 2 on Stop while the
    pipeline is in an implement phase without a fresh CI pass; the reason becomes the
    next message. Honours ``stop_hook_active``."""
    install_selfish(packages, work)
    stop = {"messages": [{"role": "assistant", "content": "done"}]}
    assert hooks_run(work, "agent_stop", stop) == {}
    pipeline_active(work, "implement", feature="cart")
    gated = hooks_run(work, "agent_stop", stop)
    (reason,) = gated["follow_up_messages"]
    assert reason.startswith("SELFISH GATE: CI has not been run. Pipeline 'cart' Phase 'implement'")
    (work / ".claude" / ".selfish-ci-passed").write_text(f"{int(time.time())}\n")
    assert hooks_run(work, "agent_stop", stop) == {}
    (work / ".claude" / ".selfish-ci-passed").write_text(f"{int(time.time()) - 3600}\n")
    stale = hooks_run(work, "agent_stop", stop)
    assert stale["follow_up_messages"][0].startswith("SELFISH GATE: CI results are stale")

    doc = claude_run(work, "Stop", {"stop_hook_active": False})
    assert doc["decision"] == "block" and "CI results are stale" in doc["reason"]
    cmd, root = selfish_cmd(packages, "selfish-stop-gate.sh")
    results, merged = fire(work, "Stop", cmd, {"stop_hook_active": True}, plugin_root=root)
    assert results[0].exit_code == 0 and "decision" not in merged


def test_task_completed_gate_exit_2(packages: dict[str, Path], work: Path) -> None:
    """selfish-pipeline 1.3.0, scripts/selfish-task-completed-gate.sh: exit 2 on
    TaskCompleted without CI; spec phases pass. No kodelet counterpart: runner only."""
    install_selfish(packages, work)
    pipeline_active(work, "spec")
    task = {"task_id": "t1", "task_subject": "write the spec"}
    assert "decision" not in claude_run(work, "TaskCompleted", task)
    pipeline_active(work, "review", feature="auth")
    cmd, root = selfish_cmd(packages, "selfish-task-completed-gate.sh")
    results, merged = fire(work, "TaskCompleted", cmd, task, plugin_root=root)
    assert results[0].exit_code == 2
    assert results[0].outcome == Outcome.BLOCKING
    assert merged["decision"] == "block"
    assert merged["reason"].startswith("SELFISH TASK GATE: CI has not been run. Pipeline 'auth'")


# -- side effects, PermissionRequest ------------------------------------------------


def test_post_tool_use_tracks_changed_files(packages: dict[str, Path], work: Path) -> None:
    """selfish-pipeline 1.3.0, scripts/track-selfish-changes.sh on PostToolUse: records the
    edited file and clears the CI flag; it answers nothing, so the result is empty."""
    install_selfish(packages, work)
    pipeline_active(work, "implement")
    ci = work / ".claude" / ".selfish-ci-passed"
    ci.write_text("1\n")
    edited = {
        "tool_name": "file_write",
        "tool_input": {"file_path": str(work / "app.py"), "text": "x = 1\n"},
        "tool_output": {"toolName": "file_write", "success": True},
    }
    assert hooks_run(work, "after_tool_call", edited) == {}
    assert (work / ".claude" / ".selfish-changes.log").read_text() == f"{work / 'app.py'}\n"
    assert not ci.exists()
    read = {**edited, "tool_name": "file_read", "tool_input": {"file_path": str(work / "b.py")}}
    hooks_run(work, "after_tool_call", read)
    assert "b.py" not in (work / ".claude" / ".selfish-changes.log").read_text()


def test_permission_request_allows_only_plain_ci_commands(
    packages: dict[str, Path], work: Path
) -> None:
    """selfish-pipeline 1.3.0, scripts/selfish-permission-request.sh: PermissionRequest
    ``decision: {behavior: allow}`` for ``npm test`` during implement, nothing for a
    chained command. No kodelet counterpart: runner only."""
    install_selfish(packages, work)
    pipeline_active(work, "implement")
    allowed = claude_run(
        work, "PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "npm test"}}
    )
    assert allowed["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    cmd, root = selfish_cmd(packages, "selfish-permission-request.sh")
    _, merged = fire(
        work,
        "PermissionRequest",
        cmd,
        {"tool_name": "Bash", "tool_input": {"command": "npm test && rm -rf /"}},
        plugin_root=root,
    )
    assert "decision" not in merged.get("hookSpecificOutput", {})


def test_every_selfish_hook_is_listed_and_the_model_hooks_are_skipped(
    packages: dict[str, Path], work: Path
) -> None:
    """selfish-pipeline 1.3.0, hooks/hooks.json unchanged: its command hooks load and its
    ``agent``/``prompt`` hooks are listed as skipped with a reason."""
    install_selfish(packages, work)
    listed = run_kodelet("--cwd", str(work), "hooks", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [r for r in json.loads(listed.stdout) if r["kind"] == "claude"]
    active = {r["name"].split(":")[-3] for r in rows if r["status"] == "active"}
    assert {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit"} <= active
    assert {"Stop", "SubagentStop"} <= active
    assert all(r["reason"] for r in rows if r["status"] == "skipped")


def test_the_extracted_packages_are_the_pinned_ones(packages: dict[str, Path]) -> None:
    """Each extracted package.json names the pinned package and version."""
    for pkg in PINNED:
        manifest = json.loads((packages[pkg.name] / "package.json").read_text())
        assert (manifest["name"], manifest["version"]) == (pkg.name, pkg.version)


def test_a_tarball_with_another_hash_is_refused() -> None:
    """The integrity check can fail: a changed byte gives another sha512."""
    assert integrity_of(b"selfish") != integrity_of(b"selfisH")


def test_plugins_add_keeps_the_scripts_hooks_json_names(
    packages: dict[str, Path], work: Path
) -> None:
    """selfish-pipeline 1.3.0 installed with ``kodelet plugins add DIR``: its bash guard
    (scripts/selfish-bash-guard.sh) must still be there to deny."""
    res = run_kodelet(
        "--cwd",
        str(work),
        "plugins",
        "add",
        str(packages[SELFISH.name]),
        "--global",
        "--name",
        "npm/selfish-pipeline",
    )
    assert res.returncode == 0, res.stderr
    pipeline_active(work, "implement")
    push = {"tool_name": "bash", "tool_input": {"command": "git push --force"}}
    assert hooks_run(work, "before_tool_call", push)["blocked"] is True

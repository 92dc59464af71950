"""Attacks on the Claude Code surfaces (issue 24): matchers, settings files, Claude
plugins, `claude run`, replay, async hooks and emission. Each test reproduces its
attack with real files, real processes and the real CLI."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from kodelet.claude import Matcher, MatcherError

from tests.kit.claude import NO_RM, command, project_settings, script, settings
from tests.kit.cli import no_traceback, run_before_tool_call, run_kodelet

RM = {"command": "rm -rf /"}


def hooks_run(project: Path, tool: str, *extra: str, timeout: float = 60) -> Any:
    payload = json.dumps({"tool_name": tool, "tool_input": RM})
    return run_before_tool_call(project, payload, *extra, timeout=timeout)


def listed(project: Path, *extra: str) -> list[dict[str, Any]]:
    res = run_kodelet("--cwd", str(project), "hooks", "list", "--json", *extra)
    assert res.returncode == 0, res.stderr
    rows: list[dict[str, Any]] = json.loads(res.stdout)
    return rows


# -- item 4: matching is bounded in time whatever the pattern -------------------------


@pytest.mark.parametrize("pattern", ["^(a+)+$", "^(a|aa)+$", "^(.*a){12}$", "(a*)*b"])
def test_a_backtracking_matcher_cannot_hang_the_host(project: Path, pattern: str) -> None:
    guard = script(project, "no_rm.sh", NO_RM)
    settings(project_settings(project), {"PreToolUse": [command(guard, pattern)]})
    tool = "a" * 29 + "!"  # the model chooses tool names (MCP)
    start = time.monotonic()
    res = hooks_run(project, tool, "--timeout", "1", timeout=30)
    assert time.monotonic() - start < 10, "matching took longer than the hook's timeout"
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"blocked": False}
    assert json.loads(hooks_run(project, "a" * 29).stdout)["blocked"] is (pattern != "(a*)*b")


def test_matching_a_huge_value_is_linear() -> None:
    matchers = [Matcher(p) for p in ("^(a+)+$", "(x+x+)+y", "^(\\w+\\s?)*$", "(.*){20}z")]
    value = "a" * 200_000 + "!"
    start = time.monotonic()
    assert not any(m(value) for m in matchers)
    assert time.monotonic() - start < 2


# -- item 5: what JavaScript reads otherwise is refused, with the file and key -------


def test_a_javascript_named_group_is_read_as_javascript_reads_it(project: Path) -> None:
    guard = script(project, "no_rm.sh", NO_RM)
    settings(project_settings(project), {"PreToolUse": [command(guard, "(?<tool>Bash)")]})
    assert json.loads(hooks_run(project, "bash").stdout) == {
        "blocked": True,
        "reason": "no rm -rf here",
    }


@pytest.mark.parametrize(
    "pattern",
    ["(?=Bash)", "(?<!x)Bash", "(?i)bash", "(?P<t>Bash)", "(B)\\1ash", "\\ABash", "\\p{L}ash"],
)
def test_javascript_syntax_read_otherwise_is_refused_with_file_and_key(
    project: Path, pattern: str
) -> None:
    guard = script(project, "no_rm.sh", NO_RM)
    path = settings(project_settings(project), {"PreToolUse": [command(guard, pattern)]})
    rows = [r for r in listed(project) if r["name"].startswith("claude:project:PreToolUse:0")]
    assert [r["status"] for r in rows] == ["skipped"]
    assert rows[0]["path"] == str(path)
    assert "hooks.PreToolUse[0].matcher" in rows[0]["reason"]
    res = run_kodelet("--cwd", str(project), "hooks", "list")
    assert "hooks.PreToolUse[0].matcher" in res.stdout + res.stderr
    no_traceback(res)
    with pytest.raises(MatcherError):
        Matcher(pattern)


def test_a_refused_matcher_blocks_a_fail_closed_guard(project: Path) -> None:
    guard = script(project, "no_rm.sh", NO_RM)
    settings(project_settings(project), {"PreToolUse": [command(guard, "(?=Bash)")]})
    (project / ".kodelet" / "config.toml").write_text(
        '[hooks."claude:project:PreToolUse:0:0"]\nfail_closed = true\n'
    )
    out = json.loads(hooks_run(project, "bash").stdout)
    assert out["blocked"] is True and "failed (fail-closed)" in out["reason"]


# -- item 6: `kodelet claude run` honours the off switches ------------------------------


def claude_run(project: Path, *flags: str, env: dict[str, str] | None = None) -> Any:
    payload = json.dumps({"tool_name": "Bash", "tool_input": RM})
    return run_kodelet(
        "--cwd",
        str(project),
        *flags,
        "claude",
        "run",
        "PreToolUse",
        "-p",
        "-",
        stdin=payload,
        env=env,
    )


@pytest.mark.parametrize("switch", ["--no-hooks", "KODELET_NO_HOOKS", "config", "disabled"])
def test_claude_run_honours_the_off_switches(project: Path, switch: str) -> None:
    marker = project / "ran"
    guard = script(project, "guard.sh", f"#!/bin/bash\ntouch {marker}\nexit 2\n")
    settings(project_settings(project), {"PreToolUse": [command(guard, "Bash")]})
    flags: tuple[str, ...] = ("--no-hooks",) if switch == "--no-hooks" else ()
    env = {"KODELET_NO_HOOKS": "1"} if switch == "KODELET_NO_HOOKS" else None
    if switch == "config":
        (project / ".kodelet" / "config.toml").write_text("[claude]\nhooks = false\n")
    if switch == "disabled":
        (project / ".kodelet" / "config.toml").write_text(
            '[hooks]\ndisabled = ["claude:project:PreToolUse:0:0"]\n'
        )
    res = claude_run(project, *flags, env=env)
    assert res.returncode == 0, res.stderr
    assert not marker.exists()
    assert json.loads(res.stdout) == {}
    assert ("disabled" if switch == "disabled" else "no Claude Code hook run") in res.stderr
    on = claude_run(project)
    if switch in ("config", "disabled"):
        assert not marker.exists()
    else:
        assert on.returncode == 0 and marker.exists()


def test_claude_run_refuses_a_bad_config(project: Path) -> None:
    (project / ".kodelet" / "config.toml").write_text('[claude]\nhooks = "no"\n')
    res = claude_run(project)
    assert res.returncode == 2 and "claude.hooks" in res.stderr
    no_traceback(res)


# -- item 2: Claude Code's settings files and plugins pass the executables' trust rules --

OTHER_UID = 54321


def planted(project: Path, marker: Path) -> Path:
    """A project settings file whose PreToolUse command leaves ``marker`` when it runs."""
    guard = script(project, "guard.sh", f"#!/bin/bash\ntouch {marker}\nexit 2\n")
    return settings(project_settings(project), {"PreToolUse": [command(guard, "Bash")]})


def ran_nothing(project: Path, marker: Path, why: str) -> None:
    res = hooks_run(project, "bash")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"blocked": False}
    assert not marker.exists()
    claude = claude_run(project)
    assert claude.returncode == 0 and json.loads(claude.stdout) == {}
    assert not marker.exists()
    assert "untrusted: " in claude.stderr and why in claude.stderr
    rows = [r for r in listed(project, "--no-exec") if r["name"].startswith("claude:")]
    assert rows and all(r["status"] == "skipped" for r in rows)
    assert all("untrusted: " in r["reason"] and why in r["reason"] for r in rows)


@pytest.mark.parametrize("how", ["file 666", "dir 777", "file owner", "dir owner"])
def test_a_settings_file_others_could_write_is_not_run(project: Path, how: str) -> None:
    marker = project / "ran"
    path = planted(project, marker)
    target = path if how.startswith("file") else path.parent
    if how.endswith("owner"):
        os.chown(target, OTHER_UID, OTHER_UID)
        why = f"owned by uid {OTHER_UID}"
    else:
        target.chmod(0o666 if target.is_file() else 0o777)
        why = "group- or world-writable"
    ran_nothing(project, marker, why)
    # the same file, put right, runs
    os.chown(target, os.geteuid(), os.getegid())
    target.chmod(0o644 if target.is_file() else 0o755)
    assert json.loads(hooks_run(project, "bash").stdout)["blocked"] is True
    assert marker.exists()


@pytest.mark.parametrize("form", ["{guard}", "python3 {guard}", "$CLAUDE_PROJECT_DIR/{rel}"])
def test_a_script_in_the_checkout_others_could_write_is_not_run(project: Path, form: str) -> None:
    marker = project / "ran"
    guard = Path(script(project, "guard.sh", f"#!/bin/bash\ntouch {marker}\nexit 2\n"))
    guard.chmod(0o777)
    text = form.format(guard=guard, rel=guard.relative_to(project))
    if text.startswith("python3"):
        guard.write_text(f"open({str(marker)!r}, 'w'); raise SystemExit(2)\n")
    settings(project_settings(project), {"PreToolUse": [command(text, "Bash")]})
    res = hooks_run(project, "bash")
    assert json.loads(res.stdout) == {"blocked": False} and not marker.exists()
    row = next(r for r in listed(project, "--no-exec") if r["name"].startswith("claude:"))
    assert row["status"] == "skipped" and "group- or world-writable" in row["reason"]
    assert text in row["reason"]


def test_a_plugin_hooks_json_others_could_write_is_not_run(
    project: Path, kodelet_home: Path
) -> None:
    marker = project / "ran"
    plugin = kodelet_home / "plugins" / "acme@tools"
    hooks_json = plugin / "hooks" / "hooks.json"
    hooks_json.parent.mkdir(parents=True)
    hooks_json.write_text(
        json.dumps({"hooks": {"PreToolUse": [command(f"touch {marker}; exit 2", "Bash")]}})
    )
    hooks_json.chmod(0o666)
    res = hooks_run(project, "bash")
    assert json.loads(res.stdout) == {"blocked": False} and not marker.exists()
    rows = [r for r in listed(project, "--no-exec") if r["name"].startswith("claude:plugin")]
    assert [r["status"] for r in rows] == ["skipped"]
    assert "group- or world-writable" in rows[0]["reason"]
    hooks_json.chmod(0o644)
    assert json.loads(hooks_run(project, "bash").stdout)["blocked"] is True


def test_an_untrusted_fail_closed_claude_guard_blocks(project: Path) -> None:
    marker = project / "ran"
    planted(project, marker).chmod(0o666)
    (project / ".kodelet" / "config.toml").write_text(
        '[hooks."claude:project:PreToolUse:0:0"]\nfail_closed = true\n'
    )
    out = json.loads(hooks_run(project, "bash").stdout)
    assert out["blocked"] is True and "failed (fail-closed)" in out["reason"]
    assert not marker.exists()


def test_hooks_list_no_exec_shows_each_claude_hook_with_its_command_and_verdict(
    project: Path,
) -> None:
    marker = project / "ran"
    planted(project, marker)
    res = run_kodelet("--cwd", str(project), "hooks", "list", "--no-exec")
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if "claude:project:PreToolUse:0:0" in ln)
    assert "active" in line and "trusted" in line
    assert f"runs: {project / '.claude' / 'hooks' / 'guard.sh'}" in line
    assert not marker.exists()


# -- item 3: replay runs hooks in the project, never in the transcript's recorded cwd ----

GUARD_SAYS = "#!/bin/bash\n{touch}echo '{who} guard' >&2\nexit 2\n"


def test_replay_runs_hooks_in_the_project_not_the_recorded_cwd(
    project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "someone-else"
    marker = tmp_path / "ran-elsewhere"
    for root, who, touch in ((project, "project", ""), (elsewhere, "planted", f"touch {marker}\n")):
        script(root, "guard.sh", GUARD_SAYS.format(touch=touch, who=who))
    settings(project_settings(project), {"UserPromptSubmit": [command(".claude/hooks/guard.sh")]})
    entry = {
        "type": "user",
        "sessionId": "s1",
        "cwd": str(elsewhere),
        "message": {"role": "user", "content": "hello"},
    }
    transcript = project / "t.jsonl"
    transcript.write_text(json.dumps(entry) + "\n")
    res = run_kodelet("--cwd", str(project), "replay", str(transcript), "--json")
    assert res.returncode == 0, res.stderr
    assert not marker.exists(), "a hook ran in the transcript's recorded cwd"
    hooks = json.loads(res.stdout)["timeline"][0]["hooks"]
    assert [h["detail"] for h in hooks] == ["project guard"]


# -- item 10: text reports escape what a transcript holds ------------------------------

FORGED = "ls\x1b[2K\r\x1b[1A\x1b]0;owned\x07\x1b]52;c;Y3VybA==\x07\u202e fine"

ECHO_GUARD = """#!{py}
import json, sys
if sys.argv[1] == "hook":
    print("before_tool_call"); sys.exit(0)
cmd = json.load(sys.stdin)["tool_input"].get("command", "")
print(json.dumps({{"blocked": True, "reason": "refused " + cmd}}))
"""


def hostile_transcript(path: Path, session: str) -> Path:
    def entry(kind: str, content: Any) -> dict[str, Any]:
        return {
            "type": kind,
            "sessionId": session,
            "cwd": "/nowhere",
            "message": {"id": f"m-{kind}", "role": kind, "content": content},
        }

    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": FORGED}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": FORGED}
    lines = [
        entry("user", "list files " + FORGED),
        entry("assistant", [use]),
        entry("user", [result]),
        entry("assistant", [{"type": "text", "text": "done " + FORGED}]),
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    return path


@pytest.mark.parametrize("report", ["timeline", "corpus", "comparison"])
def test_text_reports_escape_what_a_transcript_holds(project: Path, report: str) -> None:
    import sys

    from kodelet.testing import write_hook

    write_hook(project / ".kodelet" / "hooks", "echo-guard", ECHO_GUARD.format(py=sys.executable))
    one = hostile_transcript(project / ("s\x1b[2K1.jsonl"), "s\x1b]0;x\x07one")
    args = [str(one)]
    if report != "timeline":
        args.append(str(hostile_transcript(project / "s2.jsonl", "two")))
    if report == "comparison":
        args += ["--compare-without", "echo-guard"]
    res = run_kodelet("--cwd", str(project), "replay", *args, "-j", "1")
    assert res.returncode == 0, res.stderr
    assert "refused" in res.stdout
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in res.stdout, f"{raw!r} reached the terminal"
    assert "\\x1b[2K" in res.stdout


# -- item 11: a runner with an emit sink keeps bounded records and stderr ----------------


def test_an_emit_sink_gets_bounded_records_for_a_flood_of_lines(tmp_path: Path) -> None:
    from kodelet.claude import CommandHook, HookMatcher, HookProgress, HookResponse, Runner

    records: list[Any] = []
    flood = "yes e | head -c 6000000 >&2; yes o | head -c 500000; echo end >&2"
    runner = Runner(
        {"Stop": [HookMatcher(None, [CommandHook(flood)])]}, cwd=str(tmp_path), emit=records.append
    )
    try:
        start = time.monotonic()
        (result,) = runner.fire("Stop", {})
        elapsed = time.monotonic() - start
    finally:
        runner.close()
    progress = [r for r in records if isinstance(r, HookProgress)]
    assert len(progress) == 1001  # PROGRESS_RECORDS, then one saying how many were not sent
    assert (
        progress[-1].output.startswith("kodelet: ") and "more lines not sent" in progress[-1].output
    )
    response = records[-1]
    assert isinstance(response, HookResponse) and response.result is result
    assert len(response.stderr) <= 4096 and response.stderr.endswith("e\nend")
    assert len(response.stdout) <= 1024 * 1024
    assert elapsed < 120  # bounded, with room for a loaded machine (20 s seen on two busy cores)


# -- item 13: async command hooks are bounded; a stuck callback never holds the exit ------


def _live(marker: str) -> int:
    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    count += 1
        except OSError:
            continue
    return count


def test_async_command_hooks_are_bounded(tmp_path: Path) -> None:
    from kodelet.claude import CommandHook, HookMatcher, Runner

    marker = f"h24-async-{os.getpid()}"
    hook = CommandHook(f"sleep 30; : {marker}", async_=True)
    runner = Runner({"Stop": [HookMatcher(None, [hook])]}, cwd=str(tmp_path))
    try:
        results = [r for _ in range(100) for r in runner.fire("Stop", {})]
        live = _live(marker)
        refused = [
            r for r in results if r.error and "async command hooks already running" in r.error
        ]
    finally:
        runner.close()
    assert live <= 16, f"{live} async hook processes running at once"
    assert len(refused) == 100 - 16
    deadline = time.monotonic() + 10
    while _live(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _live(marker) == 0
    # the slots are free again for the next runner
    again = Runner({"Stop": [HookMatcher(None, [CommandHook("true", async_=True)])]})
    try:
        (first,) = again.fire("Stop", {})
        assert first.error is None
    finally:
        again.close()


def test_a_callback_past_its_timeout_does_not_hold_the_host_exit(tmp_path: Path) -> None:
    import subprocess
    import sys
    import textwrap

    host = tmp_path / "host.py"
    host.write_text(
        textwrap.dedent(
            """
            import time
            from kodelet.claude import HookMatcher, Runner

            def stuck(data, tool_use_id, context):
                time.sleep(15)

            runner = Runner({"Stop": [HookMatcher(None, [stuck], timeout=0.3)]})
            (result,) = runner.fire("Stop", {})
            print(result.outcome.value, flush=True)
            runner.close()
            """
        )
    )
    start = time.monotonic()
    res = subprocess.run([sys.executable, str(host)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "timeout"
    assert time.monotonic() - start < 5


# -- item 14: leftovers of the earlier attack run ---------------------------------------


@pytest.mark.parametrize("kind", ["nested", "fifo"])
def test_a_hostile_discovery_cache_is_a_bad_cache(
    project: Path, kodelet_home: Path, kind: str
) -> None:
    import sys

    from kodelet.testing import write_hook

    write_hook(project / ".kodelet" / "hooks", "echo-guard", ECHO_GUARD.format(py=sys.executable))
    cache = kodelet_home / "cache" / "discovery.json"
    cache.parent.mkdir(parents=True)
    cache.parent.chmod(0o755)
    if kind == "fifo":
        os.mkfifo(cache, 0o644)
    else:
        cache.write_text("[" * 200_000 + "]" * 200_000)
        cache.chmod(0o644)
    for args in (("hooks", "list", "--no-exec"), ("hooks", "list")):
        res = run_kodelet("--cwd", str(project), *args, timeout=30)
        assert res.returncode == 0, res.stderr
        assert "echo-guard" in res.stdout
        no_traceback(res)
    out = hooks_run(project, "bash", timeout=30)
    assert json.loads(out.stdout)["blocked"] is True


def test_plugins_add_gives_up_on_git_in_a_time_a_user_accepts() -> None:
    from kodelet import repos

    assert repos.git_timeout({}) <= 120
    assert repos.git_timeout({repos.GIT_TIMEOUT_ENV: "600"}) == 600


# -- item 9: a Claude-layout plugin's scripts are never asked `hook` ---------------------


def test_a_claude_plugins_scripts_are_not_run_by_discovery(
    project: Path, kodelet_home: Path, tmp_path: Path
) -> None:
    asked = tmp_path / "asked"
    hooks = kodelet_home / "plugins" / "acme@tools" / "hooks"
    hooks.mkdir(parents=True)
    guard = hooks / "guard.sh"
    guard.write_text(
        f'#!/bin/bash\nif [ "$1" = hook ]; then echo x >> {asked}; echo before_tool_call; fi\n'
        '[ "$1" = hook ] && exit 0\necho "plugin guard" >&2\nexit 2\n'
    )
    guard.chmod(0o755)
    (hooks / "hooks.json").write_text(
        json.dumps(
            {"hooks": {"PreToolUse": [command("${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh", "Bash")]}}
        )
    )
    res = run_kodelet("--cwd", str(project), "hooks", "list", "--json")
    assert res.returncode == 0, res.stderr
    names = [r["name"] for r in json.loads(res.stdout)]
    assert "claude:plugin:acme/tools:PreToolUse:0:0" in names
    assert not any(n.startswith("acme/tools/") for n in names)
    ran = hooks_run(project, "bash")
    assert json.loads(ran.stdout) == {"blocked": True, "reason": "plugin guard"}
    assert "guard.sh" not in ran.stderr
    assert not asked.exists(), "discovery ran the Claude plugin's script with `hook`"


# -- item 8: ${CLAUDE_PLUGIN_ROOT} reaches the shell as a quoted variable, never as text --


@pytest.mark.parametrize(
    "form",
    [
        "${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh",
        '"${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh"',
        "bash '${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh'",
    ],
)
def test_the_plugin_root_is_passed_not_pasted(project: Path, tmp_path: Path, form: str) -> None:
    home = tmp_path / "a home $(touch pwned)" / ".kodelet"
    hooks = home / "plugins" / "acme@tools" / "hooks"
    hooks.mkdir(parents=True)
    guard = hooks / "guard.sh"
    guard.write_text('#!/bin/bash\necho "plugin guard" >&2\nexit 2\n')
    guard.chmod(0o755)
    (hooks / "hooks.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [command(form, "Bash")]}})
    )
    payload = json.dumps({"tool_name": "bash", "tool_input": RM})
    res = run_kodelet(
        "--cwd", str(project), "hooks", "run", "before_tool_call", "-p", "-",
        stdin=payload, env={"KODELET_HOME": str(home)},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"blocked": True, "reason": "plugin guard"}
    assert not (project / "pwned").exists(), "a directory name ran as a command"


# -- item 7: a checkout's Claude plugin shadowing a user's is listed; fail-closed holds ---

USER_GUARD = "claude:plugin:acme/tools:PreToolUse:0:0"


def claude_plugin(root: Path, hooks: dict[str, Any]) -> Path:
    path = root / "plugins" / "acme@tools" / "hooks" / "hooks.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"hooks": hooks}))
    return path


@pytest.mark.parametrize("fail_closed", [False, True])
def test_a_checkout_plugin_shadowing_a_users_claude_plugin_is_listed(
    project: Path, kodelet_home: Path, fail_closed: bool
) -> None:
    claude_plugin(kodelet_home, {"PreToolUse": [command("echo 'user deny' >&2; exit 2", "Bash")]})
    assert json.loads(hooks_run(project, "bash").stdout)["blocked"] is True
    checkout = claude_plugin(project / ".kodelet", {})  # an empty hooks.json in the checkout
    if fail_closed:
        (kodelet_home / "config.toml").write_text(f'[hooks."{USER_GUARD}"]\nfail_closed = true\n')
    rows = {r["name"]: r for r in listed(project)}
    assert USER_GUARD in rows, "the user's guard vanished from hooks list"
    reason = rows[USER_GUARD]["reason"]
    assert f"shadowed by {checkout.parent.parent}" in reason
    out = json.loads(hooks_run(project, "bash").stdout)
    if fail_closed:
        assert out["blocked"] is True and "failed (fail-closed)" in out["reason"]
        assert rows[USER_GUARD]["status"] == "active"  # its stand-in, which blocks
    else:
        assert out == {"blocked": False}
        assert rows[USER_GUARD]["status"] == "skipped"


def test_a_fail_closed_claude_hook_with_an_untrusted_script_blocks(project: Path) -> None:
    marker = project / "ran"
    guard = Path(script(project, "guard.sh", f"#!/bin/bash\ntouch {marker}\nexit 2\n"))
    guard.chmod(0o777)
    settings(project_settings(project), {"PreToolUse": [command(str(guard), "Bash")]})
    (project / ".kodelet" / "config.toml").write_text(
        '[hooks."claude:project:PreToolUse:0:0"]\nfail_closed = true\n'
    )
    out = json.loads(hooks_run(project, "bash").stdout)
    assert out["blocked"] is True and "failed (fail-closed)" in out["reason"]
    assert "untrusted" in out["reason"] and not marker.exists()


# -- low: the testing kit shows which shell spellings get past a guard -------------------


def test_unblocked_shells_names_the_spellings_a_guard_misses(tmp_path: Path) -> None:
    from kodelet import hookimpl
    from kodelet.testing import SHELL_TOOL_NAMES, isolated_runtime, unblocked_shells

    class Naive:
        @hookimpl
        def before_tool_call(self, tool_name: str, tool_input: dict[str, Any]) -> Any:
            if tool_name == "bash" and "rm -rf" in tool_input.get("command", ""):
                return {"blocked": True, "reason": "no"}
            return None

    class EveryShell:
        @hookimpl
        def before_tool_call(self, tool_name: str, tool_input: dict[str, Any]) -> Any:
            last = tool_name.lower().rsplit("__", 1)[-1]
            shells = {"bash", "sh", "shell", "run_shell_command", "execute_command"}
            command = tool_input.get("command")
            if (last in shells or isinstance(command, str)) and "rm -rf" in str(command):
                return {"blocked": True, "reason": "no"}
            return None

    with isolated_runtime(tmp_path, Naive()) as naive:
        missed = unblocked_shells(naive)
    assert "bash" not in missed
    assert {"BASH", "mcp__shell__bash", "shell"} <= set(missed)
    with isolated_runtime(tmp_path, EveryShell()) as every:
        assert unblocked_shells(every) == []
        assert unblocked_shells(every, "ls") == list(SHELL_TOOL_NAMES)

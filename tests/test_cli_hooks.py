"""`kodelet hooks ...` driven in real subprocesses with real hook scripts."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from kodelet.config import ConfigError
from kodelet.config_edit import set_key
from kodelet.testing import write_hook

from tests.kit.cli import no_traceback, run_before_tool_call, run_kodelet
from tests.kit.hooks import BLOCKING_HOOK
from tests.kit.repos import make_git_repo

ROW_KEYS = {"event", "name", "kind", "path", "order", "status", "reason", "fix", "on_failure"}

RECORDING_HOOK = """#!/bin/sh
if [ "$1" = hook ]; then echo %s; exit 0; fi
cat > "$KODELET_TEST_OUT"
echo '{}'
"""

SLOW_HOOK = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
sleep 30
"""


def hooks_dir(project: Path) -> Path:
    return project / ".kodelet" / "hooks"


def hook_rows(project: Path, *extra: str) -> list[dict[str, object]]:
    res = run_kodelet("--cwd", str(project), "hooks", "list", "--json", *extra)
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert all(set(r) == ROW_KEYS for r in rows)
    return rows


def test_a_hook_from_an_added_repo_runs_under_its_plugin_name(
    tmp_path: Path, project: Path
) -> None:
    repo = make_git_repo(tmp_path / "src" / "acme" / "tools", reason="acme says no")
    added = run_kodelet("--cwd", str(project), "plugins", "add", str(repo))
    assert added.returncode == 0, added.stderr
    payload = '{"tool_name": "bash", "tool_input": {"command": "ls"}}'
    res = run_before_tool_call(project, payload, "--trace")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"blocked": True, "reason": "acme says no"}
    [trace] = [json.loads(line) for line in res.stderr.splitlines()]
    assert trace["name"] == "acme/tools/guard"
    assert (trace["event"], trace["source"], trace["outcome"]) == (
        "before_tool_call",
        "executable",
        "blocked",
    )
    [row] = [r for r in hook_rows(project) if r["name"] == "acme/tools/guard"]
    assert row["path"] == str(project / ".kodelet/plugins/acme@tools/hooks/guard")
    assert (row["order"], row["status"], row["kind"]) == (1, "active", "executable")


def test_partial_payload_gets_defaults(tmp_path: Path, project: Path) -> None:
    write_hook(hooks_dir(project), "recorder", RECORDING_HOOK % "before_tool_call")
    out = tmp_path / "seen.json"
    payload = tmp_path / "payload.json"
    payload.write_text('{"event": "before_tool_call", "tool_name": "bash"}')
    res = run_kodelet(
        "--cwd",
        str(project),
        "hooks",
        "run",
        "before_tool_call",
        "--payload",
        str(payload),
        env={"KODELET_TEST_OUT": str(out)},
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"blocked": False}
    assert json.loads(out.read_text()) == {
        "event": "before_tool_call",
        "conv_id": "",
        "cwd": str(project),
        "invoked_by": "main",
        "tool_name": "bash",
        "tool_input": {},
        "tool_user_id": "",
    }


def test_no_payload_is_an_empty_object(tmp_path: Path, project: Path) -> None:
    write_hook(hooks_dir(project), "recorder", RECORDING_HOOK % "agent_stop")
    out = tmp_path / "seen.json"
    res = run_kodelet(
        "--cwd", str(project), "hooks", "run", "agent_stop", env={"KODELET_TEST_OUT": str(out)}
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {}
    seen = json.loads(out.read_text())
    assert seen["cwd"] == str(project) and seen["conv_id"] == ""
    missing = run_kodelet("--cwd", str(project), "hooks", "run", "before_tool_call")
    assert missing.returncode == 2
    assert "tool_name" in missing.stderr and len(missing.stderr.splitlines()) == 1


def test_turn_end_alias_and_exit_0_whatever_hooks_decide(project: Path) -> None:
    write_hook(hooks_dir(project), "deny", BLOCKING_HOOK % "nope")
    res = run_before_tool_call(project, '{"tool_name": "rm"}')
    assert res.returncode == 0
    assert json.loads(res.stdout) == {"blocked": True, "reason": "nope"}
    alias = run_kodelet(
        "--cwd",
        str(project),
        "hooks",
        "run",
        "turn_end",
        "-p",
        "-",
        stdin='{"event": "turn_end", "turn_number": 1}',
    )
    assert alias.returncode == 0, alias.stderr
    assert json.loads(alias.stdout) == {}


def test_timeout_and_failures_are_traced_not_fatal(project: Path) -> None:
    write_hook(hooks_dir(project), "slow", SLOW_HOOK)
    write_hook(
        hooks_dir(project),
        "zz-crash",
        '#!/bin/sh\n[ "$1" = hook ] && echo before_tool_call && exit 0\nexit 3\n',
    )
    (project / ".kodelet" / "config.toml").write_text("[hooks]\nfail_closed = false\n")
    res = run_before_tool_call(
        project,
        '{"tool_name": "bash"}',
        "--timeout",
        "0.5",
        "--trace",
        timeout=20,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"blocked": False}
    traces = [json.loads(ln) for ln in res.stderr.splitlines() if ln.startswith("{")]
    assert [(t["name"], t["outcome"]) for t in traces] == [
        ("slow", "error"),
        ("zz-crash", "error"),
        ("builtin:protect-kodelet", "no-action"),
    ]
    bad = run_kodelet("--cwd", str(project), "hooks", "run", "agent_stop", "--timeout", "-1")
    assert bad.returncode == 2 and "--timeout" in bad.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["nope"], None, "unknown event 'nope'"),
        (["before_tool_call", "-p", "MISSING"], None, "cannot read payload"),
        (["before_tool_call", "-p", "-"], "{not json", "payload stdin is not valid JSON"),
        (["before_tool_call", "-p", "-"], "[1, 2]", "must be a JSON object, not list"),
        (
            ["before_tool_call", "-p", "-"],
            '{"event": "agent_stop", "tool_name": "x"}',
            "payload is for event 'agent_stop', not 'before_tool_call'",
        ),
        (["before_tool_call", "-p", "-"], '{"tool_input": {}}', "tool_name"),
        (["before_tool_call", "-p", "-"], '{"tool_name": 3}', "tool_name"),
        (["user_message_send", "-p", "-"], '{"message": 5}', "message"),
    ],
)
def test_run_errors_are_one_line_exit_2(
    tmp_path: Path, project: Path, args: list[str], stdin: str | None, message: str
) -> None:
    args = [str(tmp_path / "missing.json") if a == "MISSING" else a for a in args]
    res = run_kodelet("--cwd", str(project), "hooks", "run", *args, stdin=stdin)
    assert res.returncode == 2, res.stdout
    assert res.stdout == ""
    assert res.stderr.startswith("kodelet: error: ") and message in res.stderr
    assert len(res.stderr.splitlines()) == 1
    no_traceback(res)


def test_list_shows_call_order_and_what_does_not_run(tmp_path: Path, project: Path) -> None:
    hooks = hooks_dir(project)
    write_hook(hooks, "b-second", BLOCKING_HOOK % "b")
    write_hook(hooks, "a-first", BLOCKING_HOOK % "a")
    write_hook(hooks, "off", BLOCKING_HOOK % "off").rename(hooks / "off.disable")
    (hooks / "notes.txt").write_text("not executable")
    write_hook(hooks, "silent", "#!/bin/sh\nexit 0\n")
    loose = write_hook(hooks, "loose", BLOCKING_HOOK % "loose")
    loose.chmod(0o777)
    glob = Path(os.environ["KODELET_HOME"]) / "hooks"
    write_hook(glob, "a-first", BLOCKING_HOOK % "shadowed")
    write_hook(glob, "g-last", BLOCKING_HOOK % "g")

    rows = hook_rows(project)
    # Executables come before native plugins (none in this environment, but a test run may
    # have some installed), so their orders are 1, 2, 3 either way.
    active = [
        (r["order"], r["name"])
        for r in rows
        if r["event"] == "before_tool_call" and r["kind"] == "executable" and r["order"]
    ]
    # The hooks that cannot start (untrusted, a failing `hook` query) block in their
    # place by default (fail-closed), where they were found; the README-like file does not.
    assert active == [(1, "a-first"), (2, "b-second"), (3, "loose"), (4, "silent"), (5, "g-last")]
    standing = [r for r in rows if r["name"] in ("loose", "silent") and r["status"] == "active"]
    assert {(r["event"], r["name"]) for r in standing} == {
        (e, n) for e in ("before_tool_call", "user_message_send") for n in ("loose", "silent")
    }
    assert all(r["on_failure"] == "block" for r in standing)
    assert all("fail_closed: blocks in its place" in str(r["reason"]) for r in standing)
    assert next(r for r in rows if r["name"] == "builtin:compact-trigger") == {
        "event": "after_turn",
        "name": "builtin:compact-trigger",
        "kind": "builtin",
        "path": next(r for r in rows if r["name"] == "builtin:compact-trigger")["path"],
        "order": 1,
        "status": "active",
        "reason": None,
        "fix": None,
        "on_failure": None,
    }
    off = {r["name"]: r for r in rows if r["status"] != "active"}
    assert off["off"]["status"] == "disabled"
    assert str(off["off"]["path"]).endswith("off.disable")
    assert off["notes.txt"]["reason"] == "not executable"
    assert off["notes.txt"]["fix"] == f"chmod +x {hooks / 'notes.txt'}"
    assert off["loose"]["fix"] == f"chmod go-w {loose}"
    assert off["silent"]["status"] == "skipped" and "printed nothing" in str(
        off["silent"]["reason"]
    )
    assert off["loose"]["status"] == "skipped"
    assert "untrusted" in str(off["loose"]["reason"]) and "writable" in str(off["loose"]["reason"])
    assert off["a-first"]["path"] == str(glob / "a-first")
    assert off["a-first"]["reason"] == f"shadowed by {hooks / 'a-first'} (same name, higher up)"
    assert all(r["event"] is None and r["order"] is None for r in off.values())

    only = hook_rows(project, "--event", "after_turn")
    assert {r["event"] for r in only} == {"after_turn", None}
    assert "a-first" not in [r["name"] for r in only if r["status"] == "active"]

    listed = run_kodelet("--cwd", str(project), "hooks", "list")
    table = listed.stdout
    assert table.startswith("before_tool_call\n")
    assert "printed nothing" in table
    assert listed.stderr == ""  # each reason once, in the table, not again as a warning
    ran = run_kodelet(
        "--cwd",
        str(project),
        "hooks",
        "run",
        "user_message_send",
        "-p",
        "-",
        stdin='{"message": "hi"}',
    )
    assert ran.returncode == 0, ran.stderr
    warnings = ran.stderr.splitlines()
    silent = hooks / "silent"
    assert (
        "kodelet: warning: hook silent skipped: 'hook' query printed nothing (fix: make "
        f"`{silent} hook` print its event; run it to see what goes wrong)"
    ) in warnings
    assert len(warnings) == len(set(warnings))  # each once
    lines = table.splitlines()
    assert lines[1].split() == ["#", "NAME", "KIND", "STATUS", "PATH", "REASON"]  # stand-ins
    assert lines[3].split()[:4] == ["1", "a-first", "executable", "active"]
    assert "after_tool_call\n  (no hooks)" in table
    assert "not run (event unknown)" in table

    bad = run_kodelet("--cwd", str(project), "hooks", "list", "--event", "nope")
    assert bad.returncode == 2 and "unknown event 'nope'" in bad.stderr


def test_no_hooks_keeps_only_builtins(project: Path) -> None:
    write_hook(hooks_dir(project), "deny", BLOCKING_HOOK % "nope")
    rows = hook_rows(project)
    assert "deny" in [r["name"] for r in rows]
    res = run_kodelet("--cwd", str(project), "--no-hooks", "hooks", "list", "--json")
    listed = json.loads(res.stdout)
    active = [r["name"] for r in listed if r["status"] == "active"]
    assert active == ["builtin:protect-kodelet", "builtin:compact-trigger"]
    # The files are still shown, never run: their event comes from the discovery cache.
    (deny,) = [r for r in listed if r["name"] == "deny"]
    assert (deny["status"], deny["event"]) == ("skipped", "before_tool_call")
    assert str(deny["reason"]).startswith("not run: --no-hooks; trusted")
    assert deny["fix"] is None  # not run on purpose: nothing to fix
    note = "native plugins and executable hooks are switched off; only built-ins run)\n"
    table = run_kodelet("--cwd", str(project), "--no-hooks", "hooks", "list").stdout
    assert table.startswith("(--no-hooks: " + note + "\nbefore_tool_call\n  #  NAME")
    assert "\n  -  deny  " in table and "not run: --no-hooks" in table
    env = {"KODELET_NO_HOOKS": "1"}
    table = run_kodelet("--cwd", str(project), "hooks", "list", env=env).stdout
    assert table.startswith("(env KODELET_NO_HOOKS: " + note)
    assert not run_kodelet("--cwd", str(project), "hooks", "list").stdout.startswith("(")
    run = run_kodelet(
        "--cwd",
        str(project),
        "--no-hooks",
        "hooks",
        "run",
        "before_tool_call",
        "-p",
        "-",
        stdin='{"tool_name": "rm"}',
    )
    assert json.loads(run.stdout) == {"blocked": False}


def test_enable_disable_standalone_and_plugin_hooks(tmp_path: Path, project: Path) -> None:
    write_hook(hooks_dir(project), "deny", BLOCKING_HOOK % "local")
    write_hook(Path(os.environ["KODELET_HOME"]) / "hooks", "global-deny", BLOCKING_HOOK % "g")
    repo = make_git_repo(tmp_path / "src" / "acme" / "tools")
    assert run_kodelet("--cwd", str(project), "plugins", "add", str(repo)).returncode == 0

    def status(name: str) -> str:
        return str(next(r for r in hook_rows(project) if r["name"].startswith(name))["status"])

    res = run_kodelet("--cwd", str(project), "hooks", "disable", "deny")
    assert res.returncode == 0, res.stderr
    assert (hooks_dir(project) / "deny.disable").exists() and status("deny") == "disabled"
    again = run_kodelet("--cwd", str(project), "hooks", "disable", "deny")
    assert again.returncode == 0 and "already disabled" in again.stdout
    assert run_kodelet("--cwd", str(project), "hooks", "enable", "deny").returncode == 0
    assert (hooks_dir(project) / "deny").exists() and status("deny") == "active"

    assert run_kodelet("--cwd", str(project), "hooks", "disable", "global-deny").returncode == 0
    assert (Path(os.environ["KODELET_HOME"]) / "hooks" / "global-deny.disable").exists()

    assert (
        run_kodelet("--cwd", str(project), "hooks", "disable", "acme/tools/guard").returncode == 0
    )
    guard = project / ".kodelet/plugins/acme@tools/hooks/guard"
    assert not guard.exists() and guard.with_name("guard.disable").exists()
    run = run_before_tool_call(project, '{"tool_name": "rm"}')
    assert json.loads(run.stdout) == {"blocked": True, "reason": "local"}
    assert run_kodelet("--cwd", str(project), "hooks", "enable", "acme/tools/guard").returncode == 0
    assert guard.exists()

    for verb in ("enable", "disable"):
        unknown = run_kodelet("--cwd", str(project), "hooks", verb, "no-such-hook")
        assert unknown.returncode == 1
        assert unknown.stderr == (
            "kodelet: error: no hook or plugin named 'no-such-hook' (see: kodelet hooks list)\n"
        )
    assert run_kodelet("--cwd", str(project), "hooks", "enable", "../../etc").returncode == 1


def test_enable_disable_native_plugin_in_config_toml(project: Path) -> None:
    config = project / ".kodelet" / "config.toml"
    original = (
        '# project settings\n[hooks]\ntimeout = 10  # seconds\n\n[plugin.demo]\ngreeting = "hi"\n'
    )
    config.write_text(original)
    res = run_kodelet("--cwd", str(project), "hooks", "disable", "builtin:compact-trigger")
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"Disabled plugin builtin:compact-trigger in {config}\n"
    text = config.read_text()
    assert text.startswith(original)
    assert tomllib.loads(text)["plugins"] == {"disabled": ["builtin:compact-trigger"]}
    row = next(r for r in hook_rows(project) if r["name"] == "builtin:compact-trigger")
    assert (row["event"], row["status"], row["order"]) == ("after_turn", "disabled", None)
    assert row["reason"] == "disabled in config.toml"

    res = run_kodelet("--cwd", str(project), "hooks", "enable", "builtin:compact-trigger")
    assert res.returncode == 0, res.stderr
    assert tomllib.loads(config.read_text()) == {
        "hooks": {"timeout": 10},
        "plugin": {"demo": {"greeting": "hi"}},
        "plugins": {"disabled": []},
    }
    assert config.read_text().startswith(original)
    row = next(r for r in hook_rows(project) if r["name"] == "builtin:compact-trigger")
    assert row["status"] == "active"


def test_disable_keeps_what_the_global_config_disabled(project: Path) -> None:
    home = Path(os.environ["KODELET_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[plugins]\ndisabled = ["other"]\n')
    res = run_kodelet("--cwd", str(project), "hooks", "disable", "builtin:compact-trigger")
    assert res.returncode == 0, res.stderr
    local = tomllib.loads((project / ".kodelet" / "config.toml").read_text())
    assert local["plugins"]["disabled"] == ["other", "builtin:compact-trigger"]


def test_bad_config_is_exit_2_for_hooks_commands(project: Path) -> None:
    (project / ".kodelet" / "config.toml").write_text("[hooks\n")
    for args in (
        ["hooks", "list"],
        ["hooks", "disable", "builtin:compact-trigger"],
        ["hooks", "run", "agent_stop"],
    ):
        res = run_kodelet("--cwd", str(project), *args)
        assert res.returncode == 2, (args, res.stdout)
        assert "invalid TOML" in res.stderr and len(res.stderr.splitlines()) == 1


# -- the config.toml rewrite on its own ------------------------------------------


@pytest.mark.parametrize(
    "before",
    [
        "",
        "[hooks]\ntimeout = 5",
        "[plugins]\n",
        '[plugins]  # natives\ndisabled = ["a"]  # keep this comment\n[hooks]\ntimeout = 5\n',
        '[plugins]\ndisabled = [\n  "a",  # first\n  "b]",\n]\n\n[plugin.x]\nk = "v"\n',
        "[[plugin.list]]\nx = 1\n\n[plugins]\n# comment\ndisabled = []\n",
    ],
)
def test_set_disabled_plugins_rewrites_only_that_key(tmp_path: Path, before: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(before)
    old = tomllib.loads(before)
    set_key(path, "plugins", "disabled", ["x", 'we"ird'])
    new = tomllib.loads(path.read_text())
    assert new["plugins"]["disabled"] == ["x", 'we"ird']
    old.setdefault("plugins", {})["disabled"] = ["x", 'we"ird']
    assert new == old
    for line in before.splitlines():
        if "disabled" not in line and line.strip() not in ('"a",  # first', '"b]",', "]"):
            assert line in path.read_text()


@pytest.mark.parametrize(
    "before", ['plugins.disabled = ["a"]\n', 'plugins = { disabled = ["a"] }\n']
)
def test_set_disabled_plugins_edits_dotted_and_inline_layouts(tmp_path: Path, before: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(before)
    set_key(path, "plugins", "disabled", ["b"])
    assert tomllib.loads(path.read_text()) == {"plugins": {"disabled": ["b"]}}


def test_set_disabled_plugins_leaves_an_invalid_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[plugins\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        set_key(path, "plugins", "disabled", ["b"])
    assert path.read_text() == "[plugins\n"


def test_enable_says_when_config_still_disables_the_hook(project: Path) -> None:
    write_hook(hooks_dir(project), "deny", BLOCKING_HOOK % "no").rename(
        hooks_dir(project) / "deny.disable"
    )
    (project / ".kodelet" / "config.toml").write_text('[hooks]\ndisabled = ["deny"]\n')
    res = run_kodelet("--cwd", str(project), "hooks", "enable", "deny")
    assert res.returncode == 0, res.stderr
    assert res.stderr == "kodelet: note: deny is still disabled by [hooks] in config.toml\n"
    [row] = [r for r in hook_rows(project) if r["name"] == "deny"]
    assert (row["status"], row["reason"]) == ("disabled", "disabled in config.toml")

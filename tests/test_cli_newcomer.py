"""What a newcomer and their team still trip on, driven through the CLI in real
subprocesses: hooks shared in ``.kodelet/hooks`` that must run on a teammate's machine,
answers that only add context, misspelt plugin functions, fields an event does not
have, reports cut to 80 columns, what ``claude uninstall`` leaves behind and the Agent
SDK example's silent ``{}``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kodelet.testing import write_hook

from tests.kit.cli import run_kodelet
from tests.kit.wheels import install

LS = '{"tool_name": "bash", "tool_input": {"command": "ls"}}'


def kodelet(project: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_kodelet("--cwd", str(project), *args, **kw)  # type: ignore[arg-type]


def _rows(project: Path, **kw: object) -> dict[str, dict[str, object]]:
    res = kodelet(project, "hooks", "list", "--json", **kw)
    assert res.returncode == 0, res.stderr
    return {r["name"]: r for r in json.loads(res.stdout)}


def _teammate_path(tmp_path: Path) -> str:
    """A PATH like a teammate's: a python3 that is not the one running kodelet (this
    venv's base interpreter, where kodelet is not installed), then the system's."""
    bindir = tmp_path / "teammate-bin"
    bindir.mkdir()
    base = getattr(sys, "_base_executable", sys.executable)
    (bindir / "python3").symlink_to(base)
    return os.pathsep.join([str(bindir), "/usr/bin", "/bin"])


# -- a hook scaffolded into .kodelet/hooks runs on a teammate's checkout ------------


@pytest.mark.parametrize(("lang", "shebang"), [("python", "python3"), ("bash", "bash")])
def test_hooks_new_writes_an_env_shebang_that_runs_on_another_machine(
    project: Path, tmp_path: Path, lang: str, shebang: str
) -> None:
    res = kodelet(project, "hooks", "new", "guard", "-e", "before_tool_call", "--lang", lang)
    assert res.returncode == 0, res.stderr
    text = (project / ".kodelet" / "hooks" / "guard").read_text()
    assert text.splitlines()[0] == f"#!/usr/bin/env {shebang}"
    assert sys.executable not in text and sys.prefix not in text

    teammate = {"PATH": _teammate_path(tmp_path)}
    row = _rows(project, env=teammate)["guard"]
    assert (row["status"], row["event"]) == ("active", "before_tool_call"), row
    ran = kodelet(
        project,
        "hooks",
        "run",
        "before_tool_call",
        "-p",
        "-",
        "--trace",
        env=teammate,
        stdin=LS,
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"blocked": False}
    trace, builtin = [json.loads(ln) for ln in ran.stderr.splitlines()]
    assert (trace["name"], trace["outcome"]) == ("guard", "no-action")
    assert (builtin["name"], builtin["outcome"]) == ("builtin:protect-kodelet", "no-action")


def test_hooks_list_names_an_interpreter_that_cannot_be_found(project: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "venv-guard", "#!/home/someone-else/venv/bin/python\nprint('x')\n")
    write_hook(hooks, "env-guard", "#!/usr/bin/env no-such-python-here\nprint('x')\n")
    rows = _rows(project)
    assert rows["venv-guard"]["status"] == "skipped"
    assert rows["venv-guard"]["reason"] == (
        "interpreter /home/someone-else/venv/bin/python (its #! line) not found"
    )
    assert rows["env-guard"]["reason"] == (
        "interpreter 'no-such-python-here' (its #!/usr/bin/env no-such-python-here line) "
        "not found on PATH"
    )
    # Without running anything, the same is said.
    looked = kodelet(project, "hooks", "list", "--no-exec", "--json")
    reasons = {r["name"]: r["reason"] for r in json.loads(looked.stdout)}
    assert reasons["venv-guard"].endswith(
        "; interpreter /home/someone-else/venv/bin/python (its #! line) not found"
    )
    # And a command that runs hooks warns with it.
    ran = kodelet(project, "hooks", "run", "before_tool_call", "-p", "-", stdin=LS)
    assert (
        "kodelet: warning: hook venv-guard skipped: interpreter /home/someone-else/venv/bin/python"
        in ran.stderr
    )


# -- a hook that only adds context has its own outcome word -------------------------

REMINDER = """#!/bin/sh
case "$1" in hook) echo after_tool_call; exit 0;; esac
cat >/dev/null
echo '{"additional_context": ["run the formatter before committing"]}'
"""


def test_a_hook_that_only_adds_context_is_a_context_outcome_everywhere(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "fmt-reminder", REMINDER)
    payload = '{"tool_name": "bash", "tool_output": {"toolName": "bash", "success": true}}'
    ran = kodelet(project, "hooks", "run", "after_tool_call", "-p", "-", "--trace", stdin=payload)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"additional_context": ["run the formatter before committing"]}
    [trace] = [json.loads(ln) for ln in ran.stderr.splitlines()]
    assert (trace["outcome"], trace["detail"]) == ("context", "run the formatter before committing")

    report = kodelet(project, "replay", "--my-hooks", "--only-acted", "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    mine = [h for s in data["timeline"] for h in s["hooks"] if h["name"] == "fmt-reminder"]
    assert mine and {h["outcome"] for h in mine} == {"context"}
    assert data["summary"]["outcomes"]["context"] == len(mine)
    assert data["summary"]["outcomes"]["no-action"] > 0  # the other hooks, left out above

    table = kodelet(project, "replay", "--my-hooks", "--only-acted")
    rows = [ln.split() for ln in table.stdout.splitlines() if " fmt-reminder " in ln]
    # A row without a turn number continues the turn above (builtin:protect-kodelet
    # blocks the demo's `rm -rf /` in its turn): the outcome follows the hook's name.
    outcomes = [r[r.index("fmt-reminder") + 1] for r in rows]
    assert len(rows) == len(mine) and set(outcomes) == {"context"}, rows[:3]


# -- each event's scaffold shows what that event can do; foreign fields are warned --

# A payload per event that the scaffold's commented example acts on.
ACTS_ON = {
    "before_tool_call": '{"tool_name": "bash", "tool_input": {"command": "rm -rf /"}}',
    "after_tool_call": (
        '{"tool_name": "bash", "tool_output": {"toolName": "bash", "success": false}}'
    ),
    "user_message_send": '{"message": "my key is AKIAIOSFODNN7EXAMPLE"}',
    "after_turn": '{"turn_number": 1}',
    "agent_stop": "{}",
}


def _uncomment_first_example(text: str, lang: str) -> str:
    """The example lines of the scaffold's comment, made live, as its reader would."""
    lines = text.splitlines(keepends=True)
    if lang == "python":
        i = next(i for i, ln in enumerate(lines) if ln.startswith("    #   return "))
        lines.insert(i + 1, "    " + lines[i].removeprefix("    #   "))
        return "".join(lines)
    start = next(i for i, ln in enumerate(lines) if ln.startswith("#   "))
    end = start
    while end < len(lines) and lines[end].startswith("#  "):
        end += 1
    live = [ln.removeprefix("#   ") for ln in lines[start:end]]
    return "".join(lines[:end] + live + lines[end:])


@pytest.mark.parametrize("lang", ["python", "bash"])
@pytest.mark.parametrize("event", list(ACTS_ON))
def test_each_events_scaffold_shows_an_answer_that_event_takes(
    project: Path, event: str, lang: str
) -> None:
    res = kodelet(project, "hooks", "new", "mine", "-e", event, "--lang", lang)
    assert res.returncode == 0, res.stderr
    path = project / ".kodelet" / "hooks" / "mine"
    text = path.read_text()
    blocking = event in ("before_tool_call", "user_message_send")
    assert ('"blocked"' in text or "'blocked'" in text) is blocking
    if not blocking:
        assert "cannot block" in text
    path.write_text(_uncomment_first_example(text, lang))

    ran = kodelet(project, "hooks", "run", event, "-p", "-", "--trace", stdin=ACTS_ON[event])
    assert ran.returncode == 0, ran.stderr
    traces = [json.loads(ln) for ln in ran.stderr.splitlines() if ln.startswith("{")]
    [trace] = [t for t in traces if t["name"] == "mine"]
    assert trace["outcome"] not in ("no-action", "error"), (trace, path.read_text())
    assert "WARNING" not in ran.stderr and "has no field" not in ran.stderr, ran.stderr
    answer = json.loads(ran.stdout)
    assert answer != {} and answer != {"blocked": False}, answer


def test_an_answer_with_a_field_its_event_lacks_is_a_warning(project: Path) -> None:
    late = '#!/bin/sh\n[ "$1" = hook ] && { echo after_tool_call; exit 0; }\ncat >/dev/null\n'
    late += """echo '{"blocked": true, "reason": "too late", "additional_context": []}'\n"""
    write_hook(project / ".kodelet" / "hooks", "late-guard", late)
    payload = '{"tool_name": "bash", "tool_output": {"toolName": "bash", "success": true}}'
    ran = kodelet(project, "hooks", "run", "after_tool_call", "-p", "-", "--trace", stdin=payload)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {}
    said = (
        "after_tool_call has no fields 'blocked', 'reason' (it cannot block); ignored "
        "(see: kodelet hooks schema after_tool_call --result)"
    )
    lines = ran.stderr.splitlines()
    assert f"kodelet: WARNING: hook late-guard: {said}" in lines
    [trace] = [json.loads(ln) for ln in lines if ln.startswith("{")]
    assert (trace["outcome"], trace["detail"]) == ("no-action", said)


# -- a misspelt hook function or argument is said, readably -------------------------

MISSPELT = """\
import json

from kodelet import hookimpl


def before_tool_cal(tool_name, tool_input):
    return {"blocked": True, "reason": "never called"}


@hookimpl
def agent_stopp():
    return None


def helper(text):
    return json.dumps(text)


@hookimpl
def after_tool_call(tool_name):
    return None
"""

BAD_ARGUMENT = """\
from kodelet import hookimpl


@hookimpl
def after_tool_call(tool_nam):
    return None
"""


def test_a_misspelt_hook_function_is_a_warning_in_both_lists(tmp_path: Path, project: Path) -> None:
    site = tmp_path / "site"
    install(site, "typo", "kp_typo", MISSPELT)
    env = {"PYTHONPATH": str(site)}
    missed = "function before_tool_cal() is not a hook; did you mean before_tool_call?"
    marked = (
        "function agent_stopp() is not a hook (marked @hookimpl, but no hook has that name); "
        "did you mean agent_stop?"
    )
    listed = kodelet(project, "plugins", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    notes = listed.stdout.split("\nNotes:\n")[1].splitlines()
    assert sorted(notes) == sorted([f"  typo: warning: {missed}", f"  typo: warning: {marked}"])
    [row] = [r for r in json.loads(kodelet(project, "plugins", "list", "--json", env=env).stdout)
             if r["name"] == "typo"]  # fmt: skip
    assert sorted(row["warnings"]) == sorted([missed, marked])

    rows = json.loads(kodelet(project, "hooks", "list", "--json", env=env).stdout)
    mine = {(r["event"], r["status"], r["reason"]) for r in rows if r["name"] == "typo"}
    assert mine == {
        ("before_tool_call", "skipped", missed),
        ("after_tool_call", "active", None),
        ("agent_stop", "skipped", marked),
    }


def test_a_misspelt_argument_is_printed_as_lines(tmp_path: Path, project: Path) -> None:
    site = tmp_path / "site"
    install(site, "badarg", "kp_badarg", BAD_ARGUMENT)
    listed = kodelet(project, "plugins", "list", env={"PYTHONPATH": str(site)})
    assert "\\n" not in listed.stdout, listed.stdout
    notes = listed.stdout.split("\nNotes:\n")[1].splitlines()
    assert notes[0] == "  badarg: register failed: Plugin 'badarg' for hook 'after_tool_call'"
    assert notes[1] == "    hookimpl definition: after_tool_call(tool_nam)"
    assert notes[2].startswith("    Argument(s) {'tool_nam'} are declared in the hookimpl")
    table = kodelet(project, "hooks", "list", env={"PYTHONPATH": str(site)}).stdout
    [line] = [ln for ln in table.splitlines() if " badarg " in ln]
    assert "\\n" not in line and "; hookimpl definition: after_tool_call(tool_nam); " in line


# -- corpus reports in a pipe or a file are not cut to 80 columns --------------------

LONG_HOOK = "formatter-reminder-for-the-whole-team-" + "x" * 40


def test_a_corpus_report_in_a_pipe_keeps_every_name_whole(tmp_path: Path, project: Path) -> None:
    from importlib import resources

    demo = resources.files("kodelet.replay").joinpath("demo_session.json").read_text()
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = [f"a-session-with-a-long-descriptive-file-name-number-{i}-{'y' * 30}" for i in (1, 2)]
    for name in names:
        (sessions / f"{name}.json").write_text(demo)
    write_hook(project / ".kodelet" / "hooks", LONG_HOOK, REMINDER)
    report = kodelet(project, "replay", "--my-hooks", str(sessions))
    assert report.returncode == 0, report.stderr
    assert "…" not in report.stdout, report.stdout
    assert LONG_HOOK in report.stdout
    assert all(name in report.stdout for name in names)
    assert all(line == line.rstrip() for line in report.stdout.splitlines())
    baseline = kodelet(
        project, "replay", "--my-hooks", str(sessions), "--compare-without", LONG_HOOK
    )
    assert baseline.returncode == 0, baseline.stderr
    assert "…" not in baseline.stdout and LONG_HOOK in baseline.stdout


# -- claude uninstall leaves the settings as they were before install ---------------


def _claude(project: Path, *args: str) -> str:
    res = kodelet(project, "claude", *args)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_claude_uninstall_removes_the_file_install_created(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    _claude(project, "install")
    assert settings.is_file()
    dry = _claude(project, "uninstall", "--dry-run")
    assert dry.startswith(f"--- {settings}\n+++ /dev/null\n"), dry
    assert settings.is_file()
    out = _claude(project, "uninstall")
    assert out == f"removed {settings}: it held only kodelet's entries\n"
    assert sorted(p.name for p in settings.parent.iterdir()) == []
    assert _claude(project, "uninstall") == f"not installed: {settings} does not exist\n"


def test_claude_uninstall_puts_back_the_users_file_and_drops_installs_copy(
    project: Path,
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = '{ "model": "opus",\n    "env": {"A": "1"} }\n'
    settings.write_text(original)
    _claude(project, "install")
    backup = settings.with_name("settings.json.bak")
    assert backup.read_text() == original
    out = _claude(project, "uninstall")
    assert out == f"wrote {settings} (as it was before install; {backup.name} removed)\n"
    assert settings.read_text() == original
    assert not backup.exists()


@pytest.mark.parametrize("before", ["", "{}\n"])
def test_claude_uninstall_of_an_empty_file_leaves_nothing(project: Path, before: str) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(before)
    _claude(project, "install")
    _claude(project, "uninstall")
    assert sorted(p.name for p in settings.parent.iterdir()) == []


def test_claude_uninstall_keeps_a_backup_that_holds_more(project: Path) -> None:
    """A ``.bak`` holding settings the file does not (the user's own) stays. After an
    edit made since install, uninstall keeps the edit, and the file it changed as
    ``.bak``, as for a file install did not write."""
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    backup = settings.with_name("settings.json.bak")
    _claude(project, "install")
    backup.write_text('{"model": "from an older file"}\n')
    _claude(project, "uninstall")
    assert not settings.exists()
    assert backup.read_text() == '{"model": "from an older file"}\n'

    settings.write_text('{"model": "opus"}\n')
    _claude(project, "install")
    data = json.loads(settings.read_text())
    settings.write_text(json.dumps({**data, "env": {"B": "2"}}))
    _claude(project, "uninstall")
    assert json.loads(settings.read_text()) == {"model": "opus", "env": {"B": "2"}}
    assert json.loads(backup.read_text())["env"] == {"B": "2"}


# -- the Agent SDK example says why it answers {} ---------------------------------

HOST = Path(__file__).parents[1] / "plugins" / "examples" / "claude-agent-sdk" / "host.py"
CLAUDE_DENY = {
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2"}]}]
    }
}


LENIENT = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null
"""


def _check(project: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, str(HOST), "--check"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_sdk_check_says_why_rm_rf_is_allowed(project: Path) -> None:
    bare = _check(project)
    assert json.loads(bare.stdout) == {}
    assert bare.stderr == (
        f"host.py --check: {{}} means allowed: no before_tool_call hook of yours is loaded for "
        f"{project}, so nothing guards `rm -rf /` (add one: `kodelet hooks new no-rm-rf "
        "-e before_tool_call`; `kodelet hooks list` shows what is loaded)\n"
    )
    write_hook(project / ".kodelet" / "hooks", "lenient", LENIENT)
    lenient = _check(project)
    assert json.loads(lenient.stdout) == {}
    assert lenient.stderr == (
        "host.py --check: {} means allowed: the before_tool_call hooks lenient let it through\n"
    )


def test_sdk_check_names_the_claude_hooks_it_leaves_to_claude_code(project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_DENY))
    done = _check(project)
    assert json.loads(done.stdout) == {}
    first, second = done.stderr.splitlines()
    assert first == (
        "host.py --check: Claude Code hooks of the settings files not run here: "
        "claude:project:PreToolUse:0:0 (in an agent run Claude Code runs them itself; "
        "`kodelet claude run PreToolUse --payload -` fires them alone)"
    )
    assert second.startswith("host.py --check: {} means allowed: no before_tool_call hook")

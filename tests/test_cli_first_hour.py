"""What a new user trips on in the CLI, driven in real subprocesses: a plugin whose
configure() fails, uninstalling and disabling native plugins, hooks that cannot run,
disabled hooks, near-miss names, hook scaffolds and ``hooks run --exit-code``."""

from __future__ import annotations

import json
import os
import pwd
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from kodelet.testing import write_hook

from tests.kit.cli import no_traceback, run_kodelet
from tests.kit.hooks import BLOCKING_HOOK
from tests.kit.wheels import build_wheel, install, venv_seeing_this_interpreter

FAILING_CONFIGURE = """\
from kodelet import hookimpl


@hookimpl
def configure(config):
    raise RuntimeError("bad setting")


@hookimpl
def before_tool_call(tool_name):
    return None
"""

PASSING_HOOK = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null
echo '{}'
"""


@pytest.fixture
def site(tmp_path: Path) -> dict[str, str]:
    """Environment for run_kodelet with one installed plugin, ``fragile``, whose configure fails."""
    path = tmp_path / "site"
    install(path, "fragile", "kp_fragile", FAILING_CONFIGURE)
    return {"PYTHONPATH": str(path)}


def kodelet(project: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_kodelet("--cwd", str(project), *args, **kw)  # type: ignore[arg-type]


# -- item 3: a plugin whose configure() raised ------------------------------------


def test_a_failed_configure_is_one_active_row_with_its_reason_and_one_warning(
    project: Path, site: dict[str, str]
) -> None:
    res = kodelet(project, "hooks", "list", "--json", env=site)
    assert res.returncode == 0, res.stderr
    mine = [r for r in json.loads(res.stdout) if r["name"] == "fragile"]
    assert len(mine) == 1, mine
    [row] = mine
    assert (row["event"], row["status"], row["order"]) == ("before_tool_call", "active", 1)
    assert row["reason"] == "configure failed: RuntimeError: bad setting"
    assert res.stderr.count("configure failed") == 1

    table = kodelet(project, "hooks", "list", env=site)
    named = [ln.split() for ln in table.stdout.splitlines() if " fragile " in ln]
    assert [ln[:4] for ln in named] == [["1", "fragile", "python", "active"]]
    assert "disabled" not in table.stdout and "skipped" not in table.stdout
    assert table.stderr.count("configure failed") == 1


# -- item 4: distributions, uninstall by plugin name, enable / disable ------------


def test_plugins_list_names_the_distribution(project: Path, site: dict[str, str]) -> None:
    rows = json.loads(kodelet(project, "plugins", "list", "--json", env=site).stdout)
    by_name = {r["name"]: r for r in rows}
    assert by_name["fragile"]["distribution"] == "kp-fragile"
    assert by_name["builtin:compact-trigger"]["distribution"] == "kodelet"
    table = kodelet(project, "plugins", "list", env=site).stdout.splitlines()
    assert "DISTRIBUTION" in table[0].split()
    line = next(ln for ln in table if ln.startswith("fragile "))
    assert "kp-fragile" in line.split()


def test_uninstall_and_remove_take_a_plugin_name(tmp_path: Path, project: Path) -> None:
    python = venv_seeing_this_interpreter(tmp_path / "venv")
    env = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    wheel = build_wheel(tmp_path)
    installed = kodelet(project, "plugins", "install", str(wheel), python=python, env=env)
    assert installed.returncode == 0, installed.stderr

    removed = kodelet(project, "plugins", "remove", "demo", python=python)
    assert removed.returncode == 1
    assert removed.stderr == (
        "kodelet: error: demo is a native plugin (Python package kodelet-plugin-demo): "
        "kodelet plugins uninstall kodelet-plugin-demo\n"
    )
    for package in ("kodelet-plugin-demo", "kodelet_plugin_demo"):
        by_package = kodelet(project, "plugins", "remove", package, python=python)
        assert (by_package.returncode, by_package.stderr) == (
            1,
            f"kodelet: error: {package} is the Python package of native plugin demo: "
            "kodelet plugins uninstall kodelet-plugin-demo\n",
        )
    unknown = kodelet(project, "plugins", "uninstall", "no-such-thing", python=python, env=env)
    assert unknown.returncode == 1
    assert "no installed package or native plugin named 'no-such-thing'" in unknown.stderr
    assert "Skipping" not in unknown.stdout + unknown.stderr
    no_traceback(unknown)
    builtin = kodelet(project, "plugins", "uninstall", "builtin:compact-trigger", python=python)
    assert builtin.returncode == 1 and "kodelet plugins disable" in builtin.stderr

    res = kodelet(project, "plugins", "uninstall", "demo", python=python, env=env)
    assert res.returncode == 0, res.stderr
    assert "Successfully uninstalled kodelet-plugin-demo-1.2.3" in res.stdout
    assert "kodelet-plugin-demo" in res.stderr
    rows = json.loads(kodelet(project, "plugins", "list", "--json", python=python).stdout)
    assert "demo" not in [r["name"] for r in rows]


def test_plugins_disable_and_enable_write_the_local_config(
    project: Path, site: dict[str, str]
) -> None:
    config = project / ".kodelet" / "config.toml"
    config.write_text("# mine\n[plugins]\ndisabled = []  # none yet\n")
    res = kodelet(project, "plugins", "disable", "fragile", env=site)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"Disabled plugin fragile in {config}\n"
    assert config.read_text() == '# mine\n[plugins]\ndisabled = ["fragile"]  # none yet\n'
    rows = json.loads(kodelet(project, "hooks", "list", "--json", env=site).stdout)
    [row] = [r for r in rows if r["name"] == "fragile"]
    # A disabled plugin is not imported (docs/SECURITY.md), so its events are unknown.
    assert (row["status"], row["event"]) == ("disabled", None)
    again = kodelet(project, "plugins", "disable", "fragile", env=site)
    assert again.stdout == "already disabled: plugin fragile\n"

    assert kodelet(project, "plugins", "enable", "fragile", env=site).returncode == 0
    assert config.read_text() == "# mine\n[plugins]\ndisabled = []  # none yet\n"

    typo = kodelet(project, "plugins", "disable", "fragil", env=site)
    assert typo.returncode == 1
    assert typo.stderr == "kodelet: error: no native plugin named 'fragil'; did you mean fragile?\n"


# -- item 5: hooks that cannot run are named, with the fix -------------------------


def test_run_and_replay_name_a_hook_that_is_not_executable_and_the_fix_works(
    project: Path,
) -> None:
    hook = project / ".kodelet" / "hooks" / "guard"
    hook.write_text(BLOCKING_HOOK % "guarded")
    hook.chmod(0o644)
    warning = f"kodelet: warning: hook guard skipped: not executable (fix: chmod +x {hook})\n"

    run = ["hooks", "run", "before_tool_call", "-p", "-"]
    res = kodelet(project, *run, stdin='{"tool_name": "x"}')
    assert res.returncode == 0
    assert json.loads(res.stdout) == {"blocked": False}
    assert res.stderr == warning
    replay = kodelet(project, "replay", "--my-hooks", "--json")
    assert replay.returncode == 0, replay.stderr
    assert replay.stderr == warning

    fix = warning.split("(fix: ")[1].rstrip(")\n")
    subprocess.run(shlex.split(fix), check=True)
    fixed = kodelet(project, *run, stdin='{"tool_name": "x"}')
    assert fixed.stderr == ""
    assert json.loads(fixed.stdout) == {"blocked": True, "reason": "guarded"}


# -- item 9: disabled hooks, near misses, hooks new, --exit-code -------------------


def test_a_disabled_hook_is_listed_by_its_name_under_its_event(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "no-rm-rf", PASSING_HOOK)
    assert kodelet(project, "hooks", "list").returncode == 0  # the cache learns its event
    assert kodelet(project, "hooks", "disable", "no-rm-rf").returncode == 0
    rows = json.loads(kodelet(project, "hooks", "list", "--json").stdout)
    [row] = [r for r in rows if r["path"] and "no-rm-rf" in r["path"]]
    assert (row["name"], row["status"]) == ("no-rm-rf", "disabled")
    assert row["event"] == "before_tool_call"
    table = kodelet(project, "hooks", "list").stdout
    names = [ln.split()[1] for ln in table.splitlines() if "no-rm-rf" in ln]
    assert names == ["no-rm-rf"] and "event unknown" not in table

    # Without the cache the event cannot be known (a disabled file is never asked).
    uncached = kodelet(project, "hooks", "list", "--json", env={"KODELET_NO_CACHE": "1"})
    [row] = [r for r in json.loads(uncached.stdout) if r["path"] and "no-rm-rf" in r["path"]]
    assert (row["name"], row["status"], row["event"]) == ("no-rm-rf", "disabled", None)


def test_disable_by_a_short_name_suggests_the_full_one(project: Path) -> None:
    repo_hooks = project / ".kodelet" / "plugins" / "org@repo" / "hooks"
    write_hook(repo_hooks, "validate-diff", PASSING_HOOK)
    res = kodelet(project, "hooks", "disable", "validate-diff")
    assert res.returncode == 1
    assert res.stderr == (
        "kodelet: error: no hook or plugin named 'validate-diff'; "
        "did you mean org/repo/validate-diff?\n"
    )
    assert (repo_hooks / "validate-diff").exists()
    nothing = kodelet(project, "hooks", "disable", "zzzz")
    assert nothing.stderr == (
        "kodelet: error: no hook or plugin named 'zzzz' (see: kodelet hooks list)\n"
    )


def _shell_with_kodelet(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The printed hint as a user runs it, with this interpreter's ``kodelet`` on PATH."""
    bindir = cwd / "bin"
    bindir.mkdir(exist_ok=True)
    python = shlex.quote(sys.executable)
    write_hook(bindir, "kodelet", f'#!/bin/sh\nexec {python} -m kodelet "$@"\n')
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("lang", "answer_line", "blocking_line"),
    [
        (
            "python",
            "    return None\n",
            '    return {"blocked": True, "reason": "scaffold says no"}\n',
        ),
        ("bash", "echo '{}'\n", """echo '{"blocked": true, "reason": "scaffold says no"}'\n"""),
    ],
)
def test_hooks_new_writes_a_trusted_working_hook(
    project: Path, lang: str, answer_line: str, blocking_line: str
) -> None:
    res = kodelet(project, "hooks", "new", "guard", "--event", "before_tool_call", "--lang", lang)
    assert res.returncode == 0, res.stderr
    path = project / ".kodelet" / "hooks" / "guard"
    assert res.stdout.splitlines()[0] == f"Created {path} ({lang}, before_tool_call)"
    assert stat.S_IMODE(path.stat().st_mode) == 0o700  # private, whatever the umask
    if lang == "python":
        assert path.read_text().startswith("#!/usr/bin/env python3\n")
    [row] = [r for r in json.loads(kodelet(project, "hooks", "list", "--json").stdout)
             if r["name"] == "guard"]  # fmt: skip
    assert (row["status"], row["event"]) == ("active", "before_tool_call")

    hint = res.stdout.splitlines()[1]
    assert hint.startswith("Try it: echo ")
    tried = _shell_with_kodelet(hint.removeprefix("Try it: ") + " --trace", project)
    assert tried.returncode == 0, tried.stderr
    assert json.loads(tried.stdout) == {"blocked": False}
    trace, builtin = [json.loads(ln) for ln in tried.stderr.splitlines()]
    assert (trace["name"], trace["outcome"]) == ("guard", "no-action"), trace
    assert (builtin["name"], builtin["outcome"]) == ("builtin:protect-kodelet", "no-action")

    # The answer line is the one to edit; changed, the hook blocks.
    text = path.read_text()
    assert text.count(answer_line) == 1
    path.write_text(text.replace(answer_line, blocking_line))
    tried = _shell_with_kodelet(hint.removeprefix("Try it: "), project)
    assert json.loads(tried.stdout) == {"blocked": True, "reason": "scaffold says no"}

    again = kodelet(project, "hooks", "new", "guard", "--event", "after_turn", "--lang", lang)
    assert again.returncode == 1
    assert again.stderr == f"kodelet: error: {path} already exists; not overwritten\n"
    assert "scaffold says no" in path.read_text()


def test_hooks_new_global_and_bad_input(tmp_path: Path, project: Path) -> None:
    args = ["hooks", "new", "audit", "-e", "agent_stop", "--global", "--lang", "bash"]
    res = kodelet(project, *args)
    assert res.returncode == 0, res.stderr
    path = Path(os.environ["KODELET_HOME"]) / "hooks" / "audit"
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for args, message in [
        (["../x", "-e", "agent_stop"], "invalid hook name '../x'"),
        (["exists!", "-e", "agent_stop"], "invalid hook name 'exists!'"),
        (["x", "-e", "agent_stop", "--lang", "ruby"], "unknown language 'ruby'"),
        (["x", "-e", "nope"], "nope"),
    ]:
        bad = kodelet(project, "hooks", "new", *args)
        assert bad.returncode == 2, bad.stderr
        assert message in bad.stderr and len(bad.stderr.splitlines()) == 1
        no_traceback(bad)
    assert not (project / ".kodelet" / "hooks" / "x").exists()


def test_run_exit_code_is_2_when_blocked(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no")
    args = ["hooks", "run", "before_tool_call", "-p", "-"]
    blocked = kodelet(project, *args, "--exit-code", stdin='{"tool_name": "x"}')
    assert blocked.returncode == 2
    assert json.loads(blocked.stdout) == {"blocked": True, "reason": "no"}
    assert kodelet(project, *args, stdin='{"tool_name": "x"}').returncode == 0
    (project / ".kodelet" / "hooks" / "guard").unlink()
    passed = kodelet(project, *args, "--exit-code", stdin='{"tool_name": "x"}')
    assert passed.returncode == 0 and json.loads(passed.stdout) == {"blocked": False}


def test_an_untrusted_hook_is_named_with_the_chmod_that_fixes_it(project: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "guard", BLOCKING_HOOK % "guarded")
    hooks.chmod(0o775)
    # Group write is refused only by a group others are in: another account's group.
    me = pwd.getpwuid(os.geteuid())
    other = next((u for u in pwd.getpwall() if u.pw_gid != me.pw_gid), None)
    if other is None:
        pytest.skip("no other account's group on this machine")
    os.chown(hooks, -1, other.pw_gid)
    run = ["hooks", "run", "before_tool_call", "-p", "-"]
    res = kodelet(project, *run, stdin='{"tool_name": "x"}')
    skipped = res.stderr.splitlines()[0]
    assert skipped.startswith("kodelet: warning: hook guard skipped: untrusted: ")
    assert skipped.endswith(f"(fix: chmod go-w {hooks})")
    # It might be a guard: until fixed it blocks in its place, with the same fix.
    assert json.loads(res.stdout)["blocked"] is True
    assert f"fix: chmod go-w {hooks}" in json.loads(res.stdout)["reason"]
    fix = skipped.split("(fix: ")[1].rstrip(")")
    subprocess.run(shlex.split(fix), check=True)
    fixed = kodelet(project, *run, stdin='{"tool_name": "x"}')
    assert fixed.stderr == ""
    assert json.loads(fixed.stdout) == {"blocked": True, "reason": "guarded"}

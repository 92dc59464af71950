"""Attacks from a hostile checkout, cache or config on the way hooks are found and listed.

Each test reproduces one attack first (a hook that must not run, a guardrail that
must not vanish), with real hook scripts and the real CLI where the CLI is the
promise.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from kodelet import load_runtime
from kodelet.adapters.cache import CACHE_FILE
from kodelet.events import Event
from kodelet.payloads import BeforeToolCallPayload
from kodelet.places import CACHE as CACHE_DIR
from kodelet.testing import discovered, write_hook

from tests.kit.cli import run_before_tool_call, run_kodelet

OTHER_UID = 4242

# Writes a line to $MARK for every way it is run: the proof that something executed.
MARKING = """#!/bin/sh
echo "$1" >> {mark}
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null
{body}
"""

BLOCK = """echo '{"blocked": true, "reason": "guard says no"}'"""


def hooks_dir(project: Path) -> Path:
    return project / ".kodelet" / "hooks"


def marking(mark: Path, body: str = "echo '{}'") -> str:
    return MARKING.format(mark=mark, body=body)


def runs(mark: Path) -> list[str]:
    return mark.read_text().split() if mark.exists() else []


def bash_call() -> BeforeToolCallPayload:
    return BeforeToolCallPayload(tool_name="bash", tool_input={"command": "rm -rf /"})


def fail_closed(project: Path, name: str = "guard", extra: str = "") -> None:
    (project / ".kodelet" / "config.toml").write_text(
        f'[hooks."{name}"]\nfail_closed = true\ntimeout = 2\n{extra}'
    )


def list_json(project: Path, *flags: str, pre: tuple[str, ...] = ()) -> list[dict[str, object]]:
    res = run_kodelet(*pre, "--cwd", str(project), "hooks", "list", "--json", *flags)
    assert res.returncode == 0, res.stderr
    rows: list[dict[str, object]] = json.loads(res.stdout)
    return rows


# -- 2: looking at a checkout runs nothing ---------------------------------------------


def test_hooks_list_no_exec_runs_no_hook(project: Path, tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    write_hook(hooks_dir(project), "evil", marking(mark))
    write_hook(hooks_dir(project), "loose", marking(mark)).chmod(0o777)
    rows = {r["name"]: r for r in list_json(project, "--no-exec")}
    assert runs(mark) == []
    assert rows["evil"]["status"] == "skipped"
    assert "not run: --no-exec; trusted, event unknown" in str(rows["evil"]["reason"])
    assert str(rows["loose"]["reason"]).startswith("untrusted: ")


def test_hooks_list_no_exec_shows_cached_events(project: Path, tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    write_hook(hooks_dir(project), "known", marking(mark))
    list_json(project)  # a trusted run fills the cache
    assert runs(mark) == ["hook"]
    (row,) = [r for r in list_json(project, "--no-exec") if r["name"] == "known"]
    assert row["event"] == "before_tool_call"
    assert "event from the discovery cache" in str(row["reason"])
    assert runs(mark) == ["hook"]


def test_no_hooks_hooks_list_shows_the_files_it_did_not_run(project: Path, tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    write_hook(hooks_dir(project), "evil", marking(mark))
    rows = {r["name"]: r for r in list_json(project, pre=("--no-hooks",))}
    assert runs(mark) == []
    assert "not run: --no-hooks" in str(rows["evil"]["reason"])


# -- 3: the discovery cache cannot relabel a guardrail ---------------------------------


def _relabel_cache(cache: Path) -> None:
    data = json.loads(cache.read_text())
    for entry in data["entries"].values():
        entry["event"] = "agent_stop"
    cache.write_text(json.dumps(data))


def test_relabelled_cache_entry_cannot_move_a_fail_closed_guard(
    project: Path, kodelet_home: Path
) -> None:
    write_hook(hooks_dir(project), "guard", marking(Path("/dev/null"), BLOCK))
    fail_closed(project)
    with load_runtime(cwd=project, entry_points=False):
        pass
    _relabel_cache(kodelet_home / CACHE_DIR / CACHE_FILE)
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(bash_call())
    assert d.result.blocked is True


def test_cache_writable_by_others_is_ignored(project: Path, kodelet_home: Path) -> None:
    write_hook(hooks_dir(project), "guard", marking(Path("/dev/null"), BLOCK))
    with load_runtime(cwd=project, entry_points=False):
        pass
    cache = kodelet_home / CACHE_DIR / CACHE_FILE
    _relabel_cache(cache)
    cache.chmod(0o666)
    with load_runtime(cwd=project, entry_points=False) as rt:
        (hook,) = discovered(rt)
        assert hook.event is Event.BEFORE_TOOL_CALL
        assert rt.dispatch(bash_call()).result.blocked is True
    assert json.loads(cache.read_text())["entries"], "an untrusted cache is not rewritten either"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the cache to another uid")
def test_cache_owned_by_another_user_is_ignored(project: Path, kodelet_home: Path) -> None:
    write_hook(hooks_dir(project), "guard", marking(Path("/dev/null"), BLOCK))
    with load_runtime(cwd=project, entry_points=False):
        pass
    cache = kodelet_home / CACHE_DIR / CACHE_FILE
    _relabel_cache(cache)
    os.chown(cache, OTHER_UID, OTHER_UID)
    with load_runtime(cwd=project, entry_points=False) as rt:
        assert rt.dispatch(bash_call()).result.blocked is True


# -- 4: trust re-checked before each run -----------------------------------------------


@pytest.mark.parametrize("what", ["file", "directory"])
def test_hook_made_world_writable_after_start_does_not_run(
    project: Path, tmp_path: Path, what: str
) -> None:
    mark = tmp_path / "mark"
    path = write_hook(hooks_dir(project), "guard", marking(mark, BLOCK))
    fail_closed(project)
    with load_runtime(cwd=project, entry_points=False) as rt:
        assert rt.dispatch(bash_call()).result.blocked is True
        (path if what == "file" else path.parent).chmod(0o777)
        d = rt.dispatch(bash_call())
    assert runs(mark) == ["hook", "run"], "the replacement never ran"
    assert d.result.blocked is True
    assert "untrusted" in str(d.result.reason) and "fail-closed" in str(d.result.reason)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the file to another uid")
def test_hook_given_to_another_user_after_start_does_not_run(project: Path, tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    path = write_hook(hooks_dir(project), "guard", marking(mark, BLOCK))
    with load_runtime(cwd=project, entry_points=False) as rt:
        os.chown(path, OTHER_UID, OTHER_UID)
        d = rt.dispatch(bash_call())
    assert runs(mark) == ["hook"]
    assert d.trace[0].error is not None and f"uid {OTHER_UID}" in d.trace[0].error


PERSISTENT = """#!/bin/sh
echo "$1" >> {mark}
if [ "$1" = hook ]; then echo before_tool_call persistent; exit 0; fi
if [ "$1" = serve ]; then
  while read line; do echo '{{"blocked": true, "reason": "served"}}'; done
  exit 0
fi
cat >/dev/null
"""


def test_persistent_server_is_not_started_from_an_untrusted_file(
    project: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "mark"
    path = write_hook(hooks_dir(project), "guard", PERSISTENT.format(mark=mark))
    fail_closed(project)
    with load_runtime(cwd=project, entry_points=False) as rt:
        path.chmod(0o777)
        d = rt.dispatch(bash_call())
    assert "serve" not in runs(mark)
    assert d.result.blocked is True and "untrusted" in str(d.result.reason)


# -- 5 and 19: disabled means not run and not imported ---------------------------------


@pytest.mark.parametrize(
    "switch_off", ['[hooks]\ndisabled = ["evil"]\n', '[hooks."evil"]\nenabled = false\n']
)
def test_hook_disabled_in_config_is_not_asked(
    project: Path, tmp_path: Path, switch_off: str
) -> None:
    mark = tmp_path / "mark"
    write_hook(hooks_dir(project), "evil", marking(mark))
    (project / ".kodelet" / "config.toml").write_text(switch_off)
    with load_runtime(cwd=project, entry_points=False) as rt:
        (hook,) = discovered(rt)
        rt.dispatch(bash_call())
    assert (hook.status, hook.reason) == ("disabled", "disabled in config.toml")
    assert runs(mark) == []


# -- 6: a [hooks."<name>"] table naming no hook ----------------------------------------


def test_fail_closed_on_an_unknown_name_blocks(project: Path, tmp_path: Path) -> None:
    write_hook(hooks_dir(project), "guard", marking(tmp_path / "mark"))
    fail_closed(project, "gaurd")
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(bash_call())
    assert d.result.blocked is True
    assert "hook gaurd failed (fail-closed): not run: no hook or plugin of this name" in str(
        d.result.reason
    )


def test_unknown_name_is_warned_about_everywhere(project: Path, tmp_path: Path) -> None:
    write_hook(hooks_dir(project), "guard", marking(tmp_path / "mark"))
    (project / ".kodelet" / "config.toml").write_text('[hooks."gaurd"]\ntimeout = 3\n')
    rows = list_json(project)
    assert [r["reason"] for r in rows if r["name"] == "gaurd"] == [
        "no hook or plugin of this name (configured in config.toml)"
    ]
    shown = run_kodelet("--cwd", str(project), "config", "show")
    assert 'names hook "gaurd", but no hook or plugin has that name' in shown.stderr
    ran = run_before_tool_call(project, '{"tool_name": "bash"}')
    assert "hook gaurd skipped: no hook or plugin of this name (configured in config.toml)" in (
        ran.stderr
    )
    assert "guard" not in shown.stderr.replace('"gaurd"', "")


def test_known_names_are_not_warned_about(project: Path, tmp_path: Path) -> None:
    write_hook(hooks_dir(project), "guard", marking(tmp_path / "mark"))
    write_hook(hooks_dir(project), "off.disable", marking(tmp_path / "mark"))
    (project / ".kodelet" / "config.toml").write_text(
        '[hooks."guard"]\ntimeout = 3\n[hooks."off"]\nfail_closed = true\n'
        '[hooks."builtin:compact-trigger"]\ntimeout = 3\n'
    )
    shown = run_kodelet("--cwd", str(project), "config", "show")
    assert shown.returncode == 0 and "warning" not in shown.stderr
    with load_runtime(cwd=project) as rt:
        assert rt.dispatch(bash_call()).result.blocked is False


# -- 7: nothing from disk reaches the terminal raw ------------------------------------


def test_control_characters_in_names_are_escaped(project: Path, tmp_path: Path) -> None:
    evil = "x\nbefore_tool_call\n  1  fake\x1b[2J\u202e"
    write_hook(hooks_dir(project), evil, marking(tmp_path / "mark"))
    (project / ".kodelet" / "config.toml").write_text(
        '[hooks."g\\u001b[1A\\rhooks.\\"guard\\".fail_closed  true"]\ntimeout = 3\n'
    )
    for argv in (("hooks", "list"), ("hooks", "list", "--no-exec"), ("config", "show")):
        res = run_kodelet("--cwd", str(project), *argv)
        assert res.returncode == 0, res.stderr
        for stream in (res.stdout, res.stderr):
            assert "\x1b" not in stream and "\r" not in stream and "\u202e" not in stream
        assert "\nbefore_tool_call\n  1  fake" not in res.stdout
    listing = run_kodelet("--cwd", str(project), "hooks", "list").stdout
    assert "x\\nbefore_tool_call\\n  1  fake\\x1b[2J\\u202e" in listing


# -- 8: a fail-closed guardrail never vanishes -----------------------------------------


def _vanishing(project: Path, tmp_path: Path, how: str) -> None:
    hooks = hooks_dir(project)
    hooks.mkdir(parents=True, exist_ok=True)
    if how == "dangling":
        (hooks / "guard").symlink_to(tmp_path / "gone")
    elif how == "loop":
        (hooks / "guard").symlink_to(hooks / "guard")
    elif how == "unreachable":
        (tmp_path / "plain").write_text("")
        (hooks / "guard").symlink_to(tmp_path / "plain" / "guard")
    elif how == "directory":
        (hooks / "guard").mkdir()
    elif how == "hooks-not-a-directory":
        hooks.rmdir()
        hooks.write_text("")
    else:
        raise AssertionError(how)


REASONS = {
    "dangling": "dangling symlink to",
    "loop": "symlink loop",
    "unreachable": "unreachable: Not a directory",
    "directory": "a directory",
    "hooks-not-a-directory": "hooks directory unreadable: Not a directory",
}


@pytest.mark.parametrize("how", list(REASONS))
def test_vanished_fail_closed_guard_is_listed_and_blocks(
    project: Path, tmp_path: Path, how: str
) -> None:
    _vanishing(project, tmp_path, how)
    fail_closed(project)
    reasons = [str(r["reason"]) for r in list_json(project)]
    assert any(REASONS[how] in r for r in reasons), reasons
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(bash_call())
    assert d.result.blocked is True
    assert "fail-closed" in str(d.result.reason)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_unreadable_hooks_directory_blocks_a_fail_closed_guard(
    project: Path, tmp_path: Path
) -> None:
    write_hook(hooks_dir(project), "guard", marking(tmp_path / "mark", BLOCK))
    fail_closed(project)
    hooks_dir(project).chmod(0o300)
    try:
        with load_runtime(cwd=project, entry_points=False) as rt:
            d = rt.dispatch(bash_call())
    finally:
        hooks_dir(project).chmod(0o755)
    assert d.result.blocked is True


# -- 23: hooks hanging on `hook` cost their timeout once -------------------------------


def test_hanging_hooks_cost_one_timeout_then_nothing(project: Path, tmp_path: Path) -> None:
    for i in range(40):
        write_hook(hooks_dir(project), f"hang{i:02}", "#!/bin/sh\nexec sleep 30\n")
    start = time.monotonic()
    with load_runtime(cwd=project, entry_points=False) as rt:
        assert {h.status for h in discovered(rt)} == {"skipped"}
    first = time.monotonic() - start
    start = time.monotonic()
    with load_runtime(cwd=project, entry_points=False) as rt:
        reasons = {h.reason for h in discovered(rt)}
    second = time.monotonic() - start
    assert first < 9, "40 hanging queries run at once: one timeout, not three"
    assert second < 2, "failed answers are cached"
    assert reasons == {"'hook' query gave no answer within 5s"}


# -- 5 and 19: native plugins switched off are not imported; exiting at import fails --


def _dist(site: Path, name: str, module: str) -> None:
    """A minimal installed distribution with one ``kodelet.plugins`` entry point."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[kodelet.plugins]\n{name} = {name.replace('-', '_')}\n"
    )
    (site / f"{name.replace('-', '_')}.py").write_text(module)


def _plugin_env(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def test_plugin_calling_sys_exit_at_import_is_its_load_failure(
    project: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    _dist(site, "kp-exit", "import sys\nsys.exit(0)\n")
    res = run_kodelet("--cwd", str(project), "plugins", "list", "--json", env=_plugin_env(site))
    assert res.returncode == 0, res.stderr
    (row,) = [r for r in json.loads(res.stdout) if r["name"] == "kp-exit"]
    assert row["error"] == "import failed: SystemExit: 0"
    ran = run_before_tool_call(project, '{"tool_name": "bash"}', env=_plugin_env(site))
    assert ran.returncode == 0 and json.loads(ran.stdout) == {"blocked": False}


@pytest.mark.parametrize(
    "switch_off",
    ['[plugins]\ndisabled = ["kp-hang"]\n', '[hooks."kp-hang"]\nenabled = false\n'],
)
def test_plugin_switched_off_in_config_is_not_imported(
    project: Path, tmp_path: Path, switch_off: str
) -> None:
    site = tmp_path / "site"
    mark = tmp_path / "imported"
    _dist(site, "kp-hang", f"open({str(mark)!r}, 'w').close()\nimport time\ntime.sleep(600)\n")
    (project / ".kodelet" / "config.toml").write_text(switch_off)
    for argv in (("plugins", "list", "--json"), ("hooks", "list", "--json")):
        res = run_kodelet("--cwd", str(project), *argv, env=_plugin_env(site), timeout=60)
        assert res.returncode == 0, res.stderr
        assert not mark.exists()
    table = run_kodelet("--cwd", str(project), "plugins", "list", env=_plugin_env(site))
    assert "kp-hang: disabled in config.toml" in table.stdout
    assert not mark.exists()


def test_control_characters_in_a_plugin_manifest_are_escaped(project: Path) -> None:
    repo = project / ".kodelet" / "plugins" / "acme@tools"
    (repo / "hooks").mkdir(parents=True)
    (repo / ".kodelet-plugin.json").write_text(
        json.dumps({"source": "https://x\x1b[2J\r\nacme/fake: evil", "ref": "main\x9b1A"})
    )
    res = run_kodelet("--cwd", str(project), "plugins", "list")
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and "\x9b" not in res.stdout and "\r" not in res.stdout
    assert "https://x\\x1b[2J\\r\\nacme/fake: evil @ main\\x9b1A" in res.stdout

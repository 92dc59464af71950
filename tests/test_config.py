"""Configuration: files merge key by key, environment and flags override them, every core
key has its effect, a broken file is a one-line error naming file and key, and each
``[plugin.<name>]`` table reaches its own plugin exactly once per runtime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kodelet import load_runtime
from kodelet.config import ConfigError, load_config
from kodelet.events import Event
from kodelet.markers import hookimpl
from kodelet.payloads import UserMessageSendPayload
from kodelet.places import Places
from kodelet.testing import discovered, write_hook
from kodelet.trace import Outcome

HOOK = """#!/bin/sh
if [ "$1" = hook ]; then echo user_message_send; exit 0; fi
{body}
"""


def write_config(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "config.toml"
    path.write_text(text)
    return path


def places(project: Path, kodelet_home: Path) -> Places:
    return Places(cwd=project, global_root=kodelet_home)


def msg(text: str = "hi") -> UserMessageSendPayload:
    return UserMessageSendPayload(message=text)


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ if env is None else env)
    return subprocess.run(
        [sys.executable, "-m", "kodelet", "--cwd", str(cwd), *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )


# -- precedence ---------------------------------------------------------------


def test_repo_local_wins_key_by_key(project: Path, kodelet_home: Path) -> None:
    g = write_config(kodelet_home, '[hooks]\ntimeout = 10\ndisabled = ["g"]\n')
    loc = write_config(project / ".kodelet", '[hooks]\ndisabled = ["l"]\n')
    cfg = load_config(places(project, kodelet_home), {})
    assert cfg.timeout == 10.0
    assert cfg.disabled_hooks == ("l",)
    assert cfg.sources["hooks.timeout"] == str(g)
    assert cfg.sources["hooks.disabled"] == str(loc)


def test_per_hook_tables_merge_key_by_key(project: Path, kodelet_home: Path) -> None:
    write_config(kodelet_home, '[hooks."guard"]\ntimeout = 4\nfail_closed = true\n')
    write_config(project / ".kodelet", '[hooks."guard"]\ntimeout = 2\n')
    cfg = load_config(places(project, kodelet_home), {})
    assert cfg.hook("guard").timeout == 2.0
    assert cfg.hook("guard").fail_closed is True
    assert cfg.hook("guard").enabled is True


def test_env_then_flag_override_files(project: Path, kodelet_home: Path) -> None:
    write_config(project / ".kodelet", "[hooks]\ntimeout = 10\n")
    p = places(project, kodelet_home)
    env = {"KODELET_HOOK_TIMEOUT": "7"}
    assert load_config(p, {}).timeout == 10.0
    assert load_config(p, env).timeout == 7.0
    assert load_config(p, env).sources["hooks.timeout"] == "env KODELET_HOOK_TIMEOUT"
    flagged = load_config(p, env, timeout=3)
    assert flagged.timeout == 3.0
    assert flagged.sources["hooks.timeout"] == "--timeout"


def test_timeout_flag_overrides_per_hook_timeouts(project: Path, kodelet_home: Path) -> None:
    write_config(project / ".kodelet", '[hooks."slow"]\ntimeout = 9\n')
    p = places(project, kodelet_home)
    assert load_config(p, {}).timeout_for("slow") == 9.0
    assert load_config(p, {}).timeout_for("other") == 30.0
    # The environment and an explicit flag override files, per-hook tables included.
    assert load_config(p, {"KODELET_HOOK_TIMEOUT": "2"}).timeout_for("slow") == 2.0
    assert load_config(p, {}, timeout=1).timeout_for("slow") == 1.0


def test_runtime_reads_files_env_and_timeout_argument(project: Path, kodelet_home: Path) -> None:
    write_config(kodelet_home, "[hooks]\ntimeout = 11\n")
    env = {**os.environ}
    with load_runtime(cwd=project, entry_points=False, executables=False) as rt:
        assert rt.config.timeout == 11.0
    env["KODELET_HOOK_TIMEOUT"] = "5"
    with load_runtime(cwd=project, entry_points=False, executables=False, env=env) as rt:
        assert rt.config.timeout == 5.0
    with load_runtime(cwd=project, entry_points=False, executables=False, env=env, timeout=2) as rt:
        assert rt.config.timeout == 2.0


def test_no_hooks_from_env_and_flag(project: Path, kodelet_home: Path) -> None:
    p = places(project, kodelet_home)
    assert load_config(p, {}).no_hooks is False
    assert load_config(p, {"KODELET_NO_HOOKS": "1"}).sources["no_hooks"] == "env KODELET_NO_HOOKS"
    assert load_config(p, {"KODELET_NO_HOOKS": "0"}).no_hooks is False
    assert load_config(p, {}, no_hooks=True).sources["no_hooks"] == "--no-hooks"


# -- every key has its effect ------------------------------------------------


def test_hooks_timeout_applies_to_executables(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "sleeper", HOOK.format(body="sleep 5"))
    write_config(project / ".kodelet", "[hooks]\ntimeout = 0.3\n")
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(msg())
    (rec,) = d.trace
    assert rec.outcome is Outcome.ERROR
    assert rec.error == "timed out after 0.3s"
    assert rec.duration < 3


def test_per_hook_timeout_applies_to_that_hook_only(project: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "a-slow", HOOK.format(body="sleep 1; echo '{}'"))
    write_hook(hooks, "b-slow", HOOK.format(body="sleep 1; echo '{}'"))
    write_config(
        project / ".kodelet",
        '[hooks]\ntimeout = 5\n[hooks."a-slow"]\ntimeout = 0.2\nfail_closed = false\n',
    )
    with load_runtime(cwd=project, entry_points=False) as rt:
        assert [e.timeout for e in rt.hooks(Event.USER_MESSAGE_SEND)] == [0.2, 5.0]
        d = rt.dispatch(msg())
    assert [(r.name, r.outcome) for r in d.trace] == [
        ("a-slow", Outcome.ERROR),
        ("b-slow", Outcome.NO_ACTION),
    ]
    assert d.trace[0].error == "timed out after 0.2s"


def test_hooks_disabled_and_enabled_false_skip_executables(project: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    marker = project / "ran"
    for name in ("one", "two", "three"):
        write_hook(hooks, name, HOOK.format(body=f"echo {name} >> '{marker}'"))
    write_config(
        project / ".kodelet",
        '[hooks]\ndisabled = ["one"]\n[hooks."two"]\nenabled = false\n',
    )
    with load_runtime(cwd=project, entry_points=False) as rt:
        status = {h.name: (h.status, h.reason) for h in discovered(rt)}
        rt.dispatch(msg())
    assert status["one"] == ("disabled", "disabled in config.toml")
    assert status["two"] == ("disabled", "disabled in config.toml")
    assert status["three"][0] == "active"
    assert marker.read_text().split() == ["three"]


def test_disabling_native_plugins_by_plugins_and_hooks_keys(project: Path) -> None:
    calls: list[str] = []

    class Native:
        def __init__(self, name: str) -> None:
            self.name = name

        @hookimpl
        def user_message_send(self) -> None:
            calls.append(self.name)

    write_config(
        project / ".kodelet",
        '[plugins]\ndisabled = ["p1"]\n[hooks]\ndisabled = ["p2"]\n[hooks."p3"]\nenabled = false\n',
    )
    plugins = [(n, Native(n)) for n in ("p1", "p2", "p3", "p4")]
    with load_runtime(
        cwd=project, entry_points=False, builtins=False, executables=False, plugins=plugins
    ) as rt:
        rt.dispatch(msg())
        disabled = {i.name: i.disabled for i in rt.plugins}
    assert calls == ["p4"]
    assert disabled == {"p1": True, "p2": True, "p3": True, "p4": False}


def test_plugins_disabled_turns_off_an_installed_entry_point(project: Path) -> None:
    name = "builtin:compact-trigger"
    with load_runtime(cwd=project, executables=False) as rt:
        assert any(i.name == name and not i.disabled for i in rt.plugins)
    write_config(project / ".kodelet", f'[plugins]\ndisabled = ["{name}"]\n')
    with load_runtime(cwd=project, executables=False) as rt:
        (info,) = [i for i in rt.plugins if i.name == name]
        assert info.disabled
        assert all(e.name != name for e in rt.hooks(Event.AFTER_TURN))


def test_fail_closed_key_reaches_the_call_order(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", HOOK.format(body="exit 0"))
    write_config(project / ".kodelet", '[hooks."guard"]\nfail_closed = true\n')
    with load_runtime(cwd=project, entry_points=False) as rt:
        (entry,) = rt.hooks(Event.USER_MESSAGE_SEND)
    assert entry.name == "guard" and entry.fail_closed


# -- invalid files -------------------------------------------------------------

BAD = [
    ("[hooks\ntimeout = 1\n", "invalid TOML"),
    ("[hookz]\ntimeout = 1\n", "unknown key 'hookz'"),
    ("hooks = 3\n", "[hooks]: expected a table"),
    ("[hooks]\ntimout = 1\n", "unknown key 'hooks.timout'"),
    ('[hooks]\ntimeout = "30"\n', "hooks.timeout: expected a positive number"),
    ("[hooks]\ntimeout = 0\n", "hooks.timeout: expected a positive number"),
    ("[hooks]\ntimeout = nan\n", "hooks.timeout: expected a positive number"),
    ("[hooks]\ntimeout = true\n", "hooks.timeout: expected a positive number"),
    ('[hooks]\ndisabled = "guard"\n', "hooks.disabled: expected a list of names"),
    ("[hooks]\ndisabled = [1]\n", "hooks.disabled: expected a list of names"),
    ('[hooks."g"]\ntimeout = -1\n', 'hooks."g".timeout: expected a positive number'),
    ('[hooks."g"]\nfail_closed = "yes"\n', 'hooks."g".fail_closed: expected true or false'),
    ('[hooks."g"]\nenabled = 1\n', 'hooks."g".enabled: expected true or false'),
    ('[hooks."g"]\nfailclosed = true\n', 'hooks."g".failclosed: unknown key'),
    ('[plugins]\ndisabled = "x"\n', "plugins.disabled: expected a list of names"),
    ("[plugins]\nenabled = []\n", "unknown key 'plugins.enabled'"),
    ("[plugin]\nfoo = 1\n", "plugin.foo: expected a table"),
]


@pytest.mark.parametrize(("text", "expected"), BAD, ids=[e for _, e in BAD])
@pytest.mark.parametrize("where", ["global", "local"])
def test_invalid_file_names_file_and_key(
    project: Path, kodelet_home: Path, where: str, text: str, expected: str
) -> None:
    root = kodelet_home if where == "global" else project / ".kodelet"
    path = write_config(root, text)
    with pytest.raises(ConfigError) as info:
        load_runtime(cwd=project, entry_points=False, executables=False)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


def test_invalid_encoding_and_unreadable_file(project: Path) -> None:
    path = project / ".kodelet" / "config.toml"
    path.write_bytes(b'[plugin.x]\nk = "\xff"\n')
    with pytest.raises(ConfigError, match=r"config\.toml: invalid TOML: not UTF-8"):
        load_config(Places(cwd=project, global_root=project / "g"), {})
    path.unlink()
    path.mkdir()
    with pytest.raises(ConfigError, match=r"config\.toml: cannot read"):
        load_config(Places(cwd=project, global_root=project / "g"), {})


@pytest.mark.parametrize("value", ["abc", "-1", "0", "inf"])
def test_invalid_timeout_env_names_the_variable(project: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"^KODELET_HOOK_TIMEOUT: "):
        load_config(Places(cwd=project, global_root=project / "g"), {"KODELET_HOOK_TIMEOUT": value})


def test_invalid_timeout_flag(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--timeout: "):
        load_config(Places(cwd=project, global_root=project / "g"), {}, timeout=-2)


def test_plugin_tables_are_not_validated(project: Path, kodelet_home: Path) -> None:
    write_config(
        project / ".kodelet",
        '[plugin.anything]\nwhatever = {nested = [1, "x"]}\n[plugin."dotted.name"]\nk = 1\n',
    )
    cfg = load_config(places(project, kodelet_home), {})
    assert cfg.plugin_config("anything") == {"whatever": {"nested": [1, "x"]}}
    assert cfg.plugin_config("dotted.name") == {"k": 1}
    assert cfg.plugin_config("dotted") == {}


# -- the CLI -------------------------------------------------------------------


def test_config_show_json_names_sources(project: Path, kodelet_home: Path) -> None:
    g = write_config(kodelet_home, '[hooks]\ntimeout = 12\n[plugins]\ndisabled = ["x"]\n')
    loc = write_config(project / ".kodelet", '[hooks."guard"]\nfail_closed = true\n')
    env = {**os.environ, "KODELET_HOOK_TIMEOUT": "8"}
    res = cli("config", "show", "--json", cwd=project, env=env)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["hooks.timeout"] == {"value": 8.0, "source": "env KODELET_HOOK_TIMEOUT"}
    assert data["plugins.disabled"] == {"value": ["x"], "source": str(g)}
    assert data['hooks."guard".fail_closed'] == {"value": True, "source": str(loc)}
    assert data["hooks.disabled"] == {"value": [], "source": "default"}
    res = cli("config", "show", "--json", "--timeout", "3", cwd=project, env=env)
    assert json.loads(res.stdout)["hooks.timeout"] == {"value": 3.0, "source": "--timeout"}


def test_config_show_table_for_people(project: Path) -> None:
    loc = write_config(
        project / ".kodelet",
        "[hooks]\ntimeout = 4\n[hooks.\"g\"]\nenabled = false\n[plugin.audit]\nlevel = 'x'\n",
    )
    res = cli("config", "show", cwd=project)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["KEY", "VALUE", "SOURCE"]
    assert ["hooks.timeout", "4", str(loc)] in [line.split() for line in lines]
    assert ["plugin.audit.level", '"x"', str(loc)] in [line.split() for line in lines]
    assert ["no_hooks", "false", "default"] in [line.split() for line in lines]
    assert ['hooks."g".enabled', "false", str(loc)] in [line.split() for line in lines]
    assert ['hooks."g".timeout', "(unset)", "default"] in [line.split() for line in lines]
    assert f"# local file: {loc}" in lines


def test_config_show_invalid_file_exit_2(project: Path) -> None:
    path = write_config(project / ".kodelet", '[hooks."g"]\nfail_closed = "yes"\n')
    res = cli("config", "show", cwd=project)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1
    assert res.stderr.startswith(f'kodelet: error: {path}: hooks."g".fail_closed: ')
    assert "Traceback" not in res.stderr


def test_other_commands_exit_2_on_invalid_config(project: Path) -> None:
    path = write_config(project / ".kodelet", "[hooks]\nbogus = 1\n")
    res = cli("hooks", "list", cwd=project)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    if "No such command" in res.stderr:
        pytest.skip("`kodelet hooks list` is not there yet")
    assert res.stderr.strip() == (
        f"kodelet: error: {path}: unknown key 'hooks.bogus' "
        '(known: timeout, fail_closed, disabled, or a [hooks."<hook name>"] table)'
    )


# -- [plugin.<name>] reaches its plugin through configure -----------------------

PLUGIN_SOURCE = """
import json
from kodelet import hookimpl

@hookimpl
def configure(config):
    with open(config["record"], "a") as fh:
        fh.write(json.dumps(config) + "\\n")

@hookimpl
def user_message_send(message):
    return None
"""


def install_distribution(site: Path, ep_name: str, source: str) -> str:
    """A real installed distribution (dist-info + entry point) on a temp sys.path entry."""
    module = f"kodelet_cfgtest_{uuid.uuid4().hex[:8]}"
    dist = module.replace("_", "-")
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source)
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[kodelet.plugins]\n{ep_name} = {module}\n")
    return module


def test_plugin_table_reaches_its_entry_point_once_per_runtime(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    rec_a, rec_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    mod_a = install_distribution(site, "audit-a", PLUGIN_SOURCE)
    mod_b = install_distribution(site, "audit.b", PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(site))
    write_config(
        project / ".kodelet",
        f'[plugin.audit-a]\nrecord = "{rec_a}"\nlevel = 3\n'
        f'[plugin."audit.b"]\nrecord = "{rec_b}"\nextra = {{x = [1]}}\n'
        f'[plugin.unrelated]\nrecord = "{tmp_path / "nobody"}"\n',
    )
    try:
        with load_runtime(cwd=project, executables=False) as rt:
            for _ in range(3):
                rt.dispatch(msg())
            assert {"audit-a", "audit.b"} <= {i.name for i in rt.plugins if not i.error}
        with load_runtime(cwd=project, executables=False):
            pass
    finally:
        sys.modules.pop(mod_a, None)
        sys.modules.pop(mod_b, None)
    a = [json.loads(line) for line in rec_a.read_text().splitlines()]
    b = [json.loads(line) for line in rec_b.read_text().splitlines()]
    assert a == [{"record": str(rec_a), "level": 3}] * 2
    assert b == [{"record": str(rec_b), "extra": {"x": [1]}}] * 2
    assert not (tmp_path / "nobody").exists()


def test_configure_gets_empty_table_and_late_registration(project: Path) -> None:
    seen: list[tuple[str, dict[str, object]]] = []

    class Plugin:
        def __init__(self, name: str) -> None:
            self.name = name

        @hookimpl
        def configure(self, config: dict[str, object]) -> None:
            seen.append((self.name, config))

    write_config(project / ".kodelet", "[plugin.late]\nk = 1\n")
    with load_runtime(
        cwd=project, entry_points=False, executables=False, plugins=[("early", Plugin("early"))]
    ) as rt:
        assert seen == [("early", {})]
        rt.register(Plugin("late"), name="late")
        rt.dispatch(msg())
    assert seen == [("early", {}), ("late", {"k": 1})]


def test_configure_failure_is_the_plugins_not_the_runtimes(project: Path) -> None:
    class Oops(BaseException):
        pass

    class Broken:
        @hookimpl
        def configure(self, config: dict[str, object]) -> None:
            raise Oops("bad table")

    with load_runtime(
        cwd=project,
        entry_points=False,
        builtins=False,
        executables=False,
        plugins=[("broken", Broken())],
    ) as rt:
        (info,) = rt.plugins
    assert info.error == "configure failed: Oops: bad table"

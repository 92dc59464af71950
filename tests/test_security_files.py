"""Hostile files (issue 17, items 14 and 17): a repository's config.toml that is a FIFO,
a link to /dev/zero, huge or deeply nested; odd keys; timeouts no timer can honour.
Each read is of a regular file, capped, depth-bounded, and fails in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kodelet import jsonio
from kodelet.bounds import check_bounds
from kodelet.config import CONFIG_CAP, MAX_TIMEOUT, ConfigError, load_config
from kodelet.places import Places


def places(project: Path) -> Places:
    return Places(cwd=project, global_root=project / "global")


def config_path(project: Path) -> Path:
    path = project / ".kodelet" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def cli(project: Path, *args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kodelet", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


# -- hostile config files -------------------------------------------------------------


def test_a_fifo_config_does_not_hang_even_no_hooks_commands(project: Path) -> None:
    """The attack: a repository's config.toml that is a FIFO hung every command."""
    os.mkfifo(config_path(project))
    with pytest.raises(ConfigError, match=r"config\.toml: cannot read .*a FIFO"):
        load_config(places(project), {})
    out = cli(project, "--no-hooks", "config", "show")
    assert out.returncode == 2
    assert "not a regular file (a FIFO)" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_config_linked_to_dev_zero_is_refused_without_reading(project: Path) -> None:
    """The attack: config.toml -> /dev/zero exhausted memory."""
    config_path(project).symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match=r"cannot read a config file: not a regular file"):
        load_config(places(project), {})


def test_a_huge_config_is_refused(project: Path) -> None:
    path = config_path(project)
    with path.open("wb") as fh:
        fh.truncate(CONFIG_CAP + 1)  # sparse: costs no disk
    with pytest.raises(ConfigError, match=rf"larger than {CONFIG_CAP} bytes"):
        load_config(places(project), {})


@pytest.mark.parametrize(
    "text",
    [
        "[plugin.x]\nv = " + "[" * 50_000 + "]" * 50_000 + "\n",
        "[plugin.x]\nv = " + "{a = " * 5_000 + "1" + "}" * 5_000 + "\n",
        "[plugin.x." + ".".join(["a"] * 200) + "]\nv = 1\n",
    ],
    ids=["arrays", "inline-tables", "table-header"],
)
def test_deeply_nested_toml_is_one_line_error(project: Path, text: str) -> None:
    """The attack: deeply nested TOML crashed every command with a traceback."""
    config_path(project).write_text(text)
    with pytest.raises(ConfigError, match="nested deeper than 64 levels") as info:
        load_config(places(project), {})
    assert "\n" not in str(info.value)
    out = cli(project, "config", "show")
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_plugin_names_with_quotes_and_dots(project: Path) -> None:
    """The attack: ``[plugin.'a".b']`` gave a traceback (the name was parsed back out of
    a dotted string); names are kept as they are now."""
    config_path(project).write_text(
        '[plugin.\'a".b\']\nk = 1\n[plugin."x.y"]\n\'odd"key\' = 2\n[hooks.\'q"r\'."s"]\n'
    )
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(places(project), {})
    config_path(project).write_text(
        "[plugin.'a\".b']\nk = 1\n[plugin.\"x.y\"]\n'odd\"key' = 2\n"
        "[hooks.'q\".r']\nfail_closed = true\n"
    )
    config = load_config(places(project), {})
    assert config.plugin_config('a".b') == {"k": 1}
    assert config.plugin_config("x.y") == {'odd"key': 2}
    assert config.hook('q".r').fail_closed
    shown = config.to_json()
    assert shown['plugin."a\\".b".k']["value"] == 1
    assert shown['hooks."q\\".r".fail_closed']["value"] is True


def test_hooks_named_timeout_or_disabled_can_have_tables(project: Path) -> None:
    """In one file TOML itself forbids ``[hooks] timeout`` beside ``[hooks."timeout"]``;
    across the two files both must work."""
    global_config = project / "global" / "config.toml"
    global_config.parent.mkdir()
    global_config.write_text("[hooks]\ntimeout = 7\ndisabled = ['x']\n")
    config_path(project).write_text(
        '[hooks."timeout"]\nfail_closed = true\ntimeout = 3\n[hooks."disabled"]\nenabled = false\n'
    )
    config = load_config(places(project), {})
    assert config.timeout == 7 and config.disabled_hooks == ("x",)
    assert config.hook("timeout").fail_closed and config.timeout_for("timeout") == 3
    assert not config.hook_enabled("disabled")


# -- item 14: timeouts no timer can honour ---------------------------------------------


@pytest.mark.parametrize("value", [2_147_484, 1e12, MAX_TIMEOUT + 1])
def test_timeouts_past_every_timer_are_refused(project: Path, value: float) -> None:
    """The attack: a timeout of 2,147,484 s passed validation, then every call failed
    with OverflowError (fail-open)."""
    config_path(project).write_text(f'[hooks."guard"]\ntimeout = {value}\n')
    with pytest.raises(ConfigError, match=r'hooks\."guard"\.timeout: at most 1e\+06 seconds'):
        load_config(places(project), {})
    config_path(project).write_text("")
    with pytest.raises(ConfigError, match=r"^KODELET_HOOK_TIMEOUT: at most"):
        load_config(places(project), {"KODELET_HOOK_TIMEOUT": str(value)})
    with pytest.raises(ConfigError, match=r"^--timeout: at most"):
        load_config(places(project), {}, timeout=value)


def test_the_timeout_flag_is_refused_by_the_cli(project: Path) -> None:
    payload = project / "payload.json"
    payload.write_text('{"message": "hi"}')
    out = cli(
        project,
        "hooks",
        "run",
        "user_message_send",
        "--payload",
        str(payload),
        "--timeout",
        "2147484",
    )
    assert out.returncode == 2, out.stderr
    assert "--timeout: at most 1e+06 seconds" in out.stderr and "Traceback" not in out.stderr


def test_the_largest_timeout_still_works(project: Path) -> None:
    from kodelet.process import run_process

    config_path(project).write_text(f"[hooks]\ntimeout = {MAX_TIMEOUT}\n")
    assert load_config(places(project), {}).timeout == MAX_TIMEOUT
    res = run_process(["true"], b"", cwd=None, env=dict(os.environ), timeout=MAX_TIMEOUT)
    assert res.failure(MAX_TIMEOUT) is None


# -- hostile files in general: one reader for config, payloads, manifests, caches -----

KINDS = ["regular", "empty", "fifo", "dev-zero", "directory", "dangling", "loop", "huge", "deep"]


def make(path: Path, kind: str, content: bytes) -> None:
    if kind == "regular":
        path.write_bytes(content)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "dangling":
        path.symlink_to(path.parent / "nowhere")
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "huge":
        with path.open("wb") as fh:
            fh.truncate(jsonio.FILE_CAP + 1)
    elif kind == "deep":
        path.write_bytes(b"[" * 100_000 + b"]" * 100_000)


@given(
    kind=st.sampled_from(KINDS),
    content=st.binary(max_size=64)
    | st.text(max_size=64).map(lambda t: t.encode("utf-8", "replace")),
)
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_hostile_file_is_read_or_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, kind: str, content: bytes
) -> None:
    path = tmp_path_factory.mktemp("hostile") / "file.json"
    make(path, kind, content)
    try:
        value: Any = jsonio.load_file(path, "a test file")
    except FileNotFoundError:
        assert kind == "dangling"
    except (jsonio.FileError, jsonio.JSONError) as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 400
        assert message.startswith(str(path))
    else:
        assert kind == "regular"
        check_bounds(value)


# -- the same reader for replay files, manifests and payloads ---------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep", "huge"])
def test_hostile_replay_files_are_one_line_errors(tmp_path: Path, kind: str) -> None:
    from kodelet.replay.claude import import_file
    from kodelet.replay.format import SessionFormatError, load

    path = tmp_path / "session.json"
    make(path, kind, b"")
    for reader in (load, import_file):
        with pytest.raises(SessionFormatError) as info:
            reader(path)
        assert "\n" not in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("kind", ["fifo", "deep", "huge"])
def test_hostile_manifests_are_reported_not_raised(tmp_path: Path, kind: str) -> None:
    from kodelet import repos

    plugin = tmp_path / "plugins" / "acme@tools"
    plugin.mkdir(parents=True)
    make(plugin / repos.MANIFEST, kind, b"")
    got = repos.read_repo(plugin, "local")
    assert got.manifest is None and got.error is not None
    assert got.error.startswith("unreadable manifest") and "\n" not in got.error


def test_unknown_payload_fields(caplog: pytest.LogCaptureFixture) -> None:
    """Unknown fields in a payload: an error when a person wrote it (strict), dropped
    with a warning naming them when a host sent it (a newer host keeps working)."""
    from kodelet.events import Event
    from kodelet.wire import WireError, payload_from_wire

    data = {"tool_name": "bash", "tool_inptu": {"command": "rm -rf /"}}
    with pytest.raises(WireError, match=r"payload: unknown field 'tool_inptu' \(known: "):
        payload_from_wire(Event.BEFORE_TOOL_CALL, data, strict=True)
    out = {"toolName": "bash", "success": True, "extra": 1}
    with pytest.raises(WireError, match=r"payload\.tool_output: unknown field 'extra'"):
        payload_from_wire(
            Event.AFTER_TOOL_CALL, {"tool_name": "x", "tool_output": out}, strict=True
        )
    payload = payload_from_wire(Event.BEFORE_TOOL_CALL, data)
    assert payload.tool_input == {}  # type: ignore[attr-defined]
    assert "payload: unknown field 'tool_inptu' ignored" in caplog.text


def test_an_edit_never_writes_through_a_name_planted_beside_the_file(tmp_path: Path) -> None:
    """A cloned repository can plant symlinks in .kodelet/ where a temporary file would
    go; the edit must replace config.toml and leave the link's target alone."""
    from kodelet.config_edit import set_key

    project = tmp_path / "project"
    path = config_path(project)
    path.write_text("[hooks]\ntimeout = 5\n")
    path.chmod(0o640)
    victim = tmp_path / "bashrc"
    victim.write_text("untouched\n")
    (path.parent / f".config.toml.tmp-{os.getpid()}").symlink_to(victim)
    set_key(path, "hooks", "disabled", ["x"])
    assert victim.read_text() == "untouched\n"
    assert 'disabled = ["x"]' in path.read_text() and not path.is_symlink()
    assert path.stat().st_mode & 0o777 == 0o640, "an edit keeps the file's permissions"
    leftovers = sorted(p.name for p in path.parent.iterdir())
    assert leftovers == [f".config.toml.tmp-{os.getpid()}", "config.toml"]


def test_a_failed_write_leaves_the_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{}\n")
    with pytest.raises(UnicodeEncodeError):
        jsonio.write_atomically(path, "\ud800")
    assert path.read_text() == "{}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]

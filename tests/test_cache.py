"""The discovery cache: a hook is asked its event again only when its file changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kodelet import Event, Runtime, load_runtime
from kodelet.adapters.cache import CACHE_FILE, FORMAT, DiscoveryCache
from kodelet.places import CACHE as CACHE_DIR
from kodelet.testing import discovered, write_hook

HOOK = """#!/bin/bash
case "$1" in
  hook) echo q >> {marker}; echo {answer};;
  run) cat > /dev/null;;
esac
"""


def hook_text(marker: Path, answer: str = "before_tool_call", extra: str = "") -> str:
    return HOOK.format(marker=marker, answer=answer) + extra


def queries(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def load(project: Path) -> Runtime:
    with load_runtime(cwd=project, entry_points=False) as rt:
        return rt


def events(rt: Runtime) -> dict[str, Event | None]:
    return {h.name: h.event for h in discovered(rt)}


@pytest.fixture
def cache_file(kodelet_home: Path) -> Path:
    return kodelet_home / CACHE_DIR / CACHE_FILE


@pytest.fixture
def hooks(project: Path, tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """Two hooks, each counting how often it was asked its event."""
    d = project / ".kodelet" / "hooks"
    ma, mb = tmp_path / "a.queries", tmp_path / "b.queries"
    a = write_hook(d, "a", hook_text(ma))
    b = write_hook(d, "b", hook_text(mb, "after_tool_call"))
    return a, ma, b, mb


def test_second_start_asks_nobody(project: Path, hooks: tuple[Path, ...], cache_file: Path) -> None:
    _, ma, _, mb = hooks
    first = load(project)
    assert (queries(ma), queries(mb)) == (1, 1)
    assert cache_file.is_file()
    second = load(project)
    assert (queries(ma), queries(mb)) == (1, 1)
    assert (
        events(second)
        == events(first)
        == {
            "a": Event.BEFORE_TOOL_CALL,
            "b": Event.AFTER_TOOL_CALL,
        }
    )


def test_edit_requeries_that_file_only(project: Path, hooks: tuple[Path, ...]) -> None:
    a, ma, _, mb = hooks
    load(project)
    a.write_text(hook_text(ma, "user_message_send"))
    rt = load(project)
    assert (queries(ma), queries(mb)) == (2, 1)
    assert events(rt)["a"] is Event.USER_MESSAGE_SEND
    load(project)
    assert (queries(ma), queries(mb)) == (2, 1)


def test_same_size_edit_with_restored_mtime_is_seen(project: Path, hooks: tuple[Path, ...]) -> None:
    """ctime cannot be set back by the editor: an edit that hides in size and mtime still shows."""
    a, ma, _, _ = hooks
    load(project)
    st = a.stat()
    a.write_text(hook_text(ma, "after_turn").ljust(st.st_size))
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert a.stat().st_size == st.st_size and a.stat().st_mtime_ns == st.st_mtime_ns
    rt = load(project)
    assert queries(ma) == 2
    assert events(rt)["a"] is Event.AFTER_TURN


def test_chmod_requeries(project: Path, hooks: tuple[Path, ...]) -> None:
    a, ma, _, mb = hooks
    load(project)
    a.chmod(0o700)
    load(project)
    assert (queries(ma), queries(mb)) == (2, 1)


def test_replace_by_rename_requeries(
    project: Path, hooks: tuple[Path, ...], tmp_path: Path
) -> None:
    a, ma, _, mb = hooks
    load(project)
    st = a.stat()
    staged = write_hook(project, "a.new", hook_text(ma, "agent_stop").ljust(st.st_size))
    os.utime(staged, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(staged, a)
    rt = load(project)
    assert (queries(ma), queries(mb)) == (2, 1)
    assert events(rt)["a"] is Event.AGENT_STOP


def test_symlinked_hook_follows_its_target(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "q"
    targets = tmp_path / "targets"
    one = write_hook(targets, "one", hook_text(marker, "before_tool_call"))
    two = write_hook(targets, "two", hook_text(marker, "after_turn"))
    link = project / ".kodelet" / "hooks" / "linked"
    link.symlink_to(one)
    assert events(load(project))["linked"] is Event.BEFORE_TOOL_CALL
    link.unlink()
    link.symlink_to(two)
    assert events(load(project))["linked"] is Event.AFTER_TURN
    assert queries(marker) == 2


@pytest.mark.parametrize(
    "garbage", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"format": %d}' % FORMAT]
)
def test_corrupt_cache_is_ignored_and_rewritten(
    project: Path, hooks: tuple[Path, ...], cache_file: Path, garbage: bytes
) -> None:
    _, ma, _, _ = hooks
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    cache_file.write_bytes(garbage)
    rt = load(project)
    assert events(rt)["a"] is Event.BEFORE_TOOL_CALL
    assert queries(ma) == 1
    data = json.loads(cache_file.read_text())
    assert data["format"] == FORMAT and len(data["entries"]) == 2
    load(project)
    assert queries(ma) == 1


def test_corrupt_entry_is_requeried(
    project: Path, hooks: tuple[Path, ...], cache_file: Path
) -> None:
    a, ma, _, mb = hooks
    load(project)
    data = json.loads(cache_file.read_text())
    data["entries"][os.path.realpath(a)]["event"] = "no_such_event"
    cache_file.write_text(json.dumps(data))
    rt = load(project)
    assert events(rt)["a"] is Event.BEFORE_TOOL_CALL
    assert (queries(ma), queries(mb)) == (2, 1)


def test_unusable_cache_location_is_never_fatal(
    project: Path, hooks: tuple[Path, ...], kodelet_home: Path
) -> None:
    _, ma, _, _ = hooks
    kodelet_home.mkdir(parents=True, exist_ok=True)
    (kodelet_home / CACHE_DIR).write_text("a file where the cache directory should be")
    assert events(load(project))["a"] is Event.BEFORE_TOOL_CALL
    assert events(load(project))["a"] is Event.BEFORE_TOOL_CALL
    assert queries(ma) == 2


def test_cache_file_that_is_a_directory_is_ignored(
    project: Path, hooks: tuple[Path, ...], cache_file: Path
) -> None:
    cache_file.mkdir(parents=True)
    assert events(load(project))["a"] is Event.BEFORE_TOOL_CALL


def test_no_cache_env_bypasses(
    project: Path, hooks: tuple[Path, ...], cache_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ma, _, _ = hooks
    monkeypatch.setenv("KODELET_NO_CACHE", "1")
    load(project)
    load(project)
    assert queries(ma) == 2
    assert not cache_file.exists()


def test_no_cache_env_ignores_an_existing_cache(
    project: Path, hooks: tuple[Path, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ma, _, _ = hooks
    load(project)
    monkeypatch.setenv("KODELET_NO_CACHE", "1")
    load(project)
    assert queries(ma) == 2


def test_failed_query_is_cached_until_the_file_changes(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "q"
    path = write_hook(project / ".kodelet" / "hooks", "bad", hook_text(marker, "nonsense"))
    for _ in range(2):
        (hook,) = discovered(load(project))
        assert hook.status == "skipped" and "nonsense" in hook.reason
    assert queries(marker) == 1
    path.write_text(hook_text(marker, "before_tool_call"))
    (hook,) = discovered(load(project))
    assert (hook.status, hook.event, queries(marker)) == ("active", Event.BEFORE_TOOL_CALL, 2)


def test_protocol_words_are_cached(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "q"
    write_hook(project / ".kodelet" / "hooks", "p", hook_text(marker, '"before_tool_call jsonl"'))
    for _ in range(2):
        (hook,) = discovered(load(project))
        assert hook.protocols == ("jsonl",)
    assert queries(marker) == 1


def test_deleted_hooks_are_pruned_on_write(
    project: Path, hooks: tuple[Path, ...], cache_file: Path
) -> None:
    a, ma, b, _ = hooks
    load(project)
    b.unlink()
    a.write_text(hook_text(ma, "after_turn"))
    load(project)
    entries = json.loads(cache_file.read_text())["entries"]
    assert list(entries) == [os.path.realpath(a)]


def test_cache_counts_hits_and_misses(tmp_path: Path) -> None:
    marker = tmp_path / "q"
    path = write_hook(tmp_path / "hooks", "h", hook_text(marker))
    cache = DiscoveryCache(tmp_path / "cache")
    assert cache.peek(path) is None
    assert cache(path) == (Event.BEFORE_TOOL_CALL, ())
    cache.save()
    again = DiscoveryCache(tmp_path / "cache")
    assert again.peek(path) == (Event.BEFORE_TOOL_CALL, ())
    assert (cache.misses, again.hits) == (1, 1)
    assert queries(marker) == 1

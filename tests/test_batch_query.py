"""Asking many hooks their event at once: one thread, one selector loop, the same
answers and skip reasons as asking each in turn, no process left behind.

All hooks are real bash scripts in temp dirs; a token in each query's environment
finds any process that outlived its query in /proc.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from kodelet.adapters.cache import DiscoveryCache
from kodelet.adapters.discovery import (
    QUERY_TIMEOUT,
    discover,
    query_event,
    query_events,
)
from kodelet.events import Event
from kodelet.places import CACHE as CACHE_DIR
from kodelet.places import Places
from kodelet.process import EXIT_GRACE, Job, ProcessResult, SpawnError, run_batch
from kodelet.testing import write_hook

# Each answers ``hook`` its own way and returns promptly.
FAST = {
    "plain": "echo before_tool_call",
    "protocols": "echo 'after_turn jsonl'",
    "alias": "echo '  turn_end  '",
    "unknown": "echo before_everything",
    "empty": "echo",
    "non-utf8": "printf '\\xff\\xfe'",
    "stderr-exit": "echo agent_stop; echo 'no such mode' >&2; exit 2",
    "exit": "exit 1",
    "killed": "kill -TERM $$",
    "overflow": "head -c 10000 /dev/zero | tr '\\0' a",
    "reads-stdin": "cat >/dev/null; echo user_message_send",
    "leftover-child": "echo agent_stop; sleep 600 &",
}


def bash(directory: Path, name: str, script: str) -> Path:
    return write_hook(directory, name, f'#!/bin/bash\nif [ "$1" = hook ]; then\n{script}\nfi\n')


def outcome(answer: object) -> object:
    """An answer, or the exception's message: comparable across both paths."""
    return str(answer) if isinstance(answer, ValueError) else answer


def asked_alone(path: Path, env: dict[str, str]) -> object:
    try:
        return query_event(path, env)
    except ValueError as exc:
        return str(exc)


def children_left(token: str) -> list[str]:
    """Processes started with ``token`` still alive, and zombies of this process."""
    needle = f"KODELET_TEST_TOKEN={token}".encode()
    me = str(os.getpid())
    deadline = time.monotonic() + 3.0
    while True:
        left = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            state, ppid = fields[0], fields[1]
            if state == "Z" and ppid == me:
                left.append(f"zombie {entry.name}")
            elif state not in ("Z", "X") and needle in environ:
                left.append(f"running {entry.name}")
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture
def token_env() -> tuple[str, dict[str, str]]:
    token = uuid.uuid4().hex
    return token, {**os.environ, "KODELET_TEST_TOKEN": token}


def test_batch_answers_exactly_as_one_query_at_a_time(
    tmp_path: Path, token_env: tuple[str, dict[str, str]]
) -> None:
    token, env = token_env
    paths = [bash(tmp_path / "hooks", name, script) for name, script in FAST.items()]
    missing = tmp_path / "hooks" / "gone"
    paths.append(missing)
    batch = [outcome(a) for a in query_events(paths, env)]
    alone = [asked_alone(p, env) for p in paths]
    assert batch == alone
    by_name = dict(zip([*FAST, "gone"], batch, strict=True))
    assert by_name["plain"] == (Event.BEFORE_TOOL_CALL, ())
    assert by_name["protocols"] == (Event.AFTER_TURN, ("jsonl",))
    assert by_name["alias"] == (Event.AFTER_TURN, ())
    assert by_name["reads-stdin"] == (Event.USER_MESSAGE_SEND, ())
    assert by_name["leftover-child"] == (Event.AGENT_STOP, ())
    assert str(by_name["unknown"]).startswith("'hook' query: unknown event 'before_everything'")
    assert by_name["empty"] == "'hook' query printed nothing"
    assert by_name["non-utf8"] == "'hook' query answered with non-UTF-8 bytes"
    assert by_name["stderr-exit"] == "'hook' query exited with status 2: no such mode"
    assert by_name["exit"] == "'hook' query exited with status 1"
    assert by_name["killed"] == "'hook' query killed by signal SIGTERM"
    assert str(by_name["overflow"]).startswith("'hook' query output exceeded")
    assert by_name["gone"] == f"cannot run {missing}: No such file or directory"
    assert children_left(token) == []


def test_hanging_hooks_cost_one_timeout_together(
    tmp_path: Path, token_env: tuple[str, dict[str, str]]
) -> None:
    token, env = token_env
    d = tmp_path / "hooks"
    hanging = {
        "sleeps": "sleep 600 & wait",
        "closes-pipes": "exec >/dev/null 2>&1; sleep 600",
        "answers-then-hangs": "echo agent_stop; sleep 600",
    }
    paths = [bash(d, f"fast-{i}", "echo before_tool_call") for i in range(20)]
    paths += [bash(d, name, script) for name, script in hanging.items()]
    start = time.monotonic()
    answers = query_events(paths, env)
    elapsed = time.monotonic() - start
    assert QUERY_TIMEOUT - 0.1 <= elapsed < QUERY_TIMEOUT + 2.5
    assert answers[:20] == [(Event.BEFORE_TOOL_CALL, ())] * 20
    assert [outcome(a) for a in answers[20:]] == [
        f"'hook' query gave no answer within {QUERY_TIMEOUT:g}s"
    ] * len(hanging)
    assert children_left(token) == []


def test_each_job_gets_its_own_timeout_from_its_own_start(
    tmp_path: Path, token_env: tuple[str, dict[str, str]]
) -> None:
    """One at a time, three jobs of 0.3 s each fit a 0.5 s timeout: it is not shared."""
    token, env = token_env
    d = tmp_path / "hooks"
    paths = [bash(d, f"slow-{i}", "sleep 0.3; echo ok") for i in range(3)]
    jobs = [Job(argv=(str(p), "hook"), cwd=str(d), env=env) for p in paths]
    results = run_batch(jobs, timeout=0.5, limit=1)
    assert all(isinstance(r, ProcessResult) for r in results)
    assert [
        (r.timed_out, r.returncode, r.stdout) for r in results if isinstance(r, ProcessResult)
    ] == [(False, 0, b"ok\n")] * 3
    assert children_left(token) == []


def test_timeout_kills_the_whole_process_group(
    tmp_path: Path, token_env: tuple[str, dict[str, str]]
) -> None:
    token, env = token_env
    d = tmp_path / "hooks"
    stuck = bash(d, "stuck", "(sleep 600; echo late) & sleep 600 & echo partial; wait")
    quick = bash(d, "quick", "echo fine")
    jobs = [Job(argv=(str(p), "hook"), cwd=str(d), env=env) for p in (stuck, quick)]
    start = time.monotonic()
    first, second = run_batch(jobs, timeout=0.5)
    assert time.monotonic() - start < 2.0
    assert isinstance(first, ProcessResult) and isinstance(second, ProcessResult)
    assert first.timed_out and first.stdout == b"partial\n"
    assert first.failure(0.5) == "timed out after 0.5s"
    assert (second.timed_out, second.returncode, second.stdout) == (False, 0, b"fine\n")
    assert children_left(token) == []


def test_a_leftover_child_holding_the_pipes_does_not_hold_the_answer(
    tmp_path: Path, token_env: tuple[str, dict[str, str]]
) -> None:
    token, env = token_env
    d = tmp_path / "hooks"
    path = bash(d, "bg", "echo agent_stop; sleep 600 &")
    start = time.monotonic()
    (result,) = run_batch([Job(argv=(str(path), "hook"), cwd=str(d), env=env)], timeout=5.0)
    assert time.monotonic() - start < EXIT_GRACE + 1.0
    assert isinstance(result, ProcessResult)
    assert (result.timed_out, result.returncode, result.stdout) == (False, 0, b"agent_stop\n")
    assert children_left(token) == []


def test_no_more_than_limit_in_flight(
    tmp_path: Path, token_env: tuple[str, dict[str, str]]
) -> None:
    token, env = token_env
    d = tmp_path / "hooks"
    inflight, seen = tmp_path / "inflight", tmp_path / "seen"
    inflight.mkdir()
    script = (
        f"touch {inflight}/$$; ls {inflight} | wc -l >> {seen}; sleep 0.05; rm {inflight}/$$; "
        "echo agent_stop"
    )
    paths = [bash(d, f"h{i:02}", script) for i in range(24)]
    answers = query_events(paths, env, limit=3)
    assert answers == [(Event.AGENT_STOP, ())] * 24
    counts = [int(line) for line in seen.read_text().split()]
    assert len(counts) == 24
    assert 1 < max(counts) <= 3
    assert children_left(token) == []


def test_spawn_errors_are_results_not_exceptions(tmp_path: Path) -> None:
    d = tmp_path / "hooks"
    ok = bash(d, "ok", "echo after_turn")
    jobs = [
        Job(argv=(str(d / "missing"), "hook"), cwd=str(d), env=dict(os.environ)),
        Job(argv=(str(ok), "hook"), cwd=str(tmp_path / "no-such-dir"), env=dict(os.environ)),
        Job(argv=(str(ok), "hook"), cwd=str(d), env=dict(os.environ)),
    ]
    missing, bad_cwd, fine = run_batch(jobs, timeout=5.0)
    assert isinstance(missing, SpawnError) and "No such file" in str(missing.strerror)
    assert isinstance(bad_cwd, SpawnError)
    assert str(bad_cwd.strerror).endswith(
        f"working directory {tmp_path / 'no-such-dir'} does not exist"
    )
    assert isinstance(fine, ProcessResult) and fine.stdout == b"after_turn\n"


def test_empty_batch(tmp_path: Path) -> None:
    assert run_batch([], timeout=1.0) == []
    assert query_events([]) == []


def test_discovery_through_the_cache_asks_each_file_once(
    project: Path, kodelet_home: Path, tmp_path: Path
) -> None:
    """Misses are asked in one batch and kept, failures too (keyed by the file's stat)."""
    d = project / ".kodelet" / "hooks"
    log = tmp_path / "asked"
    for i in range(6):
        bash(d, f"good{i}", f"echo {i} >> {log}; echo before_tool_call")
    bash(d, "bad", f"echo bad >> {log}; echo nonsense")
    places = Places.resolve(project, tmp_path / "home")
    cache = DiscoveryCache(kodelet_home / CACHE_DIR)
    first = discover(places, query=cache)
    cache.save()
    assert (cache.hits, cache.misses) == (0, 7)
    assert sorted(log.read_text().split()) == sorted([*map(str, range(6)), "bad"])
    assert {h.name: h.status for h in first} == {
        **{f"good{i}": "active" for i in range(6)},
        "bad": "skipped",
    }

    log.unlink()
    again = DiscoveryCache(kodelet_home / CACHE_DIR)
    second = discover(places, query=again)
    assert (again.hits, again.misses) == (7, 0)
    assert not log.exists()
    assert [(h.name, h.status, h.event, h.reason) for h in second] == [
        (h.name, h.status, h.event, h.reason) for h in first
    ]
    (bad,) = [h for h in second if h.name == "bad"]
    assert bad.reason.startswith("'hook' query: unknown event 'nonsense'")


def test_cache_with_its_own_query_still_batches_its_misses(tmp_path: Path) -> None:
    d = tmp_path / "hooks"
    paths = [bash(d, f"h{i}", "echo agent_stop") for i in range(3)]
    asked: list[Path] = []

    def fake(path: Path) -> tuple[Event, tuple[str, ...]]:
        asked.append(path)
        if path.name == "h1":
            raise ValueError("no")
        return Event.AFTER_TURN, ()

    cache = DiscoveryCache(tmp_path / "cache", query=fake)
    answers = [outcome(a) for a in cache.query_many(paths)]
    assert answers == [(Event.AFTER_TURN, ()), "no", (Event.AFTER_TURN, ())]
    assert asked == paths and cache.misses == 3
    assert cache.peek(paths[0]) == (Event.AFTER_TURN, ())
    assert outcome(cache.peek(paths[1])) == "no", "a failure is kept too"

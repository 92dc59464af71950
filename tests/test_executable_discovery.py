"""Finding executable hooks: the four places, their precedence, and every way a file
is left out (each with the reason ``kodelet hooks list`` shows).

All hooks are real bash scripts in temp dirs; HOME and KODELET_HOME are temp dirs
(tests/conftest.py), the project is the ``project`` fixture.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from pathlib import Path

import pytest
from kodelet import load_runtime
from kodelet.adapters.discovery import DiscoveredHook
from kodelet.events import Event
from kodelet.payloads import (
    AfterTurnPayload,
    AgentStopPayload,
    BasePayload,
    UserMessageSendPayload,
)
from kodelet.runtime import Runtime
from kodelet.testing import discovered, write_hook
from kodelet.trace import Outcome


def hook(directory: Path, name: str, event: str, body: str = "cat >/dev/null") -> Path:
    """A bash hook that logs its name to ``$HOOK_LOG`` (if set) every time it runs."""
    text = (
        "#!/bin/bash\n"
        f'if [ "$1" = hook ]; then echo {event}; exit 0; fi\n'
        'if [ -n "$HOOK_LOG" ]; then echo "$(basename "$0")@$(dirname "$0")" >> "$HOOK_LOG"; fi\n'
        f"{body}\n"
    )
    return write_hook(directory, name, text)


def raw_hook(directory: Path, name: str, text: str, mode: int = 0o755) -> Path:
    path = write_hook(directory, name, text)
    path.chmod(mode)
    return path


@pytest.fixture
def places(project: Path, kodelet_home: Path) -> dict[str, Path]:
    """The four places, in precedence order."""
    return {
        "local": project / ".kodelet" / "hooks",
        "local-plugin": project / ".kodelet" / "plugins" / "acme@tools" / "hooks",
        "global": kodelet_home / "hooks",
        "global-plugin": kodelet_home / "plugins" / "acme@tools" / "hooks",
    }


def runtime(project: Path, **kw: object) -> Runtime:
    return load_runtime(cwd=project, entry_points=False, builtins=False, timeout=5.0, **kw)  # type: ignore[arg-type]


def by_name(found: list[DiscoveredHook]) -> dict[str, DiscoveredHook]:
    return {h.name: h for h in found}


def message(project: Path) -> BasePayload:
    return UserMessageSendPayload(message="hi", cwd=str(project))


# -- precedence, call order, shadowing -------------------------------------------


def test_call_order_follows_the_four_places(
    project: Path, places: dict[str, Path], kodelet_home: Path, tmp_path: Path
) -> None:
    # Names chosen so that alphabetical order across places would differ.
    hook(places["local"], "zz-local", "user_message_send")
    hook(places["local"], "aa-local", "user_message_send")
    hook(places["local-plugin"], "mm", "user_message_send")
    other = project / ".kodelet" / "plugins" / "aaa@first" / "hooks"
    hook(other, "zz", "user_message_send")
    hook(places["global"], "00-global", "user_message_send")
    hook(places["global-plugin"], "00", "user_message_send")
    log = tmp_path / "ran.log"
    env = {**os.environ, "HOOK_LOG": str(log)}
    expected = [
        "aa-local",
        "zz-local",
        "aaa/first/zz",
        "acme/tools/mm",
        "00-global",
        "acme/tools/00",
    ]
    with runtime(project, env=env) as rt:
        assert [h.name for h in rt.hooks(Event.USER_MESSAGE_SEND)] == expected
        d = rt.dispatch(message(project))
    assert [r.name for r in d.trace] == expected
    ran = log.read_text().splitlines()
    assert ran == [
        f"aa-local@{places['local']}",
        f"zz-local@{places['local']}",
        f"zz@{other}",
        f"mm@{places['local-plugin']}",
        f"00-global@{places['global']}",
        f"00@{places['global-plugin']}",
    ]
    locations = {h.name: h.candidate.location for h in discovered(rt)}
    assert locations == {
        "aa-local": "local",
        "zz-local": "local",
        "aaa/first/zz": "local",
        "acme/tools/mm": "local",
        "00-global": "global",
        "acme/tools/00": "global",
    }


@pytest.mark.parametrize(
    ("higher", "lower", "name"),
    [
        ("local", "global", "guard"),
        ("local-plugin", "global-plugin", "acme/tools/guard"),
    ],
)
def test_higher_place_shadows_same_name(
    project: Path, places: dict[str, Path], tmp_path: Path, higher: str, lower: str, name: str
) -> None:
    asked = tmp_path / "lower-was-asked"
    ran = tmp_path / "lower-ran"
    hook(places[higher], "guard", "user_message_send", 'echo \'{"blocked": true, "reason": "up"}\'')
    raw_hook(
        places[lower],
        "guard",
        f'#!/bin/bash\nif [ "$1" = hook ]; then touch "{asked}"; echo user_message_send; fi\n'
        f'[ "$1" = hook ] && exit 0\ntouch "{ran}"\n'
        'echo \'{"blocked": true, "reason": "down"}\'\n',
    )
    with runtime(project) as rt:
        d = rt.dispatch(message(project))
    assert d.result.reason == "up"
    assert [r.name for r in d.trace] == [name]
    assert not ran.exists() and not asked.exists()
    statuses = [(h.name, h.status, h.path.parent) for h in discovered(rt)]
    assert statuses == [
        (name, "active", places[higher]),
        (name, "skipped", places[lower]),
    ]
    shadowed = discovered(rt)[1]
    assert shadowed.reason == f"shadowed by {discovered(rt)[0].path} (same name, higher up)"


def test_standalone_never_shadows_plugin_hook(project: Path, places: dict[str, Path]) -> None:
    hook(places["local"], "lint", "agent_stop")
    hook(places["global-plugin"], "lint", "agent_stop")
    hook(places["global"], "acme", "agent_stop")
    with runtime(project) as rt:
        names = [h.name for h in rt.hooks(Event.AGENT_STOP)]
    assert names == ["lint", "acme", "acme/tools/lint"]


def test_plugin_prefix_naming(project: Path, kodelet_home: Path) -> None:
    hook(
        project / ".kodelet" / "plugins" / "jingkaihe@skills" / "hooks",
        "validate-output",
        "agent_stop",
    )
    hook(kodelet_home / "plugins" / "anthropic@recipes" / "hooks", "log-tool-calls", "agent_stop")
    # A plugin directory without hooks/ and a stray file contribute nothing.
    (project / ".kodelet" / "plugins" / "empty@repo" / "skills").mkdir(parents=True)
    (project / ".kodelet" / "plugins" / "README").write_text("not a plugin\n")
    with runtime(project) as rt:
        found = by_name(discovered(rt))
        d = rt.dispatch(message(project))
        stop = rt.hooks(Event.AGENT_STOP)
    assert d.trace == ()
    assert [h.name for h in stop] == [
        "jingkaihe/skills/validate-output",
        "anthropic/recipes/log-tool-calls",
    ]
    local = found["jingkaihe/skills/validate-output"].candidate
    assert local.plugin == "jingkaihe/skills"
    assert local.plugin_root == project / ".kodelet" / "plugins" / "jingkaihe@skills"
    glob = found["anthropic/recipes/log-tool-calls"].candidate
    assert glob.plugin == "anthropic/recipes" and glob.location == "global"
    assert set(found) == {"jingkaihe/skills/validate-output", "anthropic/recipes/log-tool-calls"}


# -- files that are left out, and why --------------------------------------------


def test_disable_suffix(project: Path, places: dict[str, Path], tmp_path: Path) -> None:
    ran = tmp_path / "disabled-ran"
    raw_hook(
        places["local"],
        "audit.disable",
        f'#!/bin/bash\ntouch "{ran}"\necho agent_stop\n',
    )
    with runtime(project) as rt:
        assert rt.hooks(Event.AGENT_STOP) == []
        (found,) = discovered(rt)
    assert (found.name, found.status, found.event) == ("audit.disable", "disabled", None)
    assert ".disable" in found.reason
    assert not ran.exists()


def test_non_executable_is_skipped_and_does_not_shadow(
    project: Path, places: dict[str, Path], tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    raw_hook(places["local"], "notify", f'#!/bin/bash\ntouch "{ran}"\necho agent_stop\n', 0o644)
    hook(places["global"], "notify", "agent_stop")
    with runtime(project) as rt:
        statuses = [(h.name, h.status, h.path.parent, h.reason) for h in discovered(rt)]
        active = [h.name for h in rt.hooks(Event.AGENT_STOP)]
    assert statuses == [
        ("notify", "active", places["global"], ""),
        ("notify", "skipped", places["local"], "not executable"),
    ]
    assert active == ["notify"]
    assert not ran.exists()


def test_directories_are_not_hooks(project: Path, places: dict[str, Path]) -> None:
    sub = places["local"] / "helpers"
    hook(sub, "inner", "agent_stop")
    sub.chmod(0o755)
    hook(places["global"], "helpers", "agent_stop")
    with runtime(project) as rt:
        found = [(h.name, h.status, h.reason, h.path.parent) for h in discovered(rt)]
    # Listed, so that a guardrail replaced by a directory does not vanish unseen.
    assert found == [
        ("helpers", "active", "", places["global"]),
        ("helpers", "skipped", "a directory", places["local"]),
    ]


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("echo before_everything", "'hook' query: unknown event 'before_everything'"),
        ("echo", "'hook' query printed nothing"),
        ("printf '\\xff\\xfe'", "'hook' query answered with non-UTF-8 bytes"),
        (
            "echo agent_stop; echo 'no such mode' >&2; exit 2",
            "'hook' query exited with status 2: no such mode",
        ),
        ("exit 1", "'hook' query exited with status 1"),
    ],
    ids=["invalid-type", "empty", "non-utf8", "failing-with-stderr", "failing"],
)
def test_bad_hook_answer_is_skipped_with_reason(
    project: Path,
    places: dict[str, Path],
    caplog: pytest.LogCaptureFixture,
    script: str,
    reason: str,
) -> None:
    raw_hook(places["local"], "bad", f'#!/bin/bash\nif [ "$1" = hook ]; then {script}; fi\n')
    hook(places["local"], "good", "agent_stop")
    with caplog.at_level(logging.WARNING, logger="kodelet.discovery"), runtime(project) as rt:
        found = by_name(discovered(rt))
        active = [h.name for h in rt.hooks(Event.AGENT_STOP)]
    assert found["bad"].status == "skipped"
    assert found["bad"].reason.startswith(reason)
    assert found["good"].status == "active"
    assert active == ["good"]
    assert any("bad" in r.getMessage() and reason in r.getMessage() for r in caplog.records)


def test_turn_end_alias(project: Path, places: dict[str, Path]) -> None:
    raw_hook(
        places["local"],
        "legacy",
        '#!/bin/bash\nif [ "$1" = hook ]; then echo "  turn_end  "; exit 0; fi\n'
        'cat > /dev/null; echo \'{"result": "callback", "callback": "compact"}\'\n',
    )
    with runtime(project) as rt:
        (found,) = discovered(rt)
        d = rt.dispatch(AfterTurnPayload(turn_number=1, cwd=str(project)))
    assert (found.status, found.event) == ("active", Event.AFTER_TURN)
    assert d.result.callback == "compact"
    assert [r.outcome for r in d.trace] == [Outcome.ACTION]


def test_hanging_hook_query_is_skipped_after_five_seconds(
    project: Path, places: dict[str, Path]
) -> None:
    token = uuid.uuid4().hex
    raw_hook(
        places["local"],
        "stuck",
        '#!/bin/bash\nif [ "$1" = hook ]; then sleep 600 & wait; fi\n',
    )
    hook(places["global"], "fine", "agent_stop")
    env = {**os.environ, "KODELET_TEST_TOKEN": token}
    start = time.monotonic()
    with runtime(project, env=env) as rt:
        elapsed = time.monotonic() - start
        found = by_name(discovered(rt))
        active = [h.name for h in rt.hooks(Event.AGENT_STOP)]
    assert 4.5 <= elapsed < 8.0
    assert found["stuck"].status == "skipped"
    assert found["stuck"].reason == "'hook' query gave no answer within 5s"
    assert active == ["fine"]
    assert _left_with(token) == []


def _left_with(token: str) -> list[int]:
    needle = f"KODELET_TEST_TOKEN={token}".encode()
    deadline = time.monotonic() + 3.0
    while True:
        left = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if state not in ("Z", "X") and needle in environ:
                left.append(int(entry.name))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


# -- what the query sees ---------------------------------------------------------


@pytest.mark.parametrize("cached", [True, False], ids=["cache", "no-cache"])
def test_query_runs_in_the_runtime_environment(
    project: Path, places: dict[str, Path], cached: bool
) -> None:
    """A host that passes its own env gets hooks asked in that env, as they are run in it."""
    raw_hook(
        places["local"],
        "configurable",
        '#!/bin/bash\nif [ "$1" = hook ]; then echo "$MY_HOOK_EVENT"; exit 0; fi\n'
        'cat >/dev/null; echo "{\\"follow_up_messages\\": [\\"$MY_HOOK_EVENT\\"]}"\n',
    )
    env = {**os.environ, "MY_HOOK_EVENT": "agent_stop"}
    if not cached:
        env["KODELET_NO_CACHE"] = "1"
    with runtime(project, env=env) as rt:
        (found,) = discovered(rt)
        d = rt.dispatch(AgentStopPayload(cwd=str(project)))
    assert (found.status, found.event) == ("active", Event.AGENT_STOP)
    assert d.result.follow_up_messages == ["agent_stop"]


def test_no_hooks_skips_discovery(project: Path, places: dict[str, Path], tmp_path: Path) -> None:
    asked = tmp_path / "asked"
    raw_hook(places["local"], "h", f'#!/bin/bash\ntouch "{asked}"\necho agent_stop\n')
    with runtime(project, no_hooks=True) as rt:
        assert discovered(rt) == [] and rt.hooks(Event.AGENT_STOP) == []
    assert not asked.exists()


def test_listing_is_json_friendly(project: Path, places: dict[str, Path]) -> None:
    """Everything `kodelet hooks list` needs is on the DiscoveredHook."""
    hook(places["local"], "a", "agent_stop")
    raw_hook(places["local"], "b", "#!/bin/bash\nexit 3\n")
    raw_hook(places["local"], "c.disable", "#!/bin/bash\n")
    with runtime(project) as rt:
        rows = [
            {
                "name": h.name,
                "event": h.event.value if h.event else None,
                "status": h.status,
                "reason": h.reason,
                "path": str(h.path),
            }
            for h in discovered(rt)
        ]
    json.dumps(rows)
    assert [(r["name"], r["status"], r["event"]) for r in rows] == [
        ("a", "active", "agent_stop"),
        ("b", "skipped", None),
        ("c.disable", "disabled", None),
    ]

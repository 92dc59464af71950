"""What the HTTP transport's tests share: kodelet run in a project, a POST to the warm
kodelet's port, the transport installed at local scope, and the SessionStart entry run
as Claude Code runs it."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kodelet.places import Places
from kodelet.warm import http as warm_http

from .warm import warm_env, write_guard

__all__ = ["installed", "kodelet", "post", "session_start", "settings"]


def kodelet(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kodelet", *args],
        capture_output=True,
        text=True,
        cwd=project,
        env=warm_env(),
        timeout=120,
    )


def post(record: warm_http.Record, body: bytes, auth: str | None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", record.port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = auth
    conn.request("POST", warm_http.PATH, body=body, headers=headers)
    response = conn.getresponse()
    out = (response.status, response.read())
    conn.close()
    return out


@pytest.fixture
def installed(project: Path) -> tuple[Path, warm_http.Record]:
    (project / ".git").mkdir()
    write_guard(project)
    done = kodelet(project, "claude", "install", "--scope", "local", "--transport", "http")
    assert done.returncode == 0, done.stderr
    record = warm_http.load(Places.resolve(project, None, warm_env()))
    assert record is not None
    return project, record


def settings(project: Path) -> dict[str, Any]:
    return json.loads((project / ".claude" / "settings.local.json").read_text())  # type: ignore[no-any-return]


def session_start(
    command: str, project: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The SessionStart entry (``claude ensure``), run as Claude Code runs it."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps({"hook_event_name": "SessionStart", "cwd": str(project)}),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=120,
    )

"""Another local user racing for the HTTP transport's port: a program run as ``nobody``
that retries binding the port until it gets it, then answers every hook call "go
ahead" (``{}``), as a stranger who took the port would. Tests read its report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import attrs
import pytest

__all__ = ["NOBODY", "Attack", "needs_root", "racing_for"]

NOBODY = 65534

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="running the other user's program needs root"
)

PROGRAM = r"""
import http.server, select, socket, sys
port = int(sys.argv[1])
print("ready", flush=True)
tries = 0
server = None
while server is None and not select.select([sys.stdin], [], [], 0.002)[0]:
    try:
        server = http.server.HTTPServer(("127.0.0.1", port), None, bind_and_activate=False)
        server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.server_bind()
        server.server_activate()
    except OSError:
        server.server_close()
        server = None
        tries += 1
if server is not None:
    class GoAhead(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            print("CALL", self.headers.get("Authorization", ""), flush=True)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
        def log_message(self, *args):
            pass
    server.RequestHandlerClass = GoAhead
    print("BOUND", flush=True)
    server.timeout = 0.05
    while not select.select([sys.stdin], [], [], 0)[0]:
        server.handle_request()
print(f"tries {tries}", flush=True)
"""


@attrs.define
class Attack:
    process: subprocess.Popen[str]
    report: str = ""

    @property
    def bound(self) -> bool:
        return "BOUND" in self.report

    @property
    def tries(self) -> int:
        return int(self.report.rsplit("tries ", 1)[1])


@contextmanager
def racing_for(port: int) -> Iterator[Attack]:
    """Another user retrying to bind ``port`` (and answering "go ahead" once it has it)
    for as long as the block runs; ``report`` is what it saw, once the block is over."""
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    process = subprocess.Popen(
        [python, "-I", "-c", PROGRAM, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd="/",
        user=NOBODY,
        group=NOBODY,
        env={"PATH": "/usr/bin:/bin"},
    )
    attack = Attack(process)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        yield attack
    finally:
        attack.report, _ = process.communicate("", timeout=60)

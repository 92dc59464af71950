"""What every stand-in model API shares: a local HTTP server that logs each request.

A subclass says how a POST is answered (:meth:`StandIn.post`) and which requests are
the agent's main loop (:meth:`StandIn.is_main_loop`); the tests read
:attr:`StandIn.requests` for what the agent sent the model.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Reply = tuple[int, str, bytes]
"""(HTTP status, content type, body)."""


def json_reply(data: Any, status: int = 200) -> Reply:
    return status, "application/json", json.dumps(data).encode()


def sse_reply(raw: bytes) -> Reply:
    return 200, "text/event-stream", raw


class StandIn:
    """The server, on 127.0.0.1 and a free port; a context manager that stops it."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._serial = 0
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self._send((200, "text/plain", b""))

            def do_GET(self) -> None:
                self._send(api.get(self.path.split("?")[0]))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    request = {}
                path = self.path.split("?")[0]
                with api._lock:
                    api._serial += 1
                    serial = api._serial
                    api.requests.append({"path": path, "body": request})
                self._send(api.post(path, request, serial))

            def _send(self, reply: Reply) -> None:
                status, kind, raw = reply
                self.send_response(status)
                self.send_header("Content-Type", kind)
                if kind == "text/event-stream":
                    self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def get(self, path: str) -> Reply:
        return json_reply({"data": [], "has_more": False})

    def post(self, path: str, request: dict[str, Any], serial: int) -> Reply:
        raise NotImplementedError

    def is_main_loop(self, request: dict[str, Any]) -> bool:
        """A request offering tools is the agent's main loop; the rest are its errands
        (titles, summaries, routing)."""
        return bool(request.get("tools"))

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)

    def tool_outputs(self) -> list[str]:
        """What the model was sent back for each tool call, as text, in order."""
        raise NotImplementedError

    def main_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if self.is_main_loop(r["body"])]

    def seen_by_model(self) -> str:
        """Everything the model was sent in the main loop, as one text to search."""
        return json.dumps(self.main_requests(), ensure_ascii=False)

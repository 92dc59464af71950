"""A stand-in for Anthropic's Messages API: scripted assistant turns over SSE.

Claude Code (``ANTHROPIC_BASE_URL`` pointed here) sends the whole conversation with
every request; the stand-in answers the main loop's requests from a script, one
turn per assistant message already in the conversation, and logs every request so a
test can read what the model was shown (tool results, added context, follow-ups).
Requests that are not the main loop's (no tools offered: titles, summaries,
classification) get a short text answer and do not consume a turn.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = list[dict[str, Any]]
"""One assistant message's content blocks: ``{"type": "text", "text": ...}`` or
``{"type": "tool_use", "name": ..., "input": {...}}`` (ids are filled in)."""


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def tool(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": tool_input}


class Script:
    """What the model says: ``turns[i]`` answers a main-loop request whose conversation
    already holds ``i`` assistant messages; past the end, a plain "done"."""

    def __init__(self, turns: list[Turn] | Callable[[dict[str, Any]], Turn]) -> None:
        self.turns = turns

    def answer(self, request: dict[str, Any]) -> Turn:
        if callable(self.turns):
            return self.turns(request)
        done = sum(1 for m in request.get("messages", []) if m.get("role") == "assistant")
        if done < len(self.turns):
            return self.turns[done]
        return [text("done")]


def is_main_loop(request: dict[str, Any]) -> bool:
    return bool(request.get("tools"))


def _events(turn: Turn, model: str, serial: int) -> Iterator[tuple[str, dict[str, Any]]]:
    has_tool = any(b["type"] == "tool_use" for b in turn)
    usage = {"input_tokens": 10, "output_tokens": 1}
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": f"msg_standin_{serial}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )
    for index, block in enumerate(turn):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": f"toolu_standin_{serial}_{index}",
                        "name": block["name"],
                        "input": {},
                    },
                },
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if has_tool else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _message(turn: Turn, model: str, serial: int) -> dict[str, Any]:
    content = []
    for index, block in enumerate(turn):
        if block["type"] == "tool_use":
            block = {**block, "id": f"toolu_standin_{serial}_{index}"}
        content.append(block)
    has_tool = any(b["type"] == "tool_use" for b in turn)
    return {
        "id": f"msg_standin_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if has_tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


class MessagesAPI:
    """The server, on 127.0.0.1 and a free port; a context manager that stops it."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._serial = 0
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._json(200, {"data": [], "has_more": False})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                try:
                    request = json.loads(body or b"{}")
                except ValueError:
                    request = {}
                path = self.path.split("?")[0]
                with api._lock:
                    api._serial += 1
                    serial = api._serial
                    api.requests.append({"path": path, "body": request})
                if not path.endswith("/messages"):
                    if path.endswith("/count_tokens"):
                        self._json(200, {"input_tokens": 10})
                    else:
                        self._json(200, {})
                    return
                model = str(request.get("model", "claude-standin"))
                turn = api.script.answer(request) if is_main_loop(request) else [text("ok")]
                if not request.get("stream"):
                    self._json(200, _message(turn, model, serial))
                    return
                chunks = b"".join(
                    f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    for name, data in _events(turn, model, serial)
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(chunks)))
                self.end_headers()
                self.wfile.write(chunks)

            def _json(self, status: int, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> MessagesAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)

    def main_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if is_main_loop(r["body"])]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block the model was sent, in order, without repeats."""
        seen: dict[str, dict[str, Any]] = {}
        for body in self.main_requests():
            for message in body.get("messages", []):
                content = message.get("content")
                if message.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        seen.setdefault(str(block.get("tool_use_id")), block)
        return list(seen.values())

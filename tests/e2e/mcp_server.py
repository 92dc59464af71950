"""A stand-in MCP server for the end-to-end tests: JSON-RPC 2.0 over stdio, one message a line.

Standard library only, so Claude Code can start it with any Python. Its tools cover
the two shapes Claude Code 2.1.332 hands PostToolUse hooks as an MCP tool's
``tool_response``: ``echo`` answers its ``text`` as a text content block (Claude Code
passes the list of blocks), ``lookup`` answers ``{"text": ...}`` as structured
content (Claude Code passes it as a JSON string); ``store`` takes any object.

Every ``tools/call`` is appended to the log file named by the first argument before
it is answered, so a test knows whether a tool ran at all; the pid is written beside
the log (``<log>.pid``) so a test can check the server ended. It exits when its
stdin closes, as it does when the client ends the session.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

_TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
TOOLS = [
    {"name": "echo", "description": "Answers the text as a text block.", "inputSchema": _TEXT},
    {
        "name": "lookup",
        "description": "Answers the text as structured content.",
        "inputSchema": _TEXT,
    },
    {
        "name": "store",
        "description": "Stores any object.",
        "inputSchema": {"type": "object", "properties": {"data": {"type": "object"}}},
    },
]


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    said = str(arguments.get("text", ""))
    if name == "echo":
        return {"content": [{"type": "text", "text": said}]}
    if name == "lookup":
        return {
            "content": [{"type": "text", "text": json.dumps({"text": said})}],
            "structuredContent": {"text": said},
        }
    return {"content": [{"type": "text", "text": "stored"}]}


def answer(request: dict[str, Any], log: Path) -> dict[str, Any] | None:
    if "id" not in request:
        return None  # a notification: notifications/initialized, cancelled, ...
    method = request.get("method")
    params = request.get("params") or {}
    result: dict[str, Any]
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "standin", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        with log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(params) + "\n")
        result = call(str(params.get("name")), params.get("arguments") or {})
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"method not found: {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    log = Path(sys.argv[1])
    Path(f"{log}.pid").write_text(str(os.getpid()))
    for line in sys.stdin:
        if line.strip():
            reply = answer(json.loads(line), log)
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()

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
from collections.abc import Callable, Iterator
from typing import Any

from .base import Reply, StandIn, json_reply, sse_reply

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


class MessagesAPI(StandIn):
    """The server, on 127.0.0.1 and a free port; a context manager that stops it."""

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script

    def post(self, path: str, request: dict[str, Any], serial: int) -> Reply:
        if not path.endswith("/messages"):
            return json_reply({"input_tokens": 10} if path.endswith("/count_tokens") else {})
        model = str(request.get("model", "claude-standin"))
        turn = self.script.answer(request) if is_main_loop(request) else [text("ok")]
        if not request.get("stream"):
            return json_reply(_message(turn, model, serial))
        return sse_reply(
            b"".join(
                f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                for name, data in _events(turn, model, serial)
            )
        )

    @property
    def url(self) -> str:
        return self.root

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

    def tool_outputs(self) -> list[str]:
        content = [block.get("content") for block in self.tool_results()]
        return [
            "\n".join(str(b.get("text", "")) for b in c if isinstance(b, dict))
            if isinstance(c, list)
            else str(c)
            for c in content
        ]

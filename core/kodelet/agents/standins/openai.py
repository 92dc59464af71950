"""A stand-in for OpenAI's Responses and Chat Completions APIs: scripted turns over SSE.

Codex speaks the Responses API (``POST .../responses``), Qwen Code and most other
OpenAI-compatible agents Chat Completions (``POST .../chat/completions``); one server
answers both from the same :class:`~.messages.Script` of turns (the blocks of
:func:`~.messages.text` and :func:`~.messages.tool`), one turn per assistant turn
already in the conversation, and logs every request so a test can read what the model
was shown. A request that offers no tools (titles, summaries, routing) gets a short text
and consumes no turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .base import Reply, StandIn, json_reply, sse_reply
from .messages import Script, Turn, text, tool

__all__ = ["OpenAIAPI", "Script", "Turn", "text", "tool"]

USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}


def _sse(events: Iterator[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        line = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {line}\n\n")
    return "".join(out).encode()


# --- Responses API ------------------------------------------------------------


def _responses_done(request: dict[str, Any]) -> int:
    """Assistant turns already taken: each ends in a message or in its tool calls."""
    turns, in_calls = 0, False
    for item in request.get("input") or []:
        kind = item.get("type") if isinstance(item, dict) else None
        role = item.get("role") if isinstance(item, dict) else None
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            turns += 0 if in_calls else 1
            in_calls = True
            continue
        if role == "assistant" and kind in ("message", None):
            turns += 0 if in_calls else 1
        in_calls = False
    return turns


def _responses_items(turn: Turn, serial: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for index, block in enumerate(turn):
        if block["type"] == "text":
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{serial}_{index}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": block["text"], "annotations": []}],
                }
            )
        elif isinstance(block["input"], str):  # a freeform tool: Codex's exec, apply_patch
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": f"ctc_{serial}_{index}",
                    "call_id": f"call_{serial}_{index}",
                    "name": block["name"],
                    "input": block["input"],
                    "status": "completed",
                }
            )
        else:
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{serial}_{index}",
                    "call_id": f"call_{serial}_{index}",
                    "name": block["name"],
                    "arguments": json.dumps(block["input"]),
                    "status": "completed",
                }
            )
    return items


def _responses_events(turn: Turn, model: str, serial: int) -> Iterator[tuple[str | None, Any]]:
    response = {
        "id": f"resp_{serial}",
        "object": "response",
        "model": model,
        "status": "in_progress",
    }
    yield "response.created", {"type": "response.created", "response": response}
    items = _responses_items(turn, serial)
    for index, item in enumerate(items):
        yield (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": index, "item": item},
        )
        if item["type"] == "message":
            yield (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": item["content"][0]["text"],
                },
            )
        yield (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": index, "item": item},
        )
    done = {**response, "status": "completed", "output": items, "usage": USAGE}
    yield "response.completed", {"type": "response.completed", "response": done}


# --- Chat Completions -----------------------------------------------------------


def _chat_done(request: dict[str, Any]) -> int:
    return sum(1 for m in request.get("messages") or [] if m.get("role") == "assistant")


def _chat_message(turn: Turn, serial: int) -> dict[str, Any]:
    words = "".join(b["text"] for b in turn if b["type"] == "text")
    calls = [
        {
            "id": f"call_{serial}_{index}",
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
        }
        for index, b in enumerate(turn)
        if b["type"] == "tool_use"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": words or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _chat_usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _chat_events(turn: Turn, model: str, serial: int) -> Iterator[tuple[str | None, Any]]:
    message = _chat_message(turn, serial)
    head = {"id": f"chatcmpl-{serial}", "object": "chat.completion.chunk", "created": 0}
    head["model"] = model
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"] or ""}
    yield None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    for index, call in enumerate(message.get("tool_calls", [])):
        delta = {"tool_calls": [{"index": index, **call}]}
        yield None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    last = {"index": 0, "delta": {}, "finish_reason": finish}
    yield None, {**head, "choices": [last], "usage": _chat_usage()}
    yield None, "[DONE]"


def _chat_completion(turn: Turn, model: str, serial: int) -> dict[str, Any]:
    message = _chat_message(turn, serial)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _chat_usage(),
    }


# --- the server -------------------------------------------------------------------


class OpenAIAPI(StandIn):
    """The server, on 127.0.0.1 and a free port; a context manager that stops it."""

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script

    def is_main_loop(self, request: dict[str, Any]) -> bool:
        """Tools offered, in the request or (Codex with a model it knows, which gives them
        as an ``additional_tools`` input item) in its input."""
        items = request.get("input")
        given = isinstance(items, list) and any(
            isinstance(item, dict) and item.get("type") == "additional_tools" for item in items
        )
        return given or super().is_main_loop(request)

    def get(self, path: str) -> Reply:
        model = {"id": "standin", "object": "model", "created": 0, "owned_by": "kodelet"}
        return json_reply({"object": "list", "data": [model]})

    def post(self, path: str, request: dict[str, Any], serial: int) -> Reply:
        model = str(request.get("model", "standin"))
        main = self.is_main_loop(request)
        if path.endswith("/responses"):
            turn = self.turn(request, _responses_done(request)) if main else [text("ok")]
            return sse_reply(_sse(_responses_events(turn, model, serial)))
        if path.endswith("/chat/completions"):
            turn = self.turn(request, _chat_done(request)) if main else [text("ok")]
            if request.get("stream"):
                return sse_reply(_sse(_chat_events(turn, model, serial)))
            return json_reply(_chat_completion(turn, model, serial))
        return json_reply({"error": {"message": f"no {path} here"}}, 404)

    def turn(self, request: dict[str, Any], done: int) -> Turn:
        turns = self.script.turns
        if callable(turns):
            return turns(request)
        return turns[done] if done < len(turns) else [text("done")]

    @property
    def url(self) -> str:
        return self.root + "/v1"

    def tool_outputs(self) -> list[str]:
        """What the model was sent back for each tool call, in order, without repeats."""
        seen: dict[str, str] = {}
        for body in self.main_requests():
            for item in body.get("input") or []:
                if isinstance(item, dict) and item.get("type") in (
                    "function_call_output",
                    "custom_tool_call_output",
                ):
                    seen.setdefault(str(item.get("call_id")), _as_text(item.get("output")))
            for message in body.get("messages") or []:
                if message.get("role") == "tool":
                    seen.setdefault(str(message.get("tool_call_id")), _as_text(message["content"]))
        return list(seen.values())

    def tool_names(self) -> list[str]:
        """The tools the agent offered the model in its first main-loop request."""
        first = next(iter(self.main_requests()), {})
        names = []
        for t in first.get("tools") or []:
            names.append(str(t.get("name") or (t.get("function") or {}).get("name")))
        return names


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(b.get("text", "")) for b in value if isinstance(b, dict))
    return json.dumps(value)

"""A stand-in for Gemini's generateContent API: scripted model turns, a request log.

Gemini CLI (``GOOGLE_GEMINI_BASE_URL`` pointed here, any API key) sends the whole
conversation with every request, to ``/v1beta/models/<model>:generateContent`` or
``:streamGenerateContent?alt=sse``. The stand-in answers the main loop's requests
(those that offer tools) from a script, one turn per model message already in the
conversation since the user's prompt, and logs every request so a test can read what
the model was shown (function responses, a hook's reason). The CLI's utility calls
(routing, next-speaker checks: no tools, a JSON schema asked for) get the smallest
object their schema allows and consume no turn; a routing call left unanswered costs
the CLI about 90 seconds of retries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .base import Reply, StandIn, json_reply, sse_reply

Turn = list[dict[str, Any]]
"""One model message's parts: ``{"text": ...}`` or ``{"functionCall": {"name": ...,
"args": {...}}}``."""


def text(words: str) -> dict[str, Any]:
    return {"text": words}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


def is_main_loop(request: dict[str, Any]) -> bool:
    return any(t.get("functionDeclarations") for t in request.get("tools") or [])


def turns_done(request: dict[str, Any]) -> int:
    """Model messages since the last user message that is plain text (the prompt):
    the context the CLI puts before the prompt is not the script's."""
    contents = request.get("contents") or []
    start = 0
    for index, content in enumerate(contents):
        parts = content.get("parts") or []
        if content.get("role") == "user" and not any("functionResponse" in p for p in parts):
            start = index
    return sum(1 for c in contents[start:] if c.get("role") == "model")


class Script:
    """What the model says: ``turns[i]`` answers a main-loop request whose conversation
    holds ``i`` model messages since the prompt; past the end, a plain "done"."""

    def __init__(self, turns: list[Turn] | Callable[[dict[str, Any]], Turn]) -> None:
        self.turns = turns

    def answer(self, request: dict[str, Any]) -> Turn:
        if callable(self.turns):
            return self.turns(request)
        done = turns_done(request)
        if done < len(self.turns):
            return self.turns[done]
        return [text("done")]


def smallest(schema: Any) -> Any:
    """The smallest value a JSON schema (OpenAPI-flavoured or not) accepts."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: smallest(sub) for name, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "standin"


def utility_answer(request: dict[str, Any]) -> Turn:
    config = request.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema is not None or config.get("responseMimeType") == "application/json":
        return [text(json.dumps(smallest(schema) if schema is not None else {}))]
    return [text("ok")]


def response(turn: Turn, model: str) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": turn},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
    }


class GeminiAPI(StandIn):
    """The server, on 127.0.0.1 and a free port; a context manager that stops it."""

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script

    def get(self, path: str) -> Reply:
        return json_reply({"models": []})

    def is_main_loop(self, request: dict[str, Any]) -> bool:
        return is_main_loop(request)

    def post(self, path: str, request: dict[str, Any], serial: int) -> Reply:
        method = path.rsplit(":", 1)[-1]
        if method == "countTokens":
            return json_reply({"totalTokens": 10})
        if method not in ("generateContent", "streamGenerateContent"):
            return json_reply({})
        model = path.rsplit("/", 1)[-1].split(":")[0]
        turn = self.script.answer(request) if is_main_loop(request) else utility_answer(request)
        body = response(turn, model)
        if method == "generateContent":
            return json_reply(body)
        return sse_reply(f"data: {json.dumps(body)}\r\n\r\n".encode())

    @property
    def url(self) -> str:
        return self.root

    def function_responses(self) -> list[dict[str, Any]]:
        """Every functionResponse part the model was sent, in order, without repeats."""
        seen: list[dict[str, Any]] = []
        for body in self.main_requests():
            for content in body.get("contents") or []:
                for part in content.get("parts") or []:
                    reply = part.get("functionResponse") if isinstance(part, dict) else None
                    if isinstance(reply, dict) and reply not in seen:
                        seen.append(reply)
        return seen

    def tool_outputs(self) -> list[str]:
        return [
            json.dumps(r.get("response"), ensure_ascii=False) for r in self.function_responses()
        ]

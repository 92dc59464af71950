"""The text a tool's result shows the model, and the result rebuilt around new text.

Every agent hands its hooks a tool's result in its own shape: Claude Code's Bash gives
``{"stdout", "stderr", ...}``, its Read ``{"file": {"content", ...}}``, an MCP tool a
list of content blocks, Gemini CLI, Copilot CLI and opencode the text itself. kodelet
gives every hook the same field, ``tool_output.metadata.output``: that text, whichever
agent ran the tool (the raw result stays beside it as ``metadata.tool_response``). A
hook that rewrites the text gets the agent's own result rebuilt around it
(:func:`with_text`), in the shape the agent checks a replacement against, so one
redaction holds in every agent.

The shapes are read by their fields, not by tool name, so a tool an agent adds later
that answers in a known shape is covered too; anything else is shown as its JSON text,
and a rewrite of that text is read back as JSON.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["TEXT_FIELDS", "model_text", "with_text"]

TEXT_FIELDS = ("output", "llmContent", "result", "content", "text", "textResultForLlm")
"""Keys that hold a result's whole text, in the order they are tried after the shapes
with more than one part (a shell's ``stdout``/``stderr``, a file read's ``file``)."""


def _blocks(value: Any) -> list[dict[str, Any]] | None:
    """``value`` as a list of content blocks (MCP, Anthropic), or None."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in value):
        return None
    return value


def _blocks_text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(
        b["text"] for b in blocks if b["type"] == "text" and isinstance(b.get("text"), str)
    )


def _without_text(blocks: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The blocks with every text block replaced by one holding ``text`` (images and other
    kinds kept after it)."""
    kept = [b for b in blocks if b["type"] != "text"]
    return [{"type": "text", "text": text}, *kept]


def model_text(response: Any) -> str:
    """The text the model is shown of the tool result ``response``, as the agent handed it
    to its hooks. A shell's stderr follows its stdout on a line of its own."""
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    blocks = _blocks(response)
    if blocks is not None:
        return _blocks_text(blocks)
    if isinstance(response, dict):
        stdout = response.get("stdout")
        if isinstance(stdout, str):
            stderr = response.get("stderr")
            if isinstance(stderr, str) and stderr:
                return f"{stdout}\n{stderr}" if stdout else stderr
            return stdout
        file = response.get("file")
        if isinstance(file, dict) and isinstance(file.get("content"), str):
            return str(file["content"])
        for key in TEXT_FIELDS:
            value = response.get(key)
            if isinstance(value, str):
                return value
            blocks = _blocks(value)
            if blocks is not None:
                return _blocks_text(blocks)
    return json.dumps(response, ensure_ascii=False)


def with_text(response: Any, text: str) -> Any | None:
    """The tool result ``response`` rebuilt so that the model is shown ``text`` in its
    place, in the same shape (the agent checks a built-in tool's replacement against
    that shape); None when ``text`` cannot be put back into that shape (a JSON-shown
    result whose rewrite is no longer a JSON object)."""
    if response is None or isinstance(response, str):
        return text
    blocks = _blocks(response)
    if blocks is not None:
        return _without_text(blocks, text)
    if isinstance(response, dict):
        if isinstance(response.get("stdout"), str):
            return {**response, "stdout": text, "stderr": ""}
        file = response.get("file")
        if isinstance(file, dict) and isinstance(file.get("content"), str):
            return {**response, "file": {**file, "content": text}}
        for key in TEXT_FIELDS:
            value = response.get(key)
            if isinstance(value, str):
                return {**response, key: text}
            blocks = _blocks(value)
            if blocks is not None:
                return {**response, key: _without_text(blocks, text)}
    try:
        new = json.loads(text)
    except ValueError:
        return None
    if isinstance(response, dict) and isinstance(new, dict):
        # A built-in tool's replacement must keep its fields, and filling a dropped one
        # back in from the old result could bring back what the rewrite took out.
        return new if set(new) >= set(response) else None
    return new if type(new) is type(response) else None

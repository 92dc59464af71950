"""``demo-redact``: the demo's executable hook. Made for the demo session, not for real work.

An ``after_tool_call`` hook in Python on :mod:`kodelet.hookkit`, run as any
executable hook is (``hook``, then ``serve`` since it speaks the persistent
protocol): it masks AWS keys in a tool's output, so the model never sees them.
"""

from __future__ import annotations

import re
from typing import Any

SECRET = re.compile(
    r"(?P<keep>aws_secret_access_key\s*[=:]\s*)[A-Za-z0-9/+]{40}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    re.IGNORECASE,
)


def _mask(value: Any) -> Any:
    if isinstance(value, str):
        return SECRET.sub(lambda m: (m.group("keep") or "") + "[redacted]", value)
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return value


def redact(payload: dict[str, Any]) -> dict[str, Any] | None:
    output = payload.get("tool_output")
    masked = _mask(output)
    return {"output": masked} if masked != output else None


if __name__ == "__main__":
    from kodelet import hookkit

    hookkit.main("after_tool_call", redact)

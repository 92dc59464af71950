"""The redaction docs/EVENTS.md shows for after_tool_call, as a hook every agent's e2e
tests install: it rewrites ``tool_output.metadata.output``, the text the model is shown,
and nothing else, so it holds in an agent only if kodelet gives every agent's result
that one shape and makes the rewrite the agent's own replacement."""

from __future__ import annotations

import json
from typing import Any

KEY = "AKIAIOSFODNN7EXAMPLE"
"""An AWS-style access key id (AWS's own documentation example)."""

HOOK = """#!/usr/bin/env python3
import json, re, sys
if sys.argv[1] == "hook":
    print("after_tool_call")
elif sys.argv[1] == "run":
    payload = json.load(sys.stdin)
    out = payload["tool_output"]
    text = (out.get("metadata") or {}).get("output") or ""
    new = re.sub(r"AKIA[0-9A-Z]{16}", "[redacted]", text)
    if new != text:
        print(json.dumps({"output": {**out, "metadata": {"output": new}}}))
"""


def leaked(request: Any) -> bool:
    """The model request ``request`` (any JSON) holds the key."""
    return KEY in json.dumps(request)

"""Write an executable hook in Python that speaks both protocols in a few lines.

::

    #!/usr/bin/env python3
    from kodelet import hookkit

    def check(payload):
        if "rm -rf /" in payload["tool_input"].get("command", ""):
            return {"blocked": True, "reason": "no"}
        return None  # no action

    hookkit.main("before_tool_call", check)

``main`` answers ``hook`` (adding ``jsonl`` only when kodelet says it speaks
it, so older hosts still understand the answer), handles one payload for
``run``, and loops over payload lines for ``serve`` (docs/PROTOCOL.md). The
handler gets the payload as a dict and returns a dict, None or a kodelet
result object. It is the same function in both modes, so a hook behaves the
same whether it is spawned per call or kept running.

If the handler raises, the hook exits non-zero with the traceback on stderr in
both modes: kodelet records that call as the hook's failure (and restarts a
server on next use), exactly as for any crashing hook.

Only the standard library is imported here; a hook pays for nothing else.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any, NoReturn

from .kinds import Protocol

Handler = Callable[[dict[str, Any]], Any]

PROTOCOL = Protocol.JSONL.value
USAGE = "usage: {prog} hook|run|serve"


def speaks_jsonl(env: dict[str, str] | None = None) -> bool:
    """Whether the host asking ``hook`` understands the persistent protocol."""
    value = (os.environ if env is None else env).get("KODELET_HOOK_PROTOCOLS", "")
    return PROTOCOL in value.replace(",", " ").split()


def to_json(result: Any) -> Any:
    """A handler's answer as JSON data: None becomes ``{}`` (no action)."""
    if result is None:
        return {}
    if isinstance(result, dict):
        return result
    if hasattr(type(result), "__attrs_attrs__"):
        from .wire import converter

        data = converter.unstructure(result)
        return {k: v for k, v in data.items() if v is not None}
    raise TypeError(f"hook handler returned {type(result).__name__}, expected a dict or None")


def run_once(handler: Handler, stdin: IO[str], stdout: IO[str]) -> None:
    """The per-call protocol: one payload on stdin, one result (or nothing) on stdout."""
    text = stdin.read()
    payload = json.loads(text) if text.strip() else {}
    result = handler(payload)
    if result is not None:
        stdout.write(json.dumps(to_json(result), ensure_ascii=False) + "\n")
        stdout.flush()


def serve(handler: Handler, stdin: IO[str], stdout: IO[str]) -> None:
    """The persistent protocol: one payload per line in, one result per line out, until EOF."""
    for line in stdin:
        if not line.strip():
            continue
        result = handler(json.loads(line))
        stdout.write(json.dumps(to_json(result), ensure_ascii=False) + "\n")
        stdout.flush()


def main(
    event: str,
    handler: Handler,
    *,
    argv: list[str] | None = None,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> NoReturn:
    """Dispatch on ``argv[1]`` (``hook``, ``run`` or ``serve``) and exit."""
    args = sys.argv if argv is None else argv
    inp = sys.stdin if stdin is None else stdin
    out = sys.stdout if stdout is None else stdout
    command = args[1] if len(args) > 1 else ""
    prog = os.path.basename(args[0]) if args else "hook"
    try:
        if command == "hook":
            out.write(f"{event} {PROTOCOL}\n" if speaks_jsonl() else f"{event}\n")
            out.flush()
        elif command == "run":
            run_once(handler, inp, out)
        elif command == "serve":
            serve(handler, inp, out)
        else:
            sys.stderr.write(USAGE.format(prog=prog) + "\n")
            sys.exit(2)
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(1)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    sys.exit(0)

"""Hooks that give every outcome a replay can show (a guard, a redactor, a secrets
check, a broken hook, a reminder), and the report's JSON without its timings."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.kit.cli import run_kodelet as kodelet

PY = sys.executable


GUARD = f"""#!{PY}
import json, sys
if sys.argv[1] == "hook":
    print("before_tool_call"); sys.exit(0)
payload = json.load(sys.stdin)
command = payload.get("tool_input", {{}}).get("command", "")
if "rm -rf" in command:
    print(json.dumps({{"blocked": True, "reason": "Security policy: 'rm -rf' is not allowed"}}))
elif command == "ls":
    print(json.dumps({{"input": {{"command": "ls -la"}}}}))
"""


REDACT = f"""#!{PY}
import json, sys
if sys.argv[1] == "hook":
    print("after_tool_call"); sys.exit(0)
payload = json.load(sys.stdin)
out = payload["tool_output"]
if "hunter2" in json.dumps(out):
    out["metadata"] = {{"output": "[redacted]"}}
    print(json.dumps({{"output": out}}))
"""


SECRETS = f"""#!{PY}
import json, sys
if sys.argv[1] == "hook":
    print("user_message_send"); sys.exit(0)
if "AKIA" in json.load(sys.stdin)["message"]:
    print(json.dumps({{"blocked": True, "reason": "message contains an AWS access key id"}}))
"""


BROKEN = f"""#!{PY}
import sys
if sys.argv[1] == "hook":
    print("turn_end"); sys.exit(0)
sys.stderr.write("broken on purpose\\n")
sys.exit(1)
"""


REMINDER = f"""#!{PY}
import json, sys
if sys.argv[1] == "hook":
    print("agent_stop"); sys.exit(0)
json.load(sys.stdin)
print(json.dumps({{"follow_up_messages": ["Please run the linter"]}}))
"""


HOOKS = {
    "10-guard": GUARD,
    "20-redact": REDACT,
    "30-secrets": SECRETS,
    "40-broken": BROKEN,
    "50-reminder": REMINDER,
}


def replay_json(project: Path, *args: str) -> dict[str, Any]:
    proc = kodelet("--cwd", str(project), "replay", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def without_timings(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: without_timings(v) for k, v in data.items() if not k.endswith("_ms")}
    if isinstance(data, list):
        return [without_timings(v) for v in data]
    return data

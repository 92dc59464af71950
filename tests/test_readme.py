"""The README's first guardrail, run as a new user would paste it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_guardrail_blocks_rm_rf_and_allows_the_rest(tmp_path: Path) -> None:
    text = README.read_text()
    block = re.search(r"```bash\n(mkdir -p \.kodelet/hooks\n.*?)```", text, re.S)
    assert block, "README lost its guardrail example"
    script = block.group(1).replace("kodelet ", f"{sys.executable} -m kodelet ")
    env = {**os.environ}
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout[: done.stdout.index("}") + 1]) == {
        "blocked": True,
        "reason": "no rm -rf here",
    }
    allowed = subprocess.run(
        [
            sys.executable,
            "-m",
            "kodelet",
            "hooks",
            "run",
            "before_tool_call",
            "--payload",
            "-",
            "--trace",
        ],
        cwd=tmp_path,
        env=env,
        input='{"tool_name": "bash", "tool_input": {"command": "ls"}}',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout) == {"blocked": False}
    trace = [json.loads(line) for line in allowed.stderr.splitlines() if line.startswith("{")]
    assert [(t["name"], t["outcome"]) for t in trace] == [("no-rm-rf", "no-action")]

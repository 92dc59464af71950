"""One redaction for every agent: the text the model is shown is ``metadata.output``.

The hook is docs/EVENTS.md's after_tool_call example (:mod:`tests.kit.redaction`): it
rewrites ``tool_output.metadata.output`` and nothing else. Each agent's tool result,
in that agent's own shape, goes through the real bridge; the answer must put the
redacted text in the result's place in the form the agent applies, and must never
carry the key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kodelet.testing import write_hook
from kodelet.tooltext import model_text, with_text

from tests.kit import redaction
from tests.kit.cli import bridge, run_kodelet

KEY = redaction.KEY
LINE = f"AWS_ACCESS_KEY_ID={KEY}\n"

# --- the text, and the result rebuilt around new text ------------------------

SHAPES = [
    pytest.param(LINE, LINE, "new", id="text"),
    pytest.param(
        {"stdout": LINE, "stderr": "", "interrupted": False, "isImage": False},
        LINE,
        {"stdout": "new", "stderr": "", "interrupted": False, "isImage": False},
        id="claude-bash",
    ),
    pytest.param(
        {"type": "text", "file": {"filePath": "/p/.env", "content": LINE, "numLines": 1}},
        LINE,
        {"type": "text", "file": {"filePath": "/p/.env", "content": "new", "numLines": 1}},
        id="claude-read",
    ),
    pytest.param(
        [{"type": "text", "text": LINE}, {"type": "image", "data": "AA=="}],
        LINE,
        [{"type": "text", "text": "new"}, {"type": "image", "data": "AA=="}],
        id="mcp-blocks",
    ),
    pytest.param(
        {"llmContent": LINE, "returnDisplay": "1 line"},
        LINE,
        {"llmContent": "new", "returnDisplay": "1 line"},
        id="gemini-raw",
    ),
    pytest.param(
        {"matches": [LINE]},
        json.dumps({"matches": [LINE]}),
        None,
        id="json-shown",
    ),
]


@pytest.mark.parametrize(("response", "text", "rebuilt"), SHAPES)
def test_each_shape_shows_its_text_and_takes_new_text_back(
    response: Any, text: str, rebuilt: Any
) -> None:
    assert model_text(response) == text
    assert with_text(response, "new") == rebuilt


def test_a_shell_shows_stderr_after_stdout_and_a_rewrite_clears_it() -> None:
    response = {"stdout": "out", "stderr": KEY, "interrupted": False}
    assert model_text(response) == f"out\n{KEY}"
    assert KEY not in json.dumps(with_text(response, "out\n[redacted]"))


def test_a_json_shown_result_takes_a_rewrite_that_keeps_its_fields_only() -> None:
    response = {"matches": [LINE], "secret": KEY}
    redacted = model_text(response).replace(KEY, "[redacted]")
    assert with_text(response, redacted) == {
        "matches": ["AWS_ACCESS_KEY_ID=[redacted]\n"],
        "secret": "[redacted]",
    }
    # Filling a dropped field back in from the old result would bring the key back.
    assert with_text(response, json.dumps({"matches": []})) is None


# --- through the bridge, per agent --------------------------------------------


@pytest.fixture
def redacting(project: Path) -> Path:
    write_hook(project / ".kodelet" / "hooks", "redact", redaction.HOOK)
    return project


def post_tool(project: Path, tool: str, response: Any, **extra: Any) -> dict[str, Any]:
    return {
        "session_id": "s-1",
        "transcript_path": "",
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": {},
        "tool_response": response,
        "tool_use_id": "call_1",
        **extra,
    }


def answer(project: Path, data: dict[str, Any], *args: str) -> dict[str, Any]:
    proc = bridge(data, *args, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert KEY not in proc.stdout, proc.stdout
    out = json.loads(proc.stdout)
    assert isinstance(out, dict)
    return out


@pytest.mark.parametrize(
    ("tool", "response", "key", "replaced"),
    [
        (
            "Bash",
            {"stdout": LINE, "stderr": "", "interrupted": False, "isImage": False},
            "updatedToolOutput",
            {"stdout": "AWS_ACCESS_KEY_ID=[redacted]\n", "stderr": "", "interrupted": False,
             "isImage": False},
        ),
        (
            "Read",
            {"type": "text", "file": {"filePath": "/p/.env", "content": LINE, "numLines": 2,
                                      "startLine": 1, "totalLines": 2}},
            "updatedToolOutput",
            {"type": "text", "file": {"filePath": "/p/.env",
                                      "content": "AWS_ACCESS_KEY_ID=[redacted]\n",
                                      "numLines": 2, "startLine": 1, "totalLines": 2}},
        ),
        (
            "mcp__vault__get",
            [{"type": "text", "text": LINE}],
            "updatedMCPToolOutput",
            [{"type": "text", "text": "AWS_ACCESS_KEY_ID=[redacted]\n"}],
        ),
    ],
    ids=["bash", "read", "mcp"],
)  # fmt: skip
def test_claude_code_gets_the_redaction_as_its_own_replacement(
    redacting: Path, tool: str, response: Any, key: str, replaced: Any
) -> None:
    out = answer(redacting, post_tool(redacting, tool, response))
    assert out == {"hookSpecificOutput": {"hookEventName": "PostToolUse", key: replaced}}


def test_a_rewrite_claude_code_cannot_take_stops_before_the_model_sees_it(
    project: Path,
) -> None:
    """A JSON-shown result rewritten into text that is no longer its JSON: no
    replacement would pass Claude Code's check of the tool's shape, so it stops."""
    write_hook(
        project / ".kodelet" / "hooks",
        "withhold",
        """#!/bin/bash
[ "$1" = hook ] && { echo after_tool_call; exit 0; }
echo '{"output": {"toolName": "grep", "success": true, "metadata": {"output": "withheld"}}}'
""",
    )
    out = answer(project, post_tool(project, "Grep", {"mode": "files", "filenames": [KEY]}))
    assert out["continue"] is False
    assert "kept from the model" in out["stopReason"]


def test_gemini_cli_gets_the_redaction_in_place_of_the_result(redacting: Path) -> None:
    """Gemini CLI cannot replace a result, and added context goes beside it: the answer
    blocks the result, the redacted text as the reason (what the model is sent)."""
    data = {
        **post_tool(redacting, "run_shell_command", {"llmContent": LINE, "returnDisplay": LINE}),
        "hook_event_name": "AfterTool",
    }
    out = answer(redacting, data, "--agent", "gemini")
    assert out["decision"] == "deny"
    assert "AWS_ACCESS_KEY_ID=[redacted]" in out["reason"]
    assert "additionalContext" not in json.dumps(out)


def test_gemini_cli_text_parts_are_the_text(redacting: Path) -> None:
    parts = [{"text": "AWS_ACCESS_KEY_ID="}, {"text": f"{KEY}\n"}]
    data = {
        **post_tool(redacting, "read_file", {"llmContent": parts, "returnDisplay": ""}),
        "hook_event_name": "AfterTool",
    }
    out = answer(redacting, data, "--agent", "gemini")
    assert "AWS_ACCESS_KEY_ID=[redacted]" in out["reason"]


def test_codex_gets_the_redaction_as_the_outputs_replacement(redacting: Path) -> None:
    """Codex's shell result is its text; a blocking answer's reason takes its place."""
    out = answer(redacting, post_tool(redacting, "Bash", LINE), "--agent", "codex")
    assert out == {"decision": "block", "reason": "AWS_ACCESS_KEY_ID=[redacted]\n"}


def test_qwen_code_gets_the_redaction_as_the_calls_error(redacting: Path) -> None:
    """Qwen Code reads no updatedToolOutput; a PostToolUse continue: false makes the
    call an error whose message is the stop reason. Its returnDisplay, which the model
    is not shown, still holds the key: the answer must not carry it."""
    response = {"llmContent": f"Output: {LINE}", "returnDisplay": LINE}
    data = post_tool(redacting, "run_shell_command", response)
    out = answer(redacting, data, "--agent", "qwen")
    assert out["continue"] is False
    assert out["stopReason"].endswith("Output: AWS_ACCESS_KEY_ID=[redacted]\n")


def test_copilot_cli_gets_the_redaction_as_its_modified_result(redacting: Path) -> None:
    data = {
        **post_tool(redacting, "bash", None),
        "hook_event_name": "PostToolUse",
        "tool_result": {"result_type": "success", "text_result_for_llm": LINE},
    }
    data.pop("tool_response")
    out = answer(redacting, data, "--agent", "copilot")
    assert out["modifiedResult"] == {
        "resultType": "success",
        "textResultForLlm": "AWS_ACCESS_KEY_ID=[redacted]\n",
    }


def test_opencode_gets_the_redaction_as_its_output(redacting: Path) -> None:
    data = {**post_tool(redacting, "bash", LINE), "hook_event_name": "tool.execute.after"}
    out = answer(redacting, data, "--agent", "opencode")
    assert out == {"output": "AWS_ACCESS_KEY_ID=[redacted]\n"}


# --- kodelet hooks run: the same shape -----------------------------------------


@pytest.mark.parametrize(
    "metadata",
    [
        {"output": LINE},
        {"tool_response": {"stdout": LINE, "stderr": "", "interrupted": False}},
    ],
    ids=["events-md", "claude-code-shaped"],
)
def test_hooks_run_hands_the_redaction_the_text_the_agents_do(
    redacting: Path, metadata: dict[str, Any]
) -> None:
    """A payload copied from an agent's hook input carries only the agent's result: it
    gets ``metadata.output`` as inside the agent, so the redaction is tried on it."""
    payload = {"tool_name": "bash", "tool_output": {"toolName": "bash", "success": True,
                                                    "metadata": metadata}}  # fmt: skip
    res = run_kodelet(
        "--cwd", str(redacting), "hooks", "run", "after_tool_call", "-p", "-",
        stdin=json.dumps(payload),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)["output"]
    assert out["metadata"] == {"output": "AWS_ACCESS_KEY_ID=[redacted]\n"}


def test_a_failed_calls_error_is_its_text_and_a_rewrite_withholds_it(redacting: Path) -> None:
    """No agent can replace a failed call's error: the rewrite is never put beside it,
    the error is withheld (Claude Code stops; Gemini CLI is given the rewrite instead)."""
    data = {**post_tool(redacting, "Bash", None), "hook_event_name": "PostToolUseFailure",
            "error": f"cat: {KEY}: No such file"}  # fmt: skip
    data.pop("tool_response")
    out = answer(redacting, data)
    assert out["continue"] is False
    gemini = {
        **post_tool(redacting, "run_shell_command", {"llmContent": "", "error": {
            "message": f"cat: {KEY}: No such file"}}),
        "hook_event_name": "AfterTool",
    }  # fmt: skip
    out = answer(redacting, gemini, "--agent", "gemini")
    assert out["decision"] == "deny" and "cat: [redacted]: No such file" in out["reason"]


def test_status_says_a_redaction_of_a_failed_calls_error_does_not_hold(redacting: Path) -> None:
    """Claude Code 2.1.332 reads neither a replacement nor continue: false from a
    PostToolUseFailure hook: nothing keeps a failed call's error from the model."""
    for args in (["claude", "status"], ["verify", "--agent", "claude"]):
        res = run_kodelet("--cwd", str(redacting), *args)
        assert "redact: a rewritten error of a failed tool call" in res.stdout, args
        assert "a redaction does not hold there" in res.stdout, args


def test_hooks_list_says_where_a_redaction_does_not_hold(redacting: Path, tmp_path: Path) -> None:
    """``hooks list`` showed the redaction as active and nothing more, though in Claude
    Code and Qwen Code a failed call's error reaches the model unredacted."""
    listed = run_kodelet("--cwd", str(redacting), "hooks", "list").stdout
    after = listed.split("after_tool_call", 1)[1].split("\n\n", 1)[0]
    assert (
        "does not hold in Claude Code, Qwen Code: a rewritten error of a failed tool call" in after
    )
    # Only where a hook of the user's would rewrite: no such line without one.
    plain = tmp_path / "plain"
    (plain / ".kodelet" / "hooks").mkdir(parents=True)
    assert "does not hold" not in run_kodelet("--cwd", str(plain), "hooks", "list").stdout

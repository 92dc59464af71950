"""Matchers as Claude Code reads them, plus Spec 07's globs."""

from __future__ import annotations

import pytest
from kodelet.claude import HookEvent, HookMatcher, Matcher, MatcherError

TOOLS = ["Bash", "Write", "Edit", "MultiEdit", "NotebookEdit", "mcp__github__push", "Read"]


def matching(pattern: str | None) -> list[str]:
    m = Matcher(pattern)
    return [t for t in TOOLS if m(t)]


@pytest.mark.parametrize("pattern", [None, "", "*"])
def test_empty_and_star_match_everything(pattern: str | None) -> None:
    assert matching(pattern) == TOOLS


def test_plain_names_are_exact_and_case_sensitive() -> None:
    assert matching("Edit") == ["Edit"]
    assert matching("bash") == []


def test_alternation_is_a_list_of_exact_names() -> None:
    assert matching("Write|Edit") == ["Write", "Edit"]


def test_anything_else_is_a_regex_searched_in_the_name() -> None:
    assert matching("Notebook.*") == ["NotebookEdit"]
    assert matching("mcp__.*") == ["mcp__github__push"]
    assert matching(".*Edit") == ["Edit", "MultiEdit", "NotebookEdit"]
    assert matching("^(Write|Edit)$") == ["Write", "Edit"]


def test_globs_work_too() -> None:
    assert matching("mcp__*") == ["mcp__github__push"]
    assert matching("*Edit") == ["Edit", "MultiEdit", "NotebookEdit"]
    assert matching("Rea?") == ["Read"]


def test_a_bad_regex_is_refused_at_construction() -> None:
    with pytest.raises(MatcherError, match=r"matcher 'Bash\(' is not a valid regex"):
        Matcher("Bash(")
    with pytest.raises(MatcherError, match="matcher must be a string"):
        Matcher(3)  # type: ignore[arg-type]
    with pytest.raises(MatcherError):
        HookMatcher("[Edit", [])


def test_matchers_read_the_events_own_field() -> None:
    resume = HookMatcher("resume|compact", [])
    assert resume.applies(HookEvent.SESSION_START, {"source": "resume"})
    assert not resume.applies(HookEvent.SESSION_START, {"source": "startup"})
    auto = HookMatcher("auto", [])
    assert auto.applies(HookEvent.PRE_COMPACT, {"trigger": "auto"})
    assert not auto.applies(HookEvent.PRE_COMPACT, {"trigger": "manual"})
    assert HookMatcher("idle_prompt", []).applies(
        HookEvent.NOTIFICATION, {"notification_type": "idle_prompt"}
    )
    assert HookMatcher("Explore", []).applies(HookEvent.SUBAGENT_STOP, {"agent_type": "Explore"})


def test_events_without_matchers_ignore_them() -> None:
    # Claude Code fires UserPromptSubmit and Stop hooks whatever the matcher says.
    assert HookMatcher("Bash", []).applies(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi"})
    assert HookMatcher("Bash", []).applies(HookEvent.STOP, {})


def test_matcher_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive number of seconds"):
        HookMatcher(None, [], timeout=0)
    with pytest.raises(TypeError, match=r"hooks\[0\]: expected a callable or a CommandHook"):
        HookMatcher(None, ["echo hi"])  # type: ignore[list-item]


def test_names_with_spaces_or_commas_are_a_list_as_claude_code_reads_them() -> None:
    # Claude Code 2.1.332 splits a matcher made of names, '|', ',', spaces and '-' on
    # '|' and ',' and trims each name: "Edit | Bash" guards Bash (checked against the
    # binary in tests/e2e/test_claude_differential.py).
    assert matching("Edit | Bash") == ["Bash", "Edit"]
    assert matching(" Write ,Edit ") == ["Write", "Edit"]
    assert matching("Bash Edit") == []
    assert Matcher("my-tool")("my-tool") and not Matcher("my-tool")("my-tool2")

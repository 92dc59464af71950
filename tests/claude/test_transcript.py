"""The bridge's read of a transcript for agent_stop: recent turns only, bounded, never stuck."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kodelet.claude.transcript import recent_messages


def _line(kind: str, content: object, **extra: object) -> str:
    return json.dumps({"type": kind, "message": {"content": content, **extra}})


def test_recent_messages_keep_text_turns_and_drop_tools_and_notes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [
        _line("user", "please say hi"),
        _line("assistant", [{"type": "tool_use", "name": "Bash", "input": {}}], id="m1"),
        _line("user", [{"type": "tool_result", "content": "hi"}]),
        _line("user", "<command-name>/clear</command-name>"),
        _line("assistant", [{"type": "text", "text": "said"}], id="m2"),
        _line("assistant", [{"type": "text", "text": "hi"}], id="m2"),
        "not json",
    ]
    path.write_text("\n".join(lines) + "\n")
    got = [(m.role, m.content) for m in recent_messages(str(path))]
    assert got == [("user", "please say hi"), ("assistant", "said\nhi")]
    assert [m.content for m in recent_messages(str(path), limit=1)] == ["said\nhi"]


def test_only_the_tail_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    old = _line("user", "x" * 5000)
    path.write_text(old + "\n" + _line("user", "recent") + "\n")
    got = [m.content for m in recent_messages(str(path), tail_bytes=200)]
    assert got == ["recent"]


def test_a_fifo_or_a_missing_file_is_no_conversation(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert recent_messages(str(fifo)) == []
    assert recent_messages(str(tmp_path / "absent.jsonl")) == []
    assert recent_messages("") == []

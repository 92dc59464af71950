"""Hooks many tests install: real scripts, written as their files' text."""

from __future__ import annotations

BLOCKING_HOOK = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null
echo '{"blocked": true, "reason": "%s"}'
"""

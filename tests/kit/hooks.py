"""Hooks many tests install: real scripts, written as their files' text."""

from __future__ import annotations

BLOCKING_HOOK = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null
echo '{"blocked": true, "reason": "%s"}'
"""

BLOCKER = """#!/bin/sh
# Stops every rm -rf, lets the rest through.
case "$1" in
  hook) echo before_tool_call ;;
  run) grep -q 'rm -rf' && echo '{"blocked": true, "reason": "no rm -rf in this project"}'
       exit 0 ;;
esac
"""

NOTHING = """#!/bin/sh
# Lets everything through.
case "$1" in
  hook) echo before_tool_call ;;
  run) cat > /dev/null ;;
esac
"""

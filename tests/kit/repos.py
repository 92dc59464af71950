"""Git repositories in temp dirs: plugin trees, committed, in kodelet's layout and in
Claude Code's, and what an install left in a plugins directory."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from kodelet.testing import write_hook

from tests.kit.hooks import BLOCKING_HOOK

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    res = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return res.stdout.strip()


def make_plugin_tree(root: Path, reason: str = "blocked by plugin") -> Path:
    """A plugin repository's working tree: one skill, two recipes, one hook and a data file."""
    (root / "skills" / "pdf").mkdir(parents=True)
    (root / "skills" / "pdf" / "SKILL.md").write_text("# pdf\n")
    (root / "recipes" / "github").mkdir(parents=True)
    (root / "recipes" / "github" / "pr.md").write_text("open a PR\n")
    (root / "recipes" / "review.md").write_text("review\n")
    write_hook(root / "hooks", "guard", BLOCKING_HOOK % reason)
    (root / "hooks" / "README.txt").write_text("not a hook\n")
    (root / "README.md").write_text("not copied\n")
    return root


def make_git_repo(root: Path, reason: str = "blocked by plugin") -> Path:
    make_plugin_tree(root, reason)
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "first")
    return root


def leftovers(plugins: Path) -> list[str]:
    return sorted(os.listdir(plugins)) if plugins.exists() else []


SELF_IMPORTING_GUARD = """#!/usr/bin/env python3
import json, os, sys

# As hookify does: the plugin imports itself by its own directory name.
sys.path.insert(0, os.path.dirname(os.environ["CLAUDE_PLUGIN_ROOT"]))
try:
    from guardkit.core import rules
except ImportError:
    print("{}")  # a plugin that cannot import itself lets the call through
    sys.exit(0)
print(json.dumps(rules.decide(json.load(sys.stdin))))
"""


GUARD_RULES = """
def decide(hook_input):
    command = hook_input.get("tool_input", {}).get("command", "")
    if not command.startswith("rm "):
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "guardkit: no rm"}}
"""


def make_claude_plugin(root: Path, plugin_name: str | None = "guardkit") -> Path:
    """A git repository in Claude Code's plugin layout whose hook imports the plugin
    by its own name (``guardkit``, from plugin.json, or the repository's name)."""
    files = {
        "hooks/hooks.json": json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Bash",
                            "hooks": [
                                {
                                    "type": "command",
                                    "command": "python3 ${CLAUDE_PLUGIN_ROOT}/hooks/pretooluse.py",
                                }
                            ],
                        }
                    ]
                }
            }
        ),
        "hooks/pretooluse.py": SELF_IMPORTING_GUARD,
        "core/__init__.py": "",
        "core/rules.py": GUARD_RULES,
    }
    if plugin_name is not None:
        files[".claude-plugin/plugin.json"] = json.dumps({"name": plugin_name, "version": "1.0.0"})
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "first")
    return root

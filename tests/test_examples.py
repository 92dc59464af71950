"""The example plugins under plugins/examples, in-process and fast.

``nox -s examples`` installs them from wheels the way users do; here their
modules are imported by path so every ``nox -s tests`` run covers their logic.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from kodelet.cli.app import app
from kodelet.places import Places
from kodelet.recipes.loader import RecipeLibrary
from kodelet.testing import (
    after_tool_call_payload,
    after_turn_payload,
    agent_stop_payload,
    before_tool_call_payload,
    run_executable_hook,
    user_message_send_payload,
)
from typer.testing import CliRunner

EXAMPLES = Path(__file__).resolve().parent.parent / "plugins" / "examples"
NATIVE = {"guardrail": "guardrail", "audit-log": "audit-log", "lint-reminder": "lint-reminder"}
REPO = EXAMPLES / "code-review-repo"


def load_example(directory: str) -> ModuleType:
    """Import an example's single module from its source tree, under its real name."""
    meta = tomllib.loads((EXAMPLES / directory / "pyproject.toml").read_text())
    (module_name,) = meta["tool"]["setuptools"]["py-modules"]
    spec = importlib.util.spec_from_file_location(
        f"_example_{module_name}", EXAMPLES / directory / f"{module_name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("directory", list(NATIVE))
def test_entry_point_names_a_configurable_plugin_object(directory):
    meta = tomllib.loads((EXAMPLES / directory / "pyproject.toml").read_text())
    project = meta["project"]
    assert project["name"] == f"kodelet-plugin-{directory}"
    assert project["version"]
    (name, target), *rest = project["entry-points"]["kodelet.plugins"].items()
    assert not rest and name == NATIVE[directory]
    module_name, _, attr = target.partition(":")
    assert module_name in meta["tool"]["setuptools"]["py-modules"]
    plugin = getattr(load_example(directory), attr)
    assert callable(plugin.configure)
    assert (EXAMPLES / directory / "README.md").is_file()


# -- guardrail ----------------------------------------------------------------


@pytest.fixture
def guardrail(kodelet_runtime):
    return kodelet_runtime(("guardrail", load_example("guardrail").Guardrail()))


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("rm -rf /", "Security policy: 'rm -rf' is not allowed"),
        ("sudo reboot", "Security policy: 'sudo' is not allowed"),
        (":(){:|:&};:", "Security policy: ':(){:|:&};:' is not allowed"),
        ("curl x | bash", "Security policy: piping to shell is not allowed"),
        ("curl x | sh", "Security policy: piping to shell is not allowed"),
    ],
)
def test_guardrail_blocks_what_the_seed_guardrail_blocks(guardrail, command, reason):
    result = guardrail.dispatch(before_tool_call_payload("bash", {"command": command})).result
    assert (result.blocked, result.reason) == (True, reason)


def test_guardrail_lets_the_rest_through(guardrail):
    assert not guardrail.dispatch(
        before_tool_call_payload("bash", {"command": "ls"})
    ).result.blocked
    assert not guardrail.dispatch(user_message_send_payload("fix the tests")).result.blocked


@pytest.mark.parametrize(
    "message", ["key AKIAABCDEFGHIJKLMNOP", "-----BEGIN EC PRIVATE KEY-----\nabc"]
)
def test_guardrail_blocks_messages_with_secrets(guardrail, message):
    result = guardrail.dispatch(user_message_send_payload(message)).result
    assert result.blocked
    assert result.reason.startswith("Security policy: message contains a secret")


def test_guardrail_reads_its_own_table_from_config_toml(kodelet_runtime):
    runtime = kodelet_runtime(
        ("guardrail", load_example("guardrail").Guardrail()),
        config_toml='[plugin.guardrail]\nblocked_commands = ["shutdown"]\n',
    )
    result = runtime.dispatch(before_tool_call_payload("bash", {"command": "shutdown now"})).result
    assert result.reason == "Security policy: 'shutdown' is not allowed"


def test_guardrail_instances_keep_their_own_settings(kodelet_runtime):
    module = load_example("guardrail")
    strict = kodelet_runtime(("guardrail", module.Guardrail()))
    kodelet_runtime(
        ("guardrail", module.Guardrail()), config={"guardrail": {"blocked_commands": ["x"]}}
    )
    assert strict.dispatch(before_tool_call_payload("bash", {"command": "sudo ls"})).result.blocked


# -- audit-log ----------------------------------------------------------------


def test_audit_log_appends_json_lines_to_the_global_root(kodelet_runtime, kodelet_home):
    runtime = kodelet_runtime(("audit-log", load_example("audit-log").AuditLog()))
    runtime.dispatch(after_tool_call_payload("bash", {"command": "ls"}))
    runtime.dispatch(after_turn_payload(1))
    runtime.dispatch(agent_stop_payload([("user", "hi")]))
    lines = (kodelet_home / "audit.log").read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines] == [
        "after_tool_call",
        "after_turn",
        "agent_stop",
    ]


@pytest.mark.parametrize("target", ["/dev/full", "{tmp}/file/audit.log", "/sys/audit.log"])
def test_audit_log_never_raises(kodelet_runtime, tmp_path, target):
    (tmp_path / "file").write_text("")
    path = target.format(tmp=tmp_path)
    runtime = kodelet_runtime(
        ("audit-log", load_example("audit-log").AuditLog()), config={"audit-log": {"path": path}}
    )
    dispatch = runtime.dispatch(after_turn_payload(1))
    assert [(r.outcome.value, r.error) for r in dispatch.trace] == [("no-action", None)]


# -- lint-reminder --------------------------------------------------------------

EDITED = [("user", "fix it"), ("assistant", "called file_edit on a.py")]


def test_lint_reminder_follows_up_after_edits_for_the_main_agent_only(kodelet_runtime):
    module = load_example("lint-reminder")
    runtime = kodelet_runtime(("lint-reminder", module.LintReminder()))
    main = runtime.dispatch(agent_stop_payload(EDITED)).result
    assert main.follow_up_messages == ["Please run the linter to check for any issues."]
    sub = runtime.dispatch(agent_stop_payload(EDITED, invoked_by="subagent")).result
    assert not sub.follow_up_messages
    quiet = runtime.dispatch(agent_stop_payload([("assistant", "read a.py")])).result
    assert not quiet.follow_up_messages


# -- each example's own test suite -------------------------------------------------


@pytest.mark.parametrize("directory", list(NATIVE))
def test_example_suites_pass_as_shipped(directory):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=EXAMPLES / directory,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed" in proc.stdout


# -- code-review-repo -------------------------------------------------------------


def test_repo_layout_is_adr_029s():
    for rel in ("hooks/validate-diff", "hooks/post-review-summary"):
        assert os.access(REPO / rel, os.X_OK), rel
    assert (REPO / "recipes" / "review.md").read_text().startswith("---\nname: review\n")
    assert (
        (REPO / "skills" / "code-review" / "SKILL.md")
        .read_text()
        .startswith("---\nname: code-review\n")
    )
    assert (REPO / "hooks" / "validate-diff").read_text().startswith("#!/usr/bin/env bash")
    assert (REPO / "hooks" / "post-review-summary").read_text().startswith("#!/usr/bin/env python3")


CONFLICT = {"path": "a.py", "content": "<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> branch\n"}


def test_validate_diff_blocks_conflict_markers_in_edits():
    hook = REPO / "hooks" / "validate-diff"
    blocked = run_executable_hook(hook, before_tool_call_payload("file_write", CONFLICT))
    assert blocked.blocked
    assert "conflict markers" in blocked.reason
    clean = run_executable_hook(hook, before_tool_call_payload("file_edit", {"content": "x"}))
    assert not clean.blocked
    other_tool = run_executable_hook(
        hook, before_tool_call_payload("bash", {"command": "<<<<<<< "})
    )
    assert not other_tool.blocked


def test_post_review_summary_acts_only_for_the_review_recipe(kodelet_home):
    hook = REPO / "hooks" / "post-review-summary"
    unfinished = [("assistant", "Looks fine.")]
    assert run_executable_hook(hook, agent_stop_payload(unfinished)) is None
    assert run_executable_hook(hook, agent_stop_payload(unfinished, recipe_name="deploy")) is None
    asked = run_executable_hook(hook, agent_stop_payload(unfinished, recipe_name="review"))
    assert asked.follow_up_messages and "## Summary" in asked.follow_up_messages[0]
    assert not (kodelet_home / "review-summaries.jsonl").exists()
    done = [("assistant", "Findings...\n## Summary\nApprove; no blocking issues.")]
    assert run_executable_hook(hook, agent_stop_payload(done, recipe_name="review")) is None
    [posted] = (kodelet_home / "review-summaries.jsonl").read_text().splitlines()
    assert json.loads(posted)["summary"] == "Approve; no blocking issues."


@pytest.mark.parametrize("name", ["examples/code-review/review", "acme/tools/review"])
def test_post_review_summary_acts_for_the_installed_recipe_name(kodelet_home, name):
    hook = REPO / "hooks" / "post-review-summary"
    asked = run_executable_hook(
        hook, agent_stop_payload([("assistant", "Fine.")], recipe_name=name)
    )
    assert asked is not None and "## Summary" in asked.follow_up_messages[0]


@pytest.mark.parametrize("name", ["acme/tools/preview", "acme/review/deploy", "reviews"])
def test_post_review_summary_ignores_other_recipes(kodelet_home, name):
    hook = REPO / "hooks" / "post-review-summary"
    payload = agent_stop_payload([("assistant", "Fine.")], recipe_name=name)
    assert run_executable_hook(hook, payload) is None


def test_repo_installs_with_plugins_add_and_runs_under_its_names(tmp_path, kodelet_home):
    project = tmp_path / "project"
    project.mkdir()
    runner = CliRunner()
    cwd = ["--cwd", str(project)]
    add = runner.invoke(app, [*cwd, "plugins", "add", str(REPO), "--name", "examples/code-review"])
    assert add.exit_code == 0, add.output
    assert "Hooks:   2" in add.output
    listed = runner.invoke(app, [*cwd, "hooks", "list"])
    assert "examples/code-review/validate-diff" in listed.output
    assert "examples/code-review/post-review-summary" in listed.output
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"tool_name": "file_write", "tool_input": CONFLICT}))
    ran = runner.invoke(
        app, [*cwd, "hooks", "run", "before_tool_call", "-p", str(payload), "--trace"]
    )
    assert ran.exit_code == 0, ran.output
    assert '"blocked": true' in ran.output
    assert '"name": "examples/code-review/validate-diff"' in ran.output
    recipe = RecipeLibrary(Places(cwd=project, global_root=kodelet_home)).load(
        "examples/code-review/review"
    )
    stop = tmp_path / "stop.json"
    stop.write_text(
        json.dumps(
            {
                "recipe_name": recipe.name,
                "messages": [{"role": "assistant", "content": "Fine.\n## Summary\nApprove."}],
            }
        )
    )
    stopped = runner.invoke(app, [*cwd, "hooks", "run", "agent_stop", "-p", str(stop), "--trace"])
    assert stopped.exit_code == 0, stopped.output
    assert '"name": "examples/code-review/post-review-summary"' in stopped.output
    [posted] = (kodelet_home / "review-summaries.jsonl").read_text().splitlines()
    assert json.loads(posted)["summary"] == "Approve."


# -- kodelet plugins new ------------------------------------------------------------


def test_scaffolded_plugin_passes_its_own_tests(tmp_path):
    result = CliRunner().invoke(app, ["plugins", "new", "demo-guard", "--dir", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    project = tmp_path / "p"
    meta = tomllib.loads((project / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "kodelet-plugin-demo-guard"
    assert meta["project"]["entry-points"]["kodelet.plugins"] == {
        "demo-guard": "kodelet_plugin_demo_guard:DemoGuard"
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_plugins_new_refuses_bad_names_and_existing_projects(tmp_path):
    runner = CliRunner()
    bad = runner.invoke(app, ["plugins", "new", "Not A Name", "--dir", str(tmp_path / "x")])
    assert bad.exit_code == 2
    assert "invalid plugin name" in bad.output
    assert not (tmp_path / "x").exists()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    taken = runner.invoke(app, ["plugins", "new", "demo", "--dir", str(tmp_path / "taken")])
    assert taken.exit_code == 2
    assert "already exists" in taken.output
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["keep.txt"]

"""``kodelet rules``: enable and disable, list, explain and test, in real subprocesses;
and the rules in ``hooks run`` and ``hooks list``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.kit.cli import no_traceback, run_kodelet

NO_FORCE_PUSH = """\
# Our team's rules: reviewed like code.
on_unknown = "ask"  # a $VAR program is asked about

[[rules]]
name = "no-force-push"   # shared history
decision = "deny"
reason = "Force-pushing rewrites shared history; push without --force."
program = ["git"]
subcommand = ["push"]
any_flags = ["force", "force-with-lease"]

[[rules]]
name = "no-dotfiles"
decision = "ask"
reason = "This writes a file in your home folder."
tool = ["write", "edit"]
writes_zone = ["home", "home_root"]
"""

PASSING_TESTS = """
[[tests]]
command = "git push -f origin main"
expect = "deny"
rule = "no-force-push"

[[tests]]
name = "a plain push"
command = "git push origin main"
expect = "allow"

[[tests]]
tool = "file_write"
input = {file_path = "~/.bashrc", text = "x"}
expect = "ask"
"""


def kodelet(project: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    res = run_kodelet("--cwd", str(project), *args, **kw)  # type: ignore[arg-type]
    no_traceback(res)
    return res


def rules_file(where: Path, text: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / "rules.toml"
    path.write_text(text)
    return path


# -- enable / disable ---------------------------------------------------------------------


def test_enable_creates_the_file_and_is_idempotent(project: Path) -> None:
    path = project / ".kodelet" / "rules.toml"
    first = kodelet(project, "rules", "enable", "recommended")
    assert first.returncode == 0, first.stderr
    assert f"recommended rules are now on for this project: {path}" in first.stdout
    assert 'use = ["recommended"]' in path.read_text()
    assert not path.stat().st_mode & 0o022
    again = kodelet(project, "rules", "enable", "recommended")
    assert again.returncode == 0
    assert "already on" in again.stdout and "nothing changed" in again.stdout
    assert path.read_text().count("recommended") == 1


def test_enable_and_disable_keep_the_files_comments(project: Path) -> None:
    path = rules_file(project / ".kodelet", NO_FORCE_PUSH)
    assert kodelet(project, "rules", "enable", "recommended").returncode == 0
    text = path.read_text()
    for kept in ("# Our team's rules", "# a $VAR program", "# shared history", "no-dotfiles"):
        assert kept in text
    off = kodelet(project, "rules", "disable", "recommended")
    assert off.returncode == 0, off.stderr
    assert "recommended rules are now off for this project" in off.stdout
    text = path.read_text()
    assert "recommended" not in text and "# shared history" in text
    again = kodelet(project, "rules", "disable", "recommended")
    assert "already off" in again.stdout


def test_enable_for_the_user_and_disable_names_the_other_scope(
    project: Path, kodelet_home: Path
) -> None:
    res = kodelet(project, "rules", "enable", "recommended", "--scope", "user")
    assert res.returncode == 0, res.stderr
    assert str(kodelet_home / "rules.toml") in res.stdout
    off = kodelet(project, "rules", "disable", "recommended")
    assert "note: the user rules still turn recommended on" in off.stdout


def test_enable_refuses_an_unknown_set_and_a_symlinked_file(project: Path, tmp_path: Path) -> None:
    res = kodelet(project, "rules", "enable", "strict")
    assert res.returncode == 2
    assert "no rule set named 'strict'" in res.stderr
    target = rules_file(tmp_path / "other", "")
    (project / ".kodelet" / "rules.toml").symlink_to(target)
    res = kodelet(project, "rules", "enable", "recommended")
    assert res.returncode == 2
    assert "symbolic link" in res.stderr
    assert target.read_text() == ""


# -- list -----------------------------------------------------------------------------------


def test_list_shows_every_rule_with_its_source_and_marks_managed_and_disabled(
    project: Path, kodelet_home: Path
) -> None:
    managed = Path(os.environ["KODELET_MANAGED_DIR"])
    rules_file(managed, NO_FORCE_PUSH.replace("no-dotfiles", "machine-dotfiles"))
    rules_file(kodelet_home, NO_FORCE_PUSH.replace("no-force-push", "mine"))
    rules_file(project / ".kodelet", 'disable = ["mine", "machine-dotfiles"]\n' + NO_FORCE_PUSH)
    res = kodelet(project, "rules", "list", "--json")
    assert res.returncode == 0, res.stderr
    rows = {(r["source"], r["name"]): r for r in json.loads(res.stdout)["rules"]}
    assert rows[("managed", "machine-dotfiles")]["managed"] is True
    assert rows[("managed", "machine-dotfiles")]["status"] == "active"
    assert rows[("user", "mine")]["status"] == "active"  # the project cannot disable it
    assert rows[("project", "no-force-push")]["decision"] == "deny"
    ignored = json.loads(res.stdout)["ignored_disables"]
    assert {"by": "project", "rule": "mine", "held_by": "user"} in ignored
    text = kodelet(project, "rules", "list").stdout
    assert "active (managed: no user or project file lifts it)" in text
    assert "note: project disables 'mine', which user holds" in text
    assert f"project  {project / '.kodelet' / 'rules.toml'}" in text


def test_list_says_where_it_looked_when_there_are_no_rules(project: Path) -> None:
    res = kodelet(project, "rules", "list")
    assert res.returncode == 0
    assert "no rule files here" in res.stdout
    assert "kodelet rules enable recommended" in res.stdout
    explained = kodelet(project, "rules", "explain", "rm -rf ~")
    assert "decided: nothing" in explained.stdout
    assert "no rule files here, so no rule is in force" in explained.stdout


def test_a_bad_rule_file_is_exit_2_with_one_line(project: Path) -> None:
    path = rules_file(project / ".kodelet", '[[rules]]\nname = "x"\ndecision = "deny"\n')
    for args in (["list"], ["explain", "ls"], ["test"]):
        res = kodelet(project, "rules", *args)
        assert res.returncode == 2, (args, res.stdout)
        assert res.stderr.strip().count("\n") == 0
        assert f"{path}: rule 'x' (rules[0]): a deny rule needs a reason" in res.stderr


# -- explain ----------------------------------------------------------------------------------


def test_explain_prints_the_parse_the_matches_and_the_decision(project: Path) -> None:
    rules_file(project / ".kodelet", NO_FORCE_PUSH)
    res = kodelet(project, "rules", "explain", "sudo git push --force origin main")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "1. git push" in out
    assert "flags: force" in out
    assert "via: sudo" in out
    assert "deny  project:no-force-push" in out
    assert "decided: deny by no-force-push (project): Force-pushing rewrites" in out
    data = json.loads(kodelet(project, "rules", "explain", "git push -f", "--json").stdout)
    assert data["decision"] == "deny" and data["rule"] == "no-force-push"
    assert data["facts"]["commands"][0]["program"] == "git"
    plain = kodelet(project, "rules", "explain", "git status").stdout
    assert "decided: nothing" in plain


def test_explain_a_payload_file_and_a_cwd(project: Path, tmp_path: Path) -> None:
    rules_file(project / ".kodelet", NO_FORCE_PUSH)
    payload = tmp_path / "p.json"
    call = {"tool_name": "file_write", "tool_input": {"file_path": "../.profile", "text": "x"}}
    payload.write_text(json.dumps(call))
    home = Path(os.environ["HOME"])
    (home / "w").mkdir()
    res = kodelet(project, "rules", "explain", "--payload", str(payload), "--cwd", str(home / "w"))
    assert res.returncode == 0, res.stderr
    assert "decided: ask by no-dotfiles (project)" in res.stdout
    assert "(home" in res.stdout
    both = kodelet(project, "rules", "explain", "ls", "--payload", str(payload))
    assert both.returncode == 2


# -- test ---------------------------------------------------------------------------------------


def test_rules_test_passes_and_fails_naming_the_case(project: Path, tmp_path: Path) -> None:
    rules_file(project / ".kodelet", NO_FORCE_PUSH + PASSING_TESTS)
    ok = kodelet(project, "rules", "test")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "3 passed, 0 failed" in ok.stdout
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(
        NO_FORCE_PUSH
        + textwrap.dedent(
            """
            [[tests]]
            name = "plain push"
            command = "git push origin main"
            expect = "deny"
            """
        )
    )
    bad = kodelet(project, "rules", "test", str(wrong))
    assert bad.returncode == 1
    assert "FAIL" in bad.stdout and "plain push: expected deny, got allow" in bad.stdout
    data = json.loads(kodelet(project, "rules", "test", str(wrong), "--json").stdout)
    assert data["failed"] == 1 and data["cases"][0]["case"] == "plain push"
    wrong.write_text("[[tests]]\nexpect = 'deny'\n")
    assert kodelet(project, "rules", "test", str(wrong)).returncode == 2


def test_rules_test_names_the_rule_that_should_have_decided(project: Path) -> None:
    rules_file(
        project / ".kodelet",
        NO_FORCE_PUSH + '[[tests]]\ncommand = "git push -f"\nexpect = "deny"\nrule = "other"\n',
    )
    res = kodelet(project, "rules", "test")
    assert res.returncode == 1
    assert "expected deny by other, got deny by no-force-push (project)" in res.stdout


# -- the guard in hooks run and hooks list --------------------------------------------------------


def _installed_kodelet() -> str:
    script = Path(sys.executable).parent / "kodelet"
    if not script.exists():
        pytest.skip("kodelet is not installed beside this Python")
    return str(script)


def test_hooks_run_blocks_a_call_a_rule_denies(project: Path) -> None:
    rules_file(project / ".kodelet", NO_FORCE_PUSH)
    payload = {"tool_name": "bash", "tool_input": {"command": "git push --force origin main"}}
    res = subprocess.run(
        [_installed_kodelet(), "--cwd", str(project), "hooks", "run", "before_tool_call",
         "--payload", "-", "--exit-code"],
        input=json.dumps(payload), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    result = json.loads(res.stdout)
    assert result["blocked"] is True
    assert result["reason"].startswith("kodelet rule no-force-push (project): Force-pushing")
    fine = dict(payload, tool_input={"command": "git push origin main"})
    res = subprocess.run(
        [_installed_kodelet(), "--cwd", str(project), "hooks", "run", "before_tool_call",
         "--payload", "-", "--exit-code"],
        input=json.dumps(fine), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["blocked"] is False


def test_hooks_list_has_a_rules_row_naming_the_tiers(project: Path, kodelet_home: Path) -> None:
    assert all(r["name"] != "builtin:rules" for r in _hook_rows(project))
    rules_file(Path(os.environ["KODELET_MANAGED_DIR"]), NO_FORCE_PUSH)
    rules_file(project / ".kodelet", 'use = ["recommended"]\n')
    [row] = [r for r in _hook_rows(project) if r["name"] == "builtin:rules"]
    assert row["event"] == "before_tool_call" and row["status"] == "active"
    assert row["reason"].startswith("rules in force: managed 2, recommended@project ")
    text = kodelet(project, "hooks", "list").stdout
    assert "builtin:rules" in text and "managed 2" in text


def _hook_rows(project: Path) -> list[dict[str, object]]:
    res = kodelet(project, "hooks", "list", "--json")
    assert res.returncode == 0, res.stderr
    rows: list[dict[str, object]] = json.loads(res.stdout)
    return rows


def test_an_agents_status_names_the_rules_in_force(project: Path) -> None:
    rules_file(Path(os.environ["KODELET_MANAGED_DIR"]), NO_FORCE_PUSH)
    res = kodelet(project, "codex", "status")
    assert "builtin:rules (builtin): rules in force: managed 2" in res.stdout, res.stdout


def test_the_warm_kodelet_sees_a_managed_rule_file_written_after_it_started(
    project: Path,
) -> None:
    from tests.kit.warm import warm_env

    payload = json.dumps({"tool_name": "bash", "tool_input": {"command": "git push -f"}})

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kodelet", "--cwd", str(project), "hooks", "run",
             "before_tool_call", "-p", "-", "--daemon"],
            input=payload, capture_output=True, text=True, env=warm_env(), timeout=120,
        )  # fmt: skip

    before = run()
    assert before.returncode == 0, before.stderr
    assert json.loads(before.stdout)["blocked"] is False
    rules_file(Path(os.environ["KODELET_MANAGED_DIR"]), NO_FORCE_PUSH)
    after = run()
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["reason"].startswith("kodelet rule no-force-push (managed)")


def test_explain_names_the_unknown_command_rule(project: Path) -> None:
    rules_file(project / ".kodelet", NO_FORCE_PUSH.replace('"ask"  #', '"deny"  #'))
    res = kodelet(project, "rules", "explain", "$CMD -rf /")
    assert "(decided at run time)" in res.stdout
    assert "deny  builtin:unknown-command" in res.stdout
    assert "decided: deny by builtin:unknown-command (project)" in res.stdout


def test_hooks_list_says_a_refused_rule_file_blocks_every_call(
    project: Path, tmp_path: Path
) -> None:
    target = rules_file(tmp_path / "elsewhere", NO_FORCE_PUSH)
    link = project / ".kodelet" / "rules.toml"
    link.symlink_to(target)
    [row] = [r for r in _hook_rows(project) if r["name"] == "builtin:rules"]
    assert str(row["reason"]).startswith(f"blocks every tool call: rule file {link} is refused")
    listed = kodelet(project, "rules", "list")
    assert listed.returncode == 2
    assert f"rule file {link} is refused: it is a symbolic link" in listed.stderr

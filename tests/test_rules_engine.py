"""The rules engine: the rule file format, matching, tiers and precedence, and the
``builtin:rules`` guard as a runtime registers it.

Facts are built by hand here (the parse is tests/test_rules_shell.py's subject), so each
case says exactly which facts a rule is matched against."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kodelet import hookimpl, load_runtime
from kodelet.events import Event
from kodelet.payloads import BeforeToolCallPayload
from kodelet.rules.engine import UNKNOWN, Engine
from kodelet.rules.facts import Command, Facts, Flow, PathFact
from kodelet.rules.ruleset import RuleFile, RuleFileError, parse

HOME = "/home/u"
PROJECT = "/work/p"


def path(raw: str, zone: str, real: str | None = None) -> PathFact:
    return PathFact(raw=raw, path=real or raw, zone=zone, glob=False)  # type: ignore[arg-type]


def cmd(program: str, **kw: Any) -> Command:
    fields: dict[str, Any] = {
        "program": program,
        "dynamic": False,
        "subcommand": "",
        "flags": frozenset(),
        "args": (),
        "paths": (),
        "writes": (),
        "reads": (),
        "via": (),
        "stdin_from": (),
        "text": program,
    }
    fields.update(kw)
    fields["flags"] = frozenset(fields["flags"])
    return Command(**fields)


def facts(*commands: Command, kind: str = "shell", tool: str = "bash", **kw: Any) -> Facts:
    fields: dict[str, Any] = {
        "tool": tool,
        "kind": kind,
        "cwd": PROJECT,
        "project": PROJECT,
        "home": HOME,
        "commands": commands,
        "files": (),
        "writes": tuple(p for c in commands for p in c.writes),
        "reads": tuple(p for c in commands for p in c.reads),
        "flows": (),
        "dynamic": any(c.dynamic for c in commands),
        "parse_error": "",
    }
    fields.update(kw)
    return Facts(**fields)


def rules(text: str, tier: str = "project", origin: str = "") -> RuleFile:
    return parse(textwrap.dedent(text), tier=tier, origin=origin or f"/{tier}/rules.toml")  # type: ignore[arg-type]


RM_HOME = """
[[rules]]
name = "no-rm-home"
decision = "deny"
reason = "Deleting in your home folder; delete inside the project."
program = ["rm"]
flags = ["recursive"]
zone = ["home", "home_root"]
"""

RM_HOME_CALL = facts(
    cmd(
        "rm",
        flags={"recursive", "force"},
        paths=(path("~/x", "home", f"{HOME}/x"),),
        writes=(path("~/x", "home", f"{HOME}/x"),),
    )
)

ALLOW_RM = """
[[rules]]
name = "let-rm"
decision = "allow"
program = ["rm"]
"""

# A stand-in for the shipped set: the engine reads this instead of recommended.toml.
RECOMMENDED = """
[[rules]]
name = "rec-no-rm-home"
decision = "deny"
reason = "recommended: no deleting in home"
program = ["rm"]
zone = ["home", "home_root"]
"""
SETS = {"recommended": RECOMMENDED}


def decide(files: list[RuleFile], f: Facts) -> tuple[str, str, str]:
    v = Engine(files, sets=SETS).judge(f)
    return v.decision, v.rule, v.source


# -- precedence and tiers ---------------------------------------------------------------


def test_a_project_allow_does_not_lift_a_user_deny() -> None:
    user, project = rules(RM_HOME, "user"), rules(ALLOW_RM, "project")
    assert decide([project, user], RM_HOME_CALL) == ("deny", "no-rm-home", "user")


def test_a_user_allow_lifts_a_project_deny() -> None:
    user, project = rules(ALLOW_RM, "user"), rules(RM_HOME, "project")
    v = Engine([user, project]).judge(RM_HOME_CALL)
    assert (v.decision, v.rule, v.source) == ("allow", "let-rm", "user")
    assert ("project", "no-rm-home", "deny") in v.matched


def test_a_hostile_project_cannot_disable_or_allow_past_a_managed_or_user_rule() -> None:
    managed = rules(RM_HOME, "managed")
    user = rules(RM_HOME.replace("no-rm-home", "mine"), "user")
    hostile = rules(
        'disable = ["no-rm-home", "mine", "rec-no-rm-home"]\non_unknown = "ask"\n' + ALLOW_RM,
        "project",
    )
    engine = Engine([hostile, user, managed], sets=SETS)
    v = engine.judge(RM_HOME_CALL)
    assert (v.decision, v.rule, v.source) == ("deny", "no-rm-home", "managed")
    assert not engine.disabled  # no disable reached a stronger tier
    # Without the managed rule, the user's own still holds.
    assert decide([hostile, user], RM_HOME_CALL) == ("deny", "mine", "user")


def test_a_user_cannot_disable_or_lift_a_managed_rule() -> None:
    managed = rules(RM_HOME, "managed")
    user = rules('disable = ["no-rm-home"]\n' + ALLOW_RM, "user")
    assert decide([user, managed], RM_HOME_CALL) == ("deny", "no-rm-home", "managed")


def test_the_recommended_set_sits_under_the_tier_that_turned_it_on() -> None:
    # Turned on by the user: the project can neither disable nor lift it.
    user = rules('use = ["recommended"]', "user")
    project = rules('disable = ["rec-no-rm-home"]\n' + ALLOW_RM, "project")
    assert decide([user, project], RM_HOME_CALL) == ("deny", "rec-no-rm-home", "recommended")
    # Turned on by the project only: the project's own disable and allow work.
    project_on = rules('use = ["recommended"]\ndisable = ["rec-no-rm-home"]', "project")
    assert decide([project_on], RM_HOME_CALL)[0] == "none"
    project_allow = rules('use = ["recommended"]\n' + ALLOW_RM, "project")
    assert decide([project_allow], RM_HOME_CALL) == ("allow", "let-rm", "project")
    # The user's disable switches off the set the user turned on.
    user_off = rules('use = ["recommended"]\ndisable = ["rec-no-rm-home"]', "user")
    assert decide([user_off], RM_HOME_CALL)[0] == "none"


def test_in_one_tier_the_most_severe_decision_wins_and_allow_lifts_nothing() -> None:
    same = rules(
        ALLOW_RM
        + RM_HOME
        + """
[[rules]]
name = "ask-rm"
decision = "ask"
reason = "asks"
program = ["rm"]
""",
        "user",
    )
    v = Engine([same]).judge(RM_HOME_CALL)
    assert (v.decision, v.rule) == ("deny", "no-rm-home")
    assert [m[1] for m in v.matched] == ["let-rm", "no-rm-home", "ask-rm"]


def test_no_matching_rule_is_no_decision() -> None:
    f = facts(cmd("ls", paths=(path(".", "project_root", PROJECT),)))
    assert decide([rules(RM_HOME, "user")], f) == ("none", "", "")


# -- unknown commands ---------------------------------------------------------------------


DYNAMIC = facts(cmd("", dynamic=True, text="$X -rf ~"))


def test_a_dynamic_program_is_asked_about_by_default() -> None:
    v = Engine([rules(RM_HOME, "project")]).judge(DYNAMIC)
    assert (v.decision, v.rule, v.source) == ("ask", UNKNOWN, "builtin")
    assert "`$X -rf ~` runs a program decided only when it runs" in v.reason


def test_on_unknown_of_the_strongest_tier_that_sets_it_decides() -> None:
    managed = rules('on_unknown = "deny"', "managed")
    project = rules('on_unknown = "ask"\n' + RM_HOME, "project")
    v = Engine([project, managed]).judge(facts(parse_error="unclosed quote"))
    assert (v.decision, v.rule, v.source) == ("deny", UNKNOWN, "managed")
    assert "cannot be parsed (unclosed quote)" in v.reason


def test_no_allow_rule_lifts_an_unknown_command() -> None:
    user = rules(RM_HOME, "user")
    project = rules('[[rules]]\nname = "all"\ndecision = "allow"\ntool = ["shell"]\n', "project")
    managed_allow = rules(
        '[[rules]]\nname = "m"\ndecision = "allow"\ntool = ["shell"]\n', "managed"
    )
    assert decide([user, project], DYNAMIC)[:2] == ("ask", UNKNOWN)
    assert decide([managed_allow, user], DYNAMIC)[:2] == ("ask", UNKNOWN)


def test_without_any_rule_an_unknown_command_is_let_be() -> None:
    assert decide([rules("use = []", "project")], DYNAMIC)[0] == "none"


# -- matching ----------------------------------------------------------------------------


def test_command_fields_must_hold_for_the_same_command() -> None:
    # rm -r inside the project, and ls of the home folder: no one command is both.
    f = facts(
        cmd("rm", flags={"recursive"}, paths=(path("build", "project", f"{PROJECT}/build"),)),
        cmd("ls", paths=(path("~", "home_root", HOME),)),
    )
    assert decide([rules(RM_HOME, "user")], f)[0] == "none"


def test_flags_all_of_and_any_of() -> None:
    text = """
[[rules]]
name = "force-push"
decision = "deny"
reason = "no force push"
program = ["git"]
subcommand = ["push"]
any_flags = ["force", "force-with-lease"]
"""
    push = cmd("git", subcommand="push", flags={"force-with-lease"})
    assert decide([rules(text)], facts(push))[0] == "deny"
    assert decide([rules(text)], facts(cmd("git", subcommand="push")))[0] == "none"
    assert (
        decide([rules(text)], facts(cmd("git", subcommand="fetch", flags={"force"})))[0] == "none"
    )


def test_via_reads_globs_and_flows() -> None:
    text = """
[[rules]]
name = "ssh-keys"
decision = "deny"
reason = "reads your ssh keys"
reads = ["~/.ssh/**"]

[[rules]]
name = "env-files"
decision = "ask"
reason = "an .env file"
path = ["**/.env", "*.pem"]

[[rules]]
name = "exfil"
decision = "deny"
reason = "secrets to the network"
flow = ["secret-file->network"]

[[rules]]
name = "xargs-rm"
decision = "ask"
reason = "rm through xargs"
program = ["rm"]
via = ["xargs"]
"""
    rf = rules(text, "user")
    key = path("~/.ssh/id_ed25519", "home", f"{HOME}/.ssh/id_ed25519")
    assert decide([rf], facts(cmd("cat", reads=(key,), paths=(key,))))[1] == "ssh-keys"
    env = path("sub/.env", "project", f"{PROJECT}/sub/.env")
    assert decide([rf], facts(cmd("cat", reads=(env,), paths=(env,))))[1] == "env-files"
    pem = path("k.pem", "tmp", "/tmp/x/k.pem")
    assert decide([rf], facts(cmd("cat", reads=(pem,), paths=(pem,))))[1] == "env-files"
    flow = facts(cmd("curl"), flows=(Flow(source="secret-file", sink="curl"),))
    assert decide([rf], flow)[1] == "exfil"
    assert decide([rf], facts(cmd("curl"), flows=(Flow(source="env", sink="curl"),)))[0] == "none"
    assert decide([rf], facts(cmd("rm", via=("xargs",))))[1] == "xargs-rm"
    assert decide([rf], facts(cmd("rm")))[0] == "none"


def test_a_file_tool_is_matched_by_its_path() -> None:
    text = """
[[rules]]
name = "dotfiles"
decision = "deny"
reason = "writes a file in your home folder"
tool = ["write", "edit"]
writes_zone = ["home", "home_root"]

[[rules]]
name = "no-rm-on-files"
decision = "deny"
reason = "never for a file tool"
program = ["rm"]
"""
    bashrc = path("~/.bashrc", "home", f"{HOME}/.bashrc")
    write = facts(kind="write", tool="file_write", files=(bashrc,), writes=(bashrc,))
    assert decide([rules(text)], write)[:2] == ("deny", "dotfiles")
    read = facts(kind="read", tool="file_read", files=(bashrc,), reads=(bashrc,))
    assert decide([rules(text)], read)[0] == "none"


# -- CEL conditions ------------------------------------------------------------------------


CHMOD = """
[[rules]]
name = "chmod-777"
decision = "ask"
reason = "world-writable"
when = 'cmd.program == "chmod" && "777" in cmd.args'
"""


def test_a_cel_condition_is_evaluated_per_command() -> None:
    rf = rules(CHMOD)
    assert decide([rf], facts(cmd("ls"), cmd("chmod", args=("777", "x"))))[:2] == (
        "ask",
        "chmod-777",
    )
    assert decide([rf], facts(cmd("chmod", args=("644", "x"))))[0] == "none"
    # A condition on a command never matches a call without one.
    bashrc = path("~/.bashrc", "home", f"{HOME}/.bashrc")
    assert decide([rf], facts(kind="write", tool="file_write", files=(bashrc,)))[0] == "none"


def test_a_cel_condition_sees_the_whole_call() -> None:
    rf = rules(
        """
[[rules]]
name = "big-pipeline"
decision = "ask"
reason = "more than two commands"
tool = ["shell"]
when = 'size(call.commands) > 2 && call.cwd.startsWith("/work")'
"""
    )
    assert decide([rf], facts(cmd("a"), cmd("b"), cmd("c")))[0] == "ask"
    assert decide([rf], facts(cmd("a"), cmd("b")))[0] == "none"


class _Raising:
    """A compiled CEL program that raises on every call, as a transpiler bug would."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        pass

    def evaluate(self, activation: Any) -> Any:
        raise TypeError("transpiler bug")


@pytest.mark.parametrize("stage", ["compile", "evaluate"])
def test_a_condition_the_transpiler_fails_on_is_decided_by_the_interpreter(
    monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    """Conditions run transpiled for speed; where cel-python's transpiler cannot compile
    one or raises on a call, the interpreter's answer stands (not a fail-closed deny)."""
    import celpy

    if stage == "compile":

        class Failing(celpy.CompiledRunner):  # type: ignore[misc]
            def __init__(self, *args: Any, **kw: Any) -> None:
                raise ValueError("cannot transpile")

        monkeypatch.setattr(celpy, "CompiledRunner", Failing)
    else:
        monkeypatch.setattr(celpy, "CompiledRunner", _Raising)
    rf = rules(CHMOD)
    assert decide([rf], facts(cmd("chmod", args=("777", "x"))))[0] == "ask"
    assert decide([rf], facts(cmd("chmod", args=("644", "x"))))[0] == "none"


def test_a_cel_error_fails_closed_for_deny_and_open_for_allow() -> None:
    deny = rules(
        '[[rules]]\nname = "d"\ndecision = "deny"\nreason = "r"\nwhen = "cmd.nosuch > 1"\n',
        "project",
    )
    allow = rules(
        '[[rules]]\nname = "a"\ndecision = "allow"\nwhen = "cmd.nosuch > 1"\n' + RM_HOME,
        "user",
    )
    assert decide([deny], facts(cmd("ls")))[:2] == ("deny", "d")
    # The allow rule errs, so it lifts nothing: the user's deny stands.
    assert decide([allow], RM_HOME_CALL)[:2] == ("deny", "no-rm-home")


# -- bad files -----------------------------------------------------------------------------

BAD = [
    ('[[rules]]\nname = "x"\ndecision = "deny"\nreason = "r"\nprogam = ["rm"]\n',
     "rule 'x' (rules[0]): unknown key 'progam' (did you mean 'program'?)"),
    ('[[rules]]\nname = "x"\ndecision = "block"\nreason = "r"\n',
     'decision = \'block\'; write decision = "deny", "ask" or "allow"'),
    ('[[rules]]\nname = "x"\ndecision = "deny"\n', "a deny rule needs a reason"),
    ('[[rules]]\nname = "No Force"\ndecision = "deny"\nreason = "r"\n', "bad name"),
    ('[[rules]]\nname = "x"\ndecision = "allow"\n[[rules]]\nname = "x"\ndecision = "allow"\n',
     "rule 'x' (rules[1]) has the name of an earlier rule"),
    ('[[rules]]\nname = "x"\ndecision = "deny"\nreason = "r"\nzone = ["hom"]\n',
     "zone has 'hom', which is no zone (did you mean 'home'?)"),
    ('[[rules]]\nname = "x"\ndecision = "deny"\nreason = "r"\ntool = ["bash"]\n',
     "tool has 'bash', which is no tool"),
    ('[[rules]]\nname = "x"\ndecision = "deny"\nreason = "r"\nflow = ["env>curl"]\n',
     "flow has 'env>curl'; write SOURCE->SINK"),
    ('[[rules]]\nname = "x"\ndecision = "deny"\nreason = "r"\nflags = ["-f"]\n',
     "flags are written without dashes"),
    ('use = ["recomended"]\n', "no rule set"),
    ('on_unknown = "allow"\n', 'write on_unknown = "ask" or "deny"'),
    ('rules = 3\n', "rules must be an array of tables"),
    ('[[rules]\n', "not valid TOML"),
    ('[[tests]]\ncommand = "ls"\nexpect = "maybe"\n', 'tests[0]: write expect = "deny"'),
]  # fmt: skip


@pytest.mark.parametrize(("text", "needle"), BAD)
def test_a_bad_rule_file_is_one_line_naming_file_rule_and_fix(text: str, needle: str) -> None:
    with pytest.raises(RuleFileError) as err:
        parse(text, tier="project", origin="/p/.kodelet/rules.toml")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("/p/.kodelet/rules.toml: ")
    assert needle in message


def test_a_condition_that_is_not_cel_is_refused_when_the_engine_is_built() -> None:
    rf = rules('[[rules]]\nname = "x"\ndecision = "deny"\nreason = "r"\nwhen = "cmd.program =="\n')
    with pytest.raises(RuleFileError) as err:
        Engine([rf])
    assert "\n" not in str(err.value)
    assert "rule 'x': when is not a CEL expression" in str(err.value)


def test_tests_cases_are_read() -> None:
    rf = rules(
        """
[[tests]]
command = "git push -f"
expect = "deny"
rule = "no-force-push"

[[tests]]
name = "dotfile"
tool = "file_write"
input = {file_path = "~/.bashrc", text = "x"}
cwd = "sub"
expect = "ask"
"""
    )
    first, second = rf.tests
    assert (first.tool, dict(first.input), first.rule) == (
        "bash",
        {"command": "git push -f"},
        "no-force-push",
    )
    assert (second.label, second.tool, second.cwd, second.expect) == (
        "dotfile",
        "file_write",
        "sub",
        "ask",
    )


# -- the guard in a runtime ------------------------------------------------------------------


def _write_rules(where: Path, text: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    f = where / "rules.toml"
    f.write_text(textwrap.dedent(text))
    return f


def _call(project: Path, tool: str = "file_write", **tool_input: Any) -> Any:
    payload = BeforeToolCallPayload(
        conv_id="c",
        cwd=str(project),
        tool_name=tool,
        tool_input=tool_input or {"file_path": str(project / "x.txt"), "text": "x"},
    )
    with load_runtime(cwd=project, entry_points=False) as rt:
        return rt.dispatch(payload).result


DENY_ALL_WRITES = """
[[rules]]
name = "no-writes"
decision = "deny"
reason = "no writing today"
tool = ["write"]
"""


def test_a_rule_file_blocks_a_call_through_the_runtime(project: Path) -> None:
    _write_rules(project / ".kodelet", DENY_ALL_WRITES)
    result = _call(project)
    assert result.blocked
    assert result.reason == "kodelet rule no-writes (project): no writing today"


def test_an_ask_rule_asks(project: Path) -> None:
    _write_rules(project / ".kodelet", DENY_ALL_WRITES.replace('"deny"', '"ask"'))
    result = _call(project)
    assert result.ask and result.blocked
    assert result.reason.startswith("kodelet rule no-writes (project): ")


def test_a_managed_rule_file_is_read_from_its_folder(project: Path) -> None:
    _write_rules(Path(os.environ["KODELET_MANAGED_DIR"]), DENY_ALL_WRITES)
    assert _call(project).reason == "kodelet rule no-writes (managed): no writing today"


def test_a_symlinked_rule_file_blocks_every_call_naming_it(project: Path, tmp_path: Path) -> None:
    real = _write_rules(tmp_path / "elsewhere", "use = []\n")
    (project / ".kodelet" / "rules.toml").symlink_to(real)
    result = _call(project)
    assert result.blocked
    assert f"rule file {project / '.kodelet' / 'rules.toml'} is refused" in result.reason
    assert "symbolic link" in result.reason and "fix:" in result.reason


def test_a_world_writable_rule_file_blocks_every_call(kodelet_home: Path, project: Path) -> None:
    f = _write_rules(kodelet_home, DENY_ALL_WRITES)
    f.chmod(0o666)
    result = _call(project, "file_read", file_path=str(project / "x"))
    assert result.blocked
    assert f"chmod o-w {f}" in result.reason


def test_a_bad_rule_file_blocks_every_call_with_its_error(project: Path) -> None:
    f = _write_rules(project / ".kodelet", '[[rules]]\nname = "x"\ndecision = "nope"\n')
    result = _call(project, "file_read", file_path=str(project / "x"))
    assert result.blocked
    assert f"{f}: rule 'x' (rules[0]): decision = 'nope'" in result.reason


def test_a_project_config_cannot_switch_the_rules_off(kodelet_home: Path, project: Path) -> None:
    _write_rules(kodelet_home, DENY_ALL_WRITES)
    (project / ".kodelet" / "config.toml").write_text(
        '[hooks]\ndisabled = ["builtin:rules"]\n[hooks."builtin:rules"]\nenabled = false\n'
    )
    assert _call(project).blocked


def test_the_rules_judge_the_input_as_the_users_hooks_rewrote_it(project: Path) -> None:
    # The rule matches only the rewritten path: blocked means it judged what would run.
    _write_rules(
        project / ".kodelet",
        '[[rules]]\nname = "other"\ndecision = "deny"\nreason = "r"\npath = ["other"]\n',
    )

    class Rewriter:
        @hookimpl
        def before_tool_call(self, tool_input: dict[str, Any]) -> dict[str, Any]:
            return {"input": {**tool_input, "file_path": str(project / "other")}}

    payload = BeforeToolCallPayload(
        conv_id="c", cwd=str(project), tool_name="file_read",
        tool_input={"file_path": str(project / "x")},
    )  # fmt: skip
    with load_runtime(cwd=project, entry_points=False, plugins=[("rewriter", Rewriter())]) as rt:
        names = [h.name for h in rt.hooks(Event.BEFORE_TOOL_CALL)]
        result = rt.dispatch(payload).result
    assert names.index("rewriter") < names.index("builtin:rules")
    assert result.blocked
    assert result.reason == "kodelet rule other (project): r"


def test_without_rule_files_nothing_of_the_rules_is_imported(tmp_path: Path, project: Path) -> None:
    code = (
        "import sys, json\nfrom kodelet import load_runtime\n"
        "rt = load_runtime(entry_points=False)\n"
        "print(json.dumps([sorted(m for m in sys.modules if m.startswith(('kodelet.rules', "
        "'celpy', 'tree_sitter'))), [p.name for p in rt.plugins]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True
    )
    modules, plugins = json.loads(out.stdout)
    assert modules == []
    assert "builtin:rules" not in plugins
    _write_rules(project / ".kodelet", DENY_ALL_WRITES)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True
    )
    modules, plugins = json.loads(out.stdout)
    assert "builtin:rules" in plugins
    assert "celpy" not in modules  # no condition: CEL is never imported


def test_a_run_time_program_is_asked_about_in_the_runtime(project: Path) -> None:
    _write_rules(project / ".kodelet", DENY_ALL_WRITES)
    result = _call(project, "bash", command="X=$(cat cmd.txt); $X -rf ~")
    assert result.ask
    assert result.reason.startswith(f"kodelet rule {UNKNOWN} (builtin): ")
    assert _call(project, "bash", command="ls -la").blocked is False


def test_the_rules_stay_with_no_hooks(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_rules(project / ".kodelet", DENY_ALL_WRITES)
    monkeypatch.setenv("KODELET_NO_HOOKS", "1")
    payload = BeforeToolCallPayload(
        conv_id="c", cwd=str(project), tool_name="file_write",
        tool_input={"file_path": str(project / "x"), "text": "x"},
    )  # fmt: skip
    with load_runtime(cwd=project) as rt:
        assert rt.no_hooks
        assert rt.dispatch(payload).result.reason.startswith("kodelet rule no-writes (project)")


BAD_CEL = """
[[rules]]
name = "bad-when"
decision = "deny"
reason = "r"
program = ["git"]
when = 'cmd.program =='
"""


def test_a_condition_that_does_not_compile_blocks_from_the_first_call_reaching_it(
    project: Path,
) -> None:
    f = _write_rules(project / ".kodelet", BAD_CEL)
    payloads = [
        BeforeToolCallPayload(
            conv_id="c", cwd=str(project), tool_name="bash", tool_input={"command": command}
        )
        for command in ("ls", "git status", "ls")
    ]
    with load_runtime(cwd=project, entry_points=False) as rt:
        first, second, third = (rt.dispatch(p).result for p in payloads)
    assert not first.blocked  # no rule for `ls` has a condition to compile
    assert second.blocked and third.blocked
    assert f"{f}: rule 'bad-when': when is not a CEL expression" in second.reason
    assert third.reason == second.reason


def test_a_call_reaching_no_condition_does_not_import_cel(project: Path) -> None:
    _write_rules(project / ".kodelet", 'use = ["recommended"]\n')
    code = (
        "import sys, json\nfrom kodelet import load_runtime\n"
        "from kodelet.payloads import BeforeToolCallPayload as P\n"
        "rt = load_runtime(entry_points=False)\n"
        "r = rt.dispatch(P(conv_id='c', cwd='.', tool_name='bash', "
        "tool_input={'command': 'ls -la'})).result\n"
        "print(json.dumps([r.blocked, 'celpy' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.splitlines()[-1]) == [False, False]


def test_one_engine_answers_calls_from_many_threads_as_it_answers_them_one_by_one() -> None:
    # The warm kodelet answers calls in threads over one engine (parse cache, tree-sitter,
    # kept condition answers): each thread must get the answer a lone call gets.
    import threading

    engine = Engine([rules('use = ["recommended"]')])
    commands = [f"rm -rf build{i} ~/x{i} | tee log; git push -f o b{i}" for i in range(40)]
    commands += [f"ls src{i} && pytest -k t{i}" for i in range(40)]

    def verdict(command: str) -> tuple[str, str]:
        v = engine.decide("bash", {"command": command}, cwd=PROJECT, project=PROJECT, home=HOME)
        return v.decision, v.rule

    alone = {c: verdict(c) for c in commands}
    got: list[tuple[str, tuple[str, str]]] = []
    failures: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(200):
                c = commands[(k * 7 + i * 13) % len(commands)]
                got.append((c, verdict(c)))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert len(got) == 1200
    assert all(alone[c] == v for c, v in got)
    assert {d for d, _ in alone.values()} >= {"deny", "none"}


def test_warming_a_runtime_builds_the_rules_engine_and_every_condition(project: Path) -> None:
    """The warm kodelet warms its runtime as it starts: the rules' engine, the bash
    grammar and every condition are built then, not by the first calls."""
    _write_rules(project / ".kodelet", 'use = ["recommended"]\n')
    with load_runtime(cwd=project, entry_points=False) as rt:
        guard = rt.pm.get_plugin("builtin:rules")
        assert guard._engine is None
        rt.warm_up(str(project))
        engine = guard._engine
        assert engine is not None and engine._parser is not None
        conditions = [m for _, ms in engine._matchers for m in ms if m.rule.when]
        assert conditions and all(m._program is not None for m in conditions)
        payload = BeforeToolCallPayload(
            conv_id="c", cwd=".", tool_name="bash", tool_input={"command": "git push --force"}
        )
        assert rt.dispatch(payload).result.blocked

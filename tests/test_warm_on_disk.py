"""A warm answer is the answer the in-process path gives for the files on disk at the
time of the call, and a warm kodelet that does not take a call in time never holds it
up nor runs its guard a second time. Real clients, real warm kodelets, a real venv
for native plugins."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kodelet.places import Places
from kodelet.warm import control, fingerprint

from tests.kit.warm import (
    GUARD,
    decision,
    hook,
    pre_tool,
    started,
    wait_for,
    warm,
    warm_env,
    write_guard,
)
from tests.kit.wheels import purelib, venv_seeing_this_interpreter

COUNTING = GUARD.replace("run) if", 'run) echo run >> "$0.runs"; if')
"""A guard that leaves one line per run beside itself: what a side effect looks like."""

PLUGIN = """from kodelet import BeforeToolCallResult, hookimpl
from {words} import REASON


@hookimpl
def before_tool_call(tool_input):
    if REASON and "rm -rf" in str(tool_input.get("command", "")):
        return BeforeToolCallResult(blocked=True, reason=REASON)
    return None
"""


def runs(hook_file: Path) -> int:
    path = hook_file.with_name(hook_file.name + ".runs")
    return len(path.read_text().splitlines()) if path.exists() else 0


def status() -> dict[str, Any]:
    return control.ask(warm()[0]["socket"], "status")


@pytest.fixture
def guarded(project: Path) -> Path:
    (project / ".git").mkdir()
    write_guard(project)
    return project


@pytest.fixture
def venv(tmp_path: Path) -> tuple[str, Path]:
    """A venv that sees this kodelet, and its site-packages for native plugins."""
    python = venv_seeing_this_interpreter(tmp_path / "venv")
    return python, Path(purelib(python))


def install_plugin(site: Path, module: str, files: dict[str, str]) -> None:
    """Native plugin ``module`` (its files, relative to ``site``) with its dist-info."""
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[kodelet.plugins]\nprobe = {module}\n")
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    record = [*files, f"{info.name}/METADATA", f"{info.name}/entry_points.txt"]
    (info / "RECORD").write_text("".join(f"{name},,\n" for name in record))


def test_an_edited_native_plugin_answers_with_its_new_code(
    guarded: Path, venv: tuple[str, Path]
) -> None:
    python, site = venv
    module = site / "kp_probe_words.py"
    install_plugin(
        site,
        "kp_probe",
        {"kp_probe.py": PLUGIN.format(words="kp_probe_words"), module.name: "REASON = ''\n"},
    )
    (guarded / ".kodelet" / "hooks" / "guard").unlink()
    env = warm_env()
    assert decision(hook(guarded, pre_tool(guarded), python=python, env=env)) is None
    wait_for(warm)
    assert decision(hook(guarded, pre_tool(guarded), python=python, env=env)) is None
    plugin = site / "kp_probe.py"
    plugin.write_text(PLUGIN.format(words="kp_probe_words").replace("REASON and ", ""))
    module.write_text("REASON = 'the new code'\n")
    assert decision(hook(guarded, pre_tool(guarded), python=python, env=env)) == "the new code"
    module.write_text("REASON = 'and its helper, edited in place'\n")
    here = hook(guarded, pre_tool(guarded), python=python, env=warm_env(KODELET_DAEMON="0"))
    assert decision(here) == "and its helper, edited in place"
    assert decision(hook(guarded, pre_tool(guarded), python=python, env=env)) == decision(here)
    assert status()["calls"] == 3


LAZY = """from kodelet import BeforeToolCallResult, hookimpl


@hookimpl
def before_tool_call(tool_input):
    from kp_lazy_words import REASON  # imported at its first call, not when loaded

    if "rm -rf" in str(tool_input.get("command", "")):
        return BeforeToolCallResult(blocked=True, reason=REASON)
    return None
"""


def test_a_module_a_plugin_imports_at_call_time_answers_with_its_new_code(
    guarded: Path, venv: tuple[str, Path]
) -> None:
    python, site = venv
    words = site / "kp_lazy_words.py"
    install_plugin(site, "kp_lazy", {"kp_lazy.py": LAZY, words.name: "REASON = 'first'\n"})
    (guarded / ".kodelet" / "hooks" / "guard").unlink()
    env = warm_env()
    assert decision(hook(guarded, pre_tool(guarded), env, python)) == "first"
    wait_for(warm)
    assert decision(hook(guarded, pre_tool(guarded), env, python)) == "first"
    words.write_text("REASON = 'second, edited in place'\n")
    here = hook(guarded, pre_tool(guarded), warm_env(KODELET_DAEMON="0"), python)
    assert decision(here) == "second, edited in place"
    assert decision(hook(guarded, pre_tool(guarded), env, python)) == decision(here)
    assert status()["calls"] == 2


def test_the_executable_bit_is_part_of_what_is_checked(guarded: Path) -> None:
    started(guarded)
    guard = guarded / ".kodelet" / "hooks" / "guard"
    for mode in (0o644, 0o755, 0o644):
        guard.chmod(mode)
        there = hook(guarded, pre_tool(guarded))
        here = hook(guarded, pre_tool(guarded), warm_env(KODELET_DAEMON="0"))
        assert (there.returncode, there.stdout) == (here.returncode, here.stdout)
    assert status()["calls"] == 3


def test_an_in_place_guard_edit_in_a_large_tree_is_seen(guarded: Path) -> None:
    data = guarded / ".kodelet" / "plugins" / "acme@big" / "data"
    for i in range(50):
        (data / f"d{i:02}").mkdir(parents=True)
        for j in range(100):
            (data / f"d{i:02}" / f"f{j:03}").write_bytes(b"")
    started(guarded)
    assert decision(hook(guarded, pre_tool(guarded))) == "no rm"
    guard = guarded / ".kodelet" / "hooks" / "guard"
    with guard.open("r+") as f:  # the same file, edited in place: it now guards another event
        text = f.read()
        f.seek(0)
        f.write(text.replace("echo before_tool_call", "echo  after_tool_call"))
    assert decision(hook(guarded, pre_tool(guarded))) is None
    deep = data / "d49" / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    (deep / "guard").write_text(GUARD)
    assert decision(hook(guarded, pre_tool(guarded))) is None
    assert status()["calls"] == 3


def test_a_stopped_warm_kodelet_is_passed_by_and_never_runs_the_call(guarded: Path) -> None:
    guard = guarded / ".kodelet" / "hooks" / "guard"
    guard.write_text(COUNTING.replace("MARK", "no rm"))
    pid = started(guarded)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        # Without a bound the client would wait for the stopped warm kodelet forever.
        env = warm_env(KODELET_DAEMON_ACK="0.5")
        proc = hook(guarded, pre_tool(guarded), env, timeout=60)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert decision(proc) == "no rm"
    assert "did not take the call" in proc.stderr
    assert runs(guard) == 2  # the first call and this one, both answered in-process
    # Resumed, it finds the call given up and runs nothing for it.
    wait_for(lambda: status()["abandoned"] == 1)
    assert status()["calls"] == 0
    assert runs(guard) == 2
    assert decision(hook(guarded, pre_tool(guarded))) == "no rm"
    assert (runs(guard), status()["calls"]) == (3, 1)


def test_a_bad_acknowledgement_bound_is_the_default(guarded: Path) -> None:
    started(guarded)
    proc = hook(guarded, pre_tool(guarded), warm_env(KODELET_DAEMON_ACK="soon"))
    assert decision(proc) == "no rm"
    assert status()["calls"] == 1


def test_a_settled_directory_is_listed_once_and_its_changes_still_seen(
    guarded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = warm_env()
    places = Places.resolve(guarded, None, env)
    hooks = guarded / ".kodelet" / "hooks"
    assert str(hooks) not in fingerprint.fingerprint(places, env).listings  # just written
    monkeypatch.setattr(fingerprint, "RACY", 0.05)
    settled = hooks.stat().st_ctime_ns + 100_000_000
    wait_for(lambda: time.time_ns() > settled)
    first = fingerprint.fingerprint(places, env)
    again = fingerprint.fingerprint(places, env, first)
    assert again.listings[str(hooks)] is first.listings[str(hooks)]  # not read again
    assert first.changed(again) is None
    (hooks / "new").write_text(GUARD)
    added = fingerprint.fingerprint(places, env, again)
    assert again.changed(added) == str(hooks)  # its entries changed, so it is read again
    assert str(hooks / "new") in added.paths()
    (hooks / "guard").write_text(GUARD + "# edited in place\n")
    edited = fingerprint.fingerprint(places, env, added)
    assert added.changed(edited) == str(hooks / "guard")


# -- the differential test -------------------------------------------------------------


class Project:
    """A project whose hooks, plugins and trees a seeded random walk changes between
    calls, each call answered by the warm kodelet and in-process and compared."""

    def __init__(self, root: Path, python: str, site: Path, rng: random.Random) -> None:
        self.root, self.python, self.site, self.rng = root, python, site, rng
        self.hooks = root / ".kodelet" / "hooks"
        self.repo = root / ".kodelet" / "plugins" / "acme@guards" / "hooks"
        self.repo.mkdir(parents=True)
        self.words = site / "kp_diff" / "words.py"
        install_plugin(
            site,
            "kp_diff",
            {
                "kp_diff/__init__.py": PLUGIN.format(words=".words"),
                "kp_diff/words.py": "REASON = ''\n",
            },
        )
        self.trees = 0
        self.env = warm_env(KODELET_DAEMON_ACK="60")  # a loaded machine never falls back
        self.warm_calls = 0

    def guards(self) -> list[Path]:
        return sorted(p for d in (self.hooks, self.repo) for p in d.iterdir() if p.is_file())

    def mark(self) -> str:
        return "".join(self.rng.choice("abcxyz ") for _ in range(self.rng.randint(1, 12)))

    def write(self, path: Path, mode: int = 0o755) -> None:
        text = GUARD.replace("MARK", f"{path.name}: {self.mark()}")
        if self.rng.random() < 0.3:  # the hook's own answer to ``hook``: what it guards
            text = text.replace("echo before_tool_call", "echo after_tool_call")
        path.write_text(text)
        path.chmod(mode)

    def step(self) -> str:
        guards = self.guards()
        op = self.rng.choice(
            ["edit", "edit", "mode", "rename", "new", "remove", "plugin", "config", "tree"]
        )
        if op in ("edit", "mode", "rename", "remove") and not guards:
            op = "new"
        if op == "edit":  # in place: the same file, maybe the same size
            target = self.rng.choice(guards)
            self.write(target, target.stat().st_mode & 0o777)
        elif op == "mode":
            target = self.rng.choice(guards)
            target.chmod(target.stat().st_mode ^ 0o111)
        elif op == "rename":
            target = self.rng.choice(guards)
            name = self.rng.choice([f"g{self.rng.randint(0, 5)}", target.name + ".disable"])
            target.rename(target.with_name(name))
        elif op == "new":
            self.write(self.rng.choice([self.hooks, self.repo]) / f"g{self.rng.randint(0, 5)}")
        elif op == "remove":
            self.rng.choice(guards).unlink()
        elif op == "plugin":  # in place, a helper module of the plugin's package
            reason = self.rng.choice(["", f"plugin: {self.mark()}"])
            self.words.write_text(f"REASON = {reason!r}\n")
        elif op == "config":
            names = [p.name for p in guards] or ["g0"]
            off = self.rng.sample(names, self.rng.randint(0, len(names)))
            text = "".join(f'[hooks."{n}"]\nenabled = false\n' for n in off)
            (self.root / ".kodelet" / "config.toml").write_text(text)
        else:  # a large tree: thousands of entries in a plugin repository
            tree = self.root / ".kodelet" / "plugins" / f"acme@big{self.trees}" / "data"
            self.trees += 1
            for i in range(25):
                (tree / str(i)).mkdir(parents=True)
                for j in range(100):
                    (tree / str(i) / str(j)).write_bytes(b"")
        return op

    def compare(self, what: str) -> None:
        data = pre_tool(self.root)
        there = hook(self.root, data, python=self.python, env=self.env)
        here = hook(self.root, data, python=self.python, env={**self.env, "KODELET_DAEMON": "0"})
        assert (there.returncode, there.stdout) == (here.returncode, here.stdout), what
        self.warm_calls += 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_warm_answers_follow_every_change_on_disk(
    guarded: Path, venv: tuple[str, Path], seed: int
) -> None:
    python, site = venv
    project = Project(guarded, python, site, random.Random(seed))
    project.compare("the first call")
    wait_for(warm)
    project.warm_calls = 0
    done: list[str] = []
    for _ in range(10):
        done.append(project.step())
        project.compare(f"seed {seed}, after {done}")
    assert status()["calls"] == project.warm_calls  # every call was the warm kodelet's


# -- a warm kodelet killed after it took a call ---------------------------------------


def test_a_warm_kodelet_killed_after_taking_a_call_blocks_it_and_runs_no_guard_twice(
    guarded: Path,
) -> None:
    guard = guarded / ".kodelet" / "hooks" / "guard"
    slow = GUARD.replace("run) if", 'run) echo $$ >> "$0.runs"; sleep 3; if')
    guard.write_text(slow.replace("MARK", "no rm"))
    info = started(guarded)
    result: dict[str, subprocess.CompletedProcess[str]] = {}
    thread = threading.Thread(target=lambda: result.update(p=hook(guarded, pre_tool(guarded))))
    thread.start()
    wait_for(lambda: runs(guard) == 2)  # the warm kodelet's run of the guard began
    os.kill(info["pid"], signal.SIGKILL)
    thread.join(60)
    for pid in guard.with_name("guard.runs").read_text().split():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(pid), signal.SIGKILL)  # a guard outlives a killed kodelet
    out = json.loads(result["p"].stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "failed mid-call" in out["permissionDecisionReason"]
    assert "not run again" in out["permissionDecisionReason"]
    assert runs(guard) == 2  # the first call's and the lost one's: none a second time


def test_kodelets_own_writes_in_a_root_are_no_change_but_a_new_entry_there_is(
    guarded: Path,
) -> None:
    """The first decision logged made ``~/.kodelet/audit`` (and a first load its cache):
    the root's own mtime changed, and the next call reloaded the whole runtime."""
    env = warm_env()
    places = Places.resolve(guarded, None, env)
    home = places.global_root
    home.mkdir(parents=True, exist_ok=True)
    before = fingerprint.fingerprint(places, env)
    for own in ("audit", "cache", "warm"):
        (home / own).mkdir()
        (guarded / ".kodelet" / own).mkdir()
    after = fingerprint.fingerprint(places, env, before)
    assert before.changed(after) is None
    (home / "config.toml").write_text("[hooks]\n")
    added = fingerprint.fingerprint(places, env, after)
    assert after.changed(added) == str(home / "config.toml")
    (home / "config.toml").unlink()
    (home / "config.toml").mkdir()  # the same name, now a directory
    assert added.changed(fingerprint.fingerprint(places, env, added)) == str(home / "config.toml")

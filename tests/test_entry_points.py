"""Native plugins found through real ``kodelet.plugins`` entry points.

Two small distributions are built and pip-installed into a temp dir once per module:
one with two working plugins, one whose plugins fail to import or to register. The
runtime finds them through ``importlib_metadata`` exactly as it would in a user's venv.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kodelet import (
    AfterToolCallPayload,
    AfterTurnPayload,
    AfterTurnResult,
    AgentStopPayload,
    AgentStopResult,
    BeforeToolCallPayload,
    BeforeToolCallResult,
    Dispatch,
    Event,
    Message,
    Outcome,
    Runtime,
    Source,
    StructuredToolResult,
    UsageInfo,
    UserMessageSendPayload,
    UserMessageSendResult,
    load_runtime,
)

BUILTIN = "builtin:compact-trigger"
PROTECT = "builtin:protect-kodelet"  # in every assembled runtime: kodelet's own files
OUR_MODULES = {"kp_guard", "kp_audit", "kp_broken", "kp_badsig"}
OUR_PLUGINS = {"guard", "audit", "broken", "badsig", "missing", BUILTIN}

GUARD = '''
"""A guard: blocks rm -rf, tags every tool input, asks for a follow-up."""
import asyncio

from kodelet import AgentStopResult, hookimpl


@hookimpl(tryfirst=True)
def before_tool_call(tool_name, tool_input):
    if "rm -rf" in tool_input.get("command", ""):
        return {"blocked": True, "reason": "guard: rm -rf"}
    return {"input": {**tool_input, "guarded": True}}


@hookimpl
def user_message_send(message):
    if "secret" in message:
        return {"blocked": True}
    return None


@hookimpl
async def agent_stop(messages):
    await asyncio.sleep(0)
    return AgentStopResult(follow_up_messages=[f"guard saw {len(messages)} messages"])


@hookimpl
def after_turn(turn_number):
    if turn_number == 13:
        return {"result": "callback", "callback": "guard-compact"}
    return None
'''

AUDIT = '''
"""An audit plugin object: tags input and output, and misbehaves on two events."""
from kodelet import BeforeToolCallResult, hookimpl


class Audit:
    @hookimpl
    def before_tool_call(self, tool_input):
        return BeforeToolCallResult(input={**tool_input, "audited": True})

    @hookimpl
    def after_tool_call(self, tool_output):
        return {"output": {"toolName": tool_output.tool_name, "success": tool_output.success,
                           "error": "audited"}}

    @hookimpl
    def user_message_send(self, message):
        raise RuntimeError("audit log unavailable")

    @hookimpl(trylast=True)
    def agent_stop(self):
        return {"follow_up_messages": ["audit"]}

    @hookimpl(trylast=True)
    def after_turn(self):
        return "not a result"


AUDIT = Audit()
'''

BROKEN = """
raise ImportError("kp_broken needs libfoo")
"""

BADSIG = """
from kodelet import hookimpl


@hookimpl
def before_tool_call(tool_nmae):
    return {"blocked": True}
"""


def _project(root: Path, name: str, modules: dict[str, str], eps: dict[str, str]) -> Path:
    proj = root / name
    proj.mkdir()
    entry_points = "\n".join(f'"{k}" = "{v}"' for k, v in eps.items())
    packages = sorted({m.split("/")[0] for m in modules if "/" in m})
    py_modules = sorted(m.removesuffix(".py") for m in modules if "/" not in m)
    (proj / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "{name}"
            version = "1.0"

            [project.entry-points."kodelet.plugins"]
            """
        )
        + entry_points
        + "\n\n[tool.setuptools]\n"
        + f"py-modules = {json.dumps(py_modules)}\npackages = {json.dumps(packages)}\n"
    )
    for rel, text in modules.items():
        path = proj / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return proj


def _can_build_offline() -> bool:
    if importlib.util.find_spec("wheel") is not None:
        return True
    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1)  # bdist_wheel moved into setuptools


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the two test distributions, installed by pip."""
    root = tmp_path_factory.mktemp("dists")
    good = _project(
        root,
        "kodelet-plugin-good",
        {"kp_guard.py": GUARD, "kp_audit/__init__.py": "", "kp_audit/plugin.py": AUDIT},
        {"guard": "kp_guard", "audit": "kp_audit.plugin:AUDIT"},
    )
    bad = _project(
        root,
        "kodelet-plugin-bad",
        {"kp_broken.py": BROKEN, "kp_badsig.py": BADSIG},
        {"broken": "kp_broken", "badsig": "kp_badsig", "missing": "kp_not_there"},
    )
    target = root / "site"
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
    if _can_build_offline():
        cmd.append("--no-build-isolation")
    env = {
        **os.environ,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PIP_ROOT_USER_ACTION": "ignore",
    }
    proc = subprocess.run(
        [*cmd, str(good), str(bad)], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in target.glob("*.dist-info")) == [
        "kodelet_plugin_bad-1.0.dist-info",
        "kodelet_plugin_good-1.0.dist-info",
    ]
    return target


@pytest.fixture
def site(installed: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The test distributions on sys.path for one test, and gone afterwards."""
    monkeypatch.syspath_prepend(str(installed))
    yield installed
    for name in [m for m in sys.modules if m.split(".")[0] in OUR_MODULES]:
        del sys.modules[name]


def runtime(cwd: Path, **kw: Any) -> Runtime:
    return load_runtime(cwd=cwd, executables=False, **kw)


def ours(rt: Runtime) -> dict[str, Any]:
    return {p.name: p for p in rt.plugins if p.name in OUR_PLUGINS}


def names(rt: Runtime, event: Event) -> list[str]:
    return [h.name for h in rt.hooks(event)]


def outcomes(d: Dispatch) -> list[tuple[str, Outcome]]:
    return [(r.name, r.outcome) for r in d.trace]


# -- loading ------------------------------------------------------------------------------


def test_not_visible_without_the_install(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    assert set(ours(rt)) == {BUILTIN}


def test_broken_plugins_are_recorded_and_the_rest_load(site: Path, tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    info = ours(rt)
    assert set(info) == {BUILTIN, "audit", "badsig", "broken", "guard", "missing"}

    assert info["broken"].error == "import failed: ImportError: kp_broken needs libfoo"
    assert info["missing"].error is not None
    assert info["missing"].error.startswith("import failed: ModuleNotFoundError")
    assert info["badsig"].error is not None
    assert info["badsig"].error.startswith("register failed")
    assert "tool_nmae" in info["badsig"].error

    for name in ("guard", "audit"):
        assert info[name].error is None
        assert info[name].kind == "python" and info[name].version == "1.0"
    assert info[BUILTIN].kind == "builtin" and info[BUILTIN].error is None
    assert info["guard"].events == [
        "after_turn",
        "agent_stop",
        "before_tool_call",
        "user_message_send",
    ]
    # Paths point at the plugin's code, not at the site-packages dir holding it.
    assert info["guard"].path == str(site / "kp_guard.py")
    assert info["audit"].path == str(site / "kp_audit" / "plugin.py")  # an object: its module
    assert info["broken"].path == str(site / "kp_broken.py")  # found without importing it
    assert info["missing"].path == str(site)  # nothing to find: the distribution
    assert "badsig" not in names(rt, Event.BEFORE_TOOL_CALL)


def test_call_order_follows_pluggy_with_builtins_last(site: Path, tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    assert names(rt, Event.BEFORE_TOOL_CALL) == ["guard", "audit", PROTECT]  # guard is tryfirst
    assert names(rt, Event.AGENT_STOP) == ["guard", "audit"]  # audit is trylast
    assert names(rt, Event.USER_MESSAGE_SEND) == ["guard", "audit"]  # LIFO: guard loads later
    assert names(rt, Event.AFTER_TURN) == ["guard", "audit", BUILTIN]
    assert [h.source for h in rt.hooks(Event.AFTER_TURN)] == [
        Source.PYTHON,
        Source.PYTHON,
        Source.BUILTIN,
    ]


# -- dispatch through installed plugins ---------------------------------------------------------


def test_before_tool_call_chains_and_blocks(site: Path, tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={"command": "ls"}))
    assert d.result == BeforeToolCallResult(
        input={"command": "ls", "guarded": True, "audited": True}
    )
    assert outcomes(d) == [
        ("guard", Outcome.MODIFIED),
        ("audit", Outcome.MODIFIED),
        (PROTECT, Outcome.NO_ACTION),
    ]

    d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={"command": "rm -rf /"}))
    assert d.result == BeforeToolCallResult(blocked=True, reason="guard: rm -rf")
    assert outcomes(d) == [("guard", Outcome.BLOCKED)]


def test_user_message_send_deny_fast_and_raising_impl(site: Path, tmp_path: Path) -> None:
    # An audit logger must never stop the agent: it fails open, as the docs tell it to.
    (tmp_path / ".kodelet").mkdir()
    (tmp_path / ".kodelet" / "config.toml").write_text('[hooks."audit"]\nfail_closed = false\n')
    rt = runtime(tmp_path)
    d = rt.dispatch(UserMessageSendPayload(message="my secret"))
    assert d.result == UserMessageSendResult(blocked=True, reason="blocked by guard")
    assert outcomes(d) == [("guard", Outcome.BLOCKED)]  # audit, which raises, never ran

    d = rt.dispatch(UserMessageSendPayload(message="hello"))
    assert d.result == UserMessageSendResult()
    assert outcomes(d) == [("guard", Outcome.NO_ACTION), ("audit", Outcome.ERROR)]
    assert d.trace[1].error == "RuntimeError: audit log unavailable"


def test_after_tool_call_from_a_plugin_object(site: Path, tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    out = StructuredToolResult(tool_name="bash", success=True)
    d = rt.dispatch(AfterToolCallPayload(tool_name="bash", tool_output=out))
    assert d.result.output == StructuredToolResult(tool_name="bash", success=True, error="audited")


def test_after_turn_wrong_type_and_first_action_wins(site: Path, tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    usage = UsageInfo(current_context_window=95, max_context_window=100)
    d = rt.dispatch(AfterTurnPayload(turn_number=13, usage=usage, auto_compact_enabled=True))
    assert d.result == AfterTurnResult(result="callback", callback="guard-compact")
    assert outcomes(d) == [
        ("guard", Outcome.ACTION),
        ("audit", Outcome.ERROR),
        (BUILTIN, Outcome.ACTION),
    ]
    assert d.trace[1].error is not None and "returned str" in d.trace[1].error
    assert d.trace[2].detail is not None and "conflict" in d.trace[2].detail

    d = rt.dispatch(AfterTurnPayload(turn_number=1, usage=usage, auto_compact_enabled=True))
    assert d.result == AfterTurnResult(result="callback", callback="compact")


def test_agent_stop_sync_and_async_agree(site: Path, tmp_path: Path) -> None:
    import asyncio

    payload = AgentStopPayload(messages=[Message("user", "a"), Message("assistant", "b")])
    expected = AgentStopResult(follow_up_messages=["guard saw 2 messages", "audit"])
    with runtime(tmp_path) as rt:
        by_sync = rt.dispatch(payload)
        by_async = asyncio.run(rt.adispatch(payload))
    assert by_sync.result == by_async.result == expected
    assert outcomes(by_sync) == outcomes(by_async)


# -- switching plugins off ------------------------------------------------------------------------


def test_disable_installed_plugin_by_name(site: Path, tmp_path: Path) -> None:
    rt = runtime(tmp_path, disabled=["guard"])
    assert ours(rt)["guard"].disabled
    assert names(rt, Event.BEFORE_TOOL_CALL) == ["audit", PROTECT]
    call = {"command": "rm -rf build"}
    d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input=call))
    assert d.result == BeforeToolCallResult(input={"command": "rm -rf build", "audited": True})


def test_disable_installed_plugin_in_config(site: Path, tmp_path: Path) -> None:
    (tmp_path / ".kodelet").mkdir()
    (tmp_path / ".kodelet" / "config.toml").write_text('[plugins]\ndisabled = ["audit"]\n')
    rt = runtime(tmp_path)
    assert ours(rt)["audit"].disabled and not ours(rt)["guard"].disabled
    assert names(rt, Event.AFTER_TURN) == ["guard", BUILTIN]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_hooks_keeps_builtins_only(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "env":
        monkeypatch.setenv("KODELET_NO_HOOKS", "1")
        rt = runtime(tmp_path)
    else:
        rt = runtime(tmp_path, no_hooks=True)
    assert rt.plugins and all(p.kind == "builtin" for p in rt.plugins)
    assert set(ours(rt)) == {BUILTIN}
    for event in Event:
        assert all(h.source is Source.BUILTIN for h in rt.hooks(event))
    assert names(rt, Event.AFTER_TURN) == [BUILTIN]


# -- a fresh interpreter, as a host would see it ------------------------------------------------


HOST = """
import asyncio, json
from kodelet import Event, Session, load_runtime

rt = load_runtime(executables=False)
s = Session(rt, conv_id="c1")
out = {
    "plugins": {p.name: p.error for p in rt.plugins},
    "order": [h.name for h in rt.hooks(Event.AFTER_TURN)],
    "btc": s.before_tool_call("bash", {"command": "ls"}).input,
    "stop": asyncio.run(s.aagent_stop([])).follow_up_messages,
}
print(json.dumps(out))
"""


def test_a_fresh_interpreter_discovers_the_installed_plugins(
    installed: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(installed)}
    proc = subprocess.run(
        [sys.executable, "-c", HOST],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    plugins = {k: v for k, v in out["plugins"].items() if k in OUR_PLUGINS}
    assert plugins["guard"] is None and plugins["audit"] is None and plugins[BUILTIN] is None
    assert plugins["broken"] == "import failed: ImportError: kp_broken needs libfoo"
    assert plugins["badsig"] and plugins["missing"]
    assert out["order"] == ["guard", "audit", BUILTIN]
    assert out["btc"] == {"command": "ls", "guarded": True, "audited": True}
    assert out["stop"] == ["guard saw 0 messages", "audit"]
    assert "Traceback" not in proc.stderr


CONFIGURED = """
from kodelet import hookimpl


class Configured:
    def __init__(self):
        self.words = []

    @hookimpl
    def configure(self, config):
        self.words = list(config.get("words", []))

    @hookimpl
    def user_message_send(self, message):
        if any(w in message for w in self.words):
            return {"blocked": True, "reason": "configured: " + ",".join(self.words)}
        return None
"""


def test_an_entry_point_naming_a_class_gets_one_instance_per_runtime(tmp_path, monkeypatch):
    """Two runtimes with different configuration never share a plugin's settings."""
    site = tmp_path / "site"
    (site / "kp_configured-1.0.dist-info").mkdir(parents=True)
    (site / "kp_configured.py").write_text(CONFIGURED)
    info = site / "kp_configured-1.0.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kp-configured\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[kodelet.plugins]\nconfigured = kp_configured:Configured\n"
    )
    monkeypatch.syspath_prepend(str(site))
    projects = []
    for word in ("alpha", "beta"):
        project = tmp_path / word
        (project / ".kodelet").mkdir(parents=True)
        (project / ".kodelet" / "config.toml").write_text(
            f'[plugin.configured]\nwords = ["{word}"]\n'
        )
        projects.append(project)
    try:
        with (
            load_runtime(cwd=projects[0], executables=False) as first,
            load_runtime(cwd=projects[1], executables=False) as second,
        ):
            one = first.dispatch(UserMessageSendPayload(message="alpha and beta")).result
            two = second.dispatch(UserMessageSendPayload(message="alpha and beta")).result
            plugins = [
                next(p.plugin for p in rt.plugins if p.name == "configured")
                for rt in (first, second)
            ]
    finally:
        sys.modules.pop("kp_configured", None)
    assert one == UserMessageSendResult(blocked=True, reason="configured: alpha")
    assert two == UserMessageSendResult(blocked=True, reason="configured: beta")
    assert plugins[0] is not plugins[1]
    assert type(plugins[0]).__name__ == "Configured"


def test_a_builtin_shows_the_installed_kodelet_version(tmp_path: Path) -> None:
    """Built-ins are listed without parsing kodelet's own metadata: the version they
    show must still be the installed distribution's, which pyproject.toml reads from
    the package's ``VERSION`` file (the one place it is written)."""
    import tomllib

    import importlib_metadata
    import kodelet

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    installed = importlib_metadata.version("kodelet")
    assert kodelet.__version__ == installed
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"file": "core/kodelet/VERSION"}
    with load_runtime(cwd=tmp_path, home=tmp_path / "home", entry_points=False) as rt:
        builtins = [p for p in rt.plugins if p.kind == Source.BUILTIN]
    assert builtins, "the kodelet wheel ships at least one built-in"
    assert {(p.version, p.distribution) for p in builtins} == {(installed, "kodelet")}

"""The decision log: what a real ``kodelet hooks run`` writes, and that the log is
private, whole, rotated and free of secrets."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from kodelet import hookimpl, load_runtime
from kodelet.audit.log import DecisionLog
from kodelet.kinds import Source
from kodelet.payloads import BeforeToolCallPayload
from kodelet.secrets import redact
from kodelet.testing import write_hook
from kodelet.trace import Outcome
from kodelet.warm import control

from tests.kit.cli import no_traceback, run_before_tool_call, run_kodelet
from tests.kit.hooks import BLOCKING_HOOK
from tests.kit.warm import decision, hook, pre_tool, started, write_guard

FAILING_HOOK = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null
exit 3
"""

REWRITING_HOOK = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null
echo '{"input": {"command": "ls -la"}}'
"""

ASKING_HOOK = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null
echo '{"ask": true, "reason": "sure?"}'
"""

SECRETS = {
    "aws key id": "AKIAIOSFODNN7EXAMPLE",
    "aws secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "slack": "xoxb-2048-4096-abcdefABCDEF123456",
    "bearer": "eyAbC0123456789token.Zz",
    "password": "hunter2-Correct-Horse",
    "private key": "MIIEpAIBAAKCAQEA7n2XmQ",
    "high entropy": "9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a",
}


def log_path(home: Path) -> Path:
    return home / ".kodelet" / "audit" / "decisions.jsonl"


def records(home: Path) -> list[dict[str, Any]]:
    path = log_path(home)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def call(project: Path, command: str, **extra: Any) -> subprocess.CompletedProcess[str]:
    payload = {"tool_name": "bash", "tool_input": {"command": command}, "conv_id": "s-1"}
    return run_before_tool_call(project, json.dumps({**payload, **extra}))


def test_a_blocking_hook_run_by_hooks_run_writes_one_record(
    project: Path, isolated_home: Path
) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no deletes here")
    res = call(project, "rm -rf build")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["blocked"] is True
    [rec] = records(isolated_home)
    assert rec.pop("time").endswith("Z")
    assert isinstance(rec.pop("ms"), float)
    assert rec == {
        "agent": "",
        "session": "s-1",
        "project": str(project),
        "event": "before_tool_call",
        "tool": "bash",
        "input": "rm -rf build",
        "decision": "deny",
        "by": "hook:guard",
        "source": "executable",
        "reason": "no deletes here",
    }


def test_a_call_nobody_decided_on_is_not_logged(project: Path, isolated_home: Path) -> None:
    res = call(project, "ls")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"blocked": False}
    assert not log_path(isolated_home).exists()


@pytest.mark.parametrize(
    ("hook", "decision", "reason"),
    [
        (REWRITING_HOOK, "rewrite", "input rewritten"),
        (ASKING_HOOK, "ask", "sure?"),
        (FAILING_HOOK, "deny", "hook flaky failed (fail-closed): exited with status 3"),
    ],
)
def test_rewrites_asks_and_blocking_failures_are_logged(
    project: Path, isolated_home: Path, hook: str, decision: str, reason: str
) -> None:
    write_hook(project / ".kodelet" / "hooks", "flaky", hook)
    res = call(project, "rm -rf build")
    assert res.returncode == 0, res.stderr
    [rec] = records(isolated_home)
    assert (rec["decision"], rec["by"]) == (decision, "hook:flaky")
    assert rec["reason"].startswith(reason), rec


def test_no_secret_of_the_tool_input_reaches_the_log(project: Path, isolated_home: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no")
    s = SECRETS
    command = (
        f"export AWS_ACCESS_KEY_ID={s['aws key id']} AWS_SECRET_ACCESS_KEY={s['aws secret']};"
        f" GH={s['github']} curl -H 'Authorization: Bearer {s['bearer']}' -d {s['slack']}"
        f" https://x; mysql --password={s['password']}; SIGNING={s['high entropy']}"
    )
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{s['private key']}\n-----END RSA PRIVATE KEY-----"
    res = call(project, command)
    assert res.returncode == 0, res.stderr
    write = {"tool_name": "file_write", "tool_input": {"file_path": "k.pem", "content": key}}
    assert run_before_tool_call(project, json.dumps(write)).returncode == 0
    text = log_path(isolated_home).read_text()
    assert len(text.splitlines()) == 2
    for name, secret in SECRETS.items():
        assert secret not in text, name
    assert "[redacted]" in text and "export AWS_ACCESS_KEY_ID=" in text


def test_redact_keeps_everyday_commands() -> None:
    for everyday in ("rm -rf build/", "git commit -m 'add token refresh'", "pytest -q tests/"):
        assert redact(everyday) == everyday


def test_the_log_is_private_whatever_the_umask(project: Path, isolated_home: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no")
    old = os.umask(0)
    try:
        res = call(project, "rm -rf build")
    finally:
        os.umask(old)
    assert res.returncode == 0, res.stderr
    assert stat.S_IMODE(log_path(isolated_home).parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(log_path(isolated_home).stat().st_mode) == 0o600


@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_symlinked_log_is_refused_and_the_call_still_answered(
    project: Path, isolated_home: Path, tmp_path: Path, link: str
) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "decisions.jsonl").write_text("")
    folder = log_path(isolated_home).parent
    if link == "file":
        folder.mkdir(parents=True)
        log_path(isolated_home).symlink_to(elsewhere / "decisions.jsonl")
    else:
        folder.parent.mkdir(parents=True)
        folder.symlink_to(elsewhere)
    res = call(project, "rm -rf build")
    no_traceback(res)
    assert res.returncode == 0
    assert json.loads(res.stdout) == {"blocked": True, "reason": "no"}
    assert (elsewhere / "decisions.jsonl").read_text() == ""
    assert "decision not logged" in res.stderr and "symbolic link" in res.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_log_of_another_user_is_refused(project: Path, isolated_home: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no")
    path = log_path(isolated_home)
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("")
    os.chown(path, 65534, 65534)
    res = call(project, "rm -rf build")
    assert json.loads(res.stdout)["blocked"] is True
    assert path.read_text() == ""
    assert "belongs to uid 65534" in res.stderr


def test_audit_is_switched_off_in_the_global_config_only(
    project: Path, isolated_home: Path
) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no")
    (project / ".kodelet" / "config.toml").write_text("[audit]\nenabled = false\n")
    res = call(project, "rm -rf build")
    no_traceback(res)
    assert res.returncode == 2
    assert "[audit] is read from the global config.toml only" in res.stderr
    (project / ".kodelet" / "config.toml").unlink()
    (isolated_home / ".kodelet").mkdir(exist_ok=True)
    (isolated_home / ".kodelet" / "config.toml").write_text("[audit]\nenabled = false\n")
    assert json.loads(call(project, "rm -rf build").stdout)["blocked"] is True
    assert not log_path(isolated_home).exists()


def test_bad_audit_settings_are_one_line_errors(project: Path, isolated_home: Path) -> None:
    (isolated_home / ".kodelet").mkdir(exist_ok=True)
    (isolated_home / ".kodelet" / "config.toml").write_text("[audit]\nkeep = -1\n")
    res = run_kodelet("--cwd", str(project), "config", "show")
    no_traceback(res)
    assert res.returncode != 0
    [line] = res.stderr.strip().splitlines()
    assert "audit.keep: expected a whole number of at least 0, got -1" in line


def record(n: int, pad: int = 0) -> dict[str, Any]:
    return {"n": n, "pad": "x" * pad}


def test_the_log_rotates_by_size_and_keeps_as_many_as_asked(tmp_path: Path) -> None:
    log = DecisionLog(tmp_path, max_bytes=4096, keep=2)
    for n in range(40):
        log.append(record(n, 300))
    files = log.files()
    assert [p.name for p in files] == [
        "decisions.jsonl.2",
        "decisions.jsonl.1",
        "decisions.jsonl",
    ]
    assert all(p.stat().st_size <= 4096 for p in files)
    seen = [json.loads(line)["n"] for p in files for line in log.lines(p)]
    assert seen == list(range(seen[0], 40))  # oldest dropped, order kept, none lost since
    assert seen[0] > 0


WRITER = """
import json, os, sys
from pathlib import Path
from kodelet.audit.log import DecisionLog
log = DecisionLog(Path(sys.argv[1]), max_bytes=int(sys.argv[2]), keep=1000)
for n in range(int(sys.argv[3])):
    log.append({"pid": os.getpid(), "n": n, "pad": "y" * 900})
"""


def test_concurrent_writers_keep_every_line_whole(tmp_path: Path) -> None:
    writers, each = 6, 150
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), "65536", str(each)])
        for _ in range(writers)
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    log = DecisionLog(tmp_path, max_bytes=65536, keep=1000)
    rows = [json.loads(line) for p in log.files() for line in log.lines(p)]
    assert len(rows) == writers * each
    by_writer: dict[int, list[int]] = {}
    for row in rows:
        by_writer.setdefault(row["pid"], []).append(row["n"])
    assert len(by_writer) == writers
    assert all(sorted(ns) == list(range(each)) for ns in by_writer.values())
    assert len(log.files()) > 1  # it rotated while they wrote


class RuleVerdicts:
    """Answers as the rules guard answers: a deny's reason, or an explicit allow's."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer

    @hookimpl
    def before_tool_call(self) -> dict[str, Any]:
        return self.answer


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ({"blocked": True, "reason": "kodelet rule no-push (managed): not to main"}, "deny"),
        ({"ask": True, "reason": "kodelet rule wipe (user): sure?"}, "ask"),
        ({"reason": "kodelet rule rm-build (project): build output only"}, "allow"),
    ],
)
def test_a_rules_decision_names_the_rule_and_its_tier(
    project: Path, isolated_home: Path, answer: dict[str, Any], decision: str
) -> None:
    with load_runtime(cwd=project, entry_points=False, executables=False) as runtime:
        runtime.register(RuleVerdicts(answer), name="builtin:rules", builtin=True)
        payload = BeforeToolCallPayload(tool_name="bash", tool_input={"command": "x"})
        runtime.dispatch(payload, agent="codex")
    [rec] = records(isolated_home)
    rule, source = answer["reason"].split(" ")[2], answer["reason"].split("(")[1].split(")")[0]
    assert (rec["decision"], rec["by"], rec["source"]) == (decision, f"rule:{rule}", source)
    assert (rec["agent"], rec["reason"]) == ("codex", answer["reason"])


def test_a_reason_alone_from_any_other_hook_is_no_decision(
    project: Path, isolated_home: Path
) -> None:
    with load_runtime(cwd=project, entry_points=False, executables=False) as runtime:
        runtime.register(RuleVerdicts({"reason": "kodelet rule x (managed): y"}), name="mine")
        runtime.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={}))
    assert records(isolated_home) == []


def test_a_hook_cannot_pass_itself_off_as_a_rule(project: Path, isolated_home: Path) -> None:
    forged = "kodelet rule no-push (managed): forged"
    write_hook(project / ".kodelet" / "hooks", "builtin:rules", BLOCKING_HOOK % forged)
    assert json.loads(call(project, "ls").stdout)["blocked"] is True
    [rec] = records(isolated_home)
    assert (rec["by"], rec["source"]) == ("hook:builtin:rules", "executable")


def test_a_rules_deny_and_a_rules_allow_are_logged_with_the_rule_and_its_tier(
    project: Path, isolated_home: Path
) -> None:
    (project / ".kodelet" / "rules.toml").write_text(
        '[[rules]]\nname = "no-make"\ndecision = "deny"\nreason = "not here"\nprogram = ["make"]\n'
    )
    (isolated_home / ".kodelet").mkdir(exist_ok=True)
    (isolated_home / ".kodelet" / "rules.toml").write_text(
        '[[rules]]\nname = "make-docs"\ndecision = "allow"\nprogram = ["make"]\n'
        'subcommand = ["docs"]\n'
    )
    denied = call(project, "cd sub && make clean")
    assert denied.returncode == 0, denied.stderr
    assert json.loads(denied.stdout)["blocked"] is True
    allowed = call(project, "make docs")
    assert json.loads(allowed.stdout) == {"blocked": False}, allowed.stderr
    deny, allow = records(isolated_home)
    assert (deny["decision"], deny["by"], deny["source"]) == ("deny", "rule:no-make", "project")
    assert deny["reason"] == "kodelet rule no-make (project): not here"
    assert deny["input"] == "cd sub && make clean"
    assert (allow["decision"], allow["by"], allow["source"]) == ("allow", "rule:make-docs", "user")


def test_the_warm_kodelet_writes_the_records_the_in_process_path_writes(
    project: Path, isolated_home: Path
) -> None:
    write_guard(project, "no rm")
    info = started(project)  # the first call is answered in-process and starts it
    assert decision(hook(project, pre_tool(project))) == "no rm"
    assert control.ask(info["socket"], "status")["calls"] == 1
    # the log is kodelet's own write, not what defines the runtime: no reload for it
    assert decision(hook(project, pre_tool(project))) == "no rm"
    status = control.ask(info["socket"], "status")
    assert (status["calls"], status["reloads"]) == (2, 0)
    in_process, warm_one, _ = records(isolated_home)
    for rec in (in_process, warm_one):
        del rec["time"], rec["ms"]
    assert in_process == warm_one
    assert (warm_one["agent"], warm_one["session"], warm_one["by"]) == (
        "claude",
        "s1",
        "hook:guard",
    )


class Collector:
    """A stand-in OTLP/HTTP collector: keeps every POST (path, content type, body)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str, bytes]] = []
        self.seen = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.posts.append((self.path, self.headers.get("Content-Type", ""), body))
                outer.seen.set()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def spans(self) -> list[Any]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        out = []
        for _, _, body in self.posts:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                service = {a.key: a.value.string_value for a in resource.resource.attributes}
                for scope in resource.scope_spans:
                    out += [(service, span) for span in scope.spans]
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Any:
    pytest.importorskip("opentelemetry.sdk.trace")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    stand_in = Collector()
    yield stand_in
    stand_in.close()


def global_config(home: Path, text: str) -> None:
    (home / ".kodelet").mkdir(exist_ok=True)
    (home / ".kodelet" / "config.toml").write_text(text)


@pytest.mark.parametrize("how", ["otlp_endpoint", "environment"])
def test_records_are_exported_as_spans_to_an_otlp_collector(
    project: Path, isolated_home: Path, collector: Collector, how: str
) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no deletes here")
    env = {}
    if how == "otlp_endpoint":
        global_config(isolated_home, f'[audit]\notlp_endpoint = "{collector.url}"\n')
    else:
        global_config(isolated_home, "[audit]\notel = true\n")
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}
    secret = SECRETS["github"]
    payload = {"tool_name": "bash", "tool_input": {"command": f"GH={secret} rm -rf x"}}
    res = run_before_tool_call(project, json.dumps(payload), env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["blocked"] is True
    assert collector.seen.wait(30), res.stderr  # sent before the process ended
    [(path, kind, body)] = collector.posts
    assert (path, kind) == ("/v1/traces", "application/x-protobuf")
    assert secret.encode() not in body
    [(service, span)] = collector.spans()
    attrs = {a.key: a.value for a in span.attributes}
    assert service["service.name"] == "kodelet"
    assert span.name == "kodelet.decision deny"
    assert attrs["kodelet.by"].string_value == "hook:guard"
    assert attrs["kodelet.reason"].string_value == "no deletes here"
    assert attrs["kodelet.input"].string_value.startswith("GH=[redacted] rm -rf x")
    [rec] = records(isolated_home)  # and the local log still has it
    assert rec["by"] == "hook:guard"


def test_an_export_configured_without_the_extra_says_so(
    project: Path, isolated_home: Path, tmp_path: Path
) -> None:
    # opentelemetry without its SDK, as when only opentelemetry-api is installed
    api_only = tmp_path / "api-only"
    (api_only / "opentelemetry").mkdir(parents=True)
    (api_only / "opentelemetry" / "__init__.py").write_text("")
    env = {"PYTHONPATH": str(api_only)}
    global_config(isolated_home, '[audit]\notlp_endpoint = "http://127.0.0.1:9"\n')
    check = run_kodelet("audit", "--check", env=env)
    no_traceback(check)
    assert check.returncode == 1
    assert (
        "export: configured (http://127.0.0.1:9/v1/traces) but the otel extra is not"
        " installed: pip install 'kodelet[otel]'"
    ) in check.stdout
    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no")
    payload = json.dumps({"tool_name": "bash", "tool_input": {"command": "rm"}})
    res = run_before_tool_call(project, payload, env=env)
    assert json.loads(res.stdout)["blocked"] is True
    assert "configured but the otel extra is not installed" in res.stderr
    assert len(records(isolated_home)) == 1


def test_the_agent_sdk_integration_logs_as_claude_agent_sdk(
    project: Path, isolated_home: Path
) -> None:
    from kodelet.integrations.claude_agent_sdk import hooks

    write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "no")
    data = {
        "session_id": "sdk-1",
        "transcript_path": "",
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build"},
    }
    ((matcher,),) = [hooks()["PreToolUse"]]
    (callback,) = matcher.hooks
    out = asyncio.run(callback(data, "toolu_1", {"signal": None}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    [rec] = records(isolated_home)
    assert (rec["agent"], rec["session"], rec["tool"], rec["input"]) == (
        "claude-agent-sdk",
        "sdk-1",
        "bash",
        "rm -rf build",
    )


def test_a_replays_decisions_are_logged_as_the_replays(project: Path, isolated_home: Path) -> None:
    from tests.kit.replay import GUARD, replay_json

    write_hook(project / ".kodelet" / "hooks", "guard", GUARD)
    assert replay_json(project, "--my-hooks")["summary"]["calls_blocked"] == 1
    [deny] = [r for r in records(isolated_home) if r["decision"] == "deny"]
    assert (deny["agent"], deny["by"], deny["project"]) == ("replay", "hook:guard", str(project))
    assert "rm -rf" in deny["input"]


def test_a_record_too_long_for_one_append_is_cut_to_fit(tmp_path: Path) -> None:
    from kodelet.audit import Audit
    from kodelet.audit.log import LINE_CAP

    log = DecisionLog(tmp_path, max_bytes=1 << 20, keep=1)
    sink = Audit(log, project="/p" + "ü" * 400, agent="claude")
    reason = "kodelet rule wide (user): " + "🦀" * 2000
    payload = BeforeToolCallPayload(tool_name="bash", tool_input={"command": "é" * 9000})
    sink.dispatched(payload, [("guard", Source.EXECUTABLE, Outcome.BLOCKED, 0.01, None, reason)])
    assert sink.failed == ""
    [line] = log.path.read_bytes().splitlines(keepends=True)
    assert len(line) <= LINE_CAP
    rec = json.loads(line)
    assert rec["reason"].startswith("kodelet rule wide (user): 🦀") and rec["input"].startswith("é")

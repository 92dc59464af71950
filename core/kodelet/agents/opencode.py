"""opencode (``opencode-ai``): no command hooks; an in-process plugin kodelet generates.

opencode loads every ``.js``/``.ts`` file in ``.opencode/plugin/`` (project) and
``~/.config/opencode/plugin/`` (user) as a plugin running inside its own process. Its
``tool.execute.before`` may change the call's arguments in place or throw, and a throw
blocks the tool with the error's message as the tool's result; ``tool.execute.after``
may change the result; ``chat.message`` sees the user's prompt (a throw stops it);
``event`` reports ``session.idle`` when a turn ends. ``kodelet opencode install`` writes
the plugin of :func:`plugin_source`: each of those four calls goes as one JSON object to
the warm kodelet's lean client (``kodelet claude hook --agent opencode``), which answers
in the small form of :meth:`OpencodeDialect.say`. The plugin fails closed: when
the command cannot be run, exits non-zero, times out or prints something that is not
that answer, the tool call or prompt is refused with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .base import NO_OBJECTION, Answer, Dialect, Ran, json_object

MARKER = "// kodelet-managed plugin"
"""The first line of the generated file: what ``kodelet opencode uninstall`` removes."""
TIMEOUT = 120.0
"""Seconds the plugin waits for kodelet."""
_COMMAND = "const COMMAND = "


@attrs.frozen(eq=False)
class OpencodeDialect(Dialect):
    """The plugin's calls, in Claude's hook input shape under opencode's names; the
    answer is what the plugin does: ``block`` (throw), ``args`` (the call's arguments,
    replaced), ``output`` (the tool's result, replaced), ``context`` (added to the
    result or prompt), ``followUp`` (sent as the next prompt), ``message`` (logged)."""

    marker: str = MARKER
    """The first line of kodelet's plugin file: what uninstall may remove."""

    def plugin_source(self, command: str) -> str:
        return plugin_source(command)

    def sure_commands(self, path: Path, event: str, env: Mapping[str, str]) -> list[str]:
        """The command of the plugin at ``path`` when it is exactly the one kodelet
        writes (which refuses a call when that command fails) and handles ``event``."""
        from .. import jsonio

        try:
            text = jsonio.read_file(path, "opencode plugin").decode("utf-8")
        except (OSError, jsonio.FileError, UnicodeDecodeError):
            return []
        for line in text.splitlines():
            if line.startswith(_COMMAND):
                try:
                    command = json.loads(line[len(_COMMAND) :].rstrip(";"))
                except ValueError:
                    return []
                sure = isinstance(command, str) and text == self.plugin_source(command)
                return [command] if sure and event in self.events else []
        return []

    def reads_project(
        self,
        folder: Path,
        env: Mapping[str, str],
        argv: Sequence[str] | None,
        data: Mapping[str, Any],
    ) -> bool:
        """opencode 1.18.33 loads the plugins of every ``.opencode/`` from its folder up
        to the repository root, unless told to skip the project's config
        (``OPENCODE_DISABLE_PROJECT_CONFIG``) or every plugin (``--pure``, which sets
        ``OPENCODE_PURE``)."""
        return not any(env.get(v) for v in ("OPENCODE_DISABLE_PROJECT_CONFIG", "OPENCODE_PURE"))

    def say(self, answer: Answer, data: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if answer.blocked:
            out["block"] = answer.reason or "blocked by kodelet"
        if answer.follow_up:
            out["followUp"] = answer.follow_up
        if answer.input is not None:
            out["args"] = self._input(data.get("tool_name"), answer.input, to_claude=False)
        if answer.output is not None:
            out["output"] = answer.output.text()
        elif answer.withheld:
            out["output"] = answer.withheld
        if answer.context:
            out["context"] = answer.context
        if answer.message:
            out["message"] = answer.message
        return out

    def outcome(self, ran: Ran, blocks_on_failure: bool = False) -> tuple[str, str]:
        """What the plugin does: refuses the call when kodelet exits non-zero or prints
        anything but its small answer."""
        if ran.code != 0:
            return "blocked", f"kodelet could not check this tool call ({ran.why()}); refused"
        if not ran.stdout.strip():
            return "allowed", NO_OBJECTION
        doc = json_object(ran.stdout)
        if doc is None:
            return "blocked", f"the hook answered {ran.stdout.strip()[:200]!r}; refused"
        return self.read(doc)

    def read(self, doc: Mapping[str, Any]) -> tuple[str, str]:
        if isinstance(doc.get("block"), str):
            return "blocked", str(doc["block"])
        if isinstance(doc.get("args"), dict):
            return "rewritten", f"runs with {json.dumps(doc['args'], ensure_ascii=False)}"
        return "allowed", NO_OBJECTION


OPENCODE = OpencodeDialect(
    name="opencode",
    title="opencode",
    asks=False,
    binary="opencode",
    package="opencode-ai",
    verified="1.18.33",
    config={
        "project": ".opencode/plugin/kodelet.js",
        "user": "~/.config/opencode/plugin/kodelet.js",
    },
    events={
        "tool.execute.before": "PreToolUse",
        "tool.execute.after": "PostToolUse",
        "chat.message": "UserPromptSubmit",
        "session.idle": "Stop",
    },
    tools={
        "bash": "Bash",
        "read": "Read",
        "write": "Write",
        "edit": "Edit",
        "glob": "Glob",
        "grep": "Grep",
        "webfetch": "WebFetch",
        "todowrite": "TodoWrite",
        "task": "Task",
    },
    keys={
        "read": (("filePath", "file_path"),),
        "write": (("filePath", "file_path"),),
        "edit": (
            ("filePath", "file_path"),
            ("oldString", "old_string"),
            ("newString", "new_string"),
            ("replaceAll", "replace_all"),
        ),
        "grep": (("include", "glob"),),
    },
    fails_open=False,
    claude_transcript=False,
    exit_1_blocks=True,
    project_from_cwd="up",
    sure_when=(
        "the folder is in a git repository, OPENCODE_DISABLE_PROJECT_CONFIG is not set and"
        " `kodelet` is on its PATH"
    ),
    shell_tool="bash",
    write_tool="write",
    hook_input={},
    hook_timeout=TIMEOUT,
    notes=("opencode loads plugins when it starts: restart running opencode sessions",),
)


def plugin_source(command: str) -> str:
    """The plugin ``kodelet opencode install`` writes, running ``command`` (a shell
    command line) for each call."""
    return (
        _PLUGIN.replace("@MARKER@", MARKER)
        .replace("@COMMAND@", json.dumps(command))
        .replace("@TIMEOUT@", str(int(TIMEOUT * 1000)))
    )


_PLUGIN = """@MARKER@: written by `kodelet opencode install`; `kodelet opencode
// uninstall` removes it. Each tool call, prompt and end of turn goes to kodelet's hooks;
// when kodelet cannot answer, the tool call or prompt is refused (fail closed).
import { spawn } from "node:child_process";

const COMMAND = @COMMAND@;
const TIMEOUT_MS = @TIMEOUT@;

function ask(payload, cwd) {
  return new Promise((resolve) => {
    const done = (answer) => resolve(answer);
    let child;
    try {
      child = spawn("/bin/sh", ["-c", COMMAND], { cwd, stdio: ["pipe", "pipe", "pipe"] });
    } catch (error) {
      return done({ problem: `cannot run ${COMMAND}: ${error.message}` });
    }
    const out = [];
    const err = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, TIMEOUT_MS);
    child.stdout.on("data", (chunk) => out.push(chunk));
    child.stderr.on("data", (chunk) => err.push(chunk));
    child.on("error", (error) => {
      clearTimeout(timer);
      done({ problem: `cannot run ${COMMAND}: ${error.message}` });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString().trim();
      const stderr = Buffer.concat(err).toString().trim().split("\\n").pop();
      if (timedOut) return done({ problem: `${COMMAND} took over ${TIMEOUT_MS / 1000} s` });
      if (code !== 0) {
        const how = signal ? `was killed by ${signal}` : `exited with ${code}`;
        return done({ problem: `${COMMAND} ${how}${stderr ? `: ${stderr}` : ""}` });
      }
      if (!stdout) return done({});
      try {
        const answer = JSON.parse(stdout);
        if (answer && typeof answer === "object" && !Array.isArray(answer)) return done(answer);
      } catch {}
      done({ problem: `${COMMAND} answered ${JSON.stringify(stdout.slice(0, 200))}` });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

function refuse(what, answer) {
  let reason = typeof answer.block === "string" ? answer.block : undefined;
  if (answer.problem) {
    reason = `kodelet could not check this ${what}, so it is blocked: ${answer.problem}`;
  }
  if (reason === undefined) {
    if (answer.message) process.stderr.write(`kodelet: ${answer.message}\\n`);
    return;
  }
  // A refused prompt reaches no model: its reason goes to the terminal too.
  if (what === "prompt") {
    process.stderr.write(`${reason.startsWith("kodelet") ? "" : "kodelet: "}${reason}\\n`);
  }
  throw new Error(reason);
}

export const Kodelet = async ({ directory, client }) => {
  const contexts = new Map();
  const continuing = new Set();
  const call = (event, sessionID, fields) =>
    ask({ hook_event_name: event, session_id: sessionID, cwd: directory, ...fields }, directory);
  return {
    "tool.execute.before": async (input, output) => {
      const answer = await call("tool.execute.before", input.sessionID, {
        tool_name: input.tool,
        tool_input: output.args,
        tool_use_id: input.callID,
      });
      refuse("tool call", answer);
      if (typeof answer.context === "string") contexts.set(input.callID, answer.context);
      if (answer.args && typeof answer.args === "object") {
        for (const key of Object.keys(output.args)) {
          if (!(key in answer.args)) delete output.args[key];
        }
        Object.assign(output.args, answer.args);
      }
    },
    "tool.execute.after": async (input, output) => {
      const answer = await call("tool.execute.after", input.sessionID, {
        tool_name: input.tool,
        tool_input: input.args,
        tool_use_id: input.callID,
        tool_response: output.output,
      });
      const before = contexts.get(input.callID);
      contexts.delete(input.callID);
      if (before) output.output += `\\n\\n${before}`;
      if (answer.problem) {
        process.stderr.write(`kodelet could not run its after-tool hooks: ${answer.problem}\\n`);
        return;
      }
      if (answer.message) process.stderr.write(`kodelet: ${answer.message}\\n`);
      if (typeof answer.output === "string") output.output = answer.output;
      if (typeof answer.context === "string") output.output += `\\n\\n${answer.context}`;
    },
    "chat.message": async (input, output) => {
      const texts = output.parts.filter((p) => p.type === "text" && !p.synthetic);
      const answer = await call("chat.message", input.sessionID, {
        prompt: texts.map((p) => p.text).join("\\n"),
      });
      refuse("prompt", answer);
      if (typeof answer.context === "string" && texts.length) {
        texts[texts.length - 1].text += `\\n\\n${answer.context}`;
      }
    },
    event: async ({ event }) => {
      if (event.type !== "session.idle") return;
      const sessionID = event.properties?.sessionID;
      // One follow-up round per stop, as in Claude Code: the idle after a follow-up
      // says so, and kodelet sends no other.
      const active = continuing.delete(sessionID);
      const answer = await call("session.idle", sessionID, { stop_hook_active: active });
      if (answer.problem) {
        process.stderr.write(`kodelet could not run its stop hooks: ${answer.problem}\\n`);
      }
      if (typeof answer.followUp === "string" && sessionID) {
        continuing.add(sessionID);
        await client.session.prompt({
          path: { id: sessionID },
          body: { parts: [{ type: "text", text: answer.followUp }] },
        });
      }
    },
  };
};
"""

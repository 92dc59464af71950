"""Shell commands that open an interactive shell or REPL: what Codex cannot guard.

Codex's ``exec_command`` can start a process on a terminal (``tty: true``) and keep it
running; ``write_stdin`` then types into it. Codex 0.169.0 sends no hook for
``write_stdin``, and its hook input for ``exec_command`` carries the command alone (not
``tty``), so a command typed into a shell opened that way runs unseen by every guard.
The nearest point kodelet does see is the ``exec_command`` that opens it: this module
says whether a command line starts a program that reads the commands it runs from its
terminal (a shell, a language REPL, a tool that starts one), so the Codex dialect can
refuse it (docs/DECISIONS.md). The reading is the self-guard's shell reader
(:mod:`kodelet.selfguard.shell`); a program given its code (``bash -c``, ``python3
script.py``, ``python3 - <<EOF``) reads nothing from the terminal and passes.

It is a list, not a proof: a program kodelet does not know that reads commands from its
input (a script of the model's own with ``eval``) is not seen here (docs/AGENTS.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ..selfguard.shell import MAX_NESTING, Item, Simple, Unreadable, Word, parse


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


SHELLS = _words(
    "sh bash dash zsh ksh mksh pdksh ash yash posh fish csh tcsh rc es elvish nu xonsh"
    " pwsh powershell"
)
"""Shells: a bare one, ``-i`` or ``-s`` reads its commands from the terminal; ``-c`` or
a script does not."""
REPLS = _words(
    "python python2 python3 pypy pypy3 ipython ipython3 bpython ptpython node nodejs"
    " ts-node tsx deno bun ruby irb pry perl re.pl php lua luajit R julia ghci gchi"
    " erl iex scala amm clj clojure sbcl clisp guile racket ocaml utop swipl tclsh wish"
    " jshell kotlinc groovysh sqlite3 psql mysql mariadb mongosh redis-cli gdb lldb"
    " octave matlab maxima expect"
)
"""Language REPLs (and consoles with a ``!``/``\\!``/``system`` escape): bare, or with
an option that says interactive, they read the terminal; given code or a script, not."""
OPENERS = _words("script su tmux screen byobu login sshpass")
"""Programs that start a shell of their own unless given a command."""
WRAPPERS = _words(
    "exec command builtin env nohup nice time timeout stdbuf setsid sudo doas unbuffer"
    " rlwrap winpty ionice chrt taskset flock caffeinate"
)
"""Words that run the command after them (their options skipped)."""
_WRAPPER_VALUES = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "doas": {"-u", "-C"},
    "nice": {"-n"},
    "timeout": {"-s", "-k"},
    "stdbuf": {"-i", "-o", "-e"},
    "ionice": {"-c", "-n", "-p"},
    "env": {"-u", "-C", "-S"},
    "flock": {"-w", "-E"},
}
_POSITIONAL = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1}
_CODE_FLAGS = _words(
    "-c -e -E -p -f --eval --print --command --execute --file --batch -batch --script"
)
"""Options of a REPL that give it its code: with one, it reads no commands from the
terminal."""
CONSOLES = _words("sqlite3 psql mysql mariadb mongosh redis-cli gdb lldb")
"""REPLs whose operands name what they work on, not their code: they read the terminal
unless an option gives the code (``sqlite3`` and ``redis-cli`` also take it as an
operand)."""
_INTERACTIVE_FLAGS = _words("-i --interactive -a --repl")
_STATEMENT = _words("; && || | |& & ( ) { } ! if then else elif fi do done while until")
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_VERSIONED = re.compile(r"^(python|pypy|ruby|perl|php|lua|node)[0-9.]*$")
_FIXED_STDIN = ("<<<",)
"""Redirections whose input is fixed text in the command line (a here-document is read
as one too)."""


def opens_interactive(command: str | Sequence[str]) -> str | None:
    """The program in ``command`` that would read commands from the terminal (``bash``,
    ``python3``, ``$SHELL``), or None. A command line kodelet's reader cannot follow is
    judged by its words alone."""
    if not isinstance(command, str):
        return _program([str(w) for w in command], fixed_stdin=False, depth=0)
    return _line(command, 0)


def _line(source: str, depth: int) -> str | None:
    if depth > MAX_NESTING:
        return "a shell nested too deep to read"
    try:
        items = parse(source)
    except Unreadable:
        return _by_words(source)
    return _items(items, depth)


def _items(items: Sequence[Item], depth: int) -> str | None:
    for item in items:
        if not isinstance(item, Simple):
            continue
        for sub in item.subs:  # $(...) and <(...) run on the same terminal
            found = _items(sub, depth + 1)
            if found:
                return found
        given = list(item.words)
        while given and given[0] and given[0][0].kind == "glob" and _ASSIGN.match(given[0][0].text):
            given.pop(0)
        words = [_text(w) for w in given]
        fixed = bool(item.heredocs) or any(_fixed(op, target) for op, target in item.redirects)
        found = _program(words, fixed_stdin=fixed, depth=depth)
        if found:
            return found
    return None


def _text(word: Word) -> str | None:
    """A word's text when the command line says it (no variable, no substitution)."""
    if any(p.kind not in ("lit", "glob") for p in word):
        return None
    return "".join(p.text for p in word)


def _fixed(op: str, target: Word) -> bool:
    """The redirection gives the command fixed input, never the terminal."""
    if op in _FIXED_STDIN:
        return True
    if op != "<":
        return False
    path = _text(target)
    return path is not None and not path.startswith(("/dev/", "/proc/"))


def _program(words: list[str | None], *, fixed_stdin: bool, depth: int) -> str | None:
    while words:
        head = words[0]
        if head is None:  # $SHELL, $(which bash): kodelet cannot tell what it starts
            rest = words[1:]
            return "a command named by a variable" if all(_is_option(w) for w in rest) else None
        name = os.path.basename(head.rstrip("/")) or head
        args = words[1:]
        if name in WRAPPERS:
            words = _after_wrapper(name, args)
            if name == "sudo" and any(a in ("-i", "-s", "--login", "--shell") for a in args):
                return "sudo -i"
            continue
        if name == "busybox" and args and args[0] in SHELLS:
            name, args = args[0], args[1:]
        if fixed_stdin:
            return None
        if name in SHELLS:
            return _shell(name, args, depth)
        if name in REPLS or _VERSIONED.match(name):
            return _repl(name, args)
        if name in OPENERS:
            return _opener(name, args, depth)
        if name == "ssh":
            return _ssh(args)
        return None
    return None


def _opener(name: str, args: list[str | None], depth: int) -> str | None:
    """``script``, ``su``, ``tmux``, ...: a shell of their own, unless given a command;
    ``script -c CMD`` and ``su -c CMD`` run CMD as a shell line, read as one."""
    for i, word in enumerate(args):
        if word is None or not _gives_command(word):
            continue
        if word.startswith("--command="):
            return _line(word.split("=", 1)[1], depth + 1)
        if word == "--command" or (not word.startswith("--") and word.endswith("c")):
            given = args[i + 1] if i + 1 < len(args) else None
            return None if given is None else _line(given, depth + 1)
        return None
    return name


def _gives_command(word: str | None) -> bool:
    """``-c``, ``-qc``, ``--command``, ``-d`` (tmux, screen: detached)."""
    if word is None or not word.startswith("-"):
        return False
    if word.startswith("--"):
        return word.split("=", 1)[0] == "--command"
    return "c" in word[1:] or "d" in word[1:]


def _is_option(word: str | None) -> bool:
    return word is not None and word.startswith(("-", "+"))


def _after_wrapper(name: str, args: list[str | None]) -> list[str | None]:
    takes = _WRAPPER_VALUES.get(name, set())
    positional = _POSITIONAL.get(name, 0)
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return args[i + 1 :]
        if name == "env" and word is not None and _ASSIGN.match(word):
            i += 1
            continue
        if _is_option(word):
            i += 2 if word in takes else 1
            continue
        if positional:
            positional -= 1
            i += 1
            continue
        break
    return args[i:]


def _shell(name: str, args: list[str | None], depth: int) -> str | None:
    i = 0
    while i < len(args):
        word = args[i]
        if word is None:
            return None  # a script named by a variable
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file", "-C"):
            i += 2
            continue
        if word.startswith("--"):
            if word in ("--interactive",):
                return name
            i += 1
            continue
        if word.startswith(("-", "+")) and len(word) > 1:
            flags = word[1:]
            if "c" in flags:
                code = args[i + 1] if i + 1 < len(args) else None
                return None if code is None else _line(code, depth + 1)
            if "i" in flags or "s" in flags:
                return f"{name} {word}"
            i += 1
            continue
        if word == "-":
            return f"{name} -"
        return None  # a script
    return name


def _repl(name: str, args: list[str | None]) -> str | None:
    interactive = any(a in _INTERACTIVE_FLAGS for a in args)
    if name.startswith(("python", "pypy")) and any(
        a is not None and a.startswith("-") and not a.startswith("--") and "i" in a[1:]
        for a in args
    ):
        interactive = True
    if interactive:
        return f"{name} -i"
    if name in CONSOLES:
        return _console(name, args)
    if name in ("deno", "bun"):
        return name if not args or args[0] == "repl" else None
    if len(args) >= 2 and args[0] == "-m" and args[1] in ("code", "IPython", "asyncio"):
        return f"{name} -m {args[1]}"
    i = 0
    while i < len(args):
        word = args[i]
        if word is None:
            return None
        if word == "-":
            return f"{name} -"
        if word in _CODE_FLAGS or word.startswith(("--eval=", "--command=")):
            code = (
                word.split("=", 1)[1] if "=" in word else (args[i + 1] if i + 1 < len(args) else "")
            )
            return _spawns(name, code or "")
        if word.startswith("-m"):
            return None
        if word.startswith("-"):
            i += 1
            continue
        return None  # a script
    return name


_SPAWNS = re.compile(
    r"""pty\.spawn|\binteract\b|(["'])(?:/[\w./-]*/)?(?:"""
    + "|".join(sorted(re.escape(n) for n in SHELLS))
    + r""")\1"""
)
"""Code that starts a shell on the terminal: Python's ``pty.spawn``, expect's
``interact``, or a shell's name quoted alone (``spawn("bash", ...)``,
``os.system('/bin/sh')``)."""


def _spawns(name: str, code: str) -> str | None:
    """``name`` given ``code`` that starts a shell of its own on the terminal."""
    return f"{name} code that starts a shell" if _SPAWNS.search(code) else None


def _console(name: str, args: list[str | None]) -> str | None:
    if any(a in _CODE_FLAGS or (a or "").startswith(("--eval=", "--command=")) for a in args):
        return None
    operands = [a for a in args if not _is_option(a)]
    if (name == "sqlite3" and len(operands) >= 2) or (name == "redis-cli" and operands):
        return None
    return name


def _ssh(args: list[str | None]) -> str | None:
    """ssh without a remote command opens the remote host's shell."""
    values = set("bcDEeFIiJLlmOopQRSWw")
    operands = []
    i = 0
    while i < len(args):
        word = args[i]
        if _is_option(word) and word is not None:
            i += 2 if len(word) == 2 and word[1] in values else 1
            continue
        operands.append(word)
        i += 1
    return "ssh" if len(operands) <= 1 else None


def _by_words(source: str) -> str | None:
    """A command line the reader cannot follow: an interpreter's name standing alone as a
    command (after ``;``, ``&&``, ``|``, ``(``, a newline or at the start) is taken as
    one that opens."""
    tokens = re.findall(r"[;&|()\n]|[^\s;&|()]+", source)
    start = True
    for token in tokens:
        if token in _STATEMENT or token == "\n":
            start = True
            continue
        if start and not _ASSIGN.match(token):
            name = os.path.basename(str(token))
            if name in SHELLS or name in REPLS or _VERSIONED.match(name):
                return name
            start = name in WRAPPERS
            continue
        start = start and bool(_ASSIGN.match(token))
    return None

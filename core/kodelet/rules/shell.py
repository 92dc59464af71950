"""Shell text -> every simple command it would run, with tree-sitter's bash grammar.

The model writes the command, so nothing here trusts its shape: the walk reaches every
simple command through ``;``, ``&&``, ``||``, pipes, subshells, ``{ }``, ``$(...)`` and
backticks, process substitution, here-docs and here-strings, control flow and function
bodies; ``bash -c``, ``eval`` and the wrappers are unwrapped by :mod:`.commands`, which
calls back into :meth:`Walk.nested` for strings that are shell code again.

Bounds, so hostile text costs little: text over :data:`MAX_TEXT` is not parsed (the
result says so in ``parse_error``); shell strings nest at most :data:`MAX_DEPTH` deep;
syntax nests at most :data:`MAX_NEST` deep; at most :data:`MAX_COMMANDS` commands are
kept. tree-sitter never fails on bad input: it marks ERROR nodes, which become
``parse_error`` while the commands around them are still reported.

A literal assignment earlier in the line is followed (``X=rm; $X -rf /`` runs ``rm``);
anything else that decides a program at run time makes that command ``dynamic``.
A function that calls itself in a pipe or in the background (``:(){ :|:& };:``) is
reported as a command whose program is :data:`FORK_BOMB`.
"""

from __future__ import annotations

import codecs
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from . import commands
from .commands import FORK_BOMB, Raw, Redirect, Simple
from .paths import Places
from .words import DYN, Part, Word

MAX_TEXT = 64 * 1024
MAX_DEPTH = 6
MAX_NEST = 120
MAX_COMMANDS = 2000
MAX_CDS = 16
MAX_STEPS = 20_000  # syntax nodes looked at, over all nested parses

_WORDISH = frozenset({
    "word", "string", "raw_string", "concatenation", "simple_expansion", "expansion",
    "command_substitution", "process_substitution", "arithmetic_expansion", "number",
    "ansi_c_string", "translated_string", "brace_expression", "string_content",
})  # fmt: skip
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SKIP = frozenset({"comment", "heredoc_body", "heredoc_start", "heredoc_end"})


@attrs.frozen
class Parsed:
    """What one command text runs, before any path is resolved (so it can be cached)."""

    commands: tuple[Raw, ...]
    parse_error: str


class Parser:
    """Parses command text, remembering the last ``size`` results by text.

    Owned by whoever builds it (the rules engine keeps one); tree-sitter is imported
    on first use, so building one costs nothing on a path where no rule is active.
    """

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._cache: OrderedDict[str, Parsed] = OrderedDict()
        self._ts: Any = None
        self._places: dict[tuple[str, str, str], Places] = {}

    def places(self, project: str, home: str, kodelet_home: str) -> Places:
        """The zone folders of a call, symlinks resolved once per parser and folders."""
        key = (project, home, kodelet_home)
        found = self._places.get(key)
        if found is None:
            if len(self._places) >= 64:
                self._places.clear()
            found = self._places[key] = Places.of(project, home, kodelet_home)
        return found

    def parse(self, text: str) -> Parsed:
        hit = self._cache.get(text)
        if hit is not None:
            self._cache.move_to_end(text)
            return hit
        parsed = self._parse(text)
        if self._size > 0:
            self._cache[text] = parsed
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return parsed

    def tree(self, data: bytes) -> Any:
        if self._ts is None:
            import tree_sitter
            import tree_sitter_bash

            self._ts = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        return self._ts.parse(data)

    def _parse(self, text: str) -> Parsed:
        if len(text) > MAX_TEXT:
            return Parsed((), f"command too long to judge ({len(text)} characters)")
        walk = Walk(self)
        walk.script(text, State(), (), (), depth=0)
        return Parsed(tuple(walk.commands), walk.error)


@attrs.define
class State:
    """What the line has set so far: literal variables (None: set at run time), the
    ``cd`` targets in effect, functions defined. Copied for subshells and pipe stages."""

    vars: dict[str, str | None] = attrs.Factory(dict)
    cds: tuple[Word, ...] = ()

    def copy(self) -> State:
        return State(dict(self.vars), self.cds)


@attrs.frozen
class _Ctx:
    st: State
    via: tuple[str, ...]
    upstream: tuple[int, ...]
    depth: int  # shell strings inside shell strings
    nest: int = 0  # syntax nesting within this text


class Walk:
    """One parse: the commands found so far and the first error."""

    def __init__(self, parser: Parser) -> None:
        self.parser = parser
        self.commands: list[Raw] = []
        self.error = ""
        self._extra: dict[int, list[Any]] = {}  # redirects the grammar hung on a list
        self.steps = 0
        self.data = b""  # the text being walked (nested parses swap their own in)

    # -- entry points used by .commands -------------------------------------------------
    def emit(self, raw: Raw) -> int:
        if len(self.commands) >= MAX_COMMANDS:
            self.fail(f"more than {MAX_COMMANDS} commands")
            return -1
        self.commands.append(raw)
        return len(self.commands) - 1

    def fail(self, why: str) -> None:
        if not self.error:
            self.error = why

    def nested(self, text: str, simple: Simple, via: str, depth: int) -> list[int]:
        """Parse ``text`` as shell run by ``simple`` (``bash -c``, ``eval``, a here-doc)."""
        st = State(cds=simple.cds)
        return self.script(text, st, (*simple.via, via), simple.upstream, depth + 1)

    def script(
        self, text: str, st: State, via: tuple[str, ...], upstream: tuple[int, ...], depth: int
    ) -> list[int]:
        if depth > MAX_DEPTH:
            self.fail("shell code nested too deep to judge")
            return []
        if len(text) > MAX_TEXT:
            self.fail(f"command too long to judge ({len(text)} characters)")
            return []
        data = text.encode("utf-8", "surrogatepass")
        # tree-sitter-bash reads out of bounds on some characters past U+FFFF after `{`
        # (a crash, at random); no byte >= 0x80 is shell syntax, so the grammar sees
        # ASCII of the same length and the words' text is taken from the real bytes.
        root = self.parser.tree(data.translate(_ASCII)).root_node
        outer, self.data = self.data, data
        try:
            return self.walk(root, _Ctx(st, via, upstream, depth))
        finally:
            self.data = outer

    def text(self, node: Any) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def snippet(self, node: Any) -> str:
        text = self.text(node)
        return text if len(text) <= 40 else text[:37] + "..."

    # -- statements ----------------------------------------------------------------------
    def walk(self, node: Any, ctx: _Ctx) -> list[int]:
        if ctx.nest > MAX_NEST:
            self.fail("command nested too deep to judge")
            return []
        self.steps += 1
        if self.steps > MAX_STEPS:
            self.fail(f"command too large to judge (over {MAX_STEPS} parts)")
            return []
        if len(self.commands) >= MAX_COMMANDS:
            self.fail(f"more than {MAX_COMMANDS} commands")
            return []
        kind = node.type
        if kind == "ERROR" or node.is_missing:
            self.fail(f"cannot parse the command near {self.snippet(node)!r}")
        if kind in _SKIP or not node.is_named:
            return []
        ctx = attrs.evolve(ctx, nest=ctx.nest + 1)
        if kind == "command":
            return self.command(node, [], ctx)
        if kind == "redirected_statement":
            return self.redirected(node, ctx)
        if kind == "pipeline":
            return self.pipeline(node, ctx)
        if kind in ("subshell", "process_substitution", "command_substitution"):
            inner = attrs.evolve(ctx, st=ctx.st.copy())
            if kind != "subshell":
                inner = attrs.evolve(inner, via=(*ctx.via, "subst"))
            return self.children(node, inner)
        if kind == "variable_assignment":
            return self.assign(node, ctx)
        if kind == "declaration_command":
            return self.declaration(node, ctx)
        if kind == "unset_command":
            for c in node.named_children:
                ctx.st.vars.pop(self.text(c), None)
            return []
        if kind == "function_definition":
            return self.function(node, ctx)
        if kind == "while_statement" and _spawns_forever(node, self.text):
            self.emit(
                Raw(program=FORK_BOMB, text=self.text(node), via=ctx.via, upstream=ctx.upstream)
            )
        if kind == "for_statement":
            var = node.child_by_field_name("variable")
            if var is not None:
                ctx.st.vars[self.text(var)] = None
        if kind in _WORDISH:
            out: list[int] = []
            self.word(node, ctx, out)
            return out
        return self.children(node, ctx)

    def children(self, node: Any, ctx: _Ctx) -> list[int]:
        out: list[int] = []
        for child in node.children:
            out.extend(self.walk(child, ctx))
        return out

    def pipeline(self, node: Any, ctx: _Ctx, upstream: tuple[int, ...] | None = None) -> list[int]:
        """Each stage's stdin is the stage before it (``upstream`` holds that stage's
        commands; facts follow the chain for what reaches a stage transitively)."""
        out: list[int] = []
        before = ctx.upstream if upstream is None else upstream
        first = upstream is None
        for child in node.children:
            if not child.is_named:
                continue
            via = ctx.via if first else (*ctx.via, "pipe")
            stage = attrs.evolve(ctx, st=ctx.st.copy(), via=via, upstream=before)
            got = self.walk(child, stage)
            out.extend(got)
            before = tuple(got) or before
            first = False
        return out

    def redirected(self, node: Any, ctx: _Ctx) -> list[int]:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.children if c.type in _REDIRECTS]
        for r in list(redirects):
            if r.type == "heredoc_redirect":  # `cat <<EOF > f`: the grammar nests `> f`
                redirects.extend(c for c in r.named_children if c.type in _REDIRECTS)
        last = body
        while last is not None and last.type in ("list", "pipeline") and last.named_children:
            last = last.named_children[-1]
        if body is not None and body.type == "command":
            out = self.command(body, redirects, ctx)
        elif last is not None and last.type == "command":
            # `a && b > f`, `a | b > f`: the grammar puts the redirect on the whole list,
            # bash on its last command.
            self._extra[last.id] = redirects
            out = self.walk(body, ctx)
        else:
            out = self.walk(body, ctx) if body is not None else []
            if redirects:
                out.extend(self.simple([], [], redirects, node, ctx))
        # `cat <<EOF | sh`: the grammar hangs the rest of the pipeline on the here-doc.
        for r in redirects:
            for tail in r.named_children:
                if tail.type in _SKIP or tail.type in _WORDISH or tail.type in _REDIRECTS:
                    continue
                if (
                    tail.type == "pipeline"
                    and tail.child_count
                    and tail.children[0].type
                    in (
                        "|",
                        "|&",
                    )
                ):
                    out.extend(self.pipeline(tail, ctx, upstream=tuple(out) or ctx.upstream))
                else:
                    out.extend(self.walk(tail, ctx))
        return out

    def assign(self, node: Any, ctx: _Ctx) -> list[int]:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        out: list[int] = []
        word = self.word(value, ctx, out) if value is not None else Word((("lit", ""),))
        if name is not None and name.type == "variable_name":
            literal = word.literal
            ctx.st.vars[self.text(name)] = literal if "\n" not in (literal or "\n") else None
        return out

    def declaration(self, node: Any, ctx: _Ctx) -> list[int]:
        out: list[int] = []
        words: list[Word] = []
        for c in node.children:
            if c.type == "variable_assignment":
                out.extend(self.assign(c, ctx))
            elif c.type == "variable_name":
                words.append(Word((("lit", self.text(c)),)))
            elif c.is_named:
                words.append(self.word(c, ctx, out))
            elif c.type in ("export", "declare", "local", "readonly", "typeset"):
                words.insert(0, Word((("lit", c.type),)))
        if words and words[0].literal in ("export", "declare", "typeset") and len(words) >= 1:
            out.extend(self._run(words, [], [], node, ctx, out))
        return out

    def function(self, node: Any, ctx: _Ctx) -> list[int]:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        out: list[int] = []
        if name_node is None or body is None:
            return out
        name = self.text(name_node)
        if _forks_itself(name, body, self.text):
            idx = self.emit(
                Raw(program=FORK_BOMB, text=self.text(node), via=ctx.via, upstream=ctx.upstream)
            )
            out.append(idx)
        inner = attrs.evolve(ctx, st=ctx.st.copy(), via=(*ctx.via, "function"))
        out.extend(self.walk(body, inner))
        return out

    # -- simple commands -----------------------------------------------------------------
    def command(self, node: Any, redirects: list[Any], ctx: _Ctx) -> list[int]:
        out: list[int] = []
        words: list[Word] = []
        assigns: list[str] = []
        reds = [*redirects, *self._extra.pop(node.id, [])]
        for c in node.children:
            if c.type == "variable_assignment":
                sub = attrs.evolve(ctx, st=ctx.st.copy())
                out.extend(self.assign(c, sub))
                name = c.child_by_field_name("name")
                if name is not None:
                    assigns.append(self.text(name))
            elif c.type == "command_name":
                for part in c.named_children:
                    words.append(self.word(part, ctx, out))
                    break
            elif c.type in _REDIRECTS:
                reds.append(c)
            elif c.is_named and c.type in _WORDISH:
                words.append(self.word(c, ctx, out))
            elif c.is_named and c.type not in _SKIP:
                out.extend(self.walk(c, ctx))
        if not words:
            if reds:
                out.extend(self._run([], assigns, reds, node, ctx, out))
            return out
        out.extend(self._run(words, assigns, reds, node, ctx, out))
        return out

    def simple(
        self, words: list[Word], assigns: list[str], reds: list[Any], node: Any, ctx: _Ctx
    ) -> list[int]:
        out: list[int] = []
        out.extend(self._run(words, assigns, reds, node, ctx, out))
        return out

    def _run(
        self,
        words: list[Word],
        assigns: list[str],
        reds: list[Any],
        node: Any,
        ctx: _Ctx,
        inner: list[int],
    ) -> list[int]:
        redirects: list[Redirect] = []
        stdin: list[Word] = []
        for r in reds:
            self.redirect(r, ctx, inner, redirects, stdin)
        simple = Simple(
            words=tuple(words),
            assigns=tuple(assigns),
            redirects=tuple(redirects),
            stdin=tuple(stdin),
            text=self.text(node),
            via=ctx.via,
            upstream=ctx.upstream,
            inner=tuple(inner),
            cds=ctx.st.cds,
        )
        got = commands.run(simple, self, ctx.depth)
        while len(words) > 1 and words[0].literal in ("builtin", "command"):
            words = words[1:]
        if words and words[0].literal == "popd":
            ctx.st.cds = (Word((("dyn", ""),)),)
        if words and words[0].literal in ("cd", "pushd"):
            rest = [
                w for w in words[1:] if not (w.literal or "").startswith("-") or w.literal == "-"
            ]
            target = rest[0] if rest else Word((("tilde", ""),))
            # Past MAX_CDS changes of folder the folder is taken as unknown.
            cds = (*ctx.st.cds, target) if len(ctx.st.cds) < MAX_CDS else (Word((("dyn", ""),)),)
            ctx.st.cds = cds
        return got

    def redirect(
        self,
        node: Any,
        ctx: _Ctx,
        inner: list[int],
        redirects: list[Redirect],
        stdin: list[Word],
    ) -> None:
        if node.type == "heredoc_redirect":
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            if body is not None:
                for c in body.named_children:
                    if c.type != "heredoc_content":
                        self.word(c, ctx, inner)
                stdin.append(Word((("lit", self.text(body)),)))
            return
        op = ""
        fd = ""
        target: Word | None = None
        for c in node.children:
            if c.type == "file_descriptor":
                fd = self.text(c)
            elif not c.is_named:
                op = c.type
            elif target is None:
                target = self.word(c, ctx, inner)
        if node.type == "herestring_redirect":
            if target is not None:
                stdin.append(target)
            return
        if (target is not None and op not in (">&", "<&", ">&-", "<&-")) or (
            target is not None and op == ">&" and not (target.literal or "").isdigit()
        ):
            redirects.append(Redirect(op, fd, target))

    # -- words ---------------------------------------------------------------------------
    def word(self, node: Any, ctx: _Ctx, inner: list[int]) -> Word:
        parts: list[Part] = []
        glob = self._parts(node, ctx, inner, parts, quoted=False, first=True)
        merged: list[Part] = []
        from_var = False
        for kind, value in parts:
            if kind == "tilde" and value == "" and "HOME" in ctx.st.vars:
                kind, value = "var", "HOME"  # HOME=/x; rm -rf ~
            if kind == "var" and value in ctx.st.vars:
                known = ctx.st.vars[value]
                from_var = True
                kind, value = ("lit", known) if known is not None else ("dyn", "")
            if kind == "lit" and merged and merged[-1][0] == "lit":
                merged[-1] = ("lit", merged[-1][1] + value)
            else:
                merged.append((kind, value))
        return Word(tuple(merged), glob=glob, from_var=from_var)

    def _parts(
        self, node: Any, ctx: _Ctx, inner: list[int], out: list[Part], quoted: bool, first: bool
    ) -> bool:
        self.steps += 1
        if self.steps > MAX_STEPS:
            self.fail(f"command too large to judge (over {MAX_STEPS} parts)")
            out.append(("dyn", ""))
            return False
        kind = node.type
        glob = False
        if kind == "word" or kind == "number" or (kind == "brace_expression"):
            raw = self.text(node)
            if not quoted and first and raw.startswith("~"):
                head, sep, rest = raw[1:].partition("/")
                if all(ch.isalnum() or ch in "._-" for ch in head):
                    out.append(("tilde", head))
                    raw = sep + rest
            text, glob = _unescape(raw, quoted)
            if text:
                out.append(("lit", text))
        elif kind == "raw_string":
            out.append(("lit", self.text(node)[1:-1]))
        elif kind == "ansi_c_string":
            out.append(_ansi_c(self.text(node)[2:-1]))
        elif kind in ("string", "translated_string"):
            for c in node.named_children:
                self._parts(c, ctx, inner, out, quoted=True, first=False)
            if not node.named_children and self.text(node).endswith('""') is False:
                out.append(("lit", ""))
        elif kind == "string_content":
            out.append(("lit", _dq_unescape(self.text(node))))
        elif kind == "concatenation":
            for i, c in enumerate(node.children):
                glob |= self._parts(c, ctx, inner, out, quoted, first and i == 0)
        elif kind == "simple_expansion":
            name = self.text(node)[1:]
            if name.isidentifier():
                out.append(("var", name))
            else:
                out.append(("dyn", ""))
        elif kind == "expansion":
            body = self.text(node)[2:-1]
            name = body.split(":", 1)[0].split("?", 1)[0]
            if body.isidentifier():
                out.append(("var", body))
            elif name.isidentifier() and body[len(name) :].lstrip(":")[:1] == "?":
                out.append(("var", name))  # ${HOME:?} is $HOME or an error
            else:
                out.append(("dyn", ""))
                for c in node.named_children:
                    if c.type not in ("variable_name",):
                        self.word(c, ctx, inner)
        elif kind in ("command_substitution", "process_substitution"):
            got = self.walk(node, ctx)
            inner.extend(got)
            out.append(("dyn", ""))
        elif not node.is_named:
            if kind not in ('"', "$'", "'"):
                text, g = _unescape(kind, quoted)
                glob |= g
                out.append(("lit", text))
        else:
            out.append(("dyn", ""))
            for c in node.named_children:
                if c.type in _WORDISH:
                    self.word(c, ctx, inner)
        return glob


_ASCII = bytes(range(128)) + b"a" * 128
"""Every byte >= 0x80 read as ``a``: what the grammar is shown in place of the text."""


def _unescape(raw: str, quoted: bool) -> tuple[str, bool]:
    """An unquoted word's backslashes removed, and whether it has an unescaped glob."""
    if quoted:
        return raw, False
    out: list[str] = []
    glob = False
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        if ch in "*?[":
            glob = True
        out.append(ch)
        i += 1
    return "".join(out), glob


def _dq_unescape(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw) and raw[i + 1] in '"\\$`\n':
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _ansi_c(body: str) -> Part:
    try:
        return ("lit", codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape"))
    except (UnicodeDecodeError, ValueError):
        return ("dyn", "")


def _forks_itself(name: str, body: Any, text: Callable[[Any], str]) -> bool:
    """The body runs ``name`` in a pipe, in the background, or more than once."""
    calls = 0
    risky = False
    stack: list[tuple[Any, bool]] = [(body, False)]
    seen = 0
    while stack and seen < 10_000:
        node, in_pipe = stack.pop()
        seen += 1
        if node.type == "command":
            cname = node.child_by_field_name("name")
            if cname is not None and text(cname) == name:
                calls += 1
                nxt = node.next_sibling
                if in_pipe or (nxt is not None and nxt.type == "&"):
                    risky = True
        for child in node.children:
            stack.append((child, in_pipe or node.type == "pipeline"))
    return risky or calls >= 2


_FOREVER = frozenset({"true", ":", "[ 1 ]", "[[ 1 ]]", "((1))", "(( 1 ))", "/bin/true"})


def _spawns_forever(node: Any, text: Callable[[Any], str]) -> bool:
    """``while true; do CMD & done``: an endless loop that starts a background process."""
    cond = node.child_by_field_name("condition")
    body = node.child_by_field_name("body")
    if cond is None or body is None or text(cond).strip().rstrip(";").strip() not in _FOREVER:
        return False
    stack = [body]
    seen = 0
    while stack and seen < 10_000:
        n = stack.pop()
        seen += 1
        if n.type == "&":
            return True
        if n.type not in ("while_statement", "for_statement", "function_definition"):
            stack.extend(n.children)
    return False


def words_text(words: Iterable[Word]) -> tuple[str, ...]:
    return tuple(w.text for w in words)


__all__ = ["DYN", "FORK_BOMB", "MAX_TEXT", "Parsed", "Parser", "State", "Walk"]

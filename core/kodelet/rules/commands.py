"""One simple command -> what it runs: wrappers unwrapped, flags normalized, paths sorted.

:func:`run` takes the words of one simple command (from :mod:`.shell`) and emits one
:class:`Raw` per program it runs: ``sudo env X=1 timeout 5 rm -rf x`` is ``rm`` reached
via sudo, env and timeout; ``bash -c '...'``, ``eval '...'``, ``watch '...'`` and a
here-doc fed to a shell are shell code again (parsed by the caller's :class:`Walk`,
depth-bounded); ``find ... -exec CMD {} ;`` and ``xargs CMD`` run CMD; ``python -c``
code is read with Python's own :mod:`ast` (``shutil.rmtree(p)`` is reported as
``rm -rf p``, ``os.system("...")`` as the shell command it runs).

Flags are normalized per program from the tables below: ``rm -rf``, ``rm -r -f``,
``rm -fR`` and ``rm --recursive --force`` all give ``{"recursive", "force"}``; a short
flag with no long name in the table stays as its letter. Nothing here resolves a path:
words stay symbolic (see :mod:`.words`) so the result can be cached by command text.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import attrs

from .words import DYN, Word, join, lit

MAX_PY_CODE = 16 * 1024
MAX_HOPS = 16
"""Wrappers unwrapped around one command (``sudo sudo sudo ...`` past this is unknown)."""
FORK_BOMB = "(fork-bomb)"


@attrs.frozen
class Redirect:
    op: str  # ">", ">>", "&>", "&>>", ">|", "<", "<>", ...
    fd: str
    target: Word


@attrs.frozen
class Simple:
    """One simple command as written, with where it stands in the line."""

    words: tuple[Word, ...]
    assigns: tuple[str, ...] = ()  # VAR=x prefixes (names)
    redirects: tuple[Redirect, ...] = ()
    stdin: tuple[Word, ...] = ()  # here-doc bodies and here-strings
    text: str = ""
    via: tuple[str, ...] = ()
    upstream: tuple[int, ...] = ()  # commands piped into this one (indices)
    inner: tuple[int, ...] = ()  # commands in its $(...), <(...), here-docs
    cds: tuple[Word, ...] = ()  # cd targets in effect, in order
    hops: int = 0  # wrappers unwrapped to reach it (sudo env timeout ...)


@attrs.frozen
class Raw:
    """A command after unwrapping, its words not yet resolved to paths."""

    program: str
    dynamic: bool = False
    subcommand: str = ""
    flags: frozenset[str] = frozenset()
    args: tuple[Word, ...] = ()
    paths: tuple[Word, ...] = ()
    writes: tuple[Word, ...] = ()
    reads: tuple[Word, ...] = ()
    via: tuple[str, ...] = ()
    upstream: tuple[int, ...] = ()
    inner: tuple[int, ...] = ()
    cds: tuple[Word, ...] = ()
    code_from_stdin: bool = False  # an interpreter that runs what is piped into it
    network: bool = False  # inline code that talks to the network (urllib, requests, ...)
    reads_env: bool = False  # inline code that reads the environment (os.environ)
    runs_fetched: bool = False  # runs code it receives from the network (bash -i >& /dev/tcp)
    stdin: tuple[Word, ...] = ()  # what it reads on stdin that is written in the line
    env_vars: tuple[str, ...] = ()  # variables its words expand ($NAME not set in the line)
    text: str = ""


class Walker(Protocol):
    commands: list[Raw]

    def emit(self, raw: Raw) -> int: ...
    def nested(self, text: str, simple: Simple, via: str, depth: int) -> list[int]: ...
    def fail(self, why: str) -> None: ...


# -- option tables --------------------------------------------------------------------------


@attrs.frozen
class Spec:
    short: Mapping[str, tuple[str, ...]] = attrs.Factory(dict)
    long: Mapping[str, str] = attrs.Factory(dict)  # alias -> canonical
    takes: frozenset[str] = frozenset()  # canonical names (or letters) that take a value
    first_stop: bool = False  # options end at the first operand


def _spec(
    short: str = "",
    long: str = "",
    takes: str = "",
    first_stop: bool = False,
) -> Spec:
    """``short="r=recursive R=recursive f=force D=delete,force"``, ``long="dir=directory"``."""
    smap: dict[str, tuple[str, ...]] = {}
    for item in short.split():
        letter, _, names = item.partition("=")
        smap[letter] = tuple(names.split(",")) if names else (letter,)
    lmap: dict[str, str] = {}
    for item in long.split():
        alias, _, canon = item.partition("=")
        lmap[alias] = canon or alias
    return Spec(smap, lmap, frozenset(takes.split()), first_stop)


GENERIC = Spec()

SPECS: dict[str, Spec] = {
    "rm": _spec("r=recursive R=recursive f=force i=interactive I=interactive-once v=verbose "
                "d=dir", "recursive force"),
    "rmdir": _spec("p=parents v=verbose"),
    "cp": _spec("r=recursive R=recursive f=force a=archive i=interactive n=no-clobber "
                "u=update v=verbose l=link s=symbolic-link t=target-directory "
                "T=no-target-directory p=preserve b=backup S=suffix",
                "", "target-directory suffix"),
    "mv": _spec("f=force i=interactive n=no-clobber u=update v=verbose t=target-directory "
                "T=no-target-directory b=backup S=suffix", "", "target-directory suffix"),
    "ln": _spec("s=symbolic f=force n=no-dereference r=relative t=target-directory "
                "T=no-target-directory b=backup v=verbose S=suffix",
                "", "target-directory suffix"),
    "install": _spec("d=directory m=mode o=owner g=group t=target-directory D v=verbose "
                     "S=suffix", "", "mode owner group target-directory suffix"),
    "chmod": _spec("R=recursive f=silent v=verbose c=changes", "quiet=silent", "reference"),
    "chown": _spec("R=recursive h=no-dereference f=silent v=verbose c=changes H L P",
                   "quiet=silent", "reference from"),
    "chgrp": _spec("R=recursive h=no-dereference f=silent v=verbose c=changes",
                   "quiet=silent", "reference"),
    "chattr": _spec("R=recursive V f", "", "v p"),
    "shred": _spec("u=remove z=zero f=force v=verbose n=iterations s=size x=exact",
                   "", "iterations size random-source"),
    "truncate": _spec("s=size c=no-create o=io-blocks r=reference", "", "size reference"),
    "mkdir": _spec("p=parents m=mode v=verbose", "", "mode"),
    "touch": _spec("a c=no-create d=date m r=reference t", "", "date reference t"),
    "tee": _spec("a=append i=ignore-interrupts p"),
    "sed": _spec("i=in-place n=quiet e=expression f=file E=regexp-extended "
                 "r=regexp-extended s=separate z=null-data u=unbuffered l",
                 "silent=quiet", "expression file l"),
    "perl": _spec("e=e E=e i=in-place n p l a F M m I x 0 c w W X s T t",
                  "", "e I M m F"),
    "grep": _spec("e=regexp f=file r=recursive R=dereference-recursive i=ignore-case "
                  "v=invert-match l=files-with-matches L=files-without-match n=line-number "
                  "c=count E=extended-regexp F=fixed-strings P=perl-regexp o=only-matching "
                  "w=word-regexp x=line-regexp q=quiet s=no-messages H=with-filename "
                  "h=no-filename A=after-context B=before-context C=context m=max-count "
                  "a=text z=null-data", "",
                  "regexp file after-context before-context context max-count include "
                  "exclude exclude-dir color colour label"),
    "head": _spec("n=lines c=bytes q=quiet v=verbose z", "", "lines bytes"),
    "tail": _spec("n=lines c=bytes f=follow F q=quiet v=verbose s=sleep-interval",
                  "", "lines bytes sleep-interval pid"),
    "curl": _spec("d=data F=form T=upload-file o=output O=remote-name X=request H=header "
                  "u=user A=user-agent e=referer x=proxy K=config b=cookie c=cookie-jar "
                  "s=silent S=show-error L=location k=insecure f=fail I=head v=verbose "
                  "m=max-time w=write-out r=range E=cert i=include G=get Z=parallel "
                  "C=continue-at Y=speed-limit y=speed-time z=time-cond",
                  "data-ascii=data", "data data-binary data-raw data-urlencode json form "
                  "form-string upload-file output request header user user-agent referer "
                  "proxy config cookie cookie-jar max-time write-out range cert key cacert "
                  "connect-timeout retry output-dir url continue-at speed-limit speed-time "
                  "time-cond resolve connect-to interface dns-servers unix-socket"),
    "wget": _spec("O=output-document o=output-file a=append-output q=quiet P=directory-prefix "
                  "U=user-agent i=input-file c=continue N=timestamping r=recursive "
                  "np=no-parent nv=no-verbose v=verbose b=background t=tries T=timeout "
                  "l=level e=execute",
                  "", "output-document output-file append-output directory-prefix user-agent "
                  "input-file post-file post-data body-file body-data header tries timeout "
                  "level execute method user password"),
    "tar": _spec("c=create x=extract t=list f=file z=gzip j=bzip2 J=xz v=verbose "
                 "C=directory p=preserve-permissions r=append u=update P=absolute-names "
                 "k=keep-old-files O=to-stdout a=auto-compress T=files-from X=exclude-from",
                 "get=extract", "file directory files-from exclude-from exclude"),
    "rsync": _spec("a=archive r=recursive v=verbose z=compress n=dry-run e=rsh "
                   "u=update c=checksum h=human-readable P=partial,progress q=quiet "
                   "l=links p=perms t=times g=group o=owner D=devices,specials "
                   "x=one-file-system H=hard-links A=acls X=xattrs",
                   "", "rsh exclude include exclude-from include-from files-from "
                   "filter backup-dir partial-dir temp-dir chown chmod rsync-path "
                   "log-file password-file"),
    "dd": _spec(),
    "python": _spec("c=c m=m W X u I B E O OO s S v q b d i P h V", "", "c m W X"),
    "node": _spec("e=eval p=print r=require i=interactive c=check", "",
                  "eval print require input-type import loader experimental-loader"),
    "ruby": _spec("e=e r I n p a l w W c d v", "", "e r I E C"),
    "php": _spec("r=r f=f", "", "r f d c"),
    "bash": _spec("c=c s=s i=i l=login e x u v n r=restricted o O",
                  "", "o O rcfile init-file"),
    "xargs": _spec("0=null d=delimiter I=replace i L=max-lines l n=max-args P=max-procs "
                   "s=max-chars E=eof e r=no-run-if-empty t=verbose p=interactive x=exit "
                   "a=arg-file o=open-tty",
                   "", "delimiter replace max-lines max-args max-procs max-chars eof "
                   "arg-file process-slot-var I L n P s E d a", first_stop=True),
    "scp": _spec("r=recursive P=port i=identity-file o=option F=ssh-config C=compress "
                 "q=quiet v=verbose p=preserve l=limit c=cipher J=jump S=program 3 4 6 "
                 "B=batch T", "", "port identity-file option ssh-config limit cipher jump "
                 "program"),
    "ssh": _spec("p=port i=identity-file o=option F=ssh-config l=login-name L=local "
                 "R=remote D=dynamic W J=jump E=log-file S=control-path b=bind-address "
                 "c=cipher m=mac e=escape w=tunnel O=ctl-cmd Q=query B=bind-interface "
                 "N T t A a X Y x C q v f g K k M n s V G 4 6",
                 "", "port identity-file option ssh-config login-name local remote dynamic "
                 "W jump log-file control-path bind-address cipher mac escape tunnel "
                 "ctl-cmd query bind-interface", first_stop=True),
    "nc": _spec("l=listen p=port e=exec c=sh-exec w=wait s=source q u k v n z 4 6 "
                "N i x X", "", "port exec sh-exec wait source i x X q"),
    "kill": _spec("s=signal n l=list", "", "signal n"),
    "sort": _spec("o=output r=reverse n=numeric-sort u=unique k=key t=field-separator "
                  "S=buffer-size T=temporary-directory f i b d g h M R V c C m s z",
                  "", "output key field-separator buffer-size temporary-directory"),
    "unzip": _spec("d=d o=overwrite q n l t x", "", "d x"),
    "zip": _spec("r=recursive q m=move d=delete u=update", "", ""),
    "awk": _spec("f=file v=assign F=field-separator e=source", "",
                 "file assign field-separator source"),
    "cut": _spec("d=delimiter f=fields c=characters b=bytes s=only-delimited z=zero-terminated",
                 "", "delimiter fields characters bytes output-delimiter"),
    "make": _spec("C=directory f=file j=jobs l=load-average k=keep-going n=dry-run s=silent "
                  "B=always-make e=environment-overrides i=ignore-errors q=question "
                  "I=include-dir o=old-file W=what-if",
                  "", "directory file load-average include-dir old-file what-if"),
    "mkfs": _spec("t=type V=verbose c L=label F=force f=force q=quiet", "", "type label"),
    "jq": _spec("r=raw-output c=compact-output s=slurp n=null-input e=exit-status "
                "f=from-file L", "", "arg argjson slurpfile rawfile from-file indent L"),
}  # fmt: skip
for _alias, _real in (
    ("egrep", "grep"), ("fgrep", "grep"), ("rg", "grep"), ("ag", "grep"),
    ("sh", "bash"), ("zsh", "bash"), ("dash", "bash"), ("ksh", "bash"), ("mksh", "bash"),
    ("ash", "bash"), ("fish", "bash"), ("ncat", "nc"), ("netcat", "nc"), ("gawk", "awk"),
    ("mawk", "awk"), ("nodejs", "node"), ("unlink", "rm"), ("srm", "rm"), ("gtar", "tar"),
    ("bsdtar", "tar"), ("sftp", "scp"), ("pkill", "kill"), ("killall", "kill"),
):  # fmt: skip
    SPECS[_alias] = SPECS[_real]

GIT = _spec("C=C c=c p=paginate P=no-pager h=help v=version",
            "", "C c git-dir work-tree namespace exec-path super-prefix config-env",
            first_stop=True)  # fmt: skip
GIT_SUB: dict[str, Spec] = {
    "push": _spec("f=force d=delete n=dry-run u=set-upstream q=quiet v=verbose o=push-option "
                  "4 6", "", "push-option repo receive-pack exec recurse-submodules"),
    "reset": _spec("q=quiet p=patch N=intent-to-add"),
    "clean": _spec("f=force d x X n=dry-run i=interactive q=quiet e=exclude", "", "exclude"),
    "checkout": _spec("f=force b B l q=quiet m=merge p=patch t=track", "", "b B orphan"),
    "switch": _spec("c=create C=force-create f=force d=detach t=track m=merge q=quiet",
                    "discard-changes=force", "create force-create orphan"),
    "restore": _spec("s=source S=staged W=worktree p=patch q=quiet", "", "source"),
    "branch": _spec("d=delete D=delete,force f=force m=move M=move,force c=copy C=copy,force "
                    "r=remotes a=all l=list v=verbose q=quiet t=track u=set-upstream-to",
                    "", "set-upstream-to contains merged no-merged points-at format sort"),
    "commit": _spec("a=all m=message F=file C=reuse-message c=reedit-message n=no-verify "
                    "q=quiet v=verbose s=signoff p=patch e=edit t=template S=gpg-sign "
                    "u=untracked-files", "", "message file reuse-message reedit-message "
                    "template author date fixup squash trailer cleanup"),
    "rebase": _spec("i=interactive f=force-rebase x=exec q=quiet v=verbose r=rebase-merges "
                    "s=strategy X=strategy-option", "", "onto exec strategy strategy-option"),
    "stash": _spec("p=patch k=keep-index u=include-untracked a=all q=quiet m=message",
                   "", "message"),
    "tag": _spec("d=delete f=force a=annotate s=sign m=message F=file l=list v=verify "
                 "u=local-user", "", "message file local-user"),
    "rm": _spec("r=recursive f=force n=dry-run q=quiet", "cached=cached"),
    "add": _spec("A=all f=force n=dry-run u=update p=patch i=interactive v=verbose N"),
    "fetch": _spec("f=force p=prune q=quiet v=verbose a=append t=tags n"),
    "pull": _spec("f=force r=rebase q=quiet v=verbose s=strategy X=strategy-option",
                  "", "strategy strategy-option"),
    "worktree": _spec("f=force b B", "", "b B"),
    "update-ref": _spec("d=delete m", "", "m"),
    "reflog": _spec(),
    "gc": _spec("q=quiet"),
    "filter-branch": _spec("f=force d", "", "d env-filter tree-filter index-filter "
                           "msg-filter commit-filter subdirectory-filter parent-filter"),
    "log": _spec("n=max-count p=patch", "", "max-count format pretty grep author since until"),
    "diff": _spec("p=patch U=unified", "", "unified output"),
    "merge": _spec("m=message s=strategy X=strategy-option", "", "message strategy"),
    "clone": _spec("b=branch o=origin q=quiet", "", "branch origin depth reference"),
}  # fmt: skip

SUBCOMMANDS = frozenset({
    "git", "npm", "pnpm", "yarn", "bun", "pip", "pip3", "uv", "poetry", "pipx", "pdm",
    "hatch", "conda", "mamba", "docker", "podman", "kubectl", "helm", "cargo", "go",
    "rustup", "systemctl", "launchctl", "apt", "apt-get", "dnf", "yum", "brew", "snap",
    "gh", "glab", "terraform", "tofu", "aws", "gcloud", "az", "gsutil", "heroku", "fly",
    "flyctl", "vercel", "netlify", "firebase", "supabase", "gem", "bundle", "dotnet",
    "mvn", "gradle", "nix", "svn", "hg", "crontab", "kodelet", "claude", "codex",
    "gemini", "qwen", "opencode", "copilot", "service", "ufw", "openssl", "compose", "make",
    "just", "deno",
})  # fmt: skip
"""Programs whose first operand is a subcommand (``git push``, ``docker rm``)."""

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox"})
PYTHONS = re.compile(r"(python|pypy)[0-9.]*$")
INLINE = {"node": "eval", "nodejs": "eval", "perl": "e", "ruby": "e", "php": "r",
          "deno": "eval", "bun": "eval"}  # fmt: skip
"""Interpreters whose inline-code option names the code (shown as an arg)."""

NULL_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})

WRITES_ALL = frozenset({
    "rm", "rimraf", "trash", "trash-put", "rmdir", "unlink", "shred", "srm", "wipe",
    "truncate", "touch", "mkdir", "tee",
    "mkfs", "wipefs", "fdisk", "sfdisk", "parted", "mkswap", "gdisk", "sgdisk", "mke2fs",
    "blkdiscard", "vi", "vim", "nvim", "nano", "emacs", "ed",
})  # fmt: skip
WRITES_AFTER_FIRST = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl"})
READS_ALL = frozenset({
    "cat", "tac", "less", "more", "head", "tail", "base64", "base32", "xxd", "od", "hexdump",
    "strings", "nl", "wc", "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "file",
    "diff", "cmp", "source", ".", "bat", "batcat", "view", "zcat", "zless", "bzcat", "xzcat",
    "gpg", "uniq", "cut", "paste", "column", "fold", "iconv", "vi", "vim", "nvim", "nano",
    "emacs", "sort", "stat", "ls", "du", "readlink", "realpath",
})  # fmt: skip
READS_AFTER_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "awk", "gawk", "jq"})
NETWORK = frozenset({
    "curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync", "telnet",
    "ftp", "tftp", "http", "https", "xh", "httpie", "aria2c", "lftp", "openssl", "smbclient",
    "mail", "sendmail", "mutt", "s3cmd", "gsutil", "rclone", "websocat", "nslookup", "dig",
    "ping",
})  # fmt: skip


# -- options ------------------------------------------------------------------------------


@attrs.define
class Opts:
    flags: set[str] = attrs.Factory(set)
    operands: list[Word] = attrs.Factory(list)
    values: list[tuple[str, Word]] = attrs.Factory(list)

    def value(self, *names: str) -> list[Word]:
        return [w for n, w in self.values if n in names]


def options(words: Sequence[Word], spec: Spec) -> Opts:
    out = Opts()
    i = 0
    n = len(words)
    while i < n:
        w = words[i]
        t = w.literal
        i += 1
        if t is None or t == "-" or not t.startswith("-") or (out.operands and spec.first_stop):
            out.operands.append(w)
            if spec.first_stop:
                out.operands.extend(words[i:])
                break
            continue
        if t == "--":
            out.operands.extend(words[i:])
            break
        if t.startswith("--"):
            name, eq, _ = t[2:].partition("=")
            canon = spec.long.get(name, name)
            out.flags.add(canon)
            if eq:
                out.values.append((canon, _tail(w, len(name) + 3)))
            elif canon in spec.takes and i < n:
                out.values.append((canon, words[i]))
                i += 1
            continue
        cluster = t[1:]
        if cluster.isdigit():  # -9, -20: a number, not flags 2 and 0
            out.flags.add(cluster)
            continue
        for j, letter in enumerate(cluster):
            names = spec.short.get(letter, (letter,))
            out.flags.update(names)
            canon = names[0]
            if canon in spec.takes or letter in spec.takes:
                rest = cluster[j + 1 :]
                if rest:
                    out.values.append((canon, _tail(w, j + 2)))
                elif i < n:
                    out.values.append((canon, words[i]))
                    i += 1
                break
    return out


def _tail(w: Word, skip: int) -> Word:
    """``w`` without its first ``skip`` literal characters (an option's attached value)."""
    parts = list(w.parts)
    while skip and parts:
        kind, value = parts[0]
        if kind != "lit":
            break
        if len(value) <= skip:
            skip -= len(value)
            parts.pop(0)
        else:
            parts[0] = ("lit", value[skip:])
            skip = 0
    return Word(tuple(parts) or (("lit", ""),), glob=w.glob)


def _base(text: str) -> str:
    return posixpath.basename(text.rstrip("/")) or text


def path_like(w: Word) -> bool:
    """An operand that names a file by its shape (``/x``, ``~/x``, ``./x``, ``a/b``,
    ``$HOME/x``), not a URL, option or remote ``host:path``."""
    if not w.parts:
        return False
    kind, value = w.parts[0]
    if kind in ("tilde",):
        return True
    if kind == "var":
        return value in ("HOME", "PWD", "TMPDIR", "OLDPWD", "USERPROFILE", "XDG_CONFIG_HOME")
    if kind == "dyn":
        return False
    t = w.text
    if "://" in t or t.startswith("-") or "\n" in t:
        return False
    if t in (".", "..") or t.startswith(("/", "./", "../", "~")):
        return True
    head = t.split("/", 1)[0]
    if ":" in head or "@" in head or "=" in head:
        return False
    return "/" in t


# -- running one simple command ---------------------------------------------------------------


@attrs.define
class _Cmd:
    """A command being assembled (mutable while its program's handler runs)."""

    simple: Simple
    walker: Walker
    depth: int
    program: str
    via: list[str]
    cds: list[Word]
    words: list[Word]  # arguments after the program
    flags: set[str] = attrs.Factory(set)
    subcommand: str = ""
    args: list[Word] = attrs.Factory(list)
    paths: list[Word] = attrs.Factory(list)
    writes: list[Word] = attrs.Factory(list)
    reads: list[Word] = attrs.Factory(list)
    inner: list[int] = attrs.Factory(list)
    code_from_stdin: bool = False
    dynamic: bool = False
    network: bool = False
    reads_env: bool = False
    runs_fetched: bool = False

    def emit(self) -> list[int]:
        for r in self.simple.redirects:
            t = r.target.literal
            if (t or "").startswith(("/dev/tcp/", "/dev/udp/")):
                self.network = True  # bash opens a socket: `cat key > /dev/tcp/host/80`
                self.runs_fetched |= self.program in SHELLS or bool(PYTHONS.match(self.program))
            if t in NULL_DEVICES or (t or "").startswith("/dev/fd/"):
                continue
            if r.op in ("<", "<>"):
                self.reads.append(r.target)
            if r.op != "<":
                self.writes.append(r.target)
        paths = list(dict.fromkeys((*self.paths, *self.writes, *self.reads)))
        raw = Raw(
            program=self.program,
            dynamic=self.dynamic,
            subcommand=self.subcommand,
            flags=frozenset(self.flags),
            args=tuple(self.args),
            paths=tuple(paths),
            writes=tuple(dict.fromkeys(self.writes)),
            reads=tuple(dict.fromkeys(self.reads)),
            via=tuple(self.via),
            upstream=self.simple.upstream,
            inner=(*self.simple.inner, *self.inner),
            cds=tuple(self.cds),
            code_from_stdin=self.code_from_stdin,
            network=self.network,
            reads_env=self.reads_env,
            runs_fetched=self.runs_fetched,
            stdin=self.simple.stdin,
            env_vars=tuple(
                dict.fromkeys(
                    v
                    for w in (*self.simple.words, *self.simple.stdin)
                    for kind, v in w.parts
                    if kind == "var"
                )
            ),
            text=self.simple.text,
        )
        idx = self.walker.emit(raw)
        return [idx] if idx >= 0 else []

    def again(self, words: Sequence[Word], via: str) -> list[int]:
        """Run ``words`` as a command of its own, reached through ``via``."""
        if not words:
            return []
        simple = attrs.evolve(
            self.simple,
            words=tuple(words),
            via=(*self.via, via),
            cds=tuple(self.cds),
            redirects=self.simple.redirects,
            hops=self.simple.hops + 1,
        )
        return run(simple, self.walker, self.depth)

    def shell(self, code: Word, via: str) -> list[int]:
        """Run ``code`` as shell code (``bash -c``, ``eval``); dynamic when not literal."""
        text = code.literal
        simple = attrs.evolve(self.simple, via=tuple(self.via), cds=tuple(self.cds), redirects=())
        if text is None:
            raw = Raw(
                program="",
                dynamic=True,
                args=(code,),
                via=(*self.via, via),
                upstream=self.simple.upstream,
                inner=self.simple.inner,
                cds=tuple(self.cds),
                text=self.simple.text,
            )
            idx = self.walker.emit(raw)
            return [idx] if idx >= 0 else []
        return self.walker.nested(text, simple, via, self.depth)


def run(simple: Simple, walker: Walker, depth: int) -> list[int]:
    """Emit the command(s) ``simple`` runs; returns their indices."""
    words = list(simple.words)
    if not words:
        cmd = _Cmd(simple, walker, depth, ":", list(simple.via), list(simple.cds), [])
        return cmd.emit()
    if simple.hops > MAX_HOPS:
        walker.fail(f"more than {MAX_HOPS} wrappers around one command")
        cmd = _Cmd(simple, walker, depth, "", list(simple.via), list(simple.cds), [])
        cmd.dynamic = True
        return cmd.emit()
    head = words[0]
    name = head.literal
    via = list(simple.via)
    if name is None:
        tail = head.text.rsplit("/", 1)[-1]
        if DYN in tail or not tail:
            cmd = _Cmd(simple, walker, depth, "", via, list(simple.cds), words[1:])
            cmd.dynamic = True
            cmd.args = words[1:]
            return cmd.emit()
        name = tail
    program = _base(name)
    if head.from_var:
        via.append("var")
    cmd = _Cmd(simple, walker, depth, program, via, list(simple.cds), words[1:])
    handler = HANDLERS.get(program)
    if handler is None:
        if PYTHONS.match(program):
            handler = _python
        elif program.startswith("mkfs"):
            handler = _writes_all
    if handler is not None:
        got = handler(cmd)
        if got is not None:
            return got
    else:
        _generic(cmd)
    return cmd.emit()


def _generic(cmd: _Cmd, spec: Spec | None = None) -> Opts:
    """Flags, subcommand and args by the program's table (or the generic rules)."""
    program = cmd.program
    if spec is None:
        spec = SPECS.get(program, GENERIC)
        if program in SUBCOMMANDS:
            spec = attrs.evolve(spec, first_stop=True)
    opts = options(cmd.words, spec)
    cmd.flags |= opts.flags
    operands = opts.operands
    if program in SUBCOMMANDS and operands and operands[0].literal is not None:
        cmd.subcommand = operands[0].literal or ""
        rest = options(operands[1:], GENERIC)
        cmd.flags |= rest.flags
        operands = rest.operands
        opts.values.extend(rest.values)
    cmd.args.extend(operands)
    for w in operands:
        if path_like(w):
            cmd.paths.append(w)
    for _, v in opts.values:
        if path_like(v):
            cmd.paths.append(v)
    return opts


def _all_paths(cmd: _Cmd, opts: Opts, skip_first: bool = False) -> list[Word]:
    ops = opts.operands[1:] if skip_first else opts.operands
    cmd.paths.extend(ops)
    return list(ops)


def _writes_all(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    if cmd.program == "rimraf":  # npx rimraf: rm -rf under another name
        cmd.flags |= {"recursive", "force"}
    cmd.writes.extend(_all_paths(cmd, opts, cmd.program in WRITES_AFTER_FIRST))
    if cmd.program in READS_ALL:
        cmd.reads.extend(_all_paths(cmd, opts))


def _reads_all(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    skip = cmd.program in READS_AFTER_FIRST and not opts.value("regexp", "file", "e", "f")
    cmd.reads.extend(_all_paths(cmd, opts, skip))
    cmd.reads.extend(opts.value("file", "from-file", "f"))


def _chmod(cmd: _Cmd) -> None:
    # A mode such as -x or -w is an operand, not a flag.
    fixed = [lit("+" + (w.literal or "")[1:]) if _is_mode(w) else w for w in cmd.words]
    cmd.words = fixed
    opts = _generic(cmd)
    ops = opts.operands
    if cmd.program == "chmod" and ops and (ops[0].literal or "").startswith("+"):
        ops[0] = lit("-" + (ops[0].literal or "")[1:])
        cmd.args[0] = ops[0]
    skip = not opts.value("reference")
    cmd.writes.extend(_all_paths(cmd, opts, skip))


def _is_mode(w: Word) -> bool:
    t = w.literal or ""
    return len(t) > 1 and t[0] == "-" and all(c in "rwxXst" for c in t[1:])


def _copy(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    ops = _all_paths(cmd, opts)
    target = opts.value("target-directory")
    cmd.paths.extend(target)
    if target:
        dest, srcs = target, ops
    else:
        dest, srcs = ops[-1:], ops[:-1]
    cmd.writes.extend(dest)
    if cmd.program == "mv":
        cmd.writes.extend(srcs)
    else:
        cmd.reads.extend(srcs)


def _install(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    ops = _all_paths(cmd, opts)
    target = opts.value("target-directory")
    if "directory" in opts.flags:
        cmd.writes.extend(ops)
    elif target:
        cmd.writes.extend(target)
        cmd.reads.extend(ops)
    else:
        cmd.writes.extend(ops[-1:])
        cmd.reads.extend(ops[:-1])


def _remote(w: Word) -> bool:
    t = w.text
    if "::" in t or t.startswith("rsync://"):
        return True
    head = t.split("/", 1)[0]
    return ":" in head and not t.startswith(("/", "./", "~"))


def _transfer(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    ops = list(opts.operands)
    local = [w for w in ops if not _remote(w)]
    cmd.paths.extend(local)
    if ops:
        dest, srcs = ops[-1], ops[:-1]
        if not _remote(dest):
            cmd.writes.append(dest)
        cmd.reads.extend(w for w in srcs if not _remote(w))
    if cmd.program == "rsync":
        cmd.flags |= {f for f in opts.flags if f.startswith("delete")} and {"delete"}


def _dd(cmd: _Cmd) -> None:
    _generic(cmd)
    for w in cmd.args:
        t = w.text
        if t.startswith("of="):
            target = _tail(w, 3)
            cmd.paths.append(target)
            if target.literal not in NULL_DEVICES:
                cmd.writes.append(target)
        elif t.startswith("if="):
            target = _tail(w, 3)
            cmd.paths.append(target)
            cmd.reads.append(target)


def _tee(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    cmd.writes.extend(w for w in _all_paths(cmd, opts) if w.literal not in NULL_DEVICES)


def _ln(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    ops = _all_paths(cmd, opts)
    target = opts.value("target-directory")
    cmd.writes.extend(target or ops[-1:] if len(ops) > 1 or target else ops)


def _sed(cmd: _Cmd) -> None:
    words = list(cmd.words)
    in_place = False
    fixed: list[Word] = []
    for w in words:
        t = w.literal or ""
        if t.startswith("-") and not t.startswith("--") and "i" in t[1:]:
            # GNU sed: -i takes an optional attached suffix, so `-ie` is -i with suffix "e".
            before = t[1 : t.index("i", 1)]
            in_place = True
            fixed.append(lit("-" + before + "i") if before else lit("-i"))
            continue
        if t.startswith("--in-place"):
            in_place = True
            fixed.append(lit("--in-place"))
            continue
        fixed.append(w)
    cmd.words = fixed
    opts = _generic(cmd)
    scripted = bool(opts.value("expression", "file"))
    ops = opts.operands if scripted else opts.operands[1:]
    cmd.paths.extend(ops)
    cmd.reads.extend(ops)
    if in_place or cmd.program == "perl":
        cmd.flags.add("in-place")
        cmd.writes.extend(ops)


def _curl(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    for name, w in opts.values:
        t = w.text
        if name in ("data", "data-binary", "data-urlencode", "json") and "@" in t:
            f = _tail(w, t.index("@") + 1)
            if f.literal != "-":
                cmd.reads.append(f)
        elif name in ("form",) and ("=@" in t or "=<" in t):
            at = t.index("=") + 2
            f = _tail(w, at)
            f = Word(tuple((k, v.split(";", 1)[0]) for k, v in f.parts), glob=f.glob)
            cmd.reads.append(f)
        elif name in ("upload-file", "config", "cert", "key") and t != "-":
            cmd.reads.append(w)
        elif name in ("output", "cookie-jar") and t not in NULL_DEVICES:
            cmd.writes.append(w)
    if opts.flags & {"remote-name", "remote-name-all"}:
        cmd.writes.extend(_url_names(opts.operands))
    cmd.paths.extend((*cmd.reads, *cmd.writes))


def _url_names(words: Sequence[Word]) -> list[Word]:
    """The files ``curl -O`` / ``wget`` save URLs as: the last part of each URL's path."""
    out: list[Word] = []
    for w in words:
        t = w.literal or ""
        if "://" not in t:
            continue
        name = t.split("://", 1)[1].split("?", 1)[0].split("#", 1)[0].rsplit("/", 1)
        if len(name) == 2 and name[1] not in ("", ".", ".."):
            out.append(lit(name[1]))
    return out


_WGET_WRITES = ("output-document", "output-file", "append-output", "directory-prefix")


def _wget(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    for name, w in opts.values:
        if name in ("post-file", "body-file", "input-file"):
            cmd.reads.append(w)
        elif name in _WGET_WRITES and w.literal not in NULL_DEVICES:
            cmd.writes.append(w)
    if not opts.value("output-document", "directory-prefix"):
        cmd.writes.extend(_url_names(opts.operands))
    cmd.paths.extend((*cmd.reads, *cmd.writes))


def _tar(cmd: _Cmd) -> None:
    words = list(cmd.words)
    if words and (words[0].literal or "-").isalpha():
        words[0] = lit("-" + (words[0].literal or ""))  # old style: tar xzf a.tgz
        cmd.words = words
    opts = _generic(cmd)
    archive = opts.value("file")
    ops = _all_paths(cmd, opts)
    cmd.paths.extend(archive)
    if "create" in opts.flags or "append" in opts.flags or "update" in opts.flags:
        cmd.writes.extend(w for w in archive if w.literal not in NULL_DEVICES)
        cmd.reads.extend(ops)
    else:
        cmd.reads.extend(w for w in archive if w.literal not in NULL_DEVICES)
        if "extract" in opts.flags:
            dest = opts.value("directory")
            cmd.paths.extend(dest)
            cmd.writes.extend(dest or [lit(".")])
    if "remove-files" in opts.flags:
        cmd.writes.extend(ops)


def _zip(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    ops = _all_paths(cmd, opts)
    cmd.writes.extend(ops[:1])
    cmd.reads.extend(ops[1:])
    if "move" in opts.flags:
        cmd.writes.extend(ops[1:])


def _unzip(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    ops = _all_paths(cmd, opts)
    cmd.reads.extend(ops[:1])
    dest = opts.value("d")
    cmd.paths.extend(dest)
    cmd.writes.extend(dest or [lit(".")])


def _sort(cmd: _Cmd) -> None:
    opts = _generic(cmd)
    cmd.reads.extend(_all_paths(cmd, opts))
    cmd.writes.extend(opts.value("output"))
    cmd.paths.extend(opts.value("output"))


def _git(cmd: _Cmd) -> None:
    opts = options(cmd.words, GIT)
    cmd.flags |= opts.flags - {"C", "c"}
    for name, w in opts.values:
        if name in ("C", "work-tree"):
            cmd.cds.append(w)
            cmd.via.append("git -C") if name == "C" and "git -C" not in cmd.via else None
    ops = opts.operands
    if not ops:
        return
    sub = ops[0].literal or ""
    cmd.subcommand = sub
    sopts = options(ops[1:], GIT_SUB.get(sub, GENERIC))
    cmd.flags |= sopts.flags
    cmd.args.extend(sopts.operands)
    if sub == "push":
        for w in sopts.operands[1:]:
            t = w.text
            if t.startswith("+"):
                cmd.flags.add("force")
            elif t.startswith(":"):
                cmd.flags.add("delete")
        if "mirror" in sopts.flags:
            cmd.flags.add("force")
    if sub in ("checkout", "restore") and any(w.literal in (".", "--") for w in ops[1:]):
        pass
    for w in sopts.operands:
        if path_like(w) and sub not in ("push", "pull", "fetch", "clone", "remote"):
            cmd.paths.append(w)
    for name, w in sopts.values:
        if name == "file":
            cmd.reads.append(w)
    if sub == "clean" and not sopts.flags & {"dry-run", "n"}:
        cmd.writes.append(lit("."))
    elif sub in ("rm", "restore") and _touches_worktree(sub, sopts.flags):
        cmd.writes.extend(sopts.operands)
    elif sub == "checkout":
        cmd.writes.extend(w for w in sopts.operands if path_like(w) or w.literal == ".")


def _touches_worktree(sub: str, flags: set[str]) -> bool:
    """``git rm`` always; ``git restore`` unless only ``--staged``."""
    return sub == "rm" or "worktree" in flags or "staged" not in flags


def _find(cmd: _Cmd) -> list[int]:
    words = cmd.words
    i = 0
    starts: list[Word] = []
    # options before the start points
    while i < len(words) and (words[i].literal or "") in ("-H", "-L", "-P", "-O1", "-O2", "-O3"):
        i += 1
    while i < len(words):
        t = words[i].literal
        if t is not None and (t.startswith("-") or t in ("(", "!", ")", ",")):
            break
        starts.append(words[i])
        i += 1
    if not starts:
        starts = [lit(".")]
    cmd.args.extend(starts)
    cmd.paths.extend(starts)
    preds: set[str] = set()
    execs: list[tuple[str, list[Word]]] = []
    while i < len(words):
        t = words[i].literal or ""
        i += 1
        if not t.startswith("-") or t == "-":
            continue
        name = t.lstrip("-")
        preds.add(name)
        if name in ("exec", "execdir", "ok", "okdir"):
            inner: list[Word] = []
            while i < len(words) and words[i].literal not in (";", "+"):
                inner.append(words[i])
                i += 1
            i += 1
            execs.append((name, inner))
        elif name in _FIND_TAKES:
            if name in ("fprint", "fprint0", "fprintf", "fls") and i < len(words):
                cmd.writes.append(words[i])
                cmd.paths.append(words[i])
            i += 2 if name in ("fprintf",) else 1
    cmd.flags |= preds
    filtered = bool(preds & _FIND_FILTERS)
    found = [attrs.evolve(s, under=True) for s in starts] if filtered else starts
    if "delete" in preds:
        cmd.writes.extend(found)
    out = cmd.emit()
    for name, inner in execs:
        replaced = [
            found[0] if w.literal == "{}" else w for w in inner
        ]  # `{}` stands for each file found
        out.extend(cmd.again(replaced, f"find -{name}"))
    return out


_FIND_TAKES = frozenset({
    "name", "iname", "path", "ipath", "wholename", "iwholename", "regex", "iregex", "type",
    "xtype", "newer", "mtime", "mmin", "atime", "amin", "ctime", "cmin", "size", "user",
    "group", "uid", "gid", "perm", "links", "inum", "samefile", "lname", "ilname",
    "maxdepth", "mindepth", "printf", "fprint", "fprint0", "fprintf", "fls", "fstype",
    "context", "regextype", "newermt", "newerct", "used", "files0-from",
})  # fmt: skip
_FIND_FILTERS = _FIND_TAKES - {"maxdepth", "regextype", "printf", "fprint", "fprint0",
                               "fprintf", "fls", "files0-from"}  # fmt: skip


# -- wrappers -----------------------------------------------------------------------------------


def _wrapper(spec: Spec, positional: int = 0, cd: str = "") -> Handler:
    """A wrapper: options by ``spec``, then ``positional`` words of its own, then a command."""

    def handle(cmd: _Cmd) -> list[int] | None:
        opts = options(cmd.words, attrs.evolve(spec, first_stop=True))
        rest = opts.operands[positional:]
        if cd:
            cmd.cds.extend(opts.value(cd))
        if cmd.program in ("command", "type") and opts.flags & {"v", "V"}:
            return []
        if not rest:
            cmd.flags |= opts.flags
            cmd.args.extend(opts.operands)
            return None
        return cmd.again(rest, cmd.program)

    return handle


def _env(cmd: _Cmd) -> list[int] | None:
    spec = _spec("i=ignore-environment 0=null u=unset C=chdir S=split-string v=debug",
                 "", "unset chdir split-string", first_stop=True)  # fmt: skip
    opts = options(cmd.words, spec)
    cmd.cds.extend(opts.value("chdir"))
    rest = list(opts.operands)
    while rest and "=" in (rest[0].text.split("/", 1)[0]) and not rest[0].text.startswith("="):
        rest.pop(0)
    split = opts.value("split-string")
    if split:
        return cmd.shell(join([*split, *rest]), "env -S")
    if not rest:
        cmd.flags |= opts.flags
        return None
    return cmd.again(rest, "env")


def _sudo(cmd: _Cmd) -> list[int] | None:
    spec = _spec("u=user g=group h=host p=prompt r=role t=type C=close-from D=chdir U=other-user "
                 "T=command-timeout E=preserve-env H=set-home n=non-interactive S=stdin "
                 "i=login s=shell b=background k=reset-timestamp K=remove-timestamp "
                 "l=list v=validate A=askpass P=preserve-groups e=edit",
                 "", "user group host prompt role type close-from chdir other-user "
                 "command-timeout", first_stop=True)  # fmt: skip
    if cmd.program == "doas":
        spec = _spec("u=user C=config n=non-interactive s=shell L", "", "user config",
                     first_stop=True)  # fmt: skip
    opts = options(cmd.words, spec)
    cmd.cds.extend(opts.value("chdir"))
    rest = list(opts.operands)
    while rest and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", rest[0].text):
        rest.pop(0)
    if "edit" in opts.flags or cmd.program == "sudoedit":
        cmd.flags |= opts.flags
        cmd.args.extend(rest)
        cmd.paths.extend(rest)
        cmd.writes.extend(rest)
        return None
    if not rest:
        cmd.flags |= opts.flags
        return None
    return cmd.again(rest, cmd.program)


def _timeout(cmd: _Cmd) -> list[int] | None:
    spec = _spec("s=signal k=kill-after v=verbose f=foreground p=preserve-status",
                 "", "signal kill-after", first_stop=True)  # fmt: skip
    opts = options(cmd.words, spec)
    rest = opts.operands[1:]
    return cmd.again(rest, "timeout") if rest else None


def _nice(cmd: _Cmd) -> list[int] | None:
    words = [w for w in cmd.words if not re.fullmatch(r"-\d+", w.literal or "")]
    opts = options(words, _spec("n=adjustment", "", "adjustment", first_stop=True))
    return cmd.again(opts.operands, "nice") if opts.operands else None


def _xargs(cmd: _Cmd) -> list[int] | None:
    """``xargs CMD``: CMD runs with words read from stdin. Text piped from ``echo`` or a
    here-doc is used; what ``find START`` prints is below START; anything else is a
    run-time word."""
    opts = options(cmd.words, SPECS["xargs"])
    rest = list(opts.operands) or [lit("echo")]
    repl = [w.literal for w in opts.value("replace", "I")]
    if "i" in opts.flags and not repl:
        repl = ["{}"]
    texts = [body.literal for body in _piped_text(cmd) if body.literal]
    given = [lit(t) for text in texts for t in (text.splitlines() if repl else text.split())]
    known = cmd.walker.commands
    for i in cmd.simple.upstream:
        if 0 <= i < len(known) and known[i].program == "find" and not given:
            given = [attrs.evolve(w, under=True) for w in known[i].args]
    given = given or [Word((("dyn", ""),))]
    if repl:
        rest = [rest[0], *(given[0] if w.literal in repl else w for w in rest[1:])]
    else:
        rest.extend(given)
    cmd.reads.extend(opts.value("arg-file", "a"))
    return cmd.again(rest, "xargs")


def _shell_c(cmd: _Cmd) -> list[int] | None:
    opts = options(cmd.words, attrs.evolve(SPECS["bash"], first_stop=True))
    cmd.flags |= opts.flags
    if "c" in opts.flags and opts.operands and "s" not in opts.flags:
        cmd.args.append(opts.operands[0])
        out = cmd.emit()
        out.extend(cmd.shell(opts.operands[0], f"{cmd.program} -c"))
        return out
    if opts.operands and opts.operands[0].literal != "-" and "s" not in opts.flags:
        script = opts.operands[0]
        cmd.args.extend(opts.operands)
        cmd.reads.append(script)
        cmd.paths.append(script)
        return None
    cmd.code_from_stdin = True
    out = cmd.emit()
    for body in cmd.simple.stdin:
        out.extend(cmd.shell(body, "heredoc"))
    piped = _piped_text(cmd)
    for body in piped:
        out.extend(cmd.shell(body, "pipe"))
    if not piped and cmd.simple.upstream and not cmd.simple.stdin:
        out.extend(cmd.shell(Word((("dyn", ""),)), "pipe"))
    return out


def _piped_text(cmd: _Cmd) -> list[Word]:
    """Text written in the line that reaches ``cmd`` through a pipe: ``echo CODE | sh``,
    ``cat <<EOF | sh``, ``printf CODE | tee log | sh``."""
    known = cmd.walker.commands
    # Only the stage right before this one writes to its stdin (the last one emitted).
    ups = sorted(cmd.simple.upstream)[-1:]
    for _ in range(16):
        if not ups or not 0 <= ups[0] < len(known):
            return []
        up = known[ups[0]]
        if up.program in ("echo", "printf") and up.args:
            return [join([w for w in up.args if not (w.literal or "").startswith("-")])]
        if up.program not in ("cat", "tee") or up.reads:
            return []
        if up.stdin:
            return list(up.stdin)
        ups = sorted(up.upstream)[-1:]
    return []


def _eval(cmd: _Cmd) -> list[int] | None:
    if not cmd.words:
        return []
    return cmd.shell(join(cmd.words), "eval")


def _watch(cmd: _Cmd) -> list[int] | None:
    spec = _spec(
        "n=interval d=differences t=no-title x=exec g=chgexit e=errexit b=beep "
        "c=color p=precise w=no-wrap",
        "",
        "interval differences",
        first_stop=True,
    )
    opts = options(cmd.words, spec)
    if not opts.operands:
        return None
    if "exec" in opts.flags:
        return cmd.again(opts.operands, "watch")
    return cmd.shell(join(opts.operands), "watch")


_PARALLEL_TAKES = frozenset({
    "-j", "-P", "-N", "-n", "-L", "-S", "-a", "-d", "-C", "-I", "-E", "--jobs", "--sshlogin",
    "--delimiter", "--colsep", "--joblog", "--results", "--tmpdir", "--timeout", "--retries",
    "--halt", "--arg-file", "--max-args", "--max-lines",
})  # fmt: skip
_PARALLEL_SEPS = frozenset({":::", "::::", ":::+", "::::+"})


def _parallel(cmd: _Cmd) -> list[int] | None:
    """GNU parallel runs its command through a shell, once per input (``::: a b``);
    ``{}`` stands for the input. Without a command it runs the lines it reads."""
    words = list(cmd.words)
    i = 0
    while i < len(words) and (words[i].literal or "").startswith("-"):
        i += 2 if words[i].literal in _PARALLEL_TAKES else 1
    command: list[Word] = []
    while i < len(words) and words[i].literal not in _PARALLEL_SEPS:
        command.append(words[i])
        i += 1
    inputs = [w for w in words[i:] if w.literal not in _PARALLEL_SEPS]
    text = join(command).literal if command else None
    if text is None:
        return cmd.shell(_DYN_WORD, "parallel")
    out: list[int] = []
    for given in inputs[:16] or [_DYN_WORD]:
        value = given.literal if given.literal is not None else DYN
        line = text.replace("{}", value) if "{}" in text else f"{text} {value}"
        out.extend(cmd.shell(lit(line) if DYN not in line else Word((("dyn", ""),)), "parallel"))
    return out


def _su(cmd: _Cmd) -> list[int] | None:
    opts = options(cmd.words, _spec("c=command l=login s=shell m p", "", "command shell"))
    code = opts.value("command")
    if code:
        return cmd.shell(code[0], f"{cmd.program} -c")
    cmd.flags |= opts.flags
    return None


def _npx(cmd: _Cmd) -> list[int] | None:
    opts = options(
        cmd.words,
        _spec(
            "y=yes p=package c=call q=quiet",
            "",
            "package call from with python p c",
            first_stop=True,
        ),
    )
    call = opts.value("call", "c")
    if call:
        return cmd.shell(call[0], f"{cmd.program} -c")
    if not opts.operands:
        return None
    name = opts.operands[0]
    text = name.literal or ""
    pkg = (
        text.rsplit("/", 1)[-1].split("@", 1)[0]
        if not text.startswith("@")
        else (text.split("/", 1)[-1].split("@", 1)[0])
    )
    return cmd.again([lit(pkg or text), *opts.operands[1:]], cmd.program)


_SUB_WRAPPERS = {
    ("uv", "run"), ("poetry", "run"), ("pipx", "run"), ("pdm", "run"), ("hatch", "run"),
    ("pnpm", "dlx"), ("pnpm", "exec"), ("yarn", "dlx"), ("npm", "exec"), ("bundle", "exec"),
    ("conda", "run"), ("rye", "run"), ("pipenv", "run"),
}  # fmt: skip
_SUB_TAKES = {"--with", "--python", "-p", "--from", "--package", "-n", "--name", "--env",
              "--directory", "--project", "--extra", "--group", "--spec"}  # fmt: skip


def _subwrap(cmd: _Cmd) -> list[int] | None:
    words = cmd.words
    if words and (cmd.program, words[0].literal) in _SUB_WRAPPERS:
        i = 1
        while i < len(words) and (words[i].literal or "").startswith("-"):
            if words[i].literal == "--":
                i += 1
                break
            i += 2 if words[i].literal in _SUB_TAKES else 1
        if i < len(words):
            return cmd.again(words[i:], f"{cmd.program} {words[0].literal}")
    if cmd.program == "git":
        _git(cmd)
        return None
    _generic(cmd)
    return None


# -- interpreters -------------------------------------------------------------------------------


def _python(cmd: _Cmd) -> list[int] | None:
    opts = options(cmd.words, attrs.evolve(SPECS["python"], first_stop=True))
    cmd.flags |= opts.flags
    code = opts.value("c")
    bodies: list[tuple[Word, str]] = []
    if code:
        cmd.args.append(code[0])
        cmd.args.extend(opts.operands)
        bodies.append((code[0], "python -c"))
    elif opts.value("m"):
        cmd.subcommand = opts.value("m")[0].literal or ""
        cmd.args.extend(opts.operands)
        return None
    elif opts.operands and opts.operands[0].literal != "-":
        cmd.args.extend(opts.operands)
        cmd.reads.append(opts.operands[0])
        cmd.paths.append(opts.operands[0])
        return None
    else:
        cmd.code_from_stdin = True
        bodies.extend((body, "heredoc") for body in cmd.simple.stdin)
        bodies.extend((body, "pipe") for body in _piped_text(cmd))
    out: list[int] = []
    for body, via in bodies:
        if body.literal is not None:
            py = _py_code(cmd, body.literal, via)
            out.extend(py.out)
            cmd.inner.extend(py.out)
            cmd.network |= py.network
            cmd.reads_env |= py.reads_env
            cmd.runs_fetched |= py.network and py.execs
    out.extend(cmd.emit())
    if cmd.code_from_stdin and not bodies and cmd.simple.upstream:
        out.extend(cmd.shell(_DYN_WORD, "pipe"))
    return out


def _inline(cmd: _Cmd) -> list[int] | None:
    spec = SPECS.get(cmd.program, GENERIC)
    opts = options(cmd.words, spec)
    cmd.flags |= opts.flags
    key = INLINE[cmd.program]
    code = opts.value(key, "print", "E", "r")
    if cmd.program == "perl" and "in-place" in opts.flags:
        cmd.writes.extend(opts.operands if code else opts.operands[1:])
    cmd.args.extend(code)
    cmd.args.extend(opts.operands)
    if not code and opts.operands and opts.operands[0].literal != "-":
        cmd.reads.append(opts.operands[0])
        cmd.paths.append(opts.operands[0])
    elif not code:
        cmd.code_from_stdin = True
    cmd.paths.extend(cmd.writes)
    out: list[int] = []
    if code and code[0].literal is not None and _perl_forks(code[0].literal):
        idx = cmd.walker.emit(Raw(program=FORK_BOMB, via=(*cmd.via, f"{cmd.program} -e"),
                                  text=cmd.simple.text))  # fmt: skip
        out.extend([idx] if idx >= 0 else [])
    if cmd.code_from_stdin and cmd.simple.upstream:
        out.extend(cmd.emit())
        out.extend(cmd.shell(_DYN_WORD, "pipe"))
        return out
    if out:
        out.extend(cmd.emit())
        return out
    return None


_PY_DELETE = {
    "shutil.rmtree": ("rm", ("recursive", "force")),
    "os.remove": ("rm", ()),
    "os.unlink": ("rm", ()),
    "os.rmdir": ("rmdir", ()),
    "os.removedirs": ("rmdir", ("parents",)),
    "os.truncate": ("truncate", ()),
    "os.chmod": ("chmod", ()),
    "os.chown": ("chown", ()),
    "shutil.move": ("mv", ()),
    "os.rename": ("mv", ()),
    "os.replace": ("mv", ()),
}
_PY_SHELL = frozenset({
    "os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
    "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput",
    "subprocess.getstatusoutput", "commands.getoutput", "pty.spawn",
})  # fmt: skip
_PY_EXEC = re.compile(r"os\.(exec|spawn)[lvpe]*$")
_PY_NET = ("urllib.request.", "urllib2.", "requests.", "httpx.", "http.client.", "socket.",
           "smtplib.", "ftplib.", "urllib3.", "aiohttp.", "telnetlib.")  # fmt: skip
_PATH_READ = frozenset({"read_text", "read_bytes", "open", "iterdir", "glob", "rglob"})
_PATH_WRITE = {"write_text": "open", "write_bytes": "open", "touch": "touch",
               "unlink": "rm", "rmdir": "rmdir", "chmod": "chmod", "rename": "mv",
               "replace": "mv"}  # fmt: skip
_DYN_WORD = Word((("dyn", ""),))


@attrs.define
class _Py:
    """What Python code does, as far as its text shows."""

    cmd: _Cmd
    via: str
    aliases: dict[str, str] = attrs.Factory(dict)
    out: list[int] = attrs.Factory(list)
    network: bool = False
    reads_env: bool = False
    execs: bool = False  # calls exec, eval or compile

    def raw(self, program: str, path: Word | None, write: bool, flags: Iterable[str] = ()) -> None:
        paths = (path,) if path is not None else ()
        raw = Raw(
            program=program,
            flags=frozenset(flags),
            args=paths,
            paths=paths,
            writes=paths if write else (),
            reads=() if write else paths,
            via=(*self.cmd.via, self.via),
            upstream=self.cmd.simple.upstream,
            cds=tuple(self.cmd.cds),
            text=self.cmd.simple.text,
        )
        idx = self.cmd.walker.emit(raw)
        if idx >= 0:
            self.out.append(idx)

    def shell(self, words: Sequence[Word]) -> None:
        simple = attrs.evolve(self.cmd.simple, words=tuple(words), via=(*self.cmd.via, self.via),
                              redirects=(), stdin=(), cds=tuple(self.cmd.cds))  # fmt: skip
        self.out.extend(run(simple, self.cmd.walker, self.cmd.depth + 1))

    def call(self, call: ast.Call, in_loop: bool, forks: list[bool]) -> None:
        name = _dotted(call.func, self.aliases)
        args = [self.word(a) for a in call.args]
        if name in ("os.fork", "os.forkpty"):
            forks.append(in_loop)
        if name in ("exec", "eval", "compile", "builtins.exec", "builtins.eval"):
            self.execs = True
        if name.startswith(_PY_NET):
            self.network = True
        if name in ("os.getenv", "os.environ.get", "os.environ.copy", "os.getenvb"):
            self.reads_env = True
        if name in _PY_DELETE:
            program, flags = _PY_DELETE[name]
            self.raw(program, args[0] if args else None, True, flags)
        elif name in _PY_SHELL or _PY_EXEC.match(name):
            first = call.args[0] if call.args else None
            if isinstance(first, (ast.List, ast.Tuple)):
                self.shell([self.word(e) for e in first.elts])
            elif _PY_EXEC.match(name):
                self.shell(args[1:] if len(args) > 1 else args)
            else:
                code = args[0] if args else _DYN_WORD
                self.out.extend(_shell_word(self.cmd, code, self.via))
        elif name in ("open", "io.open", "builtins.open", "codecs.open") and args:
            mode = self.word(call.args[1]) if len(call.args) > 1 else None
            for kw in call.keywords:
                if kw.arg == "mode":
                    mode = self.word(kw.value)
            m = (mode.literal if mode else "r") or "r"
            self.raw("open", args[0], any(c in m for c in "wax+"))
        elif isinstance(call.func, ast.Attribute):
            method = call.func.attr
            target = self.path(call.func.value)
            if target is not None and method in _PATH_READ:
                self.raw("open", target, False)
            elif target is not None and method in _PATH_WRITE:
                self.raw(_PATH_WRITE[method], target, True)

    def path(self, node: ast.expr) -> Word | None:
        """The path a pathlib expression stands for (``Path(x)``, ``Path.home() / "x"``)."""
        if isinstance(node, ast.Call):
            name = _dotted(node.func, self.aliases)
            if name.endswith(("Path", "PurePath", "PosixPath")) and node.args:
                return self.word(node.args[0])
            if name.endswith("Path.home"):
                return Word((("tilde", ""),))
            if isinstance(node.func, ast.Attribute) and node.func.attr in (
                "expanduser", "resolve", "absolute",
            ):  # fmt: skip
                return self.path(node.func.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left = self.path(node.left)
            if left is not None:
                return join([left, self.word(node.right)], "/")
        return None

    def word(self, node: ast.expr) -> Word:
        """A Python expression as a shell-like word (literal, ``~``, ``$HOME`` or run-time)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text == "~" or text.startswith("~/"):
                return Word((("tilde", ""), ("lit", text[1:])))
            return lit(text)
        if isinstance(node, ast.JoinedStr):
            parts: list[tuple[str, str]] = []
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    parts.append(("lit", v.value))
                else:
                    parts.append(("dyn", ""))
            return Word(tuple(parts))
        path = self.path(node)
        if path is not None:
            return path
        if isinstance(node, ast.Call):
            name = _dotted(node.func, self.aliases)
            args = node.args
            if name in ("os.path.expanduser", "os.path.abspath", "os.path.realpath",
                        "os.path.normpath", "str", "os.fspath") and args:  # fmt: skip
                inner = self.word(args[0])
                if name == "os.path.expanduser" and inner.literal is not None:
                    text = inner.literal
                    if text == "~" or text.startswith("~/"):
                        return Word((("tilde", ""), ("lit", text[1:])))
                return inner
            if name == "os.path.join" and args:
                return join([self.word(a) for a in args], "/")
            if name in ("os.getenv", "os.environ.get") and args:
                key = self.word(args[0]).literal
                self.reads_env = True
                return Word((("var", key),)) if key and key.isidentifier() else _DYN_WORD
        if (
            isinstance(node, ast.Subscript)
            and _dotted(node.value, self.aliases) == "os.environ"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and node.slice.value.isidentifier()
        ):
            return Word((("var", node.slice.value),))
        return _DYN_WORD


def _shell_word(cmd: _Cmd, code: Word, via: str) -> list[int]:
    inner = _Cmd(cmd.simple, cmd.walker, cmd.depth, "", list(cmd.via), cmd.cds, [])
    return inner.shell(code, via)


def _py_code(cmd: _Cmd, code: str, via: str) -> _Py:
    """What Python code runs, deletes, reads or sends, read with :mod:`ast` (never run)."""
    py = _Py(cmd, via)
    if len(code) > MAX_PY_CODE:
        cmd.walker.fail("Python code too long to judge")
        return py
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return py
    forks: list[bool] = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    seen = 0
    while stack and seen < 20_000:
        node, in_loop = stack.pop()
        seen += 1
        if isinstance(node, ast.Import):
            for a in node.names:
                py.aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                py.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        loop = in_loop or isinstance(node, (ast.While, ast.For, ast.AsyncFor))
        for child in reversed(list(ast.iter_child_nodes(node))):
            stack.append((child, loop))
        if isinstance(node, ast.Call) and seen < 5_000:
            try:
                py.call(node, in_loop, forks)
            except RecursionError:
                cmd.walker.fail("Python code nested too deep to judge")
        elif isinstance(node, ast.Attribute) and _dotted(node, py.aliases) == "os.environ":
            py.reads_env = True
    if any(forks) or len(forks) >= 2:
        py.raw(FORK_BOMB, None, False)
    return py


def _dotted(node: ast.expr, aliases: Mapping[str, str]) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(aliases.get(node.id, node.id))
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("__import__", "import_module")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        parts.append(node.args[0].value)
    else:
        return ""
    return ".".join(reversed(parts))


def _perl_forks(code: str) -> bool:
    """``fork while fork``, ``fork until 0``: Perl or Ruby code that forks in a loop."""
    words = set(re.findall(r"[A-Za-z_]+", code[:MAX_PY_CODE]))
    return "fork" in words and bool(words & {"while", "until", "loop", "for", "foreach"})


Handler = Callable[[_Cmd], "list[int] | None"]
HANDLERS: dict[str, Handler] = {}


def _register(names: Iterable[str], handler: Handler) -> None:
    for n in names:
        HANDLERS[n] = handler


_register(WRITES_ALL, _writes_all)
_register(("chmod", "chown", "chgrp", "chattr", "setfacl"), _chmod)
_register(READS_ALL - WRITES_ALL, _reads_all)
_register(READS_AFTER_FIRST, _reads_all)
_register(("cp", "mv"), _copy)
_register(("install",), _install)
_register(("scp", "rsync", "sftp"), _transfer)
_register(("dd",), _dd)
_register(("tee",), _tee)
_register(("ln",), _ln)
_register(("sed",), _sed)
_register(("curl",), _curl)
_register(("wget",), _wget)
_register(("tar", "gtar", "bsdtar"), _tar)
_register(("unzip",), _unzip)
_register(("zip",), _zip)
_register(("sort",), _sort)
_register(("find",), _find)
_register(("git",), _subwrap)
_register(("uv", "poetry", "pipx", "pdm", "hatch", "pnpm", "yarn", "npm", "bundle", "conda",
           "rye", "pipenv"), _subwrap)  # fmt: skip
_register(("sudo", "doas", "sudoedit"), _sudo)
_register(("env",), _env)
_register(("timeout",), _timeout)
_register(("nice",), _nice)
_register(("xargs",), _xargs)
_register(SHELLS, _shell_c)
_register(("eval",), _eval)
_register(("watch",), _watch)
_register(("parallel",), _parallel)
_register(("su", "runuser"), _su)
_register(("npx", "pnpx", "bunx", "uvx"), _npx)
_register(("node", "nodejs", "perl", "ruby", "php", "deno"), _inline)
_register(("command", "builtin", "nohup", "time", "unbuffer", "setsid", "caffeinate",
           "proxychains", "proxychains4", "torsocks", "exec", "type"),
          _wrapper(_spec("p v V a c l", "", "a")))  # fmt: skip
_register(("stdbuf",), _wrapper(_spec("i o e", "", "i o e")))
_register(("ionice",), _wrapper(_spec("c=class n=classdata t p P u", "", "class classdata p P u")))
_register(("chrt",), _wrapper(_spec("b f i o r d a m p v e R T P D", "", "T P D"), positional=1))
_register(("taskset",), _wrapper(_spec("a c p"), positional=1))
_register(("flock",), _wrapper(_spec("s x u n w E o c", "", "w E c"), positional=1))
_register(("chroot",), _wrapper(_spec("", "", "userspec groups"), positional=1))
_register(("strace", "ltrace"), _wrapper(_spec("o e p s f F c C", "", "o e p s")))
_register(("pkexec",), _wrapper(_spec("", "", "user")))

"""Sessions: tests, lint, typecheck, examples, bench, soak, demo (all on Python 3.11)."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True
PY = "3.11"


@nox.session(python=PY)
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "not soak", *session.posargs)


@nox.session(python=PY)
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "core", "plugins", "tests", "bench", "noxfile.py")
    session.run("ruff", "format", "--check", "core", "plugins", "tests", "bench", "noxfile.py")


@nox.session(python=PY)
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".", "mypy", "types-PyYAML")
    session.run("mypy", "--strict", "core/kodelet")


@nox.session(python=PY)
def soak(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "soak", *session.posargs)


@nox.session(python=PY)
def demo(session: nox.Session) -> None:
    session.install("-e", ".")
    session.run("kodelet", "replay")

"""Sessions: tests, lint, typecheck, e2e, examples, installs, wheels, bench, soak, demo (on
Python 3.11)."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True
PY = "3.11"


@nox.session(python=PY)
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test,claude-agent-sdk]")
    session.run("pytest", "-m", "not soak and not e2e and not installs", *session.posargs)


@nox.session(python=PY)
def e2e(session: nox.Session) -> None:
    """The real agent CLIs, pinned, from the npm registry (cached in ~/.cache/kodelet-e2e),
    driven by stand-in model APIs; fails, never skips, when one cannot be installed."""
    session.install("-e", ".[test]", "claude-agent-sdk==0.2.188")
    session.install("--no-deps", "plugins/examples/guardrail")
    session.run("pytest", "-m", "e2e", "-p", "no:cacheprovider", "tests/e2e", *session.posargs)


@nox.session(python=PY)
def lint(session: nox.Session) -> None:
    session.install("ruff")
    paths = ["core", "plugins", "tests", "bench", "scripts", "noxfile.py"]
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)


@nox.session(python=PY)
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[test]", "mypy", "types-PyYAML")
    session.run("mypy", "--strict", "core/kodelet")


EXAMPLE_DISTS = ["guardrail", "audit-log", "lint-reminder"]


@nox.session(python=PY, reuse_venv=False)
def examples(session: nox.Session) -> None:
    """Wheels of kodelet and the native examples, installed in a fresh venv, checked by CLI."""
    import glob
    import shutil

    wheels = f"{session.create_tmp()}/wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    dirs = [f"plugins/examples/{name}" for name in EXAMPLE_DISTS]
    session.run("python", "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, ".", *dirs)
    built = sorted(glob.glob(f"{wheels}/*.whl"))
    session.install(*built, "pytest")
    session.run("python", "plugins/examples/check_examples.py")
    for directory in dirs:
        session.run("pytest", "-q", "-p", "no:cacheprovider", f"{directory}/tests")


@nox.session(python=PY)
def installs(session: nox.Session) -> None:
    """kodelet's wheel installed by a venv, pipx and ``uv tool`` (pinned, from PyPI, cached
    per run in a temp dir) runs the docs' and ``hooks new``'s Python hooks; the platform
    wheels (scripts/build_wheels.py, built once) carry a native client that runs there
    (a few minutes)."""
    session.install("-e", ".", "pytest")
    tests = ["tests/test_installs.py", "tests/test_wheels.py"]
    session.run("pytest", "-m", "installs", "-p", "no:cacheprovider", *tests)


@nox.session(python=PY)
def wheels(session: nox.Session) -> None:
    """The wheels to publish, in dist/: py3-none-any (the Python client as
    ``kodelet-hook``) and Linux x86_64/aarch64 (static musl) and macOS x86_64/arm64 ones
    holding the native client, cross-compiled with the pinned ziglang."""
    session.install("-r", "scripts/wheels-requirements.txt")
    session.run("python", "scripts/build_wheels.py", *session.posargs)


@nox.session(python=PY)
def soak(session: nox.Session) -> None:
    """20,000 events by default; ``KODELET_SOAK_EVENTS=2000 nox -s soak`` for a short run."""
    import os

    session.install("-e", ".[test]")
    events = os.environ.get("KODELET_SOAK_EVENTS", "20000")
    session.run("pytest", "-m", "soak", *session.posargs, env={"KODELET_SOAK_EVENTS": events})


@nox.session(python=PY)
def bench(session: nox.Session) -> None:
    """Benchmarks against same-run baselines; rewrites BENCHMARKS.md (a few minutes)."""
    session.install("-e", ".", "pytest")  # the bench builds runtimes with kodelet.testing
    session.run("python", "bench/run.py", "--output", "BENCHMARKS.md", *session.posargs)


@nox.session(python=PY)
def demo(session: nox.Session) -> None:
    session.install("-e", ".")
    session.run("kodelet", "replay")

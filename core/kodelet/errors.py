"""The project's exceptions share one base, so a host can catch kodelet's own errors
in one ``except`` without swallowing its own bugs."""

from __future__ import annotations


class KodeletError(Exception):
    """Base of every error kodelet raises on purpose. Its text is written for users:
    it names the problem and is shown as it is, without the class name."""


class HookFailure(KodeletError):
    """A hook ran but its answer cannot be used (exit status, timeout, bad output).

    Raised inside one hook's call and caught by the dispatch loop: that hook's
    failure, never the host's. ``fix`` says what makes it run, when the raiser
    knows better than the generic advice (a stand-in for a hook that cannot start)."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


def describe(exc: BaseException) -> str:
    """How a hook's exception reads in logs and traces: our own errors speak for themselves."""
    try:
        text = str(exc)
    except Exception:  # a plugin's exception must not break the report of its failure
        text = "<unprintable>"
    if isinstance(exc, KodeletError):
        return text
    name = type(exc).__name__
    return f"{name}: {text}" if text else name

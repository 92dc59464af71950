"""Secret shapes, and :func:`redact`, which masks them in text kodelet writes down.

kodelet keeps a log of the decisions its hooks and rules make (:mod:`kodelet.audit`),
and such a log must never become the place a leaked key is found: a summary of a tool
call (``export AWS_SECRET_ACCESS_KEY=...``, ``curl -H 'Authorization: Bearer ...'``)
goes through :func:`redact` before it is written. The shapes are the well-known ones
(cloud and forge keys, private key blocks, ``password=`` and its kin, bearer tokens,
credentials in URLs) plus any long, random-looking value assigned to a name, so a key
of a kind not listed here is masked too. Over-masking is the safe side of the trade.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import re2  # type: ignore[import-untyped]

__all__ = ["MASK", "SHAPES", "redact"]

MASK = "[redacted]"
_I, _S = "(?i)", "(?s)"


def _compile(pattern: str) -> Any:
    """RE2, not ``re``: the text is the model's, and RE2 runs in time linear in it
    whatever it holds (``re`` took seconds on ``a.a.a.…`` against the shapes below)."""
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


# Each shape: a pattern whose groups "keep" and "tail" (when it has them) stay and whose
# rest is masked. Compiled once at import, which only a decision to log pays for:
# read-only tables, not state.
SHAPES: tuple[tuple[str, Any], ...] = tuple(
    (name, _compile(pattern))
    for name, pattern in (
        (
            "private key block",
            _S + r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        ),
        ("aws access key id", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),
        (
            "aws secret access key",
            _I + r"(?P<keep>aws_?secret_?access_?key[\"']?\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{20,}",
        ),
        ("github token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})"),
        ("gitlab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
        ("slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        ("slack webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
        ("openai or anthropic key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),
        ("google api key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
        ("stripe key", r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}"),
        ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
        ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"),
        (
            "authorization header",
            _I + r"(?P<keep>\b(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=-]{8,}",
        ),
        (
            "url credentials",
            _I + r"(?P<keep>\b[a-z][a-z0-9+.-]*://[^/\s:@\"']+:)[^@\s/\"']+(?P<tail>@)",
        ),
        (
            "password assignment",
            _I + r"(?P<keep>\b[A-Za-z0-9_.-]*(?:passw(?:or)?d|passwd|pwd|secret|token|"
            r"api[_-]?key|access[_-]?key|private[_-]?key|credentials?|auth)[A-Za-z0-9_.-]*"
            r"[\"']?\s*[=:]\s*[\"']?)(?P<value>[^\s\"',;&|)}]{3,})",
        ),
        (
            "password option",
            _I + r"(?P<keep>(?:^|\s)--?[A-Za-z0-9_-]*(?:passw(?:or)?d|passwd|secret|token|"
            r"api-?key)[A-Za-z0-9_-]*\s+[\"']?)(?P<value>[^\s\"',;&|)}]{3,})",
        ),
    )
)

# A long random-looking value assigned to a name (``X_KEY=9f8a...``, ``"k": "..."``).
_ASSIGNED = _compile(
    r"(?P<keep>\b[A-Za-z_][A-Za-z0-9_.-]*[\"']?\s*[=:]\s*[\"']?)(?P<value>[A-Za-z0-9+/_=.-]{20,})"
)
_ENTROPY = 3.5
"""Bits per character above which a value of 20 or more characters counts as random:
English words and paths stay well under it, base64 and hex keys over it."""
_SCHEMES = ("bearer", "basic", "token", MASK.lower())
"""Values the assignment shapes leave: the header shape masks what follows them."""


def _entropy(text: str) -> float:
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _random_looking(value: str) -> bool:
    if "/" in value and not value.endswith("="):  # a path, not a key
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return has_digit and has_alpha and _entropy(value) >= _ENTROPY


def _masked(match: Any) -> str:
    groups = match.groupdict()
    value = groups.get("value")
    if value is not None and value.lower() in _SCHEMES:
        return str(match.group(0))
    return (groups.get("keep") or "") + MASK + (groups.get("tail") or "")


def _assigned(match: Any) -> str:
    if _random_looking(match.group("value")):
        return str(match.group("keep")) + MASK
    return str(match.group(0))


def redact(text: str) -> str:
    """``text`` with every secret shape masked as ``[redacted]`` (the names and keys
    that introduce a value stay, so the summary still says what was there)."""
    for _, pattern in SHAPES:
        text = pattern.sub(_masked, text)
    return str(_ASSIGNED.sub(_assigned, text))

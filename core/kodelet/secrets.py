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
import re
from collections import Counter

__all__ = ["MASK", "SHAPES", "redact"]

MASK = "[redacted]"

# Each shape: a pattern whose group "keep" (when it has one) stays and whose rest is
# masked. Compiled once at import: read-only tables, not state.
SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, flags))
    for name, pattern, flags in (
        (
            "private key block",
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        ("aws access key id", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b", 0),
        (
            "aws secret access key",
            r"(?P<keep>aws_?secret_?access_?key[\"']?\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{20,}",
            re.IGNORECASE,
        ),
        ("github token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})", 0),
        ("gitlab token", r"\bglpat-[A-Za-z0-9_-]{20,}", 0),
        ("slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
        ("slack webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+", 0),
        ("openai or anthropic key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}", 0),
        ("google api key", r"\bAIza[0-9A-Za-z_-]{35}\b", 0),
        ("stripe key", r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}", 0),
        ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b", 0),
        ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+", 0),
        (
            "authorization header",
            r"(?P<keep>\b(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=-]{8,}",
            re.IGNORECASE,
        ),
        ("url credentials", r"(?P<keep>\b[a-z][a-z0-9+.-]*://[^/\s:@\"']+:)[^@\s/\"']+(?=@)", re.I),
        (
            "password assignment",
            r"(?P<keep>\b[A-Za-z0-9_.-]*(?:passw(?:or)?d|passwd|pwd|secret|token|api[_-]?key|"
            r"access[_-]?key|private[_-]?key|credentials?|auth)[A-Za-z0-9_.-]*[\"']?\s*"
            r"[=:]\s*[\"']?)(?!\[redacted\]|(?:bearer|basic|token)\s)[^\s\"',;&|)}]{3,}",
            re.IGNORECASE,
        ),
        (
            "password option",
            r"(?P<keep>(?:^|\s)--?[A-Za-z0-9_-]*(?:passw(?:or)?d|passwd|secret|token|api-?key)"
            r"[A-Za-z0-9_-]*\s+[\"']?)(?!\[redacted\])[^\s\"',;&|)}]{3,}",
            re.IGNORECASE,
        ),
    )
)

# A long random-looking value assigned to a name (``X_KEY=9f8a...``, ``"k": "..."``).
_ASSIGNED = re.compile(
    r"(?P<keep>\b[A-Za-z_][A-Za-z0-9_.-]*[\"']?\s*[=:]\s*[\"']?)(?P<value>[A-Za-z0-9+/_=.-]{20,})"
)
_ENTROPY = 3.5
"""Bits per character above which a value of 20 or more characters counts as random:
English words and paths stay well under it, base64 and hex keys over it."""


def _entropy(text: str) -> float:
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _random_looking(value: str) -> bool:
    if "/" in value and not value.endswith("="):  # a path, not a key
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return has_digit and has_alpha and _entropy(value) >= _ENTROPY


def _masked(match: re.Match[str]) -> str:
    keep = match.groupdict().get("keep")
    return (keep or "") + MASK


def _assigned(match: re.Match[str]) -> str:
    if _random_looking(match.group("value")):
        return match.group("keep") + MASK
    return match.group(0)


def redact(text: str) -> str:
    """``text`` with every secret shape masked as ``[redacted]`` (the names and keys
    that introduce a value stay, so the summary still says what was there)."""
    for _, pattern in SHAPES:
        text = pattern.sub(_masked, text)
    return _ASSIGNED.sub(_assigned, text)

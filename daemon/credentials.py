"""The one set of credential patterns: redacting them, finding them, and the keys in use.

Session evidence can quote `.env` files, shell output and config snippets, and provider errors
can echo request headers or the key itself. Masking the common, well-shaped credentials keeps
them out of the worker's input, of receipts, debug entries and log lines; finding them lets
proposals be refused and memory files warned about. It is deliberately best effort, as the
seed (§7.2) says: no scanner recognises every secret. What is certain is masked exactly: the
API keys this process uses (`remember`) are redacted wherever they appear, whatever their
shape. Each match becomes `[redacted <kind>]`; for `key = value` assignments only the value is
replaced, so the text still says what was there.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_PRIVATE_KEY = re.compile(
    # An unterminated block (a truncated paste) is redacted to the end: what follows is key material.
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
    re.DOTALL,
)
# Each token pattern with the literals one of which any match contains: a `\b`-led pattern is
# tried at every offset, so `find` (run on every keystroke in the editor) looks for those first.
_TOKENS = (
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), ("AKIA", "ASIA")),
    ("api-key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"), ("sk-",)),
    (
        "github-token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    ("slack-token", re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}"), ("xox",)),
)
_NOT_A_VALUE = r"(?!\[redacted\ )"  # already masked by a more specific pattern
_AWS_SECRET = re.compile(
    r"(?i)(\baws_secret_access_key[\"']?\s*[:=]\s*[\"']?)" + _NOT_A_VALUE + r"[A-Za-z0-9/+=]+"
)
_BEARER = re.compile(
    r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?bearer\s+)" + _NOT_A_VALUE + r"[A-Za-z0-9._~+/=-]+"
)
# A match starts at one of these words (in any case); the name before it (`DB_PASSWORD`) stays.
_SECRET_WORDS = ("password", "passwd", "secret", "token", "api_key", "api-key", "apikey", "private_key",
                 "private-key", "privatekey")  # fmt: skip
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?P<key>(?:password|passwd|secret(?:[_-]?key)?|token|api[_-]?key|private[_-]?key)
        ["']?\s*[:=]\s*)
    """
    + _NOT_A_VALUE
    # `$VAR`, `<placeholder>` and `{template}` name a secret without holding one.
    + r"""
    (?: "(?P<double>[^"\n]+)" | '(?P<single>[^'\n]+)' | (?P<bare>(?![$<{])[^\s"',;&]+) )
    """
)


def _assignment(match: re.Match[str]) -> str:
    quote = '"' if match["double"] is not None else "'" if match["single"] is not None else ""
    return f"{match['key']}{quote}[redacted secret]{quote}"


def _keep_key(kind: str) -> Callable[[re.Match[str]], str]:
    return lambda match: f"{match[1]}[redacted {kind}]"


# Shorter values (a local server's placeholder key) would mask ordinary words.
_REMEMBER_MIN = 8
_remembered: set[str] = set()
_remembered_lock = threading.Lock()


@dataclass(frozen=True)
class Found:
    """A likely credential in a text: its span (offsets) and its kind, never its value."""

    start: int
    end: int
    kind: str


def remember(value: str) -> None:
    """Mask `value` (an API key this process uses) in everything `redact` sees from now on."""
    if len(value) >= _REMEMBER_MIN:
        with _remembered_lock:
            _remembered.add(value)


def redact(text: str) -> str:
    """`text` with the remembered keys and recognisable credentials replaced by `[redacted <kind>]`."""
    for value in _known():
        text = text.replace(value, "[redacted route-key]")
    text = _PRIVATE_KEY.sub("[redacted private-key]", text)
    for kind, pattern, _ in _TOKENS:
        text = pattern.sub(f"[redacted {kind}]", text)
    text = _AWS_SECRET.sub(_keep_key("aws-secret-access-key"), text)
    text = _BEARER.sub(_keep_key("bearer-token"), text)
    return _ASSIGNMENT.sub(_assignment, text)


def find(text: str) -> list[Found]:
    """Each likely credential in `text`, in order, overlapping matches reported once."""
    keys = (m for value in _known() for m in re.finditer(re.escape(value), text))
    found = [Found(m.start(), m.end(), "route-key") for m in keys]
    found += [Found(m.start(), m.end(), "private-key") for m in _PRIVATE_KEY.finditer(text)]
    for kind, pattern, hints in _TOKENS:
        if any(hint in text for hint in hints):
            found += [Found(m.start(), m.end(), kind) for m in pattern.finditer(text)]
    lowered = text.lower()
    for kind, pattern, hint in (
        ("aws-secret-access-key", _AWS_SECRET, "aws_secret_access_key"),
        ("bearer-token", _BEARER, "authorization"),
    ):
        if hint in lowered:
            found += [Found(m.end(1), m.end(), kind) for m in pattern.finditer(text)]
    for m in _assignments(text, lowered):
        value = next(g for g in ("double", "single", "bare") if m[g] is not None)
        found.append(Found(m.start(value), m.end(value), "secret"))
    kept: list[Found] = []
    for item in sorted(found, key=lambda f: f.start):
        if not kept or item.start >= kept[-1].end:
            kept.append(item)
    return kept


def _assignments(text: str, lowered: str) -> Iterator[re.Match[str]]:
    """`_ASSIGNMENT.finditer(text)`, tried only where a secret word starts."""
    if len(lowered) != len(text):  # a few characters lower to two: offsets would not carry over
        yield from _ASSIGNMENT.finditer(text)
        return
    starts = set()
    for word in _SECRET_WORDS:
        at = lowered.find(word)
        while at >= 0:
            starts.add(at)
            at = lowered.find(word, at + 1)
    end = 0
    for start in sorted(starts):
        if start >= end and (match := _ASSIGNMENT.match(text, start)) is not None:
            end = match.end()
            yield match


class RedactingFormatter(logging.Formatter):
    """Log lines, tracebacks included, with credentials masked: an exception may quote a key."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def _known() -> list[str]:
    with _remembered_lock:
        return sorted(_remembered, key=len, reverse=True)  # a key containing another masks whole

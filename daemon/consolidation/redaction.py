"""Best-effort credential redaction for text a model will read or a receipt will keep.

Session evidence can quote `.env` files, shell output and config snippets, and provider errors
can echo request headers. Masking the common, well-shaped credentials keeps them out of the
worker's input and of the memory it proposes. It is deliberately best effort, as the seed
(§7.2) says: no scanner recognises every secret, so the worker prompt still forbids storing
credentials and the user can review the resulting memory. Each match becomes
`[redacted <kind>]`; for `key = value` assignments only the value is replaced, so the text
still says what was there.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_PRIVATE_KEY = re.compile(
    # An unterminated block (a truncated paste) is redacted to the end: what follows is key material.
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
    re.DOTALL,
)
_TOKENS = (
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    ("api-key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("slack-token", re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}")),
)
_NOT_A_VALUE = r"(?!\[redacted\ )"  # already masked by a more specific pattern
_AWS_SECRET = re.compile(
    r"(?i)(\baws_secret_access_key[\"']?\s*[:=]\s*[\"']?)" + _NOT_A_VALUE + r"[A-Za-z0-9/+=]+"
)
_BEARER = re.compile(
    r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?bearer\s+)" + _NOT_A_VALUE + r"[A-Za-z0-9._~+/=-]+"
)
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?P<key>\b[\w.-]*?(?:password|passwd|secret(?:[_-]?key)?|token|api[_-]?key|private[_-]?key)
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


def redact(text: str) -> str:
    """`text` with recognisable credentials replaced by `[redacted <kind>]`."""
    text = _PRIVATE_KEY.sub("[redacted private-key]", text)
    for kind, pattern in _TOKENS:
        text = pattern.sub(f"[redacted {kind}]", text)
    text = _AWS_SECRET.sub(_keep_key("aws-secret-access-key"), text)
    text = _BEARER.sub(_keep_key("bearer-token"), text)
    return _ASSIGNMENT.sub(_assignment, text)

"""What pydantic found wrong with a value, and a value as given, said in one line for a person.

`str(ValidationError)` spans lines and ends each with a link to pydantic's documentation;
a log's, a receipt's or an envelope's error must be one line naming each field and its fault.
A value someone wrote (a settings key or path, a client's name) is shown with `one_line`, so
that it can neither break a log line in two nor drive a terminal.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

# What would drive a terminal rather than show on it: C0 and C1 controls, and the Unicode line
# separators and direction overrides. A session's title or a record's name comes from files.
CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_IN_LINE = re.compile(f"[{CONTROLS}\n\t]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\e"}


def escaped(match: re.Match[str]) -> str:
    """The character `match` found, written as an escape (`\\n`, `\\e`, `\\x07`, `\\u2028`)."""
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def one_line(text: str) -> str:
    """`text` as a field of a one-line row or a log line: controls, newlines and tabs escaped."""
    return _IN_LINE.sub(escaped, text)


def problems(exc: ValidationError) -> str:
    """`field.path: what is wrong`, for each error, joined by "; "."""
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())

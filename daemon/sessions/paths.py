"""Where DSH keeps a session log: project keys, session-dir segments and the log file name.

Every function is bit-exact with DSH's `format.ts` (`projectKey`, `encodeSegment`, `logPath`),
because a log is only valid at the path its own header re-derives (identity binding).
"""

from __future__ import annotations

import enum
import re
from pathlib import Path

NO_CWD_DIR = "_no-cwd"
PROJECT_SLUG_MAX = 251
_SAFE_UNITS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SEPARATOR_UNITS = frozenset(b"/\\:")


class Encoding(str, enum.Enum):
    """How a root stores its logs; DSH refuses a root holding both."""

    RAW = "raw"
    ZSTD = "zstd"

    @property
    def file_name(self) -> str:
        return LOG_FILE_NAMES[self]


LOG_FILE_NAMES: dict[Encoding, str] = {
    Encoding.RAW: "session.jsonl",
    Encoding.ZSTD: "session.jsonl.zstd",
}


def _utf16_units(text: str) -> list[int]:
    # DSH walks JavaScript strings, i.e. UTF-16 code units; 'surrogatepass' keeps a lone
    # surrogate (legal in a JS string) as its own unit instead of failing.
    raw = text.encode("utf-16-le", "surrogatepass")
    return [raw[i] | (raw[i + 1] << 8) for i in range(0, len(raw), 2)]


def _escape(unit: int) -> str:
    return f"~{unit:04X}"


def encode_segment(session_id: str) -> str:
    """The session directory name for `session_id` (injective; never `.`/`..` or a slash)."""
    if not session_id:
        raise ValueError("session id must be non-empty")
    if session_id == ".":
        return "~002E"
    if session_id == "..":
        return "~002E~002E"
    return "".join(chr(u) if u in _SAFE_UNITS else _escape(u) for u in _utf16_units(session_id))


def project_key(cwd: str | None) -> str:
    """The project directory name for a session whose header has this `cwd`."""
    if cwd is None:
        return NO_CWD_DIR
    if cwd == "":
        raise ValueError("cwd must be absent or non-empty")
    parts: list[str] = []
    in_separator_run = False
    for unit in _utf16_units(cwd):
        if unit in _SEPARATOR_UNITS:
            if not in_separator_run:
                parts.append("-")
            in_separator_run = True
            continue
        in_separator_run = False
        parts.append(chr(unit) if unit in _SAFE_UNITS else _escape(unit))
    slug = "".join(parts).lstrip("-") or "root"
    return f"--{slug[:PROJECT_SLUG_MAX]}--"


def session_dir(root: Path, cwd: str | None, session_id: str) -> Path:
    return root / project_key(cwd) / encode_segment(session_id)


def session_log_path(root: Path, cwd: str | None, session_id: str, encoding: Encoding) -> Path:
    """`<root>/<projectKey(cwd)>/<encodeSegment(id)>/session.jsonl[.zstd]`."""
    return session_dir(root, cwd, session_id) / encoding.file_name


def encoding_of_file_name(name: str) -> Encoding | None:
    """The encoding a log file name implies, or None for any other file."""
    for encoding, file_name in LOG_FILE_NAMES.items():
        if name == file_name:
            return encoding
    return None


FLAT_LOG_NAME = re.compile(r".+\.jsonl(\.zstd)?\Z")

"""Canonical text: UTF-8 without BOM, LF line endings, exactly one trailing newline.

The store writes only canonical text and hashes canonical bytes, so a file that differs only in
BOM, line endings or trailing newlines keeps its revision. Control characters are *not*
canonicalised away: dropping them would silently change content, so they are errors instead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import BinaryIO

from .. import safe_open
from .diagnostics import Diagnostic, Position, Range, Severity, TextPositions, diagnostic

BOM = "\ufeff"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_MAX_CONTROL_REPORTS = 20
_C0_BYTES = bytes(b for b in range(0x20) if b not in b"\t\n\r") + b"\x7f"
_C1_BYTES = re.compile(rb"\xc2[\x80-\x9f]")
# The most of a memory file remem reads (decision 0141): 170 times the largest valid one
# (GLOBAL.md's 24 KiB), 4 times the largest the editor's keystroke benchmark validates.
MEMORY_FILE_MAX_BYTES = 4 * 1024 * 1024
FILE_TOO_LARGE = diagnostic(
    "file-too-large",
    Severity.ERROR,
    f"the file is over {MEMORY_FILE_MAX_BYTES // (1024 * 1024)} MiB, the most remem reads of a memory "
    "file (a valid record is under 9 KiB, GLOBAL.md at most 24 KiB), so it is not read; shorten it "
    "or move what it holds out of memory",
    Range(start=Position(line=0, character=0), end=Position(line=0, character=0)),
)
# Never read through: a link could lead out of REMEM_HOME, a FIFO would block the reader.
IRREGULAR_RECORD = diagnostic(
    "not-a-regular-file",
    Severity.ERROR,
    "a record must be a regular file, not a symlink, folder, FIFO or device; replace it with a plain copy",
    FILE_TOO_LARGE.range,
)
# os.listdir gives the bytes of a name that is not UTF-8 as lone surrogates: no record has one.
NAME_NOT_UTF8 = diagnostic(
    "file-name-encoding",
    Severity.ERROR,
    "this file's name is not valid UTF-8 (shown with \\x escapes), so it cannot be a record, whose "
    "file is `<name>.md` with a name of lowercase letters, digits and hyphens; rename the file or "
    "move it out of the folder",
    FILE_TOO_LARGE.range,
)
# A linked workspace folder: nothing in it is read (the store refuses it whole).
LINKED_WORKSPACE = diagnostic(
    "linked-workspace",
    Severity.ERROR,
    "a workspace folder must be a real folder inside REMEM_HOME, not a symlink; move the folder "
    "it points to here instead",
    FILE_TOO_LARGE.range,
)
IRREGULAR_GLOBAL = diagnostic(
    "not-a-regular-file",
    Severity.ERROR,
    "GLOBAL.md must be a regular file inside REMEM_HOME, not a symlink, folder, FIFO or device; "
    "replace it with a plain copy of the file",
    FILE_TOO_LARGE.range,
)
IRREGULAR_INDEX = diagnostic(  # a warning: the store never reads it, and replaces it on a commit
    "not-a-regular-file",
    Severity.WARNING,
    "MEMORY.md is not a regular file, so it is not read; delete it, and the next commit writes "
    "it again from the records",
    FILE_TOO_LARGE.range,
)


def canonicalize(text: str) -> str:
    """Return the canonical form of `text`; idempotent. Blank text becomes the empty string."""
    # Every leading U+FEFF goes, not just the first: keeping a second one would make the
    # result start with a "BOM" again and canonicalize would not be idempotent.
    text = text.lstrip(BOM)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.rstrip("\n")
    return f"{text}\n" if text else ""


def canonical_bytes(raw: bytes) -> bytes:
    """Byte-level `canonicalize`, usable on files that are not valid UTF-8."""
    while raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    raw = raw.rstrip(b"\n")
    return raw + b"\n" if raw else b""


def read_capped(handle: BinaryIO) -> bytes | None:
    """The file's bytes, or None when it holds more than `MEMORY_FILE_MAX_BYTES` (no more than
    one byte past the cap is read)."""
    return safe_open.read_capped(handle, MEMORY_FILE_MAX_BYTES)


def too_large(text: str) -> bool:
    """Whether an editor's text is past the cap of a file on disk (encoded only when it may be)."""
    if text.isascii():  # O(1) in CPython (a flag of the string), and then one byte per character
        return len(text) > MEMORY_FILE_MAX_BYTES
    return len(text) > MEMORY_FILE_MAX_BYTES // 4 and len(text.encode("utf-8")) > MEMORY_FILE_MAX_BYTES


class Unread(Exception):
    """A memory file not read for what it is; `diagnostic` says why."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def open_memory_file(path: Path, irregular: Diagnostic, folder: safe_open.HeldFolder | None = None) -> int:
    """A read-only descriptor of the memory file at `path` (`FileNotFoundError` when there is
    none). Never opened through a symlink (it could lead out of REMEM_HOME) nor waited on as a
    FIFO or device (`safe_open.open_regular`): anything but a regular file is `Unread` with
    `irregular`, whatever a look at the path said a moment before. `folder`: `path`'s folder,
    held open by the caller; the file is then opened through it (decision 0465)."""
    try:
        return safe_open.open_regular(path) if folder is None else folder.open_regular(path.name)
    except OSError as exc:
        if not safe_open.refused(exc):
            raise
        raise Unread(irregular) from None


def read_memory_bytes(
    path: Path, irregular: Diagnostic, folder: safe_open.HeldFolder | None = None
) -> bytes | None:
    """A memory file's bytes, None when it is absent; opened by `open_memory_file` (`Unread`
    with `irregular`; through `folder` when given), and a file past the cap is `Unread` with
    `FILE_TOO_LARGE`."""
    try:
        fd = open_memory_file(path, irregular, folder)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        raw = read_capped(handle)
    if raw is None:
        raise Unread(FILE_TOO_LARGE)
    return raw


def read_file(path: Path, irregular: Diagnostic) -> tuple[str, list[Diagnostic]]:
    """`decode` of a memory file opened by `open_memory_file` (`Unread` with `irregular`,
    `FileNotFoundError`) and read with `read_capped`: past the cap, no text and the error."""
    return read_file_stat(path, irregular)[0]


def read_file_stat(path: Path, irregular: Diagnostic) -> tuple[tuple[str, list[Diagnostic]], os.stat_result]:
    """`read_file`, with the `stat` of the descriptor read, taken before its bytes: a change
    made after it changes the stat, so a text kept by that stat is never a stale one."""
    with os.fdopen(open_memory_file(path, irregular), "rb") as handle:
        st = os.fstat(handle.fileno())
        raw = read_capped(handle)
    return (("", [FILE_TOO_LARGE]) if raw is None else decode(raw)), st


def decode(raw: bytes) -> tuple[str, list[Diagnostic]]:
    """Decode UTF-8; invalid bytes become U+FFFD and an error at the first of them."""
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        offset = len(raw[: exc.start].decode("utf-8", errors="replace"))
        where = TextPositions(text).range(offset, offset + 1)
        message = (
            f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte offset {exc.start}); "
            "re-save it as UTF-8"
        )
        return text, [diagnostic("encoding", Severity.ERROR, message, where)]


def canonical_problems(text: str, positions: TextPositions, end: int | None = None) -> list[Diagnostic]:
    """Every way `text` departs from canonical form, each at its exact place; control characters
    are looked for in `text[:end]` only (past a file's budget, the size is its problem)."""
    problems: list[Diagnostic] = []
    if text.startswith(BOM):
        problems.append(
            diagnostic(
                "bom",
                Severity.WARNING,
                "the file starts with a byte-order mark; remove it (remem stores UTF-8 without BOM)",
                positions.range(0, len(text) - len(text.lstrip(BOM))),
            )
        )
    if "\r" in text:
        problems.append(_line_ending_problem(text, positions))
    problems.extend(_control_problems(text, positions, len(text) if end is None else end))
    trailing = _trailing_newline_problem(text, positions)
    if trailing is not None:
        problems.append(trailing)
    return problems


def _line_ending_problem(text: str, positions: TextPositions) -> Diagnostic:
    first = text.index("\r")
    count = text.count("\r")
    # The whole of the first line break, ending at the next line's start: a CRLF's CR alone
    # ended past its line's end, which an editor clamps to an empty, invisible range.
    end = first + (2 if text.startswith("\r\n", first) else 1)
    return diagnostic(
        "line-endings",
        Severity.WARNING,
        f"the file uses CR or CRLF line endings ({count} of them); convert them to LF",
        positions.range(first, end),
    )


def _control_problems(text: str, positions: TextPositions, end: int) -> list[Diagnostic]:
    data = positions.utf8 if end >= len(text) else text[:end].encode("utf-8", "surrogatepass")
    if not _has_control(data):
        return []
    problems = []
    matches = list(_CONTROL.finditer(text, 0, end))
    for match in matches[:_MAX_CONTROL_REPORTS]:
        code_point = ord(match.group())
        problems.append(
            diagnostic(
                "control-character",
                Severity.ERROR,
                f"control character U+{code_point:04X} is not allowed; delete it "
                "(only tab and line breaks may appear)",
                positions.range(match.start(), match.end()),
            )
        )
    if len(matches) > _MAX_CONTROL_REPORTS:
        last = matches[_MAX_CONTROL_REPORTS]
        problems.append(
            diagnostic(
                "control-character",
                Severity.ERROR,
                f"{len(matches) - _MAX_CONTROL_REPORTS} more control characters follow; "
                "is this a binary file?",
                positions.range(last.start(), last.end()),
            )
        )
    return problems


def _has_control(data: bytes) -> bool:
    """A C-speed pre-check on the UTF-8 bytes; the slower regex then only locates real hits."""
    if len(data.translate(None, _C0_BYTES)) != len(data):
        return True
    return b"\xc2" in data and _C1_BYTES.search(data) is not None


def _trailing_newline_problem(text: str, positions: TextPositions) -> Diagnostic | None:
    end = len(text)
    while end and text[end - 1] in "\r\n":  # `text.rstrip("\r\n")` without copying the text
        end -= 1
    if not end:
        return None
    tail = text[end:]
    if tail in ("\n", "\r\n", "\r"):
        return None
    if not tail:
        return diagnostic(
            "trailing-newline",
            Severity.WARNING,
            "the file does not end with a newline; add one",
            positions.range(end - 1, end),
        )
    first_break = 2 if tail.startswith("\r\n") else 1
    return diagnostic(
        "trailing-newline",
        Severity.WARNING,
        "the file ends with extra blank lines; keep exactly one trailing newline",
        positions.range(end + first_break, len(text)),
    )

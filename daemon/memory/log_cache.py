"""The parsed log of each history branch, kept beside the repository for the next process.

A fresh process that logs a 10 000-entry branch would walk and parse 10 000 commits (the walk
alone is most of the time). Entries never change, so each branch's parsed lines are kept in
`history/log-cache/<branch>`, oldest first, in blocks: the JSON lines of one write, then a
`#<crc32>` line over exactly those bytes. A reader keeps the blocks whose checksum holds and
whose first entry's parent is the previous block's last entry, up to the first that fails (a
torn append, a damaged file), so a crash while writing can only shorten what is kept, never
change it. The last kept entry is checked against the branch: the log walks from the branch's
head down to it, and a cache whose last entry the walk never meets (the repository was rebuilt)
is replaced. Nothing here is ever a source of truth: losing the folder costs one walk.

A writer appends one block when the file is still exactly what it read, otherwise it writes the
whole file to a temp and renames it over; both under `state/locks/history-log.lock`.

A cache that is no regular file (a FIFO, a socket, a symbolic link) is no cache: it is opened as
`safe_open.open_regular` opens a file, never through a link nor in a way that waits (a FIFO read
the plain way held the history's lock for good), is read as empty with a warning, and the log's
write renames a whole new file over it, so it is replaced, never written through or appended to.
"""

from __future__ import annotations

import logging
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ..faults import faultpoint
from ..fsutil import PRIVATE_FILE_MODE, ensure_private_dir, remove_stale_temps, temp_path_for
from ..locks import file_lock
from ..safe_open import open_regular, refused, standing_at

log = logging.getLogger("remem.daemon")
FOLDER = "log-cache"


class MetaLine(msgspec.Struct, forbid_unknown_fields=True):
    """The JSON line of an entry's commit message, as it is read: a log decodes one per entry,
    so msgspec, not pydantic; the actor is kept raw and validated once per distinct actor."""

    scope: str  # `global` or `ws-<key>`
    actor: msgspec.Raw
    before: str
    after: str
    at: str


class LogLine(MetaLine, array_like=True):
    """One entry as a log needs it: its message's line and the commit's own ids."""

    id: str
    parent: str | None


@dataclass(frozen=True)
class Kept:
    """What a branch's cache holds that could be verified, and where in the file that ends."""

    lines: list[LogLine]  # oldest first
    end: int
    clean: bool  # the verified part is the whole file

    @property
    def head(self) -> str | None:
        return self.lines[-1].id if self.lines else None


_NONE = Kept([], 0, True)
_DECODER = msgspec.json.Decoder(LogLine)
_ENCODER = msgspec.json.Encoder()


class LogCache:
    """Thread-safe only under the caller's lock (the history holds its own around each use)."""

    def __init__(self, repository: Path, lock: Path) -> None:
        self.folder = repository / FOLDER
        self._lock = lock

    def load(self, branch: str) -> Kept:
        path = self.folder / branch
        try:
            with os.fdopen(open_regular(path, root=self.folder.parent), "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return _NONE
        except OSError as exc:
            if refused(exc) and exc.filename == os.fspath(path):  # derived data: the next write replaces it
                log.warning(
                    "memory history: the log cache of %s is %s; it is replaced", branch, standing_at(path)
                )
                return _NONE
            log.warning("memory history: the log cache of %s cannot be read (%s)", branch, exc.strerror)
            return _NONE
        return _verified(data)

    def save(self, branch: str, kept: Kept, newer: list[LogLine], *, follows: bool) -> None:
        """Add `newer` (oldest first), the entries after `kept`'s last when `follows`, else the
        branch's whole log. Never raises: a cache that cannot be written is read by walking."""
        if not newer:
            return
        path = self.folder / branch
        try:
            ensure_private_dir(self.folder)
            with file_lock(self._lock):
                if follows and kept.clean and _size(path) == kept.end:
                    _append(path, _block(newer))
                else:
                    _replace(path, _block([*kept.lines, *newer] if follows else newer))
        except OSError as exc:
            log.warning("memory history: the log cache of %s cannot be written (%s)", branch, exc.strerror)


def _verified(data: bytes) -> Kept:
    lines: list[LogLine] = []
    start = 0
    while (mark := data.find(b"\n#", start)) >= 0:
        close = data.find(b"\n", mark + 1)
        body = data[start : mark + 1]
        if close < 0 or data[mark + 2 : close] != b"%08x" % zlib.crc32(body):
            break
        try:
            block = _DECODER.decode_lines(body)
        except msgspec.DecodeError:
            break
        if not block or block[0].parent != (lines[-1].id if lines else None):
            break
        lines += block
        start = close + 1
    return Kept(lines, start, start == len(data))


def _block(lines: list[LogLine]) -> bytes:
    body = b"".join(_ENCODER.encode(line) + b"\n" for line in lines)
    return body + b"#%08x\n" % zlib.crc32(body)


def _size(path: Path) -> int | None:
    """The size of the regular file at `path` (0 for none); None for anything else, which is
    then replaced, never appended to."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _append(path: Path, block: bytes) -> None:
    # non-blocking: a FIFO swapped in since `_size` fails (ENXIO), never waits for a reader
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(path, flags, PRIVATE_FILE_MODE)
    try:
        half = len(block) // 2
        _write_all(fd, block[:half])
        faultpoint("history.log-cache.mid-append")
        _write_all(fd, block[half:])
    finally:
        os.close(fd)


def _replace(path: Path, data: bytes) -> None:
    remove_stale_temps(path.parent)  # a temp a crashed writer left
    temp = temp_path_for(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
    faultpoint("history.log-cache.after-temp-write")
    os.replace(temp, path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]

"""Write remem-owned session logs in DSH's format, crash-safely and one writer at a time.

Protocol (DSH jsonl `index.ts`): nothing exists until the first non-empty append; the first
bytes (header + first batch) are published without overwrite (temp, fsync, hard link, dir
fsync); every later batch is appended, fsynced, and truncated away again if the write fails.
Zstd logs get one frame for the header and one per batch. `writer.lock` in the session dir is
held from the first append until `close()`, so readers can tell the session is live.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from ..faults import faultpoint
from ..fsutil import ensure_private_dir, publish_new, remove_stale_temps, temp_path_for, write_synced
from ..locks import LockHandle, try_file_lock
from .checks import EventCheckError, check_event, check_writable
from .chunks import pack_chunk_runs
from .errors import SessionLogError, SessionRootError
from .models import SessionEvent, SessionHeader
from .paths import Encoding, session_log_path
from .roots import detect_encoding
from .zstd_frames import encode_frame

LOCK_NAME = "writer.lock"
DEFAULT_ENCODING = Encoding.ZSTD  # DSH's DEFAULT_COMPRESSION


def json_line(record: dict[str, Any]) -> bytes:
    """One compact JSON line as `JSON.stringify` writes it, newline included."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate is legal in a JS string; escaping everything keeps it lossless.
        return json.dumps(record, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def encode_batch(events: Iterable[SessionEvent], *, pack_chunks: bool = True) -> bytes:
    """The storage lines of one append batch (chunk runs packed as DSH does by default)."""
    records = [e.to_record() for e in events]
    return b"".join(json_line(r) for r in (pack_chunk_runs(records) if pack_chunks else records))


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def choose_encoding(root: Path, requested: Encoding | None) -> Encoding:
    """The root's own encoding; a different request would make the root mixed and is refused."""
    existing = detect_encoding(root)
    if existing is not None and requested is not None and requested is not existing:
        raise SessionRootError(
            root,
            f"root holds {existing.value} logs; a {requested.value} log would make DSH refuse the root",
        )
    return existing or requested or DEFAULT_ENCODING


class SessionWriter:
    """Appends batches to one new session log; use as a context manager or call `close()`."""

    def __init__(self, root: Path, header: SessionHeader, *, encoding: Encoding | None = None) -> None:
        self.header = header
        self.encoding = choose_encoding(root, encoding)
        self.path = session_log_path(root, header.cwd, header.id, self.encoding)
        if existing_log(self.path.parent) is not None:
            raise SessionLogError(self.path, "a session with this id already exists; pick a new id")
        self.next_seq = 0
        self._fd: int | None = None
        self._lock: LockHandle | None = None
        self._size = 0
        self._broken = False

    @property
    def materialized(self) -> bool:
        return self._fd is not None

    def append(self, events: Iterable[SessionEvent]) -> None:
        """Durably append one batch; on failure the log is rolled back to the previous batch."""
        batch = self._validated(list(events))
        if not batch:
            return
        if self._broken:
            raise SessionLogError(self.path, "an earlier append failed and could not be rolled back")
        body = encode_batch(batch)
        if self._fd is None:
            self._materialize(body)
        else:
            self._append_bytes(self._framed(body))
        self.next_seq += len(batch)

    def close(self) -> None:
        """Stop writing: close the file and release `writer.lock` (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _validated(self, events: list[SessionEvent]) -> list[SessionEvent]:
        for offset, event in enumerate(events):
            where = f"event seq {event.seq}"
            if event.seq != self.next_seq + offset:
                raise SessionLogError(self.path, f"{where}: expected seq {self.next_seq + offset}")
            try:
                check_event(event.to_record(), where=where)
                check_writable(event, where=where)
            except EventCheckError as exc:
                raise SessionLogError(self.path, str(exc)) from None
        return events

    def _framed(self, plaintext: bytes) -> bytes:
        return encode_frame(plaintext) if self.encoding is Encoding.ZSTD else plaintext

    def _materialize(self, body: bytes) -> None:
        ensure_session_dirs(self.path)
        directory = self.path.parent
        lock = try_file_lock(directory / LOCK_NAME)
        if lock is None:
            raise SessionLogError(self.path, f"another writer holds {LOCK_NAME}")
        content = encode_log(self.header, body, self.encoding)
        try:
            publish_log(self.path, [content], protocol="sessions.writer")
        except FileExistsError:
            lock.release()
            raise SessionLogError(self.path, "a session with this id was created concurrently") from None
        self._lock = lock
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._size = len(content)

    def _append_bytes(self, data: bytes) -> None:
        assert self._fd is not None
        try:
            half = len(data) // 2
            # Two writes so the crash tests can stop between them and leave a torn batch.
            _write_all(self._fd, memoryview(data)[:half])
            faultpoint("sessions.writer.mid-append")
            _write_all(self._fd, memoryview(data)[half:])
            os.fsync(self._fd)
        except BaseException:
            self._rollback()
            raise
        self._size += len(data)
        faultpoint("sessions.writer.after-append")

    def _rollback(self) -> None:
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._size)
            os.fsync(self._fd)
        except OSError:
            self._broken = True


def encode_log(header: SessionHeader, body: bytes, encoding: Encoding) -> bytes:
    """A new log's bytes: the header line, then `body` as its first batch (one frame each)."""
    header_line = json_line(header.to_record())
    if encoding is Encoding.ZSTD:
        return encode_frame(header_line) + encode_frame(body)
    return header_line + body


def ensure_session_dirs(path: Path) -> None:
    """Create the root, project and session folders of log `path` that do not exist yet."""
    # Create missing levels one by one: mkdir(parents=True) would give the parents the umask
    # mode. Existing directories (e.g. a DSH root) are left as their owner set them.
    for directory in (path.parent.parent.parent, path.parent.parent, path.parent):
        if not directory.is_dir():
            ensure_private_dir(directory)


def publish_log(
    path: Path,
    parts: Sequence[bytes | memoryview],
    *,
    protocol: str,
    folder: int | None = None,
    published: Callable[[], None] | None = None,
) -> None:
    """Publish a complete log at `path` without ever overwriting one (FileExistsError if taken).

    `protocol` names the caller's crash points (`<protocol>.after-temp-write`, `.after-publish`);
    `published` is called once the log is in place, before the latter (what recovery needs to
    know the log for the caller's).
    `folder` is a descriptor of the folder `path` lies in, opened from its root without
    following a link (`safe_open.open_folder`): the temp file, the link and the syncs go
    through it, so a folder swapped for a link since is never written through. Without it, the
    folder is opened by its path (remem's own sessions, in `REMEM_HOME`).
    """
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY) if folder is None else folder
    try:
        temp = temp_path_for(Path(path.name))  # a name in `fd`, beside the log's
        write_synced(temp, *parts, dir_fd=fd)
        faultpoint(f"{protocol}.after-temp-write")
        try:
            publish_new(temp, Path(path.name), linked=f"{protocol}.after-link", dir_fd=fd)
        except OSError:  # taken (FileExistsError), or the link refused: the temp goes either way
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=fd)
            raise
        if published is not None:
            published()
        faultpoint(f"{protocol}.after-publish")
    finally:
        if folder is None:
            os.close(fd)


def existing_log(directory: Path) -> Path | None:
    """The log a session dir already holds, in either encoding. A name too long for the file
    system holds none: it is an id no session has (a request's), not a failure of the disk."""
    try:
        return next((p for e in Encoding if (p := directory / e.file_name).exists()), None)
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        return None


def recover_dir(directory: Path) -> list[Path]:
    """Delete the temp files a crashed writer left in one session dir, unless a writer holds it."""
    lock_file = directory / LOCK_NAME  # temps are only ever written under it
    lock = try_file_lock(lock_file) if lock_file.is_file() else None
    if lock is None:
        return []
    try:
        return remove_stale_temps(directory)
    finally:
        lock.release()

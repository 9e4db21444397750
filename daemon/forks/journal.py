"""The fork operation journal: operation id → request hash → child, durable before and after publish.

Entry lifecycle: `prepared` (written before any child byte, binding the operation id to its
request and its cut) → the child log is published without overwrite → `committed`. A retry
finds the entry and either returns the committed child or finishes the prepared one with the
same cut, so one operation id yields at most one child, whatever crashes in between.

Every step for an operation runs under that operation's lock; recovery only touches
operations whose lock it can take, so it never removes a temp file a live fork still needs.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..faults import faultpoint
from ..fsutil import TEMP_MARKER, atomic_write, ensure_private_dir, fsync_dir, is_temp_name
from ..home import Home
from ..locks import file_lock, try_file_lock
from ..sessions.errors import OperationError
from ..sessions.published import PublishedLogs
from ..sessions.writer import publish_log

# Makes the entry of an operation that is not committed yet, or finishes a prepared one, and
# returns it committed with whether this call created the child.
Create = Callable[["JournalEntry | None"], "tuple[JournalEntry, bool]"]


class JournalEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operationId: str
    requestHash: str
    status: Literal["prepared", "committed"]
    source: str
    sourceRevision: str
    child: str
    path: str
    seedLength: int
    forkTurn: int
    title: str | None


class ForkJournal:
    def __init__(self, home: Home) -> None:
        self.folder = ensure_private_dir(home.state / "forks")
        self.locks = home.locks
        self.published = PublishedLogs(home)

    @contextmanager
    def operation(self, operation_id: str) -> Iterator[JournalEntry | None]:
        """Hold the operation's lock (across processes) and yield its entry, if any."""
        with file_lock(self._lock_path(operation_key(operation_id))):
            self._clean(operation_key(operation_id))
            yield self.get(operation_id)

    def once(self, operation_id: str, request_hash: str, create: Create) -> tuple[JournalEntry, bool]:
        """Exactly one child per operation: the committed entry of an operation already done with
        this request, `create(entry)` under the operation's lock otherwise (entry: a prepared one
        an interrupted attempt left, or None). A different request is refused."""
        if not operation_id.strip():
            raise OperationError("INVALID", "the operation id must not be empty")
        self.recover()
        with self.operation(operation_id) as entry:
            if entry is not None and entry.requestHash != request_hash:
                raise OperationError(
                    "OP_CONFLICT", f"operation {operation_id!r} was already used for a different fork request"
                )
            if entry is not None and entry.status == "committed":
                return entry, False
            return create(entry)

    def publish(
        self, entry: JournalEntry, parts: Sequence[bytes | memoryview], check_existing: Callable[[Path], None]
    ) -> tuple[JournalEntry, bool]:
        """Publish the prepared `entry`'s child (never overwriting) and commit the entry.

        A child already at the path is an earlier attempt's that crashed before committing:
        `check_existing` must raise if it is something else."""
        path = Path(entry.path)
        try:
            publish_log(path, parts, protocol="fork")
            created = True
        except FileExistsError:
            check_existing(path)
            created = False
        else:
            self.published.record(path)
        committed = entry.model_copy(update={"status": "committed"})
        self.put(committed)
        faultpoint("fork.after-journal")
        return committed, created

    def get(self, operation_id: str) -> JournalEntry | None:
        try:
            return JournalEntry.model_validate_json(
                self._entry_path(operation_key(operation_id)).read_bytes()
            )
        except FileNotFoundError:
            return None

    def put(self, entry: JournalEntry) -> None:
        """Write an entry durably; the caller holds its operation's lock."""
        data = entry.model_dump_json(indent=2).encode() + b"\n"
        atomic_write(self._entry_path(operation_key(entry.operationId)), data)

    def recover(self) -> None:
        """Settle interrupted forks nobody is working on: commit published children, drop temps."""
        keys = {p.stem for p in self.folder.glob("*.json")}
        keys |= {p.name[1:].split(".json")[0] for p in self.folder.iterdir() if is_temp_name(p.name)}
        for key in sorted(keys):
            held = try_file_lock(self._lock_path(key))
            if held is None:
                continue  # a fork of this operation is running right now
            try:
                self._clean(key)
            finally:
                held.release()

    def _clean(self, key: str) -> None:
        for temp in self.folder.glob(f".{key}.json{TEMP_MARKER}*"):
            temp.unlink(missing_ok=True)
        try:
            entry = JournalEntry.model_validate_json(self._entry_path(key).read_bytes())
        except FileNotFoundError:
            return
        if entry.status == "committed":
            return
        child = Path(entry.path)
        if child.is_file():
            self.put(entry.model_copy(update={"status": "committed"}))
            return
        # Only this child's temps: a Claude Code or Codex child shares its folder with other
        # sessions, and another operation may be writing its own child there right now.
        temps = list(child.parent.glob(f".{child.name}{TEMP_MARKER}*"))
        for temp in temps:
            temp.unlink(missing_ok=True)
        if temps:
            fsync_dir(child.parent)
        _remove_if_empty(child.parent)

    def _entry_path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def _lock_path(self, key: str) -> Path:
        return self.locks / f"fork-{key}.lock"


def operation_key(operation_id: str) -> str:
    """A file-name-safe key for any operation id (ids are client text, never paths)."""
    return hashlib.sha256(operation_id.encode("utf-8")).hexdigest()[:32]


def _remove_if_empty(folder: Path) -> None:
    # Not empty or already gone: either way nothing of ours is left there.
    with contextlib.suppress(OSError):
        folder.rmdir()

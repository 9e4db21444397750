"""The fork operation journal: operation id → request hash → child, durable before and after publish.

Entry lifecycle: `prepared` (written before any child byte, binding the operation id to its
request and its cut) → the child log is published without overwrite → `committed`. A retry
finds the entry and either returns the committed child or finishes the prepared one with the
same cut, so one operation id yields at most one child, whatever crashes in between. A write
of the home refused once the child is in place (its record, the committed entry) is said as
such (`UNWRITABLE`, the child published), never as a child that is not: the retry finishes it.

Every step for an operation runs under that operation's lock; recovery only touches
operations whose lock it can take, so it never removes a temp file a live fork still needs.

Recovery must not grow with the forks already made: before an operation writes anything (its
journal entry, its child), it leaves a marker `pending/<key>`, durably, and removes it once the
operation is committed or settled. Recovery visits the marked operations only, so a fork after
ten thousand others costs what the first did. A journal written before markers existed (no
`pending/` folder) is scanned whole once.

An entry is read only as a regular file (`safe_open.open_regular`): a symbolic link there is
never followed out of the home, and a FIFO, a socket or a device is never opened in a way that
waits, since recovery reads every marked entry and would hold every fork. Such an entry cannot
be read, and refuses its own operation id only.

Settling an interrupted fork removes only through its child's folder opened from the session
root the entry records, one folder at a time without following a link: a folder swapped for a
link since the crash is never followed out of the root (decision 0464).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..faults import faultpoint
from ..fsutil import (
    PRIVATE_FILE_MODE,
    TEMP_MARKER,
    atomic_write,
    ensure_private_dir,
    fsync_dir,
    is_temp_name,
    remedy,
    remove_stale_temps_of,
)
from ..home import Home
from ..locks import LockUnusable, file_lock, try_file_lock
from ..safe_open import folder_at, moved, open_folder, open_regular, refused, standing_at
from ..sessions.errors import OperationError
from ..sessions.published import PublishedLogs
from ..sessions.reader import stat_revision
from ..sessions.writer import publish_log
from . import codex_child

log = logging.getLogger("remem.daemon")

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
    # The session root the child lands in, whose folders recovery opens without following a
    # link; None in an entry an older remem wrote (`landing_root_of` tells it from its path).
    root: str | None = None


class ForkJournal:
    def __init__(self, home: Home) -> None:
        # A link at either would take the journal's entries and markers out of the home.
        self.folder = home.private_dir(home.state / "forks")
        self.pending = home.refuse_link(self.folder / "pending")
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
                raise used_otherwise(entry)
            if entry is not None and entry.status == "committed":
                return entry, False
            if entry is not None:
                self.mark(operation_id)  # a retry writes again: recovery must know
            try:
                return create(entry)
            except OSError as exc:  # a full disk, a read-only folder: the file system's refusal
                raise _refusal(exc) from None

    def publish(
        self,
        entry: JournalEntry,
        parts: Sequence[bytes | memoryview],
        check_existing: Callable[[Path], None],
        *,
        folder: int,
    ) -> tuple[JournalEntry, bool]:
        """Publish the prepared `entry`'s child (never overwriting) and commit the entry.

        `folder` is the descriptor of the child's folder, opened from its root without following
        a link (`safe_open.open_folder`): the child is written there and nowhere else. A child
        already at the path is an earlier attempt's that crashed before committing:
        `check_existing` must raise if it is something else."""
        path = Path(entry.path)

        def record() -> None:  # its revision as published, looked at in the folder it was published in
            try:
                revision = stat_revision(os.stat(path.name, dir_fd=folder, follow_symlinks=False))
                self.published.record(path, revision)
            except OSError as exc:  # the child is in place: never said as one that is not
                raise _unrecorded(path, exc, self.published.folder) from None

        try:
            publish_log(path, parts, protocol="fork", folder=folder, published=record)
            created = True
        except FileExistsError:
            check_existing(path)
            created = False
        except FileNotFoundError:  # the folder was removed once opened: nothing is left of it
            raise OperationError(
                "NOT_FOUND",
                f"the folder {path.parent} was removed while the fork's child was written there; "
                "its child is not published: list the sessions again, then retry with the same "
                "operation id",
            ) from None
        except OSError as exc:  # a write names no file, one through the folder's descriptor its name alone
            exc.filename = str(path.parent / exc.filename) if exc.filename else str(path)
            raise
        committed = entry.model_copy(update={"status": "committed"})
        try:
            self.put(committed)
        except OSError as exc:  # the child is in place; the entry stays prepared, for the retry
            raise _unrecorded(path, exc, self.folder) from None
        faultpoint("fork.after-journal")
        return committed, created

    def get(self, operation_id: str) -> JournalEntry | None:
        return self._read(operation_key(operation_id))

    def put(self, entry: JournalEntry) -> None:
        """Write an entry durably; the caller holds its operation's lock.

        A prepared entry is marked pending first; a committed one is unmarked after."""
        key = operation_key(entry.operationId)
        if entry.status == "prepared":
            self.mark(entry.operationId)
        atomic_write(self._entry_path(key), entry.model_dump_json(indent=2).encode() + b"\n")
        if entry.status == "committed":
            (self.pending / key).unlink(missing_ok=True)  # a marker left behind only costs a visit

    def mark(self, operation_id: str) -> None:
        """Mark the operation pending, durably, before it writes anything recovery may settle."""
        marker = self._marked() / operation_key(operation_id)
        if os.path.lexists(marker):  # whatever stands there marks it; a link is never written through
            return
        with contextlib.suppress(FileExistsError):  # marked meanwhile
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
        fsync_dir(self.pending)
        faultpoint("fork.after-mark")

    def recover(self) -> None:
        """Settle interrupted forks nobody is working on: drop their temps (a published child is
        the retry's to adopt, after its fork's own check)."""
        for key in sorted(os.listdir(self._marked())):
            try:
                self._settle(key)
            except OperationError as exc:  # only that operation id is stuck; the others settle
                log.warning("%s", exc.message)
            except (LockUnusable, OSError) as exc:
                log.warning("fork operation %s cannot be settled: %s", key, exc)

    def _settle(self, key: str) -> None:
        held = try_file_lock(self._lock_path(key))
        if held is None:
            return  # a fork of this operation is running right now
        try:
            self._clean(key)
        finally:
            held.release()

    def _marked(self) -> Path:
        """The pending folder; created after one whole scan of a journal that predates it."""
        if self.pending.is_dir():
            return self.pending
        keys = {p.stem for p in self.folder.glob("*.json")}
        keys |= {p.name[1:].split(".json")[0] for p in self.folder.iterdir() if is_temp_name(p.name)}
        # Built aside and renamed into place, so a crash never leaves a partial pending folder.
        building = ensure_private_dir(self.folder / f"pending-{secrets.token_hex(6)}")
        for key in keys:
            os.close(os.open(building / key, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE_MODE))
        fsync_dir(building)
        try:
            building.rename(self.pending)
        except OSError:  # another process put its own in place first
            shutil.rmtree(building, ignore_errors=True)
        fsync_dir(self.folder)
        return self.pending

    def _clean(self, key: str) -> None:
        """Settle a marked operation (the caller holds its lock): nothing of it is left half-done."""
        marker = self._marked() / key
        if not os.path.lexists(marker):
            return  # never marked, or settled already: it left nothing behind
        for temp in self.folder.glob(f".{key}.json{TEMP_MARKER}*"):
            temp.unlink(missing_ok=True)
        entry = self._read(key)
        if entry is not None and entry.status == "prepared":
            try:
                published = self._settle_child(entry)
            except OSError as exc:  # a folder on the way is a link now, or no folder: left as it is
                said = "fork operation %r leaves its child's folder as it is: %s"
                log.warning(said, entry.operationId, exc)
                return  # still marked: settled once the folder is back, or by the retry
            if published:
                self.put(entry.model_copy(update={"status": "committed"}))
        # Any other prepared entry stays prepared for its retry, which marks it again before
        # writing: a file at its child's path that this home did not publish (or has changed
        # since) may be another home's, made with the same operation id (decision 0371), and is
        # adopted by the retry's publish only when the fork's own check says it is this fork's.
        marker.unlink(missing_ok=True)

    def _settle_child(self, entry: JournalEntry) -> bool:
        """Remove the temps the prepared `entry`'s fork left beside its child, and the child's
        folder if that leaves it empty; return whether the child is published, as this home
        published it. The folder is opened from its session root without following a link
        (`safe_open.open_folder`): a folder on the way swapped for a link to a folder outside
        raises (`ELOOP`) before anything is removed out there. A folder gone: nothing is left."""
        child, root = Path(entry.path), landing_root_of(entry)
        try:
            folder = open_folder(root, child.parent)
        except FileNotFoundError:
            return False
        try:
            # Whether or not the child is there: a crash between the publish's link and its
            # unlink leaves the temp as a second name of the child, which would stay for good.
            # Only this child's temps: a Claude Code or Codex child shares its folder with other
            # sessions, and another operation may be writing its own child there right now. The
            # child's name comes from this operation's id, whose lock the caller holds.
            remove_stale_temps_of(child, dir_fd=folder)
            published = self._published_here(child, folder)
        finally:
            os.close(folder)
        if not published:
            _remove_if_empty(root, child.parent)
        return published

    def _published_here(self, path: Path, folder: int) -> bool:
        """Whether the file at `path`, in the opened `folder`, is still exactly the child this
        home published there."""
        try:
            revision = stat_revision(os.stat(path.name, dir_fd=folder, follow_symlinks=False))
        except OSError:
            return False
        return self.published.untouched(str(path), revision)

    def _read(self, key: str) -> JournalEntry | None:
        """The entry of `key`, None when there is none; `OperationError` when it cannot be read,
        a link or no regular file included (never followed, never opened in a way that waits)."""
        path = self._entry_path(key)
        what = ""
        try:
            with os.fdopen(open_regular(path), "rb") as handle:
                return JournalEntry.model_validate_json(handle.read())
        except FileNotFoundError:
            return None
        except OSError as exc:
            if refused(exc):
                what = f" ({standing_at(path)})"
        except ValueError:  # pydantic's ValidationError is a ValueError
            pass
        raise OperationError(
            "INVALID",
            f"{path} is not a readable fork journal entry{what}, so whether this operation id "
            "already forked is unknown: look for its child among the session's forks, then delete "
            "the entry (or retry with a new operation id)",
        )

    def _entry_path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def _lock_path(self, key: str) -> Path:
        return self.locks / f"fork-{key}.lock"


@contextmanager
def child_folder(root: Path, child: Path, *, make: bool = False) -> Iterator[int]:
    """The descriptor of the folder the child `child` lands in, opened from its session `root`
    without following a link (`safe_open.open_folder`; `make`: the missing folders are made
    user-only), for `ForkJournal.publish`. A folder on the way that is gone, a link or no folder
    refuses the fork and says so: not as a disk that is full."""
    try:
        fd = open_folder(root, child.parent, make=make)
    except OSError as exc:
        refusal = _folder_refusal(exc, root, child)
        if refusal is None:
            raise
        raise refusal from None
    try:
        yield fd
    finally:
        os.close(fd)


def used_otherwise(entry: JournalEntry) -> OperationError:
    """The refusal of another request under an operation id `entry` holds: what the id made."""
    made = "made" if entry.status == "committed" else "began"
    return OperationError(
        "OP_CONFLICT",
        f"operation {entry.operationId!r} already {made} the fork {entry.child} of {entry.source} "
        f"after its turn {entry.forkTurn}, and this request differs from that one (another session, "
        "line, turn or title): an operation id names one fork; use a new one for this fork",
    )


def _folder_refusal(exc: OSError, root: Path, child: Path) -> OperationError | None:
    where = exc.filename if exc.filename and os.path.isabs(exc.filename) else str(child.parent)
    kept = "its child is not published"
    if exc.errno == errno.ENOENT:
        return OperationError(
            "NOT_FOUND",
            f"the folder {where} was removed or replaced since the session was listed; {kept}: "
            "list the sessions again, then retry with the same operation id",
        )
    if exc.errno == errno.ELOOP:
        return OperationError(
            "INVALID",
            f"{where} is a symbolic link: a fork's child lands in {child.parent}, and remem follows "
            f"no link out of a session root ({root}); {kept}",
        )
    if exc.errno == errno.ENOTDIR:
        return OperationError(
            "INVALID", f"{where} is not a folder: a fork's child lands in {child.parent}; {kept}"
        )
    if exc.errno == errno.EINVAL and exc.filename == str(child.parent):
        return OperationError("INVALID", f"{child} does not lie in its session root {root}; {kept}")
    return None


def _refusal(exc: OSError) -> OperationError:
    """What the file system refused: a file or folder gone, a link or another file since the
    session was listed (`safe_open.moved`), or a write (a full disk, a read-only folder)."""
    if not moved(exc):
        return OperationError("UNWRITABLE", _unwritable(exc))
    where = exc.filename or "a file or folder the fork reads or writes"
    return OperationError(
        "NOT_FOUND" if exc.errno == errno.ENOENT else "INVALID",
        f"{where}: {exc.strerror or exc} (it was removed or replaced since the session was listed); "
        "the fork's child is not published: list the sessions again, then retry with the same "
        "operation id",
    )


def _unwritable(exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    return (
        f"the fork could not be written: {exc.strerror or exc}{where}; its child is not published. "
        f"To go on, {remedy(exc.errno)}, then retry with the same operation id"
    )


def _unrecorded(child: Path, exc: OSError, folder: Path) -> OperationError:
    """A write of the home's (`folder`) refused once the child was in place: the child is
    published, and its entry stays `prepared`. The retry with the same operation id finds the
    child (settled, or adopted by its publish after the fork's own check) and answers it."""
    return OperationError(
        "UNWRITABLE",
        f"the fork's child {child} is published, but remem could not record it in its home: "
        f"{folder} refused a write ({exc.strerror or exc}). To finish the fork, {remedy(exc.errno)}, then "
        "retry with the same operation id: it answers this child",
    )


def operation_key(operation_id: str) -> str:
    """A file-name-safe key for any operation id (ids are client text, never paths)."""
    return hashlib.sha256(operation_id.encode("utf-8")).hexdigest()[:32]


def landing_root_of(entry: JournalEntry) -> Path:
    """The session root `entry`'s child lands in. An entry an older remem wrote records none:
    its path's layout tells it, as the fork chose it — DSH's `<root>/<project>/<child>/<log>`,
    a Claude Code child in its project folder below the root, a Codex rollout where
    `codex_child.child_path` put it (`codex_child.landed_root`)."""
    if entry.root is not None:
        return Path(entry.root)
    path = Path(entry.path)
    if path.parent.name == entry.child:
        return path.parents[2]
    if path.name == f"{entry.child}.jsonl":
        return path.parents[1]
    return codex_child.landed_root(path)


def _remove_if_empty(root: Path, folder: Path) -> None:
    """Remove the empty `folder` (never `root` itself) by its name in the folder above, opened
    from `root` without following a link: a link at its name is not a folder, and stays."""
    if folder == root:
        return
    # Not empty, gone, a link, or a folder on the way that is one: nothing of ours is left there.
    with contextlib.suppress(OSError), folder_at(root, folder.parent) as above:
        os.rmdir(folder.name, dir_fd=above)

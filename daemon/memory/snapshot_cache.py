"""Snapshots of Global and of workspaces, served from memory while their files are unchanged.

An agent loads its context at every step, and reading and validating 200 records costs tens of
milliseconds. A snapshot is kept with the stat signature (inode, size, mtime, ctime) of the
files it was read from, and its folder is watched (`ChangeFeed`): while no change of the folder
was reported since the snapshot was proven, it is served as it is. (A record written through a
hard link from outside the folder is never reported: a commit refused because the disk holds
another revision drops the snapshot, `disk_shows`, so the reload the refusal asks for sees it.)
Otherwise — or where folders cannot be watched — the files are stat'ed again and the snapshot
reused when nothing moved. A file whose ctime lies within `RACY_NS` of the moment its content
was last proven could have been rewritten within the same timestamp tick without changing its
stat (`stamps`), so its bytes are hashed and compared as well: a stale snapshot is never served
on a stat proof. `held` gives the two snapshots of an agent's context only when the feed alone
proves them, and never waits for the lock, so an event loop may ask it before sending the work
to a thread.

The stat look takes no lock. A reader racing a commit sees either a signature the cache already
holds (a consistent generation from before the commit) or a mix of old and new files that no
cached generation ever had (new files are new inodes), which is a miss. Anything the store itself
must see to — an interrupted generation (journal or temp files), a symlink, a non-regular file,
a file vanishing mid-look — takes the store's locked read, which recovers, validates and raises
exactly as it always does. Invalid memory is never cached.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..fsutil import is_temp_name
from ..protocol.memory import RECORD_SUFFIX, GlobalSnapshot, WorkspaceSnapshot
from ..safe_open import open_regular
from .change_feed import ChangeFeed
from .identity import WorkspaceId
from .journal import JOURNAL_NAME
from .record import GLOBAL_FILE, INDEX_FILE
from .stamps import RACY_NS, Stamp, stamp
from .store import MemoryStore

_DIGEST_CHUNK = 1 << 20
T = TypeVar("T")
Signature = dict[str, Stamp]
MAX_WORKSPACES = 16  # the workspaces of agents working now; older ones are read again
_MISSING: Stamp = (0, 0, 0, 0)  # Global not written yet: it reads as empty
_GLOBAL_KEY = "\0global"  # not a workspace key, which never holds a NUL


@dataclass(frozen=True)
class _Cached(Generic[T]):
    signature: Signature
    proven_ns: int  # a time before which every stamp's file held the bytes of `digests`
    digests: dict[str, bytes]
    value: T
    quiet_from: int | None  # the change count the folder had when proven, if it was watched


class SnapshotCache:
    """Thread-safe: worker threads of the daemon read through one cache."""

    def __init__(self, store: MemoryStore, *, watch: bool = True) -> None:
        """`watch=False` always looks at the files (network file systems: inotify sees only
        this machine's writes)."""
        self.store = store
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Cached[Any]] = OrderedDict()  # Global and workspaces
        self._feed = ChangeFeed(enabled=watch)
        self._changes: defaultdict[str, int] = defaultdict(int)  # reported changes per key
        self._lost = 0  # times the feed could not tell: every key counts as changed

    def close(self) -> None:
        """Stop watching; later lookups prove snapshots by looking at the files."""
        with self._lock:
            self._feed.close()

    def global_snapshot(self) -> GlobalSnapshot:
        """Like `MemoryStore.read_global`, including its MemoryInvalid."""
        home = self.store.home

        def read() -> tuple[GlobalSnapshot, dict[str, bytes]]:
            snapshot, raw = self.store.read_global_with_bytes()
            return snapshot, {GLOBAL_FILE: raw}

        return self._lookup(_GLOBAL_KEY, home.memory, lambda: _global_signature(home.global_file), read)

    def workspace_snapshot(self, workspace: WorkspaceId) -> WorkspaceSnapshot:
        """Like `MemoryStore.read_workspace`, including its MemoryInvalid."""
        folder = self.store.folder(workspace)
        return self._lookup(
            workspace.key,
            folder,
            lambda: _records_signature(folder),
            lambda: self.store.read_workspace_with_files(workspace),
        )

    def held(self, workspace: WorkspaceId) -> tuple[GlobalSnapshot, WorkspaceSnapshot] | None:
        """Global and `workspace` as the two lookups above would give them, when the change feed
        alone proves both current; None when either must be looked at, or another thread holds
        the cache. Looks at no memory file and never waits, so an event loop may call it."""
        found = self._held(_GLOBAL_KEY, workspace.key)
        return None if found is None else (found[0], found[1])

    def held_global(self) -> GlobalSnapshot | None:
        """`held` for Global alone."""
        found = self._held(_GLOBAL_KEY)
        return None if found is None else found[0]

    def held_workspace(self, workspace: WorkspaceId) -> WorkspaceSnapshot | None:
        """`held` for one workspace alone."""
        found = self._held(workspace.key)
        return None if found is None else found[0]

    def disk_shows(self, workspace_key: str | None, revision: str | None) -> None:
        """A locked read of the store found Global (`workspace_key` None) or a workspace at
        `revision` (None: files with errors, which no snapshot holds): a snapshot held at another
        revision is dropped, so the next lookup reads the files.

        The feed misses some changes: inotify reports a write to a folder's watch only when it
        is made through a name in that folder, not through a hard link elsewhere. The snapshot
        it proves would be served for good while every compare-and-swap, which reads the disk,
        is refused as stale. Callers tell of what a refused commit found, so the reload that
        the refusal asks for shows the disk; a served lookup looks at no file for it. The
        folder stays watched: a lookup of the scope under way counts its changes from it."""
        key = _GLOBAL_KEY if workspace_key is None else workspace_key
        with self._lock:
            cached = self._entries.get(key)
            if cached is not None and cached.value.revision != revision:
                del self._entries[key]

    def _held(self, *keys: str) -> list[Any] | None:
        self._refuse_links()
        if not self._lock.acquire(blocking=False):
            return None
        try:
            self._absorb_changes()
            entries = [self._quiet(key) for key in keys]
        finally:
            self._lock.release()
        if any(entry is None for entry in entries):
            return None
        return [entry.value for entry in entries if entry is not None]

    def _lookup(
        self,
        key: str,
        folder: Path,
        signature_of: Callable[[], Signature | None],
        read: Callable[[], tuple[T, dict[str, bytes]]],
    ) -> T:
        self._refuse_links()
        with self._lock:
            self._absorb_changes()
            quiet = self._quiet(key)
            if quiet is not None:
                return quiet.value
            cached = self._entries.get(key)
            # Watching starts before the proof below: a change from here on is reported later.
            quiet_from = self._count(key) if self._feed.watch(key, folder) else None
        started = time.time_ns()
        signature = signature_of()
        if signature is not None and cached is not None and _unchanged(cached, signature, folder):
            self._keep(key, replace(cached, proven_ns=started, quiet_from=quiet_from))
            return cached.value
        value, files = read()
        after = signature_of()
        if after is not None and set(after) == set(files):
            digests = {name: _digest_of(data) for name, data in files.items()}
            self._keep(key, _Cached(after, started, digests, value, quiet_from))
        return value

    def _refuse_links(self) -> None:
        """HomeUnusable when `memory` or `memory/workspaces` became a link since the daemon
        started, as the store's own reads say it: a snapshot is never served from behind one
        (two `lstat`s, the cost of a read the feed proves)."""
        home = self.store.home
        home.refuse_link(home.workspaces)

    def _quiet(self, key: str) -> _Cached[Any] | None:
        """The entry of `key` if nothing in its folder changed since it was proven (hold the lock
        and absorb the feed's changes first)."""
        cached = self._entries.get(key)
        if cached is None or cached.quiet_from != self._count(key):
            return None
        self._entries.move_to_end(key)
        return cached

    def _absorb_changes(self) -> None:
        changed = self._feed.changed()
        if changed is None:
            self._lost += 1
        for key in changed or ():
            self._changes[key] += 1

    def _count(self, key: str) -> int:
        return self._changes[key] + self._lost

    def _keep(self, key: str, entry: _Cached[T]) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > MAX_WORKSPACES + 1:  # + Global
                evicted, _ = self._entries.popitem(last=False)
                self._feed.unwatch(evicted)


def _unchanged(cached: _Cached[T], signature: Signature, folder: Path) -> bool:
    if signature != cached.signature:
        return False
    horizon = cached.proven_ns - RACY_NS
    return all(
        stamp[3] < horizon or _file_digest(folder / name) == cached.digests.get(name)
        for name, stamp in signature.items()
    )


def _records_signature(folder: Path) -> Signature | None:
    """Every record file's stamp; None when only the store may read the folder.

    The names are those `record_name_of` accepts, tested inline: this loop runs for every
    record at every context read.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return {}
    except OSError:  # a symlink (ELOOP) or worse: the store reports it
        return None
    try:
        signature: Signature = {}
        for name in os.listdir(fd):
            if name.startswith("."):
                if name == JOURNAL_NAME or is_temp_name(name):
                    return None  # an interrupted generation: the store recovers it
                continue
            if not name.endswith(RECORD_SUFFIX) or name == INDEX_FILE:
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None
            if not stat.S_ISREG(st.st_mode):
                return None
            signature[name] = stamp(st)
        return signature
    finally:
        os.close(fd)


def _global_signature(path: Path) -> Signature | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {GLOBAL_FILE: _MISSING}
    return {GLOBAL_FILE: stamp(st)} if stat.S_ISREG(st.st_mode) else None


def _file_digest(path: Path) -> bytes | None:
    """The digest of the file's bytes; None when it cannot be read. It is opened as the store
    opens it (`safe_open.open_regular`): a link or a FIFO swapped in since its stat was taken is
    never followed nor waited on, and its None sends the lookup to the store's read, which says
    what stands there."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return _digest_of(b"")  # Global not written yet (a vanished record changed its stamp)
    except OSError:
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as handle:  # in chunks: a file may be huge (hashlib.file_digest is 3.11+)
        for block in iter(lambda: handle.read(_DIGEST_CHUNK), b""):
            digest.update(block)
    return digest.digest()


def _digest_of(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()

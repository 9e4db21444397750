"""Cross-process advisory locks (portalocker / flock) on files under `state/locks/`.

flock belongs to the open file description, so two acquisitions exclude each other even inside
one process, and the kernel drops a lock the moment its holder dies: a crashed writer can never
leave a scope locked. Three ways to take one:

- `file_lock` and `acquire_file_lock` wait in the kernel (no polling), for locks whose holders
  do bounded work (a scope's commit, settling a review a crash left committing); callers on an
  event loop run them in a worker thread.
- `try_file_lock` never waits: for a lock whose holder may keep it for minutes, looked for again
  and again by its caller, which a cancel can then stop (a review's lock, held by another run of
  the session's consolidation, in `consolidation/runner.py`), or to ask whether a daemon runs.
  `try_file_lock_strictly` is the same take for a caller that may leave a missing lock file
  unmade (an eval case's folder).
- `try_removable_lock` and `acquire_removable_lock` take a lock whose file its holder removes
  as it lets go (`LockHandle.release_removing`), so that one lock file per review does not stay
  for good: a taker that opened the file before its removal and locked it after finds it gone
  from its path (`LockHandle.is_at`) and takes the path again.
- `bounded_file_lock` polls up to a deadline: for a lock that must never hold up its caller,
  whatever its holder does (the history's, the daemon's spawn lock).

Only another holder makes a lock "held" (None, or a wait). A lock the file system refuses (ENOLCK
on some network mounts, EIO) is `LockRefused`, whichever way it is taken: told apart, a bounded
wait would run to its deadline and its caller blame another process, on every try, for good. A
take that waits and is answered "held" anyway is refused too: its block never runs unlocked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .fsutil import PRIVATE_FILE_MODE
from .home import HOME_ENV

# portalocker's import asks `tempfile` for a writable folder, the default of a semaphore class
# remem never uses; where none can be written (a full /tmp, `ulimit -f 0`) that raised, and
# every command, `remem --version` too, ended in a traceback before `main` could say a word.
# remem takes no temporary folder there: the unused default is then given, and forgotten after.
try:
    tempfile.gettempdir()
except OSError:
    tempfile.tempdir = os.devnull  # never opened: only the semaphore's default names it
    try:
        import portalocker
    finally:
        tempfile.tempdir = None  # asked again by whatever needs one, which then says so itself
else:
    import portalocker


class LockUnusable(Exception):
    """No lock can be taken at `path`: something other than a lock file stands there (a folder, a
    symlink). `said` is what the diagnostic carrying the path separately says of the file."""

    def __init__(self, path: Path, reason: str, said: str | None = None) -> None:
        self.path, self.reason = path, reason
        self.said = said or LOCK_UNUSABLE.format(reason=reason)
        super().__init__(str(self))

    def __str__(self) -> str:  # never OSError's "[Errno N] …", which names neither file nor remedy
        return f"{self.path} {self.said}"


class LockRefused(LockUnusable, OSError):
    """The file system refused to lock `path` (its errno kept): no lock can be taken in this home,
    which no wait and no retry changes."""

    def __init__(self, path: Path, cause: OSError) -> None:
        name = errno.errorcode.get(cause.errno or 0, "")
        reason = f"{cause.strerror or cause}{f' ({name})' if name else ''}"
        super().__init__(path, reason, LOCK_REFUSED.format(reason=reason))
        self.errno, self.strerror, self.filename, self.cause = cause.errno, cause.strerror, str(path), cause


_POLL_SECONDS = 0.01  # a bounded wait's look again: holders of such locks hold them for milliseconds

# Said of the file without its path, which the diagnostic that carries it names separately.
LOCK_UNUSABLE = "cannot be used as a lock file ({reason}); remove it, remem recreates it"
LOCK_REFUSED = (
    "cannot be locked: {reason}; the file system it is on refuses locks: "
    f"put remem's home on a local disk (--home or ${HOME_ENV})"
)


@contextmanager
def file_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold an exclusive (or shared) lock on `path`, creating the lock file user-only."""
    fd = _open(path)
    with os.fdopen(fd, "r+b") as handle:
        _lock(handle, path, portalocker.LockFlags.SHARED if shared else portalocker.LockFlags.EXCLUSIVE)
        try:
            yield
        finally:
            portalocker.unlock(handle)


class LockHandle:
    """An exclusive lock held until `release()` (or process death)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle

    def release(self) -> None:
        portalocker.unlock(self._handle)
        self._handle.close()

    def release_removing(self, path: Path) -> None:
        """Remove the lock file at `path`, then let go: for a lock no later taker needs the file
        of (a review's, once its run ends), whose every taker takes it as `try_removable_lock` and
        `acquire_removable_lock` do. A file another process put there meanwhile is left."""
        if self.is_at(path):
            # Left when the removal fails: only a file, which the next holder removes.
            with contextlib.suppress(OSError):
                path.unlink()
        self.release()

    def is_at(self, path: Path) -> bool:
        """Whether `path` still names the locked file: once it is deleted or replaced, another
        process locks a new file there without waiting for this holder."""
        try:
            named = os.stat(path, follow_symlinks=False)
        except OSError:
            return False
        held = os.fstat(self._handle.fileno())
        return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def try_file_lock(path: Path) -> LockHandle | None:
    """Take an exclusive lock without waiting; None when another holder has it, LockRefused when
    the file system refuses it."""
    return _lock_handle(path, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)


def try_removable_lock(path: Path) -> LockHandle | None:
    """`try_file_lock` of a lock file its holders remove as they let go (`release_removing`):
    one taken after its holder removed it (opened before, locked after) is no longer at `path`,
    where another taker makes a new one, so it is let go and `path` taken again."""
    while (lock := try_file_lock(path)) is not None and not lock.is_at(path):
        lock.release()
    return lock


def acquire_removable_lock(path: Path) -> LockHandle:
    """`acquire_file_lock` of a lock file its holders remove as they let go, as
    `try_removable_lock` takes it: a taker waiting on the file wakes with it removed."""
    while not (lock := acquire_file_lock(path)).is_at(path):
        lock.release()
    return lock


def try_file_lock_strictly(path: Path, *, create: bool = True) -> LockHandle | None:
    """`try_file_lock` for a lock outside remem's home (an eval case's folder), which moving the
    home does not move: a refusal is the file system's own OSError. With `create` False, a
    missing lock file is a FileNotFoundError, never made."""
    try:
        return _lock_handle(
            path, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING, create=create
        )
    except LockRefused as exc:
        raise exc.cause from None


def held_elsewhere(path: Path) -> bool:
    """Whether another holder has the lock at `path` exclusively (a daemon's), tried through a
    read-only descriptor and let go at once: for a folder that cannot be written (a read-only
    mount), where no lock can be taken but one may be held. No file there: none is held. Tried
    shared: it conflicts with an exclusive holder just the same, and where flock is emulated
    with byte-range locks (NFS, CIFS) an exclusive one needs a descriptor open for writing
    (EBADF, flock(2)), which would read as a file system refusing every lock."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as handle:
        if not _lock(handle, path, portalocker.LockFlags.SHARED | portalocker.LockFlags.NON_BLOCKING):
            return True
        portalocker.unlock(handle)
    return False


def acquire_file_lock(path: Path) -> LockHandle:
    """Wait for an exclusive lock that outlives any one block of code (release it yourself)."""
    handle = _lock_handle(path, portalocker.LockFlags.EXCLUSIVE)
    assert handle is not None, "a blocking lock is always acquired"
    return handle


def bounded_file_lock(path: Path, *, within: float, shared: bool = False) -> LockHandle | None:
    """Wait up to `within` seconds for a lock that outlives any one block of code (release it
    yourself); None when another holder keeps it that long, LockRefused at once when the file
    system refuses it. For a lock whose wait must stay
    bounded even when its holder stops in its work (a command suspended with Ctrl-Z): polled,
    since the kernel's wait has no timeout."""
    flags = (portalocker.LockFlags.SHARED if shared else portalocker.LockFlags.EXCLUSIVE) | (
        portalocker.LockFlags.NON_BLOCKING
    )
    deadline = time.monotonic() + within
    while (handle := _lock_handle(path, flags)) is None:
        if time.monotonic() >= deadline:
            return None
        time.sleep(_POLL_SECONDS)
    return handle


def _lock_handle(path: Path, flags: portalocker.LockFlags, *, create: bool = True) -> LockHandle | None:
    handle = os.fdopen(_open(path, create=create), "r+b")
    try:
        taken = _lock(handle, path, flags)
    except LockRefused:
        handle.close()
        raise
    if not taken:
        handle.close()
        return None
    return LockHandle(handle)


def _lock(handle: BinaryIO, path: Path, flags: portalocker.LockFlags) -> bool:
    """Lock `handle`: False when another holder has it (only a non-blocking take can find that),
    LockRefused when the file system will not lock it at all."""
    try:
        portalocker.lock(handle, flags)
    except portalocker.LockException as exc:
        # EAGAIN / EWOULDBLOCK, or EACCES where lockf says held so: "held" only to a take that
        # does not wait. A waiting take told so was not made to wait: entering its block as if
        # locked would run it unlocked, so it is refused like any other failure.
        if isinstance(exc, portalocker.AlreadyLocked) and flags & portalocker.LockFlags.NON_BLOCKING:
            return False
        cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else OSError(str(exc))
        raise LockRefused(path, cause) from None
    return True


def _open(path: Path, *, create: bool = True) -> int:
    # Never through a symlink: O_CREAT would create a file wherever it points.
    try:
        return os.open(path, os.O_RDWR | os.O_NOFOLLOW | (os.O_CREAT if create else 0), PRIVATE_FILE_MODE)
    except OSError as exc:
        if exc.errno in (errno.EISDIR, errno.ELOOP):
            raise LockUnusable(path, "a folder or a symlink stands there") from None
        raise

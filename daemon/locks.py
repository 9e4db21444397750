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
  `try_file_lock_strictly` is the same take for a caller that must tell a lock held from one the
  file system refuses, and may leave a missing lock file unmade (an eval case's folder).
- `bounded_file_lock` polls up to a deadline: for a lock that must never hold up its caller,
  whatever its holder does (the history's, the daemon's spawn lock).
"""

from __future__ import annotations

import errno
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .fsutil import PRIVATE_FILE_MODE

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
    """Something other than a lock file stands where one must be (a folder, a symlink)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} {LOCK_UNUSABLE.format(reason=reason)}")
        self.path, self.reason = path, reason


_POLL_SECONDS = 0.01  # a bounded wait's look again: holders of such locks hold them for milliseconds

# Said of the file without its path, which the diagnostic that carries it names separately.
LOCK_UNUSABLE = "cannot be used as a lock file ({reason}); remove it, remem recreates it"


@contextmanager
def file_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold an exclusive (or shared) lock on `path`, creating the lock file user-only."""
    fd = _open(path)
    with os.fdopen(fd, "r+b") as handle:
        flags = portalocker.LockFlags.SHARED if shared else portalocker.LockFlags.EXCLUSIVE
        portalocker.lock(handle, flags)
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
    """Take an exclusive lock without waiting; None when another holder has it."""
    return _lock_handle(path, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)


def try_file_lock_strictly(path: Path, *, create: bool = True) -> LockHandle | None:
    """`try_file_lock` for a caller that must tell a lock held from one that cannot be taken at
    all: None only when another holder has it; the OSError when the file system refuses the lock
    (ENOLCK on some network mounts), which `try_file_lock` answers None. With `create` False, a
    missing lock file is a FileNotFoundError, never made."""
    handle = os.fdopen(_open(path, create=create), "r+b")
    try:
        portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
    except portalocker.AlreadyLocked:
        handle.close()
        return None
    except portalocker.LockException as exc:
        handle.close()
        raise exc.__cause__ if isinstance(exc.__cause__, OSError) else OSError(str(exc)) from None
    return LockHandle(handle)


def held_elsewhere(path: Path) -> bool:
    """Whether another holder has the lock at `path`, tried through a read-only descriptor and
    let go at once: for a folder that cannot be written (a read-only mount), where no lock can
    be taken but one may be held. No file there: none is held."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as handle:
        try:
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.LockException:
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
    yourself); None when another holder keeps it that long. For a lock whose wait must stay
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


def _lock_handle(path: Path, flags: portalocker.LockFlags) -> LockHandle | None:
    fd = _open(path)
    handle = os.fdopen(fd, "r+b")
    try:
        portalocker.lock(handle, flags)
    except portalocker.LockException:
        handle.close()
        return None
    return LockHandle(handle)


def _open(path: Path, *, create: bool = True) -> int:
    # Never through a symlink: O_CREAT would create a file wherever it points.
    try:
        return os.open(path, os.O_RDWR | os.O_NOFOLLOW | (os.O_CREAT if create else 0), PRIVATE_FILE_MODE)
    except OSError as exc:
        if exc.errno in (errno.EISDIR, errno.ELOOP):
            raise LockUnusable(path, "a folder or a symlink stands there") from None
        raise

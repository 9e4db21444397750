"""The look for a daemon through a read-only descriptor (a read-only state folder) takes the
lock shared. Where flock is emulated with byte-range locks (NFS, CIFS), an exclusive lock on a
descriptor open only for reading fails with EBADF (flock(2), NOTES): the look took it exclusive
and said a file system whose locks work refusing them ("put remem's home on a local disk"). The
OS's lock call answers as such a mount does (`fcntl.flock`, hooked in a child process before
remem imports it); the holder is a real lock taken in this process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from remem.daemon import locks
from tests.scratch import hooked_pythonpath

HOOK = """
import errno, fcntl, os

_real = fcntl.flock


def _flock(fd, operation):
    if operation & fcntl.LOCK_EX and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))
    return _real(fd, operation)


fcntl.flock = _flock
"""

LOOK = """
import sys
from pathlib import Path
from remem.daemon import locks

try:
    print("held" if locks.held_elsewhere(Path(sys.argv[1])) else "free")
except locks.LockRefused as exc:
    print(f"refused: {exc}")
"""


def look(path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": hooked_pythonpath(HOOK, "remem-flock-emulated-hook-")}
    done = subprocess.run(
        [sys.executable, "-c", LOOK, str(path)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_look_for_a_daemon_where_flock_is_emulated_tells_free_from_held(tmp_path: Path) -> None:
    lock = tmp_path / "daemon.lock"
    lock.touch()
    assert look(lock) == "free"
    held = locks.try_file_lock(lock)  # as the daemon holds it
    assert held is not None
    try:
        assert look(lock) == "held"
    finally:
        held.release()

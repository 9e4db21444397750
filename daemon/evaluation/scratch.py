"""The private folders `remem eval`'s cases run in, and the removal of those a killed run left.

A case's folder holds a copy of the evaluated settings (the model's `base_url`) and is deleted
when the case ends, or when the run is stopped; a run killed outright (SIGKILL, a crash, the
machine's power) cannot delete it. So each run holds a lock on a file in each of its folders
while it uses it, which the kernel lets go the moment its process dies, and the next run
removes the folders whose lock it can take: those no live process owns. A folder without its
lock file is being made or deleted, or an older remem's, and is removed only once it has lain
unchanged for a day (decision 0486).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..locks import LockHandle, LockUnusable, try_file_lock_strictly

PREFIX = "remem-eval-"
OWNER_LOCK = "owner.lock"
# A folder without its lock file stays this long unchanged before it is a leftover: a folder is
# without it for an instant as it is made or deleted, and an older remem's for its whole case.
LOCKLESS_STALE_SECONDS = 24 * 3600


@contextmanager
def private_folder() -> Iterator[Path]:
    """A new user-only folder in the temporary folder, this process's until it is deleted on
    exit; OSError when none can be made."""
    made, lock = _claimed()
    try:
        with made as folder:
            yield Path(folder)
    finally:
        lock.release()  # after the deletion: no other run removes the folder under this one


def _claimed() -> tuple[tempfile.TemporaryDirectory[str], LockHandle]:
    """A new folder and its lock, held. Another run's removal of stale folders may take a folder
    in the moment between its making and its locking: that one is the removal's, and a folder is
    made anew; never waited on, since that run may be stopped (Ctrl-Z) holding it. OSError when
    the lock cannot be taken at all (a file system without locks)."""
    while True:
        made = tempfile.TemporaryDirectory(prefix=PREFIX)
        lock_path = Path(made.name) / OWNER_LOCK
        try:
            lock = try_file_lock_strictly(lock_path)
        except FileNotFoundError:  # removed already
            lock = None
        except OSError:
            made.cleanup()
            raise
        if lock is not None:  # else a removal holds it: the folder is the removal's
            if lock.is_at(lock_path):
                return made, lock
            lock.release()  # the removal held it, and has deleted the folder since
        made.cleanup()


def remove_stale() -> None:
    """Remove this user's case folders in the temporary folder that no live run owns. A folder
    that cannot be looked at or removed is left as it is, for the next run to try again."""
    try:
        candidates = list(Path(tempfile.gettempdir()).glob(f"{PREFIX}*"))
    except OSError:  # no temporary folder: each case says so
        return
    for folder in candidates:
        if _mine(folder):
            _remove_if_unowned(folder)


def _mine(folder: Path) -> bool:
    """A folder of this user's (not a link to one): another user's is theirs to clean."""
    try:
        st = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def _remove_if_unowned(folder: Path) -> None:
    # Never a lock file made here: it would land in a folder its run is deleting, after the
    # run's last file went and before the folder does, and fail the run's deletion.
    try:
        lock = try_file_lock_strictly(folder / OWNER_LOCK, create=False)
    except FileNotFoundError:
        if _unchanged_for_long(folder):
            shutil.rmtree(folder, ignore_errors=True)
        return
    except (OSError, LockUnusable):
        return
    if lock is None:  # a live run's
        return
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        lock.release()


def _unchanged_for_long(folder: Path) -> bool:
    try:
        changed = folder.lstat().st_mtime
    except OSError:
        return False
    return time.time() - changed > LOCKLESS_STALE_SECONDS

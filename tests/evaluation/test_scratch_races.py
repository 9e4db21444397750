"""Two `remem eval` runs at once: one's removal of stale case folders never breaks the other's
making or deleting of its own (decision 0486). The other run is played here, at the exact
instant of each race, by the same code its process runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.evaluation import scratch

HANG_GUARD_SECONDS = 60  # not a speed assertion: a wait that never ends fails instead of hanging


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder both runs share."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_removal_as_a_run_deletes_its_folder_leaves_the_deletion_whole(
    temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other run's removal looks at the folder after its run removed the lock file and
    before the folder itself goes, and is paused there (its deletion, if any, comes after). It
    made a lock file in the folder: the run's last `rmdir` failed (ENOTEMPTY) and its case ended
    in a traceback."""
    real_rmdir = os.rmdir
    deferred: list[Any] = []

    def rmdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("dir_fd") is None and Path(path).parent == temp:  # the run's folder itself
            with monkeypatch.context() as paused:
                paused.setattr(shutil, "rmtree", lambda *a, **k: deferred.append(a))
                scratch.remove_stale()
        real_rmdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "rmdir", rmdir)
    with scratch.private_folder() as folder:
        (folder / "home").mkdir()
    monkeypatch.setattr(os, "rmdir", real_rmdir)
    for args in deferred:
        shutil.rmtree(*args)
    assert not folder.exists() and not list(temp.iterdir())


def test_a_folder_a_stopped_removal_holds_is_not_waited_on(
    temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another run's removal took the new folder's lock in the instant before its maker did,
    and was then stopped (Ctrl-Z) holding it: the maker waited for it, and its case with it."""
    real_mkdtemp = tempfile.mkdtemp
    holders: list[subprocess.Popen[str]] = []

    def mkdtemp(*args: Any, **kwargs: Any) -> str:
        made = real_mkdtemp(*args, **kwargs)
        if not holders:
            holders.append(_holding(Path(made) / scratch.OWNER_LOCK))
        return made

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    got: list[Path] = []
    maker = threading.Thread(target=lambda: got.append(_made_and_deleted()), daemon=True)
    try:
        maker.start()
        maker.join(HANG_GUARD_SECONDS)
        assert got, "the maker waited on the stopped removal's lock"
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
        maker.join(HANG_GUARD_SECONDS)
    [holder] = holders
    assert holder.args[-1] != str(got[0] / scratch.OWNER_LOCK), "a folder of its own"
    assert got[0].parent == temp and not list(temp.iterdir())


def _made_and_deleted() -> Path:
    with scratch.private_folder() as folder:
        return folder


def _holding(lock_file: Path) -> subprocess.Popen[str]:
    """A process that holds `lock_file`'s lock, as a removal does, until it is killed."""
    code = (
        "import fcntl, sys\n"
        "handle = open(sys.argv[1], 'a')\n"
        "fcntl.flock(handle, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(lock_file)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder

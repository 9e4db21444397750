"""A lock call that waits and is answered "held" (EAGAIN, as some file systems answer flock)
was never made to wait: the take is refused, naming the file and its reason, where it was read as
taken and its block ran without the lock. A take that does not wait still reads it as held, and a
look for a holder through a read-only descriptor says a refusal as one. The OS's lock call is
failed at its boundary (`fcntl.flock`, hooked in a child process before remem imports it)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scratch import hooked_pythonpath

HOOK = """
import errno, fcntl, os

_answer = int(os.environ["REMEM_TEST_FLOCK_ERRNO"])
_real = fcntl.flock


def _flock(fd, operation):
    if operation & (fcntl.LOCK_EX | fcntl.LOCK_SH):
        raise OSError(_answer, os.strerror(_answer))
    return _real(fd, operation)


fcntl.flock = _flock
"""

TAKE = """
import sys
from pathlib import Path
from remem.daemon import locks

path = Path(sys.argv[2])
try:
    if sys.argv[1] == "file_lock":
        with locks.file_lock(path):
            print("entered")
    elif sys.argv[1] == "acquire_file_lock":
        locks.acquire_file_lock(path)
        print("taken")
    elif sys.argv[1] == "try_file_lock":
        print("held" if locks.try_file_lock(path) is None else "taken")
    else:
        path.touch()
        print("held" if locks.held_elsewhere(path) else "free")
except locks.LockRefused as exc:
    print(f"refused {exc.errno}: {exc}")
"""


def take(how: str, path: Path, answer: int) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": hooked_pythonpath(HOOK, "remem-flock-answers-hook-"),
        "REMEM_TEST_FLOCK_ERRNO": str(answer),
    }
    done = subprocess.run(
        [sys.executable, "-c", TAKE, how, str(path)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("how", ["file_lock", "acquire_file_lock"])
def test_a_waiting_take_told_held_is_refused_never_entered(tmp_path: Path, how: str) -> None:
    said = take(how, tmp_path / "scope.lock", errno.EAGAIN)
    assert said.startswith(f"refused {errno.EAGAIN}: {tmp_path / 'scope.lock'} cannot be locked: "), said


@pytest.mark.parametrize("how", ["try_file_lock", "held_elsewhere"])
def test_a_take_that_does_not_wait_reads_it_as_held(tmp_path: Path, how: str) -> None:
    assert take(how, tmp_path / "daemon.lock", errno.EAGAIN) == "held"


def test_a_look_for_a_holder_says_a_refused_lock(tmp_path: Path) -> None:
    said = take("held_elsewhere", tmp_path / "daemon.lock", errno.ENOLCK)
    assert said.startswith(f"refused {errno.ENOLCK}: {tmp_path / 'daemon.lock'} cannot be locked: "), said

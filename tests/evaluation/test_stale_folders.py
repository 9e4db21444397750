"""A `remem eval` killed outright (SIGKILL) cannot delete its case's private home, which holds the
evaluated settings (the model's `base_url`): the next run removes it, and never the home of a
run still going (decision 0486). Real `remem eval` processes, the model hanging over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from remem.daemon.evaluation.scratch import LOCKLESS_STALE_SECONDS, OWNER_LOCK
from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI, hang
from tests.scratch import hooked_pythonpath

from .eval_command import eval_command, eval_env

pytestmark = pytest.mark.slow  # runs of `remem eval`

TIMEOUT_SECONDS = 60


def _start(home: Home, temp: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        eval_command(home, "--cases", "dsh/decision"), env=eval_env(TMPDIR=str(temp)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _waiting_on_the_model(run: subprocess.Popen[str], fake: FakeOpenAI, asked: int) -> None:
    """Until the model was asked `asked` times in all: the run's case is under way, its folder made."""
    deadline = time.monotonic() + TIMEOUT_SECONDS  # a hang guard, not a speed assertion
    while fake.count < asked and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake.count == asked and run.poll() is None, run.stderr.read() if run.stderr else ""


def test_the_next_run_removes_a_killed_runs_folder_and_leaves_a_live_ones(
    user_home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.reply_always(lambda body: hang())
    temp = tmp_path / "temp"
    temp.mkdir()
    with _start(user_home, temp) as killed:
        _waiting_on_the_model(killed, fake, 1)
        killed.kill()
        killed.communicate(timeout=TIMEOUT_SECONDS)
    [left] = temp.glob("remem-eval-*")
    assert (left / "home" / "settings.yml").is_file(), "the killed run's home, settings and all"

    with _start(user_home, temp) as live:
        try:
            _waiting_on_the_model(live, fake, 2)
            [running] = set(temp.glob("remem-eval-*")) - {left}
            # A case that never asks the model: the run ends on its own.
            done = subprocess.run(
                eval_command(user_home, "--cases", "dsh/empty"), env=eval_env(TMPDIR=str(temp)),
                capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert list(temp.iterdir()) == [running], "the killed run's folder is gone, the live one's kept"
            assert (running / "home" / "settings.yml").is_file()
            assert live.poll() is None, "the live run goes on"
        finally:
            live.terminate()  # a stop it acts on: it deletes its own folder
            live.communicate(timeout=TIMEOUT_SECONDS)
    assert live.returncode == 143
    assert not list(temp.iterdir())


def test_a_folder_without_its_lock_file_is_removed_only_once_it_lay_unchanged_a_day(
    user_home: Home, tmp_path: Path
) -> None:
    """A folder is without its lock file while it is made or deleted, and an older remem's is
    for good. The removal made the lock file to take it: in a folder being deleted, that file
    failed its run's deletion (ENOTEMPTY), and a folder being made was taken from its maker."""
    temp = tmp_path / "temp"
    temp.mkdir()
    fresh, old = temp / "remem-eval-fresh", temp / "remem-eval-old"
    for folder in (fresh, old):
        (folder / "home").mkdir(parents=True)
        (folder / "home" / "settings.yml").write_text("consolidation: {}\n")
    day_and_more = time.time() - LOCKLESS_STALE_SECONDS - 60
    os.utime(old, (day_and_more, day_and_more))
    done = subprocess.run(
        eval_command(user_home, "--cases", "dsh/empty"), env=eval_env(TMPDIR=str(temp)),
        capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(temp.iterdir()) == [fresh] and not (fresh / OWNER_LOCK).exists()


def test_a_temporary_folder_without_locks_fails_each_case_saying_so(user_home: Home, tmp_path: Path) -> None:
    """A file system that refuses locks (ENOLCK: some NFS and FUSE mounts), played by a hook
    loaded at the run's start (`sitecustomize`) that fails the lock of a case folder's file: an
    AssertionError ended the run as a bug in remem."""
    temp = tmp_path / "temp"
    temp.mkdir()
    env = eval_env(TMPDIR=str(temp), PYTHONPATH=hooked_pythonpath(NO_LOCKS_HOOK, "remem-no-locks-hook-"))
    done = subprocess.run(
        eval_command(user_home, "--cases", "dsh/decision", "--json"), env=env,
        capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    [case] = json.loads(done.stdout)["cases"]
    assert case["score"]["status"] == "unreadable"
    assert case["score"]["error"] == "its private home cannot be made: [Errno 37] No locks available"
    assert not list(temp.iterdir()), "the folder whose lock failed is deleted"


NO_LOCKS_HOOK = f"""
import errno, fcntl, os

_flock = fcntl.flock


def flock(fd, operation):
    number = fd if isinstance(fd, int) else fd.fileno()
    if os.readlink(f"/proc/self/fd/{{number}}").endswith("/{OWNER_LOCK}"):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
    return _flock(fd, operation)


fcntl.flock = flock
"""

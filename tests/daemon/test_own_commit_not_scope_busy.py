"""A memory read through the daemon waits for the daemon's own commit of its scope however long
that commit takes (a big one on a slow machine), where it was refused SCOPE_BUSY after 5 s,
telling the user to end "another remem process": the daemon itself. flock sets two threads of
one process against each other as it does two processes; the 5 s bound is for other processes.

The commit is held in progress by a hook in the daemon's process (`sitecustomize`): its history
entry waits while a gate file the test removes is there. The hook marks when the read waits its
turn behind that commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.scratch import hooked_pythonpath

from .helpers import remem, wait_until

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
GATE_ENV, RECORDING_ENV, WAITING_ENV = "REMEM_TEST_GATE", "REMEM_TEST_RECORDING", "REMEM_TEST_WAITING"

HOOK = f"""
import os, threading, time
from remem.daemon.memory import history, store

_gate, _recording, _waiting = (os.environ[n] for n in ("{GATE_ENV}", "{RECORDING_ENV}", "{WAITING_ENV}"))
_record = history.History.record


def _held_record(self, *args, **kwargs):
    if threading.current_thread() is not threading.main_thread() and os.path.exists(_gate):
        open(_recording, "w").close()
        while os.path.exists(_gate):  # the test's gate, not a guess at how long anything takes
            time.sleep(0.01)
    return _record(self, *args, **kwargs)


history.History.record = _held_record
_own = getattr(store, "_OwnHolders", None)
if _own is not None:
    _wait_turn = _own.wait_turn

    def _marked_wait_turn(self, shared):
        if self.in_the_way(shared):
            open(_waiting, "w").close()
        return _wait_turn(self, shared)

    _own.wait_turn = _marked_wait_turn
"""


def test_a_read_waits_for_the_daemons_own_commit_past_the_bound(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate, recording, waiting = tmp_path / "gate", tmp_path / "recording", tmp_path / "waiting"
    monkeypatch.delenv(NO_DAEMON_ENV)
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(HOOK, "remem-own-commit-hook-"))
    for name, path in [(GATE_ENV, gate), (RECORDING_ENV, recording), (WAITING_ENV, waiting)]:
        monkeypatch.setenv(name, str(path))
    monkeypatch.chdir(tmp_path)
    assert remem(home, "daemon", "start").returncode == 0
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    gate.touch()
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "memory"]
    write = subprocess.Popen(
        [*command, "replace-global", "--expected-revision", EMPTY, "--file", str(text)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    read = None
    try:
        wait_until(recording.exists, what="the commit to reach its history entry")
        read = subprocess.Popen(
            [*command, "log", "--global"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_until(lambda: waiting.exists() or read.poll() is not None, what="the read to wait or end")
        assert read.poll() is None, read.communicate()  # it waits for the commit, not refused
    finally:
        gate.unlink()
        said = write.communicate(timeout=60)
        logged = read.communicate(timeout=60) if read is not None else None
    assert write.returncode == 0, said
    assert read.returncode == 0 and logged is not None, logged

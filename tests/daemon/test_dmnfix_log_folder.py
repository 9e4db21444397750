"""A folder at `daemon.log.1` keeps the daemon from moving its log aside at the cap (decision
0453): the daemon says so as the log's last line, naming what is in the way, and writes nothing
more, where the log grew without bound until the daemon restarted; once the folder is gone it
moves the log aside at its next line and goes on in a fresh one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.log_cap import LOG_CAP_ENV
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import wait_until

CAP = 2048


def _remem(home: Home, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI through the daemon, the log's cap `CAP`."""
    environment = {k: v for k, v in os.environ.items() if k != NO_DAEMON_ENV}
    environment.update({LOG_CAP_ENV: str(CAP), **env})
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment)


def _log_long_lines(home: Home, tmp_path: Path, name: str, count: int) -> list[str]:
    """Have the daemon log `count` long lines, each naming one of the folders returned: each
    client whose Claude Code folder it does not read is logged once."""
    folders = [str(tmp_path / f"{name * 60}-{n}") for n in range(count)]
    for folder in folders:
        asked = _remem(home, "daemon", "status", CLAUDE_CONFIG_DIR=folder)
        assert asked.returncode == 0, asked.stderr
    return folders


def test_a_folder_at_the_older_log_stops_the_log_at_its_cap_until_it_is_gone(
    home: Home, tmp_path: Path
) -> None:
    paths = DaemonPaths(home)
    assert _remem(home, "daemon", "start").returncode == 0
    paths.old_log.mkdir()
    (paths.old_log / "notes.txt").write_text("the user's\n")
    before = _log_long_lines(home, tmp_path, "before", 12)
    *kept, said = paths.log.read_text().splitlines(keepends=True)
    assert sum(map(len, kept)) <= CAP + max(map(len, kept)), "written past the line that took it over"
    assert f" WARNING {paths.log} passed {CAP} bytes and cannot be moved aside (" in said, said
    assert f"Is a directory: '{paths.old_log}'): remove what stands in the way; " in said, said
    assert before[-1] not in paths.log.read_text()
    assert (paths.old_log / "notes.txt").read_text() == "the user's\n"

    (paths.old_log / "notes.txt").unlink()
    paths.old_log.rmdir()
    after = _log_long_lines(home, tmp_path, "after", 2)
    assert paths.old_log.read_text().endswith(said)
    fresh = paths.log.read_text()
    pid = paths.read_status().pid  # type: ignore[union-attr]
    assert fresh.splitlines()[0].endswith(f"(pid {pid})") and " listening on " in fresh.splitlines()[0]
    assert "the lines logged while it could not be moved aside were dropped" in fresh
    assert after[-1] in fresh
    assert _remem(home, "daemon", "status").returncode == 0, "the daemon still serves"


def _writes_to(pid: int, log: Path) -> bool:
    """Whether descriptors 1 and 2 of process `pid` are the file at `log` (Linux's /proc)."""
    found = log.stat()
    return all(
        (written.st_dev, written.st_ino) == (found.st_dev, found.st_ino)
        for written in (os.stat(f"/proc/{pid}/fd/{fd}") for fd in (1, 2))
    )


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs Linux's /proc/PID/fd")
def test_a_full_log_removed_with_the_folder_in_its_way_goes_on_in_a_fresh_one(
    home: Home, tmp_path: Path
) -> None:
    """A user who follows the warning and removes both the full log and the folder: the way is
    clear, where the daemon took the missing log for another daemon's and logged nothing more."""
    paths = DaemonPaths(home)
    assert _remem(home, "daemon", "start").returncode == 0
    paths.old_log.mkdir()
    _log_long_lines(home, tmp_path, "before", 12)
    assert " cannot be moved aside (" in paths.log.read_text().splitlines()[-1]
    paths.log.unlink()
    paths.old_log.rmdir()
    after = _log_long_lines(home, tmp_path, "after", 3)
    lines = paths.log.read_text().splitlines()
    pid = paths.read_status().pid  # type: ignore[union-attr]
    assert lines[0].endswith(f"(pid {pid})") and " listening on " in lines[0], lines
    assert lines[1].endswith(f" INFO the log passed {CAP} bytes and was removed: its earlier lines are gone")
    assert lines[2].endswith(" WARNING the lines logged while it could not be moved aside were dropped")
    assert after[-1] in lines[-1]
    assert _writes_to(pid, paths.log)
    assert not paths.old_log.exists()


def test_a_crash_while_the_log_is_full_is_said_at_its_end(home: Home, tmp_path: Path) -> None:
    """Its descriptors 1 and 2 go nowhere: the crash's traceback was lost, and the log ended with
    the warning as if the daemon still ran. An unexpected error raised in its status keeper (a
    fault point, once its status file is removed) crashes it."""
    paths = DaemonPaths(home)
    fault = "daemon.status-keeper.before-rewrite"
    assert _remem(home, "daemon", "start", REMEM_FAULTPOINT=f"raise:{fault}").returncode == 0
    paths.old_log.mkdir()
    _log_long_lines(home, tmp_path, "before", 12)
    warned = paths.log.read_text().splitlines()[-1]
    assert " cannot be moved aside (" in warned
    paths.status.unlink()
    wait_until(lambda: not paths.running(), what="the daemon's crash")
    *_, last_warned, crashed = paths.log.read_text().splitlines()
    assert last_warned == warned
    assert crashed.endswith(
        f" ERROR the daemon stopped on an unexpected error, Fault: fault point {fault} reached (its "
        "traceback is not logged: the log is full)"
    ), crashed
    assert paths.old_log.is_dir()


# The daemon's log capped as a spawned daemon's is, in a process of its own whose opening of the
# fresh log after the rename finds no descriptor left (EMFILE): a real daemon at its descriptor
# limit cannot be made to fail that one open and no other.
_NO_DESCRIPTOR_LEFT = """
import errno, logging, os, sys
from pathlib import Path
from remem.daemon.credentials import log_to_stderr
from remem.daemon.home import Home
from remem.daemon.server.log_cap import cap_log
from remem.daemon.server.runtime import DaemonPaths

paths = DaemonPaths(Home(Path(sys.argv[1])))
opened = paths.home.open_file(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
for fd in (1, 2):
    os.dup2(opened, fd)
log_to_stderr(logging.INFO, "%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("remem.daemon")
header = log.makeRecord(log.name, logging.INFO, "", 0, "listening on here (pid %d)", (os.getpid(),), None)
log.handle(header)
cap_log(paths, header)
real = Home.open_file

def no_descriptor_left(home, path, flags):
    Home.open_file = real
    raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

Home.open_file = no_descriptor_left
for n in range(int(sys.argv[2])):
    log.info("line %d %s", n, "x" * 100)
"""


def test_a_fresh_log_that_cannot_be_opened_once_is_opened_at_the_next_line(home: Home) -> None:
    """The log was moved aside, so it is no full log to stop writing: the daemon said it could
    not be moved aside (into the log moved aside), took the missing log for another daemon's
    and logged nothing more."""
    paths = DaemonPaths(home)
    count = 25  # the log moved aside once
    environment = {**os.environ, LOG_CAP_ENV: str(CAP)}
    ran = subprocess.run(
        [sys.executable, "-c", _NO_DESCRIPTOR_LEFT, str(home.root), str(count)],
        capture_output=True, text=True, timeout=60, env=environment,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    older, fresh = paths.old_log.read_text(), paths.log.read_text()
    assert "cannot be moved aside" not in older + fresh
    lines = fresh.splitlines()
    assert " INFO listening on here (pid " in lines[0], lines
    assert lines[1].endswith(
        f" INFO the log passed {CAP} bytes: its earlier lines are in {paths.old_log.name}"
    )
    # None dropped: the line whose fresh log could not be opened went on into the one moved aside.
    logged = [line for line in (older + fresh).splitlines() if " INFO line " in line]
    assert [line.split()[4] for line in logged] == [str(n) for n in range(count)], logged
    assert " INFO line 0 " in older and f" INFO line {count - 1} " in lines[-1]

"""A daemon whose full log cannot be looked at (its state folder made unsearchable) says so as
the log's last line and serves on (decision 0453): the error raised out of the line being
logged, and the status keeper, which logged that its status file was unreadable, died of it, so
the status file was never put back and every command answered that no daemon could be reached.
And only the "1" a client sets marks a daemon as spawned (decision 0478): any value a user left
in the environment had a `remem daemon run` by hand exit 75."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.client import SPAWNED_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.permissions import PAST_MASK, bound_by_permissions, effective

from .capped_log import CAP, remem_logging_capped, run_capped
from .helpers import wait_until


@pytest.fixture
def bound(home: Home) -> Iterator[int]:
    """A running daemon's pid, a daemon that permissions bind also when run as root (see
    test_lspfix_unjudged_cause)."""
    privileged = os.geteuid() == 0
    try:
        started = remem_logging_capped(
            home, "daemon", "start", preexec=bound_by_permissions if privileged else None
        )
    except subprocess.SubprocessError as error:
        pytest.skip(f"run as root, which cannot give up its way past permissions here: {error}")
    assert started.returncode == 0, started.stderr
    pid = DaemonPaths(home).read_status().pid  # type: ignore[union-attr]
    try:
        if privileged and (held := effective(pid) & PAST_MASK):
            pytest.skip(f"run as root, whose daemon holds its way past permissions still (CapEff {held:#x})")
        yield pid
    finally:
        remem_logging_capped(home, "daemon", "stop")


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs Linux's /proc/PID/fd")
def test_a_full_log_in_an_unsearchable_folder_is_said_and_the_daemon_stays_findable(
    home: Home, bound: int
) -> None:
    paths = DaemonPaths(home)
    with paths.log.open("a") as log:
        log.write("x" * CAP + "\n")  # full: the next line the daemon logs takes it over
    home.state.chmod(0o600)
    try:
        # The keeper finds its status file unreadable and says so: the line that looks at the log.
        wait_until(lambda: os.readlink(f"/proc/{bound}/fd/2") == os.devnull, what="the log left")
    finally:
        home.state.chmod(0o700)
    said = paths.log.read_text().splitlines()[-1]
    assert f" WARNING {paths.log} passed {CAP} bytes and cannot be moved aside (" in said, said
    assert f"Permission denied: '{paths.log}'): remove what stands in the way; " in said, said

    paths.status.unlink()
    wait_until(lambda: paths.read_status() is not None, what="the status file put back")
    assert paths.read_status().pid == bound  # type: ignore[union-attr]
    # A line logged once the folder is back (dropped, as the log still takes nothing) moves the
    # full log aside, and the next goes on in a fresh one: each client whose Claude Code folder
    # the daemon does not read is logged once.
    for other in ("a-claude-folder", "another-claude-folder"):
        asked = remem_logging_capped(
            home, "daemon", "status", CLAUDE_CONFIG_DIR=str(home.root.parent / other)
        )
        assert asked.returncode == 0, asked.stderr
    assert paths.old_log.read_text().splitlines()[-1] == said
    fresh = paths.log.read_text().splitlines()
    assert fresh[0].endswith(f"(pid {bound})") and " listening on " in fresh[0], fresh
    assert fresh[2].endswith(" WARNING the lines logged while it could not be moved aside were dropped")
    assert str(home.root.parent / other) in fresh[-1], fresh


@pytest.mark.parametrize("value", ["", "0"])
def test_a_daemon_run_by_hand_with_another_value_of_the_spawned_variable_exits_0(
    home: Home, value: str
) -> None:
    assert remem_logging_capped(home, "daemon", "start").returncode == 0
    try:
        ran = remem_logging_capped(home, "daemon", "run", **{SPAWNED_ENV: value})
        assert ran.returncode == 0, (ran.stdout, ran.stderr)
        assert ran.stdout.startswith(f"remem daemon already running for {home.root} (pid "), ran.stdout
    finally:
        remem_logging_capped(home, "daemon", "stop")


# The daemon's log capped as a spawned daemon's is, in a process of its own where moving the log
# aside meets an unexpected error (a bug, made here: no failure of the system's is one now).
_CAPPING_FAILS = """
cap_log(paths, header)
def a_bug(paths, cap):
    raise RuntimeError("a bug in capping")
log_cap.rotate_log = a_bug
for n in range(int(sys.argv[2])):
    log.info("line %d %s", n, "x" * 100)
"""


def test_a_line_whose_capping_fails_is_logged_and_raises_nowhere(home: Home) -> None:
    """It raised out of the line being logged, where the daemon's status keeper died of it."""
    paths = DaemonPaths(home)
    ran = run_capped(home, _CAPPING_FAILS, "20")
    assert ran.returncode == 0, ran.stderr
    logged = paths.log.read_text()
    assert "RuntimeError: a bug in capping" in logged, logged
    assert logged.count("--- Logging error ---") == 1, logged  # said once, not at every line
    assert " INFO line 19 " in logged, "the lines after it are logged"

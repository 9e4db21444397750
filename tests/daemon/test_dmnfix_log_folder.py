"""A folder at `daemon.log.1` keeps the daemon from moving its log aside at the cap (decision
0453): the daemon says so as the log's last line, naming what is in the way, and writes nothing
more, where the log grew without bound until the daemon restarted; once the folder is gone it
moves the log aside at its next line and goes on in a fresh one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import LOG_CAP_ENV, DaemonPaths

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

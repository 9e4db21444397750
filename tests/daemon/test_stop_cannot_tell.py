"""`remem daemon stop` and `remem daemon status` where they may not look at the daemon's lock (a
`state/` folder, or the lock file, its user may not read) say they cannot tell whether a daemon
runs, naming what is in the way, exit 2 (HOME_UNUSABLE): through a real `remem` process bound by
file modes (root gives up its ways past them, or the test is skipped, saying why).

`stop` ended "internal error, a bug in remem (PermissionError …)", exit 4; `status` said "not
running (… Permission denied …)", exit 1, a guess a script went on from."""

from __future__ import annotations

import json
import os
import sys

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.permissions import as_user, modes, remem_bound


@pytest.mark.parametrize("command", ["stop", "status"])
@pytest.mark.parametrize("closed", ["state", "lock"])
def test_a_daemon_command_without_a_look_at_the_lock_says_it_cannot_tell_with_exit_2(
    home: Home, closed: str, command: str
) -> None:
    paths = DaemonPaths(home)
    paths.lock.touch()
    shut = home.state if closed == "state" else paths.lock
    with modes((shut, 0)):
        if as_user([sys.executable, "-c", f"open({str(paths.lock)!r})"], {**os.environ}).returncode == 0:
            pytest.skip("run as root, whose processes read any file still")
        said = remem_bound(home, "daemon", command)
        answered = remem_bound(home, "daemon", command, "--json")
    unchanged = ", so none was stopped" if command == "stop" else ""
    message = (
        f"cannot tell whether a remem daemon runs for {home.root}: {shut} cannot be read (Permission "
        f"denied){unchanged}; let your user read it, then run `remem daemon {command}` again"
    )
    assert (said.returncode, said.stdout, said.stderr) == (2, "", f"remem: {message}\n"), said
    assert (answered.returncode, answered.stderr) == (2, ""), answered
    assert json.loads(answered.stdout)["error"] == {"code": "HOME_UNUSABLE", "message": message}

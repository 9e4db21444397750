"""A file of the state folder the system refuses is a reason the daemon cannot start, naming
the file and the fix, never an `OSError` that a long-lived client (the language server) takes
for a bug, nor a CLI "internal error"."""

from __future__ import annotations

import errno
import subprocess
import sys

import pytest

from remem.daemon import client as daemon_client
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths


def test_a_folder_where_the_daemon_log_goes_is_said_with_its_fix(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    log = DaemonPaths(home).log
    log.mkdir()
    with pytest.raises(daemon_client.DaemonUnavailable) as refused:
        daemon_client.call(home, "daemon/status")
    assert str(refused.value) == (
        f"the remem daemon could not be started: {log}: Is a directory; remem keeps a file there, "
        "or a folder on its way: remove what stands in its place"
    )
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "start"]
    started = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (started.returncode, started.stderr) == (1, f"remem: {refused.value}\n")


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        (errno.EACCES, "give it back to your user (`chown`) or remove it"),
        (errno.EROFS, "choose a writable home with --home or $REMEM_HOME"),
        (errno.ENOSPC, "free some space"),
        (errno.EIO, "fix that, then run `remem daemon start`"),
    ],
)
def test_each_refusal_says_what_to_do(
    home: Home, monkeypatch: pytest.MonkeyPatch, code: int, fix: str
) -> None:
    paths = DaemonPaths(home)

    def refused(paths: DaemonPaths) -> None:
        raise OSError(code, "refused", str(paths.log))

    monkeypatch.setattr(daemon_client, "_spawn", refused)
    with pytest.raises(daemon_client.DaemonUnavailable) as raised:
        daemon_client._start(paths, True, float("inf"))
    message = str(raised.value)
    assert message.startswith(f"the remem daemon could not be started: {paths.log}: refused")
    assert message.endswith(fix), message

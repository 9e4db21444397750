"""A file of the state folder the system refuses (a root-owned `daemon.log` after `sudo remem`,
a read-only home, a full disk) is a reason the daemon cannot start, naming the file and the
fix, never an `OSError` that a long-lived client (the language server) takes for a bug, nor a
CLI "internal error". (A folder or a link there is the home's `HomeUnusable`, said before.)"""

from __future__ import annotations

import errno

import pytest

from remem.daemon import client as daemon_client
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths


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

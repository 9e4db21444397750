"""The daemon survives its own state files being deleted or overwritten while it runs."""

from __future__ import annotations

import json

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import remem, wait_until

pytestmark = pytest.mark.slow


def started(home: Home) -> int:
    result = remem(home, "daemon", "start", "--json")
    assert result.returncode == 0, result.stderr
    return int(json.loads(result.stdout)["pid"])


@pytest.mark.parametrize("damage", ["deleted", "garbage", "another daemon's"])
def test_a_touched_status_file_does_not_cut_clients_off(
    home: Home, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    pid = started(home)
    status_file = DaemonPaths(home).status
    if damage == "deleted":
        status_file.unlink()
    elif damage == "garbage":
        status_file.write_text("{not json")
    else:
        status_file.write_text(status_file.read_text().replace(f'"pid":{pid}', '"pid":1'))
    for command in (["daemon", "status", "--json"], ["memory", "show", "--json"]):
        result = remem(home, *command)
        assert result.returncode == 0, result.stderr
    assert json.loads(remem(home, "daemon", "status", "--json").stdout)["pid"] == pid
    wait_until(lambda: DaemonPaths(home).read_status() is not None)
    assert DaemonPaths(home).read_status().pid == pid  # type: ignore[union-attr]

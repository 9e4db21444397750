"""The daemon survives its own state files being deleted or overwritten while it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.process import STATUS_CHECK_SECONDS
from remem.daemon.server.runtime import DaemonPaths
from tests.sessions.factory import SessionSpec, build_session, write_session

from .helpers import calls, remem, wait_until

pytestmark = pytest.mark.slow


def started(home: Home) -> int:
    result = remem(home, "daemon", "start", "--json")
    assert result.returncode == 0, result.stderr
    return int(json.loads(result.stdout)["pid"])


@pytest.mark.parametrize("damage", ["deleted", "garbage", "another daemon's", "a folder for a while"])
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
    elif damage == "another daemon's":
        status_file.write_text(status_file.read_text().replace(f'"pid":{pid}', '"pid":1'))
    else:  # the rewrite fails while it stands: the keeper must go on, and put the file back after
        status_file.unlink()
        status_file.mkdir()
        time.sleep(3 * STATUS_CHECK_SECONDS)
        status_file.rmdir()
    for command in (["daemon", "status", "--json"], ["memory", "show", "--json"]):
        result = remem(home, *command)
        assert result.returncode == 0, result.stderr
    assert json.loads(remem(home, "daemon", "status", "--json").stdout)["pid"] == pid
    wait_until(lambda: DaemonPaths(home).read_status() is not None)
    assert DaemonPaths(home).read_status().pid == pid  # type: ignore[union-attr]


def status(home: Home) -> dict:  # type: ignore[type-arg]
    result = remem(home, "daemon", "status", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_an_invalid_settings_file_does_not_stop_the_daemon(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    write_session(root, build_session(SessionSpec(seed=4, turns=1, cwd="/w"), session_id="s-kept"))
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{root}]\n")
    started(home)
    assert remem(home, "daemon", "stop").returncode == 0

    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{root}]\n  idle: 3\n")
    started(home)
    report = status(home)
    assert report["settingsProblems"] == [f"{home.settings_file}:5: sessions.idle: unknown key; check its "
                                          "spelling against docs/cli.md#settings"]  # fmt: skip
    assert str(root) in report["watch"]["paths"], "it runs on the last valid settings"
    shown = remem(home, "daemon", "status")
    assert "settings.yml is invalid" in shown.stdout and "sessions.idle" in shown.stdout
    # The editor's tree is drawn by the last valid roots, saying why (decision 0363).
    [tree] = calls(home, [("sessions/tree", {"cwd": "/w"})])
    assert [n["id"] for n in tree["nodes"]] == ["s-kept"], "by the last valid roots"
    assert tree["settingsProblems"] == report["settingsProblems"]
    monkeypatch.delenv(NO_DAEMON_ENV)  # a command refuses the file, as without the daemon
    listed = remem(home, "sessions", "tree", "--cwd", "/w", "--json")
    assert listed.returncode == 2 and json.loads(listed.stdout)["error"]["code"] == "INVALID"

    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{root}]\n")
    wait_until(lambda: status(home)["settingsProblems"] == [])


@pytest.mark.parametrize("damage", ["deleted", "replaced"])
def test_a_touched_lock_file_lets_no_second_daemon_run(home: Home, damage: str) -> None:
    pid = started(home)
    paths = DaemonPaths(home)
    socket_file = Path(paths.read_status().socket)  # type: ignore[union-attr]
    paths.lock.unlink()
    if damage == "replaced":
        paths.lock.write_bytes(b"")
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"]
    second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = second.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        second.kill()
        second.communicate()
        pytest.fail("a second daemon went on running beside the first")
    assert second.returncode == 0, err
    assert out == f"remem daemon already running for {home.root} (pid {pid})\n"
    assert socket_file.exists() and status(home)["pid"] == pid, "the first one still serves, on its socket"
    wait_until(paths.running, what="the first daemon to lock its home again")
    assert "locked it again" in paths.log.read_text()
    assert remem(home, "daemon", "stop").returncode == 0
    assert not paths.running() and not socket_file.exists()

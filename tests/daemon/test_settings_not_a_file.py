"""A `settings.yml` that is no regular file (a folder, a FIFO) is one more problem of the file,
said as an invalid file's are, with or without the daemon (decision 0370), and never waited on:
a FIFO read the plain way held a daemon thread, and the command, for good."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.running_settings import RunningSettings
from remem.daemon.server.runtime import DaemonPaths
from remem.daemon.settings import Settings, SettingsError, SettingsStore

from .helpers import calls, wait_until

SHAPES: dict[str, Callable[[str], None]] = {"folder": os.mkdir, "fifo": os.mkfifo}
TIMEOUT = 30  # seconds: a reader waiting on the FIFO fails the test rather than blocking it


@pytest.fixture(params=sorted(SHAPES))
def shape(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def unblocked(home: Home) -> Iterator[None]:
    """No reader stays blocked on a FIFO a test leaves at settings.yml (before the daemon is
    stopped): opening it for writing lets every waiting open through, and once it is removed
    and closed they read its end."""
    yield
    path = home.settings_file
    try:
        fifo = stat.S_ISFIFO(os.lstat(path).st_mode)
    except FileNotFoundError:
        fifo = False
    if fifo:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # never waits, on Linux
        path.unlink()
        os.close(fd)


def put(home: Home, shape: str) -> str:
    """`shape` at settings.yml; the problem it is."""
    home.settings_file.unlink(missing_ok=True)
    SHAPES[shape](str(home.settings_file))
    return f"{home.settings_file}: not a regular file"


def remem(home: Home, *args: str) -> tuple[int, str, str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    return done.returncode, done.stdout, done.stderr


def refusal(problem: str) -> str:
    return f"remem: INVALID: settings.yml is invalid: {problem}\n"


@pytest.mark.timeout(TIMEOUT)
def test_in_process_a_settings_file_that_is_no_regular_file_is_a_settings_problem(
    home: Home, shape: str
) -> None:
    problem = put(home, shape)
    with pytest.raises(SettingsError) as raised:
        SettingsStore(home).read()
    assert raised.value.problems == [problem]
    running = RunningSettings(home)
    assert (running.current, running.problems) == (Settings(), [problem]), "started on the defaults"
    assert running.now() == (Settings(), [problem])
    listed = CliRunner().invoke(cli, ["--home", str(home.root), "--no-daemon", "sessions", "list"])
    assert (listed.exit_code, listed.stdout, listed.stderr) == (2, "", refusal(problem))


@pytest.mark.slow
def test_a_daemon_starts_with_a_settings_file_that_is_no_regular_file_and_says_so(
    home: Home, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = put(home, shape)
    alone = remem(home, "--no-daemon", "sessions", "list")
    assert alone == (2, "", refusal(problem))
    monkeypatch.delenv(NO_DAEMON_ENV)
    assert remem(home, "sessions", "list") == alone, "the same, through the daemon"
    assert DaemonPaths(home).running(), "the daemon runs, on the defaults"
    code, out, _ = remem(home, "daemon", "status", "--json")
    assert code == 0 and json.loads(out)["settingsProblems"] == [problem]


@pytest.mark.slow
def test_a_running_daemon_whose_settings_file_becomes_no_regular_file_says_so_and_stops(
    home: Home, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    assert remem(home, "daemon", "start")[0] == 0
    problem = put(home, shape)
    assert remem(home, "sessions", "list") == (2, "", refusal(problem))
    wait_until(lambda: calls(home, [("daemon/status", {})])[0]["settingsProblems"] == [problem])
    assert remem(home, "daemon", "stop")[0] == 0
    assert not DaemonPaths(home).running(), "no worker thread held it"

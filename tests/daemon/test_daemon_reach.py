"""A daemon serves the home it was started for, and only while clients can reach it: a copy of
the home gets a daemon of its own, and a daemon whose socket or home is gone leaves, so the next
command starts one it can reach (decision 0383)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import alive, remem, wait_until

pytestmark = pytest.mark.slow

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.fixture(autouse=True)
def through_the_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)


@pytest.fixture
def other(tmp_path: Path) -> Iterator[Home]:
    """A second home (made by the test), whose daemon is stopped afterwards."""
    made = Home(tmp_path / "other-home")
    yield made
    if made.root.is_dir() and DaemonPaths(made).running():
        remem(made, "daemon", "stop")


def _pid(home: Home) -> int:
    started = remem(home, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    return int(json.loads(started.stdout)["pid"])


def test_a_copy_of_the_home_gets_a_daemon_of_its_own_never_the_originals(
    home: Home, other: Home, tmp_path: Path
) -> None:
    original = _pid(home)
    shutil.copytree(home.root, other.root, symlinks=True)  # its daemon.json names the original's daemon
    text = tmp_path / "global.md"
    text.write_text("# Written to the copy\n")
    written = remem(other, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text))
    assert written.returncode == 0, written.stderr
    assert other.global_file.read_text() == "# Written to the copy\n"
    assert not home.global_file.exists() or "copy" not in home.global_file.read_text()
    said = json.loads(remem(other, "daemon", "status", "--json").stdout)
    assert said["home"] == str(other.root) and said["pid"] != original
    assert json.loads(remem(home, "daemon", "status", "--json").stdout)["pid"] == original


@pytest.mark.parametrize("lost", ["socket", "home"])
def test_a_daemon_no_client_can_reach_leaves_and_the_next_command_starts_one(
    home: Home, other: Home, lost: str
) -> None:
    first = _pid(home)
    info = DaemonPaths(home).read_status()
    assert info is not None
    here = home
    if lost == "socket":  # what a temp-folder cleaner does
        os.unlink(info.socket)
    else:
        os.rename(home.root, other.root)
        here = other
    wait_until(lambda: not alive(first), what="the daemon to leave")
    listed = remem(here, "memory", "show", "--json")
    assert listed.returncode == 0, listed.stderr
    second = json.loads(remem(here, "daemon", "status", "--json").stdout)
    assert second["pid"] != first and second["home"] == str(here.root)
    assert (
        "stopping, so that the next command starts a daemon it can reach" in DaemonPaths(here).log.read_text()
    )

"""A home inside a folder its user may not enter (`chmod 000` on the home's parent) is said as
that folder, by every command, with and without a daemon, made or not: exit 2 (HOME_UNUSABLE).

`daemon status`, `daemon stop` and `--no-daemon sessions list` ended "internal error, a bug in
remem (PermissionError …)", exit 4; the others said the home "cannot be made a folder …; move
what is in the way", or blamed the home itself as a folder to read and write, which it is.

Permissions bind root too here: run as root, each command's process is started without the
capabilities that let root past them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.permissions import as_user, modes, remem_bound


def unreachable(home: Home, closed: Path) -> str:
    return (
        f"remem's home {home.root} cannot be used: {closed}, a folder it is in, cannot be entered "
        "(Permission denied); let your user enter it (its x permission), or choose another home "
        "with --home or $REMEM_HOME"
    )


def closed_to_its_user(closed: Path) -> None:
    entering = [sys.executable, "-c", "import os, sys; os.stat(sys.argv[1])", str(closed / "home")]
    if as_user(entering, {**os.environ}).returncode == 0:
        pytest.skip("run as root, whose processes pass permissions still")


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
@pytest.mark.parametrize(
    "command",
    [("sessions", "list"), ("memory", "show"), ("receipts",), ("daemon", "status"), ("daemon", "stop")],
    ids=" ".join,
)
def test_a_home_in_a_folder_its_user_may_not_enter_is_said_as_that_folder_exit_2(
    tmp_path: Path, command: tuple[str, ...], daemon: bool
) -> None:
    closed = tmp_path / "closed"
    home = Home(closed / "home").ensure_layout()
    with modes((closed, 0)):
        closed_to_its_user(closed)
        said = remem_bound(home, *command, daemon=daemon)
    assert (said.returncode, said.stdout, said.stderr) == (2, "", f"remem: {unreachable(home, closed)}\n")


@pytest.mark.parametrize(
    "command", [("daemon", "stop"), ("daemon", "status"), ("sessions", "list")], ids=" ".join
)
def test_a_home_not_made_in_a_folder_its_user_may_not_enter_is_said_so_in_json(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """Whether the home is there cannot be told either: neither "not running" nor a bug."""
    closed = tmp_path / "closed"
    closed.mkdir()
    home = Home(closed / "home")
    with modes((closed, 0)):
        closed_to_its_user(closed)
        said = remem_bound(home, *command, "--json")
    assert (said.returncode, said.stderr) == (2, ""), said
    error = {"code": "HOME_UNUSABLE", "message": unreachable(home, closed)}
    assert json.loads(said.stdout)["error"] == error
    assert not home.root.exists()


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
def test_a_home_linked_into_a_folder_its_user_may_not_enter_is_said_as_that_folder_exit_2(
    tmp_path: Path, daemon: bool
) -> None:
    """The link is the user's choice of home: the folder its target is in is what stops it."""
    closed = tmp_path / "closed"
    Home(closed / "home").ensure_layout()
    home = Home(tmp_path / "linked")
    home.root.symlink_to(closed / "home")
    with modes((closed, 0)):
        closed_to_its_user(closed)
        said = remem_bound(home, "sessions", "list", daemon=daemon)
    assert (said.returncode, said.stdout, said.stderr) == (2, "", f"remem: {unreachable(home, closed)}\n")

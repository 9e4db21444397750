"""A folder of the home that remem's user may neither read nor write (mode 000) is said as both,
with and without a daemon, by the commands that only read: `sessions list` and `memory show`
said "cannot be written … let your user write in it", and a user who did met the read next;
`remem --no-daemon memory show` under an unsearchable `memory` folder was a bug's (exit 4).

Permissions bind root too here: run as root, each command's process (and the daemon's) is
started without the capabilities that let root past them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.permissions import as_user, daemon_bound, modes, remem_bound

COMMANDS = [("sessions", "list"), ("memory", "show")]


@pytest.fixture(params=[False, True], ids=["no-daemon", "daemon"])
def daemon(request: pytest.FixtureRequest, home: Home) -> Iterator[bool]:
    """Whether the command goes through a daemon, started as it, bound by permissions too."""
    home.ensure_layout()
    if not request.param:
        yield False
        return
    with daemon_bound(home):
        yield True


def refused(home: Home, folder: Path) -> str:
    return (
        f"remem: remem's home {home.root} cannot be used: {folder} cannot be read or written "
        "(Permission denied); let your user read and write in it, or choose another home with "
        "--home or $REMEM_HOME"
    )


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("folder", ["memory", "memory/reviews"])
def test_a_folder_of_the_home_closed_to_its_user_is_said_neither_readable_nor_writable(
    home: Home, daemon: bool, command: tuple[str, ...], folder: str
) -> None:
    closed = home.root / folder
    with modes((closed, 0)):
        listing = [sys.executable, "-c", "import os, sys; os.listdir(sys.argv[1])", str(closed)]
        if as_user(listing, {**os.environ}).returncode == 0:
            pytest.skip("run as root, whose processes read past permissions still")
        said = remem_bound(home, *command, daemon=daemon)

    assert (said.returncode, said.stderr.splitlines()[-1]) == (2, refused(home, closed)), said

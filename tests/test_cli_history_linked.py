"""A home whose `history` is a link is the home's problem, said whole (HOME_UNUSABLE, exit 2,
with its remedy), by every command that reads an entry, as `memory log` says it, through the
real `remem` process with and without the daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.cli_process import remem


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
@pytest.mark.parametrize(
    "args",
    [
        ("memory", "diff", "abcdef1"),
        ("memory", "show", "--at", "abcdef1"),
        ("memory", "revert", "abcdef1"),
        ("memory", "log"),
    ],
)
def test_a_linked_history_is_the_homes_problem(
    home: Home, tmp_path: Path, args: tuple[str, ...], daemon: bool
) -> None:
    """Since the store's history was built over its own folder, an entry's read met the link
    inside the history's reading and said it as HISTORY_REFUSED, its remedy cut at 200 chars."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home.root.mkdir(parents=True)
    (home.root / "history").symlink_to(elsewhere)
    try:
        done = remem(home, *args, "--json", daemon=daemon)
    finally:
        if daemon:
            remem(home, "daemon", "stop", daemon=True)
    assert done.returncode == 2, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "HOME_UNUSABLE", error
    assert error["message"] == (
        f"remem's home {home.root} cannot be used: {home.root / 'history'} is a symbolic link, and "
        "remem reads and writes only inside its home; move the folder it points to into the home, "
        "or choose a home that holds it with --home or $REMEM_HOME"
    )
    assert list(elsewhere.iterdir()) == []

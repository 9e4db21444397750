"""A file where a workspace's memory folder goes is the home's problem (HOME_UNUSABLE, exit 2,
naming it and what to do), never "a bug in remem", through the real `remem` process with and
without the daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.cli import LAST_ERROR
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from tests.cli_process import remem


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
@pytest.mark.parametrize("command", ["show", "log"])
def test_a_file_for_a_workspace_folder_is_the_homes_problem(
    home: Home, tmp_path: Path, command: str, daemon: bool
) -> None:
    """It was NotADirectoryError, exit 4, and a read wrote state/last-error.log."""
    project = tmp_path / "project"
    project.mkdir()
    stray = home.workspaces / WorkspaceId.from_cwd(project).key
    stray.parent.mkdir(parents=True)
    stray.write_text("not a folder\n")
    try:
        done = remem(home, "memory", command, "--cwd", str(project), "--json", daemon=daemon)
    finally:
        if daemon:
            remem(home, "daemon", "stop", daemon=True)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["error"] == {
        "code": "HOME_UNUSABLE",
        "message": f"remem's home {home.root} cannot be used: {stray} is a file, where remem keeps a "
        "folder of memory; move it out of the home (or remove it)",
    }
    assert not (home.root / LAST_ERROR).exists()
    assert stray.read_text() == "not a folder\n"

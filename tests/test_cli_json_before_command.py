"""`--json` typed before the command, as a global option: a mistyped command is still said, with
its likely names, and so is where `--json` goes, through the real `remem` process."""

from __future__ import annotations

import json
import subprocess
import sys

from remem.daemon.home import Home

REMEM = [sys.executable, "-m", "remem.daemon"]


def _remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    command = [*REMEM, "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_a_mistyped_command_after_json_is_suggested(home: Home) -> None:
    done = _remem(home, "--json", "sesions", "list")
    assert done.returncode == 2 and done.stderr == ""
    assert json.loads(done.stdout)["error"] == {
        "code": "USAGE",
        "message": "No such command 'sesions'. (Did you mean one of: 'sessions', 'settings'?) "
        "And --json goes after the command, not before it.",
    }


def test_json_before_a_real_command_says_where_it_goes(home: Home) -> None:
    done = _remem(home, "--json", "sessions", "list")
    assert done.returncode == 2
    said = json.loads(done.stdout)["error"]["message"]
    assert (
        said
        == f"--json goes after the command, not before it: `remem --home {home.root} sessions list --json`"
    )
    assert not home.root.exists()  # refused before anything ran

"""`--json` typed before the command, as a global option, or given to a group or a command without
it: a mistyped command is still said, with its likely names, and so is where `--json` goes,
through the real `remem` process."""

from __future__ import annotations

import json
import shlex
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


def _said(home: Home, *args: str) -> str:
    done = _remem(home, *args)
    assert done.returncode == 2 and done.stderr == ""
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "USAGE"
    return error["message"]


def test_json_before_a_group_says_it_goes_after_one_of_its_commands(home: Home) -> None:
    # `remem sessions --json` would be refused again: a group has no --json of its own.
    assert _said(home, "--json", "sessions") == (
        "--json goes after the subcommand, not before the command: `remem --home "
        f"{home.root} sessions COMMAND … --json`, COMMAND one of: archive, fork, list, rename, "
        "restore, show, tree, turns"
    )
    daemon = _said(home, "--json", "daemon")
    assert daemon.endswith("`, COMMAND one of: start, status, stop")  # `daemon run` has no --json
    assert not home.root.exists()


def test_a_mistyped_subcommand_after_json_is_suggested(home: Home) -> None:
    assert _said(home, "--json", "sessions", "lisst") == (
        "No such command 'lisst'. Did you mean 'list'? And --json goes after the subcommand, not "
        f"before the command: `remem --home {home.root} sessions COMMAND … --json`."
    )


def test_json_before_a_command_without_it_is_not_suggested_after_it(home: Home) -> None:
    assert (
        _said(home, "--json", "daemon", "run")
        == f"`remem --home {home.root} daemon run` has no --json option"
    )


def test_json_given_before_and_after_is_shown_once(home: Home) -> None:
    assert _said(home, "--json", "sessions", "list", "--json") == (
        f"--json goes after the command, not before it: `remem --home {home.root} sessions list --json`"
    )


def _shown(said: str) -> list[str]:
    """The command line a usage error shows (between backticks), as words to run."""
    return shlex.split(said.split("`")[1])


def test_json_before_mcp_shows_a_command_line_that_works(home: Home) -> None:
    # `remem mcp --json` would be refused again: the server has no --json, only --print-config does.
    said = _said(home, "--json", "mcp")
    assert said == (
        "--json goes after the command, not before it, and only with --print-config: "
        f"`remem --home {home.root} mcp --print-config --json`"
    )
    shown = _shown(said)
    assert shown[0] == "remem"
    done = subprocess.run([*REMEM, *shown[1:]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "server" in json.loads(done.stdout)


def test_json_given_to_a_group_says_it_goes_after_one_of_its_commands(home: Home) -> None:
    assert _said(home, "sessions", "--json") == (
        f"--json goes after the subcommand: `remem --home {home.root} sessions COMMAND … --json`, "
        "COMMAND one of: archive, fork, list, rename, restore, show, tree, turns"
    )
    assert _said(home, "sessions", "--json", "list") == (
        f"--json goes after the command, not before it: `remem --home {home.root} sessions list --json`"
    )
    assert _said(home, "sessions", "--json", "lisst") == (
        "No such command 'lisst'. Did you mean 'list'? And --json goes after the subcommand: "
        f"`remem --home {home.root} sessions COMMAND … --json`."
    )
    assert not home.root.exists()


def test_json_alone_says_it_goes_after_a_command(home: Home) -> None:
    assert _said(home, "--json") == (
        f"--json goes after the command: `remem --home {home.root} COMMAND … --json`, COMMAND one of: "
        "consolidate, daemon, eval, mcp, memory, receipts, sessions, settings"
    )


def test_json_after_a_command_without_it_says_it_has_none(home: Home) -> None:
    done = _remem(home, "lsp", "--json")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(f"Error: `remem --home {home.root} lsp` has no --json option\n")

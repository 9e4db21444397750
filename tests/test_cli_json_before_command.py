"""`--json` typed before the command, as a global option, or given to a group or a command without
it: a mistyped command is still said, with its likely names, and so is where `--json` goes,
through the real `remem` process."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.sessions import claude_lines as cl

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


def test_json_given_more_than_once_before_the_command_is_said_as_given_once(home: Home) -> None:
    """As click takes a flag given twice after the command: the second was refused on its own,
    "No such option '--json'. Did you mean '--version'?"."""
    where = f"--json goes after the command, not before it: `remem --home {home.root} sessions list --json`"
    assert _said(home, "--json", "--json", "sessions", "list") == where
    assert _said(home, "sessions", "--json", "--json", "list") == where
    # Apart, as often as given.
    assert _said(home, "--json", "--no-daemon", "--json", "sessions", "list") == (
        f"--json goes after the command, not before it: "
        f"`remem --home {home.root} --no-daemon sessions list --json`"
    )
    assert _said(home, "--json", "sessions", "--json", "list", "--json") == where


def test_json_given_as_an_options_value_is_kept(home: Home) -> None:
    """A `--json` that is an option's value was dropped with the misplaced one: "Option '--title'
    requires an argument", "No such command 'list'" (`--home` took `sessions`)."""
    goes = "--json goes after the command, not before it"
    assert _said(home, "--json", "sessions", "fork", "abc", "--title", "--json") == (
        f"{goes}: `remem --home {home.root} sessions fork abc --title --json --json`"
    )
    assert _said(home, "--json", "--home", "--json", "sessions", "list") == (
        f"{goes}: `remem --home {home.root} --home --json sessions list --json`"
    )
    assert _said(home, "--json", "sessions", "list", "--root", "--json") == (
        f"{goes}: `remem --home {home.root} sessions list --root --json --json`"
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


def test_help_or_version_beside_a_misplaced_json_is_shown_as_without_it(home: Home) -> None:
    # Asked for, the help (or version) is what the user wants: no command line with it inside.
    for line in (
        ["--json", "--help"],
        ["--json", "-h", "sessions"],  # the root's, as `remem -h sessions` shows it
        ["sessions", "--json", "--help"],
        ["sessions", "--help", "--json", "list"],
        ["--json", "sessions", "list", "--help"],
        ["--json", "--version"],
    ):
        done = _remem(home, *line)
        without = _remem(home, *[word for word in line if word != "--json"])
        assert (done.returncode, done.stdout, done.stderr) == (0, without.stdout, ""), line
        assert without.returncode == 0 and without.stdout.startswith(("Usage: remem", "remem, version"))
    assert not home.root.exists()


def test_an_unknown_option_beside_a_misplaced_json_is_said(home: Home) -> None:
    # Not a command line without the command the user typed: the option is what stands in the way.
    for line in (["--json", "--bogus", "sessions", "list"], ["sessions", "--json", "--bogus", "list"]):
        assert (
            _said(home, *line)
            == "No such option '--bogus'. And --json goes after the command, not before it."
        )


def test_an_option_without_its_value_beside_a_misplaced_json_is_said(home: Home) -> None:
    # `remem mcp --harness --print-config --json` would take `--print-config` for the harness.
    assert _said(home, "--json", "mcp", "--harness") == (
        "Option '--harness' requires an argument. And --json goes after the command, not before it."
    )


def test_json_before_a_command_with_a_double_dash_shows_a_command_line_that_works(
    home: Home, tmp_path: Path
) -> None:
    # After `--` every word is an argument: `--json` there would be a second title.
    root = tmp_path / "claude"
    folder = root / "projects" / "-home-u-proj"
    folder.mkdir(parents=True)
    (folder / f"{cl.SID}.jsonl").write_bytes(cl.jsonl(cl.prompt("u1", None, "q"), cl.say("a1", "u1", "a")))
    said = _said(home, "--json", "sessions", "rename", "--root", str(root), cl.SID, "--", "-draft")
    assert said == (
        f"--json goes after the command, not before it: `remem --home {home.root} sessions rename "
        f"--json --root {root} {cl.SID} -- -draft`"
    )
    shown = _shown(said)
    assert shown[0] == "remem"
    env = {**os.environ, NO_DAEMON_ENV: "1"}
    done = subprocess.run([*REMEM, *shown[1:]], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["title"] == "-draft"

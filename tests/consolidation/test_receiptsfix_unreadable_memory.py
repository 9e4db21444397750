"""A memory file or folder remem's user may not read (its mode) is the home in the way, said
naming it, with and without a daemon; `remem receipts` goes on without that memory's newest entry.

Run in the command's own process, the store's PermissionError was no refusal the memory handlers
knew: `remem --no-daemon receipts` ended "internal error, a bug in remem (PermissionError …)",
exit 4, where it said how to undo the review in Global memory, and `remem memory log` exited 4
on either path (through the daemon: "the daemon failed on memory/log, a bug in remem"). A
consolidation and the MCP server's tools, which read memory outside the memory handlers, exited
4 (or told the agent remem failed unexpectedly) after that fix still.

Permissions bind root too here: run as root, each command's process is started without the
capabilities that let root past them (see test_lspfix_unjudged_cause), and a test is skipped,
saying why, only where root may not give them up.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from tests.cli_process import MCP_CONTEXT_CALL, remem
from tests.fake_openai import FakeOpenAI, tool_call
from tests.permissions import as_user, daemon_bound, modes, remem_bound

from .conftest import Source, both_scopes


def unreadable_to_user(path: Path) -> None:
    """Skip unless a process bound as `bound`'s may not open `path`: root may read past modes still."""
    opening = [sys.executable, "-c", "import os, sys; os.open(sys.argv[1], os.O_RDONLY)", str(path)]
    if as_user(opening, {**os.environ}).returncode == 0:
        pytest.skip("run as root, whose processes read past permissions still")


@pytest.fixture
def reviewed(home: Home, fake: FakeOpenAI, source: Source) -> str:
    """A review committed to both memories; its Global history entry, as receipts say it."""
    fake.reply(tool_call(both_scopes(source)))
    done = remem(home, "consolidate", source.id)
    assert done.returncode == 0, done.stderr
    [receipt] = ReceiptStore(home).all()
    assert receipt.history is not None and receipt.history.globalEntry
    return receipt.history.globalEntry[:12]


@pytest.fixture(params=[False, True], ids=["no-daemon", "daemon"])
def daemon(request: pytest.FixtureRequest, home: Home) -> Iterator[bool]:
    """Whether the command goes through a daemon, started as it, bound by permissions too."""
    if not request.param:
        yield False
        return
    with daemon_bound(home):
        yield True


def unreadable(home: Home, path: Path) -> str:
    """What remem says of `path`, a memory file or folder it may not read: its one line."""
    return (
        f"remem: remem's home {home.root} cannot be used: {path} cannot be read (Permission denied); "
        "let your user read it, or choose another home with --home or $REMEM_HOME"
    )


def test_receipts_go_on_past_an_unreadable_global_memory_with_or_without_a_daemon(
    home: Home, reviewed: str, daemon: bool
) -> None:
    with modes((home.global_file, 0)):
        unreadable_to_user(home.global_file)
        listed = remem_bound(home, "receipts", daemon=daemon)

    assert listed.returncode == 0, listed.stderr
    undo = (
        f"    Global memory: `remem memory revert --before {reviewed}` undoes it and any change made "
        "there after it (`remem memory log --global` lists them)"
    )
    assert undo in listed.stdout.splitlines(), listed.stdout


def test_an_unreadable_global_memory_is_said_naming_it_with_or_without_a_daemon(
    home: Home, reviewed: str, daemon: bool
) -> None:
    with modes((home.global_file, 0)):
        unreadable_to_user(home.global_file)
        log = remem_bound(home, "memory", "log", "--global", daemon=daemon)

    assert (log.returncode, log.stderr.strip()) == (2, unreadable(home, home.global_file)), log


def test_a_workspace_folder_that_cannot_be_listed_is_said_naming_it_with_or_without_a_daemon(
    home: Home, reviewed: str, source: Source, daemon: bool
) -> None:
    folder = home.workspaces / WorkspaceId.from_cwd(source.cwd).key
    with modes((folder, 0)):
        unreadable_to_user(folder)
        log = remem_bound(home, "memory", "log", "--cwd", source.cwd, daemon=daemon)

    assert (log.returncode, log.stderr.strip()) == (2, unreadable(home, folder)), log


def test_a_consolidation_of_an_unreadable_global_memory_says_it_with_or_without_a_daemon(
    home: Home, source: Source, daemon: bool
) -> None:
    """The runner read memory outside the memory handlers: INTERNAL, "a bug in remem
    (PermissionError …)", exit 4, on either path."""
    home.ensure_layout()
    home.global_file.write_text("# Global\n\nPrefer uv.\n")
    with modes((home.global_file, 0)):
        unreadable_to_user(home.global_file)
        done = remem_bound(home, "consolidate", source.id, "--json", daemon=daemon)

    assert done.returncode == 2, done
    error = json.loads(done.stdout)["error"]
    assert (error["code"], f"remem: {error['message']}") == (
        "HOME_UNUSABLE",
        unreadable(home, home.global_file),
    )


def test_an_agent_is_told_the_home_is_in_the_way_by_an_unreadable_global_memory_with_or_without_a_daemon(
    home: Home, tmp_path: Path, daemon: bool
) -> None:
    """The MCP server's agent methods read memory outside the memory handlers: the agent was told
    remem "failed unexpectedly", and the server's log held a PermissionError's traceback."""
    home.ensure_layout()
    home.global_file.write_text("# Global\n\nPrefer uv.\n")
    with modes((home.global_file, 0)):
        unreadable_to_user(home.global_file)
        done = remem_bound(home, "mcp", "--cwd", str(tmp_path), daemon=daemon, given=MCP_CONTEXT_CALL)

    assert done.returncode == 0, done.stderr
    answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
    tool = answers[2]["result"]
    assert tool["isError"] and "something in remem's home stands in the way" in tool["content"][0]["text"]
    assert unreadable(home, home.global_file).removeprefix("remem: ") in done.stderr  # the user's reason
    assert "Traceback" not in done.stderr

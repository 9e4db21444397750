"""Claude Code and Codex sessions through the daemon, found in the harnesses' default folders
(`$CLAUDE_CONFIG_DIR/projects`, `$CODEX_HOME/sessions`): listing, tree, transcript, the fork
the editor asks for (its resume command, announced once), and news of a new transcript."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.scratch import hooked_pythonpath
from tests.sessions.claude_lines import CWD, jsonl, prompt, say
from tests.sessions.harness_roots import SID, TID, build_roots, claude_project

from .helpers import calls
from .test_notifications import Listening

pytestmark = pytest.mark.slow


@pytest.fixture
def harness_homes(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    built = build_roots(tmp_path / "built")
    claude, codex = tmp_path / "claude-home", tmp_path / "codex-home"
    shutil.move(built["claude-code"], claude / "projects")
    shutil.move(built["codex"], codex / "sessions")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    home.settings_file.write_text("daemon:\n  idle_minutes: 2\n")
    return {"claude-code": claude / "projects", "codex": codex / "sessions"}


def test_the_daemon_lists_trees_shows_and_forks_harness_sessions(
    home: Home, harness_homes: dict[str, Path]
) -> None:
    listing, tree, turns, transcript = calls(home, [
        ("sessions/list", {"cwd": CWD}),
        ("sessions/tree", {"cwd": CWD}),
        ("sessions/turns", {"id": SID}),
        ("sessions/transcript", {"id": TID}),
    ])  # fmt: skip
    assert listing["errors"] == []
    assert {s["format"] for s in listing["sessions"]} == {"claude-code", "codex"}
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert nodes[f"{SID}@a3"]["kind"] == "branch" and nodes[f"{SID}@a3"]["parent"] == SID
    markdown = transcript["markdown"]
    assert "## Turn 1 — completed — " in markdown and "- Harness: Codex" in markdown
    last = turns["turns"][-1]
    request = {"source": SID, "operationId": "ed-1", "atSeq": last["endSeq"]}
    (fork,) = calls(home, [("sessions/fork", request)])
    assert fork["resume"] == ["claude", "--resume", fork["child"]] and fork["forkTurn"] == last["turn"]
    (child_turns,) = calls(home, [("sessions/turns", {"id": fork["child"]})])
    assert [t["user"] for t in child_turns["turns"]] == ["read the notes", "instead this"]


def test_a_new_transcript_and_a_fork_are_announced_once(home: Home, harness_homes: dict[str, Path]) -> None:
    root = harness_homes["claude-code"]

    async def scenario() -> None:
        ears = await Listening().open(home)
        path = claude_project(root) / "33333333-0000-4000-8000-000000000000.jsonl"
        await asyncio.to_thread(path.write_bytes, jsonl(prompt("n1", None, "new"), say("n2", "n1", "ok")))
        assert await ears.until(1) == [("sessions/changed", {"root": str(root)})]
        await ears.client.call("sessions/fork", {"source": SID, "operationId": "ed-2"})
        heard = await ears.until(2)
        assert heard[1] == ("sessions/changed", {"root": str(root)}) and len(heard) == 2, "no echo"
        await ears.client.close()

    asyncio.run(scenario())


def test_session_requests_leave_no_index_connection_open(home: Home, harness_homes: dict[str, Path]) -> None:
    """Each request opened a SQLite connection the garbage collector closed when it happened to
    run (a catalog lies in reference cycles): a busy daemon ran out of file descriptors, and
    answered "Too many open files", or listed no session, for everyone."""
    requests = [("sessions/turns", {"id": SID}), ("sessions/list", {"cwd": CWD})] * 60
    answers = calls(home, requests)
    assert all(isinstance(a, dict) for a in answers)
    info = DaemonPaths(home, layout=False).read_status()
    assert info is not None
    held = [
        target
        for fd in os.listdir(f"/proc/{info.pid}/fd")
        if (target := os.readlink(f"/proc/{info.pid}/fd/{fd}")).startswith(str(home.state / "index.sqlite"))
    ]
    assert len(held) <= 6, held  # the one request's (the database, its WAL and shared memory), at most


OPENED_ENV = "REMEM_TEST_OPENS_OF"  # the name of the file whose opens the daemon's hook records
OPENS_LOG_ENV = "REMEM_TEST_OPENS_LOG"  # one line per open of it
OPENS_HOOK = f"""
import os, sys

_watched, _log = os.environ.get("{OPENED_ENV}"), os.environ.get("{OPENS_LOG_ENV}")


def _heard(event, args):
    # By its name: the daemon opens a log relative to its root's folder.
    if event != "open" or not _watched or not isinstance(args[0], (str, bytes)):
        return
    if os.path.basename(os.fsdecode(args[0])) == _watched:
        with open(_log, "a") as log:
            log.write("open\\n")


sys.addaudithook(_heard)
"""


def test_a_live_claude_code_files_turns_are_read_once_across_requests(
    home: Home, harness_homes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon makes a catalog per request: a live file's turns (kept apart from the index,
    decision 0535) were read again at every ask, seconds each for a large file an idle terminal
    keeps live for hours. They are kept in the daemon's memory for the file's revision."""
    path = claude_project(harness_homes["claude-code"]) / f"{SID}.jsonl"
    os.utime(path)  # changed just now: live for the hour `idle_seconds` gives it
    home.settings_file.write_text("daemon:\n  idle_minutes: 2\nsessions:\n  idle_seconds: 3600\n")
    log = path.parent.parent.parent / "opens.log"
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(OPENS_HOOK, "remem-opens-hook-"))
    monkeypatch.setenv(OPENED_ENV, path.name)
    monkeypatch.setenv(OPENS_LOG_ENV, str(log))

    def opens() -> int:
        return len(log.read_text().splitlines()) if log.exists() else 0

    (first,) = calls(home, [("sessions/turns", {"id": SID})])
    read = opens()
    (again,) = calls(home, [("sessions/turns", {"id": SID})])
    assert read > 0 and opens() == read, "the second ask read the file again"
    assert again == first and first["turns"][-1]["user"] == "instead this"

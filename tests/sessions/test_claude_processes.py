"""A quiet Claude Code session is live while its home's `sessions/<pid>.json` names it and that very
process is alive (decision 0376).

The pid file counts only when it is a small regular file of the home's own `sessions/` folder
(never through a link), holds a JSON object whose `pid` is its name's and whose `procStart` is
that process's start time, and names this pid namespace; anything else is skipped, never an
error. A listing reads the folder once, whatever it lists; the daemon's memo lets go of a kept
answer once a process starts or ends.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions import claude_processes
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.claude_processes import MAX_PID_FILE, running
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.sources import Root

from .claude_lines import SID, jsonl, prompt, say
from .claude_processes import a_process, end, pid_record, write_pid_file
from .harness_roots import claude_project, write

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc tells on Linux only")

OTHER = "0b3c6f0e-1111-4222-8333-000000000002"


@pytest.fixture
def claude_home(tmp_path: Path) -> Path:
    """A Claude Code home with one quiet session (its transcript changed long ago)."""
    home = tmp_path / "claude"
    write(
        claude_project(home / "projects") / f"{SID}.jsonl",
        jsonl(prompt("u1", None, "hi"), say("a1", "u1", "ok")),
    )
    return home


def listed(home: Home, claude_home: Path, memo: ListingMemo | None = None) -> dict[str, bool]:
    catalog = SessionCatalog(home, [Root(claude_home / "projects", "claude-code")], 1, memo)
    return {s.id: s.live for s in catalog.listing().sessions}


def test_a_quiet_session_a_live_claude_code_process_runs_is_live_until_it_ends(
    home: Home, claude_home: Path
) -> None:
    assert listed(home, claude_home) == {SID: False}
    with a_process() as claude:
        pid_file = write_pid_file(claude_home, claude.pid, pid_record(claude.pid, SID))
        assert listed(home, claude_home) == {SID: True}
        catalog = SessionCatalog(home, [Root(claude_home / "projects", "claude-code")], 1)
        (entry,) = catalog.entries()[0]
        assert catalog.harness_pid(entry) == claude.pid
        end(claude)  # killed: its file stays behind, naming a pid no process has now
        assert pid_file.exists()
        assert listed(home, claude_home) == {SID: False}
        assert catalog.harness_pid(entry) is None


def test_another_session_of_the_process_or_a_root_outside_a_home_is_not_live(
    home: Home, claude_home: Path, tmp_path: Path
) -> None:
    loose = tmp_path / "loose"  # a Claude Code root that is no home's `projects` folder
    write(claude_project(loose) / f"{SID}.jsonl", jsonl(prompt("u1", None, "hi"), say("a1", "u1", "ok")))
    write_pid_file(loose, 1, b"{}")
    with a_process() as claude:
        write_pid_file(claude_home, claude.pid, pid_record(claude.pid, OTHER))
        assert listed(home, claude_home) == {SID: False}
        write_pid_file(tmp_path, claude.pid, pid_record(claude.pid, SID))  # beside `loose`
        catalog = SessionCatalog(home, [Root(loose, "claude-code")], 1)
        assert [s.live for s in catalog.listing().sessions] == [False]
        write_pid_file(claude_home, claude.pid, pid_record(claude.pid, SID))
        assert listed(home, claude_home) == {SID: True}, "the session it runs is"


def _changed(**changes: object) -> Callable[[int], bytes]:
    return lambda pid: json.dumps(pid_record(pid, SID, **changes)).encode()


SPOILED: dict[str, Callable[[int], bytes]] = {
    "not-json": lambda pid: b"not json",
    "not-utf8": lambda pid: b"\xff\xfe{",
    "not-an-object": lambda pid: b"[1, 2]",
    "pid-as-text": lambda pid: json.dumps(pid_record(pid, SID, pid=str(pid))).encode(),
    "another-pid": lambda pid: json.dumps(pid_record(pid, SID, pid=pid + 1)).encode(),
    "another-start": _changed(procStart="1"),
    "no-start": _changed(procStart=None),
    "session-not-text": _changed(sessionId=7),
    "another-pid-namespace": _changed(pidDomain="linux:x:pid:[1]"),
}


@pytest.mark.parametrize("spoiled", SPOILED.values(), ids=SPOILED.keys())
def test_a_spoiled_pid_file_is_skipped(
    home: Home, claude_home: Path, spoiled: Callable[[int], bytes]
) -> None:
    with a_process() as claude:
        write_pid_file(claude_home, claude.pid, spoiled(claude.pid))
        assert listed(home, claude_home) == {SID: False}
        write_pid_file(claude_home, claude.pid, pid_record(claude.pid, SID))
        assert listed(home, claude_home) == {SID: True}, "the same file, as Claude Code writes it"


def test_an_oversized_pid_file_is_not_read(home: Home, claude_home: Path) -> None:
    with a_process() as claude:
        valid = json.dumps(pid_record(claude.pid, SID))
        write_pid_file(claude_home, claude.pid, (valid + " " * (MAX_PID_FILE + 1 - len(valid))).encode())
        assert listed(home, claude_home) == {SID: False}
        write_pid_file(claude_home, claude.pid, (valid + " " * (MAX_PID_FILE - len(valid))).encode())
        assert listed(home, claude_home) == {SID: True}, "at the cap it is read"


def test_a_linked_pid_file_or_sessions_folder_is_not_followed(
    home: Home, claude_home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    with a_process() as claude:
        target = write_pid_file(outside, claude.pid, pid_record(claude.pid, SID))
        (claude_home / "sessions").mkdir()
        (claude_home / "sessions" / f"{claude.pid}.json").symlink_to(target)
        assert listed(home, claude_home) == {SID: False}
        (claude_home / "sessions" / f"{claude.pid}.json").unlink()
        (claude_home / "sessions").rmdir()
        (claude_home / "sessions").symlink_to(outside / "sessions")
        assert listed(home, claude_home) == {SID: False}
        (claude_home / "sessions").unlink()
        write_pid_file(claude_home, claude.pid, pid_record(claude.pid, SID))
        assert listed(home, claude_home) == {SID: True}, "the same file in the home's own folder"


def test_a_fifo_named_as_a_pid_file_is_skipped_without_waiting(home: Home, claude_home: Path) -> None:
    with a_process() as claude:
        (claude_home / "sessions").mkdir()
        os.mkfifo(claude_home / "sessions" / f"{claude.pid}.json")
        assert listed(home, claude_home) == {SID: False}
        (claude_home / "sessions" / f"{claude.pid}.json").unlink()
        write_pid_file(claude_home, claude.pid, pid_record(claude.pid, SID))
        assert listed(home, claude_home) == {SID: True}


def test_a_dead_pid_is_not_running(home: Home, claude_home: Path) -> None:
    with a_process() as claude:
        record = pid_record(claude.pid, SID)
        write_pid_file(claude_home, claude.pid, record)
        assert listed(home, claude_home) == {SID: True}
        assert running([claude_home]).pid(claude_home, SID) == claude.pid
    write_pid_file(claude_home, claude.pid, record)  # its process has exited and was reaped
    assert listed(home, claude_home) == {SID: False}
    assert running([claude_home]).homes == {}


def test_without_proc_only_recency_tells(
    home: Home, claude_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with a_process() as claude:
        write_pid_file(claude_home, claude.pid, pid_record(claude.pid, SID))
        assert listed(home, claude_home) == {SID: True}
        monkeypatch.setattr(claude_processes, "PROC", str(tmp_path / "no-proc"))  # not Linux
        assert listed(home, claude_home) == {SID: False}
        assert running([claude_home]).homes == {}


def test_a_listing_reads_the_sessions_folder_once_and_only_live_processes_files(
    home: Home, claude_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = claude_project(claude_home / "projects")
    ids = [f"0b3c6f0e-1111-4222-8333-{n:012d}" for n in range(1, 301)]
    for sid in ids:
        write(
            project / f"{sid}.jsonl", jsonl(*[{**r, "sessionId": sid} for r in (prompt("u1", None, "hi"),)])
        )
    folders: list[Path] = []
    files: list[str] = []
    home_sessions, session_of = claude_processes._home_sessions, claude_processes._session_of
    monkeypatch.setattr(
        claude_processes, "_home_sessions", lambda h, s: folders.append(h) or home_sessions(h, s)
    )
    monkeypatch.setattr(
        claude_processes, "_session_of", lambda f, n, *a: files.append(n) or session_of(f, n, *a)
    )
    with a_process() as claude:
        write_pid_file(claude_home, claude.pid, pid_record(claude.pid, ids[7]))
        for dead in range(4_000_000, 4_000_050):  # left by killed processes: no such pids
            write_pid_file(claude_home, dead, pid_record(claude.pid, ids[8], pid=dead))
        live = listed(home, claude_home)
    assert len(live) == 301 and [sid for sid, on in live.items() if on] == [ids[7]]
    assert folders == [claude_home] and files == [f"{claude.pid}.json"]


def test_the_memo_lets_go_of_a_kept_answer_when_a_process_starts_or_ends(
    home: Home, claude_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []
    home_sessions = claude_processes._home_sessions
    monkeypatch.setattr(
        claude_processes, "_home_sessions", lambda h, s: reads.append(h) or home_sessions(h, s)
    )
    memo = ListingMemo(lambda: True)  # events trusted: no mark comes, the kept answer is reused

    def live() -> dict[str, bool]:
        reads.clear()
        answer = listed(home, claude_home, memo)
        assert reads == [claude_home], "the folder is read once per listing"
        return answer

    assert live() == {SID: False}
    with a_process() as claude:
        write_pid_file(claude_home, claude.pid, pid_record(claude.pid, SID))
        assert live() == {SID: True}
        assert live() == {SID: True}, "kept while the process runs"
        end(claude)
        assert live() == {SID: False}, "its file left behind, its process gone"

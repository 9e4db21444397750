"""What a root holds that cannot be listed is an error of its own, naming it and why, and the
rest of the root is listed: a folder whose entries cannot be read (a DSH root, project or
session folder; a Claude Code projects folder, project, session or subagents folder; a Codex
sessions, year, month or day folder), and anything named like a session log that is not a
regular file (a FIFO, a folder), which is never opened, so a FIFO never holds the listing.

Before, an unreadable DSH folder failed the whole listing ("internal error (PermissionError)")
and the harnesses' were passed by unsaid, as were logs that are no regular files; a tree of a
workspace whose folder could not be read said no session was found (decision 0370)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.sources import Root
from tests.sessions.factory import SessionSpec, build_session, write_session

from .claude_lines import CWD, jsonl, prompt, say
from .codex_lines import meta, rollout, turn
from .harness_roots import SID, TID, claude_project, write

OTHER_SID = "0b3c6f0e-2222-4222-8333-944445555666"
OTHER_TID = "019c0000-0000-7000-8000-0000000000a2"
ELSEWHERE = "/home/user/elsewhere"
# Root cannot be refused a read by a folder's mode: the test drops the capabilities that let it.
DROP = "-dac_override,-dac_read_search"
SETPRIV = shutil.which("setpriv")


def claude_lines(session: str, cwd: str, text: str) -> bytes:
    return jsonl(
        {**prompt("u1", None, text), "sessionId": session, "cwd": cwd},
        {**say("a1", "u1", "ok"), "sessionId": session, "cwd": cwd},
    )


def build(tmp_path: Path) -> dict[str, Path]:
    """Harness homes as the defaults find them (the environment `run` gives), each with a
    session of the workspace CWD and one of another workspace, in folders apart."""
    claude, codex, dsh = tmp_path / "claude", tmp_path / "codex", tmp_path / "dsh"
    projects = claude / "projects"
    mine, theirs = claude_project(projects), claude_project(projects, ELSEWHERE)
    write(mine / f"{SID}.jsonl", claude_lines(SID, CWD, "mine"))
    agent = [
        {**r, "isSidechain": True, "agentId": "a1b2"} for r in json_lines(claude_lines(SID, CWD, "agent"))
    ]
    write(mine / SID / "subagents" / "agent-a1b2.jsonl", jsonl(*agent))
    write(theirs / f"{OTHER_SID}.jsonl", claude_lines(OTHER_SID, ELSEWHERE, "theirs"))
    sessions = codex / "sessions"
    write(
        sessions / "2026" / "05" / "01" / f"rollout-2026-05-01T00-00-00-{TID}.jsonl",
        rollout(meta(TID, cwd=CWD), *turn("t1", "hi", "hello")),
    )
    write(
        sessions / "2026" / "06" / "01" / f"rollout-2026-06-01T00-00-00-{OTHER_TID}.jsonl",
        rollout(meta(OTHER_TID, cwd=ELSEWHERE), *turn("t1", "hi", "hello")),
    )
    spec = SessionSpec(seed=1, cwd=CWD, turns=1)
    mine_log = write_session(dsh / "sessions", build_session(spec, session_id="dsh-1"), encoding=Encoding.RAW)
    spec = SessionSpec(seed=2, cwd=ELSEWHERE, turns=1)
    write_session(dsh / "sessions", build_session(spec, session_id="dsh-2"), encoding=Encoding.RAW)
    return {
        "dsh-root": dsh / "sessions",
        "dsh-project": mine_log.parent.parent,
        "dsh-session": mine_log.parent,
        "claude-root": projects,
        "claude-project": mine,
        "claude-session": mine / SID,
        "claude-subagents": mine / SID / "subagents",
        "codex-root": sessions,
        "codex-year": sessions / "2026" / "05",
        "codex-day": sessions / "2026" / "05" / "01",
    }


def json_lines(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.splitlines()]


ALL = {SID, "agent-a1b2", OTHER_SID, TID, OTHER_TID, "dsh-1", "dsh-2"}
# What each unreadable folder hides: its sessions, and no other.
HIDDEN = {
    "dsh-root": {"dsh-1", "dsh-2"},
    "dsh-project": {"dsh-1"},
    "dsh-session": {"dsh-1"},
    "claude-root": {SID, "agent-a1b2", OTHER_SID},
    "claude-project": {SID, "agent-a1b2"},
    "claude-session": {"agent-a1b2"},
    "claude-subagents": {"agent-a1b2"},
    "codex-root": {TID, OTHER_TID},
    "codex-year": {TID},
    "codex-day": {TID},
}


def run(home: Home, tmp_path: Path, *args: str, daemon: bool = False) -> subprocess.CompletedProcess[str]:
    """`remem --no-daemon ARGS` (or through a daemon it starts) over the harness homes of
    `build`, as a user the folders' modes bind (root without the capabilities that pass them by)."""
    env = {
        **os.environ,
        "REMEM_HOME": str(home.root),
        "DSH_HOME": str(tmp_path / "dsh"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "CODEX_HOME": str(tmp_path / "codex"),
    }
    through = [] if daemon else ["--no-daemon"]
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *through, *args]
    if os.geteuid() == 0:
        assert SETPRIV is not None
        command = [SETPRIV, "--bounding-set", DROP, "--inh-caps", DROP, *command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def unreadable_as_user() -> None:
    if os.geteuid() == 0 and SETPRIV is None:
        pytest.skip("running as root without setpriv: a folder's mode cannot refuse a read")


@pytest.mark.usefixtures("unreadable_as_user")
@pytest.mark.parametrize("folder", sorted(HIDDEN))
def test_an_unreadable_folder_is_an_error_naming_it_and_the_rest_is_listed(
    home: Home, tmp_path: Path, folder: str
) -> None:
    folders = build(tmp_path)
    before = run(home, tmp_path, "sessions", "list", "--json")
    assert before.returncode == 0, before.stderr
    assert {s["id"] for s in json.loads(before.stdout)["sessions"]} == ALL
    folders[folder].chmod(0)
    try:
        listed = run(home, tmp_path, "sessions", "list", "--json")
    finally:
        folders[folder].chmod(0o755)
    assert listed.returncode == 0, listed.stderr
    answer = json.loads(listed.stdout)
    assert {s["id"] for s in answer["sessions"]} == ALL - HIDDEN[folder]
    # The session folder of a Claude Code session is named for its subagents it hides.
    (error,) = answer["errors"]
    assert error["path"] == str(folders[folder])
    assert error["message"].startswith("folder cannot be read (Permission denied)")
    assert "chmod u+rx" in error["message"]


@pytest.mark.usefixtures("unreadable_as_user")
@pytest.mark.parametrize("folder", ["dsh-root", "dsh-project", "claude-root", "codex-root"])
def test_an_unreadable_folder_is_an_error_of_a_daemons_listing_too(
    home: Home, tmp_path: Path, folder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon keeps its scans of the roots (`ListingMemo`): an unreadable root failed its
    whole listing there, and is looked at again once readable."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    folders = build(tmp_path)
    try:
        assert run(home, tmp_path, "sessions", "list", daemon=True).returncode == 0
        folders[folder].chmod(0)
        try:
            listed = run(home, tmp_path, "sessions", "list", "--json", daemon=True)
        finally:
            folders[folder].chmod(0o755)
        assert listed.returncode == 0, listed.stderr
        answer = json.loads(listed.stdout)
        assert {s["id"] for s in answer["sessions"]} == ALL - HIDDEN[folder]
        assert [e["path"] for e in answer["errors"]] == [str(folders[folder])]
        again = json.loads(run(home, tmp_path, "sessions", "list", "--json", daemon=True).stdout)
        assert {s["id"] for s in again["sessions"]} == ALL and again["errors"] == []
    finally:
        run(home, tmp_path, "daemon", "stop", daemon=True)


@pytest.mark.usefixtures("unreadable_as_user")
@pytest.mark.parametrize("folder", ["claude-project", "claude-subagents", "codex-day"])
def test_a_workspace_tree_whose_folder_cannot_be_read_says_so(
    home: Home, tmp_path: Path, folder: str
) -> None:
    folders = build(tmp_path)
    shutil.rmtree(tmp_path / "dsh")
    if folder != "codex-day":
        shutil.rmtree(tmp_path / "codex")
    else:
        shutil.rmtree(tmp_path / "claude")
    folders[folder].chmod(0)
    try:
        tree = run(home, tmp_path, "sessions", "tree", "--cwd", CWD)
    finally:
        folders[folder].chmod(0o755)
    assert tree.returncode == 0, tree.stderr
    assert f"error: {folders[folder]}: folder cannot be read (Permission denied)" in tree.stderr
    if folder == "claude-subagents":
        assert "mine" in tree.stdout  # the session itself is there; its subagents are not
    else:
        assert "could be read" in tree.stdout + tree.stderr
        assert "were found" not in tree.stdout + tree.stderr


def catalog(home: Home, tmp_path: Path) -> SessionCatalog:
    roots = [
        Root(tmp_path / "dsh" / "sessions", "dsh"),
        Root(tmp_path / "claude" / "projects", "claude-code"),
        Root(tmp_path / "codex" / "sessions", "codex"),
    ]
    return SessionCatalog(home, roots, 120)


def named_like_logs(tmp_path: Path, folders: dict[str, Path]) -> dict[str, Path]:
    """A path named like a session log in each format, not there yet."""
    return {
        "dsh": folders["dsh-project"] / "session-fifo" / "session.jsonl",
        "claude-code": folders["claude-project"] / "0b3c6f0e-3333-4222-8333-944445555666.jsonl",
        "claude-code-subagent": folders["claude-subagents"] / "agent-fifo.jsonl",
        "codex": folders["codex-day"]
        / "rollout-2026-05-01T00-10-00-019c0000-0000-7000-8000-0000000000f1.jsonl",
    }


@pytest.mark.parametrize("kind", ["fifo", "folder"])
@pytest.mark.parametrize("where", ["dsh", "claude-code", "claude-code-subagent", "codex"])
def test_a_log_that_is_no_regular_file_is_an_error_never_opened(
    home: Home, tmp_path: Path, kind: str, where: str
) -> None:
    path = named_like_logs(tmp_path, build(tmp_path))[where]
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    listing = catalog(home, tmp_path).listing()  # a FIFO opened would hang here
    assert {s.id for s in listing.sessions} == ALL
    said = "a FIFO" if kind == "fifo" else "a folder"
    said = (
        f"not a regular file ({said}), though named like a session log: it is not read; remove or rename it"
    )
    assert [(e.path, e.message) for e in listing.errors] == [(str(path), said)]


def test_a_listed_dsh_log_swapped_for_a_fifo_is_an_error_of_the_next_listing(
    home: Home, tmp_path: Path
) -> None:
    folders = build(tmp_path)
    listed = catalog(home, tmp_path)
    assert {s.id for s in listed.listing().sessions} == ALL
    log = folders["dsh-session"] / "session.jsonl"
    log.unlink()
    os.mkfifo(log)
    listing = catalog(home, tmp_path).listing()
    assert {s.id for s in listing.sessions} == ALL - {"dsh-1"}
    assert [(e.path, e.message.split(",")[0]) for e in listing.errors] == [
        (str(log), "not a regular file (a FIFO)")
    ]

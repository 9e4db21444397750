"""remem's file of session titles and archive states, damaged, leaves every session read: its
error is of kind `metadata`, not a session that could not be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.cli_process import remem
from tests.sessions.factory import SessionSpec, build_session, write_session


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
def test_a_damaged_titles_file_is_said_apart_from_unreadable_sessions(
    home: Home, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, daemon: bool
) -> None:
    """It was an error of kind `sessions`: "1 session(s), 1 unreadable" of a listing that read
    every session, and an empty workspace said none of its sessions could be read."""
    root = tmp_path / "dsh-sessions"
    home.ensure_layout()
    home.settings_file.write_text(f"sessions:\n  roots:\n    - {str(root)!r}\n")
    draft = build_session(SessionSpec(seed=1, turns=2, cwd=str(tmp_path)))
    write_session(root, draft)
    empty = tmp_path_factory.mktemp("empty")  # no folder above it has sessions either
    meta = home.state / "session-meta.json"
    meta.write_text("{garbage")
    try:
        listed = remem(home, "sessions", "list", "--json", daemon=daemon)
        said = remem(home, "sessions", "list", daemon=daemon)
        none = remem(home, "sessions", "tree", "--cwd", str(empty), daemon=daemon)
    finally:
        if daemon:
            remem(home, "daemon", "stop")

    answer = json.loads(listed.stdout)
    assert [row["id"] for row in answer["sessions"]] == [draft.header.id], answer
    assert [(e["path"], e["kind"]) for e in answer["errors"]] == [(str(meta), "metadata")], answer
    assert said.stdout.splitlines()[-1] == "1 session(s), 0 unreadable", said
    assert none.returncode == 0 and f"No agent sessions of {empty} were found." in none.stderr, none

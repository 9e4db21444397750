"""remem's own review sessions (one per consolidation attempt, under its own root) are never
listed, and a listing of everything passes their folder by unread (decision 0466): with
thousands of them, a listing read each one first to drop it, seconds per cold listing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remem.daemon.consolidation.worker_log import WorkerLog, worker_dir
from remem.daemon.home import Home
from remem.daemon.sessions.index import SessionIndex
from tests.daemon.helpers import remem
from tests.sessions.factory import SessionSpec, build_session, write_session


def _review_session(home: Home, review: str) -> Path:
    log = WorkerLog(home, review, 1)
    log.start("the system prompt", [], "fake", "fake-model", "the review's input")
    return log.path


@pytest.mark.parametrize("through", [["--no-daemon"], []], ids=["cli", "daemon"])
def test_a_listing_of_everything_passes_review_sessions_by_unread(
    home: Home, tmp_path: Path, through: list[str]
) -> None:
    home.ensure_layout()
    kept = _review_session(home, "a" * 64)
    damaged = _review_session(home, "b" * 64)
    damaged.write_bytes(b"not a session log\n")  # read, it would be an error of the listing
    roots = tmp_path / "dsh"
    own = build_session(SessionSpec(seed=4, turns=2, cwd=str(tmp_path / "project")))
    write_session(roots, own)
    listed = remem(home, *through, "sessions", "list", "--root", str(roots), "--json")
    remem(home, "daemon", "stop")
    assert listed.returncode == 0, listed.stderr
    answer = json.loads(listed.stdout)
    assert [s["id"] for s in answer["sessions"]] == [own.header.id]
    assert answer["errors"] == []
    folder = f"{worker_dir(home, 'x').parent}{os.sep}"
    indexed = SessionIndex(home.state / "index.sqlite").rows()
    assert [path for path in indexed if path.startswith(folder)] == [], "no review session was read"
    assert kept.exists()

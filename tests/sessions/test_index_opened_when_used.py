"""A catalog opens the session index's file at its first read or write, not when it is built:
a warm listing the daemon's memo answers from what it kept opens none, and one that has a log
to read again opens it and stores the log's row there."""

from __future__ import annotations

from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.index import SessionIndex
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session

CWD = "/home/dev/projects/demo"


def test_a_kept_answer_opens_no_index_and_a_changed_log_stores_its_row(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    draft = build_session(SessionSpec(seed=7, turns=2, cwd=CWD))
    memo = ListingMemo(lambda: False)  # the daemon's memo, polling

    def turns() -> int:
        catalog = SessionCatalog(home, [root], idle_seconds=120, memo=memo)  # as per request
        try:
            return {s.id: s.turns for s in catalog.listing().sessions}[draft.header.id]
        finally:
            catalog.close()

    index = home.state / "index.sqlite"
    writer = SessionWriter(root, draft.header)
    try:
        writer.append(draft.batches[0])
        assert turns() == 1 and index.is_file()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
        assert turns() == 1
        assert not index.exists(), "the kept answer read no row"
        writer.append(draft.batches[1])
        assert turns() == 2
        stored = SessionIndex(index)
        try:
            assert [row.id for row in stored.rows().values()] == [draft.header.id]
        finally:
            stored.close()
    finally:
        writer.close()

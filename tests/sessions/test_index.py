"""The session index: replaced when outdated; under concurrency, many connections of one
process opened at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home, HomeUnusable
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.index import SCHEMA_VERSION, LogRow, SessionIndex, Update

_RACE = """
import sys, threading
from pathlib import Path
from remem.daemon.sessions.index import LogRow, SessionIndex, Update

path = Path(sys.argv[1])
start = threading.Barrier(8)
stop = threading.Event()

written = threading.Barrier(8)
kept = []

def opener(n):
    start.wait()  # every thread opens the fresh index at the same moment
    index = SessionIndex(path)
    index.put([Update(LogRow(path=f"/logs/{n}", revision="r"))])
    written.wait()
    if n == 0:
        kept.append(len(index.rows()))
    for i in range(40):  # others keep opening it while this one writes
        SessionIndex(path).close()
        index.put([Update(LogRow(path=f"/logs/{n}", revision=str(i)))])
    index.close()

threads = [threading.Thread(target=opener, args=(n,)) for n in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(kept[0])
"""


def test_connections_opened_at_once_keep_each_others_rows_and_maps(tmp_path: Path) -> None:
    # A subprocess, so that a crash (SIGBUS from a WAL map whose locks were dropped) is a
    # failed assertion rather than the end of the test run.
    for attempt in range(5):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        done = subprocess.run(
            [sys.executable, "-c", _RACE, str(folder / "index.sqlite")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "8", "a late schema creation dropped rows written meanwhile"


def test_an_index_of_an_older_schema_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    with sqlite3.connect(path) as db:  # schema 4 stored the digest state as base64 JSON
        db.execute("CREATE TABLE logs (path TEXT PRIMARY KEY, revision TEXT NOT NULL, digest_state TEXT)")
        db.execute("""INSERT INTO logs VALUES ('/logs/a', 'r', '{"chain": "AAAA"}')""")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    db.close()
    index = SessionIndex(path)
    assert index.rows() == {} and index.continuation("/logs/a") is None
    index.put([Update(LogRow(path="/logs/a", revision="r2"))])
    assert index.stamp("/logs/a") == ("r2", None)
    index.close()


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_an_index_file_linked_out_of_the_home_is_refused_untouched(
    home: Home, tmp_path: Path, suffix: str
) -> None:
    path = home.ensure_layout().state / "index.sqlite"
    SessionIndex(path).close()  # a whole index: SQLite opens its -wal and -shm beside it
    linked, outside = Path(f"{path}{suffix}"), tmp_path / "outside"
    outside.write_bytes(b"")
    linked.unlink(missing_ok=True)
    linked.symlink_to(outside)
    with pytest.raises(HomeUnusable) as refused:  # SQLite itself: opened by name
        SessionIndex(path)
    assert str(refused.value) == (
        f"remem cannot use {linked}: it is a symbolic link, and remem reads and writes only inside "
        "its home; move the file it points to into the home, or choose a home that holds it with "
        "--home or $REMEM_HOME"
    )
    with pytest.raises(HomeUnusable) as refused:  # the catalog says which home
        SessionCatalog(home, [], idle_seconds=120)
    assert str(refused.value).startswith(
        f"remem's home {home.root} cannot be used: {linked} is a symbolic link, and remem reads and "
        "writes only inside its home; move the file it points to"
    )
    assert outside.read_bytes() == b"", "nothing written through it"


def test_a_row_sqlite_cannot_hold_is_stored_as_its_logs_error_and_the_others_are_stored(
    tmp_path: Path,
) -> None:
    """A harness file's number past 64 bits failed `put` for its whole batch: every listing."""
    index = SessionIndex(tmp_path / "index.sqlite")
    index.put(
        [
            Update(LogRow(path="/a", revision="r1", format="codex", id="a", fork_at=10**30)),
            Update(LogRow(path="/b", revision="r2", format="claude-code", id="b", turns=2)),
        ]
    )
    rows = index.rows()
    assert (rows["/b"].id, rows["/b"].turns, rows["/b"].error) == ("b", 2, None)
    assert (rows["/a"].id, rows["/a"].revision, rows["/a"].format) == (None, "r1", "codex")
    assert rows["/a"].error == (
        "its listing cannot be stored in the session index "
        "(OverflowError: Python int too large to convert to SQLite INTEGER)"
    )

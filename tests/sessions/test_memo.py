"""The listing memo: remembered folder scans and rows, redone exactly where the watcher marks.

Each test lists through a memo, changes the root, and checks what the next listing sees with
and without the mark the watcher would send: an unmarked change is invisible while events are
trusted (proof that nothing was stat-ed), and always visible when they are not (polling).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.factory import SessionSpec, build_session, write_session
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.metadata import SessionMetadata
from remem.daemon.sessions.writer import SessionWriter

CWD = "/home/dev/projects/demo"


def _catalog(home: Home, root: Path, memo: ListingMemo) -> SessionCatalog:
    return SessionCatalog(home, [root], idle_seconds=120, memo=memo)


def _turns(catalog: SessionCatalog) -> dict[str, int]:
    return {s.id: s.turns for s in catalog.listing().sessions}


def _grow(root: Path, home: Home) -> tuple[str, Path, list]:
    draft = build_session(SessionSpec(seed=4, turns=4, cwd=CWD))
    writer = SessionWriter(root, draft.header)
    for batch in draft.batches[:3]:
        writer.append(batch)
    return draft.header.id, writer.path, [writer, draft.batches[3:]]


@pytest.mark.parametrize("trusted", [True, False], ids=["inotify", "polling"])
def test_an_unmarked_append_is_seen_only_when_events_are_not_trusted(
    home: Home, tmp_path: Path, trusted: bool
) -> None:
    root = tmp_path / "r"
    session, path, (writer, rest) = _grow(root, home)
    memo = ListingMemo(lambda: trusted)
    before = _turns(_catalog(home, root, memo))[session]
    for batch in rest:
        writer.append(batch)
    writer.close()
    unmarked = _turns(_catalog(home, root, memo))[session]
    # Trusted events: nothing marked, nothing re-stat-ed. Polling: one stat per log.
    assert unmarked == (before if trusted else 4) and before < 4
    memo.changed([str(path)])
    assert _turns(_catalog(home, root, memo))[session] == 4


def test_sessions_and_projects_that_come_and_go_follow_their_marks(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    first = write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: True)
    assert len(_turns(_catalog(home, root, memo))) == 1

    sibling = write_session(root, build_session(SessionSpec(seed=2, turns=1, cwd=CWD)))
    assert len(_turns(_catalog(home, root, memo))) == 1
    memo.changed([str(sibling.parent)])  # a session folder appeared in a known project
    assert len(_turns(_catalog(home, root, memo))) == 2

    elsewhere = write_session(root, build_session(SessionSpec(seed=3, turns=1, cwd="/home/dev/other")))
    memo.changed([str(elsewhere.parent.parent)])  # a new project folder
    assert len(_turns(_catalog(home, root, memo))) == 3

    shutil.rmtree(first.parent)
    memo.changed([str(first.parent)])
    catalog = _catalog(home, root, memo)
    assert len(_turns(catalog)) == 2
    assert str(first) not in catalog.index.rows(), "a log that went is forgotten, on disk too"


def test_a_log_swapped_for_a_link_is_refused_once_marked(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    log = write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: True)
    assert len(_turns(_catalog(home, root, memo))) == 1
    decoy = tmp_path / "decoy.zstd"
    shutil.move(log, decoy)
    os.symlink(decoy, log)
    memo.changed([str(log)])
    listing = _catalog(home, root, memo).listing()
    assert listing.sessions == [] and [e.path for e in listing.errors] == [str(log)]
    assert "symbolic link" in listing.errors[0].message


def test_a_workspace_listing_through_the_memo_reads_its_project_only(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    mine = write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    write_session(root, build_session(SessionSpec(seed=2, turns=1, cwd="/home/dev/other")))
    memo = ListingMemo(lambda: True)
    catalog = _catalog(home, root, memo)
    assert [e.path for e in catalog.entries(CWD)[0]] == [mine]
    assert set(catalog.index.rows()) == {str(mine)}
    assert len(_turns(catalog)) == 2


def test_remembered_entries_follow_titles_and_liveness(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    path = write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    os.utime(path, (1_600_000_000, 1_600_000_000))
    memo = ListingMemo(lambda: False)
    [first] = _catalog(home, root, memo).listing().sessions
    assert first.live is False
    SessionMetadata(home).update(first.id, None, title="Renamed")
    [renamed] = _catalog(home, root, memo).listing().sessions
    assert renamed.title == "Renamed"
    os.utime(path)  # written just now: live by recency, though the content is the same
    [touched] = _catalog(home, root, memo).listing().sessions
    assert touched.live is True and touched.title == "Renamed"

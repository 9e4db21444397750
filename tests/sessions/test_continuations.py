"""Relisting a grown log from the continuation state kept in memory (`continuations`).

Each test keeps a catalog (or a daemon's memo) across appends and compares what it lists and
stores with what a catalog on an empty index reads from the same file: the state kept in
memory must give exactly the cold answer, and must step aside when it no longer describes the
index or the file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.sessions import Listing
from remem.daemon.sessions import cold_reads
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.continuations import Continuations
from remem.daemon.sessions.index import SessionIndex
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.projection import Projection
from remem.daemon.sessions.reader import Skim
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session, write_session

CWD = "/home/dev/projects/demo"


@pytest.fixture(params=[Encoding.RAW, Encoding.ZSTD], ids=["raw", "zstd"])
def encoding(request: pytest.FixtureRequest) -> Encoding:
    return request.param


def _cold(tmp_path: Path, root: Path) -> SessionCatalog:
    """A catalog with an index of its own, empty: it reads every log whole."""
    homes = list(tmp_path.glob("cold-*"))
    return SessionCatalog(Home(tmp_path / f"cold-{len(homes)}"), [root], idle_seconds=120)


def _same_as_cold(tmp_path: Path, root: Path, kept: SessionCatalog, session_id: str) -> Listing:
    """Check `kept`'s listing and stored turns against a cold catalog's; the listing."""
    listing = kept.listing()
    cold = _cold(tmp_path, root)
    assert listing == cold.listing()
    assert _turns(kept.projection(session_id)) == _turns(cold.projection(session_id))
    return listing


def _turns(projection: Projection) -> list[tuple[object, ...]]:
    return [(t.turn, t.startSeq, t.endSeq, t.status, t.user) for t in projection.turns]


def _counting(calls: list[str], real: Callable[..., Any]) -> Callable[..., Any]:
    """`real`, noting each call's first argument."""

    def counted(self: Any, path: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(str(path))
        return real(self, path, *args, **kwargs)

    return counted


def _whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = cold_reads.skim_session

    def skim(path: Path, *args: Any, **kwargs: Any) -> Skim:
        reads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(cold_reads, "skim_session", skim)
    return reads


def test_appends_relisted_from_memory_list_and_store_what_a_cold_read_does(
    home: Home, tmp_path: Path, encoding: Encoding, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=5, turns=6, cwd=CWD))
    writer = SessionWriter(root, draft.header, encoding=encoding)
    writer.append(draft.batches[0])
    kept = SessionCatalog(home, [root], idle_seconds=120)
    kept.listing()
    loads: list[str] = []
    monkeypatch.setattr(SessionIndex, "continuation", _counting(loads, SessionIndex.continuation))
    reads = _whole_reads(monkeypatch)
    for batch in draft.batches[1:]:
        writer.append(batch)
        reads.clear()
        _same_as_cold(tmp_path, root, kept, draft.header.id)
        assert reads == [str(writer.path)], "the cold catalog reads it whole, the kept one does not"
    writer.close()
    assert _same_as_cold(tmp_path, root, kept, draft.header.id).sessions[0].turns == 6
    assert loads == [], "every continuation came from memory, none from the index"


def test_a_log_rewritten_after_it_was_kept_is_read_whole(
    home: Home, tmp_path: Path, encoding: Encoding, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    first = build_session(SessionSpec(seed=1, turns=4, cwd=CWD))
    path = write_session(root, first, encoding=encoding)
    kept = SessionCatalog(home, [root], idle_seconds=120)
    kept.listing()
    reads = _whole_reads(monkeypatch)

    shorter = build_session(SessionSpec(seed=2, turns=2, cwd=CWD))
    shorter.header = first.header
    shutil.copyfile(write_session(tmp_path / "shorter", shorter, encoding=encoding), path)  # same inode
    assert _same_as_cold(tmp_path, root, kept, first.header.id).sessions[0].turns == 2
    assert reads.count(str(path)) == 2, "read whole by the kept catalog too"

    longer = build_session(SessionSpec(seed=3, turns=7, cwd=CWD))
    longer.header = first.header
    os.replace(write_session(tmp_path / "longer", longer, encoding=encoding), path)  # another inode
    reads.clear()
    assert _same_as_cold(tmp_path, root, kept, first.header.id).sessions[0].turns == 7
    assert reads.count(str(path)) == 2


def test_a_log_another_process_stored_since_continues_from_the_index(
    home: Home, tmp_path: Path, encoding: Encoding, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=7, turns=6, cwd=CWD))
    writer = SessionWriter(root, draft.header, encoding=encoding)
    for batch in draft.batches[:2]:
        writer.append(batch)
    kept = SessionCatalog(home, [root], idle_seconds=120)
    kept.listing()
    writer.append(draft.batches[2])
    SessionCatalog(home, [root], idle_seconds=120).listing()  # another process, the same index
    loads: list[str] = []
    monkeypatch.setattr(SessionIndex, "continuation", _counting(loads, SessionIndex.continuation))
    for batch in draft.batches[3:]:
        writer.append(batch)
    writer.close()
    _same_as_cold(tmp_path, root, kept, draft.header.id)
    assert loads == [str(writer.path)], "the kept state is older than the index's: not used"


def test_the_daemons_catalogs_share_the_memos_continuations(
    home: Home, tmp_path: Path, encoding: Encoding, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=9, turns=4, cwd=CWD))
    writer = SessionWriter(root, draft.header, encoding=encoding)
    writer.append(draft.batches[0])
    memo = ListingMemo(lambda: True)
    SessionCatalog(home, [root], idle_seconds=120, memo=memo).listing()
    loads: list[str] = []
    monkeypatch.setattr(SessionIndex, "continuation", _counting(loads, SessionIndex.continuation))
    for batch in draft.batches[1:]:
        writer.append(batch)
        memo.changed([str(writer.path)])  # what the watcher would say
        per_request = SessionCatalog(home, [root], idle_seconds=120, memo=memo)
        _same_as_cold(tmp_path, root, per_request, draft.header.id)
    writer.close()
    assert loads == []


def test_only_the_last_logs_listed_are_kept(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    paths = [write_session(root, build_session(SessionSpec(seed=n, turns=1, cwd=CWD))) for n in range(5)]
    kept = SessionCatalog(home, [root], idle_seconds=120)
    kept.continuations = Continuations(capacity=2)
    kept.listing()
    assert len(kept.continuations) == 2
    listed = sorted(map(str, paths))  # a cold listing projects the logs in path order
    assert [kept.continuations.take(p) is not None for p in listed] == [False] * 3 + [True] * 2

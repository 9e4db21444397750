"""A file rewritten in place within the timestamp tick of the listing that read it (decision 0489).

On a file system of coarse timestamps (kernels before 6.13 tick in jiffies, FAT in 2 s, some
network and FUSE file systems), a write of the same size in the tick of a listing's read leaves
the file's stamp as it was. Its stamp proves it unchanged only if the change it records was
older than the racy window when the file was read, whatever the clock says later: so neither a
catalog kept between listings nor the daemon's memo keeps what that listing read for good. The
file system's tick is the boundary met here: its `stat`, as the memo takes it, floored to one.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.stamps import RACY_NS
from remem.daemon.sessions import memo
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session

TICK_NS = 1_000_000_000  # coarse, yet finer than RACY_NS, as every file system remem may meet
CWD = "/home/dev/projects/demo"


class _CoarseOs:
    """`os` as the memo uses it, on a file system whose timestamps tick every `TICK_NS`."""

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    @staticmethod
    def stat(path: str, *args: object, **kwargs: object) -> os.stat_result:
        st = os.stat(path, *args, **kwargs)  # type: ignore[arg-type]
        fields = (st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, st.st_size, 0, 0, 0)
        times = {
            "st_mtime_ns": st.st_mtime_ns // TICK_NS * TICK_NS,
            "st_ctime_ns": st.st_ctime_ns // TICK_NS * TICK_NS,
        }
        return os.stat_result(fields, times)


def _rewrite(path: Path, ids: list[str]) -> None:
    """DSH's archive list rewritten in place, as an editor or DSH may (no rename)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        os.pwrite(fd, json.dumps({"global": {"archivedSessionIds": ids}}).encode(), 0)
    finally:
        os.close(fd)


def _stamp(path: Path) -> object:
    return memo.file_stamp(str(path))


@pytest.fixture
def dsh_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(memo, "os", _CoarseOs())
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dsh"))
    registry = tmp_path / "dsh" / "storages" / "workspace.json"
    registry.parent.mkdir(parents=True)
    return registry


def _archived_then_not(registry: Path, session_id: str, listed: Callable[[], bool]) -> None:
    """Archive the session, have it listed, and unarchive it in the same tick (of the same size,
    so the stamp stays): the next listing past the racy window says it is not archived."""
    for _ in range(5):  # a tick's boundary met between the two writes: again
        _rewrite(registry, ["x" * len(session_id)])
        time.sleep(RACY_NS / 1e9 + 0.2)
        assert listed() is False  # an answer of a settled file, kept
        _rewrite(registry, [session_id])
        before = _stamp(registry)
        assert listed() is True
        _rewrite(registry, ["x" * len(session_id)])
        if _stamp(registry) == before:
            break
    else:
        pytest.fail("no two writes met in one tick")
    time.sleep(RACY_NS / 1e9 + 0.2)
    assert listed() is False, "the archive list was read before its last write: it is read again"


def _session(root: Path) -> str:
    draft = build_session(SessionSpec(seed=1, turns=3, cwd=CWD))
    writer = SessionWriter(root, draft.header)
    writer.append(draft.batches[0])
    writer.close()
    return draft.header.id


def test_a_kept_catalog_reads_a_list_again_that_changed_in_the_tick_it_was_read(
    home: Home, tmp_path: Path, dsh_list: Path
) -> None:
    root = tmp_path / "r"
    session_id = _session(root)
    catalog = SessionCatalog(home, [root], idle_seconds=120)

    def listed() -> bool:
        [entry], _ = catalog.entries()
        return entry.archived

    _archived_then_not(dsh_list, session_id, listed)


def test_the_daemons_memo_reads_a_list_again_that_changed_in_the_tick_it_was_read(
    home: Home, tmp_path: Path, dsh_list: Path
) -> None:
    root = tmp_path / "r"
    session_id = _session(root)
    shared = ListingMemo(lambda: False)

    def listed() -> bool:  # as the daemon lists: a catalog per request, one memo
        catalog = SessionCatalog(home, [root], idle_seconds=120, memo=shared)
        try:
            [entry], _ = catalog.entries()
            return entry.archived
        finally:
            catalog.close()

    _archived_then_not(dsh_list, session_id, listed)
